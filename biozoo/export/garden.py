"""Keras preset -> TF Model Garden encoder checkpoint (`BertEncoderV2` / `AlbertEncoder`).

The output directory holds `encoder.index` and `encoder.data-*` (the checkpoint prefix
`encoder`, as `tf.train.Checkpoint(encoder=...).write` writes it: what Model Garden's tasks
restore from `init_checkpoint`) and `garden_encoder.json` with the class and the constructor
arguments that rebuild the encoder.

Example:
    >>> export_garden("bioformer_8l", "out/garden")
    >>> spec = json.load(open("out/garden/garden_encoder.json"))
    >>> encoder = getattr(official.nlp.modeling.networks, spec["class"])(**spec["kwargs"])
    >>> tf.train.Checkpoint(encoder=encoder).read(spec["checkpoint"]).expect_partial()
"""

from __future__ import annotations

import os
import re

import numpy as np

from biozoo import api
from biozoo._io import atomic_directory, atomic_write_json, check_output, read_json
from biozoo.errors import BiozooError
from biozoo.models import FAMILIES, family_for_backbone

# Model Garden weight name (without the encoder's scope) -> biozoo variable path. `{layer}`
# is the family's block prefix; alternatives are tried in order.
GARDEN_NAMES = [
    (r"word_embeddings/embeddings", ["token_embedding/embeddings"]),
    (r"position_embedding/embeddings", ["position_embedding/embeddings"]),
    (r"type_embeddings/embeddings", ["segment_embedding/embeddings"]),
    (r"embeddings/layer_norm/(gamma|beta)", [r"embeddings_layer_norm/\1"]),
    (r"embedding_projection/(kernel|bias)", [r"embedding_projection/\1", r"embeddings_projection/\1"]),
    (r"transformer/(?:layer_(\d+)/)?self_attention/(query|key|value|attention_output)/(kernel|bias)",
     [r"{layer}/self_attention_layer/\2/\3"]),
    (r"transformer/(?:layer_(\d+)/)?self_attention_layer_norm/(gamma|beta)", [r"{layer}/self_attention_layer_norm/\2"]),
    (r"transformer/(?:layer_(\d+)/)?intermediate/(kernel|bias)", [r"{layer}/feedforward_intermediate_dense/\2"]),
    (r"transformer/(?:layer_(\d+)/)?output/(kernel|bias)", [r"{layer}/feedforward_output_dense/\2"]),
    (r"transformer/(?:layer_(\d+)/)?output_layer_norm/(gamma|beta)", [r"{layer}/feedforward_layer_norm/\2"]),
    (r"pooler_transform/(kernel|bias)", [r"pooled_dense/\1"]),
]

# Model Garden hard-codes this epsilon in both encoders.
GARDEN_EPSILON = 1e-12
GARDEN_ACTIVATIONS = {"gelu": "gelu", "gelu_python": "gelu", "gelu_new": "Text>gelu", "relu": "relu"}


def _encoder_spec(family, config):
    """(class name, kwargs, block prefix) for a biozoo backbone config, or a clear error."""
    if family.garden_encoder is None:
        supported = ", ".join(name for name, f in FAMILIES.items() if f.garden_encoder)
        raise BiozooError(
            f"Model Garden export supports the {supported} families, not "
            f"{family.name}: Garden's BertEncoderV2 has no pre-LayerNorm without an embedding LayerNorm "
            "(megatron_bert) and its MobileBERTEncoder is a different layer stack. Use `biozoo export "
            "hub` or `biozoo export hf` for this model."
        )
    eps = config["layer_norm_epsilon"]
    if abs(eps - GARDEN_EPSILON) > 1e-15:
        raise BiozooError(f"layer_norm_epsilon is {eps}; Model Garden's encoders fix it at {GARDEN_EPSILON}.")
    activation = GARDEN_ACTIVATIONS.get(config["activation"])
    if activation is None:
        raise BiozooError(f"activation {config['activation']!r} has no Model Garden name ({sorted(GARDEN_ACTIVATIONS)}).")
    common = {
        "vocab_size": config["vocabulary_size"],
        "hidden_size": config["hidden_dim"],
        "num_layers": config["num_layers"],
        "num_attention_heads": config["num_heads"],
        "max_sequence_length": config["max_sequence_length"],
        "type_vocab_size": config.get("num_segments", 1),
    }
    if family.garden_encoder == "AlbertEncoder":
        if config["num_groups"] != 1 or config["num_inner_repetitions"] != 1:
            raise BiozooError("Model Garden's AlbertEncoder shares one layer; this ALBERT has "
                              f"{config['num_groups']} groups x {config['num_inner_repetitions']} inner layers.")
        kwargs = dict(common, embedding_width=config["embedding_dim"], intermediate_size=config["intermediate_dim"],
                      activation=activation, dropout_rate=config["dropout"], attention_dropout_rate=config["dropout"],
                      dict_outputs=True)
        return family.garden_encoder, kwargs, "group_0_inner_layer_0"
    embedding = config.get("embedding_dim") or config["hidden_dim"]
    kwargs = dict(common, inner_dim=config["intermediate_dim"], inner_activation=activation,
                  output_dropout=config["dropout"], attention_dropout=config["dropout"],
                  embedding_width=None if embedding == config["hidden_dim"] else embedding)
    return family.garden_encoder, kwargs, "transformer_layer_{n}"


