"""Small helpers shared by the task models."""

from __future__ import annotations

import numpy as np


def use_xla():
    """XLA pays off on accelerators; on CPUs its compile time (tens of seconds per input
    shape for a training step) outweighs the faster steps of a fine-tuning run.
    `BIOZOO_XLA=on|off` (the CLI's `--xla`) overrides."""
    import os

    import tensorflow as tf

    forced = os.environ.get("BIOZOO_XLA", "auto").lower()
    if forced in ("on", "1", "true"):
        return True
    if forced in ("off", "0", "false"):
        return False

    return bool(tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("TPU"))


def compiled_predict(task):
    """`x -> logits` for `task` at its inference precision (`task.precision`, float32 unless
    set): a tf.function retraced only for new batch shapes, or the int8 LiteRT interpreter.
    Built once per precision."""
    from biozoo.tasks._precision import predict_function

    precision = getattr(task, "precision", "float32")
    if getattr(task, "_compiled_predict", None) is None or getattr(task, "_compiled_precision", None) != precision:
        task._compiled_predict = predict_function(task, precision)
        task._compiled_precision = precision
    return task._compiled_predict


def softmax(logits):
    z = logits - logits.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def sigmoid(logits):
    return 1.0 / (1.0 + np.exp(-logits))
