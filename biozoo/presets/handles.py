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
import warnings

from biozoo import registry
from biozoo._io import is_remote, read_json
from biozoo.errors import CheckpointError
from biozoo.preset_files import METRICS_FILE, PROVENANCE_FILE, is_keras_preset

# hf://org/repo[@revision] (a revision may hold "/": refs/pr/2); `hf_repo` also reads the bare org/repo of an HF id
_HF_HANDLE = re.compile(r"^hf://(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)(?:@(?P<revision>\S+))?$")

_warned_shadowing = set()  # local folders already said to hide a registry name


def names_registry_entry(handle):
    """Whether `handle` is a registry name that no local folder of that name hides (an existing
    folder wins, as in transformers' from_pretrained)."""
    handle = os.fspath(handle)
    return registry.is_registered(handle) and not os.path.isdir(handle)


def parse_handle(handle):
    """(form, details) of a handle string; form: "registry", "hf", "keras_dir", "hf_dir" or "remote".
    An existing folder wins over a registry name it equals (said once), as in transformers."""
    if not isinstance(handle, (str, os.PathLike)):
        raise TypeError(f"A preset handle must be a string or path, got {type(handle).__name__}.")
    handle = os.fspath(handle)
    if names_registry_entry(handle):
        return "registry", {"name": handle}
    match = _HF_HANDLE.match(handle)
    if match:
        return "hf", {"repo": match["repo"], "revision": match["revision"] or "main"}
    if handle.startswith("hf://"):
        raise ValueError(f"Bad HF handle '{handle}': expected hf://org/repo or hf://org/repo@revision.")
    if is_remote(handle):
        return "remote", {"url": handle.rstrip("/")}
    if os.path.isdir(handle):
        if registry.is_registered(handle):
            _warn_folder_hides_registry_name(handle)
        if not os.path.exists(os.path.join(handle, "config.json")):
            raise CheckpointError(f"{handle}: no config.json; not a Keras preset or HF model directory.")
        return ("keras_dir" if is_keras_preset(handle) else "hf_dir"), {"path": os.path.abspath(handle)}
    if os.path.isfile(handle):
        raise FileNotFoundError(f"{handle} is a file, not a model: give an HF model folder or a Keras preset folder, "
                                "a registry name (`biozoo list`) or hf://org/repo")
    if os.sep in handle or handle.startswith("."):
        raise FileNotFoundError(f"No such directory: {handle} (a model is a folder biozoo or transformers wrote, e.g. a "
                                "`biozoo finetune` output, a registry name (`biozoo list`) or hf://org/repo)")
    # Looks like a name: say which registry names are close.
    registry.get_entry(handle)
    raise AssertionError("unreachable")


def _warn_folder_hides_registry_name(name):
    """Say once per folder that the local folder `name` is loaded, not the registry checkpoint of
    that name (as transformers' from_pretrained prefers a local folder to a hub id)."""
    path = os.path.abspath(name)
    if path in _warned_shadowing:
        return
    _warned_shadowing.add(path)
    hf = registry.get_entry(name)["sources"]["hf"]
    warnings.warn(f"'{name}' is the local folder {path}, not the registry checkpoint '{name}': to load that one, "
                  f"run from another folder or rename this one (hf://{hf['repo']}@{hf['revision']} converts the "
                  "same hub repository, without the registry's checks)", stacklevel=3)


def hf_repo(text):
    """The HF repository `org/repo` that `text` names (`hf://org/repo[@rev]` or a bare `org/repo`), or None."""
    match = _HF_HANDLE.match(text if text.startswith("hf://") else "hf://" + text)
    return match["repo"] if match else None


def safe_key(text):
    """`text` as one folder name of the cache."""
    return re.sub(r"[^A-Za-z0-9_.@-]+", "--", text).strip("-")


def hf_key(repo, revision):
    """Cache key of hf://repo@revision; a revision `safe_key` changes (refs/pr/2) adds a hash of
    itself, so that two revisions never share a key."""
    key = safe_key(f"hf/{repo}@{revision}")
    if safe_key(revision) != revision:
        key += "-" + hashlib.sha256(revision.encode()).hexdigest()[:12]
    return key


def local_key(path):
    """Cache key of a local HF directory: its path and the size/mtime of its files."""
    digest = hashlib.sha256(os.path.abspath(path).encode())
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if os.path.isfile(full):
            stat = os.stat(full)
            digest.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return f"local/{safe_key(os.path.basename(os.path.abspath(path)))}-{digest.hexdigest()[:16]}"


def remote_key(url):
    """Cache key of a remote folder (`gs://bucket/path`): its scheme and a readable form of its path,
    then a hash of the whole URL, since `safe_key` gives `x/y` and `x--y` the same name."""
    scheme, rest = url.split("://", 1)
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    return f"remote/{safe_key(scheme.lower())}-{safe_key(rest)[:100]}-{digest}"


def registry_name_of(preset):
    """The registry name that `preset` (name, hub id, hf:// handle, local directory) denotes, or None."""
    handle = os.fspath(preset)
    if names_registry_entry(handle):
        return handle
    if os.path.isdir(handle):
        return _local_registry_name(handle)
    repo = hf_repo(handle)
    return registry.find_by_hf_repo(repo) if repo else None


def _local_registry_name(path, depth=0):
    """Registry name a local directory records: a converted preset's `biozoo.json` provenance,
    an HF directory's `_name_or_path`, or the `preset` a `biozoo finetune` output (its
    `metrics.json`) started from, followed through chains of fine-tuning runs."""
    for file_name, keys in ((PROVENANCE_FILE, ("registry_name", "hf_repo", "source")),
                            (METRICS_FILE, ("preset",)),
                            ("config.json", ("_name_or_path",))):
        full = os.path.join(path, file_name)
        if not os.path.isfile(full):
            continue
        try:
            info = read_json(full, file_name)
        except (OSError, ValueError):  # missing, unreadable or not JSON: look at the next file
            continue
        for key in keys:
            value = info.get(key) if isinstance(info, dict) else None
            if not isinstance(value, str) or not value:
                continue
            if registry.is_registered(value):
                return value
            if os.path.isdir(value):
                if depth < 8 and os.path.abspath(value) != os.path.abspath(path):
                    name = _local_registry_name(value, depth + 1)
                    if name:
                        return name
            elif hf_repo(value):
                name = registry_name_of(value)
                if name:
                    return name
    return None
