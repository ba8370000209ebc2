"""Fine-tuning and evaluation drivers behind `biozoo finetune` and `biozoo evaluate`.

A task adapter per task kind (`biozoo.tasks.adapters`, named by its row of `biozoo.task_kinds`) reads its data, builds the task model,
turns examples into batches and scores predictions with the reference metric. The driver is
shared: AdamW with linear warmup and decay, a Keras progress bar, evaluation on dev and test,
and an atomic write of the task preset plus metrics.json (the run scaffold of
`biozoo.train.run`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil

import keras
import numpy as np

from biozoo import presets
from biozoo._io import atomic_write_json, check_output, read_json, write_marker
from biozoo.choices import DEFAULT_PRECISION
from biozoo.errors import CheckpointError
from biozoo.metrics.seeds import mean_std
from biozoo.optim import make_optimizer
from biozoo.preset_files import METRICS_FILE, TASK_KIND_FILE, task_kind_record
from biozoo.task_kinds import task_kind
from biozoo.tasks.adapters import adapter_for, load_with_adapter
from biozoo.tasks.inference import showing_progress
from biozoo.train.distribution import accelerators, has_gpu, process_count
from biozoo.train.hyperparameters import Hyperparameters
from biozoo.train.loss_history import freeze_unused_pooler
from biozoo.train.run import TrainingRun, check_values, examples_per_second, precision_policy, resume_settings, set_seed

__all__ = ["Hyperparameters", "check_hyperparameters", "run_finetune", "run_seeds", "check_seeds_output",
           "run_evaluate", "micro_batches", "checkpoint_directory", "precision_policy", "set_seed"]


def check_hyperparameters(hp):
    """Refuse a hyperparameter no run can use (nan, zero or negative learning rate, epochs or
    batch size...) before anything is loaded, naming its flag."""
    check_values([
        ("--epochs", hp.epochs, "positive"), ("--batch-size", hp.batch_size, "whole"),
        ("--learning-rate", hp.learning_rate, "positive"), ("--max-seq-length", hp.max_seq_length, "whole"),
        ("--warmup-ratio", hp.warmup_ratio, "fraction"), ("--weight-decay", hp.weight_decay, "non-negative"),
        ("--layer-decay", hp.layer_decay, "decay"), ("--clip-norm", hp.clip_norm, "non-negative"),
        ("--steps-per-execution", hp.steps_per_execution, "whole"),
        ("--checkpoint-every", hp.checkpoint_every, "whole"),
    ])
    if hp.max_seq_length is not None and hp.max_seq_length < 8:
        raise ValueError(f"--max-seq-length {hp.max_seq_length}: give at least 8 (the special tokens and a few "
                         "word pieces must fit)")


def checkpoint_directory(output):
    """Where `--checkpoint-every` writes: beside OUTPUT (OUTPUT itself is replaced in one
    rename at the end), removed once OUTPUT is written."""
    return os.path.abspath(output) + ".checkpoints"


TRAINING_PADDING = {
    "static": "static shapes",  # every batch padded to --max-seq-length, the last partial one dropped
    "one length": "every batch padded to --max-seq-length",  # none dropped (a short one filled with padding rows)
    "dynamic": "dynamic padding",  # each batch padded to its length bucket
}


def training_padding(static_shapes, strategy_name, jit):
    """How training batches are padded (a `TRAINING_PADDING` key) for `--static-shapes`: "auto" is
    "static" on TPUs; "one length" for Keras' jitted step on a JAX GPU, where XLA compiles a
    program per batch shape and each took tens of seconds (MiniLM-L6 on NCBI-disease, one H100:
    77.4 s of training in 6 length buckets, 41.3 s at one length, the same F1); else "dynamic"."""
    if static_shapes == "auto":
        if strategy_name == "tpu":
            return "static"
        return "one length" if jit and keras.backend.backend() == "jax" and accelerators() else "dynamic"
    return "static" if static_shapes in (True, "on", "true") else "dynamic"


def run_finetune(kind, preset, data_dir, output, hp, task_options=None, verbose=1, log=print, strategy=None,
                 overwrite=False):
    """Fine-tune `preset` on `data_dir` for task `kind` under `strategy` (a ResolvedStrategy;
    default: the current one); write the task preset and metrics.json to `output`; return the
    metrics. `task_options` go to the kind's task adapter. With `hp.checkpoint_every`, a killed
    run re-run with the same output resumes. An earlier biozoo output at `output` is replaced
    only with `overwrite`; the hyperparameters are checked first (`check_hyperparameters`)."""
    check_hyperparameters(hp)
    run = TrainingRun(output, strategy, batch_size=hp.batch_size,
                      checkpoint_dir=checkpoint_directory(output) if hp.checkpoint_every else None,
                      overwrite=overwrite, inputs=[preset, data_dir])
    strategy = run.strategy
    if hp.deterministic and run.tensorflow:  # JAX's and PyTorch's CPU kernels are deterministic already
        from biozoo.train.tf_strategy import enable_determinism

        enable_determinism()
    policy = precision_policy(hp.precision, strategy.name)
    jit = run.jit(hp.jit_compile)
    padding = training_padding(hp.static_shapes, strategy.name, jit)
    static = padding == "static"

    # Convert (or find in the cache) first: a conversion draws random numbers, and the task's
    # new layers must start the same whether or not this run converted the checkpoint.
    source = presets.resolve_preset(preset)
    if hp.max_seq_length is None:
        hp = dataclasses.replace(hp, max_seq_length=default_sequence_length(kind, source, log))
    run.seed(hp.seed)
    adapter = adapter_for(kind, **(task_options or {}))
    splits = adapter.load(data_dir)
    not_scored = dict(getattr(splits, "missing", {}))
    for split, why in not_scored.items():
        log(f"warning: {why}: no {split} scores (metrics.json says so under not_scored)")
    with run.scope(policy):
        task = adapter.build_task(source, splits, hp)
    if not task.reads_pooled_output:  # as TensorFlow skips it, JAX's and PyTorch's weight decay would move it
        freeze_unused_pooler(task.backbone)
    limit = task.backbone.get_config().get("max_sequence_length")
    if limit and hp.max_seq_length > limit:
        raise ValueError(f"--max-seq-length {hp.max_seq_length} exceeds the {limit} positions of {preset}.")
    train_batches = adapter.batches(task, splits["train"], hp, training=True)
    for warning in adapter.train_warnings:
        log(f"warning: {warning}")
    if padding != "dynamic":
        train_batches.make_static(drop_remainder=static)
    steps_per_epoch = len(train_batches)
    total_steps = max(1, math.ceil(steps_per_epoch * hp.epochs))  # as the HF Trainer's max_steps
    with run.scope():
        optimizer = make_optimizer(hp.optimizer, hp.learning_rate, total_steps, hp.warmup_ratio, hp.weight_decay,
                                   hp.clip_norm, hp.layer_decay, task, task.backbone.get_config().get("num_layers"))
        task.compile(optimizer=optimizer, jit_compile=jit, steps_per_execution=hp.steps_per_execution)
    # off TensorFlow, parts are for CPUs (an accelerator wants the whole batch, as TensorFlow's XLA
    # rule gives it) and for one host (the parts are cut on that host's copy of the batch)
    whole_batch = not run.tensorflow and (process_count() > 1 or bool(accelerators()) or has_gpu())
    parts = micro_batches(hp, task, hp.batch_size // strategy.replicas,
                          static or (jit and run.tensorflow) or whole_batch)
    task.micro_batches = parts
    log(f"fine-tuning {kind} on {len(splits['train'])} training examples: {total_steps} steps of global batch "
        f"{hp.batch_size} ({hp.epochs:g} epoch{'' if hp.epochs == 1 else 's'}); {strategy.describe()}; precision {policy}; "
        f"XLA {'on' if jit else 'off'}; {TRAINING_PADDING[padding]}; "
        f"{parts} length-sorted micro-batch(es) per replica batch")
    result = run.train(task, train_batches, total_steps, steps_per_epoch=steps_per_epoch,
                       checkpoint_every=hp.checkpoint_every, verbose=verbose, log=log,
                       settings=resume_settings(hp, task=kind, preset=str(preset), data=_where(data_dir),
                                                task_options=adapter.options()))
    task.micro_batches = 1
    metrics = {
        "task": kind,
        "preset": str(preset),
        "data": _where(data_dir),
        **run.placement(),
        "precision": policy,
        "micro_batches": parts,
        "train_examples": len(splits["train"]),
        **adapter.train_counts,
        "train_steps": total_steps,
        "resumed_from_step": result["resumed_from"],
        "train_seconds": round(result["seconds"], 1),
        "train_examples_per_second": examples_per_second(total_steps - result["resumed_from"], hp.batch_size,
                                                         result["seconds"]),
        "train_loss_first": _mean(result["losses"][:10]),
        "train_loss_last": _mean(result["losses"][-10:]),
        "hyperparameters": dataclasses.asdict(hp),
    }
    if "compilations" in result:  # JAX: what XLA's compiling cost the training
        metrics["xla_compilations"] = result["compilations"]
    if not_scored:
        metrics["not_scored"] = not_scored
    if splits.get("dev"):
        with _progress("tuning on dev", verbose):
            adapter.tune(task, splits["dev"])
    for split in ("dev", "test"):
        if splits.get(split):
            with _progress(f"scoring {split}", verbose):
                metrics[split] = adapter.evaluate(task, splits[split])
    losses = {"first_step": result["resumed_from"] + 1, "losses": [round(x, 6) for x in result["losses"]]}
    with run.scope():  # every worker: creating variables is collective
        task.compile()  # a fresh optimizer: the preset keeps the model, not Adam's moments
    if not run.chief:
        return metrics
    run.write(task.save_to_preset, {METRICS_FILE: metrics, "train_losses.json": losses,
                                    TASK_KIND_FILE: task_kind_record(kind, adapter.options())})
    return metrics


def default_sequence_length(kind, preset_dir, log=print):
    """The task kind's default `--max-seq-length`, capped at the positions of the model in `preset_dir`."""
    default = task_kind(kind).sequence_length
    config = read_json(os.path.join(preset_dir, "config.json"), "model config").get("config", {})
    positions = config.get("max_sequence_length") or default
    if positions < default:
        log(f"--max-seq-length {positions}: {kind}'s default {default} capped at the model's {positions} positions")
    return min(default, positions)


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


