"""Megatron-LM `MegatronBERT.pt` state dicts and NeMo `.nemo` archives -> Keras presets
of the megatron_bert family (BioMegatron)."""

from __future__ import annotations

import argparse
import os
import pickle
import re
import tarfile
import tempfile

import yaml

from biozoo._io import check_output, read_json
from biozoo.convert.archives import extract_archive
from biozoo.convert.core import convert_tensors, wordpiece_tokenizer
from biozoo.errors import CheckpointError
from biozoo.models import get_family
from biozoo.models.megatron_bert.convert_megatron import megatron_table


def _flatten(tree, prefix=""):
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _flatten(value, name + ".")
        else:
            yield name, value


def load_state(path, name=None):
    """(flat {name: tensor}, checkpoint_version or None, Megatron-LM args as a dict) from a
    Megatron-LM / NeMo file. Errors name `name` (what the user gave, e.g. `x.nemo!model_weights.ckpt`)
    when given, else `path`."""
    name = name or path
    try:
        import torch
    except ImportError:
        raise CheckpointError(f"{name}: reading Megatron checkpoints needs PyTorch: pip install 'biozoo[torch]'.") from None

    try:
        # Megatron-LM stores its argparse Namespace beside the weights: plain data, allowed.
        with torch.serialization.safe_globals([argparse.Namespace]):
            state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(f"{name}: refused to load: objects other than tensors and plain data ({first}).") from None
    except Exception as error:  # junk bytes raise what torch's unpickler meets: KeyError, ValueError, ...
        raise CheckpointError(f"{name}: unreadable PyTorch checkpoint ({type(error).__name__}: {error}).") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{name}: expected a dict, found {type(state).__name__}.")
    version = state.get("checkpoint_version")
    args = vars(state["args"]) if isinstance(state.get("args"), argparse.Namespace) else {}
    if "model" in state and isinstance(state["model"], dict):
        state = {"model": state["model"]}
    elif "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    flat = {name: value for name, value in _flatten(state) if isinstance(value, torch.Tensor)}
    return flat, (None if version is None else float(version)), args


def _config_from_yaml(path, where=None):
    with open(path, encoding="utf-8") as f:
        return _megatron_keys(yaml.safe_load(f) or {}, where or path)


class _Unreadable(str):
    """A config value that is no number (the error it makes, raised only if no later config gives the key)."""


# HF's config key: the Megatron-LM / NeMo keys that give it, first found wins.
MEGATRON_KEYS = {
    "hidden_size": ("hidden_size",), "num_hidden_layers": ("num_layers", "num_hidden_layers"),
    "num_attention_heads": ("num_attention_heads",), "intermediate_size": ("ffn_hidden_size", "intermediate_size"),
    "max_position_embeddings": ("max_position_embeddings", "max_seq_length", "encoder_seq_length"),
    "layer_norm_eps": ("layernorm_epsilon", "layer_norm_eps"),
}
_INTERPOLATION = re.compile(r"\$\{\.*([\w.]+)\}")  # OmegaConf's ${key} / ${.key}, as NeMo configs keep them


def _megatron_keys(config, where="the checkpoint's args"):
    """Megatron-LM / NeMo names (num_layers, ffn_hidden_size, layernorm_epsilon...) -> HF's, as
    numbers (YAML 1.1 reads NeMo's `1e-5` as a string); `${key}` read from the same config."""
    sections = [config, config.get("language_model", {}) or {}, (config.get("language_model") or {}).get("config", {}) or {}]
    merged = {}
    for section in sections:
        merged.update({k: v for k, v in section.items() if not isinstance(v, dict)})
    out = {}
    for ours, keys in MEGATRON_KEYS.items():
        for key in keys:
            if merged.get(key) is not None:
                try:
                    out[ours] = _number(merged, key, float if ours == "layer_norm_eps" else int, where)
                except CheckpointError as error:
                    out[ours] = _Unreadable(str(error))
                break
    if merged.get("openai_gelu"):
        out["hidden_act"] = "gelu_new"
    return out


def _number(merged, key, kind, where):
    value, seen = merged[key], [key]
    while isinstance(value, str) and (match := _INTERPOLATION.fullmatch(value.strip())):
        name = match.group(1).rsplit(".", 1)[-1]
        if name in seen or merged.get(name) is None:
            raise CheckpointError(f"{where}: {key}: {merged[key]!r} refers to {name!r}, which the config does not "
                                  "give; pass a config with the value (--config)")
        value = merged[name]
        seen.append(name)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise CheckpointError(f"{where}: {key}: {merged[key]!r} is not a number") from None
    if kind is float:
        return number
    if not number.is_integer():
        raise CheckpointError(f"{where}: {key}: {merged[key]!r} is not a whole number")
    return int(number)


