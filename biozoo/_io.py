"""Atomic file and directory writes (readers never see a half-written file or preset), and which paths
are remote."""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import http.client
import json
import math
import os
import re
import shutil
import socket
import sys
import tempfile
import urllib.error
import urllib.request

from tqdm.auto import tqdm

from biozoo.errors import BiozooError, CheckpointError, NetworkError, OutputError

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def is_remote(path):
    """True for a remote path (gs://, s3://, ...): any URL but a local file:// and a model handle's
    hf://. Remote files are read through `remote_files()`."""
    match = _URL.match(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else None
    return bool(match) and match[1].lower() not in ("hf", "file")


def remote_files(path):
    """The module that reads remote files (`biozoo.tf_gfile`, TensorFlow's file systems), or one clear
    error naming `path` where TensorFlow cannot be imported."""
    try:
        from biozoo import tf_gfile
    except ImportError:
        raise BiozooError(f"{path}: remote paths are read through TensorFlow's file systems (tf.io.gfile), and "
                          "TensorFlow cannot be imported here: copy the files to a local folder, or install "
                          "tensorflow") from None
    return tf_gfile


@functools.lru_cache(maxsize=1)
def file_mode():
    """The mode biozoo's files get: readable as the umask allows (not private, as mkstemp makes them)."""
    return 0o666 & ~_umask()


def _umask():
    # read once: os.umask can only be read by setting it, which races with other threads
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


OUTPUT_MARKER = ".biozoo-output"  # inside every folder biozoo writes: only such a folder is ever replaced
SCRATCH_KINDS = ("partial", "old", "streamed", "outdated")


def _scratch_prefix(path, kind):
    """`.NAME.KIND-HOST-PID-`: what a write to `path` names its temporary file or folder beside it,
    so that a later write can tell one left by a killed process (`remove_stale_scratch`)."""
    return f".{os.path.basename(path)}.{kind}-{_host_tag()}-{os.getpid()}-"


@functools.lru_cache(maxsize=1)
def _host_tag():
    return re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:16] or "host"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def dead_scratch(path, kinds=SCRATCH_KINDS):
    """The temporary files and folders beside `path` (of `kinds`) that a write to it left when its
    process was killed (kill -9, power loss): those of this host whose process is gone."""
    path = os.path.abspath(os.fspath(path))
    parent, base = os.path.dirname(path), os.path.basename(path)
    pattern = re.compile(rf"\.{re.escape(base)}\.(?:{'|'.join(kinds)})-(?P<host>[A-Za-z0-9]+)-(?P<pid>\d+)-")
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return []
    found, ours = [], f".{base}."
    for name in names:
        match = pattern.match(name) if name.startswith(ours) else None
        if match and match["host"] == _host_tag() and not _alive(int(match["pid"])):
            found.append(os.path.join(parent, name))
    return found


def remove_stale_scratch(path):
    """Remove the temporary files and folders beside `path` that a write to it left when its
    process was killed (`dead_scratch`). Returns their names."""
    removed = []
    for stale in dead_scratch(path):
        if os.path.isdir(stale) and not os.path.islink(stale):
            shutil.rmtree(stale, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(stale)
        removed.append(os.path.basename(stale))
    return removed


def scratch_name(path, kind):
    """A new, unused name beside `path` in the scratch scheme (`.NAME.KIND-HOST-PID-...`), for
    something moved aside, so that one a killed process left is found (`dead_scratch`)."""
    path = os.path.abspath(os.fspath(path))
    name = tempfile.mkdtemp(prefix=_scratch_prefix(path, kind), dir=os.path.dirname(path))
    os.rmdir(name)
    return name


def scratch_directory(path, kind):
    """A new temporary folder beside `path` (stale ones of killed writes removed first)."""
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    remove_stale_scratch(path)
    tmp = tempfile.mkdtemp(prefix=_scratch_prefix(path, kind), dir=parent)
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; the result should not be
    return tmp


def _is_within(inner, outer):
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)


