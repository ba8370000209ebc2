"""Read MXNet / GluonNLP ``.params`` files with numpy only (no mxnet needed).

Two on-disk layouts exist; the first bytes tell them apart (as MXNet's own
``MXNDArrayLoad`` does):

* ``PK\\x03\\x04``: the npz archive written by MXNet 2 (``npx.savez``): a zip of
  ``<key>.npy`` entries. ``\\x93NUMPY``: a single ``.npy`` (one unnamed array).
* anything else must be the legacy NDArray list (``mx.nd.save``, MXNet 1.x and the
  GluonNLP 1.0 zoo files), all little-endian:

  - ``uint64 0x112`` (list magic), ``uint64 reserved``, ``uint64 n``, n arrays,
    then ``uint64 k`` (0 or n) names, each ``uint64 len`` + UTF-8 bytes.
  - each array starts with a ``uint32`` magic: V1 ``0xF993FAC8`` (int32 ndim +
    int64 dims), V2 ``0xF993FAC9`` (adds an int32 storage type before the shape),
    V3 ``0xF993FACA`` (V2 with numpy shape semantics); any other value is a
    pre-V1 header where the magic *is* ndim, followed by ndim uint32 dims.
  - then ``int32 dev_type, int32 dev_id``, ``int32 type_flag`` and the raw data
    in C order (for sparse arrays: aux types and shapes before the data, aux data
    after it).

The names table comes after all the data, so :func:`iter_params` first scans the
headers (seeking over the data), validates the whole file, and only then reads and
yields the arrays one by one. Names have their ``arg:`` / ``aux:`` prefix removed;
an unnamed list (``k == 0``) yields the names ``"0"``, ``"1"``, ... as does a single
``.npy`` (``"0"``).

Every malformed input raises :class:`biozoo.errors.CheckpointError` naming the
file. Pickled (object) arrays are never loaded.
"""

from __future__ import annotations

import math
import os
import struct
import zipfile
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np
import yaml

from biozoo._io import read_json
from biozoo.errors import CheckpointError

__all__ = [
    "LIST_MAGIC",
    "NDARRAY_V1_MAGIC",
    "NDARRAY_V2_MAGIC",
    "NDARRAY_V3_MAGIC",
    "iter_params",
    "read_params",
    "read_gluon_config",
    "read_gluon_vocab",
    "strip_prefix",
]

LIST_MAGIC = 0x112
NDARRAY_V1_MAGIC = 0xF993FAC8
NDARRAY_V2_MAGIC = 0xF993FAC9
NDARRAY_V3_MAGIC = 0xF993FACA

_ZIP_MAGIC = b"PK\x03\x04"
_NPY_MAGIC = b"\x93NUMPY"

# mshadow type flags -> little-endian numpy dtype of the stored bytes.
_BF16_FLAG = 12
_DTYPES = {
    0: np.dtype("<f4"),
    1: np.dtype("<f8"),
    2: np.dtype("<f2"),
    3: np.dtype("u1"),
    4: np.dtype("<i4"),
    5: np.dtype("i1"),
    6: np.dtype("<i8"),
    7: np.dtype("?"),
    8: np.dtype("<i2"),
    9: np.dtype("<u2"),
    10: np.dtype("<u4"),
    11: np.dtype("<u8"),
    _BF16_FLAG: np.dtype("<u2"),  # bfloat16 bits; widened to float32 on read
}
_DTYPE_NAMES = {
    0: "float32", 1: "float64", 2: "float16", 3: "uint8", 4: "int32", 5: "int8",
    6: "int64", 7: "bool", 8: "int16", 9: "uint16", 10: "uint32", 11: "uint64",
    12: "bfloat16",
}
_STYPES = {-1: "undefined", 0: "default", 1: "row_sparse", 2: "csr"}
_NUM_AUX = {-1: 0, 0: 0, 1: 1, 2: 2}
_DEV_TYPES = {1, 2, 3, 5}  # cpu, gpu, cpu_pinned, cpu_shared
_MAX_NDIM = 64  # numpy's own limit; anything above is a corrupt header
_PREFIXES = ("arg:", "aux:")
_CHUNK = 1 << 26  # bytes per read when filling an array


def strip_prefix(name: str) -> str:
    """Drop a leading ``arg:`` or ``aux:`` (as MXNet's ``load_dict`` does)."""
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _err(path, message: str) -> CheckpointError:
    return CheckpointError(f"{os.fspath(path)}: {message}")


