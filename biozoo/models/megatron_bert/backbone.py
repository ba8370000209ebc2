"""Megatron-BERT encoder (BioMegatron 345m): pre-LayerNorm blocks."""

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
class MegatronBertBackbone(FeaturesMixin, keras_hub.models.Backbone):
    """Megatron-BERT: like BERT but pre-LayerNorm. The embeddings have no LayerNorm, each
    block normalises its input before attention and before the MLP, and a final LayerNorm
    follows the last block.

    Example:
        >>> backbone = biozoo.from_preset("biomegatron_345m_uncased")
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
        num_segments=2,
        use_pooler=True,
        initializer_range=0.02,
        dtype=None,
        **kwargs,
    ):
        check_arguments(
            type(self).__name__, activation=activation, heads=(hidden_dim, num_heads),
            vocabulary_size=vocabulary_size, num_layers=num_layers, num_heads=num_heads, hidden_dim=hidden_dim,
            intermediate_dim=intermediate_dim, max_sequence_length=max_sequence_length,
            num_segments=num_segments,
        )
        init = initializer(initializer_range)
        self.token_embedding = ReversibleEmbedding(
            vocabulary_size, hidden_dim, embeddings_initializer=init, dtype=dtype, name="token_embedding"
        )
        self.position_embedding = PositionEmbedding(
            sequence_length=max_sequence_length, initializer=init, dtype=dtype, name="position_embedding"
        )
        self.segment_embedding = keras.layers.Embedding(
            num_segments, hidden_dim, embeddings_initializer=init, dtype=dtype, name="segment_embedding"
        )
        self.embeddings_dropout = keras.layers.Dropout(dropout, dtype=dtype, name="embeddings_dropout")
        self.transformer_layers = encoder_layers(
            num_layers, num_heads, intermediate_dim, activation, layer_norm_epsilon, dropout,
            initializer_range, dtype, normalize_first=True,
        )
        self.final_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=dtype, name="final_layer_norm"
        )
        self.pooled_dense = None
        if use_pooler:
            self.pooled_dense = keras.layers.Dense(
                hidden_dim, activation="tanh", kernel_initializer=init, dtype=dtype, name="pooled_dense"
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
        self.num_segments = num_segments
        self.use_pooler = use_pooler
        self.initializer_range = initializer_range
        self.cls_token_index = 0

    def _forward(self, inputs, features=None, training=None):
        tokens = self.token_embedding(inputs["token_ids"])
        x = tokens + self.position_embedding(tokens) + self.segment_embedding(inputs["segment_ids"])
        x = self.embeddings_dropout(x, training=training)
        if features is not None:
            features["hidden_states"].append(x)
        x = run_layers(self.transformer_layers, x, inputs["padding_mask"], features, training)
        x = self.final_layer_norm(x)
        if features is not None:
            features["hidden_states"][-1] = x  # transformers' last hidden state is after the final LayerNorm
        outputs = {"sequence_output": x}
        if self.pooled_dense is not None:
            outputs["pooled_output"] = self.pooled_dense(x[:, 0, :])
        return outputs

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
                "num_segments": self.num_segments,
                "use_pooler": self.use_pooler,
                "initializer_range": self.initializer_range,
            }
        )
        return config
