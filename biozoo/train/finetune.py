"""Fine-tuning and evaluation drivers behind `biozoo finetune` and `biozoo evaluate`.

A recipe per task kind reads its data, builds the task model, turns examples into batches
and scores predictions with the reference metric. The driver is shared: AdamW with linear
warmup and decay, a Keras progress bar, evaluation on dev and test, and an atomic write of
the task preset plus metrics.json.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import warnings

import numpy as np

from biozoo.data import IGNORE_LABEL


@dataclasses.dataclass
class Hyperparameters:
    epochs: float = 3.0
    batch_size: int = 8  # the global batch, split over the replicas (the HF Trainer's default)
    learning_rate: float = 5e-5  # for the global batch
    max_seq_length: int = 128
    seed: int = 42
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    jit_compile: str = "auto"  # "auto": XLA on GPU/TPU, not on CPU
    optimizer: str = "adamw"  # or "lamb"
    layer_decay: float | None = None  # layer-wise learning-rate decay (ELECTRA: 0.8 base, 0.9 large)
    # global-norm gradient clipping, as torch's clip_grad_norm_; 1.0 as in the BERT, ELECTRA and
    # ALBERT fine-tuning code and the HF Trainer (max_grad_norm); 0 or None: off
    clip_norm: float | None = 1.0
    precision: str = "auto"  # float32 | bfloat16 | float16 | auto (bf16 on TPU, fp16 on GPU)
    static_shapes: str = "auto"  # pad to max length, drop the remainder ("auto": on TPU)
    steps_per_execution: int = 1
    micro_batches: int | str = "auto"  # per replica batch, by length; "auto": 4 unless XLA or static shapes
    checkpoint_every: int | None = None  # steps; resume from OUTPUT.checkpoints
    deterministic: bool = False


def set_seed(seed):
    """What keras.utils.set_random_seed seeds (Python, NumPy, Keras' global seed and
    SeedGenerator) except tf.random.set_seed: in eager mode that clears TensorFlow's kernel
    cache, destroying the resources of tokenizers already built (tf-text's SentencePiece
    op), so a second seeded run in one process (`--seeds`) could not tokenize. biozoo draws no
    TensorFlow-seeded random numbers."""
    import random

    from keras.src.backend.common import global_state
    from keras.src.random import seed_generator
    from keras.src.utils.rng_utils import GLOBAL_RANDOM_SEED

    global_state.set_global_attribute(GLOBAL_RANDOM_SEED, seed)
    global_state.set_global_attribute(seed_generator.GLOBAL_SEED_GENERATOR, None)
    random.seed(seed)
    np.random.seed(seed)


PRECISION_POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def precision_policy(precision, strategy_name):
    """The Keras dtype policy for `--precision` (auto: bfloat16 on TPU, float16 on GPU)."""
    import tensorflow as tf

    if precision == "auto":
        if strategy_name == "tpu":
            precision = "bfloat16"
        elif tf.config.list_logical_devices("GPU") and strategy_name != "cpu":
            precision = "float16"
        else:
            precision = "float32"
    if precision not in PRECISION_POLICIES:
        raise ValueError(f"--precision {precision}: choose one of auto, {', '.join(PRECISION_POLICIES)}")
    return PRECISION_POLICIES[precision]


def checkpoint_directory(output):
    """Where `--checkpoint-every` writes: beside OUTPUT (OUTPUT itself is replaced in one
    rename at the end), removed once OUTPUT is written."""
    return os.path.abspath(output) + ".checkpoints"


def run_finetune(kind, preset, data_dir, output, hp, recipe_options=None, verbose=1, log=print, strategy=None):
    """Fine-tune `preset` on `data_dir` for task `kind` under `strategy` (a ResolvedStrategy;
    default: the current one); write the task preset and metrics.json to `output`; return the
    metrics. With `hp.checkpoint_every`, a killed run re-run with the same output resumes."""
    import keras
    import tensorflow as tf

    from biozoo._io import atomic_directory, atomic_write_json
    from biozoo.tasks._util import use_xla
    from biozoo.train.loop import train
    from biozoo.optim import make_optimizer
    from biozoo.train.strategy import ResolvedStrategy, is_chief

    if strategy is None:
        strategy = ResolvedStrategy(tf.distribute.get_strategy(), "default", 1)
    if hp.batch_size % strategy.replicas:
        raise ValueError(f"--batch-size {hp.batch_size} is not a multiple of the {strategy.replicas} replicas "
                         f"of strategy {strategy.name}")
    if hp.deterministic:
        tf.config.experimental.enable_op_determinism()
    policy = precision_policy(hp.precision, strategy.name)
    static = strategy.name == "tpu" if hp.static_shapes == "auto" else hp.static_shapes in (True, "on", "true")
    jit = (use_xla() or strategy.name == "tpu") if hp.jit_compile == "auto" else bool(hp.jit_compile)
    from biozoo import presets

    # Convert (or find in the cache) first: a conversion draws random numbers, and the task's
    # new layers must start the same whether or not this run converted the checkpoint.
    source = presets.resolve_preset(preset)
    set_seed(hp.seed)
    recipe = RECIPES[kind](**(recipe_options or {}))
    splits = recipe.load(data_dir)
    previous_policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        with strategy.strategy.scope():
            task = recipe.build_task(source, splits, hp)
    finally:
        keras.config.set_dtype_policy(previous_policy)
    limit = task.backbone.get_config().get("max_sequence_length")
    if limit and hp.max_seq_length > limit:
        raise ValueError(f"--max-seq-length {hp.max_seq_length} exceeds the {limit} positions of {preset}.")
    train_batches = recipe.batches(task, splits["train"], hp, training=True)
    if static:
        train_batches.make_static()
    steps_per_epoch = len(train_batches)
    total_steps = max(1, int(round(steps_per_epoch * hp.epochs)))
    with strategy.strategy.scope():
        optimizer = make_optimizer(hp.optimizer, hp.learning_rate, total_steps, hp.warmup_ratio, hp.weight_decay,
                                   hp.clip_norm, hp.layer_decay, task, task.backbone.get_config().get("num_layers"))
        task.compile(optimizer=optimizer, jit_compile=jit, steps_per_execution=hp.steps_per_execution)
    parts = micro_batches(hp, task, hp.batch_size // strategy.replicas, static or jit)
    task.micro_batches = parts
    log(f"fine-tuning {kind} on {len(splits['train'])} training examples: {total_steps} steps of global batch "
        f"{hp.batch_size} ({hp.epochs:g} epochs); {strategy.describe()}; precision {policy}; "
        f"XLA {'on' if jit else 'off'}; {'static shapes' if static else 'dynamic padding'}; "
        f"{parts} length-sorted micro-batch(es) per replica batch")
    start = time.time()
    with warnings.catch_warnings():
        # NER / QA heads do not use the backbone's pooler: no gradient for it is expected.
        warnings.filterwarnings("ignore", message="Gradients do not exist for variables")
        result = train(task, train_batches.dataset_from, total_steps,
                       checkpoint_directory(output) if hp.checkpoint_every else None,
                       steps_per_epoch=steps_per_epoch, checkpoint_every=hp.checkpoint_every,
                       save=is_chief(strategy.strategy), verbose=verbose, log=log, strategy=strategy.strategy)
    seconds = time.time() - start
    task.micro_batches = 1
    trained = total_steps - result["resumed_from"]
    metrics = {
        "task": kind,
        "preset": str(preset),
        "data": data_dir if "://" in str(data_dir) else os.path.abspath(data_dir),
        "strategy": strategy.name,
        "replicas": strategy.replicas,
        "precision": policy,
        "micro_batches": parts,
        "train_examples": len(splits["train"]),
        "train_steps": total_steps,
        "resumed_from_step": result["resumed_from"],
        "train_seconds": round(seconds, 1),
        "train_examples_per_second": round(trained * hp.batch_size / max(seconds, 1e-9), 2),
        "train_loss_first": _mean(result["losses"][:10]),
        "train_loss_last": _mean(result["losses"][-10:]),
        "hyperparameters": dataclasses.asdict(hp),
    }
    if hasattr(recipe, "tune") and splits.get("dev"):
        recipe.tune(task, splits["dev"])
    for split in ("dev", "test"):
        if splits.get(split):
            metrics[split] = recipe.evaluate(task, splits[split])
    losses = {"first_step": result["resumed_from"] + 1, "losses": [round(x, 6) for x in result["losses"]]}
    with strategy.strategy.scope():  # every worker: creating variables is collective
        task.compile()  # a fresh optimizer: the preset keeps the model, not Adam's moments
    if not is_chief(strategy.strategy):
        return metrics
    with atomic_directory(output) as tmp:
        task.save_to_preset(tmp)
        atomic_write_json(os.path.join(tmp, "metrics.json"), metrics)
        atomic_write_json(os.path.join(tmp, "train_losses.json"), losses)
        atomic_write_json(os.path.join(tmp, "recipe.json"), {"kind": kind, "options": recipe.options()})
    if hp.checkpoint_every:
        import shutil

        shutil.rmtree(checkpoint_directory(output), ignore_errors=True)
    return metrics


def micro_batches(hp, task, replica_batch, fixed_shapes):
    """How many length-sorted micro-batches each replica runs its batch as (1: none). They need
    shapes that may change from step to step (no XLA, no static shapes) and a loss that
    ignores padding; "auto" is 4, and the count always divides the replica's batch."""
    if fixed_shapes or not getattr(task, "padding_invariant_loss", False):
        return 1
    wanted = 4 if hp.micro_batches == "auto" else int(hp.micro_batches)
    if wanted < 1:
        raise ValueError(f"--micro-batches {hp.micro_batches}: give a positive number or auto")
    return math.gcd(wanted, replica_batch)


