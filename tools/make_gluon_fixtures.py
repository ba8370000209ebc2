#!/usr/bin/env python
"""Write the GluonNLP 1.0 ELECTRA ``.params`` test fixtures under tests/fixtures/gluon/.

Run from the repository root with the main venv; real mxnet 1.9.1 must live in a
separate venv (its numpy<1.24 cannot share the main one)::

    python3.11 -m venv /tmp/mxvenv
    /tmp/mxvenv/bin/pip install mxnet==1.9.1 "numpy<1.24"
    .venv/bin/python tools/make_gluon_fixtures.py --mx-python /tmp/mxvenv/bin/python

Steps:

a. In this (main) venv: build a tiny random ``transformers`` ElectraForPreTraining
   (discriminator, embedding 16 != hidden 32, so ``embed_factorized_proj`` exists) and
   ElectraForMaskedLM (generator, embedding 16 == hidden 16, no projection; its
   embeddings are copied from the discriminator as ELECTRA ties them), randomize every
   parameter (biases and LayerNorms too, so mapping mistakes show), save them with
   ``save_pretrained`` (safetensors) under ``hf/``, save reference outputs in
   ``reference.npz``, and convert the weights to GluonNLP 1.0 names and layouts
   (fused Q,K,V ``attn_qkv``; dense weights (out, in)). They are written as an
   intermediate ``.npz`` in a temporary folder.
b. Run the mxnet venv's python to ``mx.nd.save`` them (legacy list format: V2 array
   magic by default, V3 under ``mx.util.np_shape(True)``), plus small format files
   (all dtypes mxnet 1.9.1 can save, bfloat16, sparse, ``arg:``/``aux:`` names, an
   unnamed list). mxnet loads every file back and checks it against the source.
c. Write the MXNet 2 npz layout with ``np.savez`` (uncompressed zip of ``<key>.npy``),
   ``model.yml`` and ``vocab.json``, byte-crafted pre-V1 and V1 files (mxnet 1.9.1 only
   writes V2/V3), and ``manifest.json`` describing every file.

Everything is seeded; re-running gives the same arrays.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "tests" / "fixtures" / "gluon"
SEED = 1234

VOCAB_SIZE = 100
EMBED = 16
MAX_LEN = 64
DISC = dict(units=32, heads=4, ffn=64, layers=2)
GEN_UNITS_SCALE = 0.5  # GluonNLP get_generator_cfg: units/ffn/heads *= 0.5
GEN_LAYERS_SCALE = 1.0
GEN = dict(
    units=round(GEN_UNITS_SCALE * DISC["units"]),
    heads=round(GEN_UNITS_SCALE * DISC["heads"]),
    ffn=round(GEN_UNITS_SCALE * DISC["ffn"]),
    layers=round(GEN_LAYERS_SCALE * DISC["layers"]),
)

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8

# ---------------------------------------------------------------------------------------
# The mxnet side (run by the mxnet venv's python; receives a JSON job file in argv[1]).
# ---------------------------------------------------------------------------------------
MX_CHILD = r'''
import json, sys
import numpy as np
import mxnet as mx

BF16 = np.dtype([("bfloat16", np.uint16)])
job = json.load(open(sys.argv[1]))
report = {"mxnet_version": mx.__version__, "numpy_version": np.__version__, "files": {}}


def to_nd(key, arr, bf16_keys):
    if key in bf16_keys:
        return mx.nd.array(arr, dtype="float32").astype(BF16)
    return mx.nd.array(arr, dtype=arr.dtype)


def as_np(nd):
    if nd.dtype == BF16:
        return (nd.asnumpy().view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return nd.asnumpy()


for item in job["dense"]:
    src = np.load(item["src"], allow_pickle=False)
    keys = item.get("keys") or list(src.files)
    bf16 = set(item.get("bf16", []))
    names = item.get("names") or keys
    arrays = [to_nd(k, src[k], bf16) for k in keys]
    payload = dict(zip(names, arrays)) if not item.get("unnamed") else arrays
    with mx.util.np_shape(item["np_shape"]):
        mx.nd.save(item["dst"], payload)
        back = mx.nd.load(item["dst"])
    if item.get("unnamed"):
        back = {str(i): v for i, v in enumerate(back)}
        names = [str(i) for i in range(len(arrays))]
    assert list(back) == list(names), (item["dst"], list(back))
    for name, key in zip(names, keys):
        got = as_np(back[name])
        want = src[key]
        assert got.dtype == want.dtype and got.shape == want.shape, (item["dst"], name, got.dtype, want.dtype)
        assert got.tobytes() == want.tobytes(), (item["dst"], name)
    report["files"][item["dst"]] = {"np_shape": item["np_shape"], "arrays": len(arrays)}

# Sparse arrays (the reader must refuse them).
for item in job["sparse"]:
    dense = mx.nd.array(np.arange(4, dtype="float32").reshape(2, 2))
    if item["kind"] == "row_sparse":
        sp = mx.nd.sparse.row_sparse_array(
            (np.arange(6, dtype="float32").reshape(2, 3), np.array([1, 3])), shape=(5, 3))
        payload = {"dense.weight": dense, "embed.weight": sp}
    else:
        sp = mx.nd.sparse.csr_matrix(
            (np.array([1.0, 2.0, 3.0], dtype="float32"), np.array([0, 2, 1]), np.array([0, 2, 3])),
            shape=(2, 3))
        payload = {"csr.weight": sp}
    mx.nd.save(item["dst"], payload)
    back = mx.nd.load(item["dst"])
    assert back[list(payload)[-1]].stype == item["kind"]
    report["files"][item["dst"]] = {"np_shape": False, "arrays": len(payload)}

json.dump(report, open(job["report"], "w"), indent=1)
'''


# ---------------------------------------------------------------------------------------
# (a) transformers models -> GluonNLP arrays
# ---------------------------------------------------------------------------------------


def _electra_config(units, heads, ffn, layers):
    from transformers import ElectraConfig

    return ElectraConfig(
        vocab_size=VOCAB_SIZE,
        embedding_size=EMBED,
        hidden_size=units,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=ffn,
        max_position_embeddings=MAX_LEN,
        type_vocab_size=2,
        initializer_range=0.2,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )


def _randomize(model, gen):
    """Every parameter random, LayerNorm gammas near 1, so mix-ups change the output."""
    import torch

    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.2 * noise)
            elif name.endswith(".bias"):
                p.copy_(0.1 * noise)
            else:
                p.copy_(0.2 * noise)


def build_models():
    import torch
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    disc = ElectraForPreTraining(_electra_config(**DISC)).eval()
    _randomize(disc, gen)
    mlm = ElectraForMaskedLM(_electra_config(**GEN)).eval()
    _randomize(mlm, gen)
    # ELECTRA shares the embedding block between generator and discriminator.
    with torch.no_grad():
        for part in ("word_embeddings", "position_embeddings", "token_type_embeddings", "LayerNorm"):
            src = getattr(disc.electra.embeddings, part)
            dst = getattr(mlm.electra.embeddings, part)
            for pname, p in dst.named_parameters():
                p.copy_(getattr(src, pname))
    assert mlm.generator_lm_head.weight.data_ptr() == mlm.electra.embeddings.word_embeddings.weight.data_ptr()
    return disc, mlm


def make_inputs():
    rng = np.random.RandomState(SEED)
    batch, seq = 2, 8
    input_ids = rng.randint(5, VOCAB_SIZE, size=(batch, seq)).astype(np.int32)
    input_ids[:, 0] = 2  # [CLS]
    valid_length = np.array([seq, 5], dtype=np.int32)
    token_type_ids = np.zeros((batch, seq), dtype=np.int32)
    token_type_ids[0, 5:] = 1
    attention_mask = (np.arange(seq)[None, :] < valid_length[:, None]).astype(np.int32)
    input_ids[1, 5:] = 0  # [PAD]
    return dict(input_ids=input_ids, token_type_ids=token_type_ids,
                attention_mask=attention_mask, valid_length=valid_length)


def run_reference(model, inputs, kind):
    import torch

    feed = {k: torch.from_numpy(inputs[k].astype(np.int64)) for k in ("input_ids", "token_type_ids", "attention_mask")}
    with torch.no_grad():
        out = model(**feed, output_hidden_states=True)
    ref = dict(inputs)
    ref["sequence_output"] = out.hidden_states[-1].numpy().astype(np.float32)
    if kind == "disc":
        ref["last_hidden_state"] = ref["sequence_output"]
        ref["rtd_logits"] = out.logits.numpy().astype(np.float32)
    else:
        ref["mlm_logits"] = out.logits.numpy().astype(np.float32)
    return ref


def hf_to_gluon_backbone(sd, num_layers, prefix="backbone_model."):
    """HF ``electra.*`` state dict -> GluonNLP ElectraModel names, in Gluon's order."""
    t = lambda k: sd[k].detach().cpu().numpy().astype(np.float32)  # noqa: E731
    out = OrderedDict()
    # ElectraModel registers ``encoder`` first, then the embedding blocks.
    for i in range(num_layers):
        h = f"electra.encoder.layer.{i}."
        g = f"{prefix}encoder.all_encoder_layers.{i}."
        out[g + "attn_qkv.weight"] = np.concatenate(
            [t(h + f"attention.self.{x}.weight") for x in ("query", "key", "value")], axis=0)
        out[g + "attn_qkv.bias"] = np.concatenate(
            [t(h + f"attention.self.{x}.bias") for x in ("query", "key", "value")], axis=0)
        out[g + "attention_proj.weight"] = t(h + "attention.output.dense.weight")
        out[g + "attention_proj.bias"] = t(h + "attention.output.dense.bias")
        out[g + "layer_norm.gamma"] = t(h + "attention.output.LayerNorm.weight")
        out[g + "layer_norm.beta"] = t(h + "attention.output.LayerNorm.bias")
        out[g + "ffn.ffn_1.weight"] = t(h + "intermediate.dense.weight")
        out[g + "ffn.ffn_1.bias"] = t(h + "intermediate.dense.bias")
        out[g + "ffn.ffn_2.weight"] = t(h + "output.dense.weight")
        out[g + "ffn.ffn_2.bias"] = t(h + "output.dense.bias")
        out[g + "ffn.layer_norm.gamma"] = t(h + "output.LayerNorm.weight")
        out[g + "ffn.layer_norm.beta"] = t(h + "output.LayerNorm.bias")
    e = "electra.embeddings."
    out[prefix + "word_embed.weight"] = t(e + "word_embeddings.weight")
    out[prefix + "token_type_embed.weight"] = t(e + "token_type_embeddings.weight")
    out[prefix + "token_pos_embed._embed.weight"] = t(e + "position_embeddings.weight")
    out[prefix + "embed_layer_norm.gamma"] = t(e + "LayerNorm.weight")
    out[prefix + "embed_layer_norm.beta"] = t(e + "LayerNorm.bias")
    if "electra.embeddings_project.weight" in sd:
        out[prefix + "embed_factorized_proj.weight"] = t("electra.embeddings_project.weight")
        out[prefix + "embed_factorized_proj.bias"] = t("electra.embeddings_project.bias")
    return out


