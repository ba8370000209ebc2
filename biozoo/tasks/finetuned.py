"""Task presets loaded by handle, whatever wrote them: `biozoo finetune` (its task kind and adapter options
recorded beside the task), a converted hub task checkpoint (its kind read from the transformers head
class), or an imported AIONER model. `biozoo evaluate`, `biozoo annotate` and the exports read them
through `load_task`.

Example:
    >>> kind, options, task = load_task("out/ncbi-disease")
    >>> task.annotate(["BRCA1 mutations cause breast cancer."])
"""

from __future__ import annotations

from typing import NamedTuple

from biozoo import presets
from biozoo.choices import DEFAULT_PRECISION
from biozoo.task_kinds import task_kind


class FinetunedTask(NamedTuple):
    """What `load_task` returns: the task kind's name, the adapter options recorded with the
    model ({} where none were) and the task model.

    Example:
        >>> kind, options, task = load_task("out/ncbi-disease")  # written by `biozoo finetune ner`
        >>> kind
        'ner'
    """

    kind: str
    options: dict
    task: object


def load_task(model, precision=DEFAULT_PRECISION):
    """A task preset -> FinetunedTask(kind, adapter options, task), the task at inference `precision`.

    `model` is a directory written by `biozoo finetune`, an AIONER preset (`aioner_bioformer`...), or
    the handle of a task checkpoint (a registry task name, `hf://org/repo`, a local HF directory of a
    `*ForTokenClassification`, `*ForSequenceClassification` or `*ForQuestionAnswering` model;
    converted once, cached)."""
    preset = presets.resolve(model)
    if preset.task_kind is None:
        hf_class = ((preset.provenance.get("hf_config") or {}).get("architectures") or [None])[0]
        raise ValueError(f"{model} is not a task model: neither a model written by `biozoo finetune` nor a task checkpoint "
                         f"(its class is {hf_class or 'not recorded'}; expected a *ForTokenClassification, "
                         "*ForSequenceClassification or *ForQuestionAnswering model, or an AIONER model).")
    task_class = task_kind(preset.task_kind).load_task_class()
    return FinetunedTask(preset.task_kind, preset.task_options, task_class.from_preset(preset.directory,
                                                                                       precision=precision))
