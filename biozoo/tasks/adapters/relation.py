"""Relation extraction: one label per sentence with entity markers (ChemProt, DDI, GAD), a
`SequenceClassifier`, micro P/R/F1 over the positive classes."""

from __future__ import annotations

from biozoo.api import Tokenizer, from_preset
from biozoo.data import IGNORE_LABEL
from biozoo.data.pipeline import model_input_batches
from biozoo.data.relation import read_relation
from biozoo.errors import DataFormatError
from biozoo.metrics.relation import accuracy, infer_negative_label, micro_prf
from biozoo.tasks.adapters.base import TaskAdapter, load_splits, train_labels, truncation_report
from biozoo.tasks.base import resize_token_embedding
from biozoo.tasks.sequence_classifier import (
    ENTITY_MARKERS,
    OTHER_ENTITY_MARKERS,
    SequenceClassifierPreprocessor,
    markers_to_add,
)


class RelationAdapter(TaskAdapter):
    """Relation extraction: one label per sentence with entity markers (ChemProt, DDI, GAD).
    The markers the training text uses become tokens of their own (`added_tokens`); the labels
    are the train split's. Encoding counts the sentences cut to fit and those that lose a marker of
    their entity pair."""

    kind = "re"

    def __init__(self, negative_label=None, added_tokens=()):
        self.negative_label = negative_label
        self.added_tokens = list(added_tokens)

    def options(self):
        return {"negative_label": self.negative_label, "added_tokens": self.added_tokens}

    def load(self, data_dir, only=None):
        return load_splits(data_dir, read_relation, only)

    def build_task(self, preset, splits, hp):
        labels = sorted(train_labels(splits, lambda e: [(e.label, e.line)]))
        self.negative_label = self.negative_label or infer_negative_label(labels)
        tokenizer = Tokenizer.from_preset(preset)
        texts = [e.text for e in splits["train"]]
        self.added_tokens = markers_to_add(tokenizer, texts)
        if self.added_tokens:
            tokenizer = tokenizer.with_added_tokens(self.added_tokens)
        backbone = from_preset(preset)
        if tokenizer.vocabulary_size() > backbone.vocabulary_size:
            backbone = resize_token_embedding(backbone, tokenizer.vocabulary_size())
        preprocessor = SequenceClassifierPreprocessor(tokenizer=tokenizer, sequence_length=hp.max_seq_length)
        return self.task_cls(backbone=backbone, preprocessor=preprocessor, label_names=labels)

    def batches(self, task, examples, hp, training=False):
        index = {label: i for i, label in enumerate(task.label_names)}
        cut = []
        encoded = task.preprocessor.encode([e.text for e in examples], cut=cut)
        if training:
            self.train_counts = {
                "train_truncated": truncation_report(task, examples, cut, marker_ids(task.preprocessor.tokenizer))}
        return model_input_batches(
            [ids for ids, _ in encoded], task.preprocessor.tokenizer.pad_token_id, [s for _, s in encoded],
            extra={"labels": [index[e.label] for e in examples]}, y_key="labels", scalars=("labels",),
            scalar_pad=IGNORE_LABEL, batch_size=hp.batch_size, max_length=hp.max_seq_length, shuffle=training,
            seed=hp.seed,
        )

    def evaluate(self, task, examples):
        known = set(task.label_names)
        unknown = {}
        for example in examples:
            if example.label not in known:
                unknown.setdefault(example.label, example)
        if unknown:
            first = ", ".join(f"{label!r} ({example.path}:{example.line})" for label, example in sorted(unknown.items()))
            raise DataFormatError(f"labels the model was not trained on: {first}; it predicts "
                                  f"{', '.join(task.label_names)}")
        cut = []
        predicted = task.predict_labels([e.text for e in examples], cut=cut)
        gold = [e.label for e in examples]
        scores = micro_prf(gold, predicted, self.negative_label)
        scores["accuracy"] = accuracy(gold, predicted)
        scores["examples"] = len(examples)
        scores["truncated"] = truncation_report(task, examples, cut, marker_ids(task.preprocessor.tokenizer))
        return scores


def marker_ids(tokenizer):
    """The ids of the markers of an entity pair that the tokenizer keeps as one token."""
    pair = [marker for marker in ENTITY_MARKERS if marker not in OTHER_ENTITY_MARKERS]
    return {ids[0] for ids in tokenizer.ids(pair) if len(ids) == 1}
