"""Pretraining heads: masked language modelling and ELECTRA's replaced-token detection.

Both start from the heads converted with the checkpoint (`heads.safetensors`) when present,
so `MaskedLM.from_preset("bioformer_8l")` predicts masked words out of the box.
"""

from __future__ import annotations

import keras
import keras_hub

from biozoo.data import IGNORE_LABEL
from biozoo.models import family_for_backbone, get_activation
from biozoo.optim import default_optimizer
from biozoo.tasks.base import PresetTaskMixin


@keras.saving.register_keras_serializable(package="biozoo")
class MaskedLMHead(keras.layers.Layer):
    """dense -> activation -> LayerNorm -> tied output embedding + bias.

    `units` is the embedding width (ALBERT, ELECTRA generators project down to it). MobileBERT
    (`extra_output=True`) keeps the hidden width and scores the extra dimensions against a
    separate kernel: logits = h[:, :E] @ embedding.T + h[:, E:] @ extra_output_kernel.
    """

    def __init__(self, token_embedding, units, activation="gelu", layer_norm_epsilon=1e-12,
                 extra_output=False, **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding
        self.units = units
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.extra_output = extra_output

    def build(self, input_shape):
        vocab, embed = self.token_embedding.embeddings.shape
        self.dense = keras.layers.Dense(self.units, activation=get_activation(self.activation),
                                        dtype=self.dtype_policy, name="dense")
        self.dense.build(input_shape)
        self.layer_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon,
                                                          dtype=self.dtype_policy, name="layer_norm")
        self.layer_norm.build(tuple(input_shape[:-1]) + (self.units,))
        self.extra_output_kernel = None
        if self.extra_output:
            self.extra_output_kernel = self.add_weight(
                name="extra_output_kernel", shape=(self.units - embed, vocab), initializer="zeros")
        self.output_bias = self.add_weight(name="output_bias", shape=(vocab,), initializer="zeros")

    def call(self, hidden):
        x = self.layer_norm(self.dense(hidden))
        if self.extra_output_kernel is not None:
            embed = self.token_embedding.embeddings.shape[-1]
            logits = self.token_embedding(x[..., :embed], reverse=True) + keras.ops.matmul(
                x[..., embed:], self.extra_output_kernel)
        else:
            logits = self.token_embedding(x, reverse=True)
        return logits + self.output_bias

    def load_converted(self, heads, prefix="mlm/"):
        self.dense.set_weights([heads[prefix + "dense/kernel"], heads[prefix + "dense/bias"]])
        self.layer_norm.set_weights([heads[prefix + "layer_norm/gamma"], heads[prefix + "layer_norm/beta"]])
        self.output_bias.assign(heads[prefix + "output_bias"])
        if self.extra_output_kernel is not None:
            self.extra_output_kernel.assign(heads[prefix + "extra_output_kernel"])

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "activation": self.activation,
                       "layer_norm_epsilon": self.layer_norm_epsilon, "extra_output": self.extra_output})
        return config


def _mlm_head_arguments(backbone):
    family = family_for_backbone(backbone)
    config = backbone.get_config()
    embed = backbone.token_embedding.embeddings.shape[-1]
    extra = family.mlm_extra_output
    return {
        "units": config["hidden_dim"] if extra else embed,
        "activation": family.mlm_activation or config.get("activation", "gelu"),
        "layer_norm_epsilon": config.get("layer_norm_epsilon", 1e-12),
        "extra_output": extra,
    }


@keras.saving.register_keras_serializable(package="biozoo")
class MaskedLM(PresetTaskMixin, keras_hub.models.Task):
    """Masked-language-model logits at `mask_positions`, for any biozoo backbone.

    Inputs: the backbone inputs plus `mask_positions` (int32 [batch, masks]); output: logits
    [batch, masks, vocabulary]. The head starts from the checkpoint's MLM head when it has one.

    Example:
        >>> mlm = biozoo.MaskedLM.from_preset("bioformer_8l")
        >>> logits = mlm({**inputs, "mask_positions": positions})
    """

    backbone_cls = None
    preprocessor_cls = None

    def __init__(self, backbone, preprocessor=None, **kwargs):
        inputs = dict(backbone.input)
        inputs["mask_positions"] = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        hidden = backbone({k: inputs[k] for k in ("token_ids", "segment_ids", "padding_mask")})["sequence_output"]
        gathered = keras.ops.take_along_axis(hidden, keras.ops.expand_dims(inputs["mask_positions"], -1), axis=1)
        self.mlm_head = MaskedLMHead(backbone.token_embedding, dtype=backbone.dtype_policy, name="mlm_head",
                                     **_mlm_head_arguments(backbone))
        logits = self.mlm_head(gathered)
        logits = keras.layers.Activation("linear", dtype="float32", name="float32_logits")(logits)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor

    def _init_from_heads(self, heads, config):
        if "mlm/dense/kernel" in heads:
            self.mlm_head.load_converted(heads)

    def compile(self, optimizer="auto", loss="auto", metrics=None, **kwargs):
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE_LABEL)
        super().compile(optimizer=default_optimizer(optimizer), loss=loss, metrics=metrics, **kwargs)


@keras.saving.register_keras_serializable(package="biozoo")
class ReplacedTokenDetector(PresetTaskMixin, keras_hub.models.Task):
    """ELECTRA's discriminator head: one logit per token, "this token was replaced".

    Example:
        >>> rtd = biozoo.ReplacedTokenDetector.from_preset("biom_electra_base_discriminator")
        >>> rtd(inputs)  # [batch, seq] logits
    """

    backbone_cls = None
    preprocessor_cls = None

    def __init__(self, backbone, preprocessor=None, activation=None, **kwargs):
        inputs = backbone.input
        hidden = backbone(inputs)["sequence_output"]
        activation = activation or backbone.get_config().get("activation", "gelu")
        self.rtd_dense = keras.layers.Dense(backbone.hidden_dim, activation=get_activation(activation),
                                            dtype=backbone.dtype_policy, name="rtd_dense")
        self.rtd_output = keras.layers.Dense(1, dtype=backbone.dtype_policy, name="rtd_output")
        logits = keras.ops.squeeze(self.rtd_output(self.rtd_dense(hidden)), -1)
        logits = keras.layers.Activation("linear", dtype="float32", name="float32_logits")(logits)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.activation = activation

    def _init_from_heads(self, heads, config):
        if "rtd/dense/kernel" in heads:
            self.rtd_dense.set_weights([heads["rtd/dense/kernel"], heads["rtd/dense/bias"]])
            self.rtd_output.set_weights([heads["rtd/output/kernel"], heads["rtd/output/bias"]])

    def get_config(self):
        config = super().get_config()
        config["activation"] = self.activation
        return config

    def compile(self, optimizer="auto", loss="auto", metrics=None, **kwargs):
        if loss == "auto":
            loss = keras.losses.BinaryCrossentropy(from_logits=True)
        super().compile(optimizer=default_optimizer(optimizer), loss=loss, metrics=metrics, **kwargs)
