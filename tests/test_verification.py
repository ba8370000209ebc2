"""`biozoo verify`: parity certificates whose numbers equal a comparison made here with
transformers in this process, for every family, a converted head of each kind and the real
MiniLM; a damaged preset fails its certificate."""

import json

import numpy as np
import pytest

import biozoo
from biozoo import presets
from biozoo import testing as H
from biozoo.cli import main
from biozoo.export.certificate import packed_fixed_inputs
from biozoo.verification import CERTIFICATE_FILE, sequence_length, verify

BASE_CASES = sorted({name for name, _ in H.cases(kind="ids_export")})


def _independent_diff(model, directory):
    """max |diff| of the sequence output, computed here: transformers in this process, biozoo's
    backbone, on the certificate's inputs."""
    tokenizer = biozoo.Tokenizer.from_preset(str(directory))
    inputs = packed_fixed_inputs(tokenizer, sequence_length(presets.resolve_preset(str(directory))))
    sequence, pooled = H.hf_outputs(model, inputs)
    ours = biozoo.from_preset(str(directory))(inputs)
    diffs = {"sequence_output": H.max_diff(ours["sequence_output"], sequence, inputs["padding_mask"])}
    if pooled is not None:
        diffs["pooled_output"] = float(np.abs(np.asarray(ours["pooled_output"]) - pooled).max())
    return diffs


@pytest.mark.parametrize("name", BASE_CASES)
def test_certificate_numbers_equal_an_independent_comparison(name, tmp_path):
    case = H.get_case(name)
    model, directory = H.save_case(case, case.model_class, tmp_path / name)
    certificate = verify(str(directory))
    expected = _independent_diff(model, directory)
    assert set(certificate["max_abs_diff"]) == set(expected)
    for output, value in expected.items():
        assert certificate["max_abs_diff"][output] == pytest.approx(value, abs=1e-7), output
        assert value <= 1e-4
    assert certificate["passed"] and certificate["tokenizer"]["identical"] == certificate["tokenizer"]["sentences"]
    with open(f"{presets.resolve_preset(str(directory))}/{CERTIFICATE_FILE}", encoding="utf-8") as f:
        saved = json.load(f)
    assert saved["max_abs_diff"] == certificate["max_abs_diff"]
    assert set(saved["versions"]) == {"biozoo", "keras", "tensorflow", "transformers", "torch"}


@pytest.mark.parametrize("name, hf_class, head", [("bert", "BertForMaskedLM", "mlm_logits"),
                                                  ("electra", "ElectraForPreTraining", "rtd_logits")])
def test_converted_heads_are_compared(name, hf_class, head, tmp_path):
    import torch

    model, directory = H.save_case(H.get_case(name), hf_class, tmp_path / name)
    certificate = verify(str(directory))
    tokenizer = biozoo.Tokenizer.from_preset(str(directory))
    inputs = packed_fixed_inputs(tokenizer, sequence_length(presets.resolve_preset(str(directory))))
    with torch.no_grad():
        logits = model(**H.torch_inputs(model, inputs)).logits.numpy()
    if head == "mlm_logits":
        positions = np.tile(np.arange(inputs["token_ids"].shape[1], dtype=np.int32), (len(logits), 1))
        ours = np.asarray(biozoo.MaskedLM.from_preset(str(directory))({**inputs, "mask_positions": positions}))
    else:
        ours = np.asarray(biozoo.ReplacedTokenDetector.from_preset(str(directory))(inputs))
    expected = float(np.abs(ours - logits)[inputs["padding_mask"].astype(bool)].max())
    assert certificate["max_abs_diff"][head] == pytest.approx(expected, abs=1e-6)
    assert certificate["passed"]


def test_a_damaged_preset_fails(tmp_path, capsys):
    import h5py

    case = H.get_case("bert")
    _, directory = H.save_case(case, case.model_class, tmp_path / "bert")
    preset = presets.resolve_preset(str(directory))
    with h5py.File(f"{preset}/model.weights.h5", "r+") as f:
        datasets = []
        f.visititems(lambda key, item: datasets.append(item) if isinstance(item, h5py.Dataset) else None)
        biggest = max(datasets, key=lambda d: d.size)
        noise = np.random.default_rng(0).normal(0, 0.05, biggest.shape)  # not a constant: LayerNorm removes those
        biggest[...] = biggest[...] + noise.astype(biggest.dtype)
    assert main(["verify", str(directory)]) == 1
    printed = json.loads(capsys.readouterr().out)
    assert not printed["passed"] and printed["max_abs_diff"]["sequence_output"] > 1e-3


@pytest.mark.slow
def test_real_minilm(minilm_dir):
    certificate = verify(str(minilm_dir))
    assert certificate["passed"], certificate
    assert certificate["tokenizer"]["identical"] == certificate["tokenizer"]["sentences"] == 15
    assert certificate["max_abs_diff"]["sequence_output"] <= 1e-4


def test_info_shows_the_certificate(tmp_path, monkeypatch, capsys):
    H.offline_registry_mirror(monkeypatch, tmp_path, "pubmedbert_abstract")
    assert main(["info", "pubmedbert_abstract"]) == 0
    assert "certificate   none" in capsys.readouterr().out
    assert main(["verify", "pubmedbert_abstract"]) == 0
    capsys.readouterr()
    assert main(["info", "pubmedbert_abstract"]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("certificate")][0]
    assert "passed" in line and "tokenizer ids identical on 15/15" in line
