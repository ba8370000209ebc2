"""AIONER's released models (github ncbi/AIONER) as task presets: its archive downloaded from the hub,
checked, and the model the registry entry names converted once."""

from __future__ import annotations

import os

from biozoo.presets.digests import check_source_files
from biozoo.presets.hub import hf_download, snapshot_commit


def aioner_build(entry, repo, revision, archive):
    """`build(target)`: download AIONER's archive and convert the model the entry names (no
    transformers config: `accept` does not apply)."""

    def build(target):
        from biozoo.convert.aioner import convert_aioner_archive

        what = f"Preset '{entry['name']}'"
        source = hf_download(repo, revision, [archive], what)
        provenance = {"registry_name": entry["name"], "hf_repo": repo, "revision": revision,
                      "commit": snapshot_commit(source), "archive": archive,
                      "model_file": entry["task"]["aioner"]["model_file"],
                      "source_files_verified": check_source_files(source, entry, what)}
        convert_aioner_archive(os.path.join(source, archive), target, entry["task"], entry["name"], provenance)

    return build
