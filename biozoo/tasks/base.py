"""What every biozoo task shares: loading from any handle, converted heads, embeddings."""

from __future__ import annotations

import numpy as np


class PresetTaskMixin:
    """`from_preset` for tasks that work with every family's backbone.

    KerasHub's `Task.from_preset` looks for a per-family subclass (BertTextClassifier...);
    biozoo's tasks are family-agnostic, so the preset's task.json (or its backbone and
    tokenizer) is loaded directly. A task built from a backbone preset picks up the heads the
    source checkpoint carried (e.g. the SQuAD2 QA head) through `_init_from_heads`.
    """

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        from keras_hub.src.utils.preset_utils import check_file_exists, get_preset_loader

        from biozoo import hub
        from biozoo.convert.preset import read_heads

        preset_dir = hub.resolve_preset(preset)
        loader = get_preset_loader(preset_dir)
        has_task = check_file_exists(preset_dir, "task.json")
        task = loader.load_task(cls, load_weights, load_task_weights=True, **kwargs)
        if not has_task and load_weights:
            heads, config = read_heads(preset_dir)
            task._init_from_heads(heads, config)
        return task

    def _init_from_heads(self, heads, config):
        """Copy converted heads into the task's layers; the default uses none."""


def resize_token_embedding(backbone, vocabulary_size):
    """A copy of `backbone` whose token embedding has `vocabulary_size` rows.

    New rows (added tokens such as entity markers) start at the mean of the existing rows,
    as HF's resize_token_embeddings does, so they begin as an "average" token.
    """
    old = backbone.token_embedding.embeddings.numpy()
    if vocabulary_size == old.shape[0]:
        return backbone
    if vocabulary_size < old.shape[0]:
        raise ValueError(f"cannot shrink the embedding from {old.shape[0]} to {vocabulary_size} rows")
    config = backbone.get_config()
    config["vocabulary_size"] = vocabulary_size
    resized = type(backbone).from_config(config)
    values = {w.path: w for w in backbone.weights}
    for weight in resized.weights:
        if weight is resized.token_embedding.embeddings:
            extra = np.repeat(old.mean(axis=0, keepdims=True), vocabulary_size - old.shape[0], axis=0)
            weight.assign(np.concatenate([old, extra]))
        else:
            weight.assign(values[weight.path])
    return resized


def head_dropout(backbone, dropout=None):
    """The task head's dropout: as given, else the backbone's hidden dropout (HF's default when
    `classifier_dropout` is unset), else 0.1. ALBERT's heads use classifier_dropout_prob, 0.1,
    whatever its hidden dropout (0)."""
    if dropout is not None:
        return dropout
    if type(backbone).__name__ == "AlbertBackbone":
        return 0.1
    value = backbone.get_config().get("dropout")
    return 0.1 if value is None else value


class GlobalBatchLossMixin:
    """The training loss is the mean over the valid examples (or tokens) of the *global* batch.

    Keras averages each replica's loss over that replica's own valid examples; when replicas
    hold different numbers of them (a short last batch, ignored tokens), examples would weigh
    unequally. Each replica's mean is rescaled by its share of the global count, so a step on
    N replicas computes what one device computes on the whole batch.
    """

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        import tensorflow as tf

        loss = super().compute_loss(x, y, y_pred, sample_weight, training=training)
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        context = tf.distribute.get_replica_context()
        if replicas == 1 or loss is None or y is None or context is None:
            return loss
        if sample_weight is not None:
            valid = tf.reduce_sum(tf.cast(sample_weight > 0, loss.dtype))
        else:
            valid = tf.reduce_sum(tf.cast(tf.not_equal(tf.cast(y, tf.int32), -100), loss.dtype))
        total = context.all_reduce(tf.distribute.ReduceOp.SUM, valid)
        return loss * tf.math.divide_no_nan(valid * replicas, total)
