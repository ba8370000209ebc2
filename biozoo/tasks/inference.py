"""Inference at float32, bfloat16 or int8 for every task model, under every Keras backend.

- float32: the Keras model compiled by its backend: a `tf.function` on TensorFlow (XLA on
  accelerators), `jax.jit` of its stateless call on JAX (one compilation per batch shape, which
  length-bucketed batches keep few), `torch.no_grad` on PyTorch. On JAX and PyTorch attention
  runs through `keras.ops.dot_product_attention`, and on JAX each LayerNorm in a form that XLA
  fuses (`inference_graph`).
- bfloat16: a copy of the model built with Keras' "bfloat16" dtype policy (weights cast once).
- int8: LiteRT's dynamic-range quantization run by its interpreter (`biozoo.tasks.tf_inference`);
  the conversion needs TensorFlow.

Example:
    >>> ner = biozoo.TokenClassifier.from_preset("out/ncbi", precision="bfloat16")
    >>> ner.annotate(["BRCA1 mutations cause breast cancer."])
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager

import keras
import numpy as np
from tqdm.auto import tqdm

from biozoo._keras_internals import attention_without_dropout, layer_norm_replaced
from biozoo._xla import compile_all
from biozoo.choices import DEFAULT_PRECISION, PRECISIONS

_PROGRESS = contextvars.ContextVar("biozoo_prediction_progress", default=None)


@contextmanager
def showing_progress(description):
    """Within it, the tasks' prediction loops show a progress bar on stderr named `description`.

    Example:
        >>> with showing_progress("scoring test"):
        ...     tags, scores = ner.predict_tags(sentences)
    """
    token = _PROGRESS.set(description)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def batch_progress(batches, total):
    """`batches` (an iterable of `total` model calls), counted on a bar inside `showing_progress`."""
    description = _PROGRESS.get()
    if description is None:
        return batches
    return tqdm(batches, total=total, desc=description, unit="batch", dynamic_ncols=True, leave=False)


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


def inference_attention(model, padded=True):
    """A context in which `model`'s Keras attention layers run `keras.ops.dot_product_attention`
    (the backend's fused kernel: cuDNN flash attention on a GPU in bfloat16). Keras takes the
    unfused path whenever a layer's dropout is above 0; dropout does nothing at inference, so it
    is 0 meanwhile (under JAX only the tracing sees it). KerasHub's padding mask, one row per
    sequence, is broadcast to one per query: cuDNN takes a mask as a bias of full (query, key)
    shape. A batch without padding (`padded=False`) attends without a mask, as transformers'
    SDPA attention does when the mask is all ones: the fused kernel then reads no bias."""
    return attention_without_dropout(model, _mask_per_query if padded else _no_mask)


@contextmanager
def inference_graph(model, padded=True):
    """`inference_attention`, and `fused_layer_norms`."""
    with inference_attention(model, padded), fused_layer_norms(model):
        yield model


@contextmanager
def fused_layer_norms(model):
    """Under JAX, each plain LayerNorm of `model` traced as XLA's GPU compiler fuses it into one
    kernel (`_fused_layer_norm`), for prediction and for training steps; under other backends
    nothing changes."""
    if keras.backend.backend() != "jax":
        yield model
        return
    with layer_norm_replaced(model, _fused_layer_norm):
        yield model


def _fused_layer_norm(layer, x):
    """A LayerNorm over the last axis in float32, `(x - mean) * rsqrt(variance + epsilon) * gamma
    + beta`. Keras' own (`x * inv + res`, the variance from `jnp.var`) is the same to float32
    rounding, but XLA compiles it on a GPU to three kernels, one of them writing out the float32
    input: on an H100, bfloat16 weights, a Bioformer-8L batch of 256 x 128 tokens spent 1.12 ms
    of its 6.21 ms there, where the plain-JAX model of `benchmarks/gpu_figures.py`, written this
    way, spent 0.63 ms in one kernel per LayerNorm."""
    ops = keras.ops
    x32 = ops.cast(x, "float32")
    mean = ops.mean(x32, axis=-1, keepdims=True)
    centred = x32 - mean
    variance = ops.mean(ops.square(centred), axis=-1, keepdims=True)
    normalized = centred * ops.rsqrt(variance + layer.epsilon)
    outputs = normalized * ops.cast(layer.gamma, "float32") + ops.cast(layer.beta, "float32")
    return ops.cast(outputs, layer.compute_dtype)


def _mask_per_query(attention_mask, query):
    if attention_mask is not None and len(attention_mask.shape) == 3 and attention_mask.shape[1] == 1:
        shape = keras.ops.shape(attention_mask)
        attention_mask = keras.ops.broadcast_to(attention_mask, (shape[0], keras.ops.shape(query)[1], shape[2]))
    return attention_mask


def _no_mask(attention_mask, query):
    return None


def has_padding(x):
    """Whether a batch of model inputs may hold padding: False only for a host (numpy) batch whose
    `padding_mask` is all ones. A batch already on a device counts as padded, since reading it
    would wait for the device."""
    mask = x.get("padding_mask") if isinstance(x, dict) else None
    return not isinstance(mask, np.ndarray) or not mask.all()


def _jax_predict_function(model, fixed_weights=False):
    """The jitted stateless call, one compilation for padded batches and one for unpadded ones.
    The weights are read at each call (a model being trained, whose variables may also change
    from trainable to frozen), or once (`fixed_weights`: a bfloat16 copy), which spares the host
    walking the model's layers at each call."""
    import jax

    def traced(padded):
        def run(trainable, non_trainable, x):
            with inference_graph(model, padded):
                outputs, _ = model.stateless_call(trainable, non_trainable, x, training=False)
            return outputs.astype("float32")

        return jax.jit(run)

    runs = {True: traced(True), False: traced(False)}
    if fixed_weights:
        values = ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables])
        return _JaxPredict(runs, lambda: values)
    return _JaxPredict(runs, lambda: ([v.value for v in model.trainable_variables],
                                      [v.value for v in model.non_trainable_variables]))


