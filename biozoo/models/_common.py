"""Pieces shared by the family backbones: activations, initialisers, inputs, the encoder stack."""

from __future__ import annotations

import numbers

import keras
import keras_hub

from biozoo._keras_internals import gelu_approximate
from biozoo.errors import CheckpointError

# HF `hidden_act` names -> Keras activations. HF "gelu" is the exact erf form; KerasHub's
# BERT/ALBERT/ELECTRA backbones hard-code the tanh form, which drifts by ~2e-3 on real weights.
ACTIVATIONS = {
    "gelu": "gelu",  # keras.activations.gelu(approximate=False)
    "gelu_python": "gelu",  # transformers' Python spelling of the same exact erf GELU
    "gelu_new": gelu_approximate,
    "gelu_pytorch_tanh": gelu_approximate,
    "gelu_fast": gelu_approximate,
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
}


def get_activation(name):
    """The Keras activation for an HF `hidden_act` name (a string kept in configs)."""
    if name not in ACTIVATIONS:
        raise ValueError(f"Unsupported activation {name!r}. Supported: {', '.join(sorted(ACTIVATIONS))}.")
    return keras.activations.get(ACTIVATIONS[name])


def _is_count(value, least):
    """Whether `value` is a whole number (not a bool) of at least `least`."""
    return not isinstance(value, bool) and isinstance(value, numbers.Integral) and value >= least


def check_arguments(owner, activation=None, heads=None, **sizes):
    """Refuse, naming the argument and its value, a backbone's size that is not a whole number of at
    least 1 (`num_layers`: 0), an activation biozoo cannot build, or, with `heads` (hidden_dim,
    num_heads), a hidden size that is not a multiple of the number of heads (where transformers
    refuses it too)."""
    for name, value in sizes.items():
        least = 0 if name == "num_layers" else 1
        if not _is_count(value, least):
            raise ValueError(f"{owner}: {name}={value!r}; it must be a whole number of at least {least}.")
    if activation is not None and activation not in ACTIVATIONS:
        raise ValueError(f"{owner}: activation={activation!r} is not supported; supported: "
                         f"{', '.join(sorted(ACTIVATIONS))}.")
    if heads is not None and heads[0] % heads[1]:
        raise ValueError(f"{owner}: hidden_dim={heads[0]} is not a multiple of num_heads={heads[1]}.")


def check_hf_config(config, source, sizes, activation_key="hidden_act", heads=None):
    """Refuse, naming `source` (where the config came from: a config.json path), the key and its
    value, an HF config whose sizes (`sizes`: the keys present that must be whole numbers of at least 1,
    the number of layers 0) are not, whose activation biozoo cannot build, or, with `heads`
    (the hidden size key, the heads key), whose hidden size is not a multiple of the number of heads."""
    for key in sizes:
        value = config.get(key)
        least = 0 if key in ("num_hidden_layers", "n_layers") else 1
        if value is not None and not _is_count(value, least):
            raise CheckpointError(f"{source}: {key} is {value!r}; it must be a whole number of at least {least}.")
    act = config.get(activation_key)
    if act is not None and act not in ACTIVATIONS:
        raise CheckpointError(f"{source}: {activation_key} {act!r} is not supported; supported: "
                              f"{', '.join(sorted(ACTIVATIONS))}.")
    if heads is not None:
        hidden, count = (config.get(key) for key in heads)
        if hidden is not None and count is not None and hidden % count:
            raise CheckpointError(f"{source}: {heads[0]} {hidden} is not a multiple of {heads[1]} {count} "
                                  "(transformers refuses it too).")


@keras.saving.register_keras_serializable(package="biozoo")
class PositionEmbedding(keras_hub.layers.PositionEmbedding):
    """KerasHub's PositionEmbedding, refusing inputs longer than its positions with an error that
    names both (KerasHub's fails inside a slice, with each backend's own message). Checked where the
    length is known when the layer is called (eager, jit traces); a length unknown then (None) passes.
    The class keeps KerasHub's name: weights files key a model's layers by it."""

    def call(self, inputs, start_index=0, positions=None):
        length = inputs.shape[-2]
        if positions is None and isinstance(length, int) and length > self.sequence_length:
            raise ValueError(f"{self.name}: the inputs have {length} positions, more than this model's "
                             f"max_sequence_length={self.sequence_length}: truncate or split them to at most "
                             f"{self.sequence_length} tokens.")
        return super().call(inputs, start_index=start_index, positions=positions)


def initializer(stddev):
    return keras.initializers.TruncatedNormal(stddev=stddev)


def backbone_inputs():
    """The three int32 [batch, seq] inputs every biozoo backbone takes."""
    return {
        "token_ids": keras.Input(shape=(None,), dtype="int32", name="token_ids"),
        "segment_ids": keras.Input(shape=(None,), dtype="int32", name="segment_ids"),
        "padding_mask": keras.Input(shape=(None,), dtype="int32", name="padding_mask"),
    }


def encoder_layers(
    num_layers,
    num_heads,
    intermediate_dim,
    activation,
    layer_norm_epsilon,
    dropout,
    initializer_range,
    dtype,
    normalize_first=False,
    name="transformer_layer",
):
    """KerasHub TransformerEncoder blocks with the checkpoint's activation and epsilon."""
    return [
        keras_hub.layers.TransformerEncoder(
            num_heads=num_heads,
            intermediate_dim=intermediate_dim,
            activation=get_activation(activation),
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            kernel_initializer=initializer(initializer_range),
            normalize_first=normalize_first,
            dtype=dtype,
            name=f"{name}_{i}",
        )
        for i in range(num_layers)
    ]


def run_layers(layers, x, padding_mask, features, training=None):
    """Apply encoder blocks in order; record hidden states / attention maps in `features`."""
    want_attention = features is not None and "attentions" in features
    for layer in layers:
        if want_attention:
            x, scores = layer(
                x, padding_mask=padding_mask, return_attention_scores=True, training=training
            )
            features["attentions"].append(scores)
        else:
            x = layer(x, padding_mask=padding_mask, training=training)
        if features is not None:
            features["hidden_states"].append(x)
    return x


class FeaturesMixin:
    """`features(inputs)`: sequence output plus every hidden state and attention map.

    Distillation (TinyBERT, CompactBioBERT) needs the intermediate tensors; the Keras
    functional graph only exposes the final outputs, so the same layers are re-applied.
    Subclasses implement `_forward(inputs, features, training)`.
    """

    def features(self, inputs, attentions=False, training=None):
        feats = {"hidden_states": []}
        if attentions:
            feats["attentions"] = []
        outputs = self._forward(inputs, feats, training=training)
        outputs.update(feats)
        return outputs
