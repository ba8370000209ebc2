"""Presets in remote directories (`gs://` and the other file systems TensorFlow reads): copied into
the cache, converted there when they are HF checkpoints (read through `biozoo._io.remote_files`)."""

from __future__ import annotations

import os
import shutil

from biozoo._io import atomic_directory, atomic_write_json, remote_files, replace_directory
from biozoo.preset_files import PROVENANCE_FILE, is_keras_preset
from biozoo.presets.cache import cached
from biozoo.presets.handles import remote_key


def resolve_remote(url, convert):
    """The cache folder of the preset at `url`; `convert(source_dir, provenance)(target)` converts an HF
    checkpoint."""
    files = remote_files(url)
    config_url = url + "/config.json"
    if not files.exists(config_url):
        raise FileNotFoundError(f"{config_url} does not exist (or is not readable).")

    def build(target):
        with atomic_directory(target + ".download") as download:
            files.copy_tree(url, download)
        try:
            if is_keras_preset(target + ".download"):
                replace_directory(target + ".download", target)
                if not os.path.exists(os.path.join(target, PROVENANCE_FILE)):
                    atomic_write_json(os.path.join(target, PROVENANCE_FILE), {"format": "keras", "source": url})
            else:
                convert(target + ".download", {"source": url})(target)
        finally:
            shutil.rmtree(target + ".download", ignore_errors=True)

    return cached(remote_key(url), build)