def infer_config(flat, num_heads=None):
    shapes = {re.sub(r"^(model|bert_model)\.(language_model\.)?", "", k): tuple(v.shape) for k, v in flat.items()}

    def shape(suffix):
        for name, value in shapes.items():
            if name.endswith(suffix):
                return value
        raise CheckpointError(f"no '{suffix}' tensor; is this a Megatron BERT checkpoint?")

    vocab, hidden = shape("embedding.word_embeddings.weight")
    layers = 1 + max(int(m.group(1)) for n in shapes if (m := re.search(r"layers\.(\d+)\.", n)))
    return {
        "model_type": "megatron-bert",
        "vocab_size": vocab,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": num_heads or max(1, hidden // 64),
        "intermediate_size": shape("mlp.dense_h_to_4h.weight")[0],
        "max_position_embeddings": shape("embedding.position_embeddings.weight")[0],
        "type_vocab_size": shape("embedding.tokentype_embeddings.weight")[0],
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-5,  # Megatron-LM's default layernorm_epsilon
    }


def convert_megatron(path, out_dir, config=None, vocab=None, num_heads=None, lowercase=None, checkpoint_version=None,
                     provenance=None, progress=True, overwrite=False):
    """Convert a MegatronBERT.pt / .nemo checkpoint into a Keras preset at `out_dir` (an earlier
    biozoo output there is replaced only with `overwrite`)."""
    check_output(out_dir, overwrite, [path])
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no Megatron checkpoint at {path} (a MegatronBERT.pt state dict or a .nemo archive)")
    if not tarfile.is_tarfile(path):
        return _convert_megatron(path, None, out_dir, config, vocab, num_heads, lowercase, checkpoint_version,
                                 provenance, progress, overwrite)
    # a .nemo archive: unpacked into a scratch folder that goes whatever happens (a refused archive included)
    with tempfile.TemporaryDirectory(prefix="biozoo-nemo-") as workdir:
        extract_archive(path, workdir)
        return _convert_megatron(path, workdir, out_dir, config, vocab, num_heads, lowercase, checkpoint_version,
                                 provenance, progress, overwrite)


def _convert_megatron(path, workdir, out_dir, config, vocab, num_heads, lowercase, checkpoint_version, provenance,
                      progress, overwrite):
    weights, shown, yaml_config, found_vocab = path, path, None, None
    if workdir:
        files = [os.path.join(d, f) for d, _, fs in os.walk(workdir) for f in fs]
        weights = next((f for f in files if os.path.basename(f) == "model_weights.ckpt"), None)
        if weights is None:
            raise CheckpointError(f"{path}: no model_weights.ckpt inside the .nemo archive.")
        shown = f"{path}!{os.path.relpath(weights, workdir).replace(os.sep, '/')}"
        yaml_config = next((f for f in files if f.endswith("model_config.yaml")), None)
        found_vocab = next((f for f in files if re.search(r"vocab\.txt$", f)), None)
    else:
        directory = os.path.dirname(os.path.abspath(path))
        candidate = os.path.join(directory, "vocab.txt")
        found_vocab = candidate if os.path.exists(candidate) else None
    flat, version, args = load_state(weights, shown)
    if checkpoint_version is not None:
        version = float(checkpoint_version)
    elif version is None:
        version = 3.0 if workdir else 0.0  # NeMo's Megatron BERT: per-head (heads, 3, dim) layout
    hf_config = infer_config(flat, num_heads)
    hf_config.update(_megatron_keys(args, f"{path} (its saved args)"))
    if yaml_config:
        hf_config.update(_config_from_yaml(yaml_config, f"{path} (model_config.yaml)"))
    if config:
        hf_config.update(_config_from_yaml(config) if config.endswith((".yaml", ".yml")) else read_json(config, "config", allow_nan=False))
    unreadable = [value for value in hf_config.values() if isinstance(value, _Unreadable)]
    if unreadable:
        raise CheckpointError(unreadable[0])
    if num_heads:
        hf_config["num_attention_heads"] = num_heads
    hf_config["model_type"] = "megatron-bert"
    family = get_family("megatron_bert")
    vocab = vocab or found_vocab
    if vocab is None:
        raise CheckpointError(f"{path}: no vocab.txt found; pass --vocab.")
    tokenizer = wordpiece_tokenizer(family, vocab, lowercase)
    record = {"format": "megatron", "source": os.path.abspath(path), "checkpoint_version": version,
              "label": os.path.basename(path)}
    record.update(provenance or {})
    names = list(flat)
    tensors = ((n, flat[n].float().numpy()) for n in names)
    return convert_tensors(family, hf_config, megatron_table(version), names, tensors, tokenizer, out_dir, path,
                           record, progress, overwrite=overwrite,
                           config_source=f"{path} (the config inferred from its tensors' shapes)")
