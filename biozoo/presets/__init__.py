"""Handles -> local Keras preset directories: download, verify, convert once, cache.

A handle (`handles`: a registry name, `hf://org/repo[@revision]`, a local HF or Keras preset
directory, `gs://...`) is resolved once (`resolve`) into a `Preset`: its directory in biozoo's
cache (`cache`: atomic, locked, checked), converted from what the hub serves at the pinned revision
(`hub`), checked against recorded sha256s (`digests`); or from a paper's original archive
(`archives`), AIONER's release (`aioner`), a remote directory (`remote`); tokenizer-only presets
need no weights (`tokenizer_presets`).

Example:
    >>> preset = biozoo.presets.resolve("bioformer_8l")
    >>> preset.directory
"""

from biozoo.presets.archives import ARCHIVE_SOURCES, resolve_archive_preset
from biozoo.presets.cache import cache_root, cached, cached_registry_preset, check_cache, loading, offline
from biozoo.presets.digests import check_source_files, hub_lfs_records
from biozoo.presets.handles import hf_repo, names_registry_entry, parse_handle, registry_name_of
from biozoo.presets.hub import TOKENIZER_FILES, hf_source_directory, hub_error, hub_timeout
from biozoo.presets.resolve import Preset, resolve, resolve_preset
from biozoo.presets.tokenizer_presets import backbone_config, resolve_tokenizer_preset

__all__ = [
    "ARCHIVE_SOURCES", "TOKENIZER_FILES", "Preset", "backbone_config", "cache_root", "cached", "cached_registry_preset",
    "hf_repo", "hf_source_directory", "names_registry_entry", "hub_error", "hub_lfs_records", "hub_timeout", "loading", "offline",
    "parse_handle", "registry_name_of", "resolve", "resolve_archive_preset", "resolve_preset",
    "resolve_tokenizer_preset", "check_cache", "check_source_files",
]