def check_output(path, overwrite=False, inputs=(), what="output folder"):
    """Refuse to write the folder `path` where that would destroy what biozoo did not write.

    Refused: an existing file (a folder would replace it); a symbolic link; the working folder
    or a folder holding it; a folder that is, or holds, one of `inputs` (local paths); an
    existing non-empty folder without biozoo's marker (`OUTPUT_MARKER`), whatever `overwrite`
    says; a folder biozoo wrote, unless `overwrite`; gs:// and the like (a folder is written
    locally and renamed into place). An empty folder is fine."""
    if is_remote(path):
        scheme = str(path).split("://", 1)[0]
        copy = f"gcloud storage cp -r FOLDER {path}" if scheme == "gs" else f"copy it to {path} yourself"
        raise OutputError(f"{what} {path}: biozoo writes this folder on a local disk (whole, in one rename), not "
                          f"to {scheme}://; write it to a local folder, then {copy}")
    real = os.path.realpath(os.fspath(path))
    for item in inputs:
        if item is None or is_remote(item) or not os.path.exists(item):
            continue
        if _is_within(os.path.realpath(os.fspath(item)), real):
            same = os.path.realpath(os.fspath(item)) == real
            raise OutputError(f"{what} {path} {'is' if same else 'holds'} the input {item}: writing it would destroy "
                              "the input; choose another output")
    try:
        working = os.path.realpath(os.getcwd())
    except OSError:  # the working folder was removed
        working = None
    if working is not None and _is_within(working, real):
        raise OutputError(f"{what} {path} is (or holds) the working folder; choose a new folder for the output")
    if not os.path.lexists(path):
        return
    if os.path.islink(path):
        raise OutputError(f"{what} {path} is a symbolic link; give the folder itself or a new path")
    if not os.path.isdir(path):
        raise OutputError(f"{what} {path} is a file, not a folder; biozoo writes a folder there: choose another path")
    entries = sorted(os.listdir(path))
    if not entries:
        return
    if OUTPUT_MARKER in entries:
        if overwrite:
            return
        raise OutputError(f"{what} {path} holds an earlier biozoo output; pass --overwrite (overwrite=True) to "
                          "replace it, or choose another folder")
    shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
    raise OutputError(f"{what} {path} exists and was not written by biozoo (it holds {shown}); biozoo replaces "
                      f"only folders it wrote (with {OUTPUT_MARKER} inside), even with --overwrite: choose a new "
                      "folder, or empty this one yourself")


def write_marker(directory):
    """Mark `directory` as written by biozoo (see `check_output`)."""
    with open(os.path.join(directory, OUTPUT_MARKER), "w", encoding="utf-8") as f:
        f.write(json.dumps({"written_by": "biozoo"}) + "\n")


@contextlib.contextmanager
def atomic_directory(path, overwrite=False, inputs=()):
    """Yield a temporary directory beside `path`; on success it replaces `path` in one rename,
    marked as biozoo's (`OUTPUT_MARKER`).

    What `path` may be is `check_output`'s rule (checked before and again just before the
    rename): a folder biozoo wrote is replaced only with `overwrite`, any other existing
    non-empty folder or file never. On any error the temporary directory is removed and `path`
    is left as it was."""
    path = os.path.abspath(os.fspath(path))
    check_output(path, overwrite, inputs)
    tmp = scratch_directory(path, "partial")
    try:
        yield tmp
        write_marker(tmp)
        check_output(path, overwrite, inputs)
        replace_directory(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def replace_directory(src, dst):
    """Move directory `src` to `dst`, replacing an existing `dst` (old one removed after)."""
    if not os.path.exists(dst):
        os.rename(src, dst)
        return
    old = scratch_name(dst, "old")
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
    an error (a temporary file beside it, fsynced, then renamed; those a killed write left are
    removed first)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    remove_stale_scratch(path)
    fd, tmp = tempfile.mkstemp(prefix=_scratch_prefix(os.path.abspath(path), "partial"), dir=directory)
    try:
        os.chmod(tmp, file_mode())
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
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


DOWNLOAD_TIMEOUT = 60  # seconds a download waits for the server to answer


def stream_url(url, out, desc=None, progress=True):
    """Copy what `url` serves into the binary file object `out`, 1 MiB at a time, with a progress
    bar (bytes) on stderr. A failed request, a transfer cut midway or a body shorter than the
    Content-Length the server announced raises `NetworkError` naming `url`.

    The file is asked for as it is (`Accept-Encoding: identity`); a server that compresses it
    anyway is not undone (urllib does not decompress), and its Content-Length, which counts the
    bytes sent, is still checked. A Content-Length that is not a number is an unknown length, as
    for http.client."""
    request = urllib.request.Request(url, headers={"Accept-Encoding": "identity"})
    try:
        response = urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT)
    except (OSError, http.client.HTTPException) as error:  # URLError and HTTPError are OSErrors
        raise NetworkError(_request_failure(url, error)) from None
    with response:
        announced = (response.headers.get("Content-Length") or "").strip()
        total = int(announced) if announced.isascii() and announced.isdigit() and int(announced) else None
        received = 0
        with tqdm(total=total, unit="B", unit_scale=True, desc=desc or os.path.basename(url), disable=not progress,
                  file=sys.stderr) as bar:
            while True:
                try:
                    block = response.read(1 << 20)
                except (OSError, http.client.HTTPException) as error:
                    received += len(getattr(error, "partial", b""))  # a cut chunked body: what it had read
                    expected = f" of the {total} announced" if total is not None else ""
                    raise NetworkError(f"{url}: the transfer broke off after {received} bytes{expected} "
                                       f"({type(error).__name__}: {error}); try again") from None
                if not block:
                    break
                out.write(block)
                received += len(block)
                bar.update(len(block))
        if total is not None and received < total:
            raise NetworkError(f"{url}: the connection was cut after {received} of the {total} bytes the server "
                               "announced; try again")


