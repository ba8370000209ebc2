"""Tell what kind of file a path holds from its first bytes, for errors that say what was
given when a converter expected something else."""

from __future__ import annotations

import os
import struct
import zipfile

import sentencepiece

from biozoo._io import is_remote, remote_files

MAX_SENTENCEPIECE_BYTES = 64 << 20  # larger files are not parsed as SentencePiece models


def _open(path):
    return remote_files(path).gfile.GFile(path, "rb") if is_remote(path) else open(path, "rb")


def _head(path, size=64):
    with _open(path) as f:
        return f.read(size)


def _size(path):
    return remote_files(path).gfile.stat(path).length if is_remote(path) else os.path.getsize(path)


def describe(path) -> str:
    """A short phrase naming the kind of file at `path` ('a GluonNLP/MXNet .params file', ...)."""
    path = str(path)
    files = remote_files(path).gfile if is_remote(path) else None
    if files.isdir(path) if files else os.path.isdir(path):
        return "a directory"
    if not (files.exists(path) if files else os.path.exists(path)):
        return "nothing (no such file)"
    head = _head(path)
    if len(head) >= 8 and struct.unpack("<Q", head[:8])[0] == 0x112:
        return "a GluonNLP/MXNet .params file"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        except (zipfile.BadZipFile, OSError):
            return "a zip archive"
        if any(n.endswith("data.pkl") for n in names):
            return "a PyTorch checkpoint (zip format)"
        if any(n.endswith(".npy") for n in names):
            return "a NumPy .npz archive (GluonNLP's npz .params?)"
        return "a zip archive"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "a Python pickle (a legacy PyTorch checkpoint?)"
    if len(head) >= 8 and 8 < struct.unpack("<Q", head[:8])[0] < 100_000_000 and head[8:9] == b"{":
        return "a safetensors file"
    if path.endswith(".index") or path.endswith(".meta") or ".data-" in path.rsplit("/", 1)[-1]:
        return "a file of a TF1 checkpoint"
    if _size(path) <= MAX_SENTENCEPIECE_BYTES and is_sentencepiece(path):
        return "a SentencePiece model"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return "a binary file of unknown format"
    if text.lstrip().startswith("{"):
        return "a JSON file"
    return "a text file"


def is_sentencepiece(path) -> bool:
    with _open(str(path)) as f:
        proto = f.read()
    try:
        sentencepiece.SentencePieceProcessor(model_proto=proto)
    except (RuntimeError, OSError, TypeError, ValueError):
        return False
    return True
