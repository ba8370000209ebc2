"""A model family: its backbone class, tokenizer class and converter mappings, as data."""

from __future__ import annotations

import dataclasses
from typing import Callable


@dataclasses.dataclass(frozen=True)
class Family:
    """Everything biozoo needs to know about one architecture family.

    - `config_from_hf(hf_config, use_pooler)` turns a HuggingFace config.json into the
      backbone's constructor arguments.
    - `hf_table` maps HF state-dict names (any `*Model`, `*ForMaskedLM`, `*ForPreTraining`,
      `*ForQuestionAnswering` class of the family) to the backbone's variables and heads.
    - `use_pooler(hf_config, targets)` tells from the checkpoint whether it has a pooler.
    - `heads_config(hf_config)` describes the converted heads (activation, epsilon), so tasks
      can rebuild them.
    """

    name: str
    model_types: tuple
    backbone_cls: type
    config_from_hf: Callable
    hf_table: object
    use_pooler: Callable  # (hf_config, Keras targets the checkpoint's tensors map to) -> bool
    heads_config: Callable
    tokenizer_cls: type
    config_to_hf: Callable = None  # backbone config -> HF config.json (export)
    extra: dict = dataclasses.field(default_factory=dict)  # other source-format tables (tf1, gluon...)


def hf_get(config, key, default):
    value = config.get(key, default)
    return default if value is None else value


def has_tensor(target):
    """`use_pooler` for families whose pooler is a dense layer: is `target` in the checkpoint?"""
    return lambda config, targets: target in targets


def never(config, targets):
    return False
