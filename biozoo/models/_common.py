"""Pieces shared by the family backbones: activations, initialisers, inputs, the encoder stack."""

from __future__ import annotations

import keras
import keras_hub

from biozoo._keras_internals import gelu_approximate

# HF `hidden_act` names -> Keras activations. HF "gelu" is the exact erf form; KerasHub's
# BERT/ALBERT/ELECTRA backbones hard-code the tanh form, which drifts by ~2e-3 on real weights.
ACTIVATIONS = {
    "gelu": "gelu",  # keras.activations.gelu(approximate=False)
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
        raise ValueError(
            f"Unsupported activation '{name}'. Supported: {', '.join(sorted(ACTIVATIONS))}."
        )
    return keras.activations.get(ACTIVATIONS[name])


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
