"""Run a suite's grid of task x seed fine-tuning cells, resumably (`biozoo benchmark`).

Each cell is one `biozoo finetune` run written to OUTPUT/cells/<task>/seed-<seed>; a cell whose
metrics.json records the cell's own settings is done and never rerun, so a killed benchmark rerun
with the same command finishes only the missing cells. A cell trained with other settings (a
recipe biozoo has since corrected) is stale: it is retrained, with the cells continuing it, and
their cross-corpus scores go with the old runs. OUTPUT/benchmark.json records the plan; the report
(`biozoo.benchmark.report`) is written at the end.

Example:
    >>> plan = BenchmarkPlan("biom-table2", "bioformer_8l", data="data", output="runs/bench",
    ...                      tasks=("ncbi_disease",), seeds=2)
    >>> summary = run_benchmark(plan)
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import shutil
import sys
import time
import traceback

from tqdm.auto import tqdm

from biozoo import presets, registry
from biozoo._io import atomic_write_json, read_json
from biozoo.annotate.evaluation import score_documents
from biozoo.benchmark.report import cross_corpus_path, settings_differ, write_report
from biozoo.benchmark.suites import load_suite, model_size
from biozoo.data.ner import find_split
from biozoo.preset_files import METRICS_FILE
from biozoo.presets import registry_name_of
from biozoo.task_kinds import task_kind
from biozoo.train import finetune
from biozoo.train.run import resolve_strategy

__all__ = ["BenchmarkPlan", "Cell", "plan_cells", "preset_config", "resolve_plan", "run_benchmark"]

# Fields of the plan a rerun into the same OUTPUT must repeat (tasks and seeds may grow).
_IDENTITY = ("suite", "preset", "data", "first_seed", "size", "epochs")


@dataclasses.dataclass(frozen=True)
class BenchmarkPlan:
    """What `biozoo benchmark` runs (its options): every task of `suite` (or `tasks`) x seed, fine-tuned
    from `preset` on the data sets under `data`, into `output`.

    Example:
        >>> plan = BenchmarkPlan("blurb", "bioformer_8l", data="data", output="bench", tasks=("ncbi_disease",), seeds=2)
        >>> cells, skipped, notes = plan_cells(plan, load_suite("blurb"), "base")
        >>> [(cell.task, cell.seed) for cell in cells]
        [('ncbi_disease', 42), ('ncbi_disease', 43)]
    """

    suite: str
    preset: str
    data: str
    output: str
    tasks: tuple = ()  # empty: every task of the suite
    seeds: int | None = None  # None: the suite's number of runs
    first_seed: int = 42
    size: str | None = None  # tiny | base | large; None: from the backbone's hidden size
    epochs: float | None = None  # shortened runs: every task trains this many epochs
    cross_corpus: bool = False
    checkpoint_every: int | None = None  # steps, inside each cell (a killed cell resumes mid-way)
    strategy: str = "auto"  # as `biozoo finetune --strategy`: TPU, GPUs or the CPU
    tpu: str | None = None


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell of the grid: a task at one seed, a `biozoo finetune` run into `directory` with the
    recipe's `hyperparameters` (`recipe` says where each came from).

    Example:
        >>> cell = cells[0]  # from `plan_cells` (see `BenchmarkPlan`)
        >>> cell.directory, cell.done
        ('bench/cells/ncbi_disease/seed-42', False)
        >>> cell.command().split()[:3]
        ['biozoo', 'finetune', 'ner']
    """

    task: str
    seed: int
    kind: str
    preset: str  # the checkpoint, or the cell this one continues from (starts_from)
    data: str
    directory: str
    hyperparameters: dict
    recipe: dict
    options: tuple = ()  # further `biozoo finetune` arguments (strategy)
    blocked: str | None = None  # why it cannot run now (the cell it continues is not finished, nor in this run)

    @property
    def finished(self):
        """Whether a run of the cell finished (its metrics.json is written), as planned or not."""
        return os.path.isfile(os.path.join(self.directory, METRICS_FILE))

    @property
    def done(self):
        return self.stale() is None and self.finished

    def stale(self):
        """Why the cell's finished run is not this cell (its metrics.json records other settings),
        or None (finished as planned, or not finished at all)."""
        path = os.path.join(self.directory, METRICS_FILE)
        if not os.path.isfile(path):
            return None
        differs = settings_differ(read_json(path, "cell metrics", error_class=ValueError), dataclasses.asdict(self))
        return f"{path} was trained with {differs}" if differs else None

    def command(self):
        """The `biozoo finetune` command line that makes this cell on its own."""
        hp = self.hyperparameters
        args = ["biozoo", "finetune", self.kind, "--preset", self.preset, "--data", self.data,
                "--output", self.directory, "--epochs", f"{hp['epochs']:g}", "--batch-size", str(hp["batch_size"]),
                "--learning-rate", f"{hp['learning_rate']:g}", "--max-seq-length", str(hp["max_seq_length"]),
                "--seed", str(hp["seed"]), *self.options]
        return shlex.join(args)


