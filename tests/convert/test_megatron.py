"""Megatron-LM state dicts (MegatronBERT.pt) and NeMo .nemo archives, made from random
transformers MegatronBert models, convert to matching presets; unsafe archives are refused."""

import argparse
import io
import re
import tarfile

import numpy as np
import pytest

import biozoo
from biozoo import testing as H
from biozoo.convert.megatron import convert_megatron
from biozoo.errors import CheckpointError

torch = pytest.importorskip("torch")


def fuse_qkv(q, k, v, heads, version):
    """Megatron's fused rows: (3, heads, dim) in v0, (heads, dim, 3) in v1, (heads, 3, dim) from v2."""
    dim = q.shape[0] // heads
    parts = [t.reshape(heads, dim, *t.shape[1:]) for t in (q, k, v)]
    if version < 1.0:
        fused = torch.stack(parts, 0)
    elif version < 2.0:
        fused = torch.stack(parts, 2)
    else:
        fused = torch.stack(parts, 1)
    return fused.reshape(3 * q.shape[0], *q.shape[1:]).contiguous()


def megatron_state(model, version):
    s = {k: v.detach().clone() for k, v in model.state_dict().items()}
    heads = model.config.num_attention_heads
    layers = {}
    for i in range(model.config.num_hidden_layers):
        p = f"bert.encoder.layer.{i}."
        for kind in ("weight", "bias"):
            layers[f"layers.{i}.input_layernorm.{kind}"] = s[p + f"attention.ln.{kind}"]
            layers[f"layers.{i}.attention.query_key_value.{kind}"] = fuse_qkv(
                *(s[p + f"attention.self.{x}.{kind}"] for x in ("query", "key", "value")), heads, version)
            layers[f"layers.{i}.attention.dense.{kind}"] = s[p + f"attention.output.dense.{kind}"]
            layers[f"layers.{i}.post_attention_layernorm.{kind}"] = s[p + f"ln.{kind}"]
            layers[f"layers.{i}.mlp.dense_h_to_4h.{kind}"] = s[p + f"intermediate.dense.{kind}"]
            layers[f"layers.{i}.mlp.dense_4h_to_h.{kind}"] = s[p + f"output.dense.{kind}"]
    for kind in ("weight", "bias"):
        layers[f"final_layernorm.{kind}"] = s[f"bert.encoder.ln.{kind}"]
    e = "bert.embeddings."
    return {
        "model": {
            "language_model": {
                "embedding": {"word_embeddings": {"weight": s[e + "word_embeddings.weight"]},
                              "position_embeddings": {"weight": s[e + "position_embeddings.weight"]},
                              "tokentype_embeddings": {"weight": s[e + "token_type_embeddings.weight"]}},
                "transformer": layers,
                "pooler": {"dense.weight": s["bert.pooler.dense.weight"], "dense.bias": s["bert.pooler.dense.bias"]},
            },
            "lm_head": {"dense.weight": s["cls.predictions.transform.dense.weight"],
                        "dense.bias": s["cls.predictions.transform.dense.bias"],
                        "layernorm.weight": s["cls.predictions.transform.LayerNorm.weight"],
                        "layernorm.bias": s["cls.predictions.transform.LayerNorm.bias"],
                        "bias": s["cls.predictions.bias"]},
            "binary_head": {"weight": s["cls.seq_relationship.weight"], "bias": s["cls.seq_relationship.bias"]},
        },
        "checkpoint_version": version,
        "args": argparse.Namespace(num_layers=2, hidden_size=32, num_attention_heads=4, ffn_hidden_size=37,
                                   layernorm_epsilon=1e-12, max_position_embeddings=64),
    }


@pytest.fixture(scope="module")
def model():
    return H.make_model("megatron_bert", "MegatronBertForPreTraining")


def assert_matches(preset, model):
    backbone = biozoo.from_preset(str(preset))
    inputs = H.random_inputs()
    sequence, pooled = H.hf_outputs(model, inputs)
    outputs = backbone(inputs)
    assert H.max_diff(outputs["sequence_output"], sequence, inputs["padding_mask"]) <= 1e-4
    assert np.abs(outputs["pooled_output"].numpy() - pooled).max() <= 1e-4


def write_vocab(path):
    path.write_text("\n".join(H.wordpiece_vocab()) + "\n", encoding="utf-8")


@pytest.mark.parametrize("version", [0.0, 1.0, 3.0])
def test_megatron_lm_state_dict(model, version, tmp_path):
    torch.save(megatron_state(model, version), tmp_path / "MegatronBERT.pt")
    write_vocab(tmp_path / "vocab.txt")
    convert_megatron(str(tmp_path / "MegatronBERT.pt"), tmp_path / "preset", progress=False)
    assert_matches(tmp_path / "preset", model)
    mlm = biozoo.MaskedLM.from_preset(str(tmp_path / "preset"))
    inputs = H.random_inputs()
    positions = np.array([[1, 2], [3, 4], [5, 6]], np.int32)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor(inputs["token_ids"]).long(),
                       attention_mask=torch.tensor(inputs["padding_mask"]).long(),
                       token_type_ids=torch.tensor(inputs["segment_ids"]).long()).prediction_logits.numpy()
    expected = np.take_along_axis(logits, positions[..., None], axis=1)
    assert np.abs(mlm({**inputs, "mask_positions": positions}).numpy() - expected).max() <= 1e-4 * max(1, np.abs(expected).max())


