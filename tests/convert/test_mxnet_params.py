"""Tests for biozoo.convert.mxnet_params, the numpy-only reader of MXNet ``.params`` files.

The fixtures under tests/fixtures/gluon/ were written by real mxnet 1.9.1 (see
tools/make_gluon_fixtures.py). Small edge cases are byte-crafted here with a writer
that is independent of the reader.
"""

from __future__ import annotations

import inspect
import json
import pathlib
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from biozoo.convert.mxnet_params import (
    iter_params,
    read_gluon_config,
    read_gluon_vocab,
    read_params,
)
from biozoo.errors import CheckpointError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "gluon"
DISC = FIX / "electra_disc"
GEN = FIX / "electra_gen"
FMT = FIX / "formats"

V1, V2, V3 = 0xF993FAC8, 0xF993FAC9, 0xF993FACA


# ----------------------------------------------------------------------------------------
# An independent writer for the legacy NDArray list format (little-endian).
# ----------------------------------------------------------------------------------------

FLAG = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5, "int64": 6,
        "bool": 7, "int16": 8, "uint16": 9, "uint32": 10, "uint64": 11}


def arr_bytes(arr, header="V2", flag=None, stype=0, dev_type=1, none=False):
    """One array; ``none=True`` writes an empty NDArray (V2: ndim 0, V3: ndim -1, header only)."""
    arr = np.array(arr, order="C")  # (np.ascontiguousarray would turn 0-d into 1-d)
    flag = FLAG[arr.dtype.name] if flag is None else flag
    shape = arr.shape
    if none:
        magic = V2 if header == "V2" else V3
        return struct.pack("<Iii", magic, stype, 0 if header == "V2" else -1)
    if header == "pre-V1":
        head = struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}I", *shape)
    elif header == "V1":
        head = struct.pack("<Ii", V1, len(shape)) + struct.pack(f"<{len(shape)}q", *shape)
    else:
        magic = V2 if header == "V2" else V3
        head = struct.pack("<Iii", magic, stype, len(shape)) + struct.pack(f"<{len(shape)}q", *shape)
    return head + struct.pack("<iii", dev_type, 0, flag) + arr.astype(arr.dtype.newbyteorder("<")).tobytes()


def list_bytes(blobs, names, n=None):
    out = struct.pack("<QQQ", 0x112, 0, len(blobs) if n is None else n) + b"".join(blobs)
    out += struct.pack("<Q", len(names))
    for name in names:
        raw = name.encode("utf-8")
        out += struct.pack("<Q", len(raw)) + raw
    return out


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def listing(d):
    return sorted((p.relative_to(d).as_posix(), p.stat().st_size) for p in d.rglob("*"))


def assert_bad(path, *fragments):
    """iter_params must fail before yielding anything, name the file and write nothing."""
    before = listing(path.parent)
    gen = iter_params(path)
    with pytest.raises(CheckpointError) as info:
        next(gen)
    msg = str(info.value)
    assert str(path) in msg
    for frag in fragments:
        assert frag in msg, (frag, msg)
    with pytest.raises(CheckpointError):
        read_params(path)
    assert listing(path.parent) == before
    return msg


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ----------------------------------------------------------------------------------------
# Expected GluonNLP arrays, re-derived from the transformers safetensors with an explicit map
# ----------------------------------------------------------------------------------------