def _available(task, data_root):
    """None if `task` can run on `data_root`, else why not."""
    if task.unsupported:
        return f"not supported: {task.unsupported}"
    folder = os.path.join(data_root, task.data)
    if not os.path.isdir(folder):
        return f"no data: {folder} does not exist (`biozoo data download {task.name}` says how to get it)"
    extensions = task_kind(task.kind).data_extensions
    missing = []
    for split in ("train", task.split):
        try:
            find_split(folder, split, extensions)
        except FileNotFoundError:
            missing.append(split)
    if missing:
        present = ", ".join(sorted(os.listdir(folder))) or "nothing"
        return f"no {' or '.join(missing)} split in {folder} (it holds {present})"
    return None


def plan_cells(plan, suite=None, size=None, positions=None):
    """(cells in run order, {task: why it cannot run}, notes). A sequence length the paper
    leaves open (biozoo's default) is cut to the model's `positions`. A task that continues
    another's fine-tuned model (starts_from) continues that task's cell of the same seed: one
    this run trains, else the finished cell an earlier run left (a cell whose parent is neither
    is planned `blocked`, saying what is missing)."""
    suite = suite or load_suite(plan.suite)
    names = tuple(dict.fromkeys(plan.tasks)) or tuple(suite.tasks)
    unknown = [n for n in names if n not in suite.tasks]
    if unknown:
        raise KeyError(f"suite {suite.name} has no task {', '.join(unknown)}; it has {', '.join(suite.tasks)}")
    runs = suite.seeds if plan.seeds is None else plan.seeds
    if runs < 1:
        raise ValueError(f"--seeds {runs}: give a positive number of runs per task")
    if plan.epochs is not None and not plan.epochs > 0:
        raise ValueError(f"--epochs {plan.epochs:g}: give a positive number of epochs")
    seeds = [plan.first_seed + i for i in range(runs)]
    skipped = {}
    runnable = []
    for name in names:
        why = _available(suite.tasks[name], plan.data)
        if why:
            skipped[name] = why
        else:
            runnable.append(name)
    notes = {}
    if plan.epochs is not None:
        notes["shortened"] = (f"every task trains {plan.epochs:g} epochs (the recipes' epochs are not used: a "
                              "shortened run, not the paper's protocol)")
    # a task continuing another's fine-tuned model runs after it
    ordered = sorted(runnable, key=lambda n: suite.tasks[n].starts_from in runnable)
    cells = []
    for name in ordered:
        parent = suite.tasks[name].starts_from
        for seed in seeds:
            cell = _planned_cell(plan, suite, name, seed, size, positions)
            if parent and parent not in runnable:
                blocked = _parent_problem(plan, suite, cell, size, positions, skipped.get(parent))
                cell = dataclasses.replace(cell, blocked=blocked)
                if blocked and cell.finished:  # kept as it is: never discarded because its parent was not asked for
                    stale = cell.stale()
                    notes.setdefault(name, f"seed {seed}: {blocked}; its finished cell is kept"
                                     + (f", stale ({stale}): not this run's" if stale else ""))
                elif blocked:
                    notes.setdefault(name, blocked)
            cells.append(cell)
    return cells, skipped, notes


def _cell_directory(plan, task, seed):
    return os.path.join(plan.output, "cells", task, f"seed-{seed}")


