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


def adamw(learning_rate, total_steps, warmup_ratio=0.1, weight_decay=0.01, epsilon=1e-8, clipnorm=None):
    """AdamW with a linear warmup/decay schedule; no decay on biases and LayerNorms."""
    schedule = LinearWarmupDecay(learning_rate, total_steps, round(warmup_ratio * total_steps))
    optimizer = keras.optimizers.AdamW(
        learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9, beta_2=0.999,
        epsilon=epsilon, clipnorm=clipnorm,
    )
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return optimizer
