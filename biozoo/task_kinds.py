"""The task kinds: one table, one row each, read by the registry, training, evaluation, annotation and export.

A task preset records its kind (`task.json`'s companion `recipe.json`, or a converted hub checkpoint's
class); whatever wrote it (`biozoo finetune`, a converted hub checkpoint, an imported AIONER model),
everything after reads the kind's row. Adding a task kind is a row here and the modules it names.

The table is data only (classes are named by their import paths and loaded when used), so the
command line reads it without importing Keras.

Example:
    >>> task_kind("classification").name
    're'
    >>> kind_of_hf_class("BertForTokenClassification").task_class_name
    'TokenClassifier'
"""

from __future__ import annotations

import dataclasses
import importlib


@dataclasses.dataclass(frozen=True)
class TaskKind:
    """One task kind.

    - `name`: what the command line, `recipe.json`, the registry and metrics.json call it;
      `aliases` are older or alternative spellings that still resolve to it.
    - `model`: what one of its models is called in messages ("a token classifier").
    - `task_class`, `adapter`: "module:Class" of its task model and of its task adapter (how
      fine-tuning and evaluation read, batch and score its data); None where it has none.
    - `hf_suffixes`: the transformers head classes it reads and writes (their name endings), with
      `multi_label` telling apart the kinds that share one (sequence classification).
    - `metric`: the reference its scores follow.
    - `pipeline_tag`: the hub's tag for model cards; `serving`: the raw-strings signature of
      `biozoo export tfhub --model` (None: no such export).
    - `data_extensions`: the file extensions of its data splits; `logits_per`: what its network's
      logits score ("token", or "sequence" for one row per input); `sequence_length`: the default
      length its models are fine-tuned at (capped at the model's positions).

    Example:
        >>> kind = task_kind("token-classification")
        >>> kind.name, kind.model, kind.logits_per
        ('ner', 'a token classifier', 'token')
    """

    name: str
    model: str
    task_class: str | None
    adapter: str | None
    aliases: tuple = ()
    hf_suffixes: tuple = ()
    multi_label: bool | None = None
    metric: str = ""
    pipeline_tag: str | None = None
    serving: str | None = None
    data_extensions: tuple = (".tsv", ".txt")
    logits_per: str = "token"
    sequence_length: int = 128
    trains: bool = True  # `biozoo finetune KIND` exists

    @property
    def task_class_name(self):
        return self.task_class.rsplit(":", 1)[1] if self.task_class else None

    def load_task_class(self):
        """The class of its task models."""
        return _load(self.task_class, self)

    def load_adapter(self):
        """The class of its task adapter."""
        return _load(self.adapter, self)

    def article(self):
        """"a" or "an", for "an ner model", "a qa model"."""
        return "an" if self.name[0] in "aeiou" or self.name in ("ner", "re") else "a"


def _load(path, kind):
    if path is None:
        raise ValueError(f"task kind {kind.name!r} has no such part")
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


TASK_KINDS = {kind.name: kind for kind in (
    TaskKind("ner", "a token classifier", "biozoo.tasks.token_classifier:TokenClassifier",
             "biozoo.tasks.adapters.ner:NerAdapter", aliases=("token-classification",),
             hf_suffixes=("ForTokenClassification",), metric="entity-level P/R/F1, as conlleval counts them",
             pipeline_tag="token-classification", serving="ner"),
    TaskKind("re", "a sequence classifier", "biozoo.tasks.sequence_classifier:SequenceClassifier",
             "biozoo.tasks.adapters.relation:RelationAdapter", aliases=("classification", "text-classification"),
             hf_suffixes=("ForSequenceClassification",), multi_label=False,
             metric="micro P/R/F1 over the classes other than the negative one (ChemProt / DDI), and accuracy",
             pipeline_tag="text-classification", serving="classification", logits_per="sequence"),
    TaskKind("doc", "a multi-label sequence classifier", "biozoo.tasks.sequence_classifier:SequenceClassifier",
             "biozoo.tasks.adapters.document:DocumentAdapter", aliases=("multi-label",),
             hf_suffixes=("ForSequenceClassification",), multi_label=True,
             metric="HoC micro F1 (LinkBERT's) and per-abstract F1 (BLUE's)", pipeline_tag="text-classification",
             serving="classification", logits_per="sequence", sequence_length=512),
    TaskKind("qa", "a question answerer", "biozoo.tasks.question_answerer:QuestionAnswerer",
             "biozoo.tasks.adapters.qa:QuestionAnsweringAdapter", aliases=("question-answering",),
             hf_suffixes=("ForQuestionAnswering",), metric="the official SQuAD v1.1 / v2.0 EM and F1; BioASQ factoid",
             pipeline_tag="question-answering", serving="qa", data_extensions=(".json",), sequence_length=384),
    TaskKind("aioner", "an AIONER tagger", "biozoo.tasks.aioner:AionerTagger", "biozoo.tasks.adapters.aioner:AionerAdapter",
             metric="entity-level P/R/F1, as conlleval counts them", pipeline_tag="token-classification",
             trains=False),
    TaskKind("link", "a name encoder for entity linking", None, None,
             metric="accuracy@1 of gold mentions; end-to-end NER + concept id F1", pipeline_tag="feature-extraction",
             sequence_length=25),
)}


def task_kind(name):
    """The `TaskKind` of a name or alias; a KeyError listing the kinds for anything else."""
    if isinstance(name, TaskKind):
        return name
    for kind in TASK_KINDS.values():
        if name == kind.name or name in kind.aliases:
            return kind
    raise KeyError(f"unknown task kind {name!r}; choose one of {', '.join(TASK_KINDS)}")


def kind_of_hf_class(hf_class, multi_label=False):
    """The `TaskKind` of a transformers head class (None for an encoder or pretraining class)."""
    for kind in TASK_KINDS.values():
        if any(hf_class.endswith(suffix) for suffix in kind.hf_suffixes) and kind.multi_label in (None, multi_label):
            return kind
    return None


def trained_kinds():
    """The names `biozoo finetune` takes, in table order."""
    return tuple(kind.name for kind in TASK_KINDS.values() if kind.trains)


def kind_name(text):
    """The name of the task kind `text` names (its name or an alias): an argparse `type`."""
    try:
        return task_kind(text).name
    except KeyError:
        return text  # argparse's choices then say what is allowed