def _planned_cell(plan, suite, name, seed, size, positions):
    """The cell of task `name` at `seed` as `plan` plans it (a task with starts_from continues
    its parent task's cell of the same seed)."""
    task = suite.tasks[name]
    recipe = suite.recipe(task, size, plan.preset)
    if positions and "max_seq_length" in recipe["defaults"] and recipe["max_seq_length"] > positions:
        recipe = {**recipe, "max_seq_length": positions}
    if plan.epochs is not None:
        recipe = {**recipe, "epochs": plan.epochs}
    start = _cell_directory(plan, task.starts_from, seed) if task.starts_from else plan.preset
    hp = {"epochs": float(recipe["epochs"]), "batch_size": int(recipe["batch_size"]),
          "learning_rate": float(recipe["learning_rate"]), "max_seq_length": int(recipe["max_seq_length"]),
          "seed": seed}
    return Cell(name, seed, task.kind, start, os.path.join(plan.data, task.data), _cell_directory(plan, name, seed),
                hp, recipe, _strategy_options(plan))


def _parent_problem(plan, suite, cell, size, positions, parent_skipped):
    """Why `cell` cannot continue its parent task's cell, which this run does not train (None
    when that cell is finished as planned)."""
    parent = suite.tasks[cell.task].starts_from
    planned = _planned_cell(plan, suite, parent, cell.seed, size, positions)
    if planned.done:
        return None
    metrics = os.path.join(planned.directory, METRICS_FILE)
    state = f"is stale ({planned.stale()})" if planned.stale() else f"is not finished (no {metrics})"
    not_run = f"{parent} is skipped: {parent_skipped}" if parent_skipped else f"this run does not include {parent}"
    return (f"{cell.task} continues the {parent} cell of seed {cell.seed}, which {state}, and {not_run}: "
            f"add {parent} to --tasks")


def preset_config(preset, download=True):
    """The backbone config of `preset` (its config.json's "config"), resolved (downloaded and
    converted once) as a run resolves it. Without `download` nothing is fetched or converted: a
    local directory's config.json is read, a registry checkpoint's facts come from the registry,
    another handle's config is None (unknown)."""
    if download:
        with open(os.path.join(presets.resolve_preset(preset), "config.json"), encoding="utf-8") as f:
            return json.load(f).get("config", {})
    if os.path.isdir(preset):
        config = read_json(os.path.join(preset, "config.json"), "model config", error_class=ValueError)
        return config["config"] if "config" in config else _transformers_facts(config)
    return _transformers_facts(registry.get_entry(preset)["config"]) if registry.is_registered(preset) else None


def _transformers_facts(config):
    """What a conversion makes of a transformers config's width and positions."""
    return {"hidden_size": config.get("hidden_size") or config.get("dim"),
            "max_sequence_length": config.get("max_position_embeddings", 512)}


def resolve_plan(plan, config):
    """(the plan as a run makes it, the model's number of positions or None): DATA, OUTPUT and a
    local preset made absolute, the size from the backbone `config`'s hidden width unless the plan
    gives one. `run_benchmark` and `--dry-run` plan the same cells from it."""
    config = config or {}
    plan = dataclasses.replace(plan, data=os.path.abspath(plan.data), output=os.path.abspath(plan.output),
                               preset=plan.preset if not os.path.exists(plan.preset) else os.path.abspath(plan.preset),
                               size=plan.size or model_size(config))
    return plan, config.get("max_sequence_length")


def _strategy_options(plan):
    options = () if plan.strategy == "auto" else ("--strategy", plan.strategy)
    return options + (("--tpu", plan.tpu) if plan.tpu else ())


def _record(plan, size, registry_name):
    record = dataclasses.asdict(plan)
    record.update(size=size, registry_name=registry_name, tasks=list(plan.tasks))
    return record


def _check_same_plan(path, record):
    with open(path, encoding="utf-8") as f:
        old = json.load(f)
    differs = [k for k in _IDENTITY if old.get(k) != record.get(k)]
    if differs:
        what = ", ".join(f"{k} {old.get(k)!r} (now {record.get(k)!r})" for k in differs)
        raise ValueError(f"{os.path.dirname(path)} holds a benchmark run with {what}: rerun the same command to "
                         "resume it, or choose another --output")


