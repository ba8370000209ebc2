"""What inference needs from TensorFlow: the `tf.function` of a model (XLA on accelerators), the
ids-in function the TF Hub / ONNX / LiteRT exports are written from, and LiteRT's converter and
interpreter (int8 inference, LiteRT exports).

int8 is LiteRT's dynamic-range quantization (int8 weights, activations quantized per batch at run
time) run by the LiteRT interpreter with XNNPACK. Measured on this project's CPU, it is the fastest
int8 path TensorFlow and Keras offer: Keras' own `model.quantize("int8")` runs its int8 matmuls
through TensorFlow kernels that are slower than float32 (0.35x), while XNNPACK's int8 kernels are
3.6x float32 (benchmarks/serving_ladder.py).

Example:
    >>> runner = LiteRtRunner(litert_flatbuffer(task, "int8"))
    >>> runner({"token_ids": ids, "segment_ids": segments, "padding_mask": mask})["logits"]
"""

from __future__ import annotations

import os
import tempfile
import threading

import keras
import numpy as np
import tensorflow as tf

# TF Hub's input names (Model Garden's BERT encoders), used by every ids-in export
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def use_xla():
    """XLA pays off on accelerators; on CPUs its compile time (tens of seconds per input
    shape for a training step) outweighs the faster steps of a fine-tuning run.
    `BIOZOO_XLA=on|off` (the CLI's `--xla`) overrides."""
    forced = os.environ.get("BIOZOO_XLA", "auto").lower()
    if forced in ("on", "1", "true"):
        return True
    if forced in ("off", "0", "false"):
        return False
    return bool(tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("TPU"))


def predict_function(model):
    """`x -> float32 logits` of `model` as a `tf.function`, retraced only for new batch shapes."""
    return tf.function(lambda x: tf.cast(model(x, training=False), tf.float32), jit_compile=use_xla(),
                       reduce_retracing=True)


def output_names(model):
    """The names of `model`'s outputs in ids-in exports: `logits` for a task, the backbone's own
    keys (`sequence_output`, `pooled_output`) for a backbone."""
    outputs = model.output
    if isinstance(outputs, dict):
        return sorted(outputs)
    if isinstance(outputs, keras.KerasTensor):
        return ["logits"]
    raise TypeError(f"{type(model).__name__}: outputs of type {type(outputs).__name__} are not exportable")


def ids_signature():
    return [tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES]


def ids_function(model):
    """`model` as a function of int32 `[batch, seq]` ids under TF Hub's names
    (`input_word_ids`, `input_mask`, `input_type_ids`) returning a dict of named outputs."""
    names = output_names(model)

    def serve(input_word_ids, input_mask, input_type_ids):
        outputs = model({"token_ids": input_word_ids, "segment_ids": input_type_ids, "padding_mask": input_mask},
                        training=False)
        return dict(outputs) if isinstance(outputs, dict) else {names[0]: outputs}

    return serve


def litert_flatbuffer(model, quantize=None):
    """A LiteRT (.tflite) model of `ids_function(model)`, with dynamic batch and length:
    float32, or quantized with LiteRT's dynamic-range int8 or float16 weights (what `biozoo export
    litert` offers is `biozoo.export.formats.IDS_FORMATS`; this is how the converter makes each)."""
    weight_types = {None: [], "int8": [], "float16": [tf.float16]}  # the converter's target weight types
    if quantize not in weight_types:
        raise ValueError(f"LiteRT quantization {quantize!r}: the converter makes {', '.join(map(str, weight_types))}")
    with tempfile.TemporaryDirectory(prefix="biozoo-litert-") as saved_model:
        archive = keras.export.ExportArchive()
        archive.track(model)
        archive.add_endpoint("serve", ids_function(model), input_signature=ids_signature())
        archive.write_out(saved_model, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved_model)
        if quantize:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = weight_types[quantize]
        return converter.convert()


def default_threads():
    """The intra-op threads TensorFlow was given, else the CPUs this process may use."""
    configured = tf.config.threading.get_intra_op_parallelism_threads()
    if configured:
        return configured
    affinity = getattr(os, "sched_getaffinity", None)  # Linux only
    return len(affinity(0)) if affinity else os.cpu_count() or 1


class LiteRtRunner:
    """A .tflite model of `ids_function` run by the LiteRT interpreter: called with biozoo's
    input dict, it returns the outputs by name (numpy). Inputs of a new shape resize the
    interpreter's tensors. One call at a time (the interpreter is not thread-safe)."""

    def __init__(self, flatbuffer, threads=None):
        from ai_edge_litert.interpreter import Interpreter

        self.interpreter = Interpreter(model_content=flatbuffer, num_threads=threads or default_threads())
        self.runner = self.interpreter.get_signature_runner()
        self.lock = threading.Lock()

    def __call__(self, x):
        with self.lock:
            return self.runner(input_word_ids=np.asarray(x["token_ids"], np.int32),
                               input_mask=np.asarray(x["padding_mask"], np.int32),
                               input_type_ids=np.asarray(x["segment_ids"], np.int32))


def int8_predict_function(model):
    """`x -> logits` of `model` quantized to int8 by LiteRT and run by its interpreter."""
    runner = LiteRtRunner(litert_flatbuffer(model, "int8"))
    name = output_names(model)[0]
    return lambda x: runner(x)[name]
