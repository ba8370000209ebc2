"""AdamW (BERT, HF fine-tuning) and LAMB (ALBERT) with linear warmup and decay."""

from __future__ import annotations

import math
import re

import keras

from biozoo import _keras_internals
from biozoo.choices import OPTIMIZERS

NO_DECAY = ("bias", "gamma", "beta")  # biases and LayerNorm parameters: no weight decay


@keras.saving.register_keras_serializable(package="biozoo")
class LinearWarmupDecay(keras.optimizers.schedules.LearningRateSchedule):
    """0 -> `peak` linearly over `warmup_steps`, then linearly to 0 at `total_steps`
    (HF's get_linear_schedule_with_warmup)."""

    def __init__(self, peak, total_steps, warmup_steps=0):
        self.peak = float(peak)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step):
        step = keras.ops.cast(step, "float32")
        warmup = keras.ops.cast(self.warmup_steps, "float32")
        total = keras.ops.cast(max(self.total_steps, 1), "float32")
        rising = step / keras.ops.maximum(1.0, warmup)
        falling = keras.ops.maximum(0.0, (total - step) / keras.ops.maximum(1.0, total - warmup))
        factor = keras.ops.where(step < self.warmup_steps, rising, falling)
        return self.peak * factor

    def get_config(self):
        return {"peak": self.peak, "total_steps": self.total_steps, "warmup_steps": self.warmup_steps}


class _TorchGradients:
    """Optimizer mixin: gradients enter the update as they do in torch.

    Sparse gradients (tf.IndexedSlices, one slice per occurrence of a token in the batch)
    become dense tensors, duplicates summed. Keras' element-wise ops act on each slice alone,
    so for a row that occurs k times Adam's second moment (and the gradient norm used for
    clipping) would be the sum of the slices' squares instead of the square of their sum: a
    frequent token's embedding, or the segment embedding, then moves up to sqrt(k) times the
    learning rate. Densified, every embedding row is updated as torch.optim updates it.

    `global_clipnorm` clips the gradient of the whole step, as clip_grad_norm_ after
    backward(): after the replicas' gradients are summed. Keras' TensorFlow optimizer clips
    before that sum, so each replica would clip its own part by its own norm.
    """

    def apply(self, grads, trainable_variables=None):
        if keras.backend.backend() == "tensorflow":  # only TensorFlow gives sparse gradients
            from biozoo.tf_optim import dense_gradients

            grads = dense_gradients(grads)
        return super().apply(grads, trainable_variables)

    def _clips_after_sum(self):
        """TensorFlow's optimizer sums the replicas' gradients in its update step: clip there.
        On JAX and PyTorch the step's gradients are already the whole batch's."""
        return bool(self.global_clipnorm) and not self.gradient_accumulation_steps \
            and keras.backend.backend() == "tensorflow"

    def _clip_gradients(self, grads):
        if self._clips_after_sum():
            return grads  # clipped in _backend_update_step, once summed over the replicas
        if self.global_clipnorm and keras.backend.backend() != "tensorflow":
            return clip_by_global_norm_like_torch(grads, self.global_clipnorm)
        return super()._clip_gradients(grads)

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        # Keras' TFOptimizer._backend_update_step, with the clipping between its two halves.
        if not self._clips_after_sum():
            return super()._backend_update_step(grads, trainable_variables, learning_rate)
        from biozoo.tf_optim import clip_by_global_norm_like_torch

        variables = [v.value if isinstance(v, keras.Variable) else v for v in trainable_variables]
        _keras_internals.all_reduce_then_update(
            self, grads, variables, learning_rate,
            lambda summed: clip_by_global_norm_like_torch(summed, self.global_clipnorm))


def clip_by_global_norm_like_torch(gradients, max_norm):
    """`gradients` (tensors or None) scaled as torch.nn.utils.clip_grad_norm_ scales them: by
    min(max_norm / (norm + 1e-6), 1), norm the L2 norm of all of them together (in float32). A
    non-finite norm makes every gradient NaN, as in torch. (`biozoo.tf_optim` has TensorFlow's.)"""
    ops = keras.ops
    present = [g for g in gradients if g is not None]
    if not present:
        return list(gradients)
    squared = sum(ops.sum(ops.square(ops.cast(g, "float32"))) for g in present)
    factor = ops.minimum(ops.cast(max_norm, "float32") / (ops.sqrt(squared) + 1e-6), 1.0)
    return [None if g is None else ops.multiply(g, ops.cast(factor, g.dtype)) for g in gradients]


