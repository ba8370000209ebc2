"""What every biozoo task shares: loading from any handle, converted heads, embeddings."""

from __future__ import annotations

import os
import warnings

import keras
import numpy as np

from biozoo import presets
from biozoo._keras_internals import check_file_exists, get_preset_loader
from biozoo.choices import DEFAULT_PRECISION
from biozoo.errors import CheckpointError
from biozoo.models import family_for_backbone
from biozoo.preset_files import HEADS_FILE, read_heads
from biozoo.tasks import _micro_batches
from biozoo.tasks.inference import check_precision, fused_layer_norms


def _saved_policy(config):
    """The dtype policy name a saved Keras config records ("" when none)."""
    dtype = (config or {}).get("config", {}).get("dtype")
    if isinstance(dtype, dict):
        return dtype.get("config", {}).get("name") or ""
    return dtype if isinstance(dtype, str) else ""


class PresetTaskMixin:
    """`from_preset` for tasks that work with every family's backbone.

    KerasHub's `Task.from_preset` looks for a per-family subclass (BertTextClassifier...);
    biozoo's tasks are family-agnostic, so the preset's task.json (or its backbone and
    tokenizer) is loaded directly. A task built from a converted checkpoint picks up the heads
    it carried (a SQuAD2 QA head, a `*ForTokenClassification` classifier and its `id2label`...)
    through `_head_arguments` and `_init_from_heads`.
    """

    # The transformers class name ending of the checkpoints this task reproduces.
    hf_class_suffix = None
    # Whether the head reads the backbone's pooler (BERT's pooled_dense); fine-tuning keeps an unread one as it is.
    reads_pooled_output = True
    _precision = DEFAULT_PRECISION

    @property
    def precision(self):
        """The inference precision of `predict_*`, `annotate` and `answer`: "float32" (default),
        "bfloat16" or "int8" (`biozoo.tasks.inference`). The bfloat16 and int8 models are
        made from the weights when first used, and again after `fit`, `load_weights` or
        `set_weights`."""
        return self._precision

    @precision.setter
    def precision(self, value):
        self._precision = check_precision(value)

    def _forget_predict_function(self):
        """The bfloat16 and int8 models are copies of the weights: made again after these change."""
        self._compiled_predict = None

    def load_weights(self, *args, **kwargs):
        result = super().load_weights(*args, **kwargs)
        self._forget_predict_function()
        return result

    def set_weights(self, *args, **kwargs):
        result = super().set_weights(*args, **kwargs)
        self._forget_predict_function()
        return result

    def fit(self, *args, **kwargs):
        try:
            return super().fit(*args, **kwargs)
        finally:
            self._forget_predict_function()

    def ids_model(self):
        """The Keras model from the backbone's token ids to logits that exports write (the task itself; a
        method, not a property: Keras' saving walks attributes, and one pointing back would loop)."""
        return self

    @classmethod
    def from_preset(cls, preset, load_weights=True, precision=DEFAULT_PRECISION, **kwargs):
        new_head = cls._new_head_requested(kwargs)
        preset_dir = presets.resolve_preset(preset, accept=None if new_head else cls._accept_checkpoint)
        loader = get_preset_loader(preset_dir)
        has_task = check_file_exists(preset_dir, "task.json")
        heads, config = ({}, {}) if has_task else read_heads(preset_dir)
        if not has_task:
            kwargs = cls._head_arguments(config, kwargs, preset)
        if kwargs.get("dtype") is None and _saved_policy(loader.config).startswith("mixed_"):
            # trained under mixed precision (float32 weights) by an earlier biozoo: KerasHub's
            # loader refuses the mixed policy's name, so load it under the current policy
            kwargs["dtype"] = keras.config.dtype_policy().name
        with presets.loading(preset_dir):
            task = loader.load_task(cls, load_weights, load_task_weights=True, **kwargs)
        if not has_task and load_weights:
            try:
                task._init_from_heads(heads, config)
            except ValueError as error:  # Keras names the layer only
                shapes = ", ".join(f"{key} {tuple(value.shape)}" for key, value in sorted(heads.items()))
                raise CheckpointError(f"{os.path.join(preset_dir, HEADS_FILE)}: {error} (its tensors: {shapes}); the "
                                      "converted head does not fit the model its config builds") from None
        task.precision = precision
        return task

    @classmethod
    def _new_head_requested(cls, kwargs):
        """Whether the arguments ask for a new head (e.g. other labels) rather than the checkpoint's."""
        return False

    @classmethod
    def _accept_checkpoint(cls, hf_config, source):
        """Refuse a task checkpoint of another kind (a QA model asked for as a token classifier)."""
        found = (hf_config.get("architectures") or [None])[0]
        if not found or cls.hf_class_suffix is None or found.endswith(cls.hf_class_suffix):
            return
        other = next((task for suffix, task in _TASK_OF_SUFFIX.items() if found.endswith(suffix)), None)
        if other is None:
            return  # a pretraining or bare-encoder class: the task gets a new head

        task_class, what = other
        hint = " or pass label_names for a new head on its encoder" if cls._takes_labels() else ""
        raise CheckpointError(
            f"{source} holds a {found} checkpoint (a {what} model), not a *{cls.hf_class_suffix}; load it "
            f"with biozoo.{task_class}{hint}.")

    @classmethod
    def _takes_labels(cls):
        return False

    @classmethod
    def _head_arguments(cls, heads_config, kwargs, preset):
        """`kwargs` completed from the converted head (label names...); the default adds none."""
        return kwargs

    def _init_from_heads(self, heads, config):
        """Copy converted heads into the task's layers; the default uses none."""


