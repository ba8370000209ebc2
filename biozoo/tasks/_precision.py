"""Inference at float32, bfloat16 or int8, for every task model (and the ids-in function the
ONNX and LiteRT exports are written from).

- float32: the Keras model as a `tf.function` (XLA where `use_xla()`).
- bfloat16: a copy of the model built with Keras' "bfloat16" dtype policy (weights cast once).
- int8: LiteRT's dynamic-range quantization (int8 weights, activations quantized per batch at
  run time) run by the LiteRT interpreter with XNNPACK. Measured on this project's CPU, it is
  the fastest int8 path TensorFlow and Keras offer: Keras' own `model.quantize("int8")` runs
  its int8 matmuls through TensorFlow kernels that are slower than float32 (0.35x), while
  XNNPACK's int8 kernels are 3.6x float32 (benchmarks/serving_ladder.py).

Example:
    >>> ner = biozoo.TokenClassifier.from_preset("out/ncbi", precision="int8")
    >>> ner.annotate(["BRCA1 mutations cause breast cancer."])
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager

import numpy as np

PRECISIONS = ("float32", "bfloat16", "int8")
# TF Hub's input names (Model Garden's BERT encoders), used by every ids-in export
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
LITERT_QUANTIZATIONS = (None, "int8", "float16")


def check_precision(precision):
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    return precision


def output_names(model):
    """The names of `model`'s outputs in ids-in exports: `logits` for a task, the backbone's own
    keys (`sequence_output`, `pooled_output`) for a backbone."""
    import keras

    outputs = model.output
    if isinstance(outputs, dict):
        return sorted(outputs)
    if isinstance(outputs, keras.KerasTensor):
        return ["logits"]
    raise TypeError(f"{type(model).__name__}: outputs of type {type(outputs).__name__} are not exportable")


def ids_signature():
    import tensorflow as tf

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
    float32, or quantized with LiteRT's dynamic-range int8 or float16 weights."""
    import keras
    import tensorflow as tf

    if quantize not in LITERT_QUANTIZATIONS:
        raise ValueError(f"LiteRT quantization {quantize!r}: choose int8 or float16 (or none for float32)")
    with tempfile.TemporaryDirectory(prefix="biozoo-litert-") as saved_model:
        archive = keras.export.ExportArchive()
        archive.track(model)
        archive.add_endpoint("serve", ids_function(model), input_signature=ids_signature())
        archive.write_out(saved_model, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved_model)
        if quantize:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        return converter.convert()


def default_threads():
    """The intra-op threads TensorFlow was given, else the CPUs this process may use."""
    import tensorflow as tf

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
        import threading

        from ai_edge_litert.interpreter import Interpreter

        self.interpreter = Interpreter(model_content=flatbuffer, num_threads=threads or default_threads())
        self.runner = self.interpreter.get_signature_runner()
        self.lock = threading.Lock()

    def __call__(self, x):
        with self.lock:
            return self.runner(input_word_ids=np.asarray(x["token_ids"], np.int32),
                               input_mask=np.asarray(x["padding_mask"], np.int32),
                               input_type_ids=np.asarray(x["segment_ids"], np.int32))


def bfloat16_copy(model):
    """`model` rebuilt under Keras' "bfloat16" dtype policy, with its weights cast: a biozoo task
    (its backbone's policy decides its layers'), a backbone, or a functional model around one
    (AIONER's)."""
    import keras

    config = model.get_config()
    if isinstance(config.get("backbone"), dict):  # a task
        config.pop("preprocessor", None)
        config["backbone"]["config"]["dtype"] = "bfloat16"
        copy = type(model).from_config(config)
    elif "layers" in config:  # a functional model: each layer but the inputs rebuilt in bfloat16
        def rebuild(layer):
            if isinstance(layer, keras.layers.InputLayer):
                return layer
            return type(layer).from_config({**layer.get_config(), "dtype": "bfloat16"})

        copy = keras.models.clone_model(model, clone_function=rebuild)
    else:  # a backbone
        copy = type(model).from_config({**config, "dtype": "bfloat16"})
    values = {weight.path: weight for weight in model.weights}
    for weight in copy.weights:
        source = values.get(weight.path)
        if source is None:
            raise ValueError(f"bfloat16 copy: no weight {weight.path} in {model.name}")
        weight.assign(keras.ops.cast(source.value, weight.dtype))
    kernels = [weight for weight in copy.weights if weight.path.endswith("kernel")]
    if not kernels or any(weight.dtype != "bfloat16" for weight in kernels):
        raise ValueError(f"bfloat16 copy of {model.name}: some kernels are not bfloat16")
    return copy


def predict_function(model, precision="float32"):
    """`x -> logits` (numpy-convertible) for `model` at `precision`."""
    import tensorflow as tf

    from biozoo.tasks._util import use_xla

    check_precision(precision)
    if precision == "int8":
        runner = LiteRtRunner(litert_flatbuffer(model, "int8"))
        name = output_names(model)[0]
        return lambda x: runner(x)[name]
    if precision == "bfloat16":
        model = bfloat16_copy(model)
    return tf.function(lambda x: tf.cast(model(x, training=False), tf.float32), jit_compile=use_xla(),
                       reduce_retracing=True)


@contextmanager
def predicting_with(task, predict):
    """`task`'s predictions (`predict_tags`, `annotate`, `answer`...) made by `predict`
    (`x -> logits`), e.g. an exported model's runtime."""
    saved = (getattr(task, "_compiled_predict", None), getattr(task, "_compiled_precision", None))
    task._compiled_predict, task._compiled_precision = predict, task.precision
    try:
        yield task
    finally:
        task._compiled_predict, task._compiled_precision = saved
