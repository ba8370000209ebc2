"""Fine-tuned task presets as `biozoo finetune` writes them: a task preset (task.json, weights,
tokenizer) plus a small JSON record of the task kind and the options of the task adapter that
trained it, read back by `biozoo evaluate`, `biozoo annotate` and `biozoo export hub --model`.

Example:
    >>> kind, options, task = load_task("out/ncbi-disease")
    >>> task.annotate(["BRCA1 mutations cause breast cancer."])
"""

from __future__ import annotations

import os
from typing import NamedTuple

# The task kind record: {"kind": "ner", "options": {...}}. The file name predates the name "task
# adapter" (the fine-tuning driver's code per task kind); it is kept so that output directories
# already written still load.
KIND_FILE = "recipe.json"

KINDS = ("ner", "re", "qa", "doc")


def task_class(kind):
    """The task model class of a task kind: ner, re, doc or qa."""
    if kind == "ner":
        from biozoo.tasks.token_classifier import TokenClassifier

        return TokenClassifier
    if kind in ("re", "doc"):
        from biozoo.tasks.sequence_classifier import SequenceClassifier

        return SequenceClassifier
    if kind == "qa":
        from biozoo.tasks.question_answerer import QuestionAnswerer

        return QuestionAnswerer
    raise KeyError(f"unknown task kind {kind!r}; choose one of {', '.join(KINDS)}")


def kind_record(kind, options):
    """What KIND_FILE holds for a run of task `kind` with adapter `options`."""
    return {"kind": kind, "options": dict(options)}


def read_kind(model_dir):
    """(kind, adapter options) of a fine-tuned model directory."""
    from biozoo._io import read_json

    path = os.path.join(os.fspath(model_dir), KIND_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{model_dir} is not a fine-tuned biozoo model (no {KIND_FILE}).")
    info = read_json(path, "task kind record")
    return info["kind"], info.get("options", {})


class FinetunedTask(NamedTuple):
    kind: str
    options: dict
    task: object


def load_task(model, precision="float32"):
    """A model directory written by `biozoo finetune`, or the handle of a task checkpoint (a
    registry task name, `hf://org/repo`, a local HF directory of a `*ForTokenClassification`,
    `*ForSequenceClassification` or `*ForQuestionAnswering` model; converted once, cached) ->
    FinetunedTask(kind, options, task), the task at inference `precision`."""
    if os.path.exists(os.path.join(os.fspath(model), KIND_FILE)):
        kind, options = read_kind(model)
        return FinetunedTask(kind, options, task_class(kind).from_preset(os.fspath(model), precision=precision))
    from biozoo import presets
    from biozoo.preset_files import read_heads, read_provenance

    preset_dir = presets.resolve_preset(model)
    hf_config = read_provenance(preset_dir).get("hf_config") or {}
    hf_class = (hf_config.get("architectures") or [""])[0]
    multi_label = (read_heads(preset_dir)[1].get("classifier") or {}).get("problem_type") == "multi_label_classification"
    kind = kind_of_hf_class(hf_class, multi_label)
    if kind is None:
        raise ValueError(f"{model} is neither a model written by `biozoo finetune` (no {KIND_FILE}) nor a task "
                         f"checkpoint (its class is {hf_class or 'not recorded'}; expected a *ForTokenClassification, "
                         "*ForSequenceClassification or *ForQuestionAnswering model).")
    task = task_class(kind).from_preset(preset_dir, precision=precision)
    types = {name.split("-", 1)[-1] for name in getattr(task, "label_names", []) if name != "O"}
    # a one-type tagger (B-bio, I-bio) reads bare B/I gold tags as its own type
    options = {"entity_type": types.pop()} if kind == "ner" and len(types) == 1 else {}
    return FinetunedTask(kind, options, task)


def kind_of_hf_class(hf_class, multi_label=False):
    """The task kind of a transformers task class: ner, re (single label), doc (multi-label), qa."""
    if hf_class.endswith("ForTokenClassification"):
        return "ner"
    if hf_class.endswith("ForSequenceClassification"):
        return "doc" if multi_label else "re"
    if hf_class.endswith("ForQuestionAnswering"):
        return "qa"
    return None
