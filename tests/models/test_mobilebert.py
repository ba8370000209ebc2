"""MobileBERT (bottlenecks, stacked FFNs; NoNorm and LayerNorm variants): the biozoo.testing battery, over the family's cases in biozoo.testing.CASES."""

import pytest

from biozoo import testing

pytestmark = pytest.mark.backends  # `make test` runs this battery under jax and torch too

FAMILY = "mobilebert"


@pytest.mark.parametrize("name", testing.cases(FAMILY))
def test_backbone(name, tmp_path, tiny_spiece):
    testing.run_backbone_test(name, tmp_path, tiny_spiece)


@pytest.mark.parametrize("name, hf_class, fmt", testing.cases(FAMILY, kind="parity"))
def test_from_preset_matches_transformers(name, hf_class, fmt, tmp_path, tiny_spiece):
    testing.run_parity_test(name, hf_class, fmt, tmp_path, tiny_spiece)


@pytest.mark.parametrize("name, hf_class", testing.cases(FAMILY, kind="heads"))
def test_heads_are_kept_in_the_preset(name, hf_class, tmp_path, tiny_spiece):
    testing.run_converted_heads_test(name, hf_class, tmp_path, tiny_spiece)


@pytest.mark.parametrize("name, kind, hf_class", testing.cases(FAMILY, kind="task"))
def test_task_head_matches_transformers(name, kind, hf_class, tmp_path, tiny_spiece):
    testing.run_task_test(name, kind, hf_class, tmp_path, tiny_spiece)


@pytest.mark.tensorflow  # the exports are written by TensorFlow
@pytest.mark.parametrize("name, fmt", testing.cases(FAMILY, kind="ids_export"))
def test_onnx_and_litert_exports_give_transformers_logits(name, fmt, tmp_path, tiny_spiece):
    testing.run_ids_export_test(name, fmt, tmp_path, tiny_spiece)


@pytest.mark.parametrize("overrides, unused", [
    ({"use_bottleneck_attention": True}, ".bottleneck.attention."),  # key_query_shared_bottleneck too
    ({"trigram_input": False, "embedding_size": 64}, "embeddings.embedding_transformation."),  # = hidden_size
], ids=["bottleneck_attention", "no_trigram_same_width"])
def test_tensors_transformers_saves_but_never_reads_are_ignored(overrides, unused, tmp_path):
    import biozoo

    model = testing.make_model(FAMILY, "MobileBertModel", **overrides)
    assert any(unused in name for name in model.state_dict())  # saved, though the config never reads it
    backbone = biozoo.from_preset(str(testing.save_hf_directory(model, tmp_path / "hf")))
    inputs = testing.case_inputs(model)
    sequence, _ = testing.hf_outputs(model, inputs)
    assert testing.max_diff(testing.to_numpy(backbone(inputs))["sequence_output"], sequence, inputs["padding_mask"]) <= 1e-4