class _JaxPredict:
    """`x -> logits` through the jitted call for padded or unpadded batches (`runs`), with the
    weights `weights()` returns."""

    def __init__(self, runs, weights):
        self.runs, self.weights = runs, weights
        self.compiled = set()  # batch shapes compiled ahead

    def __call__(self, x):
        return self.runs[has_padding(x)](*self.weights(), x)

    def compile_ahead(self, shapes, keys):
        """Compile the padded-batch call at once (`biozoo._xla.compile_all`) for each batch shape
        of `shapes` (rows, tokens) not compiled yet, the inputs named `keys` int32 of that shape."""
        import jax

        shapes = set(shapes) - self.compiled
        if shapes:
            weights = self.weights()
            compile_all(self.runs[True].lower(*weights, {key: jax.ShapeDtypeStruct(shape, "int32") for key in keys})
                        for shape in shapes)
            self.compiled |= shapes


def compile_ahead(predict, shapes, keys):
    """Before `predict` (a `compiled_predict`) runs on batches of `shapes` (e.g. a
    `FeatureBatches`' `planned_shapes()`) with the int32 inputs `keys`: under JAX, compile it
    for all of them at once; elsewhere nothing."""
    if hasattr(predict, "compile_ahead"):
        predict.compile_ahead(shapes, keys)


def _torch_predict_function(model):
    import torch

    def run(x):
        with torch.no_grad(), inference_graph(model, has_padding(x)):
            return keras.ops.convert_to_numpy(keras.ops.cast(model(x, training=False), "float32"))

    return run


def predict_function(model, precision=DEFAULT_PRECISION):
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
        return _jax_predict_function(model, fixed_weights=precision == "bfloat16")
    if backend == "torch":
        return _torch_predict_function(model)
    from biozoo.tasks.tf_inference import predict_function as tf_predict_function

    return tf_predict_function(model)


def compiled_predict(task):
    """`x -> logits` for `task` at its inference precision (`task.precision`, float32 unless
    set), built once per precision (float32 reads the current weights at each call)."""
    precision = getattr(task, "precision", DEFAULT_PRECISION)
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
