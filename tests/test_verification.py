"""`biozoo verify`: parity certificates whose numbers equal a comparison made here with
transformers in this process, for every family, a converted head of each kind and the real
MiniLM; a damaged preset fails its certificate."""

import contextlib
import json
import os

import keras
import numpy as np
import pytest

import biozoo
from biozoo import presets
from biozoo import testing as H
from biozoo.cli import main
from biozoo.export.certificate import packed_fixed_inputs
from biozoo.verification import PARITY_CERTIFICATE_FILE, sequence_length, verify

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
    with open(f"{presets.resolve_preset(str(directory))}/{PARITY_CERTIFICATE_FILE}", encoding="utf-8") as f:
        saved = json.load(f)
    assert saved["max_abs_diff"] == certificate["max_abs_diff"]
    assert set(saved["versions"]) == {"biozoo", "keras", "backend", "tensorflow", "transformers", "torch"}
    assert saved["versions"]["backend"] == keras.backend.backend()  # a certificate says which backend it measured


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


SENTENCE_HEADS = [("bert", "BertForPreTraining", "nsp"), ("albert", "AlbertForPreTraining", "sop"),
                  ("mobilebert", "MobileBertForPreTraining", "nsp"), ("megatron_bert", "MegatronBertForPreTraining", "nsp")]


def _certificate_inputs(directory):
    tokenizer = biozoo.Tokenizer.from_preset(str(directory))
    return packed_fixed_inputs(tokenizer, sequence_length(presets.resolve_preset(str(directory))))


@pytest.mark.parametrize("name, hf_class, sentence_task", SENTENCE_HEADS)
def test_sentence_heads_are_compared(name, hf_class, sentence_task, tmp_path):
    """NSP / SOP logits: transformers here against the Dense head `biozoo pretrain --nsp/--sop`
    trains, loaded from the converted preset."""
    import torch

    from biozoo.train.pretrain import MaskedLMPretrainer, _sentence_head_weights

    model, directory = H.save_case(H.get_case(name), hf_class, tmp_path / name)
    certificate = verify(str(directory))
    inputs = _certificate_inputs(directory)
    with torch.no_grad():
        out = model(**H.torch_inputs(model, inputs))
    expected = (out.sop_logits if sentence_task == "sop" else out.seq_relationship_logits).numpy()
    trainer = MaskedLMPretrainer(biozoo.MaskedLM.from_preset(str(directory)), sentence_task,
                                 sentence_head_weights=_sentence_head_weights(str(directory), sentence_task))
    ours = np.asarray(trainer.sentence_head(trainer.task.backbone(inputs)["pooled_output"]))
    diff = float(np.abs(ours - expected).max())
    assert diff <= 1e-4
    assert certificate["max_abs_diff"][f"{sentence_task}_logits"] == pytest.approx(diff, abs=1e-6)
    assert certificate["heads_compared"] == sorted(["mlm", sentence_task]) and certificate["heads_not_compared"] == {}
    assert certificate["passed"]


TASK_HEADS = [("bert", "BertForTokenClassification", "TokenClassifier"),
              ("albert", "AlbertForSequenceClassification", "SequenceClassifier"),
              ("electra", "ElectraForSequenceClassification", "SequenceClassifier"),
              ("distilbert", "DistilBertForQuestionAnswering", "QuestionAnswerer"),
              ("mobilebert", "MobileBertForTokenClassification", "TokenClassifier"),
              ("megatron_bert", "MegatronBertForQuestionAnswering", "QuestionAnswerer")]