def disc_to_gluon(model):
    sd = model.state_dict()
    out = hf_to_gluon_backbone(sd, DISC["layers"])
    out["rtd_encoder.0.weight"] = sd["discriminator_predictions.dense.weight"].numpy()
    out["rtd_encoder.0.bias"] = sd["discriminator_predictions.dense.bias"].numpy()
    out["rtd_encoder.2.weight"] = sd["discriminator_predictions.dense_prediction.weight"].numpy()
    out["rtd_encoder.2.bias"] = sd["discriminator_predictions.dense_prediction.bias"].numpy()
    return out


def gen_to_gluon(model, dedup):
    sd = model.state_dict()
    out = hf_to_gluon_backbone(sd, GEN["layers"])
    out["mlm_decoder.0.weight"] = sd["generator_predictions.dense.weight"].numpy()
    out["mlm_decoder.0.bias"] = sd["generator_predictions.dense.bias"].numpy()
    out["mlm_decoder.2.gamma"] = sd["generator_predictions.LayerNorm.weight"].numpy()
    out["mlm_decoder.2.beta"] = sd["generator_predictions.LayerNorm.bias"].numpy()
    out["mlm_decoder.3.weight"] = sd["generator_lm_head.weight"].numpy()
    out["mlm_decoder.3.bias"] = sd["generator_lm_head.bias"].numpy()
    if dedup:
        # save_parameters(deduplicate=True) keeps the last name of a shared parameter.
        del out["backbone_model.word_embed.weight"]
    return OrderedDict((k, np.ascontiguousarray(v, dtype=np.float32)) for k, v in out.items())


