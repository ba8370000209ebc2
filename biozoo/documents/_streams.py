"""Opening inputs and outputs: local files, folders, `.gz` (found by its magic bytes), `gs://`
paths (through TensorFlow's `tf.io.gfile`, imported only when one is given) and "-" for stdin
and stdout. Inputs are read as bytes; the first bytes are kept for format detection without
seeking, so stdin and gzip streams work."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import sys

from biozoo._io import atomic_binary_file

HEAD_BYTES = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"


def display_name(path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


def _gfile():
    import tensorflow as tf  # lazily: only gs:// paths need it

    return tf.io.gfile


def _is_remote(path) -> bool:
    return str(path).startswith("gs://")


def iter_input_files(inputs):
    """Every input file: a path, "-" (stdin), a `gs://` path or glob, or a folder (its regular files,
    recursively, sorted, hidden ones skipped). `inputs` is one of those or a list of them."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    for item in inputs:
        item = os.fspath(item)
        if item == "-":
            yield "-"
        elif _is_remote(item) and any(c in item for c in "*?["):  # a glob: gs://bucket/pubmed25n*.xml.gz
            matches = sorted(_gfile().glob(item))
            if not matches:
                raise FileNotFoundError(f"input not found: no file matches {item}")
            for match in matches:
                yield from _remote_files(match)
        elif _is_remote(item):
            yield from _remote_files(item)
        elif os.path.isdir(item):
            yield from _local_folder_files(item)
        elif os.path.isfile(item):
            yield item
        else:
            raise FileNotFoundError(f"input not found: {item}")


def _local_folder_files(folder):
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(f for f in files if not f.startswith(".")):
            path = os.path.join(root, name)
            if os.path.isfile(path):
                yield path


def _remote_files(path):
    gfile = _gfile()
    if not gfile.isdir(path):
        if not gfile.exists(path):
            raise FileNotFoundError(f"input not found: {path}")
        yield path
        return
    for root, dirs, files in gfile.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.rstrip("/").startswith("."))
        for name in sorted(f for f in files if not f.startswith(".")):
            yield root.rstrip("/") + "/" + name


class _Replay(io.RawIOBase):
    """`head` then the rest of `stream`: lets the first bytes be looked at without seeking."""

    def __init__(self, head: bytes, stream):
        self._head, self._stream = memoryview(head), stream

    def readable(self):
        return True

    def readinto(self, buffer):
        if len(self._head):
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._stream.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def _read_head(stream, size):
    chunks, total = [], 0
    while total < size:
        chunk = stream.read(size - total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _with_head(stream, size=HEAD_BYTES):
    head = _read_head(stream, size)
    return head, io.BufferedReader(_Replay(head, stream), buffer_size=size)


@contextlib.contextmanager
def open_input(path):
    """Yield `(binary stream, first bytes)` of an input, decompressed when it is gzip."""
    path = os.fspath(path)
    if path == "-":
        raw, close = sys.stdin.buffer, False
    elif _is_remote(path):
        raw, close = _gfile().GFile(path, "rb"), True
    else:
        raw, close = open(path, "rb"), True
    try:
        head, stream = _with_head(raw)
        if head.startswith(GZIP_MAGIC):
            head, stream = _with_head(gzip.GzipFile(fileobj=stream, mode="rb"))
        yield stream, head
    finally:
        if close:
            raw.close()


@contextlib.contextmanager
def open_output(output):
    """Yield a binary stream for `output` (a path, a `gs://` path, or "-"/None for stdout).
    A local path is written to a temporary file beside it and renamed into place only when
    the writing succeeded; a path ending in `.gz` is gzip-compressed."""
    if output is None or os.fspath(output) == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    output = os.fspath(output)
    if _is_remote(output):
        with _gfile().GFile(output, "wb") as raw:
            yield from _maybe_gzip(raw, output)
        return
    with atomic_binary_file(output) as raw:
        yield from _maybe_gzip(raw, output)


def _maybe_gzip(raw, name):
    if not name.endswith(".gz"):
        yield raw
        return
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as compressed:
        yield compressed
