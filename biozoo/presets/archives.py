"""Presets from the original archives a paper released (TF1 checkpoints, GluonNLP parameters):
downloaded, checked against the sha256 the registry records, unpacked safely and converted once."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil

from biozoo import registry
from biozoo._io import atomic_write_json, scratch_directory
from biozoo.convert.archives import extract_archive, fetch_archive
from biozoo.errors import CheckpointError
from biozoo.presets.cache import cached, offline
from biozoo.presets.handles import safe_key

ARCHIVE_SOURCES = ("tf1", "gluonnlp")


def resolve_archive_preset(name, source, trust_unverified=False):
    """The preset converted from registry checkpoint `name`'s original `source` archive (the
    TF1 or GluonNLP release its paper links): downloaded (Google Drive through gdown, which
    handles its confirmation page; other URLs directly), checked against the sha256 the
    registry records for it, unpacked safely and converted once."""
    if source not in ARCHIVE_SOURCES:
        raise ValueError(f"source {source!r}: choose one of hf, {', '.join(ARCHIVE_SOURCES)}")
    entry = registry.get_entry(name)
    archives = [a for a in entry["sources"].get(source, []) if not a["url"].rstrip("/").endswith("/releases")]
    if not archives:
        listed = ", ".join(k for k in ARCHIVE_SOURCES if entry["sources"].get(k)) or "none"
        raise CheckpointError(f"{name}: the registry lists no {source} archive (archives it lists: {listed}).")
    archive = archives[0]

    def build(target):
        what = f"{name}'s {source} archive ({archive['url']})"
        scratch = scratch_directory(target, "partial")  # beside the preset; a killed run's is removed next time
        try:
            path, digest = fetch_archive(archive, scratch, what, offline=offline(), trust_unverified=trust_unverified)
            root = extract_archive(path, os.path.join(scratch, "unpacked"))
            provenance = {"registry_name": name, "source_format": source, "archive_url": archive["url"],
                          "archive_sha256": digest, "archive_verified": bool(archive.get("sha256"))}
            part = archive.get("part", "discriminator")
            part = "discriminator" if part == "model" else part
            if source == "tf1":
                _convert_tf1_archive(root, target, entry, part, provenance)
            else:
                _convert_gluon_archive(root, target, entry, part, provenance)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    return cached(archive_key(name, source, archive), build)


def archive_key(name, source, archive):
    """Cache key of a conversion of `archive` (a registry source entry): another URL, digest or part
    recorded for it later is another conversion."""
    spec = json.dumps({k: archive.get(k) for k in ("url", "sha256", "part")}, sort_keys=True)
    return safe_key(f"{name}@{source}") + "-" + hashlib.sha256(spec.encode()).hexdigest()[:12]


def _found(root, suffix):
    return sorted(os.path.join(d, f) for d, _, files in os.walk(root) for f in files if f.endswith(suffix))


def _convert_tf1_archive(root, target, entry, part, provenance):
    from biozoo.convert.tf1 import convert_tf1
    from biozoo.models import get_family

    indexes = _found(root, ".index")
    if not indexes:
        raise CheckpointError(f"{provenance['archive_url']}: the archive holds no TF1 checkpoint (*.index).")
    step = lambda path: int((re.search(r"-(\d+)\.index$", path) or [0, 0])[1])  # noqa: E731
    prefix = max(indexes, key=step)[: -len(".index")]
    directory = os.path.dirname(prefix)
    family = get_family(entry["family"])
    config = next((os.path.join(directory, f) for f in family.tf1_config_files
                   if os.path.exists(os.path.join(directory, f))), None)
    if config is None and family.tf1_config is None:  # the registry's config has the same keys
        config = os.path.join(root, "registry_config.json")
        atomic_write_json(config, entry["config"])
    vocab = next(iter(_found(directory, "vocab.txt") + _found(directory, ".model")), None)
    convert_tf1(prefix, target, family=entry["family"], config=config, vocab=vocab, part=part,
                num_heads=entry["config"].get("num_attention_heads"), lowercase=entry["tokenizer"]["lowercase"],
                provenance=provenance)


def _convert_gluon_archive(root, target, entry, part, provenance):
    from biozoo.convert.gluon import convert_gluon

    params = _found(root, ".params")
    if not params:
        raise CheckpointError(f"{provenance['archive_url']}: the archive holds no GluonNLP .params file.")
    convert_gluon(os.path.dirname(params[0]), target, part=part, lowercase=entry["tokenizer"]["lowercase"], provenance=provenance)