def run_benchmark(plan, log=None, progress=True, verbose=0, strategy=None):
    """Run every missing cell of `plan`, then write OUTPUT/report.{json,md,png}; return the
    report. A cell that fails is recorded (OUTPUT/cells/<task>/seed-<n>.error.json, in the
    report) and the grid goes on; a rerun retries it. Cells train under `strategy` (a resolved
    strategy), else the plan's `--strategy` / `--tpu` resolved as `biozoo finetune` does."""
    log = log or (lambda message: print(message, file=sys.stderr))
    if strategy is None:
        strategy = resolve_strategy(plan.strategy, plan.tpu)
    suite = load_suite(plan.suite)
    plan, positions = resolve_plan(plan, preset_config(plan.preset))
    size = plan.size
    record = _record(plan, size, registry_name_of(plan.preset))
    record_path = os.path.join(plan.output, "benchmark.json")
    earlier = []
    if os.path.exists(record_path):
        _check_same_plan(record_path, record)
        with open(record_path, encoding="utf-8") as f:
            earlier = json.load(f).get("cells", [])
    cells, skipped, notes = plan_cells(plan, suite, size, positions)
    planned = {(c.task, c.seed) for c in cells}
    # cells an earlier run of this benchmark planned stay in the record (and the report) when
    # this run asks for fewer tasks or seeds
    kept = [c for c in earlier if (c["task"], c["seed"]) not in planned]
    record.update(skipped=skipped, notes=notes,
                  cells=[dataclasses.asdict(c) | {"command": c.command()} for c in cells] + kept)
    os.makedirs(plan.output, exist_ok=True)
    atomic_write_json(record_path, record)
    for name, why in skipped.items():
        log(f"{name}: skipped, {why}")

    todo, reruns, retrained = [], set(), set()
    for cell in cells:  # in run order: a cell continuing another comes after it
        finished = cell.finished
        if cell.blocked and finished:  # nothing could train it again: an earlier run's result is never discarded
            log(f"cell {cell.task} seed {cell.seed}: kept as it is, not run: {cell.blocked}")
            continue
        why = finished and (cell.stale() or (cell.preset in reruns and
                                             f"the cell it continues ({cell.preset}) is retrained"))
        if why:
            log(f"cell {cell.task} seed {cell.seed}: stale, retrained: {why}")
            retrained.add(cell.directory)
        if why or not finished:
            todo.append(cell)
            reruns.add(cell.directory)
    log(f"benchmark {suite.name} of {plan.preset} ({size}): {len(cells)} cells, {len(cells) - len(todo)} already done, "
        f"{len(todo)} to run")
    bar = _bar(len(cells), len(cells) - len(todo), progress)
    started, finished = time.time(), 0
    for cell in cells:
        if cell.directory not in reruns:
            if plan.cross_corpus:
                _cross_corpus(plan, suite, cell, log)
            continue
        # a stale cell's run, what it was scored as and the cells that continued it go: the report
        # never shows them as this run's (a kill before their retraining leaves them missing, not stale)
        # (a killed, unfinished cell keeps its --checkpoint-every checkpoints: it resumes them)
        _discard(plan.output, cell, keep_checkpoints=cell.directory not in retrained)
        for other in [c for c in record["cells"] if _continues(suite, plan, c, cell)]:
            _discard(plan.output, other)
        bar.set_postfix_str(f"{cell.task} seed {cell.seed}")
        log(f"cell {cell.task} seed {cell.seed}: {cell.command()}")
        if _run_cell(plan, cell, log, verbose, strategy):
            if plan.cross_corpus:
                _cross_corpus(plan, suite, cell, log)
        finished += 1
        bar.update(1)
        elapsed = time.time() - started
        left = len(todo) - finished
        log(f"{finished} of {len(todo)} cells run in {_clock(elapsed)}; about {_clock(elapsed / finished * left)} left")
    bar.close()
    return write_report(plan.output)


def _continues(suite, plan, other, cell):
    """Whether the recorded cell `other` continues `cell`'s fine-tuned model."""
    return (suite.tasks[other["task"]].starts_from == cell.task and other["seed"] == cell.seed
            and other["preset"] != plan.preset)


