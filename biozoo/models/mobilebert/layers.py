"""MobileBERT's building blocks: NoNorm and the bottlenecked transformer block."""

import keras

from biozoo._keras_internals import merge_padding_and_attention_mask
from biozoo.models._common import get_activation, initializer


@keras.saving.register_keras_serializable(package="biozoo")
class NoNorm(keras.layers.Layer):
    """MobileBERT's replacement for LayerNorm: an element-wise affine map `x * gamma + beta`."""

    def build(self, input_shape):
        dim = input_shape[-1]
        self.gamma = self.add_weight(name="gamma", shape=(dim,), initializer="ones")
        self.beta = self.add_weight(name="beta", shape=(dim,), initializer="zeros")

    def call(self, x):
        return x * self.gamma + self.beta


def normalization(kind, epsilon, name, dtype):
    if kind == "no_norm":
        return NoNorm(dtype=dtype, name=name)
    if kind == "layer_norm":
        return keras.layers.LayerNormalization(epsilon=epsilon, dtype=dtype, name=name)
    raise ValueError(f"Unknown normalization_type '{kind}' (expected 'no_norm' or 'layer_norm').")


@keras.saving.register_keras_serializable(package="biozoo")
class MobileBertBlock(keras.layers.Layer):
    """One MobileBERT layer, as HF's MobileBertLayer.

    The hidden state (`hidden_dim`, 512) is squeezed through bottlenecks to `true_hidden_dim`
    (128) for attention and `num_feedforward_networks` stacked FFNs, then expanded back.
    With `key_query_shared_bottleneck`, queries and keys come from a second bottleneck and
    values from the unsqueezed hidden state.
    """

    def __init__(
        self,
        hidden_dim,
        true_hidden_dim,
        intermediate_dim,
        num_heads,
        num_feedforward_networks=4,
        use_bottleneck=True,
        use_bottleneck_attention=False,
        key_query_shared_bottleneck=True,
        normalization_type="no_norm",
        activation="relu",
        layer_norm_epsilon=1e-12,
        dropout=0.0,
        attention_dropout=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.true_hidden_dim = true_hidden_dim
        self.intermediate_dim = intermediate_dim
        self.num_heads = num_heads
        self.num_feedforward_networks = num_feedforward_networks
        self.use_bottleneck = use_bottleneck
        self.use_bottleneck_attention = use_bottleneck_attention
        self.key_query_shared_bottleneck = key_query_shared_bottleneck
        self.normalization_type = normalization_type
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range

    def _dense(self, units, name, activation=None):
        return keras.layers.Dense(
            units,
            activation=get_activation(activation) if activation else None,
            kernel_initializer=initializer(self.initializer_range),
            dtype=self.dtype_policy,
            name=name,
        )

    def _norm(self, name, epsilon=None):
        eps = self.layer_norm_epsilon if epsilon is None else epsilon
        return normalization(self.normalization_type, eps, name, self.dtype_policy)

    def build(self, input_shape):
        hidden_shape = tuple(input_shape)
        true_shape = hidden_shape[:-1] + (self.true_hidden_dim,)
        inter_shape = hidden_shape[:-1] + (self.intermediate_dim,)
        if self.use_bottleneck:
            self.bottleneck_input_dense = self._dense(self.true_hidden_dim, "bottleneck_input_dense")
            self.bottleneck_input_dense.build(hidden_shape)
            self.bottleneck_input_norm = self._norm("bottleneck_input_norm")
            self.bottleneck_input_norm.build(true_shape)
            if self.key_query_shared_bottleneck and not self.use_bottleneck_attention:
                self.bottleneck_attention_dense = self._dense(self.true_hidden_dim, "bottleneck_attention_dense")
                self.bottleneck_attention_dense.build(hidden_shape)
                self.bottleneck_attention_norm = self._norm("bottleneck_attention_norm")
                self.bottleneck_attention_norm.build(true_shape)
        head_dim = self.true_hidden_dim // self.num_heads
        self.self_attention = keras.layers.MultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=head_dim,
            value_dim=head_dim,
            output_shape=self.true_hidden_dim,
            dropout=self.attention_dropout,
            kernel_initializer=initializer(self.initializer_range),
            dtype=self.dtype_policy,
            name="self_attention",
        )
        value_dim = self.true_hidden_dim if self.use_bottleneck_attention else self.hidden_dim
        qk_dim = self.true_hidden_dim if self.use_bottleneck else self.hidden_dim
        self.self_attention.build(
            query_shape=hidden_shape[:-1] + (qk_dim,),
            value_shape=hidden_shape[:-1] + (value_dim if self.use_bottleneck else self.hidden_dim,),
            key_shape=hidden_shape[:-1] + (qk_dim,),
        )
        self.attention_norm = self._norm("attention_norm")
        self.attention_norm.build(true_shape)
        self.ffn_intermediate, self.ffn_output, self.ffn_norm = [], [], []
        for k in range(self.num_feedforward_networks - 1):
            inter = self._dense(self.intermediate_dim, f"ffn_{k}_intermediate", self.activation)
            inter.build(true_shape)
            out = self._dense(self.true_hidden_dim, f"ffn_{k}_output")
            out.build(inter_shape)
            norm = self._norm(f"ffn_{k}_norm")
            norm.build(true_shape)
            self.ffn_intermediate.append(inter)
            self.ffn_output.append(out)
            self.ffn_norm.append(norm)
        self.intermediate_dense = self._dense(self.intermediate_dim, "intermediate_dense", self.activation)
        self.intermediate_dense.build(true_shape)
        self.output_dense = self._dense(self.true_hidden_dim, "output_dense")
        self.output_dense.build(inter_shape)
        # HF builds this LayerNorm without passing layer_norm_eps: torch's default 1e-5.
        self.output_norm = self._norm("output_norm", epsilon=1e-5)
        self.output_norm.build(true_shape)
        if self.use_bottleneck:
            self.output_bottleneck_dense = self._dense(self.hidden_dim, "output_bottleneck_dense")
            self.output_bottleneck_dense.build(true_shape)
            self.output_bottleneck_norm = self._norm("output_bottleneck_norm")
            self.output_bottleneck_norm.build(hidden_shape)
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self.built = True

    def call(self, hidden, padding_mask=None, training=None, return_attention_scores=False):
        mask = merge_padding_and_attention_mask(hidden, padding_mask, None)
        if self.use_bottleneck:
            layer_input = self.bottleneck_input_norm(self.bottleneck_input_dense(hidden))
            if self.use_bottleneck_attention:
                query = key = value = layer_input
            elif self.key_query_shared_bottleneck:
                query = key = self.bottleneck_attention_norm(self.bottleneck_attention_dense(hidden))
                value = hidden
            else:
                query = key = value = hidden
        else:
            query = key = value = layer_input = hidden
        attended = self.self_attention(
            query=query,
            value=value,
            key=key,
            attention_mask=mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        if return_attention_scores:
            attended, scores = attended
        if not self.use_bottleneck:
            attended = self.dropout_layer(attended, training=training)
        x = self.attention_norm(attended + layer_input)
        for inter, out, norm in zip(self.ffn_intermediate, self.ffn_output, self.ffn_norm):
            x = norm(out(inter(x)) + x)
        y = self.output_dense(self.intermediate_dense(x))
        if not self.use_bottleneck:
            y = self.output_norm(self.dropout_layer(y, training=training) + x)
        else:
            y = self.output_norm(y + x)
            y = self.output_bottleneck_norm(self.dropout_layer(self.output_bottleneck_dense(y), training=training) + hidden)
        if return_attention_scores:
            return y, scores
        return y

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "true_hidden_dim": self.true_hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "num_heads": self.num_heads,
                "num_feedforward_networks": self.num_feedforward_networks,
                "use_bottleneck": self.use_bottleneck,
                "use_bottleneck_attention": self.use_bottleneck_attention,
                "key_query_shared_bottleneck": self.key_query_shared_bottleneck,
                "normalization_type": self.normalization_type,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "initializer_range": self.initializer_range,
            }
        )
        return config
