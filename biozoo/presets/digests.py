"""The sha256s of what a conversion reads: the registry's records, else the Git LFS pointers the hub
publishes at the pinned revision; a file that differs is refused before anything is converted."""

from __future__ import annotations

import os
import warnings

from huggingface_hub import HfApi

from biozoo._io import sha256_file
from biozoo.errors import CheckpointError
from biozoo.presets.cache import offline
from biozoo.presets.hub import snapshot_commit


def check_source_files(directory, entry, what):
    """Check the downloaded files against a recorded sha256 (and size); return {file: sha256} of
    those checked. The registry's record (`sources.hf.integrity`) comes first; a weight file it
    has none for is checked, when online, against the Git LFS pointer the hub publishes for it
    at the pinned revision. A file that differs raises CheckpointError naming it and both
    digests, before anything is converted."""
    hf = entry["sources"]["hf"]
    records = {name: (record, "the registry records") for name, record in hf.get("integrity", {}).items()}
    unrecorded = [name for name in weight_files(entry) if name not in records
                  and os.path.exists(os.path.join(directory, name))]
    revision = snapshot_commit(directory) or hf["revision"]  # the commit downloaded, where a moving one
    if unrecorded and offline():
        warnings.warn(f"{what}: {', '.join(unrecorded)} not verified: the registry records no sha256 and, offline, "
                      "the hub's LFS pointer cannot be read; run once online to check it", stacklevel=2)
    elif unrecorded:
        try:
            published = hub_lfs_records(hf["repo"], revision, unrecorded)
        except Exception as error:  # the hub answered the download but not this: say so, go on
            warnings.warn(f"{what}: {', '.join(unrecorded)} not verified: the registry records no sha256 and the "
                          f"hub's LFS pointer could not be read ({type(error).__name__}: {error})", stacklevel=2)
            published = {}
        for name, record in published.items():
            records[name] = (record, f"the hub's LFS pointer at {revision} records")
    checked = {}
    for name, (record, origin) in sorted(records.items()):
        path = os.path.join(directory, name)
        if os.path.exists(path):  # else a file this conversion does not download (tf_model.h5, ...)
            checked[name] = _check_file(path, name, record, what, origin)
    return checked


def weight_files(entry):
    hf = entry["sources"]["hf"]
    weights = [hf["weights"]] if hf.get("weights") else []
    return weights + [f for f in hf.get("files", []) if f not in weights and f.endswith((".bin", ".safetensors"))]


def _check_file(path, name, record, what, origin):
    where = os.path.realpath(path)
    size = os.path.getsize(path)
    if record.get("size") is not None and size != record["size"]:
        raise CheckpointError(
            f"{what}: {name} is {size} bytes, {origin} {record['size']} (sha256 {record['sha256']}): "
            f"the download is truncated or is not the pinned file. Nothing was converted; delete {where} "
            "(the HF cache's copy) and retry.")
    digest = sha256_file(path)
    if digest != record["sha256"]:
        raise CheckpointError(
            f"{what}: {name} has sha256 {digest}, {origin} {record['sha256']}: the download is corrupt or "
            f"is not the pinned file. Nothing was converted; delete {where} (the HF cache's copy) and retry.")
    return digest


def hub_lfs_records(repo, revision, paths):
    """{path: {"sha256", "size"}} of the Git LFS pointers the hub publishes for `paths` of `repo`
    at `revision` (files kept in plain git have none)."""
    found = HfApi().get_paths_info(repo, list(paths), revision=revision)
    return {item.path: {"sha256": item.lfs.sha256, "size": item.lfs.size}
            for item in found if getattr(item, "lfs", None) is not None}
