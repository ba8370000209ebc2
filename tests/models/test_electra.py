"""ELECTRA (embedding projection, no pooler, replaced-token detection): the biozoo.testing battery, over the family's cases in biozoo.testing.CASES."""

import pytest

from biozoo import testing

pytestmark = pytest.mark.backends  # `make test` runs this battery under jax and torch too

FAMILY = "electra"


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
