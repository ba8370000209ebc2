"""Extractive question answering: SQuAD-format json (SQuAD v1.1 / v2.0, BioASQ as SQuAD), a
`QuestionAnswerer`, the official SQuAD scores and, for BioASQ snippets, the factoid scores."""

from __future__ import annotations

import functools
import warnings

import numpy as np

from biozoo.data.pipeline import model_input_batches
from biozoo.data.qa import read_squad
from biozoo.errors import DataFormatError, DataWarning
from biozoo.metrics.bioasq import snippet_factoid_scores
from biozoo.metrics.squad import answer_scores
from biozoo.task_kinds import task_kind
from biozoo.tasks.adapters.base import TaskAdapter, load_splits


class QuestionAnsweringAdapter(TaskAdapter):
    """Extractive QA on SQuAD-format json (SQuAD v1.1/v2.0, BioASQ as SQuAD). `version`
    "auto" becomes "2.0" when the data has unanswerable questions, else "1.1"."""

    kind = "qa"

    def __init__(self, version="auto"):
        self.version = version

    def options(self):
        return {"version": self.version}

    def load(self, data_dir, only=None):
        """The splits; a question id given twice is refused where it is scored (dev, test, the
        split `only` names) and kept, with a warning, in a train split read for training, where a
        question without answers must be `is_impossible` (`read_squad`'s `answers_required`)."""
        return load_splits(data_dir, read_squad, only, extensions=task_kind(self.kind).data_extensions,
                           train_reader=functools.partial(read_squad, unique_ids=False, answers_required=True))

    def build_task(self, preset, splits, hp):
        """The preset's QA task at `hp.max_seq_length`; a saved `doc_stride` that some question's
        windows could not overlap with (128, the default before None, at a short length) gives
        way to the default step, as `biozoo finetune` has no option to set it."""
        task = self.task_cls.from_preset(preset)
        pre = task.preprocessor
        pre.sequence_length = hp.max_seq_length
        if pre.doc_stride is not None and pre.doc_stride >= hp.max_seq_length - pre.max_query_length - 3:
            warnings.warn(f"{preset}: its doc_stride {pre.doc_stride} leaves no overlap between windows at "
                          f"--max-seq-length {hp.max_seq_length}: windows step min(128, half a window) instead",
                          DataWarning, stacklevel=2)
            pre.doc_stride = None
        if self.version == "auto":
            impossible = any(e.is_impossible for examples in splits.values() for e in examples)
            self.version = "2.0" if impossible else "1.1"
        return task

    def batches(self, task, examples, hp, training=False):
        """Windows labelled with the first answer, [CLS] for an `is_impossible` question; when
        training, `train_counts` says how many answers no window holds (trained as [CLS])."""
        if training:
            missing = next((e for e in examples if not e.is_impossible and not e.answers), None)
            if missing is not None:
                raise DataFormatError(f"training question {missing.qid} has no answers and is not is_impossible")
        answers = [None if e.is_impossible or not e.answers else (e.answers[0]["answer_start"], e.answers[0]["text"])
                   for e in examples]
        f = task.preprocessor.features([e.question for e in examples], [e.context for e in examples], answers)
        if training:
            lost = f.answers_in_no_window
            self.train_counts = {"train_windows": len(f.token_ids), "train_answers_in_no_window": len(lost)}
            self.train_warnings = [] if not lost else [
                f"{len(lost)} of {sum(a is not None for a in answers)} training answers lie in no window of "
                f"--max-seq-length {hp.max_seq_length} (longer than a window's context, or across window borders): "
                f"their questions are trained as no-answer; first: {', '.join(examples[e].qid for e in lost[:5])}"]
        return model_input_batches(
            f.token_ids, task.preprocessor.tokenizer.pad_token_id, f.segment_ids,
            extra={"positions": list(np.stack([f.start_positions, f.end_positions], 1)),
                   "weights": [1.0] * len(f.token_ids)},
            y_key="positions", w_key="weights", scalars=("positions", "weights"), scalar_pad=None,
            batch_size=hp.batch_size, max_length=hp.max_seq_length, shuffle=training, seed=hp.seed,
        )

    def evaluate(self, task, examples):
        results = task.answer([e.question for e in examples], [e.context for e in examples])
        scores = answer_scores(examples, results, self.version)
        bioasq = snippet_factoid_scores([(e.qid, [a["text"] for a in e.answers]) for e in examples],
                                        {e.qid: r["nbest"] for e, r in zip(examples, results)})
        if bioasq is not None:  # BioASQ: several snippets per question
            scores["bioasq_factoid"] = bioasq
        scores["examples"] = len(examples)
        return scores

    def headline_f1(self, scores):
        return (scores.get("squad_v2") or scores["squad_v1"])["f1"]
