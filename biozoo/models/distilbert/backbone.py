"""DistilBERT encoder (BioDistilBERT cased/uncased)."""

import keras
import keras_hub
from keras.layers import ReversibleEmbedding

from biozoo.models._common import (
    FeaturesMixin,
    PositionEmbedding,
    backbone_inputs,
    check_arguments,
    encoder_layers,
    initializer,
    run_layers,
)


@keras.saving.register_keras_serializable(package="biozoo")
class DistilBertBackbone(FeaturesMixin, keras_hub.models.Backbone):
    """DistilBERT encoder: token + position embeddings, no token types, no pooler.

    It accepts `segment_ids` like every biozoo backbone and ignores them, so the same
    preprocessing feeds every family.

    Example:
        >>> backbone = biozoo.from_preset("bio_distilbert_cased")
        >>> backbone(inputs)["sequence_output"]
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        dropout=0.1,
        max_sequence_length=512,
        initializer_range=0.02,
        dtype=None,
        **kwargs,
    ):
        check_arguments(
            type(self).__name__, activation=activation, heads=(hidden_dim, num_heads),
            vocabulary_size=vocabulary_size, num_layers=num_layers, num_heads=num_heads, hidden_dim=hidden_dim,
            intermediate_dim=intermediate_dim, max_sequence_length=max_sequence_length,
        )
        init = initializer(initializer_range)
        self.token_embedding = ReversibleEmbedding(
            vocabulary_size, hidden_dim, embeddings_initializer=init, dtype=dtype, name="token_embedding"
        )
        self.position_embedding = PositionEmbedding(
            sequence_length=max_sequence_length, initializer=init, dtype=dtype, name="position_embedding"
        )
        self.embeddings_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=dtype, name="embeddings_layer_norm"
        )
        self.embeddings_dropout = keras.layers.Dropout(dropout, dtype=dtype, name="embeddings_dropout")
        self.transformer_layers = encoder_layers(
            num_layers, num_heads, intermediate_dim, activation, layer_norm_epsilon, dropout,
            initializer_range, dtype,
        )
        inputs = backbone_inputs()
        super().__init__(inputs=inputs, outputs=self._forward(inputs), dtype=dtype, **kwargs)

        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.dropout = dropout
        self.max_sequence_length = max_sequence_length
        self.initializer_range = initializer_range
        self.cls_token_index = 0

    def _forward(self, inputs, features=None, training=None):
        tokens = self.token_embedding(inputs["token_ids"])
        x = tokens + self.position_embedding(tokens)
        x = self.embeddings_layer_norm(x)
        x = self.embeddings_dropout(x, training=training)
        if features is not None:
            features["hidden_states"].append(x)
        x = run_layers(self.transformer_layers, x, inputs["padding_mask"], features, training)
        return {"sequence_output": x}

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "num_layers": self.num_layers,
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "dropout": self.dropout,
                "max_sequence_length": self.max_sequence_length,
                "initializer_range": self.initializer_range,
            }
        )
        return config