def _magic_name(magic: int) -> str:
    return {NDARRAY_V1_MAGIC: "V1", NDARRAY_V2_MAGIC: "V2", NDARRAY_V3_MAGIC: "V3"}.get(magic, "pre-V1")


# --------------------------------------------------------------------------------------
# Legacy NDArray list format
# --------------------------------------------------------------------------------------


@dataclass
class _Entry:
    index: int
    header: str  # "pre-V1", "V1", "V2" or "V3"
    offset: int = 0  # file offset of the raw (dense) data
    shape: Tuple[int, ...] = ()
    type_flag: int = 0
    nbytes: int = 0
    stype: int = 0
    empty: bool = False  # a "none" NDArray: nothing stored after the shape


class _Reader:
    """Sequential little-endian reads with truncation checks against the file size."""

    def __init__(self, fh, path, size: int):
        self.fh = fh
        self.path = path
        self.size = size

    def tell(self) -> int:
        return self.fh.tell()

    def need(self, nbytes: int, what: str) -> None:
        avail = self.size - self.fh.tell()
        if nbytes > avail:
            raise _err(
                self.path,
                f"truncated file: {what} needs {nbytes} bytes at offset {self.fh.tell()}, "
                f"but only {max(avail, 0)} are available (file size {self.size})",
            )

    def read(self, nbytes: int, what: str) -> bytes:
        self.need(nbytes, what)
        data = self.fh.read(nbytes)
        if len(data) != nbytes:  # the file shrank under us
            raise _err(self.path, f"truncated file: {what} needs {nbytes} bytes, got {len(data)}")
        return data

    def skip(self, nbytes: int, what: str) -> None:
        self.need(nbytes, what)
        self.fh.seek(nbytes, os.SEEK_CUR)

    def unpack(self, fmt: str, what: str):
        return struct.unpack(fmt, self.read(struct.calcsize(fmt), what))


def _read_tshape(r: _Reader, what: str, allow_unknown: bool) -> Optional[Tuple[int, ...]]:
    """TShape::Load: int32 ndim then ndim int64 dims. None means an unknown shape."""
    (ndim,) = r.unpack("<i", f"{what} ndim")
    if ndim == -1 and allow_unknown:
        return None
    if ndim < 0 or ndim > _MAX_NDIM:
        raise _err(r.path, f"{what} has an invalid ndim {ndim} at offset {r.tell() - 4}")
    dims = r.unpack(f"<{ndim}q", f"{what} dims") if ndim else ()
    return tuple(int(d) for d in dims)


def _nbytes(shape: Tuple[int, ...], itemsize: int) -> int:
    n = itemsize
    for d in shape:
        n *= d
    return n


