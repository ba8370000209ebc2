"""Benchmark suites (suites.json): a paper's table as data, and the lookups a run needs.

A suite lists tasks; a task names its data folder, the score it reports, the registry result
it is compared with and its fine-tuning recipe per model size.

Example:
    >>> from biozoo.benchmark.suites import load_suite
    >>> suite = load_suite("biom-table2")
    >>> task = suite.tasks["ncbi_disease"]
    >>> task.kind, task.data, task.score
    ('ner', 'ner/NCBI-disease', 'f1')
    >>> suite.recipe(task, "base")["learning_rate"]  # BioM-ELECTRA-Base's row of Table 4
    0.0002
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re

from biozoo import registry
from biozoo.task_kinds import task_kind

__all__ = ["Suite", "SuiteTask", "CrossCorpusTarget", "load_suite", "suite_names", "model_size", "score_value",
           "published_results", "SIZES", "RECIPE_DEFAULTS"]

SIZES = ("tiny", "base", "large")
# What `biozoo finetune` uses where a paper states no value (the report names each one).
RECIPE_DEFAULTS = {"epochs": 3.0, "learning_rate": 5e-5, "batch_size": 8}
RECIPE_KEYS = ("epochs", "learning_rate", "batch_size", "max_seq_length")


@dataclasses.dataclass(frozen=True)
class CrossCorpusTarget:
    """Another corpus of the same entity type a task's NER model is also scored on: sentence
    level on `data`'s test split, or document level on `documents` where they exist."""

    title: str
    data: str
    documents: str | None = None
    type_map: dict = dataclasses.field(default_factory=dict)  # gold type -> the model's type


@dataclasses.dataclass(frozen=True)
class SuiteTask:
    """One task of a suite: its data folder (under `--data`), task kind, the score it reports and
    the registry result it is compared with.

    Example:
        >>> task = load_suite("blurb").tasks["ncbi_disease"]
        >>> task.kind, task.data, task.score
        ('ner', 'ner/NCBI-disease', 'f1')
    """

    name: str
    title: str
    kind: str
    data: str
    score: str
    score_name: str
    published: dict | None = None  # {"task", "metric"} in the registry's reported_results
    split: str = "test"  # the split the paper reports (LitCovid in Bioformer's table: dev)
    starts_from: str | None = None  # a task of the suite whose fine-tuned model this one continues
    group: str | None = None  # the task type, for suites that average per type
    average_score: str | None = None  # what the suite's average takes of this task (default: score)
    in_average: bool = True
    unsupported: str | None = None  # why biozoo cannot run it
    note: str | None = None
    data_differs: str | None = None  # how DATA's set differs from the paper's: shown, never compared as like-for-like
    cross_corpus: tuple = ()
    labels: tuple = ()  # the positive labels a macro score averages over (ChemProt's five CPR classes)


@dataclasses.dataclass(frozen=True)
class Suite:
    """A paper's table to reproduce: its tasks, runs per task and fine-tuning recipes.

    Example:
        >>> suite = load_suite("biom-table2")
        >>> suite.seeds, suite.recipe("ncbi_disease", "base")["learning_rate"]
        (5, 0.0002)
    """

    name: str
    title: str
    paper: str
    results_sources: tuple
    seeds: int
    seeds_source: str
    spread: str
    recipes: dict
    tasks: dict
    average: dict | None = None

    def recipe(self, task, size, preset=None):
        """{"epochs", "learning_rate", "batch_size", "max_seq_length", "from", "defaults"} for
        `task` (a SuiteTask or its name) on a model of `size`; with `preset`, a row the paper
        gives for that checkpoint wins. "defaults" lists the keys the paper leaves open, filled
        with biozoo's defaults."""
        task = self.tasks[task] if isinstance(task, str) else task
        if size not in SIZES:
            raise ValueError(f"model size {size!r}: choose one of {', '.join(SIZES)}")
        if self.recipes.get("table") == "biom":
            values, where = _biom_row(self.recipes, task, size, preset)
        else:
            sizes = self.recipes["sizes"]
            chosen = _nearest_size(size, sizes)
            rows = sizes[chosen]
            row = rows.get(task.name, rows.get(task.kind))
            if row is None:
                raise KeyError(f"suite {self.name} has no recipe for task {task.name} ({task.kind})")
            values = dict(row)
            where = row.get("from") or f"{self.recipes['source']}; the {chosen}-size row (this model is {size})"
        recipe = {key: values.get(key) for key in RECIPE_KEYS}
        defaults = [key for key in ("epochs", "learning_rate", "batch_size") if recipe[key] is None]
        for key in defaults:
            recipe[key] = RECIPE_DEFAULTS[key]
        if recipe["max_seq_length"] is None:
            recipe["max_seq_length"] = task_kind(task.kind).sequence_length
            defaults.append("max_seq_length")
        recipe["from"] = where
        recipe["defaults"] = defaults
        return recipe

    def published(self, registry_name, task):
        """The registry's reported result for checkpoint `registry_name` on `task` (a SuiteTask
        or {"task", "metric"}) under this suite's sources, or None."""
        wanted = task.published if isinstance(task, SuiteTask) else task
        if not registry_name or not wanted:
            return None
        for result in published_results(registry_name):
            if (result["source"] in self.results_sources and result["task"] == wanted["task"]
                    and result["metric"] == wanted["metric"]):
                return result
        return None


