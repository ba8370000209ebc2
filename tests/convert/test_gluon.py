"""GluonNLP ELECTRA `.params` written by real mxnet 1.9.1 (and an MXNet 2 npz layout file)
convert to presets equal to the transformers models they were made from."""

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

import biozoo
from biozoo.cli import main
from biozoo.convert.gluon import convert_gluon
from biozoo.errors import CheckpointError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gluon"


def reference(folder, model_cls):
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    data = np.load(folder / "reference.npz")
    model = getattr(transformers, model_cls).from_pretrained(str(folder / "hf")).eval()
    inputs = {"token_ids": data["input_ids"].astype("int32"), "segment_ids": data["token_type_ids"].astype("int32"),
              "padding_mask": data["attention_mask"].astype("int32")}
    with torch.no_grad():
        out = model(input_ids=torch.tensor(inputs["token_ids"]).long(),
                    token_type_ids=torch.tensor(inputs["segment_ids"]).long(),
                    attention_mask=torch.tensor(inputs["padding_mask"]).long(), output_hidden_states=True)
    return inputs, out


def max_diff(a, b, mask):
    return float(np.abs(np.asarray(a) - np.asarray(b))[np.asarray(mask).astype(bool)].max())


@pytest.mark.parametrize("filename", ["disc_model.v2.params", "disc_model.v3.params", "disc_model.npz.params",
                                      "model.v3.params"])
def test_discriminator(filename, tmp_path):
    folder = FIXTURES / "electra_disc"
    convert_gluon(str(folder / filename), tmp_path / "preset", progress=False)
    inputs, out = reference(folder, "ElectraForPreTraining")
    backbone = biozoo.from_preset(str(tmp_path / "preset"))
    assert max_diff(backbone(inputs)["sequence_output"], out.hidden_states[-1].numpy(), inputs["padding_mask"]) <= 1e-4
    if filename != "model.v3.params":  # the backbone-only file has no head
        rtd = biozoo.ReplacedTokenDetector.from_preset(str(tmp_path / "preset"))
        assert max_diff(rtd(inputs), out.logits.numpy(), inputs["padding_mask"]) <= 1e-4


@pytest.mark.parametrize("filename", ["gen_model.v3.params", "gen_model_nodedup.v2.params"])
def test_generator_with_tied_embedding_under_either_name(filename, tmp_path):
    folder = FIXTURES / "electra_gen"
    convert_gluon(str(folder / filename), tmp_path / "preset", part="generator", progress=False)
    inputs, out = reference(folder, "ElectraForMaskedLM")
    backbone = biozoo.from_preset(str(tmp_path / "preset"))
    assert max_diff(backbone(inputs)["sequence_output"], out.hidden_states[-1].numpy(), inputs["padding_mask"]) <= 1e-4
    positions = np.array([[0, 1, 2], [1, 2, 3]], np.int32)
    logits = biozoo.MaskedLM.from_preset(str(tmp_path / "preset"))({**inputs, "mask_positions": positions}).numpy()
    expected = np.take_along_axis(out.logits.numpy(), positions[..., None], axis=1)
    assert np.abs(logits - expected).max() <= 1e-4 * max(1, np.abs(expected).max())


def test_cli(tmp_path, capsys, monkeypatch):
    folder = FIXTURES / "electra_disc"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "system-tmp"))  # vocab.json's vocab.txt is made there
    (tmp_path / "system-tmp").mkdir()
    assert main(["convert", "--from", "gluon", str(folder / "disc_model.v3.params"), "--output", str(tmp_path / "p")]) == 0
    assert biozoo.Tokenizer.from_preset(str(tmp_path / "p")).lowercase is True
    assert list((tmp_path / "system-tmp").iterdir()) == []  # and removed


@pytest.mark.parametrize("folder, filename, part", [("electra_disc", "disc_model.v3.params", "generator"),
                                                    ("electra_gen", "gen_model.v3.params", "discriminator")])
def test_the_other_part_is_refused_not_mislabelled(folder, filename, part, tmp_path):
    other = "discriminator" if part == "generator" else "generator"
    with pytest.raises(CheckpointError, match=rf"{filename}: holds the {other}'s head .* convert it with --part {other}"):
        convert_gluon(str(FIXTURES / folder / filename), tmp_path / "preset", part=part, progress=False)
    assert not (tmp_path / "preset").exists()


def test_a_missing_parameter_is_named(tmp_path):
    folder = copy_fixture(tmp_path)
    path = folder / "disc_model.npz.params"
    with np.load(path) as data:
        kept = {k: data[k] for k in data.files if not k.endswith("layers.0.ffn.ffn_1.weight")}
    assert len(kept) == len(np.load(path).files) - 1
    with open(path, "wb") as f:
        np.savez(f, **kept)
    with pytest.raises(CheckpointError, match=r"disc_model.npz.params: no '...all_encoder_layers.0.ffn.ffn_1.weight' "
                                              r"parameter"):
        convert_gluon(str(path), tmp_path / "preset", progress=False)


def copy_fixture(tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(FIXTURES / "electra_disc", folder)
    return folder


def test_truncated_params(tmp_path):
    folder = copy_fixture(tmp_path)
    path = folder / "disc_model.v3.params"
    path.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(CheckpointError, match="truncated") as error:
        convert_gluon(str(path), tmp_path / "preset", progress=False)
    assert str(path) in str(error.value)
    assert not (tmp_path / "preset").exists()


def test_wrong_magic_number(tmp_path):
    folder = copy_fixture(tmp_path)
    path = folder / "disc_model.v3.params"
    data = bytearray(path.read_bytes())
    data[0:8] = (0x113).to_bytes(8, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="wrong magic number 0x113"):
        convert_gluon(str(path), tmp_path / "preset", progress=False)
    assert not (tmp_path / "preset").exists()