def add_bytes(tar, name, data, kind=tarfile.REGTYPE, link=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


CONFIG = b"hidden_size: 32\nnum_layers: 2\nnum_attention_heads: 4\nffn_hidden_size: 37\nlayernorm_epsilon: 1.0e-12\n"


def nemo_archive(path, model, extra=(), config=CONFIG):
    flat = {}

    def flatten(tree, prefix):
        for key, value in tree.items():
            if isinstance(value, dict):
                flatten(value, f"{prefix}{key}.")
            else:
                flat[f"{prefix}{key}"] = value

    flatten(megatron_state(model, 3.0)["model"], "model.")
    weights = io.BytesIO()
    torch.save(flat, weights)
    with tarfile.open(path, "w:gz") as tar:
        add_bytes(tar, "./model_weights.ckpt", weights.getvalue())
        add_bytes(tar, "./model_config.yaml", config)
        add_bytes(tar, "./a1b2c3_vocab.txt", ("\n".join(H.wordpiece_vocab()) + "\n").encode())
        for name, data, kind, link in extra:
            add_bytes(tar, name, data, kind, link)


def test_nemo_archive(model, tmp_path):
    nemo_archive(tmp_path / "biomegatron.nemo", model)
    convert_megatron(str(tmp_path / "biomegatron.nemo"), tmp_path / "preset", progress=False)
    assert_matches(tmp_path / "preset", model)


def test_nemo_configs_as_nemo_writes_them(model, tmp_path):
    """NeMo's configs write `1e-12` (a string to YAML 1.1's reader, which made a preset whose layer
    norm failed on its first call) and keep OmegaConf's `${...}` references."""
    nemo = CONFIG.replace(b"1.0e-12", b"1e-12") + b"encoder_seq_length: 64\nmax_position_embeddings: ${.encoder_seq_length}\n"
    nemo_archive(tmp_path / "nemo-style.nemo", model, config=nemo)
    convert_megatron(str(tmp_path / "nemo-style.nemo"), tmp_path / "preset", progress=False)
    assert_matches(tmp_path / "preset", model)
    assert biozoo.from_preset(str(tmp_path / "preset")).get_config()["layer_norm_epsilon"] == 1e-12
    for config, says in [(CONFIG + b"max_position_embeddings: ${.model.seq_length}\n",
                          r"max_position_embeddings: '\$\{.model.seq_length\}' refers to "
                          r"'seq_length', which the config does not give"),
                         (CONFIG.replace(b"ffn_hidden_size: 37", b"ffn_hidden_size: 37.5"),
                          r"ffn_hidden_size: 37.5 is not a whole number")]:
        nemo_archive(tmp_path / "bad.nemo", model, config=config)
        with pytest.raises(CheckpointError, match=r"bad.nemo \(model_config.yaml\): " + says):
            convert_megatron(str(tmp_path / "bad.nemo"), tmp_path / "refused", progress=False)
        assert not (tmp_path / "refused").exists()
    # as the message says, a config that gives the value converts
    (tmp_path / "given.json").write_text('{"max_position_embeddings": 64}')
    nemo_archive(tmp_path / "bad.nemo", model, config=CONFIG + b"max_position_embeddings: ${.model.seq_length}\n")
    convert_megatron(str(tmp_path / "bad.nemo"), tmp_path / "given", config=str(tmp_path / "given.json"), progress=False)
    assert_matches(tmp_path / "given", model)


@pytest.mark.parametrize("member, kind, link", [
    ("../escaped.txt", tarfile.REGTYPE, ""),
    ("/tmp/absolute.txt", tarfile.REGTYPE, ""),
    ("evil_link", tarfile.SYMTYPE, "../../../etc/passwd"),
])
def test_unsafe_archives_are_refused(model, tmp_path, member, kind, link):
    archive = tmp_path / "x" / "evil.nemo"
    archive.parent.mkdir()
    nemo_archive(archive, model, extra=[(member, b"gotcha", kind, link)])
    with pytest.raises(CheckpointError, match="refused"):
        convert_megatron(str(archive), tmp_path / "preset", progress=False)
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "preset").exists()


@pytest.mark.parametrize("payload, message", [("code", "refused to load"), ("junk", "unreadable PyTorch checkpoint")])
def test_a_refused_nemo_weights_file_is_named_inside_the_archive(tmp_path, payload, message):
    """Not the scratch folder's copy, which is gone when the error is read; junk bytes included."""
    data = io.BytesIO()
    torch.save({"model": print}, data)
    data = data.getvalue() if payload == "code" else b"junk!"
    with tarfile.open(tmp_path / "evil.nemo", "w") as tar:
        info = tarfile.TarInfo("./model_weights.ckpt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(CheckpointError, match=rf"^{re.escape(str(tmp_path))}/evil\.nemo!model_weights\.ckpt: {message}"):
        convert_megatron(str(tmp_path / "evil.nemo"), tmp_path / "preset", progress=False)
