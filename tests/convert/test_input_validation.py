"""Converters check their inputs first: a wrong file is a one-line error naming the file and
what was expected, and nothing is written."""

import json
import shutil
from pathlib import Path

import pytest

from biozoo import testing as H
from biozoo.cli import main
from biozoo.testing import tf1_checkpoints as T

GLUON = Path(__file__).resolve().parents[1] / "fixtures" / "gluon" / "electra_disc"


def convert(capsys, *argv):
    status = main(["convert", *argv])
    err = capsys.readouterr().err.strip()
    return status, err


def assert_one_line_error(status, err, output, *expected):
    assert status == 2
    assert len(err.splitlines()) == 1, err
    for text in expected:
        assert text in err, err
    assert not output.exists()


@pytest.fixture(scope="module")
def albert_checkpoint(tmp_path_factory):
    root = tmp_path_factory.mktemp("albert_tf1")
    model = H.make_model("albert", "AlbertForPreTraining")
    T.write_tf1_checkpoint(T.albert_tf1_variables(T.torch_state(model)), root / "model.ckpt-100")
    config = model.config.to_dict()
    keys = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "hidden_act", "max_position_embeddings", "type_vocab_size", "embedding_size", "num_hidden_groups",
            "inner_group_num"]
    (root / "albert_config.json").write_text(json.dumps({k: config[k] for k in keys}))
    (root / "vocab.txt").write_text("\n".join(H.wordpiece_vocab()) + "\n", encoding="utf-8")
    return root


def test_albert_with_a_wordpiece_vocabulary(capsys, albert_checkpoint, tmp_path):
    vocab = albert_checkpoint / "vocab.txt"
    status, err = convert(capsys, "--from", "tf1", str(albert_checkpoint / "model.ckpt-100"), "--family", "albert",
                          "--vocab", str(vocab), "--output", str(tmp_path / "out"))
    assert_one_line_error(status, err, tmp_path / "out", str(vocab), "a text file", "SentencePiece .model")
    assert "ParseFromArray" not in err


def test_bert_with_a_sentencepiece_model(capsys, tmp_path, tiny_spiece):
    model = H.make_model("bert", "BertForPreTraining")
    T.write_tf1_checkpoint(T.bert_tf1_variables(T.torch_state(model)), tmp_path / "bert_model.ckpt")
    config = {k: v for k, v in model.config.to_dict().items() if k in ("vocab_size", "hidden_size",
              "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
              "max_position_embeddings", "type_vocab_size")}
    (tmp_path / "bert_config.json").write_text(json.dumps(config))
    status, err = convert(capsys, "--from", "tf1", str(tmp_path / "bert_model.ckpt"), "--vocab", str(tiny_spiece),
                          "--output", str(tmp_path / "out"))
    assert_one_line_error(status, err, tmp_path / "out", str(tiny_spiece), "a SentencePiece model", "WordPiece vocab.txt")


def test_directory_without_a_checkpoint(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    status, err = convert(capsys, "--from", "tf1", str(tmp_path / "empty"), "--output", str(tmp_path / "out"))
    assert_one_line_error(status, err, tmp_path / "out", str(tmp_path / "empty"), "no .index file",
                          "PREFIX.index and PREFIX.data-*-of-*")


def test_directory_with_one_checkpoint_is_read(albert_checkpoint):
    from biozoo.convert.tf1 import checkpoint_prefix

    assert checkpoint_prefix(str(albert_checkpoint)) == f"{albert_checkpoint}/model.ckpt-100"
    assert checkpoint_prefix(f"{albert_checkpoint}/model.ckpt-100.index") == f"{albert_checkpoint}/model.ckpt-100"


def test_index_without_its_data_file(capsys, albert_checkpoint, tmp_path):
    shutil.copy(albert_checkpoint / "model.ckpt-100.index", tmp_path / "model.ckpt-100.index")
    shutil.copy(albert_checkpoint / "albert_config.json", tmp_path)
    status, err = convert(capsys, "--from", "tf1", str(tmp_path / "model.ckpt-100.index"), "--output",
                          str(tmp_path / "out"))
    assert_one_line_error(status, err, tmp_path / "out", f"{tmp_path}/model.ckpt-100.index", "no data file",
                          "model.ckpt-100.data-00000-of-00001")


def test_gluon_file_given_as_tf1(capsys, tmp_path):
    params = GLUON / "disc_model.v3.params"
    status, err = convert(capsys, "--from", "tf1", str(params), "--output", str(tmp_path / "out"))
    assert_one_line_error(status, err, tmp_path / "out", str(params), "GluonNLP/MXNet .params", "--from gluon")


def test_tf1_file_given_as_gluon(capsys, albert_checkpoint, tmp_path):
    index = albert_checkpoint / "model.ckpt-100.index"
    status, err = convert(capsys, "--from", "gluon", str(index), "--output", str(tmp_path / "out"))
    assert_one_line_error(status, err, tmp_path / "out", str(index), "TF1 checkpoint", "GluonNLP ELECTRA .params")


@pytest.mark.parametrize("shape, offsets", [([-2, -50], [0, 400]), ([2.5, 4], [0, 40]), ([4, 4], [0, "64"])])
def test_a_corrupt_safetensors_header_entry_is_named(capsys, tmp_path, shape, offsets):
    _, directory = H.save_case("bert", "BertModel", tmp_path / "bert")
    path = directory / "model.safetensors"
    data = path.read_bytes()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    name = next(k for k in header if k != "__metadata__")
    header[name] = {**header[name], "shape": shape, "data_offsets": offsets}
    encoded = json.dumps(header).encode()
    path.write_bytes(len(encoded).to_bytes(8, "little") + encoded + data[8 + length:])
    status, err = convert(capsys, "--from", "hf", str(directory), "--output", str(tmp_path / "out"))
    assert_one_line_error(status, err, tmp_path / "out", str(path), f"corrupt safetensors header entry for '{name}'")
