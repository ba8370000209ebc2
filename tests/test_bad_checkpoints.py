"""Bad input gets a clear error naming the file or tensor, and leaves no partial cache."""

import json
import os
import pickle

import pytest

import biozoo
from biozoo import testing as H
from biozoo.errors import CheckpointError


def cache_entries():
    """Everything in the biozoo cache except lock files: must stay empty after a failure."""
    root = os.environ["BIOZOO_CACHE"]
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        found += [os.path.join(dirpath, f) for f in filenames if not f.endswith(".lock")]
    return found


@pytest.fixture
def hf_dir(tmp_path):
    return H.save_hf_directory(H.make_model("bert", "BertForPreTraining"), tmp_path / "hf")


def load_fails(directory, match):
    with pytest.raises(CheckpointError, match=match) as error:
        biozoo.from_preset(str(directory))
    assert cache_entries() == []
    return str(error.value)


def test_truncated_safetensors(hf_dir):
    path = hf_dir / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 1000])
    message = load_fails(hf_dir, "truncated")
    assert str(path) in message


def test_corrupt_safetensors_header(hf_dir):
    path = hf_dir / "model.safetensors"
    data = bytearray(path.read_bytes())
    data[8:40] = b"{ this is not json ]]]]]]]]]]]]]]"[:32]
    path.write_bytes(bytes(data))
    assert str(path) in load_fails(hf_dir, "corrupt")


def test_empty_weights_file(hf_dir):
    (hf_dir / "model.safetensors").write_bytes(b"")
    load_fails(hf_dir, "model.safetensors")


class RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_bin_holding_a_pickle_that_would_run_code_is_refused(tmp_path):
    pytest.importorskip("torch")
    import torch

    directory = H.save_hf_directory(H.make_model("bert", "BertModel"), tmp_path / "hf", "bin")
    marker = tmp_path / "pwned"
    state = torch.load(directory / "pytorch_model.bin", weights_only=True)
    state["evil"] = RunsCode(marker)
    with open(directory / "pytorch_model.bin", "wb") as f:
        pickle.dump(state, f)  # an old-style (non-zip) pickle, as a malicious upload could be
    message = load_fails(directory, "refused")
    assert "pytorch_model.bin" in message
    assert not marker.exists()
    torch.save({"weights": RunsCode(marker)}, directory / "pytorch_model.bin")  # zip format too
    load_fails(directory, "refused")
    assert not marker.exists()


def test_shapes_that_disagree_with_the_config(hf_dir):
    config = json.loads((hf_dir / "config.json").read_text())
    config["intermediate_size"] = 40
    (hf_dir / "config.json").write_text(json.dumps(config))
    message = load_fails(hf_dir, "does not fit")
    assert "bert.encoder.layer.0.intermediate.dense" in message  # the tensor, by name
    assert ("(37,)" in message and "(40,)" in message) or ("(37, 32)" in message and "(32, 40)" in message)


def rewrite_safetensors(directory, edit):
    from safetensors.numpy import load_file, save_file

    path = directory / "model.safetensors"
    tensors = load_file(path)
    edit(tensors)
    save_file(tensors, path)


def test_missing_tensors_are_listed(hf_dir):
    def drop(tensors):
        del tensors["bert.encoder.layer.1.output.dense.weight"]
        del tensors["bert.embeddings.LayerNorm.bias"]

    rewrite_safetensors(hf_dir, drop)
    message = load_fails(hf_dir, "missing tensors")
    assert "transformer_layer_1/feedforward_output_dense/kernel" in message
    assert "embeddings_layer_norm/beta" in message


def test_unexpected_tensors_are_listed(hf_dir):
    import numpy as np

    def add(tensors):
        tensors["bert.encoder.layer.0.adapter.weight"] = np.zeros((2, 2), np.float32)
        tensors["bert.encoder.layer.7.output.dense.weight"] = np.zeros((32, 37), np.float32)

    rewrite_safetensors(hf_dir, add)
    message = load_fails(hf_dir, "unexpected tensors")
    assert "bert.encoder.layer.0.adapter.weight" in message
    assert "bert.encoder.layer.7.output.dense.weight" in message


def test_unknown_family(hf_dir):
    config = json.loads((hf_dir / "config.json").read_text())
    config["model_type"] = "gpt2"
    (hf_dir / "config.json").write_text(json.dumps(config))
    message = load_fails(hf_dir, "model_type 'gpt2'")
    assert "config.json" in message and "megatron-bert" in message


def test_vocabulary_larger_than_the_embedding(hf_dir):
    with open(hf_dir / "vocab.txt", "a", encoding="utf-8") as f:
        f.write("extra1\nextra2\n")
    message = load_fails(hf_dir, "vocabulary has 101 entries")
    assert "vocab.txt" in message


def test_no_weights_at_all(hf_dir):
    os.remove(hf_dir / "model.safetensors")
    load_fails(hf_dir, "no weights found")


@pytest.mark.parametrize("shard_name", ["absolute", "../elsewhere/secret.safetensors", "sub/../../secret.safetensors"])
def test_a_shard_index_naming_files_outside_the_folder_is_refused(hf_dir, shard_name):
    outside = hf_dir.parent / "elsewhere"
    outside.mkdir()
    os.replace(hf_dir / "model.safetensors", outside / "secret.safetensors")
    if shard_name == "absolute":
        shard_name = str(outside / "secret.safetensors")
    names = ["bert.embeddings.word_embeddings.weight"]
    (hf_dir / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {n: shard_name for n in names}}))
    message = load_fails(hf_dir, "shard files must be relative paths inside")
    assert "model.safetensors.index.json" in message and repr(shard_name) in message


@pytest.mark.parametrize("vocab_size", ["absent", None, "30522"])
def test_a_config_without_a_vocab_size_is_named(hf_dir, vocab_size):
    config = json.loads((hf_dir / "config.json").read_text())
    if vocab_size == "absent":
        del config["vocab_size"]
    else:
        config["vocab_size"] = vocab_size
    (hf_dir / "config.json").write_text(json.dumps(config))
    message = load_fails(hf_dir, "vocab_size")
    assert str(hf_dir / "config.json") in message


def test_cli_prints_one_line(hf_dir, capsys):
    from biozoo.cli import main

    (hf_dir / "model.safetensors").write_bytes(b"12345678")
    assert main(["convert", "--from", "hf", str(hf_dir), "--output", str(hf_dir.parent / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model.safetensors" in err[0]
    assert not (hf_dir.parent / "out").exists()
