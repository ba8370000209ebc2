"""Inference at float32, bfloat16 or int8 for every task model, under every Keras backend.

- float32: the Keras model compiled by its backend: a `tf.function` on TensorFlow (XLA on
  accelerators), `jax.jit` of its stateless call on JAX (one compilation per batch shape, which
  length-bucketed batches keep few), `torch.no_grad` on PyTorch. On JAX and PyTorch attention
  runs through `keras.ops.dot_product_attention` (`inference_attention`).
- bfloat16: a copy of the model built with Keras' "bfloat16" dtype policy (weights cast once).
- int8: LiteRT's dynamic-range quantization run by its interpreter (`biozoo.tasks.tf_inference`);
  the conversion needs TensorFlow.

Example:
    >>> ner = biozoo.TokenClassifier.from_preset("out/ncbi", precision="bfloat16")
    >>> ner.annotate(["BRCA1 mutations cause breast cancer."])
"""

from __future__ import annotations

from contextlib import contextmanager

import keras

from biozoo._keras_internals import attention_without_dropout

PRECISIONS = ("float32", "bfloat16", "int8")


def check_precision(precision):
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    return precision


def compiles_predictions():
    """Whether prediction is compiled per batch shape (XLA under TensorFlow on accelerators,
    always under JAX), so that batches should come in few shapes (length buckets)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        from biozoo.tasks.tf_inference import use_xla

        return use_xla()
    return backend == "jax"


def bfloat16_copy(model):
    """`model` rebuilt under Keras' "bfloat16" dtype policy, with its weights cast: a biozoo task
    (its backbone's policy decides its layers'), a backbone, or a functional model around one
    (AIONER's)."""
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


def inference_attention(model):
    """A context in which `model`'s Keras attention layers run `keras.ops.dot_product_attention`
    (the backend's fused kernel: cuDNN flash attention on a GPU in bfloat16). Keras takes the
    unfused path whenever a layer's dropout is above 0; dropout does nothing at inference, so it
    is 0 meanwhile (under JAX only the tracing sees it). KerasHub's padding mask, one row per
    sequence, is broadcast to one per query: cuDNN takes a mask as a bias of full (query, key)
    shape."""
    return attention_without_dropout(model, _mask_per_query)


def _mask_per_query(attention_mask, query):
    if attention_mask is not None and len(attention_mask.shape) == 3 and attention_mask.shape[1] == 1:
        shape = keras.ops.shape(attention_mask)
        attention_mask = keras.ops.broadcast_to(attention_mask, (shape[0], keras.ops.shape(query)[1], shape[2]))
    return attention_mask


def _jax_predict_function(model):
    import jax

    @jax.jit
    def run(trainable, non_trainable, x):
        with inference_attention(model):
            outputs, _ = model.stateless_call(trainable, non_trainable, x, training=False)
        return outputs.astype("float32")

    return lambda x: run([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables],
                         x)


def _torch_predict_function(model):
    import torch

    def run(x):
        with torch.no_grad(), inference_attention(model):
            return keras.ops.convert_to_numpy(keras.ops.cast(model(x, training=False), "float32"))

    return run


def predict_function(model, precision="float32"):
    """`x -> logits` (numpy-convertible) for `model` at `precision`, under the Keras backend."""
    check_precision(precision)
    if precision == "int8":
        if keras.backend.backend() != "tensorflow":
            raise ValueError("int8 inference converts the model with LiteRT's converter, which needs TensorFlow: "
                             "run under KERAS_BACKEND=tensorflow, or export it once with `biozoo export litert "
                             "--quantize int8`")
        from biozoo.tasks.tf_inference import int8_predict_function

        return int8_predict_function(model)
    if precision == "bfloat16":
        model = bfloat16_copy(model)
    backend = keras.backend.backend()
    if backend == "jax":
        return _jax_predict_function(model)
    if backend == "torch":
        return _torch_predict_function(model)
    from biozoo.tasks.tf_inference import predict_function as tf_predict_function

    return tf_predict_function(model)


def compiled_predict(task):
    """`x -> logits` for `task` at its inference precision (`task.precision`, float32 unless
    set), built once per precision (float32 reads the current weights at each call)."""
    precision = getattr(task, "precision", "float32")
    if getattr(task, "_compiled_predict", None) is None or getattr(task, "_compiled_precision", None) != precision:
        task._compiled_predict = predict_function(task.ids_model() if hasattr(task, "ids_model") else task, precision)
        task._compiled_precision = precision
    return task._compiled_predict


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
