"""Fine-tuning and evaluation drivers behind `biozoo finetune` and `biozoo evaluate`.

A recipe per task kind reads its data, builds the task model, turns examples into batches
and scores predictions with the reference metric. The driver is shared: AdamW with linear
warmup and decay, a Keras progress bar, evaluation on dev and test, and an atomic write of
the task preset plus metrics.json.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import warnings

import numpy as np


@dataclasses.dataclass
class Hyperparameters:
    epochs: float = 3.0
    batch_size: int = 32
    learning_rate: float = 5e-5
    max_seq_length: int = 128
    seed: int = 42
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    jit_compile: str = "auto"  # "auto": XLA on GPU/TPU, not on CPU


def set_seed(seed):
    import keras

    keras.utils.set_random_seed(seed)


def run_finetune(kind, preset, data_dir, output, hp, recipe_options=None, verbose=1, log=print):
    """Fine-tune `preset` on `data_dir` for task `kind`; write the task preset and
    metrics.json to `output`; return the metrics."""
    from biozoo._io import atomic_directory, atomic_write_json
    from biozoo.train.optim import adamw

    set_seed(hp.seed)
    recipe = RECIPES[kind](**(recipe_options or {}))
    splits = recipe.load(data_dir)
    task = recipe.build_task(preset, splits, hp)
    limit = task.backbone.get_config().get("max_sequence_length")
    if limit and hp.max_seq_length > limit:
        raise ValueError(f"--max-seq-length {hp.max_seq_length} exceeds the {limit} positions of {preset}.")
    train = recipe.batches(task, splits["train"], hp, training=True)
    steps_per_epoch = len(train)
    total_steps = max(1, int(round(steps_per_epoch * hp.epochs)))
    from biozoo.tasks._util import use_xla

    jit = use_xla() if hp.jit_compile == "auto" else bool(hp.jit_compile)
    task.compile(optimizer=adamw(hp.learning_rate, total_steps, hp.warmup_ratio, hp.weight_decay), jit_compile=jit)
    log(f"fine-tuning {kind} on {len(splits['train'])} training examples: {total_steps} steps "
        f"of batch {hp.batch_size} ({hp.epochs:g} epochs)")
    start = time.time()
    if float(hp.epochs).is_integer():
        epochs, steps = int(hp.epochs), steps_per_epoch
    else:  # a fraction of an epoch (quick runs): one pass of total_steps
        epochs, steps = 1, total_steps
    with warnings.catch_warnings():
        # NER / QA heads do not use the backbone's pooler: no gradient for it is expected.
        warnings.filterwarnings("ignore", message="Gradients do not exist for variables")
        task.fit(train.dataset(repeat=True), epochs=epochs, steps_per_epoch=steps, verbose=verbose, shuffle=False)
    seconds = time.time() - start
    metrics = {
        "task": kind,
        "preset": str(preset),
        "data": os.path.abspath(data_dir),
        "train_examples": len(splits["train"]),
        "train_seconds": round(seconds, 1),
        "train_examples_per_second": round(total_steps * hp.batch_size / seconds, 2),
        "hyperparameters": dataclasses.asdict(hp),
    }
    if hasattr(recipe, "tune") and splits.get("dev"):
        recipe.tune(task, splits["dev"])
    for split in ("dev", "test"):
        if splits.get(split):
            metrics[split] = recipe.evaluate(task, splits[split])
    task.compile()  # a fresh optimizer: the preset keeps the model, not Adam's moments
    with atomic_directory(output) as tmp:
        task.save_to_preset(tmp)
        atomic_write_json(os.path.join(tmp, "metrics.json"), metrics)
        atomic_write_json(os.path.join(tmp, "recipe.json"), {"kind": kind, "options": recipe.options()})
    return metrics


def load_task_preset(model_dir):
    """A fine-tuned task preset written by `run_finetune` -> (kind, recipe, task)."""
    from biozoo._io import read_json

    path = os.path.join(model_dir, "recipe.json")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{model_dir} is not a fine-tuned biozoo model (no recipe.json).")
    info = read_json(path, "recipe")
    recipe = RECIPES[info["kind"]](**info.get("options", {}))
    return info["kind"], recipe, recipe.task_cls.from_preset(model_dir)


def run_evaluate(model_dir, data_dir, split="test"):
    kind, recipe, task = load_task_preset(model_dir)
    splits = recipe.load(data_dir, only=split)
    return {"task": kind, "model": os.path.abspath(model_dir), "data": os.path.abspath(data_dir),
            "split": split, **recipe.evaluate(task, splits[split])}


# ---- recipes ---------------------------------------------------------------------------


class NerRecipe:
    """NER on token<TAB>tag files (typed IOB2, BLURB bare tags, BioBERT whitespace files)."""

    def __init__(self, entity_type=None):
        from biozoo.tasks.token_classifier import TokenClassifier

        self.entity_type = entity_type
        self.task_cls = TokenClassifier

    def options(self):
        return {"entity_type": self.entity_type}

    def load(self, data_dir, only=None):
        from biozoo.data.ner import read_ner

        return load_splits(data_dir, lambda path: read_ner(path, entity_type=self.entity_type), only)

    def build_task(self, preset, splits, hp):
        tags = {t for sentences in splits.values() for s in sentences for t in s.tags}
        label_names = ["O"] + sorted(tags - {"O"}, key=lambda t: (t[2:], t[:1]))
        task = self.task_cls.from_preset(preset, label_names=label_names)
        task.preprocessor.sequence_length = hp.max_seq_length
        return task

    def batches(self, task, sentences, hp, training=False):
        from biozoo.data.pipeline import FeatureBatches

        index = {label: i for i, label in enumerate(task.label_names)}
        windows = task.preprocessor.windows([s.words for s in sentences], [[index[t] for t in s.tags] for s in sentences])
        features = model_features(windows.token_ids)
        features["labels"] = windows.labels
        pad = task.preprocessor.tokenizer.pad_token_id
        return FeatureBatches(
            features, {"token_ids": pad, "segment_ids": 0, "padding_mask": 0, "labels": -100},
            x_keys=("token_ids", "segment_ids", "padding_mask"), y_key="labels",
            batch_size=hp.batch_size, max_length=hp.max_seq_length, shuffle=training, seed=hp.seed,
        )

    def evaluate(self, task, sentences):
        from biozoo.metrics.ner import entity_scores

        tags, _ = task.predict_tags([s.words for s in sentences])
        scores = entity_scores([s.tags for s in sentences], tags)
        scores["sentences"] = len(sentences)
        return scores


def model_features(token_ids):
    return {
        "token_ids": token_ids,
        "segment_ids": [np.zeros_like(t) for t in token_ids],
        "padding_mask": [np.ones_like(t) for t in token_ids],
    }


def load_splits(data_dir, reader, only=None, extensions=(".tsv", ".txt")):
    """{split: examples} for train / dev / test (dev and test optional unless asked for)."""
    from biozoo.data.ner import find_split

    splits = {}
    for split in (only,) if only else ("train", "dev", "test"):
        try:
            path = find_split(data_dir, split, extensions)
        except FileNotFoundError:
            if split == "train" or only:
                raise
            continue
        splits[split] = reader(path)
    return splits


class RelationRecipe:
    """Relation extraction: one label per sentence with entity markers (ChemProt, DDI, GAD)."""

    def __init__(self, negative_label=None, added_tokens=()):
        from biozoo.tasks.sequence_classifier import SequenceClassifier

        self.task_cls = SequenceClassifier
        self.negative_label = negative_label
        self.added_tokens = list(added_tokens)

    def options(self):
        return {"negative_label": self.negative_label, "added_tokens": self.added_tokens}

    def load(self, data_dir, only=None):
        from biozoo.data.relation import read_relation

        return load_splits(data_dir, read_relation, only)

    def build_task(self, preset, splits, hp):
        import biozoo
        from biozoo.metrics.relation import infer_negative_label
        from biozoo.tasks.base import resize_token_embedding
        from biozoo.tasks.sequence_classifier import SequenceClassifierPreprocessor, markers_to_add

        labels = sorted({e.label for examples in splits.values() for e in examples})
        self.negative_label = self.negative_label or infer_negative_label(labels)
        tokenizer = biozoo.Tokenizer.from_preset(preset)
        texts = [e.text for e in splits["train"]]
        self.added_tokens = markers_to_add(tokenizer, texts)
        if self.added_tokens:
            tokenizer = tokenizer.with_added_tokens(self.added_tokens)
        backbone = biozoo.from_preset(preset)
        if tokenizer.vocabulary_size() > backbone.vocabulary_size:
            backbone = resize_token_embedding(backbone, tokenizer.vocabulary_size())
        preprocessor = SequenceClassifierPreprocessor(tokenizer=tokenizer, sequence_length=hp.max_seq_length)
        return self.task_cls(backbone=backbone, preprocessor=preprocessor, label_names=labels)

    def batches(self, task, examples, hp, training=False):
        from biozoo.data.pipeline import FeatureBatches

        index = {label: i for i, label in enumerate(task.label_names)}
        encoded = task.preprocessor.encode([e.text for e in examples])
        features = {"token_ids": [ids for ids, _ in encoded], "segment_ids": [s for _, s in encoded],
                    "padding_mask": [np.ones_like(ids) for ids, _ in encoded],
                    "labels": [index[e.label] for e in examples]}
        return FeatureBatches(
            features, {"token_ids": task.preprocessor.tokenizer.pad_token_id, "segment_ids": 0, "padding_mask": 0},
            x_keys=("token_ids", "segment_ids", "padding_mask"), y_key="labels", scalars=("labels",),
            scalar_pad=-100, batch_size=hp.batch_size, max_length=hp.max_seq_length, shuffle=training, seed=hp.seed,
        )

    def evaluate(self, task, examples):
        from biozoo.metrics.relation import micro_prf

        unknown = sorted({e.label for e in examples} - set(task.label_names))
        if unknown:
            raise ValueError(f"labels not seen in training: {', '.join(unknown)} ({examples[0].path})")
        predicted = task.predict_labels([e.text for e in examples])
        scores = micro_prf([e.label for e in examples], predicted, self.negative_label)
        scores["accuracy"] = round(100.0 * float(np.mean([p == e.label for p, e in zip(predicted, examples)])), 4)
        scores["examples"] = len(examples)
        return scores


class DocumentRecipe:
    """Multi-label document classification: Hallmarks of Cancer (BLURB layout), sentences
    grouped into abstracts with their labels OR-ed; one threshold per label, tuned on dev."""

    def __init__(self):
        from biozoo.tasks.sequence_classifier import SequenceClassifier

        self.task_cls = SequenceClassifier

    def options(self):
        return {}

    def load(self, data_dir, only=None):
        from biozoo.data.hoc import group_by_abstract, read_hoc

        return load_splits(data_dir, lambda path: group_by_abstract(read_hoc(path)), only)

    def build_task(self, preset, splits, hp):
        from biozoo.data.hoc import LABELS

        task = self.task_cls.from_preset(preset, label_names=list(LABELS), multi_label=True)
        task.preprocessor.sequence_length = hp.max_seq_length
        return task

    def batches(self, task, abstracts, hp, training=False):
        from biozoo.data.pipeline import FeatureBatches

        encoded = task.preprocessor.encode([a.text for a in abstracts])
        features = {"token_ids": [ids for ids, _ in encoded], "segment_ids": [s for _, s in encoded],
                    "padding_mask": [np.ones_like(ids) for ids, _ in encoded],
                    "labels": [np.asarray(a.labels, np.float32) for a in abstracts],
                    "weights": [1.0] * len(abstracts)}
        return FeatureBatches(
            features, {"token_ids": task.preprocessor.tokenizer.pad_token_id, "segment_ids": 0, "padding_mask": 0},
            x_keys=("token_ids", "segment_ids", "padding_mask"), y_key="labels", w_key="weights",
            scalars=("labels", "weights"), scalar_pad=None, batch_size=hp.batch_size, max_length=hp.max_seq_length,
            shuffle=training, seed=hp.seed,
        )

    def tune(self, task, dev):
        """Per-label thresholds that maximise each label's F1 on the dev abstracts."""
        probs = task.predict_probabilities([a.text for a in dev])
        gold = np.asarray([a.labels for a in dev])
        thresholds = []
        for j in range(gold.shape[1]):
            best, best_f1 = 0.5, -1.0
            for t in np.unique(np.concatenate([probs[:, j], [0.5]])):
                pred = probs[:, j] >= t
                tp = float((pred & (gold[:, j] == 1)).sum())
                f1 = 2 * tp / max(1.0, pred.sum() + gold[:, j].sum())
                if f1 > best_f1:
                    best, best_f1 = float(t), f1
            thresholds.append(best)
        task.thresholds = thresholds

    def evaluate(self, task, abstracts):
        from biozoo.metrics.hoc import hoc_f1_blue, hoc_micro_f1_linkbert

        predicted = task.predict_labels([a.text for a in abstracts])
        pred = [[int(name in p) for name in task.label_names] for p in predicted]
        gold = [list(a.labels) for a in abstracts]
        return {"micro_f1_linkbert": hoc_micro_f1_linkbert(gold, pred),
                "f1_blue": hoc_f1_blue(gold, pred), "abstracts": len(abstracts)}


