"""Every place biozoo reaches into private Keras and KerasHub internals, in one module.

Each function names the private code it uses; `CHECKED` lists that code with the
digest of its source in the Keras (or KerasHub) version it was checked against, and
tests/test_keras_internals.py fails when an upgrade changes any of it (then re-read the
new code, adapt the function here and update the digest).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import inspect
import random
from unittest import mock

import keras
import numpy as np
from keras.src import ops as keras_ops
from keras.src import tree
from keras.src.backend.common import global_state
from keras.src.export.tf2onnx_lib import patch_tf2onnx as patch
from keras.src.losses.loss import unscale_loss_for_distribution as unscale
from keras.src.random import seed_generator
from keras.src.saving.saving_lib import H5IOStore, _save_state
from keras.src.trainers.data_adapters.data_adapter_utils import unpack_x_y_sample_weight as unpack
from keras.src.utils.rng_utils import GLOBAL_RANDOM_SEED
from keras_hub.src.layers.modeling.transformer_layer_utils import merge_padding_and_attention_mask
from keras_hub.src.utils.keras_utils import gelu_approximate
from keras_hub.src.utils.preset_utils import check_file_exists, get_preset_loader

from biozoo._xla import compile_all

CHECKED_KERAS_VERSION = "3.15.1"
CHECKED_KERAS_HUB_VERSION = "0.32.0"  # for the keras_hub.src names

# KerasHub helpers without a public name, used as they are (re-exported here, checked below):
# the approximate GELU (HF "gelu_new"), the encoder's padding+attention mask merge (MobileBERT's
# block), and the preset loader a task's `from_preset` reads a directory with.
__all__ = ["gelu_approximate", "merge_padding_and_attention_mask", "check_file_exists", "get_preset_loader"]

# private Keras code we call, patch or override -> sha256 of its source in CHECKED_KERAS_VERSION
CHECKED = {
    "keras.src.backend.tensorflow.optimizer.TFOptimizer._backend_update_step": "00bd759c099a6b72",
    "keras.src.backend.tensorflow.trainer.TensorFlowTrainer.train_step": "debf0efab9d5794b",
    "keras.src.backend.tensorflow.optimizer.TFOptimizer._all_reduce_sum_gradients": "953512efa56c9680",
    "keras.src.backend.tensorflow.optimizer.TFOptimizer._distributed_tf_update_step": "ec83c95231ba33ee",
    "keras.src.optimizers.base_optimizer.BaseOptimizer._clip_gradients": "152b956e23c91ad9",
    "keras.src.backend.tensorflow.trainer.reduce_per_replica": "2e7d54b1e6edc29a",
    "keras.src.backend.tensorflow.trainer._collective_all_reduce_multi_worker": "0302369d850e6694",
    "keras.src.losses.loss.unscale_loss_for_distribution": "3903c7ed7f69c5ac",
    "keras.src.trainers.data_adapters.data_adapter_utils.unpack_x_y_sample_weight": "ff6afba0383c3fae",
    "keras.src.saving.saving_lib.H5IOStore": "6de535f3937a377b",
    "keras.src.saving.saving_lib._save_state": "472e9cc9267e3c4b",
    "keras.src.backend.common.global_state.set_global_attribute": "f31774cabee5ad63",
    "keras.src.backend.common.global_state.get_global_attribute": "d39da35cc653dfaa",
    "keras.src.random.seed_generator.GLOBAL_SEED_GENERATOR": "c5f470870581df43",
    "keras.src.utils.rng_utils.GLOBAL_RANDOM_SEED": "ed227e43dc43d011",
    "keras.src.export.tf2onnx_lib.patch_tf2onnx": "4014475707b2585e",
    "keras_hub.src.utils.keras_utils.gelu_approximate": "68bdcb81b48668d1",
    "keras_hub.src.layers.modeling.transformer_layer_utils.merge_padding_and_attention_mask": "a2c6edba33c15c7f",
    "keras_hub.src.utils.preset_utils.check_file_exists": "dad6abdd146fab67",
    "keras_hub.src.utils.preset_utils.get_preset_loader": "065b107b4e325e3c",
    # inference attention: `_dropout` and `_compute_attention`'s rule (dropout > 0: the unfused path)
    "keras.src.layers.attention.multi_head_attention.MultiHeadAttention._compute_attention": "88168a1a82dd0d31",
    "keras.src.layers.attention.multi_head_attention.MultiHeadAttention.__init__": "e35ec682b0a40265",
    "keras.src.layers.layer.Layer._flatten_layers": "662dcf281bc32c53",
    # JAX's train function, rebuilt by `jax_train_function_compiled_ahead`
    "keras.src.backend.jax.trainer.JAXTrainer.make_train_function": "80cf7f170ef64a78",
    "keras.src.backend.jax.trainer.JAXTrainer._make_function": "95d093f6f8230e7e",
}


def resolve(dotted):
    """The object a dotted name in `CHECKED` denotes."""
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            obj = getattr(obj, attribute)
        return obj
    raise ImportError(dotted)


def source_digest(dotted):
    """sha256 (16 hex digits) of the source of a function or class, or of a constant's repr."""
    obj = inspect.unwrap(resolve(dotted))
    text = inspect.getsource(obj) if inspect.isroutine(obj) or inspect.isclass(obj) else repr(obj)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---- random seeds (biozoo.train) ---------------------------------------------------------


