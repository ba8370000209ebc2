"""HF -> biozoo preset -> HF: transformers loads the export and gives the original outputs;
its tokenizer gives biozoo's ids."""

import hf_models as H
import numpy as np
import pytest

import biozoo
from biozoo.export.hf import export_hf

CASES = [("bert", "BertModel"), ("bert_gelu_new_eps", "BertModel"), ("albert", "AlbertModel"),
         ("electra", "ElectraModel"), ("distilbert", "DistilBertModel"), ("mobilebert", "MobileBertModel"),
         ("mobilebert_layer_norm", "MobileBertModel"), ("megatron_bert", "MegatronBertModel")]


@pytest.mark.parametrize("name, model_cls", CASES)
def test_hf_round_trip(name, model_cls, tmp_path, tiny_spiece):
    transformers = pytest.importorskip("transformers")
    model = H.make_model(name, model_cls)
    tokenizer = "sentencepiece" if name == "albert" else "wordpiece"
    source = H.save_hf_directory(model, tmp_path / "hf", "bin", tokenizer, tiny_spiece)
    export_hf(str(source), tmp_path / "exported")
    reloaded = transformers.AutoModel.from_pretrained(str(tmp_path / "exported")).eval()
    assert type(reloaded).__name__ == model_cls
    inputs = H.random_inputs(num_segments=getattr(model.config, "type_vocab_size", 2))
    expected, expected_pooled = H.hf_outputs(model, inputs)
    got, got_pooled = H.hf_outputs(reloaded, inputs)
    assert H.max_diff(got, expected, inputs["padding_mask"]) <= 1e-4
    if expected_pooled is not None and model.base_model.pooler is not None and hasattr(model.base_model.pooler, "dense"):
        assert np.abs(got_pooled - expected_pooled).max() <= 1e-4
    texts = ["the brca1 gene (cancer) cells.", "protein-cell"]
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "exported"))
    ours = biozoo.Tokenizer.from_preset(str(source))
    assert [theirs(t, add_special_tokens=False)["input_ids"] for t in texts] == ours.ids(texts)
