"""Readers for HuggingFace checkpoint files, streaming one tensor at a time.

Each reader has `names()` (all tensor names, read from headers only) and `tensors()`
(`(name, float32-or-int numpy array)` pairs). Nothing here runs code from the checkpoint:
safetensors is parsed directly, and `pytorch_model.bin` goes through torch's restricted
`weights_only` unpickler.
"""

from __future__ import annotations

import ctypes
import json
import math
import mmap
import os
import pickle
import re
import struct
import zipfile

import numpy as np

from biozoo._io import json_error_text, loads_json, read_json
from biozoo.errors import CheckpointError

SAFETENSORS_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "BF16": np.uint16,  # widened to float32 below; numpy has no bfloat16
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
}


def _to_float32(array, dtype):
    if dtype == "BF16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    if array.dtype in (np.float16, np.float64):
        return array.astype(np.float32)
    return array


class SafetensorsReader:
    """One or more `.safetensors` files (a sharded checkpoint lists them in its index)."""

    def __init__(self, paths):
        self.paths = [os.fspath(p) for p in paths]
        self._entries = {}  # name -> (path, dtype, shape, absolute offset, nbytes)
        for path in self.paths:
            self._read_header(path)

    def _read_header(self, path):
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise CheckpointError(f"{path}: truncated safetensors file ({size} bytes, no header).")
            (header_len,) = struct.unpack("<Q", head)
            if header_len > size - 8 or header_len > 100_000_000:
                raise CheckpointError(
                    f"{path}: corrupt or truncated safetensors file (header of {header_len} bytes "
                    f"declared, file has {size})."
                )
            try:
                header = loads_json(f.read(header_len))
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                raise CheckpointError(f"{path}: corrupt safetensors header ({error}).") from None
            except (ValueError, RecursionError) as error:
                raise CheckpointError(f"{path}: corrupt safetensors header ({json_error_text(error)}).") from None
        if not isinstance(header, dict):
            raise CheckpointError(f"{path}: corrupt safetensors header (not a JSON object).")
        data_start = 8 + header_len
        for name, info in header.items():
            if name == "__metadata__":
                continue
            try:
                dtype, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
            except (KeyError, TypeError, ValueError):
                raise CheckpointError(f"{path}: corrupt safetensors header entry for '{name}'.") from None
            if not (isinstance(shape, list) and all(_whole(d) and d >= 0 for d in shape)
                    and _whole(begin) and _whole(end)):
                raise CheckpointError(f"{path}: corrupt safetensors header entry for '{name}' (shape {shape}, "
                                      f"data_offsets {info['data_offsets']}).")
            if dtype not in SAFETENSORS_DTYPES:
                raise CheckpointError(f"{path}: tensor '{name}' has unsupported dtype {dtype}.")
            itemsize = np.dtype(SAFETENSORS_DTYPES[dtype]).itemsize
            nbytes = math.prod(shape) * itemsize  # Python ints: no overflow to a small size
            if end - begin != nbytes or begin < 0:
                raise CheckpointError(
                    f"{path}: tensor '{name}' declares shape {shape} ({dtype}) but "
                    f"{end - begin} bytes of data."
                )
            if data_start + end > size:
                raise CheckpointError(
                    f"{path}: truncated: tensor '{name}' needs bytes up to {data_start + end}, "
                    f"the file has {size}."
                )
            if name in self._entries:
                raise CheckpointError(f"{path}: tensor '{name}' also appears in {self._entries[name][0]}.")
            self._entries[name] = (path, dtype, tuple(shape), data_start + begin, nbytes)

    def names(self):
        return list(self._entries)

    def shape(self, name):
        return self._entries[name][2]

    def tensors(self):
        handles = {}
        try:
            for name, (path, dtype, shape, offset, nbytes) in self._entries.items():
                f = handles.get(path) or handles.setdefault(path, open(path, "rb"))
                f.seek(offset)
                data = f.read(nbytes)
                if len(data) != nbytes:
                    raise CheckpointError(f"{path}: truncated while reading tensor '{name}'.")
                array = np.frombuffer(data, dtype=SAFETENSORS_DTYPES[dtype]).reshape(shape)
                yield name, _to_float32(array, dtype)
        finally:
            for f in handles.values():
                f.close()


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool)


