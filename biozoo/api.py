"""`biozoo.from_preset`: a Keras backbone, with weights, from any handle."""

from __future__ import annotations

import os

import keras_hub

import biozoo.models  # noqa: F401  (registers the backbones and tokenizers with Keras)
from biozoo import presets, registry
from biozoo.convert.hf import read_hf_config
from biozoo.convert.readers import open_checkpoint
from biozoo.models import family_for_model_type, get_family
from biozoo.tokenizers.base import Tokenizer as TokenizerBase


class _AnyBiozooTokenizer(type):
    # isinstance(t, biozoo.Tokenizer) holds for every biozoo tokenizer (they subclass TokenizerBase)
    def __instancecheck__(cls, instance):
        return isinstance(instance, TokenizerBase)

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, TokenizerBase)


class Tokenizer(metaclass=_AnyBiozooTokenizer):
    """The tokenizer of a checkpoint, loaded by name; its ids equal the HF tokenizer's.

    `from_preset` takes every handle `biozoo.from_preset` takes (registry name,
    `hf://org/repo[@rev]`, local HF or Keras preset directory, `gs://...`) and returns the
    family's KerasHub tokenizer. Called on a list of strings, it returns token ids without
    special tokens.

    Example:
        >>> tokenizer = biozoo.Tokenizer.from_preset("biobert_v1_1")
        >>> tokenizer(["BRCA1 mutations in breast cancer."])
    """

    @classmethod
    def from_preset(cls, preset, config_file="tokenizer.json", **kwargs):
        preset_dir = presets.resolve_tokenizer_preset(preset)
        with presets.loading(preset_dir):
            return TokenizerBase.from_preset(preset_dir, config_file=config_file, **kwargs)


def from_preset(handle, load_weights=True, source="hf", trust_unverified=False, **kwargs):
    """The backbone of a checkpoint, by registry name or location.

    `handle` is a registry name (`"bioformer_8l"`; see `biozoo.list_presets()`),
    `"hf://org/repo[@revision]"`, a local HF model directory, a local Keras preset directory,
    or a `gs://` directory. HF checkpoints are converted once and cached. With
    `load_weights=False` a registry name builds the architecture from the registry config
    alone, downloading nothing. `source="tf1"` or `"gluonnlp"` converts a registry checkpoint
    from the original archive its paper released instead of its HF repo; an archive the
    registry records no sha256 for is refused unless `trust_unverified=True`.

    The backbone takes `{"token_ids", "segment_ids", "padding_mask"}` (int32 [batch, seq])
    and returns `{"sequence_output": [batch, seq, hidden]}`, plus `"pooled_output"`
    [batch, hidden] for families that define one.

    Example:
        >>> backbone = biozoo.from_preset("bioformer_8l")
        >>> out = backbone({"token_ids": ids, "segment_ids": segments, "padding_mask": mask})
    """
    kind, info = presets.parse_handle(handle)
    if source != "hf":
        if kind != "registry":
            raise ValueError(f"source={source!r} takes a registry name, not {handle!r}")
        preset_dir = presets.resolve_archive_preset(info["name"], source, trust_unverified)
        with presets.loading(preset_dir):
            return keras_hub.models.Backbone.from_preset(preset_dir, load_weights=load_weights, **kwargs)
    if not load_weights and kind == "registry":
        return build_from_registry(info["name"], **kwargs)
    if not load_weights and kind == "hf_dir":
        return _build_from_hf_config(info["path"], **kwargs)
    preset_dir = presets.resolve_preset(handle)
    with presets.loading(preset_dir):
        return keras_hub.models.Backbone.from_preset(preset_dir, load_weights=load_weights, **kwargs)


def build_from_registry(name, **kwargs):
    """The architecture of a registry entry with freshly initialised weights."""
    entry = registry.get_entry(name)
    family = get_family(entry["family"])
    config = family.backbone_arguments(entry["config"], use_pooler=entry["pooler"],
                                       source=f"the registry entry {name}'s config")
    config.update(kwargs)
    return family.backbone_cls(**config)


def _build_from_hf_config(directory, **kwargs):
    config = read_hf_config(directory)
    family = family_for_model_type(config["model_type"], os.path.join(directory, "config.json"))
    arguments = family.backbone_arguments(config, open_checkpoint(directory).names(),
                                          source=os.path.join(directory, "config.json"))
    arguments.update(kwargs)
    return family.backbone_cls(**arguments)
