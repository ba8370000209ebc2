"""ELECTRA encoder (BioM-ELECTRA discriminators and generators, BioM-BERT-Large)."""

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
class ElectraBackbone(FeaturesMixin, keras_hub.models.Backbone):
    """ELECTRA encoder: embeddings of size `embedding_dim`, projected to `hidden_dim` when
    they differ (generators), then BERT blocks. ELECTRA has no pooler, so the outputs are
    only `sequence_output` (KerasHub's ElectraBackbone adds an untrained one).

    Example:
        >>> backbone = biozoo.from_preset("biom_electra_base_discriminator")
        >>> backbone(inputs)["sequence_output"]
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        embedding_dim,
        intermediate_dim,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        dropout=0.1,
        max_sequence_length=512,
        num_segments=2,
        initializer_range=0.02,
        dtype=None,
        **kwargs,
    ):
        check_arguments(
            type(self).__name__, activation=activation,
            vocabulary_size=vocabulary_size, num_layers=num_layers, num_heads=num_heads, hidden_dim=hidden_dim,
            embedding_dim=embedding_dim, intermediate_dim=intermediate_dim,
            max_sequence_length=max_sequence_length, num_segments=num_segments,
        )
        init = initializer(initializer_range)
        self.token_embedding = ReversibleEmbedding(
            vocabulary_size, embedding_dim, embeddings_initializer=init, dtype=dtype, name="token_embedding"
        )
        self.position_embedding = PositionEmbedding(
            sequence_length=max_sequence_length, initializer=init, dtype=dtype, name="position_embedding"
        )
        self.segment_embedding = keras.layers.Embedding(
            num_segments, embedding_dim, embeddings_initializer=init, dtype=dtype, name="segment_embedding"
        )
        self.embeddings_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=dtype, name="embeddings_layer_norm"
        )
        self.embeddings_dropout = keras.layers.Dropout(dropout, dtype=dtype, name="embeddings_dropout")
        self.embeddings_projection = None
        if embedding_dim != hidden_dim:
            self.embeddings_projection = keras.layers.Dense(
                hidden_dim, kernel_initializer=init, dtype=dtype, name="embeddings_projection"
            )
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
        self.embedding_dim = embedding_dim
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.dropout = dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.initializer_range = initializer_range
        self.cls_token_index = 0

    def _forward(self, inputs, features=None, training=None):
        tokens = self.token_embedding(inputs["token_ids"])
        x = tokens + self.position_embedding(tokens) + self.segment_embedding(inputs["segment_ids"])
        x = self.embeddings_layer_norm(x)
        x = self.embeddings_dropout(x, training=training)
        if self.embeddings_projection is not None:
            x = self.embeddings_projection(x)
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
                "embedding_dim": self.embedding_dim,
                "intermediate_dim": self.intermediate_dim,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "dropout": self.dropout,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "initializer_range": self.initializer_range,
            }
        )
        return config
