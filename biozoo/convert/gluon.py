"""GluonNLP 1.0 ELECTRA `.params` (legacy MXNet list or MXNet 2 npz) -> Keras presets.

Read without mxnet (`mxnet_params`); `model.yml` and `vocab.json` beside the parameters
give the configuration and the vocabulary. Sizes are checked against the tensor shapes.
"""

from __future__ import annotations

import os
import re

from biozoo._io import check_output
from biozoo.convert.core import convert_tensors, wordpiece_tokenizer
from biozoo.convert.mxnet_params import iter_params, param_shapes, read_gluon_config, read_gluon_vocab
from biozoo.convert.sniff import describe
from biozoo.errors import CheckpointError
from biozoo.models import get_family
from biozoo.models.electra.convert_gluon import ACTIVATIONS, DISCRIMINATOR_TABLE, GENERATOR_TABLE


def _find(directory, names):
    for name in names:
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    candidates = [f for f in sorted(os.listdir(directory)) if any(re.fullmatch(n.replace("*", ".*"), f) for n in names)]
    return os.path.join(directory, candidates[0]) if candidates else None


# The head only each part has: a file holding the other's is the other part.
PART_HEADS = {"discriminator": "rtd_encoder.", "generator": "mlm_decoder."}


def gluon_config(shapes, model, part, num_heads, where="the parameters"):
    """An HF-style ELECTRA config from the parameter shapes and model.yml's MODEL section
    (`where`: the file, for errors)."""
    def find(suffix):
        for name, shape in shapes.items():
            if name.endswith(suffix):
                return shape
        return None

    def require(suffix):
        shape = find(suffix)
        if shape is None:
            raise CheckpointError(f"{where}: no '...{suffix}' parameter; not a complete GluonNLP ELECTRA model")
        return shape

    for other, head in PART_HEADS.items():
        held = sorted(n for n in shapes if n.startswith(head))
        if other != part and held:
            raise CheckpointError(f"{where}: holds the {other}'s head ({held[0]}, ...), so it is the {other}, not "
                                  f"the {part}: convert it with --part {other}")
    qkv = find("all_encoder_layers.0.attn_qkv.weight")
    embed = find("word_embed.weight") or find("mlm_decoder.3.weight")
    if qkv is None or embed is None:
        raise CheckpointError(f"{where}: not a GluonNLP ELECTRA model: no attn_qkv or word embedding parameters")
    units = qkv[1]
    layers = 1 + max(int(m.group(1)) for n in shapes if (m := re.search(r"all_encoder_layers\.(\d+)\.", n)))
    heads = num_heads
    if heads is None and model:
        if model.get("units") == units:
            heads = model.get("num_heads")
        elif part == "generator" and model.get("generator_units_scale"):
            heads = round(model["num_heads"] * model["generator_units_scale"])
    heads = heads or max(1, units // 64)
    activation = str((model or {}).get("activation", "gelu")).lower()
    if activation not in ACTIVATIONS:
        raise CheckpointError(f"model.yml: activation '{activation}' is not supported.")
    return {
        "model_type": "electra",
        "vocab_size": embed[0],
        "embedding_size": embed[1],
        "hidden_size": units,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": require("all_encoder_layers.0.ffn.ffn_1.weight")[0],
        "max_position_embeddings": require("token_pos_embed._embed.weight")[0],
        "type_vocab_size": require("token_type_embed.weight")[0],
        "hidden_act": ACTIVATIONS[activation],
        "layer_norm_eps": float((model or {}).get("layer_norm_eps", 1e-12)),
    }


def convert_gluon(path, out_dir, config=None, vocab=None, part="discriminator", num_heads=None, lowercase=None,
                  provenance=None, progress=True, overwrite=False):
    """Convert a GluonNLP ELECTRA parameter file to a Keras preset at `out_dir` (an earlier
    biozoo output there is replaced only with `overwrite`)."""
    check_output(out_dir, overwrite, [path])
    if os.path.isdir(path):
        found = _find(path, ["gen_model.params" if part == "generator" else "disc_model.params", "model.params",
                             "*.params"])
        if found is None:
            raise CheckpointError(f"{path}: no .params file.")
        path = found

    found_kind = describe(path)
    if "GluonNLP" not in found_kind and "npz" not in found_kind.lower() and "unknown format" not in found_kind:
        raise CheckpointError(f"{path}: {found_kind}; expected a GluonNLP ELECTRA .params file (MXNet NDArray list "
                              "or npz).")
    directory = os.path.dirname(os.path.abspath(path))
    family = get_family("electra")
    config_path = config or _find(directory, ["model.yml", "model-*.yml", "*.yml"])
    model = read_gluon_config(config_path) if config_path else None
    table = GENERATOR_TABLE if part == "generator" else DISCRIMINATOR_TABLE
    all_shapes = param_shapes(path)  # headers only
    shapes = {table.normalize(n): s for n, s in all_shapes.items() if table.lookup(n) not in (None, "ignore")}
    names = list(all_shapes)
    hf_config = gluon_config(shapes, model, part, num_heads, path)
    vocab_path = vocab or _find(directory, ["vocab.json", "vocab-*.json", "vocab.txt"])
    if vocab_path is None:
        raise CheckpointError(f"{directory}: no vocab.json beside the parameters; pass --vocab.")
    if vocab_path.endswith(".json"):
        lowercase = True if lowercase is None else lowercase  # GluonNLP's ELECTRA tokenizer lower-cases
        tokenizer = wordpiece_tokenizer(family, read_gluon_vocab(vocab_path), lowercase, where=vocab_path)
    else:
        tokenizer = wordpiece_tokenizer(family, vocab_path, lowercase)
    record = {"format": "gluon", "source": os.path.abspath(path), "part": part, "label": os.path.basename(path)}
    record.update(provenance or {})
    return convert_tensors(family, hf_config, table, names, iter_params(path), tokenizer, out_dir, path, record,
                           progress, overwrite=overwrite,
                           config_source=f"{path} (the config inferred from its tensors' shapes)")

