"""HF -> biozoo preset -> HF: transformers loads the export and gives the original outputs;
its tokenizer gives biozoo's ids. Every case of biozoo.testing.CASES."""

import numpy as np
import pytest

import biozoo
from biozoo import testing as H
from biozoo.export.hf import export_hf


@pytest.mark.parametrize("name, model_cls", H.cases(kind="hf_export"))
def test_hf_round_trip(name, model_cls, tmp_path, tiny_spiece):
    transformers = pytest.importorskip("transformers")
    model, source = H.save_case(name, model_cls, tmp_path, "bin", tiny_spiece)
    export_hf(str(source), tmp_path / "exported")
    reloaded = transformers.AutoModel.from_pretrained(str(tmp_path / "exported")).eval()
    assert type(reloaded).__name__ == model_cls
    inputs = H.case_inputs(model)
    expected, expected_pooled = H.hf_outputs(model, inputs)
    got, got_pooled = H.hf_outputs(reloaded, inputs)
    assert H.max_diff(got, expected, inputs["padding_mask"]) <= 1e-4
    if expected_pooled is not None and model.base_model.pooler is not None and hasattr(model.base_model.pooler, "dense"):
        assert np.abs(got_pooled - expected_pooled).max() <= 1e-4
    texts = ["the brca1 gene (cancer) cells.", "protein-cell"]
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "exported"))
    ours = biozoo.Tokenizer.from_preset(str(source))
    assert [theirs(t, add_special_tokens=False)["input_ids"] for t in texts] == ours.ids(texts)
    # truncation=True cuts at the model's positions, as transformers' tokenizer of a checkpoint does
    positions = model.config.max_position_embeddings
    long_text = " ".join(["protein"] * (2 * positions))
    assert len(theirs(long_text, truncation=True)["input_ids"]) == positions