EMBED_MAP = {
    "word_embed.weight": "electra.embeddings.word_embeddings.weight",
    "token_type_embed.weight": "electra.embeddings.token_type_embeddings.weight",
    "token_pos_embed._embed.weight": "electra.embeddings.position_embeddings.weight",
    "embed_layer_norm.gamma": "electra.embeddings.LayerNorm.weight",
    "embed_layer_norm.beta": "electra.embeddings.LayerNorm.bias",
}
PROJ_MAP = {
    "embed_factorized_proj.weight": "electra.embeddings_project.weight",
    "embed_factorized_proj.bias": "electra.embeddings_project.bias",
}
LAYER_MAP = {
    "attention_proj.weight": "attention.output.dense.weight",
    "attention_proj.bias": "attention.output.dense.bias",
    "layer_norm.gamma": "attention.output.LayerNorm.weight",
    "layer_norm.beta": "attention.output.LayerNorm.bias",
    "ffn.ffn_1.weight": "intermediate.dense.weight",
    "ffn.ffn_1.bias": "intermediate.dense.bias",
    "ffn.ffn_2.weight": "output.dense.weight",
    "ffn.ffn_2.bias": "output.dense.bias",
    "ffn.layer_norm.gamma": "output.LayerNorm.weight",
    "ffn.layer_norm.beta": "output.LayerNorm.bias",
}
DISC_HEAD_MAP = {
    "rtd_encoder.0.weight": "discriminator_predictions.dense.weight",
    "rtd_encoder.0.bias": "discriminator_predictions.dense.bias",
    "rtd_encoder.2.weight": "discriminator_predictions.dense_prediction.weight",
    "rtd_encoder.2.bias": "discriminator_predictions.dense_prediction.bias",
}
GEN_HEAD_MAP = {
    "mlm_decoder.0.weight": "generator_predictions.dense.weight",
    "mlm_decoder.0.bias": "generator_predictions.dense.bias",
    "mlm_decoder.2.gamma": "generator_predictions.LayerNorm.weight",
    "mlm_decoder.2.beta": "generator_predictions.LayerNorm.bias",
    "mlm_decoder.3.bias": "generator_lm_head.bias",
    # tied: transformers saves the decoder weight only as the word embedding
    "mlm_decoder.3.weight": "electra.embeddings.word_embeddings.weight",
}


def hf_weights(d):
    from safetensors.numpy import load_file

    return load_file(str(d / "hf" / "model.safetensors"))


def expected_backbone(hf, prefix, num_layers):
    exp = {}
    for i in range(num_layers):
        h = f"electra.encoder.layer.{i}."
        g = f"{prefix}encoder.all_encoder_layers.{i}."
        # fused Q, K, V: rows [0:U] = Q, [U:2U] = K, [2U:3U] = V (torch weights are (out, in))
        exp[g + "attn_qkv.weight"] = np.concatenate(
            [hf[h + "attention.self.query.weight"], hf[h + "attention.self.key.weight"],
             hf[h + "attention.self.value.weight"]], axis=0)
        exp[g + "attn_qkv.bias"] = np.concatenate(
            [hf[h + "attention.self.query.bias"], hf[h + "attention.self.key.bias"],
             hf[h + "attention.self.value.bias"]])
        for gname, hname in LAYER_MAP.items():
            exp[g + gname] = hf[h + hname]
    for gname, hname in EMBED_MAP.items():
        exp[prefix + gname] = hf[hname]
    if "electra.embeddings_project.weight" in hf:
        for gname, hname in PROJ_MAP.items():
            exp[prefix + gname] = hf[hname]
    return exp


def expected_disc():
    hf = hf_weights(DISC)
    exp = expected_backbone(hf, "backbone_model.", 2)
    exp.update({g: hf[h] for g, h in DISC_HEAD_MAP.items()})
    return exp


def expected_gen(dedup):
    hf = hf_weights(GEN)
    exp = expected_backbone(hf, "backbone_model.", 2)
    exp.update({g: hf[h] for g, h in GEN_HEAD_MAP.items()})
    if dedup:
        del exp["backbone_model.word_embed.weight"]
    return exp


def assert_matches(got, exp):
    assert sorted(got) == sorted(exp)
    for name, want in exp.items():
        assert same(got[name], want), name


# ----------------------------------------------------------------------------------------
# mxnet-written fixtures
# ----------------------------------------------------------------------------------------


def test_manifest_says_mxnet_191_and_headers_match_bytes():
    manifest = json.loads((FIX / "manifest.json").read_text())
    assert manifest["mxnet_version"] == "1.9.1"
    for rel, info in manifest["files"].items():
        raw = (FIX / rel).read_bytes()
        assert len(raw) == info["size"], rel
        if info["layout"] == "npz":
            assert raw[:4] == b"PK\x03\x04"
            continue
        assert struct.unpack("<Q", raw[:8])[0] == 0x112
        assert f"0x{struct.unpack('<I', raw[24:28])[0]:08X}" == info["first_array_magic"], rel
    files = manifest["files"]
    assert files["electra_disc/disc_model.v2.params"]["header"] == "V2"
    assert files["electra_disc/disc_model.v3.params"]["header"] == "V3"
    assert files["electra_disc/disc_model.v2.params"]["written_by"] == "mxnet 1.9.1 mx.nd.save"


