"""AdamW with linear warmup and decay, as BERT / HF fine-tuning recipes use."""

from __future__ import annotations

import keras

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
        warmup = keras.ops.cast(max(self.warmup_steps, 1), "float32")
        total = keras.ops.cast(max(self.total_steps, 1), "float32")
        rising = step / warmup
        falling = keras.ops.maximum(0.0, (total - step) / keras.ops.maximum(1.0, total - warmup))
        factor = keras.ops.where(step < self.warmup_steps, rising, falling)
        return self.peak * factor

    def get_config(self):
        return {"peak": self.peak, "total_steps": self.total_steps, "warmup_steps": self.warmup_steps}


class _SummedSlices:
    """Optimizer mixin: sparse gradients (tf.IndexedSlices, one slice per occurrence of a token
    in the batch) become dense tensors, duplicates summed, before clipping and the update.

    Keras' element-wise ops act on each slice alone, so for a row that occurs k times Adam's
    second moment (and the gradient norm used for clipping) would be the sum of the slices'
    squares instead of the square of their sum: a frequent token's embedding, or the segment
    embedding, then moves up to sqrt(k) times the learning rate. Densified, every embedding row
    is updated as torch.optim updates it.
    """

    def apply(self, grads, trainable_variables=None):
        import tensorflow as tf

        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        return super().apply(grads, trainable_variables)


@keras.saving.register_keras_serializable(package="biozoo")
class AdamW(_SummedSlices, keras.optimizers.AdamW):
    """Keras' AdamW, updating as torch.optim.AdamW (HF's fine-tuning optimiser) does: sparse
    gradients summed per row, and epsilon added to the bias-corrected sqrt(v).

    Keras adds epsilon to the uncorrected sqrt(v), which is torch's update with an epsilon
    1 / sqrt(1 - beta_2^t) times larger: 31.6 times at the first step, 3.2 times at step 100.

    Example:
        >>> task.compile(optimizer=AdamW(learning_rate=5e-5, weight_decay=0.01, epsilon=1e-8))
    """

    def update_step(self, gradient, variable, learning_rate):
        ops = keras.ops
        gradient = ops.cast(gradient, variable.dtype)
        step = ops.cast(self.iterations + 1, variable.dtype)
        correction_1 = 1 - ops.power(ops.cast(self.beta_1, variable.dtype), step)
        correction_2 = 1 - ops.power(ops.cast(self.beta_2, variable.dtype), step)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign_add(m, (gradient - m) * (1 - self.beta_1))
        self.assign_add(v, (ops.square(gradient) - v) * (1 - self.beta_2))
        denominator = ops.sqrt(v) / ops.sqrt(correction_2) + self.epsilon
        self.assign_sub(variable, ops.cast(learning_rate, variable.dtype) / correction_1 * m / denominator)


@keras.saving.register_keras_serializable(package="biozoo")
class Lamb(_SummedSlices, keras.optimizers.Lamb):
    """Keras' LAMB (ALBERT's optimiser) with sparse gradients summed per row.

    Example:
        >>> task.compile(optimizer=Lamb(learning_rate=1e-3, weight_decay=0.01, epsilon=1e-6))
    """


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


# Depth of a variable for layer-wise learning-rate decay, from its path: embeddings are depth
# 0, encoder layer i is i + 1, everything else (pooler, task heads) is the top, L + 1.
# ALBERT's one shared layer is trained at the top layer's rate.
LAYER_DEPTH_RULES = (
    (r"(?:^|/)transformer_layer_(\d+)(?:/|$)", lambda match, layers: int(match.group(1)) + 1),
    (r"(?:^|/)group_\d+_inner_layer", lambda match, layers: layers),
    (r"(?:^|/)(?:token_embedding|position_embedding|segment_embedding|embeddings?_[a-z_]+)(?:/|$)",
     lambda match, layers: 0),
)


def layer_depth(path, num_layers):
    import re

    for pattern, depth in LAYER_DEPTH_RULES:
        match = re.search(pattern, path)
        if match:
            return depth(match, num_layers)
    return num_layers + 1


def layerwise_multipliers(model, decay, num_layers):
    """{variable path: decay ** (L + 1 - depth)} as in ELECTRA's fine-tuning (decay 0.8 for
    base models, 0.9 for large)."""
    return {v.path: decay ** (num_layers + 1 - layer_depth(v.path, num_layers)) for v in model.trainable_variables}


def _with_layerwise_rates(optimizer_cls):
    """`optimizer_cls` whose update and weight decay of each variable use the learning rate
    times that variable's multiplier (1 for variables not listed)."""
    import tensorflow as tf

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
                learning_rate = learning_rate * tf.cast(rate, learning_rate.dtype)
            return super().update_step(gradient, variable, learning_rate)

        def _apply_weight_decay(self, variables):
            if self.weight_decay is None:
                return

            def apply(distribution, variables):
                for variable in variables:
                    rate = self._multiplier(variable)

                    def decay(v, rate=rate):
                        if self._use_weight_decay(v):
                            lr = tf.cast(self.learning_rate, v.dtype) * tf.cast(rate, v.dtype)
                            v.assign_sub(v * tf.cast(self.weight_decay, v.dtype) * lr)

                    distribution.extended.update(getattr(variable, "value", variable), decay, group=False)

            tf.__internal__.distribute.interim.maybe_merge_call(apply, self._distribution_strategy, variables)

    LayerwiseRates.__name__ = f"Layerwise{optimizer_cls.__name__}"
    return LayerwiseRates


OPTIMIZERS = ("adamw", "lamb")


def make_optimizer(name="adamw", learning_rate=5e-5, total_steps=1, warmup_ratio=0.1, weight_decay=0.01,
                   clip_norm=None, layer_decay=None, model=None, num_layers=None):
    """The fine-tuning / pretraining optimiser: AdamW (BERT, ELECTRA) or LAMB (ALBERT), linear
    warmup and decay, no weight decay on biases and LayerNorms, optional global-norm gradient
    clipping and layer-wise learning-rate decay (`layer_decay`, needs `model`)."""
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; choose one of {', '.join(OPTIMIZERS)}")
    schedule = LinearWarmupDecay(learning_rate, total_steps, round(warmup_ratio * total_steps))
    cls = AdamW if name == "adamw" else Lamb
    kwargs = {"learning_rate": schedule, "global_clipnorm": clip_norm}
    if name == "adamw":
        kwargs.update(weight_decay=weight_decay, beta_1=0.9, beta_2=0.999, epsilon=1e-8)
    else:  # ALBERT's LAMB: beta_2 0.999, epsilon 1e-6, decoupled weight decay
        kwargs.update(weight_decay=weight_decay or None, beta_1=0.9, beta_2=0.999, epsilon=1e-6)
    if layer_decay and layer_decay != 1.0:
        if model is None or num_layers is None:
            raise ValueError("layer-wise learning-rate decay needs the model and its number of layers")
        cls = _with_layerwise_rates(cls)
        kwargs["multipliers"] = layerwise_multipliers(model, layer_decay, num_layers)
    optimizer = cls(**kwargs)
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return optimizer
