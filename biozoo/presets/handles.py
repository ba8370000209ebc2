"""The handle grammar: what a string that names a model is.

A handle is a registry name (`bioformer_8l`), `hf://org/repo[@revision]`, a local HF model
directory, a local Keras preset directory, or a remote directory (`gs://...`, either kind).

Example:
    >>> parse_handle("hf://dmis-lab/biobert-v1.1@main")
    ('hf', {'repo': 'dmis-lab/biobert-v1.1', 'revision': 'main'})
"""

from __future__ import annotations

import hashlib
import os
import re

from biozoo import registry
from biozoo._io import is_remote
from biozoo.errors import CheckpointError
from biozoo.preset_files import is_keras_preset

# hf://org/repo[@revision]; `hf_repo` also reads the bare org/repo of an HF id
_HF_HANDLE = re.compile(r"^hf://(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)(?:@(?P<revision>[^/\s]+))?$")


def parse_handle(handle):
    """(form, details) of a handle string; form: "registry", "hf", "keras_dir", "hf_dir" or "remote"."""
    if not isinstance(handle, (str, os.PathLike)):
        raise TypeError(f"A preset handle must be a string or path, got {type(handle).__name__}.")
    handle = os.fspath(handle)
    if registry.is_registered(handle):
        return "registry", {"name": handle}
    match = _HF_HANDLE.match(handle)
    if match:
        return "hf", {"repo": match["repo"], "revision": match["revision"] or "main"}
    if handle.startswith("hf://"):
        raise ValueError(f"Bad HF handle '{handle}': expected hf://org/repo or hf://org/repo@revision.")
    if is_remote(handle):
        return "remote", {"url": handle.rstrip("/")}
    if os.path.isdir(handle):
        if not os.path.exists(os.path.join(handle, "config.json")):
            raise CheckpointError(f"{handle}: no config.json; not a Keras preset or HF model directory.")
        return ("keras_dir" if is_keras_preset(handle) else "hf_dir"), {"path": os.path.abspath(handle)}
    if os.path.isfile(handle):
        raise FileNotFoundError(f"{handle} is a file, not a model: give an HF model folder or a Keras preset folder, "
                                "a registry name (`biozoo list`) or hf://org/repo")
    if os.sep in handle or handle.startswith("."):
        raise FileNotFoundError(f"No such directory: {handle}")
    # Looks like a name: say which registry names are close.
    registry.get_entry(handle)
    raise AssertionError("unreachable")


def hf_repo(text):
    """The HF repository `org/repo` that `text` names (`hf://org/repo[@rev]` or a bare `org/repo`), or None."""
    match = _HF_HANDLE.match(text if text.startswith("hf://") else "hf://" + text)
    return match["repo"] if match else None


def safe_key(text):
    """`text` as one folder name of the cache."""
    return re.sub(r"[^A-Za-z0-9_.@-]+", "--", text).strip("-")


def local_key(path):
    """Cache key of a local HF directory: its path and the size/mtime of its files."""
    digest = hashlib.sha256(os.path.abspath(path).encode())
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if os.path.isfile(full):
            stat = os.stat(full)
            digest.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return f"local/{safe_key(os.path.basename(os.path.abspath(path)))}-{digest.hexdigest()[:16]}"