@pytest.mark.parametrize("fname", ["disc_model.v2.params", "disc_model.v3.params", "disc_model.npz.params"])
def test_discriminator_fixture_is_bit_exact(fname):
    got = read_params(DISC / fname)
    exp = expected_disc()
    assert_matches(got, exp)
    assert all(v.dtype == np.float32 for v in got.values())
    assert got["backbone_model.embed_factorized_proj.weight"].shape == (32, 16)
    assert got["backbone_model.encoder.all_encoder_layers.1.attn_qkv.weight"].shape == (96, 32)
    # GluonNLP registration order: the encoder first, then the embeddings, then the head.
    names = list(got)
    assert names[0] == "backbone_model.encoder.all_encoder_layers.0.attn_qkv.weight"
    assert names[-1] == "rtd_encoder.2.bias"


def test_fused_qkv_order_is_q_k_v():
    hf = hf_weights(DISC)
    got = read_params(DISC / "disc_model.v3.params")
    w = got["backbone_model.encoder.all_encoder_layers.0.attn_qkv.weight"]
    for i, part in enumerate(("query", "key", "value")):
        assert np.array_equal(w[32 * i: 32 * (i + 1)], hf[f"electra.encoder.layer.0.attention.self.{part}.weight"])


def test_backbone_only_fixture_has_unprefixed_names():
    got = read_params(DISC / "model.v3.params")
    exp = {k[len("backbone_model."):]: v for k, v in expected_disc().items() if k.startswith("backbone_model.")}
    assert_matches(got, exp)


@pytest.mark.parametrize("fname,dedup", [("gen_model.v3.params", True), ("gen_model_nodedup.v2.params", False)])
def test_generator_fixture_is_bit_exact(fname, dedup):
    got = read_params(GEN / fname)
    assert_matches(got, expected_gen(dedup))
    assert "backbone_model.embed_factorized_proj.weight" not in got  # embed 16 == units 16
    assert ("backbone_model.word_embed.weight" in got) is not dedup


def test_v2_and_v3_fixtures_differ_only_in_array_magic():
    v2 = (DISC / "disc_model.v2.params").read_bytes()
    v3 = (DISC / "disc_model.v3.params").read_bytes()
    assert len(v2) == len(v3)
    diff = [i for i in range(len(v2)) if v2[i] != v3[i]]
    assert diff and all(v2[i] == 0xC9 and v3[i] == 0xCA for i in diff)
    assert len(diff) == len(read_params(DISC / "disc_model.v2.params"))


def test_config_and_vocab():
    cfg = read_gluon_config(DISC / "model.yml")
    assert cfg["units"] == 32 and cfg["embed_size"] == 16 and cfg["hidden_size"] == 64
    assert cfg["num_heads"] == 4 and cfg["num_layers"] == 2 and cfg["max_length"] == 64
    assert cfg["vocab_size"] == 100 and cfg["layer_norm_eps"] == 1e-12 and cfg["activation"] == "gelu"
    assert cfg["pos_embed_type"] == "learned" and cfg["layout"] == "NT"
    gcfg = read_gluon_config(GEN / "model.yml")
    assert gcfg["units"] == round(cfg["units"] * cfg["generator_units_scale"]) == 16
    tokens = read_gluon_vocab(DISC / "vocab.json")
    assert len(tokens) == 100 and tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_reference_outputs_exist():
    ref = np.load(DISC / "reference.npz")
    assert ref["last_hidden_state"].shape == (2, 8, 32) and ref["last_hidden_state"].dtype == np.float32
    assert ref["input_ids"].shape == (2, 8)
    gref = np.load(GEN / "reference.npz")
    assert gref["sequence_output"].shape == (2, 8, 16) and gref["mlm_logits"].shape == (2, 8, 100)