def model_yml(units, ffn, heads, layers):
    import yaml

    cfg = {
        "INITIALIZER": {
            "bias": ["zeros"],
            "embed": ["truncnorm", 0, 0.02],
            "weight": ["truncnorm", 0, 0.02],
        },
        "MODEL": {
            "activation": "gelu",
            "attention_dropout_prob": 0.1,
            "compute_layout": "auto",
            "dtype": "float32",
            "embed_size": EMBED,
            "generator_layers_scale": GEN_LAYERS_SCALE,
            "generator_units_scale": GEN_UNITS_SCALE,
            "hidden_dropout_prob": 0.1,
            "hidden_size": ffn,
            "layer_norm_eps": 1e-12,
            "layout": "NT",
            "max_length": MAX_LEN,
            "num_heads": heads,
            "num_layers": layers,
            "num_token_types": 2,
            "pos_embed_type": "learned",
            "units": units,
            "vocab_size": VOCAB_SIZE,
        },
        "VERSION": 1,
    }
    # yacs CfgNode.dump() is yaml.safe_dump of the nested dict (sorted keys).
    return yaml.safe_dump(cfg)


def vocab_json():
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = [f"tok{i:02d}" for i in range(VOCAB_SIZE - len(special) - 10)] + [f"##s{i}" for i in range(10)]
    tokens = special + words
    assert len(tokens) == VOCAB_SIZE
    return json.dumps(
        {
            "all_tokens": tokens,
            "special_token_key_value": {
                "unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                "sep_token": "[SEP]", "mask_token": "[MASK]",
            },
        },
        ensure_ascii=False,
    )