def _request_failure(url, error):
    """One line for a failed request of `url`: the HTTP status, no answer in time, or the host unreachable."""
    if isinstance(error, urllib.error.HTTPError):
        return f"{url}: the server answered HTTP {error.code} ({error.reason}); check the URL, or fetch the file by hand"
    reason = getattr(error, "reason", error)
    if isinstance(reason, TimeoutError):
        return f"{url}: the server did not answer within {DOWNLOAD_TIMEOUT} s; check the network or proxy, or try again"
    return (f"{url}: cannot reach the server ({reason}); check the network, the proxy (HTTPS_PROXY) or the URL, or "
            "fetch the file by hand")


def atomic_write_bytes(path, data):
    with atomic_binary_file(path) as f:
        f.write(data)


def atomic_write_text(path, text):
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path, obj):
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def decode_utf8(data, path, error_class):
    """`data` (bytes) decoded as UTF-8, or `error_class` naming `path` and the line of the first
    byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise error_class(f"{path}:{line}: not UTF-8 (byte 0x{data[error.start]:02X}): save the file as UTF-8") from None


def read_text(path, error_class):
    """The whole of a UTF-8 text file (gzip when named .gz); a byte that is not UTF-8 raises
    `error_class` naming the file and line."""
    with (gzip.open if os.fspath(path).endswith(".gz") else open)(path, "rb") as f:
        return decode_utf8(f.read(), path, error_class)


def read_json(path, what="file", error_class=None, allow_nan=True):
    """Parse a JSON file (gzip when named .gz); errors name the file (and line/column for syntax
    errors, the line of bytes that are not UTF-8).

    `error_class`: what a malformed file raises; `CheckpointError` (checkpoints, presets)
    unless a reader of data or predictions passes `DataFormatError`. A missing file raises
    `FileNotFoundError`. With `allow_nan=False` (the configs of checkpoints biozoo converts),
    NaN, Infinity and floats too large to hold are refused; a results file biozoo wrote may hold
    a NaN score."""
    error_class = error_class or CheckpointError
    try:
        text = remote_files(path).read_text(path) if is_remote(path) else read_text(path, error_class)
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as error:
        raise error_class(f"{path}: unreadable {what} ({error}).") from None
    try:
        return loads_json(text, allow_nan)
    except json.JSONDecodeError as error:
        raise error_class(f"{path}: invalid JSON in {what} (line {error.lineno}, column {error.colno}: {error.msg}).") from None
    except (ValueError, RecursionError) as error:
        raise error_class(f"{path}: invalid JSON in {what} ({json_error_text(error)}).") from None


def loads_json(text, allow_nan=False):
    """`json.loads(text)`; NaN, Infinity and floats that overflow to infinity raise ValueError unless
    `allow_nan`."""
    if allow_nan:
        return json.loads(text)
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def json_error_text(error):
    """A short reason for what `loads_json` raised beyond JSONDecodeError (a number of too many
    digits, nesting too deep for the parser, a refused constant)."""
    if isinstance(error, RecursionError):
        return "nested too deeply"
    return str(error).split(";")[0]


def _refuse_constant(name):
    raise ValueError(f"{name} is not a finite number")


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is not a finite number")
    return value