# ----------------------------------------------------------------------------------------
# Formats and dtypes
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fname", ["dtypes.v2.params", "dtypes.v3.params"])
def test_mxnet_dtypes(fname):
    got = read_params(FMT / fname)
    exp = dict(np.load(FMT / "dtypes_expected.npz"))
    if "v2" in fname:
        exp = {k: v for k, v in exp.items() if k not in ("scalar", "empty")}
    assert list(got) == list(exp)
    for k in exp:
        assert same(got[k], exp[k]), k
    assert got["f16"].dtype == np.float16 and got["bool"].dtype == np.bool_
    assert got["bf16"].dtype == np.float32  # bfloat16 is widened


def test_v3_scalar_and_empty():
    got = read_params(FMT / "dtypes.v3.params")
    assert got["scalar"].shape == () and float(got["scalar"]) == 2.75
    assert got["empty"].shape == (0, 3)


def test_arg_aux_prefixes_are_stripped():
    got = read_params(FMT / "prefixed.v2.params")
    exp = dict(np.load(FMT / "prefixed_expected.npz"))
    assert list(got) == ["dense0.weight", "dense0.bias", "batchnorm0.running_mean", "batchnorm0.running_var"]
    for k in exp:
        assert same(got[k], exp[k])


def test_unnamed_list_is_named_by_index():
    got = read_params(FMT / "unnamed_list.v2.params")
    assert list(got) == ["0", "1", "2", "3"]
    assert np.array_equal(got["0"], np.arange(6, dtype=np.float32).reshape(3, 2))


def test_legacy_ndarray_v0_equivalent(tmp_path):
    path = FMT / "legacy_ndarray_v0_equiv.params"
    raw = path.read_bytes()
    assert len(raw) == 3224
    # Built again here, independently: 6 pre-V1 float32 (128,) arrays and no names.
    assert raw == list_bytes([arr_bytes(np.arange(128, dtype=np.float32), "pre-V1")] * 6, [])
    got = read_params(path)
    assert list(got) == [str(i) for i in range(6)]
    for v in got.values():
        assert same(v, np.arange(128, dtype=np.float32))


@pytest.mark.parametrize("fname", ["v1_crafted.params", "prev1_crafted.params"])
def test_crafted_v1_and_prev1(fname):
    raw = (FMT / fname).read_bytes()
    first = struct.unpack("<I", raw[24:28])[0]
    assert first == (V1 if fname.startswith("v1") else 2)  # pre-V1: the magic is ndim
    got = read_params(FMT / fname)
    assert list(got) == ["w", "s"]
    assert same(got["w"], np.arange(6, dtype=np.float32).reshape(2, 3) / 8)
    assert same(got["s"], np.array([-5, 0, 2**40], dtype=np.int64))