def _scan_array(r: _Reader, index: int) -> _Entry:
    what = f"array {index}"
    (magic,) = r.unpack("<I", f"{what} header magic")
    nad = 0
    sshape: Optional[Tuple[int, ...]] = None
    if magic in (NDARRAY_V2_MAGIC, NDARRAY_V3_MAGIC):
        entry = _Entry(index, _magic_name(magic))
        (stype,) = r.unpack("<i", f"{what} storage type")
        if stype not in _STYPES:
            raise _err(r.path, f"{what} has an unknown storage type {stype}")
        entry.stype = stype
        nad = _NUM_AUX[stype]
        if nad:
            sshape = _read_tshape(r, f"{what} storage shape", allow_unknown=False)
        shape = _read_tshape(r, f"{what} shape", allow_unknown=True)
        if magic == NDARRAY_V3_MAGIC:
            if shape is None or any(d < 0 for d in shape):
                entry.empty = True
                return entry
        elif shape is None or len(shape) == 0:
            entry.empty = True
            return entry
    elif magic == NDARRAY_V1_MAGIC:
        entry = _Entry(index, "V1")
        shape = _read_tshape(r, f"{what} shape", allow_unknown=True)
        if shape is None or len(shape) == 0:
            entry.empty = True
            return entry
    else:
        # pre-V1: the magic is ndim, followed by ndim uint32 dims.
        if magic > _MAX_NDIM:
            raise _err(
                r.path,
                f"{what} has an unrecognized header magic 0x{magic:08X} at offset {r.tell() - 4} "
                f"(expected V1 0x{NDARRAY_V1_MAGIC:08X}, V2 0x{NDARRAY_V2_MAGIC:08X}, "
                f"V3 0x{NDARRAY_V3_MAGIC:08X} or a pre-V1 ndim <= {_MAX_NDIM})",
            )
        entry = _Entry(index, "pre-V1")
        shape = tuple(int(d) for d in r.unpack(f"<{magic}I", f"{what} dims")) if magic else ()
        if len(shape) == 0:
            entry.empty = True
            return entry
    if any(d < 0 for d in shape):
        raise _err(r.path, f"{what} has a negative dimension in shape {shape}")
    entry.shape = shape
    dev_type, dev_id = r.unpack("<ii", f"{what} context")
    if dev_type not in _DEV_TYPES:
        raise _err(r.path, f"{what} has an invalid device type {dev_type} (corrupt header?)")
    (type_flag,) = r.unpack("<i", f"{what} dtype flag")
    if type_flag not in _DTYPES:
        raise _err(r.path, f"{what} has an unknown dtype flag {type_flag} (known: 0-12)")
    entry.type_flag = type_flag
    itemsize = _DTYPES[type_flag].itemsize
    aux_bytes = 0
    for a in range(nad):
        (aux_flag,) = r.unpack("<i", f"{what} aux {a} dtype flag")
        if aux_flag not in _DTYPES:
            raise _err(r.path, f"{what} aux {a} has an unknown dtype flag {aux_flag}")
        aux_shape = _read_tshape(r, f"{what} aux {a} shape", allow_unknown=False)
        aux_bytes += _nbytes(aux_shape, _DTYPES[aux_flag].itemsize)
    entry.offset = r.tell()
    entry.nbytes = _nbytes(sshape if nad else shape, itemsize)
    r.skip(entry.nbytes + aux_bytes, f"{what} data ({_DTYPE_NAMES[type_flag]}, shape {shape})")
    return entry


def _scan_legacy(fh, path, size: int) -> Tuple[List[_Entry], List[str]]:
    r = _Reader(fh, path, size)
    magic, _reserved = r.unpack("<QQ", "list header")
    if magic != LIST_MAGIC:
        raise _err(path, f"wrong magic number 0x{magic:X} (expected 0x{LIST_MAGIC:X})")
    (n,) = r.unpack("<Q", "array count")
    # Every array takes at least 4 bytes, which bounds a corrupt count early.
    if n * 4 > size - r.tell():
        raise _err(
            path,
            f"truncated file or corrupt array count: {n} arrays need at least {n * 4} bytes "
            f"after offset {r.tell()}, but only {size - r.tell()} are available",
        )
    entries = [_scan_array(r, i) for i in range(n)]
    (k,) = r.unpack("<Q", f"names count (after {n} arrays)")
    if k not in (0, n):
        raise _err(path, f"names count mismatch: {k} names for {n} arrays")
    names: List[str] = []
    for i in range(k):
        (length,) = r.unpack("<Q", f"name {i} length")
        raw = r.read(length, f"name {i} (length {length})")
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise _err(path, f"name {i} is not valid UTF-8: {exc}") from None
    trailing = size - r.tell()
    if trailing:
        raise _err(path, f"{trailing} unexpected trailing bytes after the names table")
    if not names:
        names = [str(i) for i in range(n)]
    names = [strip_prefix(x) for x in names]
    seen = set()
    for name in names:
        if name in seen:
            raise _err(path, f"duplicate parameter name {name!r} (after stripping arg:/aux:)")
        seen.add(name)
    for entry, name in zip(entries, names):
        label = f"array {entry.index} {name!r}"
        if entry.stype in (1, 2):
            raise _err(
                path,
                f"{label} has {_STYPES[entry.stype]} storage (stype {entry.stype}); "
                "only dense arrays are supported",
            )
        if entry.empty:
            raise _err(path, f"{label} is an empty (uninitialized) NDArray with no data ({entry.header} header)")
    return entries, names


def _read_entry(fh, path, entry: _Entry, name: str) -> np.ndarray:
    dtype = _DTYPES[entry.type_flag]
    count = entry.nbytes // dtype.itemsize
    arr = np.empty(count, dtype=dtype)
    fh.seek(entry.offset)
    view = memoryview(arr).cast("B")
    got = 0
    while got < entry.nbytes:  # one read may return less (e.g. Linux caps a read at ~2 GiB)
        n = fh.readinto(view[got:got + _CHUNK])
        if not n:
            break
        got += n
    if got != entry.nbytes:
        raise _err(
            path,
            f"truncated file: array {entry.index} {name!r} needs {entry.nbytes} bytes, got {got}",
        )
    arr = arr.reshape(entry.shape)
    if entry.type_flag == _BF16_FLAG:
        return _bf16_to_f32(arr)
    return arr.astype(dtype.newbyteorder("="), copy=False)


