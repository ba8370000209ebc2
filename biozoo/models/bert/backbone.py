"""BERT encoder (BioBERT, PubMedBERT, Bioformer, the nlpie BERT students)."""

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
class BertBackbone(FeaturesMixin, keras_hub.models.Backbone):
    """BERT encoder that honours the checkpoint's activation and LayerNorm epsilon.

    Same layers and weight layout as `keras_hub.models.BertBackbone`, but `activation`
    ("gelu" = exact erf, "gelu_new" = tanh) and `layer_norm_epsilon` come from the
    checkpoint, and the pooler exists only when the checkpoint has one (`use_pooler`).

    Example:
        >>> backbone = biozoo.from_preset("bioformer_8l")
        >>> out = backbone({"token_ids": ids, "segment_ids": seg, "padding_mask": mask})
        >>> out["sequence_output"].shape, out["pooled_output"].shape
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
        self.embeddings_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=dtype, name="embeddings_layer_norm"
        )
        self.embeddings_dropout = keras.layers.Dropout(dropout, dtype=dtype, name="embeddings_dropout")
        self.transformer_layers = encoder_layers(
            num_layers, num_heads, intermediate_dim, activation, layer_norm_epsilon, dropout,
            initializer_range, dtype,
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
        x = self.embeddings_layer_norm(x)
        x = self.embeddings_dropout(x, training=training)
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