@keras.saving.register_keras_serializable(package="biozoo")
class AdamW(_TorchGradients, keras.optimizers.AdamW):
    """Keras' AdamW, updating as torch.optim.AdamW (HF's fine-tuning optimiser) does: sparse
    gradients summed per row, and epsilon added to the bias-corrected sqrt(v).

    Keras adds epsilon to the uncorrected sqrt(v), which is torch's update with an epsilon
    1 / sqrt(1 - beta_2^t) times larger: 31.6 times at the first step, 3.2 times at step 100.

    Example:
        >>> task.compile(optimizer=AdamW(learning_rate=5e-5, weight_decay=0.01, epsilon=1e-8))
    """

    def update_step(self, gradient, variable, learning_rate):
        if keras.backend.backend() == "tensorflow":
            # One fused kernel (TensorFlow's Adam: one pass over the variable and its moments, where
            # Keras' ops make a temporary per operation), epsilon scaled to torch's.
            from biozoo.tf_optim import fused_adamw_update

            fused_adamw_update(self, gradient, variable, learning_rate)
            return
        ops, dtype = keras.ops, variable.dtype
        gradient, learning_rate = ops.cast(gradient, dtype), ops.cast(learning_rate, dtype)
        step = ops.cast(self.iterations + 1, dtype)
        bias_1 = 1 - ops.power(ops.cast(self.beta_1, dtype), step)
        bias_2 = 1 - ops.power(ops.cast(self.beta_2, dtype), step)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
        self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2))
        # torch.optim.AdamW: lr / (1 - beta_1^t) * m / (sqrt(v) / sqrt(1 - beta_2^t) + epsilon)
        denominator = ops.add(ops.divide(ops.sqrt(v), ops.sqrt(bias_2)), ops.cast(self.epsilon, dtype))
        self.assign_sub(variable, ops.divide(ops.multiply(m, ops.divide(learning_rate, bias_1)), denominator))


@keras.saving.register_keras_serializable(package="biozoo")
class Lamb(_TorchGradients, keras.optimizers.Lamb):
    """LAMB as ALBERT trains with it (google-research/albert, lamb_optimizer.py), sparse gradients
    summed per row: the update m / (sqrt(v) + epsilon), from moments without bias correction, plus
    weight_decay * w, scaled by the trust ratio ||w|| / ||update||. Variables excluded from weight
    decay (`exclude_from_weight_decay`: biases, LayerNorms) are excluded from the trust ratio too,
    as ALBERT's exclude_from_layer_adaptation defaults to its exclude_from_weight_decay.

    Example:
        >>> task.compile(optimizer=Lamb(learning_rate=1e-3, weight_decay=0.01, epsilon=1e-6))
    """

    def _apply_weight_decay(self, variables):
        """Nothing: LAMB's weight decay is part of its update, inside the trust ratio."""

    def update_step(self, gradient, variable, learning_rate):
        ops, dtype = keras.ops, variable.dtype
        gradient, learning_rate = ops.cast(gradient, dtype), ops.cast(learning_rate, dtype)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
        self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2))
        update = ops.divide(m, ops.add(ops.sqrt(v), ops.cast(self.epsilon, dtype)))
        if not self._use_weight_decay(variable):
            self.assign_sub(variable, ops.multiply(learning_rate, update))
            return
        if self.weight_decay:
            update = ops.add(update, ops.multiply(ops.cast(self.weight_decay, dtype), variable))
        weight_norm = ops.sqrt(ops.sum(ops.square(variable)))
        update_norm = ops.sqrt(ops.sum(ops.square(update)))
        trust_ratio = ops.where(ops.greater(weight_norm, 0),
                                ops.where(ops.greater(update_norm, 0), ops.divide(weight_norm, update_norm), 1.0), 1.0)
        self.assign_sub(variable, ops.multiply(ops.multiply(trust_ratio, learning_rate), update))


def default_optimizer(optimizer="auto"):
    """What a task's `compile()` trains with: for `"auto"`, biozoo's AdamW at BERT's fine-tuning
    rate 5e-5 (constant), weight decay 0.01 except on biases and LayerNorms; otherwise
    `optimizer` itself. `biozoo finetune` adds warmup and decay (`make_optimizer`)."""
    if isinstance(optimizer, str) and optimizer == "auto":
        optimizer = AdamW(learning_rate=5e-5, weight_decay=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-8)
        optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return optimizer


def adamw(learning_rate, total_steps, warmup_ratio=0.1, weight_decay=0.01, clip_norm=None):
    """AdamW with a linear warmup/decay schedule; no decay on biases and LayerNorms."""
    return make_optimizer("adamw", learning_rate, total_steps, warmup_ratio, weight_decay, clip_norm)


