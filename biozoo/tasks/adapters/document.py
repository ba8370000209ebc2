"""Multi-label document classification: Hallmarks of Cancer abstracts, a multi-label
`SequenceClassifier` with per-label thresholds, the two published HoC F1 variants."""

from __future__ import annotations

import numpy as np

from biozoo.data.hoc import LABELS, group_by_abstract, read_hoc
from biozoo.data.pipeline import model_input_batches
from biozoo.metrics.hoc import document_scores, tune_thresholds
from biozoo.tasks.adapters.base import TaskAdapter, load_splits, truncation_report


class DocumentAdapter(TaskAdapter):
    """Multi-label document classification: Hallmarks of Cancer (BLURB layout), sentences
    grouped into abstracts with their labels OR-ed; one threshold per label, tuned on dev. Encoding
    counts the abstracts cut to fit."""

    kind = "doc"

    def load(self, data_dir, only=None):
        return load_splits(data_dir, lambda path: group_by_abstract(read_hoc(path)), only)

    def build_task(self, preset, splits, hp):
        task = self.task_cls.from_preset(preset, label_names=list(LABELS), multi_label=True)
        task.preprocessor.sequence_length = hp.max_seq_length
        return task

    def batches(self, task, abstracts, hp, training=False):
        cut = []
        encoded = task.preprocessor.encode([a.text for a in abstracts], cut=cut)
        if training:
            self.train_counts = {"train_truncated": truncation_report(task, abstracts, cut)}
        return model_input_batches(
            [ids for ids, _ in encoded], task.preprocessor.tokenizer.pad_token_id, [s for _, s in encoded],
            extra={"labels": [np.asarray(a.labels, np.float32) for a in abstracts], "weights": [1.0] * len(abstracts)},
            y_key="labels", w_key="weights", scalars=("labels", "weights"), scalar_pad=None,
            batch_size=hp.batch_size, max_length=hp.max_seq_length, shuffle=training, seed=hp.seed,
        )

    def tune(self, task, dev):
        """Per-label thresholds that maximise each label's F1 on the dev abstracts."""
        task.thresholds = tune_thresholds(task.predict_probabilities([a.text for a in dev]),
                                          [a.labels for a in dev])

    def evaluate(self, task, abstracts):
        cut = []
        predicted = task.predict_labels([a.text for a in abstracts], cut=cut)
        pred = [[int(name in p) for name in task.label_names] for p in predicted]
        scores = document_scores([list(a.labels) for a in abstracts], pred)
        scores["truncated"] = truncation_report(task, abstracts, cut)
        return scores

    def headline_f1(self, scores):
        return scores["micro_f1_linkbert"]["f1"]