def _bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype("<u4") << 16).view("<f4").astype(np.float32, copy=False)


def _iter_legacy(path, fh, size: int) -> Iterator[Tuple[str, np.ndarray]]:
    entries, names = _scan_legacy(fh, path, size)
    for entry, name in zip(entries, names):
        yield name, _read_entry(fh, path, entry, name)


# --------------------------------------------------------------------------------------
# npz / npy (MXNet 2)
# --------------------------------------------------------------------------------------


def _check_declared_size(fh, path, what: str, size: int) -> None:
    """Refuse a .npy whose header declares more data than its `size` bytes hold, before numpy
    allocates the array; `fh` is left where it was."""
    start = fh.tell()
    version = np.lib.format.read_magic(fh)
    header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = header(fh)
    held = size - (fh.tell() - start)
    if not dtype.hasobject and math.prod(shape) * dtype.itemsize > held:
        raise _err(path, f"{what} declares shape {shape} ({dtype}, {math.prod(shape) * dtype.itemsize} bytes) "
                         f"but holds {held} bytes of data")
    fh.seek(start)


def _read_npy(fh, path, what: str, size: int) -> np.ndarray:
    try:
        _check_declared_size(fh, path, what, size)
        arr = np.lib.format.read_array(fh, allow_pickle=False)
    except CheckpointError:
        raise
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise _err(path, f"{what} holds an object (pickled) array; refusing to unpickle") from None
        raise _err(path, f"{what} is not a valid .npy: {exc}") from None
    except (OSError, EOFError, zipfile.BadZipFile, struct.error) as exc:
        raise _err(path, f"{what} is unreadable or truncated: {exc}") from None
    if arr.dtype.hasobject:  # defensive: read_array refuses these already
        raise _err(path, f"{what} holds an object array")
    if arr.dtype.names is not None:
        # MXNet's numpy bfloat16 is the structured dtype [('bfloat16', '<u2')].
        if arr.dtype.names == ("bfloat16",) and arr.dtype["bfloat16"] == np.dtype("<u2"):
            return _bf16_to_f32(arr.view("<u2").reshape(arr.shape))
        raise _err(path, f"{what} has an unsupported structured dtype {arr.dtype}")
    if arr.dtype.kind not in "biuf":
        raise _err(path, f"{what} has an unsupported dtype {arr.dtype}")
    return arr.astype(arr.dtype.newbyteorder("="), copy=False)


def _iter_npz(path) -> Iterator[Tuple[str, np.ndarray]]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise _err(path, f"not a readable npz (zip) archive: {exc}") from None
    with zf:
        infos = zf.infolist()
        names = []
        for info in infos:
            if not info.filename.endswith(".npy") or info.is_dir():
                raise _err(path, f"unexpected entry {info.filename!r} in the npz archive (expected <key>.npy)")
            names.append(strip_prefix(info.filename[: -len(".npy")]))
        if len(set(names)) != len(names):
            dup = next(x for x in names if names.count(x) > 1)
            raise _err(path, f"duplicate parameter name {dup!r} in the npz archive")
        for info, name in zip(infos, names):
            what = f"entry {info.filename!r}"
            try:
                member = zf.open(info)
            except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
                raise _err(path, f"{what} cannot be opened: {exc}") from None
            with member:
                arr = _read_npy(member, path, what, info.file_size)
                try:
                    rest = member.read(1)  # also verifies the CRC at the end of the entry
                except (zipfile.BadZipFile, OSError, EOFError) as exc:
                    raise _err(path, f"{what} is corrupt: {exc}") from None
                if rest:
                    raise _err(path, f"{what} has trailing bytes after the array data")
            yield name, arr


def _iter_npy(path, fh, size: int) -> Iterator[Tuple[str, np.ndarray]]:
    arr = _read_npy(fh, path, "the .npy array", size)
    if fh.read(1):
        raise _err(path, "trailing bytes after the .npy array data")
    yield "0", arr


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------


