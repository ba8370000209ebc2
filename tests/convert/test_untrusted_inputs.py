"""Crafted checkpoint files and archives: refused with an error naming the file (and the member,
dataset or key), before anything is read from elsewhere or allocated from a declared size. Each
case failed before the fix it tests; the files are a few bytes that declare huge sizes."""

import io
import json
import re
import struct
import tarfile
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

from biozoo._io import read_json
from biozoo.convert import archives
from biozoo.convert.aioner import _member_of, read_keras_h5
from biozoo.convert.archives import extract_archive
from biozoo.convert.mxnet_params import iter_params
from biozoo.convert.readers import SafetensorsReader
from biozoo.errors import CheckpointError, DataFormatError


def keras_h5(path, fill):
    """A Keras weights file with one layer `dense`; `fill(layer_group)` adds its weight."""
    with h5py.File(path, "w") as f:
        weights = f.create_group("model_weights")
        weights.attrs["layer_names"] = [b"dense"]
        layer = weights.create_group("dense")
        layer.attrs["weight_names"] = [b"dense/kernel:0"]
        fill(f, layer)


@pytest.mark.parametrize("where, named", [("layer", "'/model_weights/dense' is a link"),
                                          ("model_weights", "'/model_weights' is a link")])
def test_an_h5_group_linked_to_another_file_is_refused(tmp_path, where, named):
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        layer = f.create_group("dense")
        layer.attrs["weight_names"] = [b"dense/kernel:0"]
        layer.create_group("dense")["kernel:0"] = np.full(4, 7, np.float32)
        f.attrs["layer_names"] = [b"dense"]

    def fill(f, layer):
        if where == "layer":
            del f["model_weights/dense"]
            f["model_weights/dense"] = h5py.ExternalLink(str(other), "/dense")
        else:
            del f["model_weights"]
            f["model_weights"] = h5py.ExternalLink(str(other), "/")

    keras_h5(tmp_path / "evil.h5", fill)
    with pytest.raises(CheckpointError, match=rf"evil\.h5: {named}; refused"):
        read_keras_h5(tmp_path / "evil.h5")


def test_an_h5_dataset_declaring_more_than_the_file_holds_is_refused(tmp_path):
    def fill(f, layer):
        layer.create_group("dense").create_dataset("kernel:0", shape=(1 << 40,), dtype="f4", chunks=(1 << 20,),
                                                   compression="gzip")

    keras_h5(tmp_path / "huge.h5", fill)
    with pytest.raises(CheckpointError, match=r"huge\.h5: dataset '/model_weights/dense/dense/kernel:0' declares "
                                              r"shape \(1099511627776,\)"):
        read_keras_h5(tmp_path / "huge.h5")
    keras_h5(tmp_path / "zeros.h5", lambda f, layer: layer.create_group("dense").create_dataset(
        "kernel:0", data=np.zeros(1 << 16, np.float32), chunks=(1 << 14,), compression="gzip"))
    assert read_keras_h5(tmp_path / "zeros.h5")["dense/kernel:0"].shape == (1 << 16,)