def set_seed(seed):
    """What keras.utils.set_random_seed seeds (Python, NumPy, Keras' global seed and a fresh
    global SeedGenerator) except tf.random.set_seed: in eager mode that clears TensorFlow's kernel
    cache, destroying the resources of tokenizers already built (tf-text's SentencePiece op), so
    a second seeded run in one process (`--seeds`) could not tokenize; and under JAX or PyTorch
    it would import TensorFlow. biozoo draws no TensorFlow-seeded random numbers."""
    global_state.set_global_attribute(GLOBAL_RANDOM_SEED, seed)
    global_state.set_global_attribute(seed_generator.GLOBAL_SEED_GENERATOR, None)
    random.seed(seed)
    np.random.seed(seed)
    if keras.backend.backend() == "torch":  # Keras' torch dropout draws from torch's global generator
        import torch

        torch.manual_seed(seed)


# ---- variables without memory, and Keras' own weights-file writer (biozoo.convert.sink) ----


@contextlib.contextmanager
def unallocated_variables():
    """Layers built in this block get variables with shapes but no memory. They are never
    initialized: Keras would do so when the scope exits, or at the next scope that does, so
    they are kept off its list of variables to initialize."""
    pending = list(global_state.get_global_attribute("uninitialized_variables", None) or [])
    try:
        with keras.StatelessScope(initialize_variables=False):
            yield
    finally:
        global_state.set_global_attribute("uninitialized_variables", pending)


def h5_store_class():
    """Keras' `.weights.h5` writer class (H5IOStore)."""
    return H5IOStore


def save_state(layer, weights_store):
    """Walk `layer` as `Model.save_weights` does, writing each variable into `weights_store`."""
    _save_state(layer, weights_store=weights_store, assets_store=None, inner_path="", visited_saveables=set())


# ---- train steps (biozoo.tasks.base) -----------------------------------------------------


def unpack_x_y_sample_weight(data):
    return unpack(data)


def jax_train_function_compiled_ahead(model, shapes):
    """Set `model.train_function` to Keras' JAX one (`JAXTrainer.make_train_function`: the
    jitted `train_step`, state donated, wrapped by `_make_function`), except that its first call
    first compiles the step for each batch shape in `shapes` (`(rows, length)` pairs), all at
    once (`biozoo._xla.compile_all`). A shape guessed wrong only costs a compilation never used."""
    import jax

    jitted = []

    def train_step(state, data):
        if not jitted:  # at the first step, when fit has built the optimizer's variables
            out_shardings = None
            if keras.distribution.distribution() is not None:  # the state keeps its layout, as Keras' step does
                out_shardings = (None, jax.tree.map(lambda value: value.sharding, state))
            jitted.append(jax.jit(model.train_step, donate_argnums=0, out_shardings=out_shardings))
            _compile_shapes(jitted[0], state, data, sorted(shapes))
        return jitted[0](state, data)

    model.train_function = model._make_function(train_step)


def _compile_shapes(step, state, data, shapes):
    import jax

    rows, length = next(leaf.shape[:2] for leaf in jax.tree.leaves(data) if leaf.ndim >= 2)

    def reshaped(leaf, new_rows, new_length):
        shape = list(leaf.shape)
        if shape and shape[0] == rows:
            shape[0] = new_rows
        if len(shape) > 1 and shape[1] == length:
            shape[1] = new_length
        return jax.ShapeDtypeStruct(tuple(shape), leaf.dtype, sharding=getattr(leaf, "sharding", None))

    compile_all(step.lower(state, jax.tree.map(lambda leaf: reshaped(leaf, *shape), data)) for shape in shapes)


def unscale_loss_for_distribution(loss):
    return unscale(loss)