# Depth of a variable for layer-wise learning-rate decay, from its path, as ELECTRA's
# `_get_layer_lrs` gives it: embeddings are depth 0, encoder layer i is i + 1, everything else
# (pooler, task heads) L + 2, so the head trains at the full rate and the top layer at decay ** 2.
# ALBERT's one shared layer is trained at the top layer's rate.
LAYER_DEPTH_RULES = (
    (r"(?:^|/)transformer_layer_(\d+)(?:/|$)", lambda match, layers: int(match.group(1)) + 1),
    (r"(?:^|/)group_\d+_inner_layer", lambda match, layers: layers),
    (r"(?:^|/)(?:token_embedding|position_embedding|segment_embedding|embeddings?_[a-z_]+)(?:/|$)",
     lambda match, layers: 0),
)


def layer_depth(path, num_layers):
    for pattern, depth in LAYER_DEPTH_RULES:
        match = re.search(pattern, path)
        if match:
            return depth(match, num_layers)
    return num_layers + 2


def layerwise_multipliers(model, decay, num_layers):
    """{variable path: decay ** (L + 2 - depth)} as in ELECTRA's fine-tuning (decay 0.8 for
    base models, 0.9 for large)."""
    return {v.path: decay ** (num_layers + 2 - layer_depth(v.path, num_layers)) for v in model.trainable_variables}


def _with_layerwise_rates(optimizer_cls):
    """`optimizer_cls` whose update and weight decay of each variable use the learning rate
    times that variable's multiplier (1 for variables not listed)."""

    class LayerwiseRates(optimizer_cls):
        def __init__(self, *args, multipliers=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.multipliers = dict(multipliers or {})
            self._multiplier_by_key = {}

        def build(self, variables):
            super().build(variables)
            for variable in variables:
                self._multiplier_by_key[self._var_key(variable)] = self.multipliers.get(variable.path, 1.0)

        def _multiplier(self, variable):
            return self._multiplier_by_key.get(self._var_key(variable), 1.0)

        def update_step(self, gradient, variable, learning_rate):
            rate = self._multiplier(variable)
            if rate != 1.0:
                learning_rate = learning_rate * keras.ops.cast(rate, learning_rate.dtype)
            return super().update_step(gradient, variable, learning_rate)

        def _apply_weight_decay(self, variables):
            if self.weight_decay is None or isinstance(self, Lamb):  # LAMB decays in its update, at its rate
                return
            if keras.backend.backend() == "tensorflow":  # each replica's copy, under the strategy
                from biozoo.tf_optim import apply_weight_decay

                return apply_weight_decay(self, variables, self._multiplier)
            for variable in variables:  # Keras' decoupled decay, at this variable's rate
                if self._use_weight_decay(variable):
                    rate = keras.ops.cast(self.learning_rate, variable.dtype) * keras.ops.cast(
                        self._multiplier(variable), variable.dtype)
                    variable.assign(variable - variable * keras.ops.cast(self.weight_decay, variable.dtype) * rate)

    LayerwiseRates.__name__ = f"Layerwise{optimizer_cls.__name__}"
    return LayerwiseRates



def make_optimizer(name="adamw", learning_rate=5e-5, total_steps=1, warmup_ratio=0.1, weight_decay=0.01,
                   clip_norm=None, layer_decay=None, model=None, num_layers=None):
    """The fine-tuning / pretraining optimiser: AdamW (BERT, ELECTRA) or LAMB (ALBERT), linear
    warmup and decay, no weight decay on biases and LayerNorms, optional global-norm gradient
    clipping of the whole step's gradient (`clip_norm`; None or 0: none) and layer-wise
    learning-rate decay (`layer_decay`, needs `model`)."""
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")
    # warmup rounded up, as the HF Trainer's TrainingArguments.get_warmup_steps
    schedule = LinearWarmupDecay(learning_rate, total_steps, math.ceil(warmup_ratio * total_steps))
    cls = AdamW if name == "adamw" else Lamb
    kwargs = {"learning_rate": schedule, "global_clipnorm": clip_norm or None}
    if name == "adamw":
        kwargs.update(weight_decay=weight_decay, beta_1=0.9, beta_2=0.999, epsilon=1e-8)
    else:  # ALBERT's LAMB: beta_2 0.999, epsilon 1e-6, weight decay inside the trust ratio
        kwargs.update(weight_decay=weight_decay or None, beta_1=0.9, beta_2=0.999, epsilon=1e-6)
    if layer_decay and layer_decay != 1.0:
        if model is None or num_layers is None:
            raise ValueError("layer-wise learning-rate decay needs the model and its number of layers")
        cls = _with_layerwise_rates(cls)
        kwargs["multipliers"] = layerwise_multipliers(model, layer_decay, num_layers)
    optimizer = cls(**kwargs)
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return optimizer