class QuestionAnsweringRecipe:
    """Extractive QA on SQuAD-format json (SQuAD v1.1/v2.0, BioASQ as SQuAD)."""

    def __init__(self, version="auto"):
        from biozoo.tasks.question_answerer import QuestionAnswerer

        self.task_cls = QuestionAnswerer
        self.version = version

    def options(self):
        return {"version": self.version}

    def load(self, data_dir, only=None):
        from biozoo.data.qa import read_squad

        return load_splits(data_dir, read_squad, only, extensions=(".json",))

    def build_task(self, preset, splits, hp):
        task = self.task_cls.from_preset(preset)
        task.preprocessor.sequence_length = hp.max_seq_length
        if self.version == "auto":
            impossible = any(e.is_impossible for examples in splits.values() for e in examples)
            self.version = "2.0" if impossible else "1.1"
        return task

    def batches(self, task, examples, hp, training=False):
        from biozoo.data.pipeline import FeatureBatches

        answers = [None if e.is_impossible or not e.answers else (e.answers[0]["answer_start"], e.answers[0]["text"])
                   for e in examples]
        f = task.preprocessor.features([e.question for e in examples], [e.context for e in examples], answers)
        features = {"token_ids": f.token_ids, "segment_ids": f.segment_ids,
                    "padding_mask": [np.ones_like(t) for t in f.token_ids],
                    "positions": list(np.stack([f.start_positions, f.end_positions], 1)),
                    "weights": [1.0] * len(f.token_ids)}
        return FeatureBatches(
            features, {"token_ids": task.preprocessor.tokenizer.pad_token_id, "segment_ids": 0, "padding_mask": 0},
            x_keys=("token_ids", "segment_ids", "padding_mask"), y_key="positions", w_key="weights",
            scalars=("positions", "weights"), scalar_pad=None, batch_size=hp.batch_size,
            max_length=hp.max_seq_length, shuffle=training, seed=hp.seed,
        )

    def evaluate(self, task, examples):
        from biozoo.metrics.bioasq import aggregate_factoid, factoid_scores, question_group_id
        from biozoo.metrics.squad import evaluate_v1, evaluate_v2

        results = task.answer([e.question for e in examples], [e.context for e in examples])
        dataset = {"data": [{"paragraphs": [{"context": e.context, "qas": [
            {"id": e.qid, "question": e.question, "answers": e.answers, "is_impossible": e.is_impossible}]}]}
            for e in examples]}
        predictions = {e.qid: r["text"] for e, r in zip(examples, results)}
        if self.version == "2.0":
            na_probs = {e.qid: float(1.0 / (1.0 + np.exp(-r["null_score_diff"]))) for e, r in zip(examples, results)}
            scores = {"squad_v2": evaluate_v2(dataset, predictions, na_probs)}
        else:
            best = {e.qid: r["best_non_null"] for e, r in zip(examples, results)}
            scores = {"squad_v1": evaluate_v1(dataset, best)}
        groups = {question_group_id(e.qid) for e in examples}
        if len(groups) < len(examples):  # BioASQ: several snippets per question
            nbest = {e.qid: r["nbest"] for e, r in zip(examples, results)}
            system = aggregate_factoid(nbest)
            golden = {"questions": [{"id": g, "type": "factoid", "exact_answer": [sorted({
                a["text"] for e in examples if question_group_id(e.qid) == g for a in e.answers})]} for g in sorted(groups)]}
            scores["bioasq_factoid"] = factoid_scores(golden, system)
            scores["bioasq_factoid"]["gold"] = "snippet answers of each question, as synonyms"
        scores["examples"] = len(examples)
        return scores


RECIPES = {"ner": NerRecipe, "re": RelationRecipe, "doc": DocumentRecipe, "qa": QuestionAnsweringRecipe}


def dumps(metrics):
    return json.dumps(metrics, sort_keys=False)
