"""Small helpers shared by the task models."""

from __future__ import annotations

import re

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


_SURROGATE = re.compile("[\ud800-\udfff]")


def text_list(texts, what="texts"):
    """`texts` as a list of str, or a TypeError / ValueError saying what is wrong: a bare string
    (it would be read as a list of characters), bytes, None or another type among them, or a
    lone surrogate (a JSON escape such as \\ud800 that is no character)."""
    if isinstance(texts, (str, bytes, bytearray)):
        kind = "a string" if isinstance(texts, str) else "bytes"
        raise TypeError(f"{what} must be a list of strings, got {kind}: wrap one text in a list ([text])")
    try:
        texts = list(texts)
    except TypeError:
        raise TypeError(f"{what} must be a list of strings, got {type(texts).__name__}") from None
    for index, text in enumerate(texts):
        if isinstance(text, (bytes, bytearray)):
            raise TypeError(f"{what}[{index}] is bytes, not a string: decode it first (text.decode('utf-8'))")
        if not isinstance(text, str):
            raise TypeError(f"{what}[{index}] is {type(text).__name__}, not a string")
        found = _SURROGATE.search(text)
        if found:
            raise ValueError(f"{what}[{index}] holds a lone surrogate (U+{ord(found.group()):04X}) at character "
                             f"{found.start()}: not Unicode text (was it decoded with errors='surrogateescape'?)")
    return texts