def _progress(description, shown):
    return showing_progress(description) if shown else contextlib.nullcontext()


def _mean(values):
    return round(float(np.mean(values)), 6) if len(values) else None


def _where(data_dir):
    return data_dir if "://" in str(data_dir) else os.path.abspath(data_dir)


SEEDS_FILE = "seeds.json"  # a --seeds run's settings, written first: an unfinished run resumes only with them


def check_seeds_output(output, overwrite=False, inputs=()):
    """`check_output` for a `--seeds` run: the folder of an unfinished one (its SEEDS_FILE, no
    metrics.json) is resumed, not refused; a finished one is replaced only with `overwrite`."""
    check_output(output, overwrite or _unfinished_seeds(output), inputs)


def _unfinished_seeds(output):
    return (os.path.isfile(os.path.join(output, SEEDS_FILE))
            and not os.path.exists(os.path.join(output, METRICS_FILE)))


def _check_same_seeds_run(output, settings):
    before = read_json(os.path.join(output, SEEDS_FILE), "a --seeds run's settings")
    changed = [key for key in sorted(before.keys() | settings.keys()) if before.get(key) != settings.get(key)]
    if changed:
        raise CheckpointError(
            f"{output} holds an unfinished --seeds run with other settings: "
            + "; ".join(f"{key} {before.get(key)!r} (now {settings.get(key)!r})" for key in changed)
            + ": rerun with those settings to resume it, or pass --overwrite (overwrite=True) to start again")