# ---------------------------------------------------------------------------------------
# (c) byte-crafted legacy files (pre-V1 and V1 headers; mxnet 1.9.1 cannot write them)
# ---------------------------------------------------------------------------------------

_FLAGS = {np.dtype("float32"): 0, np.dtype("float64"): 1, np.dtype("float16"): 2, np.dtype("int32"): 4,
          np.dtype("int64"): 6}


def craft_legacy(arrays, names, header):
    """Legacy list bytes; header is 'pre-V1' (ndim + uint32 dims) or 'V1' (int64 dims)."""
    b = struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))
    for arr in arrays:
        arr = np.ascontiguousarray(arr)
        if header == "pre-V1":
            b += struct.pack(f"<I{arr.ndim}I", arr.ndim, *arr.shape)
        else:
            b += struct.pack(f"<Ii{arr.ndim}q", V1_MAGIC, arr.ndim, *arr.shape)
        b += struct.pack("<iii", 1, 0, _FLAGS[arr.dtype]) + arr.astype(arr.dtype.newbyteorder("<")).tobytes()
    b += struct.pack("<Q", len(names))
    for name in names:
        raw = name.encode("utf-8")
        b += struct.pack("<Q", len(raw)) + raw
    return b


def format_arrays():
    """Arrays for the dtype fixtures (bfloat16 given as float32 that bf16 holds exactly)."""
    a = OrderedDict()
    a["f32"] = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5) / 4
    a["f64"] = np.array([1 / 3, -2 / 7, 1e300], dtype=np.float64)
    a["f16"] = np.array([0.5, -1.25, 65504.0, 6.1e-5, 0.0], dtype=np.float16)
    a["u8"] = np.array([0, 1, 127, 255], dtype=np.uint8)
    a["i32"] = np.array([[-(2**31), 2**31 - 1], [0, -7]], dtype=np.int32)
    a["i8"] = np.array([-128, 0, 127], dtype=np.int8)
    a["i64"] = np.array([-(2**62), 3, 2**62], dtype=np.int64)
    a["bool"] = np.array([True, False, False, True], dtype=np.bool_)
    a["bf16"] = np.array([1.0, -2.5, 3.140625, 0.0, 65536.0, 2.0**-20], dtype=np.float32)
    return a


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--mx-python", default=os.environ.get("MX_PYTHON", "/tmp/mxvenv/bin/python"))
    args = ap.parse_args(argv)
    out = args.out.resolve()
    disc_dir, gen_dir, fmt_dir = out / "electra_disc", out / "electra_gen", out / "formats"
    for d in (disc_dir, gen_dir, fmt_dir):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)

    disc, mlm = build_models()
    inputs = make_inputs()
    np.savez(disc_dir / "reference.npz", **run_reference(disc, inputs, "disc"))
    np.savez(gen_dir / "reference.npz", **run_reference(mlm, inputs, "gen"))
    disc.save_pretrained(disc_dir / "hf")
    mlm.save_pretrained(gen_dir / "hf")

    disc_arrays = OrderedDict((k, np.ascontiguousarray(v, dtype=np.float32)) for k, v in disc_to_gluon(disc).items())
    backbone = OrderedDict((k[len("backbone_model."):], v) for k, v in disc_arrays.items() if k.startswith("backbone_model."))
    gen_full = gen_to_gluon(mlm, dedup=False)
    gen_dedup = gen_to_gluon(mlm, dedup=True)
    fmt = format_arrays()
    fmt_v3 = OrderedDict(fmt)
    fmt_v3["scalar"] = np.array(2.75, dtype=np.float32)  # ndim 0 only exists in V3
    fmt_v3["empty"] = np.zeros((0, 3), dtype=np.float32)
    prefixed_src = OrderedDict(
        [("dense0.weight", np.arange(6, dtype=np.float32).reshape(3, 2)),
         ("dense0.bias", np.array([0.5, -0.5, 1.5], dtype=np.float32)),
         ("batchnorm0.running_mean", np.array([0.25, 0.75], dtype=np.float32)),
         ("batchnorm0.running_var", np.array([1.0, 2.0], dtype=np.float32))])
    prefixed_names = ["arg:dense0.weight", "arg:dense0.bias", "aux:batchnorm0.running_mean",
                      "aux:batchnorm0.running_var"]

    # Expected values for the format files (plain numpy npz; bf16 given as float32).
    np.savez(fmt_dir / "dtypes_expected.npz", **fmt_v3)
    np.savez(fmt_dir / "prefixed_expected.npz", **prefixed_src)

    with tempfile.TemporaryDirectory(prefix="gluon_fixtures_") as tmp:
        tmp = Path(tmp)

        def src(name, arrays):
            p = tmp / f"{name}.npz"
            np.savez(p, **arrays)
            return str(p)

        disc_src, backbone_src = src("disc", disc_arrays), src("backbone", backbone)
        gen_full_src, gen_dedup_src = src("gen_full", gen_full), src("gen_dedup", gen_dedup)
        fmt_src, fmt_v3_src, pre_src = src("fmt", fmt), src("fmt_v3", fmt_v3), src("prefixed", prefixed_src)
        job = {
            "report": str(tmp / "report.json"),
            "dense": [
                {"src": disc_src, "dst": str(disc_dir / "disc_model.v2.params"), "np_shape": False},
                {"src": disc_src, "dst": str(disc_dir / "disc_model.v3.params"), "np_shape": True},
                {"src": backbone_src, "dst": str(disc_dir / "model.v3.params"), "np_shape": True},
                {"src": gen_dedup_src, "dst": str(gen_dir / "gen_model.v3.params"), "np_shape": True},
                {"src": gen_full_src, "dst": str(gen_dir / "gen_model_nodedup.v2.params"), "np_shape": False},
                {"src": fmt_src, "dst": str(fmt_dir / "dtypes.v2.params"), "np_shape": False, "bf16": ["bf16"]},
                {"src": fmt_v3_src, "dst": str(fmt_dir / "dtypes.v3.params"), "np_shape": True, "bf16": ["bf16"]},
                {"src": pre_src, "dst": str(fmt_dir / "prefixed.v2.params"), "np_shape": False,
                 "names": prefixed_names},
                {"src": pre_src, "dst": str(fmt_dir / "unnamed_list.v2.params"), "np_shape": False,
                 "unnamed": True},
            ],
            "sparse": [
                {"kind": "row_sparse", "dst": str(fmt_dir / "row_sparse.v2.params")},
                {"kind": "csr", "dst": str(fmt_dir / "csr.v2.params")},
            ],
        }
        (tmp / "job.json").write_text(json.dumps(job))
        (tmp / "child.py").write_text(MX_CHILD)
        env = dict(os.environ, MXNET_SUBGRAPH_VERBOSE="0", OMP_NUM_THREADS="1")
        subprocess.run([args.mx_python, str(tmp / "child.py"), str(tmp / "job.json")], check=True, env=env)
        report = json.loads((tmp / "report.json").read_text())

    # (c) MXNet 2 npz layout: np.savez into an open handle (a path would gain ".npz").
    with open(disc_dir / "disc_model.npz.params", "wb") as fh:
        np.savez(fh, **disc_arrays)
    for d, (units, ffn, heads, layers) in (
        (disc_dir, (DISC["units"], DISC["ffn"], DISC["heads"], DISC["layers"])),
        (gen_dir, (GEN["units"], GEN["ffn"], GEN["heads"], GEN["layers"])),
    ):
        (d / "model.yml").write_text(model_yml(units, ffn, heads, layers), encoding="utf-8")
        (d / "vocab.json").write_text(vocab_json(), encoding="utf-8")

    # Byte-crafted pre-V1 / V1 files.
    v0 = craft_legacy([np.arange(128, dtype=np.float32)] * 6, [], "pre-V1")
    assert len(v0) == 3224, len(v0)  # the size of MXNet's tests/python/unittest/legacy_ndarray.v0
    (fmt_dir / "legacy_ndarray_v0_equiv.params").write_bytes(v0)
    v1_arrays = [np.arange(6, dtype=np.float32).reshape(2, 3) / 8, np.array([-5, 0, 2**40], dtype=np.int64)]
    (fmt_dir / "v1_crafted.params").write_bytes(craft_legacy(v1_arrays, ["arg:w", "aux:s"], "V1"))
    (fmt_dir / "prev1_crafted.params").write_bytes(craft_legacy(v1_arrays, ["arg:w", "aux:s"], "pre-V1"))

    write_manifest(out, report)
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote fixtures under {out} ({total} bytes) with mxnet {report['mxnet_version']}")