def _mean(values):
    return round(float(np.mean(values)), 6) if len(values) else None


def run_seeds(kind, preset, data_dir, output, hp, seeds, recipe_options=None, verbose=1, log=print,
              strategy=None):
    """`seeds` runs with seeds hp.seed, hp.seed + 1, ... into OUTPUT/seed-<n>; OUTPUT/metrics.json
    holds every run and the mean and standard deviation (n - 1) of each score, as the papers
    report them."""
    from biozoo._io import atomic_write_json

    runs = []
    for offset in range(seeds):
        seeded = dataclasses.replace(hp, seed=hp.seed + offset)
        log(f"seed {seeded.seed} ({offset + 1} of {seeds})")
        runs.append(run_finetune(kind, preset, data_dir, os.path.join(output, f"seed-{seeded.seed}"), seeded,
                                 recipe_options, verbose, log, strategy))
    summary = {"task": kind, "preset": str(preset), "seeds": [r["hyperparameters"]["seed"] for r in runs],
               "strategy": runs[0]["strategy"], "replicas": runs[0]["replicas"]}
    for split in ("dev", "test"):
        if split in runs[0]:
            summary[split] = _mean_std([r[split] for r in runs])
    summary["runs"] = runs
    atomic_write_json(os.path.join(output, "metrics.json"), summary)
    return summary


