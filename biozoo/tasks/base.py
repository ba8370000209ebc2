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