def _discard(output, cell, keep_checkpoints=False):
    """Remove a cell's run, its cross-corpus scores and (unless `keep_checkpoints`) its checkpoints."""
    task, seed = (cell["task"], cell["seed"]) if isinstance(cell, dict) else (cell.task, cell.seed)
    shutil.rmtree(os.path.join(output, "cross_corpus", task, f"seed-{seed}"), ignore_errors=True)
    directory = os.path.join(output, "cells", task, f"seed-{seed}")
    if os.path.isdir(directory):
        shutil.rmtree(directory)
    if not keep_checkpoints:  # a retrained cell must not resume the discarded run's checkpoints
        shutil.rmtree(finetune.checkpoint_directory(directory), ignore_errors=True)


def _run_cell(plan, cell, log, verbose, strategy):
    error_path = cell.directory + ".error.json"
    if cell.blocked:
        atomic_write_json(error_path, {"error": cell.blocked})
        log(f"cell {cell.task} seed {cell.seed}: not run, {cell.blocked}")
        return False
    if cell.preset != plan.preset and not os.path.isfile(os.path.join(cell.preset, METRICS_FILE)):
        atomic_write_json(error_path, {"error": f"the cell it continues ({cell.preset}) did not finish"})
        log(f"cell {cell.task} seed {cell.seed}: not run, {cell.preset} did not finish")
        return False
    hp = finetune.Hyperparameters(**cell.hyperparameters, checkpoint_every=plan.checkpoint_every)
    try:
        finetune.run_finetune(cell.kind, cell.preset, cell.data, cell.directory, hp, verbose=verbose, log=log,
                              strategy=strategy)
    except Exception as error:  # recorded, reported, retried by a rerun; the grid goes on
        atomic_write_json(error_path, {"error": f"{type(error).__name__}: {error}",
                                       "traceback": traceback.format_exc()})
        log(f"cell {cell.task} seed {cell.seed} failed: {type(error).__name__}: {error} (see {error_path})")
        return False
    if os.path.exists(error_path):
        os.unlink(error_path)
    return True


def _cross_corpus(plan, suite, cell, log):
    """Score the cell's NER model on each other corpus of its entity type: by offsets on gold
    documents where the suite names them and DATA holds them, else on the test sentences. A
    target that fails is recorded beside its result file and the grid goes on."""
    for target in suite.tasks[cell.task].cross_corpus:
        path = cross_corpus_path(plan.output, cell.task, cell.seed, target.title)
        if os.path.exists(path):
            continue
        try:
            result = _score_target(plan, cell, target)
        except Exception as error:  # recorded; the grid and the report go on
            atomic_write_json(path[: -len(".json")] + ".error.json", {"error": f"{type(error).__name__}: {error}"})
            log(f"cross-corpus {cell.task} seed {cell.seed} -> {target.title} failed: {type(error).__name__}: {error}")
            continue
        if result is None:
            log(f"cross-corpus {cell.task} -> {target.title}: neither its documents nor "
                f"{os.path.join(plan.data, target.data)} are in DATA: not scored")
            continue
        log(f"cross-corpus {cell.task} seed {cell.seed} -> {target.title} ({result['level']}): F1 {result['f1']:.2f}")
        atomic_write_json(path, {"task": cell.task, "seed": cell.seed, "target": target.title, **result})


def _score_target(plan, cell, target):
    documents = os.path.join(plan.data, target.documents) if target.documents else None
    sentences = os.path.join(plan.data, target.data)
    if documents and os.path.isfile(documents):
        scores = score_documents(cell.directory, [documents], type_map=target.type_map, model_types_only=True,
                                 progress=False)
        return {"level": "documents", "documents": documents, "f1": scores["strict"]["f1"], "scores": scores}
    if os.path.isdir(sentences):
        scores = finetune.run_evaluate(cell.directory, sentences, "test")
        return {"level": "sentences", "data": sentences, "f1": scores["f1"], "scores": scores}
    return None


def _bar(total, initial, enabled):
    return tqdm(total=total, initial=initial, unit="cell", desc="benchmark", disable=not enabled,
                dynamic_ncols=True)


def _clock(seconds):
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"
