"""Task adapters: how fine-tuning and evaluation read, build, batch and score each task kind.

`adapter_for(kind, **options)` is the adapter of a task kind (its row of `biozoo.task_kinds` names
the class); `TaskAdapter` says what an adapter does.

Example:
    >>> adapter = adapter_for("ner", entity_type="Disease")
    >>> splits = adapter.load("ncbi-disease")
"""

from biozoo.task_kinds import task_kind
from biozoo.tasks.adapters.base import TaskAdapter, load_splits
from biozoo.tasks.finetuned import load_task


def adapter_for(kind, **options):
    """The task adapter of task kind `kind` (a name or alias), built with `options`."""
    return task_kind(kind).load_adapter()(**options)


def load_with_adapter(model, precision="float32"):
    """A task preset -> (kind, its task adapter with the options it was written with, the task at
    inference `precision`)."""
    kind, options, task = load_task(model, precision)
    return kind, adapter_for(kind, **options), task


__all__ = ["adapter_for", "load_with_adapter", "TaskAdapter", "load_splits"]