class TorchBinReader:
    """`pytorch_model.bin` (or shards) through `torch.load(weights_only=True)`.

    The restricted unpickler only rebuilds tensors and plain containers; a file that asks
    for anything else (e.g. `os.system`) is refused, not executed.
    """

    def __init__(self, paths):
        try:
            import torch
        except ImportError:
            raise CheckpointError(
                f"{paths[0]}: reading pytorch_model.bin needs PyTorch. Install it with "
                "`pip install 'biozoo[torch]'` (torch==2.13.0), or convert the checkpoint to "
                "safetensors first."
            ) from None
        self._torch = torch
        self.paths = [os.fspath(p) for p in paths]
        self._state = {}
        self._mapped = False
        for path in self.paths:
            for name, tensor in self._load(path).items():
                if name in self._state:
                    raise CheckpointError(f"{path}: tensor '{name}' appears in more than one shard.")
                self._state[name] = tensor

    def _load(self, path):
        torch = self._torch
        try:
            mmap = zipfile.is_zipfile(path)  # mmap only works for the zip format
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
            self._mapped = self._mapped or mmap
        except pickle.UnpicklingError as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise CheckpointError(
                f"{path}: refused to load: the file contains Python objects other than tensors, "
                f"which could run code when unpickled ({first})."
            ) from None
        except (RuntimeError, EOFError, OSError, ValueError) as error:
            raise CheckpointError(f"{path}: unreadable PyTorch checkpoint ({error}).") from None
        if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
            state = state["state_dict"]
        if not isinstance(state, dict):
            raise CheckpointError(f"{path}: expected a state dict of tensors, found {type(state).__name__}.")
        return {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}

    def names(self):
        return list(self._state)

    def shape(self, name):
        return tuple(self._state[name].shape)

    def tensors(self):
        torch = self._torch
        for name in list(self._state):
            original = self._state[name]
            tensor = original.float() if original.dtype in (torch.bfloat16, torch.float16, torch.float64) else original
            yield name, tensor.numpy()
            if self._mapped:
                _drop_mapped_pages(original)


def _drop_mapped_pages(tensor):
    """Let the kernel drop the pages of a memory-mapped tensor once it has been converted, so
    that the mapped checkpoint does not accumulate in RSS. The mapping is private and
    read-only in use: dropped pages are re-read from the file if touched again."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        page = mmap.PAGESIZE
        start = tensor.data_ptr() // page * page
        end = tensor.data_ptr() + tensor.numel() * tensor.element_size()
        libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), 4)  # MADV_DONTNEED
    except (OSError, AttributeError):
        pass


WEIGHT_FILES = (
    ("model.safetensors.index.json", SafetensorsReader),
    ("model.safetensors", SafetensorsReader),
    ("pytorch_model.bin.index.json", TorchBinReader),
    ("pytorch_model.bin", TorchBinReader),
)


def find_weight_files(directory, declared=None):
    """(reader class, [paths]) for the weights of an HF model directory: the first of
    WEIGHT_FILES present (safetensors first) or, given `declared` (a registry entry's
    verified `sources.hf.weights`), that file or its shard index only."""
    directory = os.fspath(directory)
    readers = dict(WEIGHT_FILES)
    if declared is not None and declared not in readers:
        raise CheckpointError(f"{directory}: the declared weights file {declared} is not one biozoo reads "
                              f"({', '.join(readers)}).")
    names = list(readers) if declared is None else [declared, declared + ".index.json"]
    for filename in names:
        path = os.path.join(directory, filename)
        if not os.path.exists(path):
            continue
        if filename.endswith(".index.json"):
            return readers[filename], _shard_paths(directory, path)
        return readers[filename], [path]
    if declared is not None:
        raise CheckpointError(f"{directory}: no {declared} (nor {declared}.index.json), the weights file declared "
                              "for this checkpoint.")
    raise CheckpointError(
        f"{directory}: no weights found (looked for model.safetensors, pytorch_model.bin and their "
        "sharded .index.json forms)."
    )


def _shard_paths(directory, index_path):
    """The shard files a shard index names, each a relative path inside `directory`."""
    index = read_json(index_path, "shard index", allow_nan=False)
    if not isinstance(index, dict) or not isinstance(index.get("weight_map"), dict):
        raise CheckpointError(f"{index_path}: unreadable shard index (no 'weight_map' mapping).")
    values = list(index["weight_map"].values())
    outside = [repr(v) for v in values if not isinstance(v, str) or not v or os.path.isabs(v)
               or ".." in re.split(r"[\\/]", v)]
    if outside:
        raise CheckpointError(f"{index_path}: shard files must be relative paths inside {directory}; the "
                              f"weight_map names {', '.join(dict.fromkeys(outside))}.")
    shards = [os.path.join(directory, s) for s in dict.fromkeys(values)]
    absent = [s for s in shards if not os.path.exists(s)]
    if absent:
        raise CheckpointError(f"{index_path}: shard files missing: {', '.join(absent)}.")
    return shards


def open_checkpoint(directory, declared=None):
    """A reader of the weights `find_weight_files(directory, declared)` finds."""
    reader, paths = find_weight_files(directory, declared)
    return reader(paths)