@pytest.mark.parametrize("name, hf_class, task_class", TASK_HEADS)
def test_task_heads_are_compared(name, hf_class, task_class, tmp_path):
    import torch

    labels = {} if task_class == "QuestionAnswerer" else {"num_labels": 3}  # QA heads have 2 outputs
    model, directory = H.save_case(H.get_case(name), hf_class, tmp_path / name, architectures=[hf_class], **labels)
    certificate = verify(str(directory))
    inputs = _certificate_inputs(directory)
    with torch.no_grad():
        out = model(**H.torch_inputs(model, inputs))
    ours = np.asarray(getattr(biozoo, task_class).from_preset(str(directory))(inputs))
    if task_class == "QuestionAnswerer":
        expected = np.stack([out.start_logits.numpy(), out.end_logits.numpy()], -1)
    else:
        expected = out.logits.numpy()
    delta = np.abs(ours - expected)
    diff = float((delta if task_class == "SequenceClassifier" else delta[inputs["padding_mask"].astype(bool)]).max())
    assert diff <= 1e-4
    assert certificate["max_abs_diff"]["task_logits"] == pytest.approx(diff, abs=1e-6)
    assert certificate["heads_not_compared"] == {} and certificate["passed"]


def test_a_task_head_of_unknown_class_is_listed_not_compared(tmp_path):
    _, directory = H.save_case(H.get_case("bert"), "BertForTokenClassification", tmp_path / "bert", num_labels=3)
    certificate = verify(str(directory))
    assert "task_logits" not in certificate["max_abs_diff"]
    assert "names no architecture" in certificate["heads_not_compared"]["classifier"]


@contextlib.contextmanager
def _unseen_by_the_cache(path):
    """Damage made in the block keeps `path`'s size and modification time (as bit rot): the cache's
    check at load time, which reads only a file whose size or time changed, lets it through, and
    verification must catch it."""
    stat = os.stat(path)
    yield
    assert os.path.getsize(path) == stat.st_size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_damaged_head_fails(tmp_path):
    from safetensors.numpy import load_file, save_file

    from biozoo.preset_files import HEADS_FILE

    _, directory = H.save_case(H.get_case("bert"), "BertForPreTraining", tmp_path / "bert")
    assert verify(str(directory))["passed"]
    path = f"{presets.resolve_preset(str(directory))}/{HEADS_FILE}"
    heads = load_file(path)
    heads["nsp/dense/bias"] = heads["nsp/dense/bias"] + np.float32(0.01)
    with _unseen_by_the_cache(path):
        save_file(heads, path)
    certificate = verify(str(directory))
    assert not certificate["passed"]
    assert certificate["max_abs_diff"]["nsp_logits"] == pytest.approx(0.01, abs=1e-4)
    # the undamaged head as the battery holds a tiny case's heads (the certificate's own 1e-3 for
    # mlm_logits is for real vocabularies' larger logits); measured 3.7e-6 here
    assert certificate["max_abs_diff"]["mlm_logits"] <= H.TOLERANCE


def test_a_misshapen_converted_head_is_refused_naming_the_file_and_its_tensors(tmp_path):
    from safetensors.numpy import load_file, save_file

    from biozoo.errors import CheckpointError
    from biozoo.preset_files import HEADS_FILE

    _, directory = H.save_case(H.get_case("bert"), "BertForMaskedLM", tmp_path / "bert")
    weights = load_file(directory / "model.safetensors")
    name = next(key for key in weights if key.endswith("cls.predictions.transform.dense.weight"))
    weights[name] = weights[name][:16].copy()  # [out, in] -> 16 outputs, not 32
    save_file(weights, directory / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match=rf"{HEADS_FILE}: .*mlm/dense/kernel \(32, 16\)"):
        biozoo.MaskedLM.from_preset(str(directory))


def test_a_damaged_preset_fails(tmp_path, capsys):
    import h5py

    case = H.get_case("bert")
    _, directory = H.save_case(case, case.model_class, tmp_path / "bert")
    preset = presets.resolve_preset(str(directory))
    with _unseen_by_the_cache(f"{preset}/model.weights.h5"), h5py.File(f"{preset}/model.weights.h5", "r+") as f:
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


def test_a_parity_certificate_under_its_earlier_name_is_still_read(tmp_path):
    from biozoo.preset_files import read_certificate

    assert read_certificate(tmp_path) is None
    (tmp_path / "certificate.json").write_text(json.dumps({"passed": True}))  # written by an earlier biozoo
    assert read_certificate(tmp_path) == {"passed": True}
    (tmp_path / PARITY_CERTIFICATE_FILE).write_text(json.dumps({"passed": False}))
    assert read_certificate(tmp_path) == {"passed": False}  # the current name wins
