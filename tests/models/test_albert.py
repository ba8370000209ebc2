"""ALBERT (factorised embedding, shared layer groups, SentencePiece): the biozoo.testing battery, over the family's cases in biozoo.testing.CASES."""

import numpy as np
import pytest

from biozoo import testing

pytestmark = pytest.mark.backends  # `make test` runs this battery under jax and torch too

FAMILY = "albert"


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


def test_layers_not_a_multiple_of_groups_use_transformers_group_index(tmp_path, tiny_spiece):
    """3 layers in 2 groups: transformers runs group int(i / 1.5) at depth i, i.e. 0, 0, 1."""
    import biozoo

    model = testing.make_model(FAMILY, "AlbertModel", num_hidden_layers=3, num_hidden_groups=2, inner_group_num=1)
    hf_dir = testing.save_hf_directory(model, tmp_path / "hf", tokenizer="sentencepiece", spiece_model=tiny_spiece)
    backbone = biozoo.from_preset(str(hf_dir))
    inputs = testing.case_inputs(model)
    sequence, pooled = testing.hf_outputs(model, inputs)
    outputs = testing.to_numpy(backbone(inputs))
    assert testing.max_diff(outputs["sequence_output"], sequence, inputs["padding_mask"]) <= 1e-4
    assert np.abs(outputs["pooled_output"] - pooled).max() <= 1e-4
