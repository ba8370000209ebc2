"""What tasks do inside TensorFlow graphs: the loss as the mean over the global batch under a
tf.distribute strategy, the length-sorted micro-batch train step, and the token classifier's in-graph
preprocessing (raw words to model inputs, for SavedModel serving). The task classes call these on
TensorFlow.

Example:
    >>> task.micro_batches = 4
    >>> task.fit(batches.dataset(), epochs=1)  # micro_batch_train_step: same updates as micro_batches = 1
"""

from __future__ import annotations

import keras
import tensorflow as tf
from keras_hub.layers import MultiSegmentPacker

from biozoo import _keras_internals
from biozoo.data import IGNORE_LABEL


def valid_count(y, sample_weight, dtype):
    """The examples (or tokens) of a batch that count: weighted, or not labelled IGNORE_LABEL."""
    if sample_weight is not None:
        return tf.reduce_sum(tf.cast(sample_weight > 0, dtype))
    return tf.reduce_sum(tf.cast(tf.not_equal(tf.cast(y, tf.int32), IGNORE_LABEL), dtype))


def share_of_global_batch(loss, valid, total):
    """`loss` (this replica's mean over `valid` examples, divided by the number of replicas, as
    Keras' losses are) as this replica's part of the mean over `total`."""
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    return loss * tf.math.divide_no_nan(valid * replicas, total)


def global_count(valid):
    """`valid` summed over the replicas."""
    if tf.distribute.get_strategy().num_replicas_in_sync == 1 or tf.distribute.get_replica_context() is None:
        return valid
    return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, valid)


def global_batch_loss(loss, y, sample_weight):
    """A replica's loss as its share of the mean over the global batch (unchanged on one replica)."""
    if tf.distribute.get_strategy().num_replicas_in_sync == 1 or tf.distribute.get_replica_context() is None:
        return loss
    valid = valid_count(y, sample_weight, loss.dtype)
    return share_of_global_batch(loss, valid, global_count(valid))


def length_sorted_micro_batches(task, x, y, sample_weight):
    """k (x, y, sample_weight) parts of this replica's batch: rows sorted by length, longest first
    (filler rows last), each part cut to its longest row."""
    lengths = tf.reduce_sum(tf.cast(x["padding_mask"], tf.int32), axis=1)
    order = tf.argsort(lengths, direction="DESCENDING", stable=True)
    rows, k = tf.shape(lengths)[0], task.micro_batches
    parts = []
    for i in range(k):
        index = order[i * rows // k:(i + 1) * rows // k]  # every row, whether or not k divides the batch
        width = tf.maximum(tf.reduce_max(tf.gather(lengths, index)), 1)
        part_x = {key: tf.gather(value, index)[:, :width] for key, value in x.items()}
        part_y = None if y is None else tf.gather(y, index)
        if part_y is not None and task.token_level_labels:
            part_y = part_y[:, :width]
        part_w = None if sample_weight is None else tf.gather(sample_weight, index)
        parts.append((part_x, part_y, part_w))
    return parts


def micro_batch_train_step(task, data):
    """One update of `task` from its batch run as `task.micro_batches` length-sorted micro-batches,
    their gradients summed (the whole batch's update)."""
    x, y, sample_weight = _keras_internals.unpack_x_y_sample_weight(data)
    parts = length_sorted_micro_batches(task, x, y, sample_weight)
    valid = [valid_count(part_y, part_w, tf.float32) for _, part_y, part_w in parts]
    total = global_count(tf.add_n(valid))
    weights = task.trainable_weights
    dense, sparse = [[] for _ in weights], [[] for _ in weights]
    losses = []
    for (part_x, part_y, part_w), part_valid in zip(parts, valid):
        with tf.GradientTape() as tape:
            y_pred = task(part_x, training=True)
            loss = task._base_compute_loss(part_x, part_y, y_pred, part_w, training=True)
            loss = share_of_global_batch(loss, tf.cast(part_valid, loss.dtype), tf.cast(total, loss.dtype))
            scaled = task.optimizer.scale_loss(loss)
        for i, gradient in enumerate(tape.gradient(scaled, weights)):
            if isinstance(gradient, tf.IndexedSlices):  # embeddings: slices, summed by the optimizer
                sparse[i].append(gradient)
            elif gradient is not None:
                dense[i].append(gradient)
        losses.append(loss)
        task.compute_metrics(part_x, part_y, y_pred, sample_weight=part_w)
    gradients = [
        tf.IndexedSlices(tf.concat([g.values for g in sparse[i]], 0), tf.concat([g.indices for g in sparse[i]], 0),
                         sparse[i][0].dense_shape) if sparse[i] else tf.add_n(dense[i]) if dense[i] else None
        for i in range(len(weights))
    ]
    _keras_internals.loss_tracker(task).update_state(_keras_internals.unscale_loss_for_distribution(tf.add_n(losses)),
                                                     sample_weight=tf.shape(x["token_ids"])[0])
    task.optimizer.apply_gradients(zip(gradients, weights))
    return task.get_metrics_result()


def words_to_model_inputs(preprocessor, x, y=None, sample_weight=None):
    """In-graph: ragged words `[batch, (words)]` -> model inputs for one window each (truncated to the
    preprocessor's `sequence_length`); a word the tokenizer reduces to nothing becomes the unknown
    token. Word labels `y` (`[batch, (words)]`) go to each word's first piece, IGNORE_LABEL
    elsewhere, as `TokenClassifierPreprocessor.windows` gives them."""
    tokenizer = preprocessor.tokenizer
    words = x if isinstance(x, tf.RaggedTensor) else tf.ragged.constant(x)
    pieces = tokenizer.ragged_ids(words.flat_values)
    empty = tf.cast(pieces.row_lengths() == 0, tf.int64)
    unknown = tf.fill([tf.reduce_sum(empty)], tf.cast(tokenizer.unk_token_id, pieces.dtype))
    pieces = tf.concat([pieces, tf.RaggedTensor.from_row_lengths(unknown, empty)], axis=1)
    tokens = words.with_flat_values(pieces).merge_dims(1, 2)
    packer = MultiSegmentPacker(start_value=tokenizer.cls_token_id, end_value=tokenizer.sep_token_id,
                                pad_value=tokenizer.pad_token_id, sequence_length=preprocessor.sequence_length)
    token_ids, segment_ids = packer(tokens)
    x = {"token_ids": token_ids, "segment_ids": segment_ids,
         "padding_mask": tf.cast(token_ids != tokenizer.pad_token_id, "int32")}
    if y is not None:
        word_labels = y if isinstance(y, tf.RaggedTensor) else tf.ragged.constant(y)
        word_labels = tf.cast(word_labels.flat_values, tf.int32)
        first_piece = tf.equal(tf.ragged.range(pieces.row_lengths()).flat_values, 0)
        piece_labels = tf.where(first_piece, tf.repeat(word_labels, pieces.row_lengths()), IGNORE_LABEL)
        labels = words.with_flat_values(pieces.with_flat_values(piece_labels)).merge_dims(1, 2)
        y, _ = MultiSegmentPacker(start_value=IGNORE_LABEL, end_value=IGNORE_LABEL, pad_value=IGNORE_LABEL,
                                  sequence_length=preprocessor.sequence_length)(labels)
    return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)
