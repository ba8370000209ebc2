"""What biozoo's optimizers need from TensorFlow: gradients summed into dense tensors, torch's global-norm
clipping after the sum over replicas, the fused Adam kernel with torch's epsilon, and weight decay at
per-variable rates under a tf.distribute strategy. `biozoo.optim` calls these on TensorFlow.

Example:
    >>> clip_by_global_norm_like_torch(gradients, 1.0)
"""

from __future__ import annotations

import keras
import tensorflow as tf

from biozoo import _keras_internals


def dense_gradients(gradients):
    """Sparse gradients (tf.IndexedSlices, one slice per occurrence of a token in the batch) as
    dense tensors, duplicates summed, as torch has them."""
    return [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in gradients]


def clip_by_global_norm_like_torch(gradients, max_norm):
    """`gradients` (dense tensors or None) scaled as torch.nn.utils.clip_grad_norm_ scales them:
    by min(max_norm / (norm + 1e-6), 1), norm the L2 norm of all of them together.

    One fused pass per tensor for the norm (`l2_loss`, no squared copy), and no multiplication
    on the steps where the factor is 1 (torch multiplies by 1.0, which changes nothing). A
    non-finite norm makes every gradient NaN, as in torch.
    """
    present = [g for g in gradients if g is not None]
    if not present:
        return list(gradients)
    squared = tf.add_n([2.0 * tf.cast(tf.nn.l2_loss(g), tf.float32) for g in present])
    factor = tf.minimum(tf.cast(max_norm, tf.float32) / (tf.sqrt(squared) + 1e-6), 1.0)

    def scaled():
        return [g * tf.cast(factor, g.dtype) for g in present]

    def unchanged():
        return [tf.identity(g) for g in present]

    clipped = iter(tf.cond(factor >= 1.0, unchanged, scaled))  # NaN >= 1 is False: NaN, as torch
    return [None if g is None else next(clipped) for g in gradients]


def fused_adamw_update(optimizer, gradient, variable, learning_rate):
    """`optimizer`'s Adam step of `variable` in TensorFlow's fused kernel. It adds its epsilon to the
    uncorrected sqrt(v); epsilon * sqrt(1 - beta_2^t) there is torch's epsilon after the correction."""
    dtype = variable.dtype
    step = tf.cast(optimizer.iterations + 1, dtype)
    beta_1_power = tf.pow(tf.cast(optimizer.beta_1, dtype), step)
    beta_2_power = tf.pow(tf.cast(optimizer.beta_2, dtype), step)
    index = optimizer._get_variable_index(variable)
    tf.raw_ops.ResourceApplyAdam(
        var=_resource(variable), m=_resource(optimizer._momentums[index]),
        v=_resource(optimizer._velocities[index]), beta1_power=beta_1_power, beta2_power=beta_2_power,
        lr=tf.cast(learning_rate, dtype), beta1=tf.cast(optimizer.beta_1, dtype), beta2=tf.cast(optimizer.beta_2, dtype),
        epsilon=tf.cast(optimizer.epsilon, dtype) * tf.sqrt(1 - beta_2_power), grad=tf.cast(gradient, dtype))


def _resource(variable):
    """The resource handle of a Keras or TensorFlow variable (a replica's own under a strategy)."""
    if isinstance(variable, keras.Variable):
        variable = variable.value
    return variable.handle


def apply_weight_decay(optimizer, variables, multiplier):
    """Decoupled weight decay of `variables` at the learning rate times `multiplier(variable)`, each
    replica's copy updated under the optimizer's strategy."""

    def apply(distribution, variables):
        for variable in variables:
            rate = multiplier(variable)

            def decay(v, rate=rate):
                if optimizer._use_weight_decay(v):
                    lr = tf.cast(optimizer.learning_rate, v.dtype) * tf.cast(rate, v.dtype)
                    v.assign_sub(v * tf.cast(optimizer.weight_decay, v.dtype) * lr)

            distribution.extended.update(getattr(variable, "value", variable), decay, group=False)

    _keras_internals.merge_call(optimizer, apply, variables)
