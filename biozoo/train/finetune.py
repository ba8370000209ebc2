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
    jit_compile: bool = True


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
    train = recipe.batches(task, splits["train"], hp, training=True)
    steps_per_epoch = len(train)
    total_steps = max(1, int(round(steps_per_epoch * hp.epochs)))
    task.compile(
        optimizer=adamw(hp.learning_rate, total_steps, hp.warmup_ratio, hp.weight_decay),
        jit_compile=hp.jit_compile,
    )
    log(f"fine-tuning {kind} on {len(splits['train'])} training examples: {total_steps} steps "
        f"of batch {hp.batch_size} ({hp.epochs:g} epochs)")
    start = time.time()
    if float(hp.epochs).is_integer():
        epochs, steps = int(hp.epochs), steps_per_epoch
    else:  # a fraction of an epoch (quick runs): one pass of total_steps
        epochs, steps = 1, total_steps
    task.fit(train.dataset(repeat=True), epochs=epochs, steps_per_epoch=steps, verbose=verbose)
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
    for split in ("dev", "test"):
        if splits.get(split):
            metrics[split] = recipe.evaluate(task, splits[split])
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
        from biozoo.data.ner import find_split, read_ner

        splits = {}
        for split in (only,) if only else ("train", "dev", "test"):
            try:
                path = find_split(data_dir, split)
            except (FileNotFoundError, ValueError):
                if split == "train" or only:
                    raise
                continue
            splits[split] = read_ner(path, entity_type=self.entity_type)
        return splits

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


RECIPES = {"ner": NerRecipe}


def dumps(metrics):
    return json.dumps(metrics, sort_keys=False)
