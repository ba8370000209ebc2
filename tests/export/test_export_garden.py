"""Model Garden export: the restored BertEncoderV2 / AlbertEncoder equals transformers. The
cases, and the config overrides under which Garden can express them (`Case.garden`: one ALBERT
group, Garden's fixed LayerNorm epsilon 1e-12), come from biozoo.testing.CASES."""

import numpy as np
import pytest

from biozoo import testing as H
from biozoo.errors import BiozooError
from biozoo.export.garden import export_garden, load_garden_encoder


@pytest.mark.parametrize("name, model_cls, overrides", H.cases(kind="garden"))
def test_garden_encoder_equals_transformers(name, model_cls, overrides, tmp_path, tiny_spiece):
    pytest.importorskip("official.nlp.modeling")
    model, source = H.save_case(name, model_cls, tmp_path, spiece_model=tiny_spiece, **overrides)
    export_garden(str(source), tmp_path / "garden")
    # what the module's docstring and the CLI's help say is written
    assert sorted(p.name for p in (tmp_path / "garden").iterdir() if not p.name.startswith(".")) == \
        ["encoder.data-00000-of-00001", "encoder.index", "garden_encoder.json"]
    encoder = load_garden_encoder(tmp_path / "garden")
    inputs = H.random_inputs(num_segments=2 if H.family_of(name) != "distilbert" else 1)
    outputs = encoder({"input_word_ids": inputs["token_ids"], "input_mask": inputs["padding_mask"],
                       "input_type_ids": inputs["segment_ids"]}, training=False)
    expected, expected_pooled = H.hf_outputs(model, inputs)
    diff = H.max_diff(outputs["sequence_output"].numpy(), expected, inputs["padding_mask"])
    print(f"{name}: Model Garden export max |diff| {diff:.2e}")
    assert diff <= 1e-4
    if expected_pooled is not None:
        assert np.abs(outputs["pooled_output"].numpy() - expected_pooled).max() <= 1e-4


@pytest.mark.parametrize("name, model_cls, message", H.cases(kind="garden_refusal"))
def test_garden_refuses_what_it_cannot_express(name, model_cls, message, tmp_path, tiny_spiece):
    pytest.importorskip("official.nlp.modeling")
    _, source = H.save_case(name, model_cls, tmp_path, spiece_model=tiny_spiece)
    with pytest.raises(BiozooError, match=message):
        export_garden(str(source), tmp_path / "garden")
    assert not (tmp_path / "garden").exists()