def _mean_std(scores):
    """{key: {"mean", "std", "values"}} for every number all the score dicts have (nested kept)."""
    out = {}
    for key, value in scores[0].items():
        if not all(key in s for s in scores):  # e.g. a label one run never predicted
            continue
        if isinstance(value, dict):
            out[key] = _mean_std([s[key] for s in scores])
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            values = [float(s[key]) for s in scores]
            std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
            out[key] = {"mean": round(float(np.mean(values)), 4), "std": round(std, 4), "values": values}
    return out


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
    return {"task": kind, "model": os.path.abspath(model_dir), "data": data_dir if "://" in str(data_dir) else os.path.abspath(data_dir),
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
            features, {"token_ids": pad, "segment_ids": 0, "padding_mask": 0, "labels": IGNORE_LABEL},
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
    """{split: examples} for train / dev / test (dev and test optional unless asked for).
    `data_dir` may be gs:// (read through tf.io.gfile)."""
    from biozoo.data.ner import find_split
    from biozoo.data.remote import local_folder

    splits = {}
    with local_folder(data_dir) as folder:
        for split in (only,) if only else ("train", "dev", "test"):
            try:
                path = find_split(folder, split, extensions)
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
            scalar_pad=IGNORE_LABEL, batch_size=hp.batch_size, max_length=hp.max_seq_length, shuffle=training, seed=hp.seed,
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
        try:
            groups = {question_group_id(e.qid) for e in examples}
        except ValueError:  # SQuAD ids (24 hex characters): one question per example, not BioASQ
            groups = None
        if groups is not None and len(groups) < len(examples):  # BioASQ: several snippets per question
            nbest = {e.qid: r["nbest"] for e, r in zip(examples, results)}
            system = aggregate_factoid(nbest)
            golden = {"questions": [{"id": g, "type": "factoid", "exact_answer": [sorted({
                a["text"] for e in examples if question_group_id(e.qid) == g for a in e.answers})]} for g in sorted(groups)]}
            scores["bioasq_factoid"] = factoid_scores(golden, system)
            scores["bioasq_factoid"]["gold"] = "snippet answers of each question, as synonyms"
        scores["examples"] = len(examples)
        return scores


RECIPES = {"ner": NerRecipe, "re": RelationRecipe, "doc": DocumentRecipe, "qa": QuestionAnsweringRecipe}

