"""Files fetched over HTTP(S) and kept only once they check: streamed beside their place, compared
with the sha256 / size / git blob hash recorded for them, read by the caller's `validate`, then
renamed into place. Used by `biozoo data download` (data sets, entity-linking dictionaries).

Example:
    >>> fetch_file(url, "data/train.tsv", {"sha256": "58379b...", "size": 1137445})
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile

from biozoo._io import _scratch_prefix, remove_stale_scratch, stream_url
from biozoo._io import sha256_file as _sha256

__all__ = ["DownloadError", "check", "fetch_file"]


class DownloadError(ValueError):
    """A downloaded file is not the one the sources record."""


def _git_blob_sha1(path):
    digest = hashlib.sha1(f"blob {os.path.getsize(path)}\0".encode())
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check(path, spec):
    """None when `path` is the file `spec` records; else what differs. ("unverified", digest)
    when `spec` records no hash."""
    if spec.get("size") is not None and os.path.getsize(path) != spec["size"]:
        return f"{os.path.getsize(path)} bytes, not the {spec['size']} recorded"
    if spec.get("sha256"):
        actual = _sha256(path)
        return None if actual == spec["sha256"] else f"sha256 {actual}, not the {spec['sha256']} recorded"
    if spec.get("git_blob_sha1"):
        actual = _git_blob_sha1(path)
        return None if actual == spec["git_blob_sha1"] else \
            f"git blob hash {actual}, not the {spec['git_blob_sha1']} recorded"
    return ("unverified", _sha256(path))


def fetch_file(url, destination, spec, trust_unverified=False, progress=True, validate=None):
    """Download `url` and move it to `destination` once it checks; return its sha256.

    `spec` records what the file must be (sha256, size, git_blob_sha1); a file it records no
    hash for is refused unless `trust_unverified`. `validate(path)`, when given, reads the
    downloaded file before it is kept and raises (DownloadError or DataFormatError) to refuse
    it: a truncated or corrupt file leaves nothing at `destination`."""
    if not (spec.get("sha256") or spec.get("git_blob_sha1")) and not trust_unverified:
        raise DownloadError(f"{url}: no checksum is recorded for it, so it is not downloaded; pass "
                            "--trust-unverified to accept it (its sha256 is then printed and recorded)")
    directory = os.path.dirname(os.path.abspath(destination))
    created = _missing_folders(directory)
    os.makedirs(directory, exist_ok=True)
    remove_stale_scratch(destination)  # what a killed download of it left
    fd, partial = tempfile.mkstemp(prefix=_scratch_prefix(destination, "partial"), dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            stream_url(url, out, desc=os.path.basename(destination), progress=progress)
        problem = check(partial, spec)
        if isinstance(problem, tuple):
            digest = problem[1]
        elif problem:
            raise DownloadError(f"{url} -> {destination}: refused, the download has {problem}")
        else:
            digest = spec.get("sha256") or _sha256(partial)
        if validate is not None:
            validate(partial)
        os.chmod(partial, 0o644)
        os.replace(partial, destination)
        return digest
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
        if not os.path.exists(destination):
            for folder in created:  # a failed download leaves no empty folder behind
                with contextlib.suppress(OSError):
                    os.rmdir(folder)


def _missing_folders(directory):
    """The folders of `directory`'s path that do not exist yet, deepest first."""
    missing = []
    while directory and not os.path.exists(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    return missing
