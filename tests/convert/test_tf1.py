"""TF1 checkpoints under the original google-research names (with Adam slots and
global_step) convert to presets equal to the transformers models they were made from."""

import json
import re
import shutil

import numpy as np
import pytest

import biozoo
from biozoo import testing as H
from biozoo.cli import main
from biozoo.convert.tf1 import convert_tf1
from biozoo.errors import CheckpointError
from biozoo.testing import tf1_checkpoints as T

TOLERANCE = 1e-4


def write_vocab(directory):
    (directory / "vocab.txt").write_text("\n".join(H.wordpiece_vocab()) + "\n", encoding="utf-8")


def google_config(model, keys):
    config = model.config.to_dict()
    return {k: config[k] for k in keys}


BERT_KEYS = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
             "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
             "type_vocab_size", "initializer_range"]


def assert_matches(preset, model, num_segments=2):
    backbone = biozoo.from_preset(str(preset))
    inputs = H.random_inputs(num_segments=num_segments)
    sequence, pooled = H.hf_outputs(model, inputs)
    outputs = backbone(inputs)
    assert H.max_diff(outputs["sequence_output"], sequence, inputs["padding_mask"]) <= TOLERANCE
    if pooled is not None:
        assert np.abs(outputs["pooled_output"].numpy() - pooled).max() <= TOLERANCE
    return backbone


def test_bert(tmp_path, monkeypatch):
    import biozoo.convert.tf1 as tf1

    read, open_tf1 = [], tf1.open_tf1

    def counting_reads(path):
        shapes, reader = open_tf1(path)

        class Reader:
            def get_tensor(self, name):
                read.append(name)
                return reader.get_tensor(name)

        return shapes, Reader()

    monkeypatch.setattr(tf1, "open_tf1", counting_reads)
    model = H.make_model("bert", "BertForPreTraining")
    T.write_tf1_checkpoint(T.bert_tf1_variables(T.torch_state(model)), tmp_path / "bert_model.ckpt")
    (tmp_path / "bert_config.json").write_text(json.dumps(google_config(model, BERT_KEYS)))
    write_vocab(tmp_path)
    convert_tf1(str(tmp_path / "bert_model.ckpt"), tmp_path / "preset", progress=False)
    assert_matches(tmp_path / "preset", model)
    # Adam's slots (each as large as its weight) and global_step are never read
    assert read and [n for n in read if n.endswith(("/adam_m", "/adam_v")) or n == "global_step"] == []
    from biozoo.preset_files import read_heads

    heads, _ = read_heads(tmp_path / "preset")
    state = T.torch_state(model)
    np.testing.assert_array_equal(heads["nsp/dense/kernel"], state["cls.seq_relationship.weight"].T)
    np.testing.assert_array_equal(heads["mlm/output_bias"], state["cls.predictions.bias"])


def test_albert(tmp_path, tiny_spiece):
    model = H.make_model("albert", "AlbertForPreTraining")
    T.write_tf1_checkpoint(T.albert_tf1_variables(T.torch_state(model)), tmp_path / "model.ckpt-100")
    keys = BERT_KEYS + ["embedding_size", "num_hidden_groups", "inner_group_num"]
    (tmp_path / "albert_config.json").write_text(json.dumps(google_config(model, keys)))
    shutil.copy(tiny_spiece, tmp_path / "30k-clean.model")
    convert_tf1(str(tmp_path / "model.ckpt-100"), tmp_path / "preset", progress=False)
    assert_matches(tmp_path / "preset", model)


@pytest.fixture(scope="module")
def electra_checkpoint(tmp_path_factory):
    """One ELECTRA pretraining checkpoint holding a discriminator and a smaller generator."""
    root = tmp_path_factory.mktemp("electra")
    common = dict(vocab_size=H.VOCAB_SIZE, embedding_size=128, max_position_embeddings=64, hidden_act="gelu",
                  initializer_range=0.2)
    import torch
    import transformers

    torch.manual_seed(0)
    disc = transformers.ElectraForPreTraining(transformers.ElectraConfig(
        hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512, **common)).eval()
    gen = transformers.ElectraForMaskedLM(transformers.ElectraConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=1, intermediate_size=256, **common)).eval()
    with torch.no_grad():
        for model in (disc, gen):
            for _, param in model.named_parameters():
                if param.ndim == 1:
                    param.add_(torch.randn_like(param) * 0.1)
        gen.electra.embeddings.load_state_dict(disc.electra.embeddings.state_dict())  # shared embeddings
    variables = T.electra_tf1_variables(T.torch_state(disc), T.torch_state(gen))
    T.write_tf1_checkpoint(variables, root / "model.ckpt-1000000")
    write_vocab(root)
    return root, disc, gen


