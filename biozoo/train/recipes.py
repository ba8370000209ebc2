"""Published fine-tuning recipes (`biozoo finetune --recipe`): the hyperparameters a paper
used, per model and task. In biozoo "recipe" names only these tables; the per-task-kind code
of the fine-tuning driver is its task adapters (`biozoo.train.adapters`).

`biom_recipe(preset, kind, dataset)` reads `biom_recipes.json` (shipped beside this module),
a transcription of Appendix Table 4 of the BioM-Transformers paper (Alrowili and
Vijay-Shanker, BioNLP 2021): epochs, learning rate and batch size per model and task.

    >>> from biozoo.train.recipes import biom_recipe
    >>> r = biom_recipe("biom_electra_large_discriminator", "ner")
    >>> r["epochs"], r["learning_rate"], r["batch_size"]
    (5, 7e-05, 32)

A preset is found by registry name, by Hugging Face id (`sultan/BioM-ELECTRA-Large-Discriminator`
or `hf://sultan/BioM-ELECTRA-Large-Discriminator@rev`), or for a local directory by the
registry name / hub id recorded in it (a converted Keras preset's `biozoo.json`, the
starting preset in a `biozoo finetune` output's `metrics.json`, an HF directory's
`_name_or_path`). The paper gives no sequence length, warmup, optimizer or layer-wise decay
for fine-tuning; such values are absent from the recipe and the caller keeps its own
defaults.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from importlib import resources

from biozoo._io import read_json
from biozoo.presets import registry_name_of

RECIPES_FILE = "biom_recipes.json"
HYPERPARAMETERS = ("epochs", "learning_rate", "batch_size")


class RecipeError(KeyError):
    """No recipe for this preset, task kind or dataset; the message says what the table has."""

    def __str__(self):  # KeyError would quote the message
        return self.args[0]


@functools.lru_cache(maxsize=1)
def _document():
    with resources.as_file(resources.files("biozoo.train").joinpath(RECIPES_FILE)) as path:
        return read_json(path, "BioM recipe table")


def biom_document():
    """The whole recipe table (a deep copy)."""
    return copy.deepcopy(_document())


def biom_presets():
    """{registry name: paper model} for every preset the table covers (SQuAD2 fine-tunes included)."""
    covered = {}
    for model, info in _document()["models"].items():
        for name in info.get("presets", []) + info.get("squad2_presets", []):
            covered[name] = model
    return covered


def _covered_text():
    doc = _document()
    parts = []
    for model, info in doc["models"].items():
        names = info.get("presets", []) + info.get("squad2_presets", [])
        if names:
            parts.append(f"{model} ({', '.join(names)})")
    return "; ".join(parts)


def _normalise_dataset(dataset):
    if dataset is None:
        return None
    name = os.path.basename(os.path.normpath(os.fspath(dataset)))
    if name.lower().endswith(".json"):  # qa data given as a file: .../bioasq/dev.json
        name = os.path.basename(os.path.dirname(os.path.normpath(os.fspath(dataset)))) or name
    return name


def _dataset_key(name, choices):
    """`name` matched case-insensitively (and ignoring -/_ and a 'squad2.0' spelling) to `choices`."""
    def key(text):
        return re.sub(r"[^a-z0-9]", "", text.lower()).replace("squad20", "squad2").replace("squadv2", "squad2")

    for choice in choices:
        if key(choice) == key(name):
            return choice
    return None


def biom_recipe(preset, kind, dataset=None):
    """The BioM-Transformers (Table 4) fine-tuning hyperparameters for `preset` on task `kind`.

    Args:
        preset: a registry name, a Hugging Face id (optionally `hf://...@revision`) or a local
            directory whose `biozoo.json` / `config.json` names one.
        kind: "ner", "re" or "qa".
        dataset: the dataset name or data directory (e.g. "NCBI-disease", "chemprot",
            ".../qa/bioasq"). Needed for "qa", where the table has one row per dataset
            ("squad2", "bioasq"); a SQuAD2.0 fine-tune preset defaults to "bioasq". For
            "ner"/"re" the table has one row for all datasets of the kind.

    Returns:
        dict with "epochs", "learning_rate", "batch_size" (exactly as in the table) and
        descriptive keys: "model", "table_row", "table_task", "preset", "kind", "dataset",
        "dataset_in_paper", "source" (and "framework" where the paper names a different one).

    Raises:
        RecipeError: the preset is not in the table (the message lists the models it covers)
            or the table has no row for this kind/dataset (the message lists what it has).
    """
    doc = _document()
    name = registry_name_of(preset)
    covered = biom_presets()
    if name not in covered:
        what = f"'{preset}'" + (f" (registry name '{name}')" if name and name != preset else "")
        raise RecipeError(
            f"The BioM-Transformers recipe (Table 4) has no entry for {what}. It covers: {_covered_text()}."
        )
    model = covered[name]
    info = doc["models"][model]
    tasks = info["tasks"]
    squad2_preset = name in info.get("squad2_presets", [])
    kind = (kind or "").lower()
    if squad2_preset and kind != "qa":
        raise RecipeError(
            f"'{name}' is {model} already fine-tuned on SQuAD2.0; the table's recipe for it is "
            f"task kind 'qa' (dataset 'bioasq'), not '{kind}'. For '{kind}', use "
            f"{' or '.join(repr(p) for p in info['presets'])}."
        )
    if kind not in tasks:
        raise RecipeError(
            f"The BioM-Transformers recipe (Table 4) has no '{kind}' row for {model} ({name}); "
            f"task kinds available for it: {', '.join(sorted(tasks))}."
        )
    kind_info = doc["task_kinds"][kind]
    entry = tasks[kind]
    requested = _normalise_dataset(dataset)
    if kind_info["per_dataset"]:
        available = list(entry)
        if requested is None:
            if squad2_preset and "bioasq" in entry:
                requested = "bioasq"
            elif len(available) == 1:
                requested = available[0]
            else:
                raise RecipeError(
                    f"The table gives {model} one '{kind}' row per dataset; pass dataset= one of: "
                    f"{', '.join(available)}."
                )
        key = _dataset_key(requested, available)
        if key is None:
            raise RecipeError(
                f"The BioM-Transformers recipe (Table 4) has no '{kind}' row for dataset '{requested}' "
                f"with {model} ({name}); datasets available for it: {', '.join(available)}."
            )
        row, dataset_name, in_paper = entry[key], key, True
    else:
        row = entry
        paper = kind_info["datasets"]
        key = _dataset_key(requested, paper) if requested is not None else None
        dataset_name = key or requested
        in_paper = requested is None or key is not None
    result = {k: row[k] for k in HYPERPARAMETERS}
    result.update({k: v for k, v in row.items() if k not in HYPERPARAMETERS})
    result.update({
        "model": model,
        "table_row": info["table_row"],
        "table_task": {"squad2": "SQ.", "bioasq": "Bio."}.get(dataset_name, kind_info["table_task"])
        if kind_info["per_dataset"] else kind_info["table_task"],
        "preset": name,
        "kind": kind,
        "dataset": dataset_name,
        "dataset_in_paper": in_paper,
        "source": doc["source"],
    })
    return result