def _source_path(garden_name, layer_prefix, ours):
    for pattern, templates in GARDEN_NAMES:
        match = re.fullmatch(pattern, garden_name)
        if not match:
            continue
        for template in templates:
            if "{layer}" in template:
                template = template.replace("{layer}", layer_prefix.format(n=match.group(1)))
            path = match.expand(template)
            if path in ours:
                return path
        return None
    raise BiozooError(f"Model Garden weight '{garden_name}' is not in the biozoo -> Garden table.")


def _strip_scope(name, scope):
    name = name.split(":")[0]
    return name[len(scope) + 1 :] if name.startswith(scope + "/") else name


def build_garden_encoder(class_name, kwargs):
    try:
        from official.nlp.modeling import networks
    except ImportError as error:
        raise BiozooError("Model Garden export needs tf-models-official: pip install 'biozoo[garden]'.") from error
    encoder = getattr(networks, class_name)(**kwargs)
    dummy = np.zeros((1, 2), np.int32)
    encoder({"input_word_ids": dummy, "input_mask": np.ones_like(dummy), "input_type_ids": dummy})
    return encoder


def export_garden(preset, out_dir, overwrite=False):
    """Write a Model Garden encoder checkpoint equal to `preset`'s backbone (an earlier biozoo
    output at `out_dir` is replaced only with `overwrite`)."""
    import tensorflow as tf

    check_output(out_dir, overwrite, [preset])
    backbone = api.from_preset(preset)
    family = family_for_backbone(backbone)
    class_name, kwargs, layer_prefix = _encoder_spec(family, backbone.get_config())
    encoder = build_garden_encoder(class_name, kwargs)
    ours = {v.path: v for v in backbone.weights}
    used, zeros = set(), {}
    for weight in encoder.weights:
        name = _strip_scope(weight.name, encoder.name)
        path = _source_path(name, layer_prefix, ours)
        if path is None:
            reason = family.garden_absent.get(name)
            if reason is None:
                raise BiozooError(f"no biozoo weight for Model Garden's '{name}' ({family.name}).")
            weight.assign(np.zeros(weight.shape, np.float32))
            zeros[name] = reason
            continue
        value = np.asarray(ours[path].numpy(), np.float32)
        if tuple(value.shape) != tuple(weight.shape):
            raise BiozooError(f"'{path}' has shape {value.shape}; Model Garden's '{name}' needs {tuple(weight.shape)}.")
        weight.assign(value)
        used.add(path)
    unused = sorted(set(ours) - used)
    if unused:
        raise BiozooError(f"weights with no Model Garden place (nothing written): {unused}")
    with atomic_directory(out_dir, overwrite, [preset]) as tmp:
        checkpoint = tf.train.Checkpoint(encoder=encoder).write(os.path.join(tmp, "encoder"))
        pooled = "pooler" if "pooler_transform/kernel" not in zeros else "zero pooler: use sequence_output[:, 0]"
        atomic_write_json(os.path.join(tmp, "garden_encoder.json"), {
            "class": class_name,
            "kwargs": kwargs,
            "checkpoint": os.path.basename(checkpoint),
            "checkpoint_key": "encoder",
            "source": str(preset),
            "zero_weights": zeros,
            "pooled_output": pooled,
            "note": "inner_activation 'gelu' is exact GELU as BertEncoderV2 resolves it "
                    "(tf_keras.activations.get); Model Garden's EncoderConfig(hidden_activation='gelu') "
                    "builds the tanh approximation instead, so pass these kwargs directly.",
        })
    return out_dir


def load_garden_encoder(directory):
    """Rebuild and restore an exported encoder (needs tf-models-official)."""
    import tensorflow as tf

    spec = read_json(os.path.join(directory, "garden_encoder.json"), "Model Garden encoder spec")
    encoder = build_garden_encoder(spec["class"], spec["kwargs"])
    status = tf.train.Checkpoint(encoder=encoder).read(os.path.join(directory, spec["checkpoint"]))
    status.assert_existing_objects_matched()
    return encoder
