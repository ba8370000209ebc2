"""Atomic file and directory writes: readers never see a half-written file or preset."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import tempfile


@functools.lru_cache(maxsize=1)
def _umask():
    # read once: os.umask can only be read by setting it, which races with other threads
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_directory(path):
    """Yield a temporary directory beside `path`; on success it replaces `path` in one rename.

    On any error the temporary directory is removed and `path` is left as it was.
    """
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.partial-", dir=parent)
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; the result should not be
    try:
        yield tmp
        replace_directory(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def replace_directory(src, dst):
    """Move directory `src` to `dst`, replacing an existing `dst` (old one removed after)."""
    if not os.path.exists(dst):
        os.rename(src, dst)
        return
    old = tempfile.mkdtemp(prefix=f".{os.path.basename(dst)}.old-", dir=os.path.dirname(dst))
    os.rmdir(old)
    os.rename(dst, old)
    try:
        os.rename(src, dst)
    except BaseException:
        os.rename(old, dst)
        raise
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def atomic_binary_file(path):
    """A binary file object whose contents appear at `path` only when the block ends without
    an error (a temporary file beside it, fsynced, then renamed)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.partial-", dir=directory)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def sha256_file(path):
    """The sha256 hex digest of a file, read in 1 MiB blocks."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def stream_url(url, out, desc=None, progress=True):
    """Copy what `url` serves into the binary file object `out`, 1 MiB at a time, with a progress
    bar (bytes) on stderr. A body shorter than the Content-Length the server announced (a
    connection cut midway) raises `http.client.IncompleteRead`."""
    import http.client
    import sys
    import urllib.request

    from tqdm.auto import tqdm

    with urllib.request.urlopen(url, timeout=60) as response:
        total = int(response.headers.get("Content-Length") or 0) or None
        received = 0
        with tqdm(total=total, unit="B", unit_scale=True, desc=desc or os.path.basename(url), disable=not progress,
                  file=sys.stderr) as bar:
            for block in iter(lambda: response.read(1 << 20), b""):
                out.write(block)
                received += len(block)
                bar.update(len(block))
        if total is not None and received < total and not response.headers.get("Content-Encoding"):
            raise http.client.IncompleteRead(b"", total - received)


def atomic_write_bytes(path, data):
    with atomic_binary_file(path) as f:
        f.write(data)


def atomic_write_text(path, text):
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path, obj):
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def read_json(path, what="file", error_class=None):
    """Parse a JSON file; errors name the file (and line/column for syntax errors).

    `error_class`: what a malformed file raises; `CheckpointError` (checkpoints, presets)
    unless a reader of data or predictions passes `DataFormatError`. A missing file raises
    `FileNotFoundError`."""
    from biozoo.errors import CheckpointError

    error_class = error_class or CheckpointError
    try:
        if "://" in os.fspath(path):  # gs://, s3://...: through TensorFlow's file systems
            import tensorflow as tf

            if not tf.io.gfile.exists(path):
                raise FileNotFoundError(f"{path} does not exist.")
            with tf.io.gfile.GFile(path) as f:
                return json.loads(f.read())
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise
    except json.JSONDecodeError as error:
        raise error_class(f"{path}: invalid JSON in {what} (line {error.lineno}, column {error.colno}: {error.msg}).") from None
    except (OSError, UnicodeDecodeError) as error:
        raise error_class(f"{path}: unreadable {what} ({error}).") from None