def loss_tracker(model):
    """The Mean metric behind a compiled model's "loss" log."""
    return model._loss_tracker


# ---- optimizers (biozoo.optim) -----------------------------------------------------------


def all_reduce_then_update(optimizer, grads, variables, learning_rate, transform):
    """TFOptimizer._backend_update_step (sum the replicas' gradients, then update under a merge
    call), with `transform(summed gradients) -> gradients` between its two halves."""
    import tensorflow as tf

    summed = optimizer._all_reduce_sum_gradients(list(zip(grads, variables)))
    transformed = transform([g for g, _ in summed])
    tf.__internal__.distribute.interim.maybe_merge_call(
        optimizer._distributed_tf_update_step, optimizer._distribution_strategy,
        list(zip(transformed, variables)), learning_rate)


def merge_call(optimizer, function, *args):
    """Run `function(strategy, *args)` in cross-replica context, as Keras' TF optimizer does."""
    import tensorflow as tf

    return tf.__internal__.distribute.interim.maybe_merge_call(function, optimizer._distribution_strategy, *args)


# ---- multi-worker logs (biozoo.train.tf_loop) -------------------------------------------------


def patch_reduce_per_replica(make_replacement):
    """Replace Keras' TF trainer `reduce_per_replica` by `make_replacement(original,
    is_collective_multi_worker, map_structure)`, once."""
    from keras.src.backend.tensorflow import trainer as keras_trainer  # imports TensorFlow

    original = keras_trainer.reduce_per_replica
    if getattr(original, "biozoo_patched", False):
        return
    replacement = make_replacement(original, keras_trainer._collective_all_reduce_multi_worker, tree.map_structure)
    replacement.biozoo_patched = True
    replacement.__wrapped__ = original
    keras_trainer.reduce_per_replica = replacement


# ---- fused attention at inference (biozoo.tasks.inference) ---------------------------------


@contextlib.contextmanager
def attention_without_dropout(model, adjust_mask):
    """While the block runs, every Keras `MultiHeadAttention` of `model` has dropout 0 (its
    `_compute_attention` takes `ops.dot_product_attention` only then) and passes its attention
    mask through `adjust_mask(mask, query)` first. A layer already inside such a block (nested,
    or another thread's) is left to that block, which restores it."""
    changed = []
    try:
        for layer in model._flatten_layers():
            if isinstance(layer, keras.layers.MultiHeadAttention) and "_compute_attention" not in vars(layer):
                changed.append((layer, layer._dropout))
                layer._compute_attention = _adjusted_mask(layer._compute_attention, adjust_mask)
                layer._dropout = 0.0
        yield model
    finally:
        for layer, dropout in changed:
            layer._dropout = dropout
            vars(layer).pop("_compute_attention", None)  # the class's method again


@contextlib.contextmanager
def layer_norm_replaced(model, normalize):
    """While the block runs, every plain Keras `LayerNormalization` of `model` (last axis, scale
    and centre, no RMS scaling) computes `normalize(layer, x)` instead of its `call`."""
    changed = []
    try:
        for layer in model._flatten_layers():
            if (isinstance(layer, keras.layers.LayerNormalization) and "call" not in vars(layer)
                    and layer.axis in (-1, [-1]) and layer.center and layer.scale and not layer.rms_scaling):
                layer.call = functools.partial(normalize, layer)
                changed.append(layer)
        yield model
    finally:
        for layer in changed:
            vars(layer).pop("call", None)


def _adjusted_mask(compute_attention, adjust_mask):
    def compute(query, key, value, attention_mask=None, *args, **kwargs):
        return compute_attention(query, key, value, adjust_mask(attention_mask, query), *args, **kwargs)

    return compute


@contextlib.contextmanager
def count_attention_paths():
    """`(fused, computed)` mocks counting, while the block runs, the calls of Keras'
    `ops.dot_product_attention` and of `MultiHeadAttention._compute_attention` (for tests)."""
    attention = keras.layers.MultiHeadAttention
    with (mock.patch.object(keras_ops, "dot_product_attention", wraps=keras_ops.dot_product_attention) as fused,
          mock.patch.object(attention, "_compute_attention", autospec=True,
                            side_effect=attention._compute_attention) as computed):
        yield fused, computed


# ---- ONNX export (biozoo.export.onnx) ----------------------------------------------------


def patch_tf2onnx():
    """Keras' own fixes of tf2onnx for numpy >= 2 (idempotent), applied as Keras' ONNX export
    applies them before `tf2onnx.convert.from_function`."""
    patch()
