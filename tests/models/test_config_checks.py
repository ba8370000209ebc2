"""A backbone refuses inputs longer than its positions with an error naming both; a config that
transformers refuses, or that biozoo cannot build (a size that is not a positive whole number, an
unknown activation), is refused naming the config.json, the key and its value."""

import json
import re

import numpy as np
import pytest
import transformers

import biozoo
from biozoo import testing as H
from biozoo.errors import CheckpointError
from biozoo.models import BertBackbone, get_family

pytestmark = pytest.mark.backends  # `make test` runs this battery under jax and torch too

FAMILY_CASES = ("bert", "albert", "electra", "distilbert", "mobilebert", "megatron_bert")


def _inputs(length):
    return {"token_ids": np.ones((2, length), "int32"), "segment_ids": np.zeros((2, length), "int32"),
            "padding_mask": np.ones((2, length), "int32")}


@pytest.mark.parametrize("name", FAMILY_CASES)
def test_inputs_longer_than_the_positions_name_the_limit(name):
    family = get_family(H.family_of(name))
    backbone = family.backbone_cls(**family.backbone_arguments(H.make_config(name).to_dict(), use_pooler=False))
    assert backbone.max_sequence_length == 64
    assert H.to_numpy(backbone(_inputs(64))["sequence_output"]).shape[:2] == (2, 64)
    message = "the inputs have 65 positions, more than this model's max_sequence_length=64"
    with pytest.raises(ValueError, match=message):
        backbone(_inputs(65))
    with pytest.raises(ValueError, match=message):  # compiled (jit, tf.function): the length is known when traced
        backbone.predict(_inputs(65), verbose=0)


@pytest.mark.parametrize("arguments, message", [
    ({"hidden_dim": 10, "num_heads": 3}, "hidden_dim=10 is not a multiple of num_heads=3"),
    ({"num_layers": -1}, "num_layers=-1; it must be a whole number of at least 0"),
    ({"vocabulary_size": 0}, "vocabulary_size=0; it must be a whole number of at least 1"),
    ({"activation": "quick_gelu"}, "activation='quick_gelu' is not supported"),
])
def test_backbone_arguments_are_checked(arguments, message):
    sizes = {"vocabulary_size": 50, "num_layers": 1, "num_heads": 2, "hidden_dim": 8, "intermediate_dim": 16}
    with pytest.raises(ValueError, match=f"^BertBackbone: {re.escape(message)}"):
        BertBackbone(**{**sizes, **arguments})


# transformers' own class refuses the first three (hidden size not a multiple of the heads)
@pytest.mark.parametrize("name, model_class, overrides, message", [
    ("bert", "BertModel", {"num_attention_heads": 5}, "hidden_size 32 is not a multiple of num_attention_heads 5"),
    ("megatron_bert", "MegatronBertModel", {"num_attention_heads": 5},
     "hidden_size 32 is not a multiple of num_attention_heads 5"),
    ("distilbert", "DistilBertModel", {"n_heads": 5}, "dim 32 is not a multiple of n_heads 5"),
    ("bert", None, {"num_hidden_layers": -1}, "num_hidden_layers is -1"),
    ("albert", None, {"embedding_size": 0}, "embedding_size is 0"),
    ("mobilebert", None, {"intra_bottleneck_size": 0}, "intra_bottleneck_size is 0"),
    ("electra", None, {"hidden_act": "quick_gelu"}, "hidden_act 'quick_gelu' is not supported"),
    ("bert", None, {"position_embedding_type": "relative_key"}, "position_embedding_type 'relative_key'"),
])
def test_a_config_biozoo_cannot_build_names_the_file_key_and_value(name, model_class, overrides, message, tmp_path,
                                                                  tiny_spiece):
    case = H.get_case(name)
    directory = H.save_hf_directory(H.make_model(name, case.model_class), tmp_path / "hf",
                                    tokenizer=case.tokenizer, spiece_model=tiny_spiece)
    path = directory / "config.json"
    config = {**json.loads(path.read_text()), **overrides}
    path.write_text(json.dumps(config))
    if model_class is not None:
        with pytest.raises(ValueError, match="not a multiple|must divide"):
            getattr(transformers, model_class)(getattr(transformers, case.config_class).from_pretrained(directory))
    with pytest.raises(CheckpointError, match=f"^{re.escape(str(path))}: {re.escape(message)}"):
        biozoo.from_preset(str(directory))


def test_gelu_python_is_the_exact_gelu(tmp_path):
    model = H.make_model("bert", "BertModel", hidden_act="gelu_python")
    backbone = biozoo.from_preset(str(H.save_hf_directory(model, tmp_path / "hf")))
    inputs = H.random_inputs()
    sequence, _ = H.hf_outputs(model, inputs)
    assert backbone.activation == "gelu_python"
    assert H.max_diff(H.to_numpy(backbone(inputs)["sequence_output"]), sequence, inputs["padding_mask"]) <= H.TOLERANCE