def _describe(path: Path):
    b = path.read_bytes()
    if b[:4] == b"PK\x03\x04":
        return {"layout": "npz"}
    (magic,) = struct.unpack("<Q", b[:8])
    assert magic == LIST_MAGIC, path
    (first,) = struct.unpack("<I", b[24:28])
    headers = {0xF993FAC8: "V1", 0xF993FAC9: "V2", 0xF993FACA: "V3"}
    return {"layout": "legacy", "list_magic": "0x112", "first_array_magic": f"0x{first:08X}",
            "header": headers.get(first, "pre-V1")}


def write_manifest(out: Path, report):
    files = {}
    for p in sorted(out.rglob("*.params")):
        rel = p.relative_to(out).as_posix()
        info = _describe(p)
        info["size"] = p.stat().st_size
        info["written_by"] = (f"mxnet {report['mxnet_version']} mx.nd.save" if str(p) in report["files"]
                              else ("numpy np.savez" if info["layout"] == "npz" else "byte-crafted"))
        files[rel] = info
    manifest = {
        "generator": "tools/make_gluon_fixtures.py",
        "mxnet_version": report["mxnet_version"],
        "mxnet_numpy_version": report["numpy_version"],
        "seed": SEED,
        "disc": {"vocab_size": VOCAB_SIZE, "embed_size": EMBED, "max_length": MAX_LEN, **DISC},
        "gen": {"vocab_size": VOCAB_SIZE, "embed_size": EMBED, "max_length": MAX_LEN, **GEN},
        "files": files,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())
