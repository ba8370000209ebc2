"""Opening inputs and outputs: local files, folders, `.gz` (found by its magic bytes), `gs://`
paths (through TensorFlow's `tf.io.gfile`, `biozoo._io.remote_files`, only when one is given) and "-" for stdin
and stdout. Inputs are read as bytes; the first bytes are kept for format detection without
seeking, so stdin and gzip streams work."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import sys
import uuid
import zlib

from biozoo._io import atomic_binary_file, is_remote, remote_files
from biozoo.errors import DataFormatError

HEAD_BYTES = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"


def display_name(path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


def _gfile(path):
    return remote_files(path).gfile  # TensorFlow's file systems: only remote paths need them


def _is_remote(path) -> bool:
    return is_remote(path)


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
            matches = sorted(_gfile(item).glob(item))
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
    gfile = _gfile(path)
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


class BrokenInput(DataFormatError):
    """An input that cannot be read to its end (damaged or truncated gzip data); what came before
    the damage was read."""


class _Gunzip(io.RawIOBase):
    """The decompressed bytes of a gzip stream (several members allowed). Everything that
    decompresses before damage (a cut file, a bad byte) is returned; the damage then raises
    BrokenInput, on every read after (`gzip.GzipFile` loses what it decompressed in the call
    that met the damage, and the buffered readers above it lose up to a buffer more)."""

    PIECE = 16 * 1024

    def __init__(self, stream, name):
        self._stream, self._name = stream, name
        self._inflater = zlib.decompressobj(wbits=31)
        self._member_done = False
        self._pending = bytearray()
        self._error = None
        self._eof = False
        self.decompressed = 0

    def readable(self):
        return True

    def readinto(self, buffer):
        while not self._pending and not self._eof and self._error is None:
            self._fill()
        if self._pending:
            n = min(len(buffer), len(self._pending))
            buffer[:n] = self._pending[:n]
            del self._pending[:n]
            return n
        if self._error is not None:
            raise self._error
        return 0

    def _damage(self, reason):
        self._error = BrokenInput(f"{self._name}: broken gzip data after {self.decompressed:,} bytes of text "
                                  f"({reason})")

    def _fill(self):
        data = self._stream.read(4 * self.PIECE)
        if not data:
            if self._member_done:
                self._eof = True
            else:
                self._damage("the file ends inside the compressed data: it was cut short")
            return
        while data:
            if self._member_done:
                if not data.strip(b"\0"):  # zero padding after the last member
                    return
                self._inflater, self._member_done = zlib.decompressobj(wbits=31), False
            piece, data = data[:self.PIECE], data[self.PIECE:]
            try:
                self._take(self._inflate(piece))
            except zlib.error as error:
                self._damage(str(error))
                return
            if self._inflater.eof:
                self._member_done = True
                data = self._inflater.unused_data + data

    def _inflate(self, piece):
        saved = self._inflater.copy()
        try:
            return self._inflater.decompress(piece)
        except zlib.error:
            self._inflater = saved  # again, a byte at a time: keep what decompresses before the damage
            for i in range(len(piece)):  # the byte at fault raises
                self._take(self._inflater.decompress(piece[i:i + 1]))
            return b""

    def _take(self, data):
        self._pending += data
        self.decompressed += len(data)


class _Lossless(io.BufferedIOBase):
    """A buffered reader over a raw stream that may fail part-way (`_Gunzip`): every byte read
    before the failure is returned first (a line cut by it is not: it raises), then the failure
    raises. (io.BufferedReader drops the bytes gathered in a call whose raw read raises.)"""

    def __init__(self, raw, head=b"", error=None):
        self._raw, self._buffer, self._error, self._eof = raw, bytearray(head), error, False

    def readable(self):
        return True

    def _fill(self):
        if self._error is not None or self._eof:
            return False
        try:
            chunk = self._raw.read(HEAD_BYTES)
        except BrokenInput as error:
            self._error = error
            return False
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    def _take(self, size):
        out = bytes(self._buffer[:size])
        del self._buffer[:size]
        return out

    def read(self, size=-1):
        if size is None or size < 0:
            while self._fill():
                pass
            if self._error is not None:
                raise self._error
            return self._take(len(self._buffer))
        while len(self._buffer) < size and self._fill():
            pass
        if not self._buffer and self._error is not None:
            raise self._error
        return self._take(size)

    read1 = read

    def readinto(self, buffer):
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def readline(self, size=-1):
        start = 0
        while True:
            found = self._buffer.find(b"\n", start)
            if found >= 0:
                return self._take(found + 1)
            start = len(self._buffer)
            if not self._fill():
                break
        if self._error is not None:
            raise self._error  # the line is cut
        return self._take(len(self._buffer))

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line


def _gunzip(stream, name):
    """(first bytes, stream) of gzip data; damage is raised by the read that meets it."""
    raw = _Gunzip(stream, name)
    chunks, total, error = [], 0, None
    while total < HEAD_BYTES:
        try:
            chunk = raw.read(HEAD_BYTES - total)
        except BrokenInput as damage:
            error = damage
            break
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    head = b"".join(chunks)
    return head, _Lossless(raw, head, error)


@contextlib.contextmanager
def open_input(path):
    """Yield `(binary stream, first bytes)` of an input, decompressed when it is gzip."""
    path = os.fspath(path)
    if path == "-":
        raw, close = sys.stdin.buffer, False
    elif _is_remote(path):
        raw, close = _gfile(path).GFile(path, "rb"), True
    else:
        raw, close = open(path, "rb"), True
    try:
        head, stream = _with_head(raw)
        if head.startswith(GZIP_MAGIC):
            head, stream = _gunzip(stream, display_name(path))
        yield stream, head
    finally:
        if close:
            raw.close()


@contextlib.contextmanager
def open_output(output):
    """Yield a binary stream for `output` (a path, a `gs://` path, or "-"/None for stdout).
    A path, local or remote, is written to a temporary file beside it and renamed into place
    only when the writing succeeded (a remote file closed on an error would be left complete
    to the eye); a path ending in `.gz` is gzip-compressed."""
    if output is None or os.fspath(output) == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    output = os.fspath(output)
    if _is_remote(output):
        gfile = _gfile(output)
        partial = f"{output}.partial-{uuid.uuid4().hex[:12]}"
        try:
            with gfile.GFile(partial, "wb") as raw:
                yield from _maybe_gzip(raw, output)
        except BaseException:
            with contextlib.suppress(Exception):
                gfile.remove(partial)
            raise
        gfile.rename(partial, output, overwrite=True)
        return
    with atomic_binary_file(output) as raw:
        yield from _maybe_gzip(raw, output)


def _maybe_gzip(raw, name):
    if not name.endswith(".gz"):
        yield raw
        return
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as compressed:
        yield compressed