def test_electra_discriminator_without_config(electra_checkpoint, tmp_path):
    root, disc, _ = electra_checkpoint
    assert not list(root.glob("*.json"))
    convert_tf1(str(root / "model.ckpt-1000000"), tmp_path / "disc", progress=False)
    backbone = assert_matches(tmp_path / "disc", disc)
    assert backbone.num_heads == 2 and backbone.embedding_dim == 128
    rtd = biozoo.ReplacedTokenDetector.from_preset(str(tmp_path / "disc"))
    inputs = H.random_inputs()
    import torch

    with torch.no_grad():
        expected = disc(input_ids=torch.tensor(inputs["token_ids"]).long(),
                        attention_mask=torch.tensor(inputs["padding_mask"]).long(),
                        token_type_ids=torch.tensor(inputs["segment_ids"]).long()).logits.numpy()
    assert H.max_diff(rtd(inputs), expected, inputs["padding_mask"]) <= TOLERANCE


def test_electra_generator_through_the_cli(electra_checkpoint, tmp_path, capsys):
    root, _, gen = electra_checkpoint
    status = main(["convert", "--from", "tf1", str(root / "model.ckpt-1000000"), "--part", "generator",
                   "--output", str(tmp_path / "gen")])
    assert status == 0, capsys.readouterr().err
    backbone = assert_matches(tmp_path / "gen", gen)
    assert backbone.hidden_dim == 64 and backbone.embedding_dim == 128
    mlm = biozoo.MaskedLM.from_preset(str(tmp_path / "gen"))
    inputs = H.random_inputs()
    positions = np.array([[1, 2], [3, 4], [5, 6]], np.int32)
    import torch

    with torch.no_grad():
        logits = gen(input_ids=torch.tensor(inputs["token_ids"]).long(),
                     attention_mask=torch.tensor(inputs["padding_mask"]).long(),
                     token_type_ids=torch.tensor(inputs["segment_ids"]).long()).logits.numpy()
    expected = np.take_along_axis(logits, positions[..., None], axis=1)
    ours = mlm({**inputs, "mask_positions": positions}).numpy()
    assert np.abs(ours - expected).max() <= TOLERANCE * max(1, np.abs(expected).max())


def test_missing_layer_and_unknown_variable_are_named(tmp_path):
    model = H.make_model("bert", "BertModel")
    variables = T.bert_tf1_variables(T.torch_state(model))
    dropped = [k for k in variables if k.startswith("bert/encoder/layer_1/")]
    for key in dropped:
        del variables[key]
    variables["bert/encoder/layer_0/attention/self/rotary/kernel"] = np.zeros((3, 3), np.float32)
    T.write_tf1_checkpoint(variables, tmp_path / "ckpt")
    (tmp_path / "bert_config.json").write_text(json.dumps(google_config(model, BERT_KEYS)))
    write_vocab(tmp_path)
    with pytest.raises(CheckpointError) as error:
        convert_tf1(str(tmp_path / "ckpt"), tmp_path / "preset", progress=False)
    message = str(error.value)
    # the Keras weight, and the checkpoint's name that gives it
    assert "transformer_layer_1/feedforward_output_dense/kernel (from 'bert/encoder/layer_1/output/dense/kernel')" \
        in message, message
    assert "bert/encoder/layer_0/attention/self/rotary/kernel" in message
    assert not (tmp_path / "preset").exists()


def test_vocabulary_size_disagreeing_with_the_embeddings(tmp_path):
    model = H.make_model("bert", "BertModel")
    T.write_tf1_checkpoint(T.bert_tf1_variables(T.torch_state(model)), tmp_path / "ckpt", adam_slots=False)
    (tmp_path / "bert_config.json").write_text(json.dumps(google_config(model, BERT_KEYS)))
    (tmp_path / "vocab.txt").write_text("\n".join(H.wordpiece_vocab() + ["extra"] * 0 + [f"new{i}" for i in range(5)]))
    with pytest.raises(CheckpointError, match="vocabulary has 104 entries"):
        convert_tf1(str(tmp_path / "ckpt"), tmp_path / "preset", progress=False)
    assert not (tmp_path / "preset").exists()


def test_a_config_error_names_the_config_file_and_key(tmp_path):
    model = H.make_model("bert", "BertModel")
    T.write_tf1_checkpoint(T.bert_tf1_variables(T.torch_state(model)), tmp_path / "ckpt", adam_slots=False)
    config = {**google_config(model, BERT_KEYS), "hidden_act": "swishy"}
    (tmp_path / "bert_config.json").write_text(json.dumps(config))
    write_vocab(tmp_path)
    with pytest.raises(CheckpointError, match=re.escape(str(tmp_path / "bert_config.json")) + ".*hidden_act.*swishy"):
        convert_tf1(str(tmp_path / "ckpt"), tmp_path / "preset", progress=False)
    assert not (tmp_path / "preset").exists()