# transformers head class endings -> (biozoo task, what it is)
_TASK_OF_SUFFIX = {
    "ForTokenClassification": ("TokenClassifier", "token-classification"),
    "ForSequenceClassification": ("SequenceClassifier", "sequence-classification"),
    "ForQuestionAnswering": ("QuestionAnswerer", "question-answering"),
}


class ClassifierHeadMixin:
    """Label names, problem type and weights from a converted `*ForTokenClassification` or
    `*ForSequenceClassification` head. Label names given that differ from the checkpoint's ask
    for a new head on its encoder (fine-tuning for other labels)."""

    @classmethod
    def _new_head_requested(cls, kwargs):
        return "label_names" in kwargs

    @classmethod
    def _takes_labels(cls):
        return True

    @classmethod
    def _head_arguments(cls, heads_config, kwargs, preset):
        head = heads_config.get("classifier")
        if head is None or "label_names" in kwargs:
            return kwargs
        names = head["label_names"]
        if head.get("problem_type") != "regression" and names == [f"LABEL_{i}" for i in range(len(names))]:
            warnings.warn(f"{preset}: the checkpoint names no labels (no id2label, or only LABEL_0 ... "
                          f"LABEL_{len(names) - 1}); predictions carry those names.", stacklevel=3)
        return {"label_names": names, **cls._problem_arguments(head), **kwargs}

    @classmethod
    def _problem_arguments(cls, head):
        return {}

    def _classifier_weights(self, heads, config):
        """The converted head's tensors for this task, or None (no head, other labels)."""
        head = config.get("classifier")
        if head is None or list(head["label_names"]) != list(self.label_names):
            return None
        if head.get("hf_class") and not head["hf_class"].endswith(self.hf_class_suffix):
            return None  # another task's head (asked for with label_names): a new head
        return heads


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
    family_dropout = family_for_backbone(backbone).head_dropout
    if family_dropout is not None:
        return family_dropout
    value = backbone.get_config().get("dropout")
    return 0.1 if value is None else value


class GlobalBatchLossMixin:
    """The training loss is the mean over the valid examples (or tokens) of the *global* batch.

    Keras averages each replica's loss over that replica's own valid examples; when replicas
    hold different numbers of them (a short last batch, ignored tokens), examples would weigh
    unequally. Each replica's mean is rescaled by its share of the global count, so a step on
    N replicas computes what one device computes on the whole batch.

    With `micro_batches = k > 1` (set by `biozoo finetune` when the task's loss ignores padding
    and shapes may change: not on TensorFlow with XLA or static shapes), the batch is sorted by
    length and run as k micro-batches, each cut to its own longest example (on JAX, to the
    padded length above it), summing their gradients into one update: the update of the whole
    random batch, computing little more padding than length-bucketed batches would. On
    TensorFlow each replica splits its own batch (`biozoo.tasks.tf_graph`); on JAX and PyTorch
    the global batch is split (`biozoo.tasks._micro_batches`).

    Example:
        >>> task.micro_batches = 4
        >>> task.fit(batches.dataset(), epochs=1)  # same updates as micro_batches = 1
    """

    micro_batches = 1
    padding_invariant_loss = False  # the loss of a batch is unchanged by trailing padding
    token_level_labels = False  # labels are [batch, length], cut with the tokens

    def _base_compute_loss(self, *args, **kwargs):
        """Keras' own `compute_loss` (the one this mixin refines)."""
        return super().compute_loss(*args, **kwargs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss = super().compute_loss(x, y, y_pred, sample_weight, training=training)
        if keras.backend.backend() != "tensorflow" or loss is None or y is None:
            return loss  # JAX and PyTorch see the global batch whole: its mean is the loss already
        from biozoo.tasks.tf_graph import global_batch_loss

        return global_batch_loss(loss, y, sample_weight)

    def train_step(self, *args):
        # TensorFlow's and PyTorch's train_step(data); JAX's is stateless: train_step(state, data),
        # and its micro-batches replace the whole train function (make_train_function)
        backend = keras.backend.backend()
        if self.micro_batches <= 1 or backend == "jax":
            with fused_layer_norms(self):
                return super().train_step(*args)
        if backend == "torch":
            return _micro_batches.torch_train_step(self, *args)
        from biozoo.tasks.tf_graph import micro_batch_train_step

        return micro_batch_train_step(self, *args)

    def make_train_function(self, force=False):
        if self.micro_batches <= 1 or keras.backend.backend() != "jax":
            return super().make_train_function(force)
        if self.train_function is None or force:
            self.train_function = _micro_batches.jax_train_function(self)
        return self.train_function