def zip_declaring(path, size, count=1):
    """A zip whose `count` members each declare `size` bytes (deflated zeros)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(count):
            archive.writestr(f"top/m{i}.bin", bytes(size))


def test_an_archive_unpacking_to_too_much_is_refused_before_writing(tmp_path):
    zip_declaring(tmp_path / "bomb.zip", 1 << 20, count=3)
    with pytest.raises(CheckpointError, match=r"bomb\.zip: its members unpack to 3145728 bytes, more than the "
                                              r"2000000 biozoo unpacks"):
        extract_archive(tmp_path / "bomb.zip", tmp_path / "out", max_bytes=2_000_000)
    with pytest.raises(CheckpointError, match=r"bomb\.zip: 3 members, more than the 2 biozoo unpacks"):
        extract_archive(tmp_path / "bomb.zip", tmp_path / "out", max_members=2)
    assert not (tmp_path / "out").exists()
    extract_archive(tmp_path / "bomb.zip", tmp_path / "out", max_bytes=4_000_000)
    assert (tmp_path / "out" / "top" / "m2.bin").stat().st_size == 1 << 20


def test_a_tar_gz_expanding_more_than_its_weights_would_is_refused(tmp_path, monkeypatch):
    """2 MiB of zeros in a ~2 KB .tar.gz: a ratio no checkpoint has (the floor lowered from 256 MiB)."""
    monkeypatch.setattr(archives, "UNCHECKED_BYTES", 1 << 20)
    with tarfile.open(tmp_path / "bomb.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("top/zeros.bin")
        info.size = 2 << 20
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    with pytest.raises(CheckpointError, match=r"bomb\.tar\.gz: its members unpack to 2097152 bytes, more than the "
                                              r"\d+ biozoo unpacks from a \d+-byte archive"):
        extract_archive(tmp_path / "bomb.tar.gz", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_tar_is_not_unpacked_without_tarfiles_data_filter(tmp_path, monkeypatch):
    with tarfile.open(tmp_path / "ok.tar", "w") as tar:
        tar.addfile(tarfile.TarInfo("top/empty"), io.BytesIO())
    monkeypatch.delattr(tarfile, "data_filter")
    with pytest.raises(CheckpointError, match=r"ok\.tar: unpacking a tar archive safely needs tarfile's data filter"):
        extract_archive(tmp_path / "ok.tar", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_only_the_wanted_members_are_unpacked(tmp_path):
    with zipfile.ZipFile(tmp_path / "models.zip", "w") as archive:
        for name in ("pretrained_models/AIONER/A.h5", "pretrained_models/AIONER/B.h5",
                     "pretrained_models/base-a/vocab.txt", "pretrained_models/base-b/vocab.txt"):
            archive.writestr(name, "x")
    root = extract_archive(tmp_path / "models.zip", tmp_path / "out",
                           wanted=lambda name: _member_of(name, ("AIONER/A.h5", "base-a")))
    found = sorted(str(p.relative_to(root)) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert found == ["pretrained_models/AIONER/A.h5", "pretrained_models/base-a/vocab.txt"]


def test_archive_caps_pass_the_largest_registered_archive():
    """The caps hold every archive the registry records a size for, at the ratio of weights (~1.1)."""
    registry = Path(archives.__file__).parents[1] / "checkpoints_registry.json"
    sizes = [int(s) for s in re.findall(r'"size": (\d+)', registry.read_text())]
    assert max(sizes) * 2 < min(archives.MAX_UNPACKED_BYTES, archives.MAX_EXPANSION * max(sizes))


def npy_header(shape):
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return out.getvalue()


@pytest.mark.parametrize("layout", ["npz", "npy"])
def test_a_params_array_declaring_more_than_it_holds_is_refused(tmp_path, layout):
    path = tmp_path / "huge.params"
    if layout == "npz":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("w.npy", npy_header((1 << 38,)) + bytes(16))
        what = r"entry 'w\.npy'"
    else:
        path.write_bytes(npy_header((1 << 38,)) + bytes(16))
        what = r"the \.npy array"
    with pytest.raises(CheckpointError, match=rf"huge\.params: {what} declares shape \(274877906944,\)"):
        list(iter_params(path))


def safetensors(path, header):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text)


def test_a_safetensors_shape_whose_size_overflows_int64_is_refused(tmp_path):
    safetensors(tmp_path / "ovf.safetensors", {"w": {"dtype": "F32", "shape": [1 << 32, 1 << 32, 4],
                                                     "data_offsets": [0, 0]}})
    with pytest.raises(CheckpointError, match=r"ovf\.safetensors: tensor 'w' declares shape"):
        SafetensorsReader([tmp_path / "ovf.safetensors"])


BAD_JSON = {
    "digits": (b'{"a": ' + b"9" * 5000 + b"}", "Exceeds the limit"),
    "nesting": (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
    "nan": (b'{"layer_norm_eps": NaN}', "NaN is not a finite number"),
    "infinity": (b'{"a": -Infinity}', "-Infinity is not a finite number"),
    "overflow": (b'{"a": 1e999}', "1e999 is not a finite number"),
}


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_a_json_file_python_cannot_hold_is_named(tmp_path, case):
    text, message = BAD_JSON[case]
    (tmp_path / "config.json").write_bytes(text)
    with pytest.raises(DataFormatError, match=rf"config\.json: invalid JSON in model config \({message}"):
        read_json(tmp_path / "config.json", "model config", DataFormatError, allow_nan=False)


def test_a_results_file_may_hold_nan(tmp_path):
    """biozoo's own results (json.dumps' defaults) may hold a NaN score: read by default."""
    (tmp_path / "metrics.json").write_text('{"f1": NaN}')
    assert np.isnan(read_json(tmp_path / "metrics.json", "metrics")["f1"])


def test_a_checkpoint_config_with_nan_is_refused_naming_it(tmp_path):
    """A HuggingFace config.json is read with allow_nan=False by the converter."""
    from biozoo.convert.hf import read_hf_config

    (tmp_path / "config.json").write_text('{"model_type": "bert", "layer_norm_eps": NaN}')
    with pytest.raises(CheckpointError, match=r"config\.json: invalid JSON in model config \(NaN is not a finite"):
        read_hf_config(tmp_path)


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_a_safetensors_header_python_cannot_hold_is_named(tmp_path, case):
    text, message = BAD_JSON[case]
    safetensors(tmp_path / "bad.safetensors", text)
    with pytest.raises(CheckpointError, match=rf"bad\.safetensors: corrupt safetensors header \({message}"):
        SafetensorsReader([tmp_path / "bad.safetensors"])
