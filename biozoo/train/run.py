"""The run scaffold every training driver (finetune, pretrain, distill) shares: the strategy
and the global batch's split over its replicas, seeding, the dtype policy and strategy scope
models are built in, XLA, the timed training loop with its checkpoints, the atomic write of
OUTPUT (model files plus JSON records such as metrics.json) and the clean-up afterwards.

Example:
    >>> run = TrainingRun("out", strategy, batch_size=32, checkpoint_dir="out.checkpoints")
    >>> run.seed(42)
    >>> with run.scope("mixed_float16"):
    ...     model = build(); model.compile(optimizer=adamw(1e-4, 1000), jit_compile=run.jit("auto"))
    >>> result = run.train(model, stream, 1000, checkpoint_every=100)
    >>> if run.chief:
    ...     run.write(model.save_to_preset, {"metrics.json": {"seconds": result["seconds"]}})

The TensorFlow modules (tf_strategy, tf_loop, tf_inference) are imported on the TensorFlow backend
only, torch on PyTorch only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import numbers
import os
import shutil
import time

import keras

from biozoo._io import (
    atomic_directory,
    atomic_write_json,
    atomic_write_text,
    check_output,
    is_remote,
    read_json,
    remote_files,
)
from biozoo._keras_internals import set_seed
from biozoo.choices import TRAINING_PRECISION_POLICIES as PRECISION_POLICIES
from biozoo.errors import CheckpointError
from biozoo.train import ResolvedStrategy, distribution, loop


def precision_policy(precision, strategy_name):
    """The Keras dtype policy for `--precision` (auto: bfloat16 on TPU, float16 on GPU)."""
    if precision == "auto":
        if keras.backend.backend() == "tensorflow":
            from biozoo.train.tf_strategy import has_gpu
        else:
            has_gpu = distribution.has_gpu
        if strategy_name == "tpu":
            precision = "bfloat16"
        elif strategy_name != "cpu" and has_gpu():
            precision = "float16"
        else:
            precision = "float32"
    if precision not in PRECISION_POLICIES:
        raise ValueError(f"--precision {precision}: choose one of auto, {', '.join(PRECISION_POLICIES)}")
    return PRECISION_POLICIES[precision]


def resolve_strategy(name="auto", tpu=None):
    """`--strategy NAME` (`--tpu`) -> ResolvedStrategy: a tf.distribute strategy on TensorFlow
    (`biozoo.train.tf_strategy`), a keras.distribution on JAX and PyTorch (`biozoo.train.distribution`)."""
    if keras.backend.backend() == "tensorflow":
        from biozoo.train.tf_strategy import resolve_strategy as resolve

        return resolve(name, tpu)
    return distribution.resolve_distribution(name, tpu)


def check_values(rules, error=ValueError):
    """Refuse a bad hyperparameter before anything runs, naming its command-line flag. `rules`:
    (flag, value, rule) with rule "positive" (a finite number above 0), "whole" (a whole number
    of at least 1), "fraction" (finite, 0 to 1), "non-negative" (finite, at least 0) or
    "decay" (finite, above 0 and at most 1); a value of None is not checked.

    Example:
        >>> check_values([("--learning-rate", float("nan"), "positive")])
        Traceback (most recent call last):
        ValueError: --learning-rate nan: give a finite number above 0
    """
    wants = {"positive": "a finite number above 0", "whole": "a whole number of at least 1",
             "fraction": "a finite number from 0 to 1", "non-negative": "a finite number of at least 0",
             "decay": "a finite number above 0 and at most 1"}
    for flag, value, rule in rules:
        if value is None:
            continue
        number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        finite = number and math.isfinite(value)
        ok = {"positive": finite and value > 0,
              "whole": number and finite and float(value).is_integer() and value >= 1,
              "fraction": finite and 0 <= value <= 1,
              "non-negative": finite and value >= 0,
              "decay": finite and 0 < value <= 1}[rule]
        if not ok:
            raise error(f"{flag} {value}: give {wants[rule]}")


def examples_per_second(steps, batch_size, seconds):
    return round(steps * batch_size / max(seconds, 1e-9), 2)


def remove_tree(path):
    """Remove a directory (local or gs://) if it exists."""
    if is_remote(path):
        remote_files(path).rmtree(path)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _float32_policy(value):
    """`value` (a saved Keras config) with every mixed-precision DTypePolicy named float32; and
    whether it changed."""
    if isinstance(value, list):
        pairs = [_float32_policy(v) for v in value]
        return [v for v, _ in pairs], any(c for _, c in pairs)
    if not isinstance(value, dict):
        return value, False
    if value.get("class_name") == "DTypePolicy" and str(value.get("config", {}).get("name", "")).startswith("mixed_"):
        return {**value, "config": {**value["config"], "name": "float32"}}, True
    pairs = {k: _float32_policy(v) for k, v in value.items()}
    return {k: v for k, (v, _) in pairs.items()}, any(c for _, c in pairs.values())


def record_float32_policies(directory):
    """Mixed-precision training keeps float32 weights: the Keras configs written into
    `directory` (config.json, task.json, preprocessor.json, in every subfolder) name the float32
    policy, so that the preset loads anywhere (KerasHub's loader refuses a mixed policy's
    name) and predicts in float32 unless asked for bfloat16."""
    for root, _, files in os.walk(directory):
        for name in files:
            if name.endswith(".json"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    data = json.load(f)
                data, changed = _float32_policy(data)
                if changed:
                    atomic_write_json(path, data)


RESUME_SETTINGS_FILE = "settings.json"
# Settings a resumed run may change: where and how fast it computes, not which steps it takes.
RUN_ONLY_SETTINGS = frozenset({"jit_compile", "precision", "steps_per_execution", "micro_batches", "checkpoint_every",
                               "deterministic"})


def resume_settings(hyperparameters, **context):
    """The settings a rerun must share to resume (`check_resume_settings`): the hyperparameters
    (a dataclass) but those in RUN_ONLY_SETTINGS, and `context` (model, data...)."""
    fields = dataclasses.asdict(hyperparameters)
    return {**context, **{key: value for key, value in fields.items() if key not in RUN_ONLY_SETTINGS}}


def check_resume_settings(checkpoint_dir, settings, write=True):
    """Refuse to resume the checkpoints in `checkpoint_dir` when they were written with other
    `settings` (a CheckpointError naming each difference); record `settings` there (when
    `write`) for a rerun to check."""
    settings = json.loads(json.dumps(settings, default=str))
    path = os.path.join(checkpoint_dir, RESUME_SETTINGS_FILE)
    files = remote_files(path) if is_remote(path) else None
    if files:
        listed = [name.rstrip("/") for name in files.listdir(checkpoint_dir)] if files.isdir(checkpoint_dir) else []
    else:
        listed = os.listdir(checkpoint_dir) if os.path.isdir(checkpoint_dir) else []
    if RESUME_SETTINGS_FILE in listed:
        before = read_json(path, "checkpoint settings")
        changed = [key for key in sorted(before.keys() | settings.keys()) if before.get(key) != settings.get(key)]
        if changed and len(listed) > 1:  # checkpoints beside it
            raise CheckpointError(
                f"{checkpoint_dir} holds the checkpoints of a run with other settings: "
                + "; ".join(f"{key} {before.get(key)!r} (now {settings.get(key)!r})" for key in changed)
                + f": rerun with those settings to resume it, or remove {checkpoint_dir} to start again")
    if write:
        text = json.dumps(settings, indent=2) + "\n"
        if files:
            files.makedirs(checkpoint_dir)
            with files.open_file(path, "w") as out:
                out.write(text)
        else:
            os.makedirs(checkpoint_dir, exist_ok=True)
            atomic_write_text(path, text)


class TrainingRun:
    """One run of a training driver, writing OUTPUT.

    `strategy`: a `ResolvedStrategy`, a tf.distribute strategy or None (the current one);
    `batch_size` (global) must split evenly over its replicas (else `error` is raised).
    `checkpoint_dir`: where `train` checkpoints (None: no checkpoints); it and every scratch
    directory (`scratch`) are removed once OUTPUT is written. OUTPUT is checked before anything
    runs (`biozoo._io.check_output`): an earlier biozoo output there is replaced only with
    `overwrite`, and no path of `inputs` (the preset, the data) may be or lie inside it.
    """

    def __init__(self, output, strategy=None, *, batch_size, checkpoint_dir=None, error=ValueError, overwrite=False,
                 inputs=()):
        self.output = os.fspath(output)
        self.overwrite, self.inputs = overwrite, [os.fspath(i) for i in inputs if i is not None]
        check_output(self.output, overwrite, self.inputs)
        self.tensorflow = keras.backend.backend() == "tensorflow"
        if self.tensorflow:
            from biozoo.train.tf_strategy import resolved_strategy

            self.strategy = resolved_strategy(strategy)
        else:
            self.strategy = (strategy if isinstance(strategy, ResolvedStrategy)
                             else distribution.resolve_distribution("auto"))
        if batch_size % self.strategy.replicas:
            raise error(f"--batch-size {batch_size} is not a multiple of the {self.strategy.replicas} replicas "
                        f"of strategy {self.strategy.name}")
        self.checkpoint_dir = None if checkpoint_dir is None else os.fspath(checkpoint_dir)
        self.temporary = []

    def placement(self):
        """Where the run trains, as metrics.json records it: backend, strategy, replicas, devices."""
        return {"backend": keras.backend.backend(), "strategy": self.strategy.name,
                "replicas": self.strategy.replicas, "devices": self.strategy.detail}

    @property
    def chief(self):
        """True on the worker that writes OUTPUT and checkpoints."""
        if not self.tensorflow:
            return distribution.is_chief()
        from biozoo.train.tf_strategy import is_chief

        return is_chief(self.strategy.strategy)

    def seed(self, seed):
        set_seed(seed)

    def scratch(self, given, suffix):
        """`given` (kept), or OUTPUT + `suffix` (removed after the run)."""
        if given is not None:
            return os.fspath(given)
        path = self.output + suffix
        self.temporary.append(path)
        return path

    def jit(self, jit_compile="auto"):
        """Compile train steps with XLA? "auto": on GPUs and TPUs (see `biozoo.tasks.tf_inference.use_xla`);
        always on JAX, whose train steps are jitted functions; never on PyTorch (eager)."""
        if not self.tensorflow:
            return keras.backend.backend() == "jax" and jit_compile in ("auto", True, "on")
        from biozoo.tasks.tf_inference import use_xla

        if jit_compile == "auto":
            return use_xla() or self.strategy.name == "tpu"
        return bool(jit_compile)

    @contextlib.contextmanager
    def scope(self, policy=None):
        """Build (and compile) models inside: the strategy's scope, under the dtype policy
        `policy` when given (the global policy is restored after)."""
        previous = keras.config.dtype_policy()
        if policy is not None:
            keras.config.set_dtype_policy(policy)
        try:
            with self.strategy.strategy.scope():
                yield
        finally:
            keras.config.set_dtype_policy(previous)

    def train(self, model, batches, total_steps, *, steps_per_epoch=None, checkpoint_every=None, verbose=1, log=print,
              settings=None):
        """The training loop under the run's strategy, checkpointing into `checkpoint_dir` every
        `checkpoint_every` steps (the chief saves, a rerun resumes); its result with the
        wall-clock `seconds` added. `batches`: a `FeatureBatches` (any backend), or on TensorFlow
        a function of the start step giving a tf.data stream (`biozoo.train.tf_loop.train`).
        `settings` (JSON): what the run's steps depend on (hyperparameters, model, data); a rerun
        resumes only checkpoints written with the same (`check_resume_settings`)."""
        start = time.time()
        checkpoint_dir = self.checkpoint_dir if checkpoint_every else None
        if checkpoint_dir and settings is not None:
            check_resume_settings(checkpoint_dir, settings, write=self.chief)
        if self.tensorflow:
            from biozoo.train.tf_loop import train

            stream = batches.dataset_from if hasattr(batches, "dataset_from") else batches
            result = train(model, stream, total_steps, checkpoint_dir, steps_per_epoch=steps_per_epoch,
                           checkpoint_every=checkpoint_every, save=self.chief, verbose=verbose, log=log,
                           strategy=self.strategy.strategy)
        else:
            if not hasattr(batches, "batches_from"):
                raise ValueError(f"this training runs on TensorFlow only, not on KERAS_BACKEND={keras.backend.backend()}")
            data_parallel = None if self.strategy.replicas == 1 else self.strategy.strategy
            result = loop.train(model, batches.batches_from, total_steps, checkpoint_dir,
                                steps_per_epoch=steps_per_epoch, checkpoint_every=checkpoint_every, save=self.chief,
                                verbose=verbose, log=log, distribution=data_parallel,
                                batch_shapes=getattr(batches, "batch_shapes", None))
        result["seconds"] = time.time() - start
        return result

    def write(self, save, records):
        """Write OUTPUT in one rename: `save(directory)` writes the model files, then each of
        `records` ({file name: JSON object}); then remove the checkpoints and scratch
        directories. Only the chief calls it."""
        with atomic_directory(self.output, self.overwrite, self.inputs) as tmp:
            save(tmp)
            record_float32_policies(tmp)
            for name, record in records.items():
                atomic_write_json(os.path.join(tmp, name), record)
        self.clean_up()

    def clean_up(self):
        for directory in (self.checkpoint_dir, *self.temporary):
            if directory:
                remove_tree(directory)
