"""Model Garden export: the restored BertEncoderV2 / AlbertEncoder equals transformers."""

import hf_models as H
import numpy as np
import pytest

from biozoo.errors import BiozooError
from biozoo.export.garden import export_garden, load_garden_encoder

CASES = [("bert", "BertModel"), ("albert", "AlbertModel"), ("electra", "ElectraModel"),
         ("distilbert", "DistilBertModel")]


@pytest.mark.parametrize("name, model_cls", CASES)
def test_garden_encoder_equals_transformers(name, model_cls, tmp_path, tiny_spiece):
    pytest.importorskip("official.nlp.modeling")
    overrides = {"distilbert": {}, "albert": {"num_hidden_groups": 1, "inner_group_num": 1}}.get(name, {"layer_norm_eps": 1e-12})
    model = H.make_model(name, model_cls, **overrides)
    tokenizer = "sentencepiece" if name == "albert" else "wordpiece"
    source = H.save_hf_directory(model, tmp_path / "hf", tokenizer=tokenizer, spiece_model=tiny_spiece)
    export_garden(str(source), tmp_path / "garden")
    encoder = load_garden_encoder(tmp_path / "garden")
    inputs = H.random_inputs(num_segments=2 if name != "distilbert" else 1)
    outputs = encoder({"input_word_ids": inputs["token_ids"], "input_mask": inputs["padding_mask"],
                       "input_type_ids": inputs["segment_ids"]}, training=False)
    expected, expected_pooled = H.hf_outputs(model, inputs)
    diff = H.max_diff(outputs["sequence_output"].numpy(), expected, inputs["padding_mask"])
    print(f"{name}: Model Garden export max |diff| {diff:.2e}")
    assert diff <= 1e-4
    if expected_pooled is not None:
        assert np.abs(outputs["pooled_output"].numpy() - expected_pooled).max() <= 1e-4


@pytest.mark.parametrize("name, model_cls, message", [
    ("megatron_bert", "MegatronBertModel", "megatron_bert"),
    ("mobilebert", "MobileBertModel", "mobilebert"),
    ("bert_gelu_new_eps", "BertModel", "layer_norm_epsilon is 0.001"),
    ("albert", "AlbertModel", "2 groups x 2 inner layers"),
])
def test_garden_refuses_what_it_cannot_express(name, model_cls, message, tmp_path, tiny_spiece):
    pytest.importorskip("official.nlp.modeling")
    tokenizer = "sentencepiece" if name == "albert" else "wordpiece"
    source = H.save_hf_directory(H.make_model(name, model_cls), tmp_path / "hf", tokenizer=tokenizer, spiece_model=tiny_spiece)
    with pytest.raises(BiozooError, match=message):
        export_garden(str(source), tmp_path / "garden")
    assert not (tmp_path / "garden").exists()
