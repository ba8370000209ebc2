"""A model family described once: backbone, tokenizer, converter tables and the facts that
tasks, training and exports need about it."""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Callable, Optional

import keras

from biozoo.mapping import mapped_targets


@dataclasses.dataclass(frozen=True)
class Family:
    """Everything biozoo needs to know about one architecture family.

    The conversion functions come from the family's `convert_hf` module:
    - `config_from_hf(hf_config, use_pooler, source)`: an HF config.json (`source`, named by errors) -> backbone arguments;
    - `HF_TABLE`: HF state-dict names (any `*Model`, `*ForMaskedLM`, `*ForPreTraining`,
      `*ForQuestionAnswering` class) -> the backbone's variables and heads;
    - `heads_config(hf_config)`: how the converted heads are built (activation, epsilon);
    - `config_to_hf(backbone_config)`: the way back, for export.
    `use_pooler(hf_config, targets)` tells from a checkpoint whether it has a pooler.

    Example:
        >>> family = biozoo.models.get_family("electra")
        >>> family.classifier_activation, family.tokenizer_cls.__name__
        ('gelu', 'ElectraTokenizer')
    """

    name: str
    model_types: tuple
    backbone_cls: type
    convert_hf: ModuleType
    tokenizer_cls: type
    use_pooler: Callable  # (hf_config, Keras targets the checkpoint's tensors map to) -> bool
    source_tables: dict = dataclasses.field(default_factory=dict)  # other formats: "tf1", "gluon", ...
    # Dropout of token and sequence classification heads; None: the backbone's hidden dropout (HF's
    # rule when classifier_dropout is unset). ALBERT's heads use classifier_dropout_prob (0.1).
    head_dropout: Optional[float] = None
    # Sequence classification's own dropout where HF gives it one (DistilBERT: seq_classif_dropout).
    classification_dropout: Optional[float] = None
    # Without a trained pooler, sequence classification reads token 0 through a new dense layer
    # with this activation, as transformers' head for the family: a new pooler (tanh) for the
    # families that have one, ElectraClassificationHead's gelu, DistilBERT's pre_classifier relu.
    classifier_activation: str = "tanh"
    # ElectraClassificationHead applies dropout before that dense layer too (the others after it only).
    dropout_before_classifier_dense: bool = False
    # Dropout on the span logits' input: none in transformers' *ForQuestionAnswering (nor BERT's
    # run_squad.py), but DistilBERT's qa_dropout.
    qa_dropout: float = 0.0
    # The MLM head's transform activation when it differs from hidden_act (HF ELECTRA's
    # generator head is exact GELU whatever the config says).
    mlm_activation: Optional[str] = None
    # MobileBERT's MLM head projects to hidden_dim and adds an extra output kernel.
    mlm_extra_output: bool = False
    # Can be an ELECTRA discriminator sharing its token embedding with a generator.
    electra_discriminator: bool = False
    # Model Garden encoder class the family exports to (None: no Garden export), and the
    # Garden weights it lacks (written as zeros), with the reason.
    garden_encoder: Optional[str] = None
    garden_absent: dict = dataclasses.field(default_factory=dict)
    # TF1 releases: the config files they ship beside the checkpoint (the first found is read), the
    # variable-name prefix that tells the family from a checkpoint, and, for releases that ship no
    # sizes, `tf1_config(shapes, part, num_heads)` reading an HF-style config off the tensors (ELECTRA).
    tf1_config_files: tuple = ()
    tf1_scope: Optional[str] = None
    tf1_config: Optional[Callable] = None

    def backbone_arguments(self, hf_config, tensor_names=(), use_pooler=None, source="config.json"):
        """The backbone's constructor arguments for an HF config.json. The pooler is kept when
        `use_pooler` says so or, when it is None, when the checkpoint's tensors (`tensor_names`,
        HF names) include the family's pooler. A config key biozoo refuses (a size that is not a
        positive whole number, an unknown activation) is a CheckpointError naming `source`, the key and its value."""
        if use_pooler is None:
            use_pooler = self.use_pooler(hf_config, mapped_targets(self.hf_table, tensor_names))
        return self.config_from_hf(hf_config, use_pooler, source=source)

    @property
    def config_from_hf(self):
        return self.convert_hf.config_from_hf

    @property
    def hf_table(self):
        return self.convert_hf.HF_TABLE

    @property
    def heads_config(self):
        return self.convert_hf.heads_config

    @property
    def config_to_hf(self):
        return self.convert_hf.config_to_hf


def tokenizer_class(class_name, base, backbone_cls, description):
    """A tokenizer class of a family, registered as `biozoo>{class_name}` (the name presets
    already on disk were saved under)."""
    cls = type(class_name, (base,), {
        "backbone_cls": backbone_cls,
        "__doc__": f"The {description} tokenizer of a {backbone_cls.__name__[:-len('Backbone')]} checkpoint "
                   "(ids equal HF's).",
        "__module__": "biozoo.models",
    })
    return keras.saving.register_keras_serializable(package="biozoo")(cls)


def hf_get(config, key, default):
    value = config.get(key, default)
    return default if value is None else value


def has_tensor(target):
    """`use_pooler` for families whose pooler is a dense layer: is `target` in the checkpoint?"""
    return lambda config, targets: target in targets


def never(config, targets):
    return False
