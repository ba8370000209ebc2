"""FeatureBatches as tf.data pipelines (TensorFlow's training loop and graph-mode prediction read them).

Example:
    >>> dataset = dataset_from(batches, step=0)  # endless, from a global step on
"""

from __future__ import annotations

import tensorflow as tf


def signature(batches):
    """The tf.TensorSpec structure of `batches`' batches (fixed shapes where they are static)."""
    if not batches.plan:
        raise ValueError("no examples to batch")
    first = batches.batch(batches.plan[0])

    def spec(value):
        shape = tuple(value.shape) if batches.static else (None,) * value.ndim
        return tf.TensorSpec(shape=shape, dtype=tf.as_dtype(value.dtype))

    return tf.nest.map_structure(spec, first)


def dataset_from(batches, step=0):
    """A tf.data.Dataset of the batches from global step `step` on (endless): what the resumable
    training loop (biozoo.train) streams."""
    dataset = tf.data.Dataset.from_generator(lambda: batches.batches_from(step), output_signature=signature(batches))
    return dataset.prefetch(tf.data.AUTOTUNE)


def dataset(batches, repeat=False):
    """A tf.data.Dataset of these batches with a known number of steps per epoch."""
    data = tf.data.Dataset.from_generator(lambda: iter(batches), output_signature=signature(batches))
    data = data.apply(tf.data.experimental.assert_cardinality(len(batches)))
    if repeat:
        data = data.repeat()
    return data.prefetch(tf.data.AUTOTUNE)