def run_seeds(kind, preset, data_dir, output, hp, seeds, task_options=None, verbose=1, log=print,
              strategy=None, overwrite=False):
    """`seeds` runs with seeds hp.seed, hp.seed + 1, ... into OUTPUT/seed-<n>; OUTPUT/metrics.json
    holds every run and the mean and standard deviation (n - 1) of each score, as the papers
    report them. The same call after a kill resumes: the seeds it finished are read back, the one
    it was in resumes from its checkpoints (other settings are refused, naming each difference).
    `overwrite` starts again: an earlier OUTPUT, finished or not, is removed first."""
    check_hyperparameters(hp)
    check_seeds_output(output, overwrite, [preset, data_dir])
    if hp.max_seq_length is None:  # recorded as the length it is, so a rerun that names it resumes
        hp = dataclasses.replace(hp, max_seq_length=default_sequence_length(kind, presets.resolve_preset(preset), log))
    settings = json.loads(json.dumps(resume_settings(hp, task=kind, preset=str(preset), data=_where(data_dir),
                                                     task_options=dict(task_options or {})), default=str))
    resuming = not overwrite and _unfinished_seeds(output)
    if resuming:
        _check_same_seeds_run(output, settings)
    elif os.path.isdir(output):  # empty, or a biozoo output replaced (`check_output`)
        shutil.rmtree(output)
    os.makedirs(output, exist_ok=True)
    write_marker(output)
    if not resuming:
        atomic_write_json(os.path.join(output, SEEDS_FILE), settings)
    # each process reads its own disk, and only the chief's holds the finished seeds
    several_hosts = process_count() > 1 or getattr(strategy, "name", None) == "multiworker"
    if resuming and several_hosts:
        log("resuming on several hosts: every seed is trained again (a worker cannot see the seeds the chief wrote)")
    runs = []
    for offset in range(seeds):
        seeded = dataclasses.replace(hp, seed=hp.seed + offset)
        seed_dir = os.path.join(output, f"seed-{seeded.seed}")
        if resuming and not several_hosts and os.path.isfile(os.path.join(seed_dir, METRICS_FILE)):
            log(f"seed {seeded.seed} ({offset + 1} of {seeds}): finished earlier, read from {seed_dir}")
            runs.append(read_json(os.path.join(seed_dir, METRICS_FILE), "a seed's metrics"))
            continue
        log(f"seed {seeded.seed} ({offset + 1} of {seeds})")
        runs.append(run_finetune(kind, preset, data_dir, seed_dir, seeded, task_options, verbose, log, strategy,
                                 overwrite=True))
    summary = {"task": kind, "preset": str(preset), "seeds": [r["hyperparameters"]["seed"] for r in runs],
               "strategy": runs[0]["strategy"], "replicas": runs[0]["replicas"]}
    for split in ("dev", "test"):
        if split in runs[0]:
            summary[split] = mean_std([r[split] for r in runs])
    summary["runs"] = runs
    atomic_write_json(os.path.join(output, METRICS_FILE), summary)
    return summary


def run_evaluate(model_dir, data_dir, split="test", precision=DEFAULT_PRECISION, kind=None, progress=False):
    """Score a model written by `run_finetune` on `data_dir`'s `split` with its task's metric, at
    inference `precision`. `kind`: the task kind the caller expects; a model of another kind is
    refused before the data is read. `progress`: a bar of the model's batches on stderr."""
    found, adapter, task = load_with_adapter(model_dir, precision)
    if kind is not None and found != task_kind(kind).name:
        have, want = task_kind(found), task_kind(kind)
        raise ValueError(f"{model_dir} is {have.article()} {found} model ({have.model}), not {want.article()} "
                         f"{want.name} model ({want.model}): evaluate it with `biozoo evaluate {found} --model "
                         f"{model_dir} ...` on {found} data")
    kind = found
    splits = adapter.load_for(task, data_dir, only=split)
    model = os.path.abspath(model_dir) if os.path.exists(model_dir) else model_dir
    with _progress(f"scoring {split}", progress):
        scores = adapter.evaluate(task, splits[split])
    return {"task": kind, "model": model, "data": _where(data_dir), "split": split, "inference_precision": precision,
            **scores}