ALL_DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool",
              "int16", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("header", ["pre-V1", "V1", "V2", "V3"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_and_header(tmp_path, header, dtype):
    rng = np.random.RandomState(0)
    arr = (rng.randn(3, 4) * 50).astype(dtype)
    other = np.arange(5, dtype=np.float32)
    p = write(tmp_path, "x.params", list_bytes(
        [arr_bytes(arr, header), arr_bytes(other, header)], ["arg:a.weight", "aux:b.moving"]))
    got = read_params(p)
    assert list(got) == ["a.weight", "b.moving"]
    assert same(got["a.weight"], arr) and same(got["b.moving"], other)


@pytest.mark.parametrize("header", ["pre-V1", "V1", "V2", "V3"])
def test_bfloat16_bits(tmp_path, header):
    bits = np.array([0x3F80, 0xC020, 0x7F80, 0x0001, 0x8000, 0x4049], dtype=np.uint16)
    p = write(tmp_path, "bf.params", list_bytes([arr_bytes(bits.reshape(2, 3), header, flag=12)], ["bf"]))
    got = read_params(p)["bf"]
    assert got.dtype == np.float32 and got.shape == (2, 3)
    want = (bits.astype(np.uint32) << 16).view(np.float32).reshape(2, 3)
    assert same(got, want)
    assert got[0, 0] == 1.0 and got[0, 1] == -2.5 and np.isinf(got[0, 2]) and got[1, 2] == 3.140625


def test_npz_layout_prefixes_float16_and_bf16(tmp_path):
    p = tmp_path / "mx2.params"
    bf = np.array([0x3F80, 0xC020], dtype=np.uint16).view(np.dtype([("bfloat16", "<u2")]))
    with open(p, "wb") as fh:
        np.savez(fh, **{"arg:w": np.ones((2, 2), np.float16), "aux:m": np.arange(3, dtype=np.int64), "bf": bf})
    got = read_params(p)
    assert list(got) == ["w", "m", "bf"]
    assert got["w"].dtype == np.float16 and np.array_equal(got["m"], [0, 1, 2])
    assert got["bf"].dtype == np.float32 and got["bf"].tolist() == [1.0, -2.5]


def test_single_npy(tmp_path):
    p = tmp_path / "one.params"
    with open(p, "wb") as fh:
        np.save(fh, np.arange(4, dtype=np.float64))
    got = read_params(p)
    assert list(got) == ["0"] and same(got["0"], np.arange(4, dtype=np.float64))


# ----------------------------------------------------------------------------------------
# Streaming
# ----------------------------------------------------------------------------------------


def test_iter_params_is_a_lazy_generator(tmp_path):
    # Arrays larger than any I/O buffer, so the second one cannot have been prefetched.
    n = 1 << 16
    a = np.arange(n, dtype=np.float32)
    b = np.arange(n, 2 * n, dtype=np.float32)
    raw = list_bytes([arr_bytes(a), arr_bytes(b)], ["a", "b"])
    p = write(tmp_path, "s.params", raw)
    gen = iter_params(p)
    assert inspect.isgenerator(gen)
    assert inspect.getgeneratorstate(gen) == inspect.GEN_CREATED  # nothing read yet
    name, arr = next(gen)
    assert name == "a" and same(arr, a)
    assert inspect.getgeneratorstate(gen) == inspect.GEN_SUSPENDED
    # The second array is read only when asked for: change its bytes in place now.
    new_b = np.full(n, 42.0, dtype=np.float32)
    off = raw.index(b.tobytes())
    with open(p, "r+b") as fh:
        fh.seek(off)
        fh.write(new_b.tobytes())
    name, arr = next(gen)
    assert name == "b" and same(arr, new_b)
    with pytest.raises(StopIteration):
        next(gen)


def test_iter_params_can_be_closed_early():
    gen = iter_params(DISC / "disc_model.v2.params")
    first = next(gen)
    assert first[0].endswith("attn_qkv.weight")
    gen.close()
    assert inspect.getgeneratorstate(gen) == inspect.GEN_CLOSED
    npz = iter_params(DISC / "disc_model.npz.params")
    assert next(npz)[0] == first[0]
    npz.close()


def test_read_params_equals_iter_params():
    path = DISC / "disc_model.v3.params"
    names = [n for n, _ in iter_params(path)]
    assert names == list(read_params(path))


# ----------------------------------------------------------------------------------------
# Malformed input
# ----------------------------------------------------------------------------------------


def _names_table_size(names):
    return 8 + sum(8 + len(n.encode()) for n in names)


def test_truncated_fixture_at_several_points(tmp_path):
    src = DISC / "disc_model.v2.params"
    raw = src.read_bytes()
    names = list(read_params(src))
    names_start = len(raw) - _names_table_size(names)
    assert struct.unpack("<Q", raw[names_start:names_start + 8])[0] == len(names)
    cases = {
        "list_header": (10, ["truncated", "list header"]),
        "count": (20, ["truncated", "array count"]),
        "array0_header": (24 + 6, ["truncated"]),
        "array0_data": (24 + 60 + 100, ["truncated", "array 0 data", "needs 12288 bytes"]),
        "mid_data": (len(raw) // 2, ["truncated", "data"]),
        "names_count": (names_start + 3, ["truncated", "names count"]),
        "names_table": (names_start + 30, ["truncated", "name"]),
        "last_name": (len(raw) - 3, ["truncated", f"name {len(names) - 1}"]),
    }
    for label, (cut, frags) in cases.items():
        p = write(tmp_path, f"cut_{label}.params", raw[:cut])
        msg = assert_bad(p, *frags)
        assert "bytes" in msg, (label, msg)


def test_truncation_message_names_index_and_sizes(tmp_path):
    a = np.arange(10, dtype=np.float32)
    raw = list_bytes([arr_bytes(a), arr_bytes(a)], ["first", "second"])
    first_len = len(arr_bytes(a))
    cut = 24 + first_len + 32 + 4  # 4 bytes into the second array's data (its header is 32 bytes)
    p = write(tmp_path, "t.params", raw[:cut])
    msg = assert_bad(p, "array 1", "needs 40 bytes", "only 4 are available")
    assert "truncated" in msg
    p = write(tmp_path, "h.params", raw[:24 + 14])  # inside the first array's shape dims
    assert_bad(p, "truncated", "array 0", "shape")
    p = write(tmp_path, "h2.params", raw[:24 + first_len + 13])  # inside the second one's
    assert_bad(p, "truncated", "array 1")


def test_empty_and_tiny_files(tmp_path):
    assert_bad(write(tmp_path, "empty.params", b""), "truncated")
    assert_bad(write(tmp_path, "tiny.params", b"\x12\x01\x00"), "truncated")


def test_wrong_list_magic(tmp_path):
    raw = bytearray((FMT / "dtypes.v2.params").read_bytes())
    raw[:8] = struct.pack("<Q", 0xDEADBEEF)
    assert_bad(write(tmp_path, "magic.params", bytes(raw)), "wrong magic number", "0xDEADBEEF")


def test_wrong_array_magic(tmp_path):
    raw = bytearray((FMT / "dtypes.v2.params").read_bytes())
    raw[24:28] = struct.pack("<I", 0xF993FACB)
    assert_bad(write(tmp_path, "amagic.params", bytes(raw)), "array 0", "0xF993FACB")


def test_unknown_dtype_flag(tmp_path):
    p = write(tmp_path, "flag.params", list_bytes([arr_bytes(np.zeros(2, np.float32), flag=13)], ["x"]))
    assert_bad(p, "unknown dtype flag 13")


def test_bad_device_type(tmp_path):
    p = write(tmp_path, "dev.params", list_bytes([arr_bytes(np.zeros(2, np.float32), dev_type=77)], ["x"]))
    assert_bad(p, "device type 77")


def test_names_count_mismatch(tmp_path):
    a = np.zeros(2, np.float32)
    p = write(tmp_path, "names.params", list_bytes([arr_bytes(a), arr_bytes(a)], ["only_one"]))
    assert_bad(p, "names count mismatch", "1 names for 2 arrays")


def test_array_count_too_large(tmp_path):
    a = np.zeros(2, np.float32)
    p = write(tmp_path, "count.params", list_bytes([arr_bytes(a)], ["x"], n=2**40))
    assert_bad(p, "array count")


def test_trailing_bytes_and_duplicate_names(tmp_path):
    a = np.zeros(2, np.float32)
    p = write(tmp_path, "trail.params", list_bytes([arr_bytes(a)], ["x"]) + b"\x00junk")
    assert_bad(p, "trailing")
    p = write(tmp_path, "dup.params", list_bytes([arr_bytes(a), arr_bytes(a)], ["arg:x", "aux:x"]))
    assert_bad(p, "duplicate", "'x'")


@pytest.mark.parametrize("header", ["V2", "V3"])
def test_empty_ndarray_is_refused(tmp_path, header):
    a = np.zeros(2, np.float32)
    blobs = [arr_bytes(a, header), arr_bytes(a, header, none=True), arr_bytes(a, header)]
    p = write(tmp_path, "none.params", list_bytes(blobs, ["a", "w", "c"]))
    assert_bad(p, "array 1 'w'", "empty")


def test_v3_scalar_crafted(tmp_path):
    p = write(tmp_path, "sc.params", list_bytes([arr_bytes(np.float64(1.5), "V3")], ["s"]))
    got = read_params(p)["s"]
    assert got.shape == () and got.dtype == np.float64 and float(got) == 1.5


@pytest.mark.parametrize("fname,name,kind", [
    ("row_sparse.v2.params", "embed.weight", "row_sparse"),
    ("csr.v2.params", "csr.weight", "csr"),
])
def test_sparse_arrays_are_refused(tmp_path, fname, name, kind):
    p = write(tmp_path, fname, (FMT / fname).read_bytes())
    assert_bad(p, f"'{name}'", kind, "dense")


class _TouchOnUnpickle:
    """Unpickling this creates a file: proof that nothing was unpickled if it is absent."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


def test_pickle_in_npz_is_refused(tmp_path):
    marker = tmp_path / "unpickled.marker"
    obj = np.empty(1, dtype=object)
    obj[0] = _TouchOnUnpickle(str(marker))
    p = tmp_path / "evil.params"
    with open(p, "wb") as fh:
        np.savez(fh, good=np.zeros(2, np.float32), evil=obj)
    assert b"touch" in p.read_bytes()  # the payload is really there
    gen = iter_params(p)
    assert next(gen)[0] == "good"
    before = listing(tmp_path)
    with pytest.raises(CheckpointError) as info:
        next(gen)
    assert str(p) in str(info.value) and "evil.npy" in str(info.value) and "pickle" in str(info.value)
    assert not marker.exists()
    assert listing(tmp_path) == before
    with pytest.raises(CheckpointError):
        read_params(p)
    assert not marker.exists()


def test_pickle_single_npy_is_refused(tmp_path):
    p = tmp_path / "evil.npy"
    obj = np.empty(1, dtype=object)
    obj[0] = {"a": 1}
    np.save(p, obj, allow_pickle=True)
    assert_bad(p, "pickle")


def test_corrupt_npz(tmp_path):
    raw = (DISC / "disc_model.npz.params").read_bytes()
    assert_bad(write(tmp_path, "cut.params", raw[: len(raw) // 2]), "npz")
    p = tmp_path / "other.params"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("weights.bin", b"\x00" * 8)
    assert_bad(p, "unexpected entry", "weights.bin")
    # flip a data byte: the CRC check must catch it
    bad = bytearray(raw)
    bad[len(raw) // 3] ^= 0xFF
    p = write(tmp_path, "crc.params", bytes(bad))
    with pytest.raises(CheckpointError) as info:
        read_params(p)
    assert str(p) in str(info.value)


def test_missing_file(tmp_path):
    p = tmp_path / "absent.params"
    with pytest.raises(CheckpointError) as info:
        read_params(p)
    assert str(p) in str(info.value)


def test_bad_config_and_vocab(tmp_path):
    bad_yaml = write(tmp_path, "bad.yml", b"MODEL: [unclosed\n")
    with pytest.raises(CheckpointError, match="bad.yml"):
        read_gluon_config(bad_yaml)
    no_model = write(tmp_path, "nomodel.yml", b"VERSION: 1\n")
    with pytest.raises(CheckpointError, match="MODEL"):
        read_gluon_config(no_model)
    unsafe = write(tmp_path, "unsafe.yml", b"MODEL: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(CheckpointError, match="unsafe.yml"):
        read_gluon_config(unsafe)
    v = write(tmp_path, "v.json", json.dumps({"all_tokens": ["a", "b"],
                                              "special_token_key_value": {"unk_token": "[UNK]"}}).encode())
    with pytest.raises(CheckpointError, match=r"v\.json.*\[UNK\]"):
        read_gluon_vocab(v)
    v2 = write(tmp_path, "v2.json", json.dumps({"all_tokens": ["a", "a"]}).encode())
    with pytest.raises(CheckpointError, match="duplicate"):
        read_gluon_vocab(v2)
    v3 = write(tmp_path, "v3.json", json.dumps({"idx_to_token": ["a"]}).encode())
    with pytest.raises(CheckpointError, match="all_tokens"):
        read_gluon_vocab(v3)
    v4 = write(tmp_path, "v4.json", b"{not json")
    with pytest.raises(CheckpointError, match="v4.json"):
        read_gluon_vocab(v4)