def _nearest_size(size, available):
    order = {name: i for i, name in enumerate(SIZES)}
    return min(available, key=lambda name: (abs(order[name] - order[size]), -order[name]))


def _biom_row(recipes, task, size, preset):
    """BioM-Transformers Table 4 (biozoo/train/biom_recipes.json): the checkpoint's own row
    where the table lists it, else the row of its size."""
    from biozoo.train.recipes import RecipeError, biom_document, biom_recipe

    if preset is not None:
        try:
            row = biom_recipe(preset, task.kind, os.path.basename(task.data))
            return row, f"{recipes['source']}: the row of {row['table_row']}"
        except RecipeError:
            pass
    nearest = _nearest_size(size, recipes["size_rows"])
    model = recipes["size_rows"][nearest]
    document = biom_document()
    rows = document["models"][model]["tasks"][task.kind]
    if document["task_kinds"][task.kind]["per_dataset"]:
        key = "bioasq" if "bioasq" in task.name else "squad2"
        rows = rows[key]
    return rows, (f"{recipes['source']}: the row of {document['models'][model]['table_row']} (the {nearest}-size row; "
                  f"this model is {size})")


def model_size(config):
    """tiny / base / large from a backbone config (hidden < 512 / < 1024 / >= 1024)."""
    hidden = config.get("hidden_dim") or config.get("hidden_size")
    if not hidden:
        raise ValueError("the backbone config names no hidden size: give --size")
    return "tiny" if hidden < 512 else "base" if hidden < 1024 else "large"


_MEAN = re.compile(r"^mean\((.+)\)$")


def score_value(scores, spec, labels=()):
    """The number `spec` names in a split's metrics: a dotted path ("bioasq_factoid.mrr"),
    "macro_f1" (the mean F1 over the task's positive `labels`, a label neither in gold nor
    predicted counting 0, as sklearn's f1_score(labels=..., average="macro")) or mean(a, b, ...)."""
    match = _MEAN.match(spec.strip())
    if match:
        parts = [score_value(scores, part.strip(), labels) for part in match[1].split(",")]
        return sum(parts) / len(parts)
    if spec == "macro_f1":
        if not labels:
            raise ValueError("macro_f1 averages over a task's positive labels: the task names none")
        if "per_label" not in scores:
            raise KeyError(f"the scores have no 'per_label' (for macro_f1; there are {sorted(scores)[:12]})")
        return sum(float(scores["per_label"].get(label, {}).get("f1", 0.0)) for label in labels) / len(labels)
    value = scores
    for key in spec.split("."):
        if not isinstance(value, dict) or key not in value:
            raise KeyError(f"the scores have no {spec!r} (at {key!r}; there are {sorted(value)[:12]})")
        value = value[key]
    return float(value)


def published_results(registry_name):
    return registry.get_entry(registry_name).get("reported_results", [])


@functools.lru_cache(maxsize=1)
def _document():
    with open(os.path.join(os.path.dirname(__file__), "suites.json"), encoding="utf-8") as f:
        return json.load(f)


def suite_names():
    return tuple(_document()["suites"])


def load_suite(name) -> Suite:
    suites = _document()["suites"]
    if name not in suites:
        raise KeyError(f"no benchmark suite {name!r}; there are {', '.join(suites)}")
    raw = suites[name]
    tasks = {}
    for task_name, spec in raw["tasks"].items():
        spec = dict(spec)
        targets = tuple(CrossCorpusTarget(**t) for t in spec.pop("cross_corpus", ()))
        labels = tuple(spec.pop("labels", ()))
        if "macro_f1" in f"{spec['score']} {spec.get('average_score', '')}" and not labels:
            raise ValueError(f"suites.json: suites.{name}.tasks.{task_name} is scored by macro_f1 but lists no "
                             "\"labels\" (the positive labels it averages over)")
        tasks[task_name] = SuiteTask(name=task_name, cross_corpus=targets, labels=labels, **spec)
    return Suite(name=name, title=raw["title"], paper=raw["paper"], results_sources=tuple(raw["results_sources"]),
                 seeds=raw["seeds"], seeds_source=raw["seeds_source"], spread=raw["spread"], recipes=raw["recipes"],
                 tasks=tasks, average=raw.get("average"))
