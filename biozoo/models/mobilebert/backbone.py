"""MobileBERT encoder (BioMobileBERT)."""

import keras
import keras_hub
from keras.layers import ReversibleEmbedding

from biozoo.models._common import (
    FeaturesMixin,
    PositionEmbedding,
    backbone_inputs,
    check_arguments,
    initializer,
    run_layers,
)
from biozoo.models.mobilebert.layers import MobileBertBlock, normalization


@keras.saving.register_keras_serializable(package="biozoo")
class MobileBertBackbone(FeaturesMixin, keras_hub.models.Backbone):
    """MobileBERT: narrow embeddings with trigram input, bottlenecked blocks, NoNorm.

    Token embeddings (`embedding_dim`, 128) of each token and its two neighbours are
    concatenated and projected to `hidden_dim` (512); every block squeezes to
    `true_hidden_dim` (128). `pooled_output` is the first token's state, through a tanh
    dense layer only when the checkpoint has one (`classifier_activation`).

    Example:
        >>> backbone = biozoo.from_preset("bio_mobilebert")
        >>> backbone(inputs)["sequence_output"]
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        embedding_dim,
        true_hidden_dim,
        intermediate_dim,
        num_feedforward_networks=4,
        use_bottleneck=True,
        use_bottleneck_attention=False,
        key_query_shared_bottleneck=True,
        trigram_input=True,
        normalization_type="no_norm",
        classifier_activation=False,
        activation="relu",
        layer_norm_epsilon=1e-12,
        dropout=0.0,
        attention_dropout=0.1,
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
            embedding_dim=embedding_dim, true_hidden_dim=true_hidden_dim,
            num_feedforward_networks=num_feedforward_networks, intermediate_dim=intermediate_dim,
            max_sequence_length=max_sequence_length, num_segments=num_segments,
        )
        init = initializer(initializer_range)
        self.token_embedding = ReversibleEmbedding(
            vocabulary_size, embedding_dim, embeddings_initializer=init, dtype=dtype, name="token_embedding"
        )
        self.embedding_transformation = None
        if trigram_input or embedding_dim != hidden_dim:
            self.embedding_transformation = keras.layers.Dense(
                hidden_dim, kernel_initializer=init, dtype=dtype, name="embedding_transformation"
            )
        self.position_embedding = PositionEmbedding(
            sequence_length=max_sequence_length, initializer=init, dtype=dtype, name="position_embedding"
        )
        self.segment_embedding = keras.layers.Embedding(
            num_segments, hidden_dim, embeddings_initializer=init, dtype=dtype, name="segment_embedding"
        )
        # HF builds the embeddings' LayerNorm without layer_norm_eps (1e-5); NoNorm ignores it.
        self.embeddings_norm = normalization(normalization_type, 1e-5, "embeddings_norm", dtype)
        self.embeddings_dropout = keras.layers.Dropout(dropout, dtype=dtype, name="embeddings_dropout")
        self.transformer_layers = [
            MobileBertBlock(
                hidden_dim=hidden_dim,
                true_hidden_dim=true_hidden_dim,
                intermediate_dim=intermediate_dim,
                num_heads=num_heads,
                num_feedforward_networks=num_feedforward_networks,
                use_bottleneck=use_bottleneck,
                use_bottleneck_attention=use_bottleneck_attention,
                key_query_shared_bottleneck=key_query_shared_bottleneck,
                normalization_type=normalization_type,
                activation=activation,
                layer_norm_epsilon=layer_norm_epsilon,
                dropout=dropout,
                attention_dropout=attention_dropout,
                initializer_range=initializer_range,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]
        self.pooled_dense = None
        if use_pooler and classifier_activation:
            self.pooled_dense = keras.layers.Dense(
                hidden_dim, activation="tanh", kernel_initializer=init, dtype=dtype, name="pooled_dense"
            )
        self.trigram_input = trigram_input
        self.use_pooler = use_pooler
        inputs = backbone_inputs()
        super().__init__(inputs=inputs, outputs=self._forward(inputs), dtype=dtype, **kwargs)

        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.embedding_dim = embedding_dim
        self.true_hidden_dim = true_hidden_dim
        self.intermediate_dim = intermediate_dim
        self.num_feedforward_networks = num_feedforward_networks
        self.use_bottleneck = use_bottleneck
        self.use_bottleneck_attention = use_bottleneck_attention
        self.key_query_shared_bottleneck = key_query_shared_bottleneck
        self.trigram_input = trigram_input
        self.normalization_type = normalization_type
        self.classifier_activation = classifier_activation
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.use_pooler = use_pooler
        self.initializer_range = initializer_range
        self.cls_token_index = 0

    def _forward(self, inputs, features=None, training=None):
        x = self.token_embedding(inputs["token_ids"])
        if self.trigram_input:
            # Each position sees [next token, itself, previous token], zero beyond the ends.
            following = keras.ops.pad(x[:, 1:], [[0, 0], [0, 1], [0, 0]])
            preceding = keras.ops.pad(x[:, :-1], [[0, 0], [1, 0], [0, 0]])
            x = keras.ops.concatenate([following, x, preceding], axis=-1)
        if self.embedding_transformation is not None:
            x = self.embedding_transformation(x)
        x = x + self.position_embedding(x) + self.segment_embedding(inputs["segment_ids"])
        x = self.embeddings_norm(x)
        x = self.embeddings_dropout(x, training=training)
        if features is not None:
            features["hidden_states"].append(x)
        x = run_layers(self.transformer_layers, x, inputs["padding_mask"], features, training)
        outputs = {"sequence_output": x}
        if self.use_pooler:
            first = x[:, 0, :]
            outputs["pooled_output"] = self.pooled_dense(first) if self.pooled_dense is not None else first
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "num_layers": self.num_layers,
                "num_heads": self.num_heads,
                "hidden_dim": self.hidden_dim,
                "embedding_dim": self.embedding_dim,
                "true_hidden_dim": self.true_hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "num_feedforward_networks": self.num_feedforward_networks,
                "use_bottleneck": self.use_bottleneck,
                "use_bottleneck_attention": self.use_bottleneck_attention,
                "key_query_shared_bottleneck": self.key_query_shared_bottleneck,
                "trigram_input": self.trigram_input,
                "normalization_type": self.normalization_type,
                "classifier_activation": self.classifier_activation,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "use_pooler": self.use_pooler,
                "initializer_range": self.initializer_range,
            }
        )
        return config