def iter_params(path) -> Iterator[Tuple[str, np.ndarray]]:
    """Yield ``(name, array)`` pairs from an MXNet ``.params`` file, one array at a time.

    The layout (legacy NDArray list, npz or npy) is chosen by the first bytes. For the
    legacy layout the whole header/name table is validated before the first array is
    yielded, so a truncated or corrupt file fails before any array is produced.
    bfloat16 arrays are returned as float32; every other dtype is kept.
    """
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise _err(path, f"cannot open: {exc}") from None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(8)
        if head.startswith(_ZIP_MAGIC):
            fh.close()
            yield from _iter_npz(path)
            return
        if head.startswith(_NPY_MAGIC):
            fh.seek(0)
            yield from _iter_npy(path, fh, size)
            return
        if len(head) < 8:
            raise _err(
                path,
                f"truncated file: the list header needs 24 bytes, only {size} are available",
            )
        (magic,) = struct.unpack("<Q", head)
        if magic != LIST_MAGIC:
            raise _err(
                path,
                f"wrong magic number 0x{magic:X} (expected the MXNet NDArray list magic "
                f"0x{LIST_MAGIC:X}, a zip 'PK\\x03\\x04' or '\\x93NUMPY')",
            )
        fh.seek(0)
        yield from _iter_legacy(path, fh, size)


def param_shapes(path) -> Dict[str, Tuple[int, ...]]:
    """``{name: shape}`` from the headers alone (no array data is read)."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(8)
        if head.startswith(_ZIP_MAGIC) or head.startswith(_NPY_MAGIC):
            shapes = {}
            if head.startswith(_NPY_MAGIC):
                fh.seek(0)
                members = [("0", fh)]
            else:
                zf = zipfile.ZipFile(path)
                members = [(strip_prefix(i.filename[: -len(".npy")]), zf.open(i)) for i in zf.infolist()]
            for name, member in members:
                try:
                    version = np.lib.format.read_magic(member)
                    reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                              else np.lib.format.read_array_header_2_0)
                    shape, _, _ = reader(member)
                except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
                    raise _err(path, f"entry {name!r}: unreadable .npy header: {exc}") from None
                shapes[name] = tuple(shape)
            return shapes
        fh.seek(0)
        entries, names = _scan_legacy(fh, path, size)
        return {name: tuple(entry.shape) for entry, name in zip(entries, names)}


def read_params(path) -> Dict[str, np.ndarray]:
    """All arrays of an MXNet ``.params`` file as an ordered ``{name: array}`` dict."""
    return dict(iter_params(path))


def read_gluon_config(path) -> Dict[str, Any]:
    """The ``MODEL`` section of a GluonNLP ``model.yml`` (yacs YAML) as a dict."""
    try:
        with open(path, "r", encoding="utf-8") as fh:
            cfg = yaml.safe_load(fh)
    except OSError as exc:
        raise _err(path, f"cannot open: {exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise _err(path, f"not valid YAML: {exc}") from None
    if not isinstance(cfg, dict):
        raise _err(path, f"expected a YAML mapping at the top level, got {type(cfg).__name__}")
    model = cfg.get("MODEL")
    if not isinstance(model, dict):
        raise _err(path, "missing or invalid 'MODEL' section (expected a mapping)")
    return dict(model)


def read_gluon_vocab(path) -> List[str]:
    """Tokens (index order) of a GluonNLP 1.0 ``vocab.json``.

    The file is ``{"all_tokens": [...], "special_token_key_value": {...}}``; every
    special token must be one of ``all_tokens``.
    """
    try:
        data = read_json(path, "GluonNLP vocab", allow_nan=False)
    except FileNotFoundError as exc:
        raise _err(path, f"cannot open: {exc}") from None
    if not isinstance(data, dict) or "all_tokens" not in data:
        raise _err(path, "expected a GluonNLP 1.0 vocab object with an 'all_tokens' list")
    tokens = data["all_tokens"]
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise _err(path, "'all_tokens' must be a list of strings")
    if len(set(tokens)) != len(tokens):
        dup = next(t for t in tokens if tokens.count(t) > 1)
        raise _err(path, f"duplicate token {dup!r} in 'all_tokens'")
    special = data.get("special_token_key_value", {})
    if not isinstance(special, dict):
        raise _err(path, "'special_token_key_value' must be a mapping")
    known = set(tokens)
    for key, value in special.items():
        if value not in known:
            raise _err(path, f"special token {key}={value!r} is not in 'all_tokens'")
    return list(tokens)
