"""ALBERT encoder (BioM-ALBERT-xxlarge, -PMC, SQuAD2)."""

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
class AlbertBackbone(FeaturesMixin, keras_hub.models.Backbone):
    """ALBERT encoder: factorised embeddings and layers shared across depth.

    `num_layers` layer applications use `num_groups` groups of `num_inner_repetitions`
    blocks each (HF: num_hidden_groups, inner_group_num). `activation` comes from the
    checkpoint: BioM-ALBERT uses exact "gelu", where KerasHub's AlbertBackbone hard-codes tanh.

    Example:
        >>> backbone = biozoo.from_preset("biom_albert_xxlarge")
        >>> backbone(inputs)["pooled_output"]
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        embedding_dim,
        hidden_dim,
        intermediate_dim,
        num_groups=1,
        num_inner_repetitions=1,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        dropout=0.0,
        max_sequence_length=512,
        num_segments=2,
        use_pooler=True,
        initializer_range=0.02,
        dtype=None,
        **kwargs,
    ):
        check_arguments(
            type(self).__name__, activation=activation,
            vocabulary_size=vocabulary_size, num_layers=num_layers, num_heads=num_heads, hidden_dim=hidden_dim,
            embedding_dim=embedding_dim, num_groups=num_groups, num_inner_repetitions=num_inner_repetitions,
            intermediate_dim=intermediate_dim, max_sequence_length=max_sequence_length,
            num_segments=num_segments,
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
        self.embeddings_projection = keras.layers.Dense(
            hidden_dim, kernel_initializer=init, dtype=dtype, name="embedding_projection"
        )
        self.groups = [
            encoder_layers(
                num_inner_repetitions, num_heads, intermediate_dim, activation, layer_norm_epsilon,
                dropout, initializer_range, dtype, name=f"group_{g}_inner_layer",
            )
            for g in range(num_groups)
        ]
        self.pooled_dense = None
        if use_pooler:
            self.pooled_dense = keras.layers.Dense(
                hidden_dim, activation="tanh", kernel_initializer=init, dtype=dtype, name="pooled_dense"
            )
        inputs = backbone_inputs()
        self.num_layers = num_layers  # used by _forward
        super().__init__(inputs=inputs, outputs=self._forward(inputs), dtype=dtype, **kwargs)

        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.num_groups = num_groups
        self.num_inner_repetitions = num_inner_repetitions
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.dropout = dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.use_pooler = use_pooler
        self.initializer_range = initializer_range
        self.cls_token_index = 0

    @property
    def transformer_layers(self):
        """The blocks applied at each depth (shared blocks repeat): depth i runs group
        int(i / (num_layers / num_groups)), HF's AlbertTransformer index (3 layers, 2 groups: 0, 0, 1)."""
        depths_per_group = self.num_layers / len(self.groups)
        return [layer for i in range(self.num_layers) for layer in self.groups[int(i / depths_per_group)]]

    def _forward(self, inputs, features=None, training=None):
        tokens = self.token_embedding(inputs["token_ids"])
        x = tokens + self.position_embedding(tokens) + self.segment_embedding(inputs["segment_ids"])
        x = self.embeddings_layer_norm(x)
        x = self.embeddings_dropout(x, training=training)
        x = self.embeddings_projection(x)
        if features is not None:
            features["hidden_states"].append(x)
        x = run_layers(self.transformer_layers, x, inputs["padding_mask"], features, training)
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
                "embedding_dim": self.embedding_dim,
                "hidden_dim": self.hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "num_groups": self.num_groups,
                "num_inner_repetitions": self.num_inner_repetitions,
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
