"""Tokenizer-only presets: the tokenizer of a handle without downloading or converting its weights
(the converted preset is used when it is cached). The converter and the families, which import
Keras, are imported when a tokenizer is built, so that resolving a handle stays light."""

from __future__ import annotations

import os

from biozoo import registry
from biozoo._io import atomic_directory, atomic_write_json
from biozoo.preset_files import write_provenance
from biozoo.presets.cache import cache_root, cached, is_complete
from biozoo.presets.handles import hf_key, local_key, parse_handle, safe_key
from biozoo.presets.hub import TOKENIZER_FILES, hf_download, registry_source, snapshot_commit
from biozoo.presets.resolve import moved_on, resolve_preset


def resolve_tokenizer_preset(handle):
    """A preset directory holding at least the tokenizer of `handle`.

    Uses the converted preset when cached; otherwise fetches only the vocabulary files (not
    the weights) and writes a tokenizer-only preset.
    """
    form, info = parse_handle(handle)
    if form == "keras_dir":
        return info["path"]
    if form == "hf_dir":
        return cached(local_key(info["path"]), _tokenizer_only(info["path"], None), section="tokenizers")
    if form == "registry":
        entry = registry.get_entry(info["name"])
        repo, revision, _ = registry_source(entry)
        converted = os.path.join(cache_root(), "presets", safe_key(f"{entry['name']}@{revision}"))
        if is_complete(converted):
            return converted

        def build(target):
            source = hf_download(repo, revision, TOKENIZER_FILES, f"The tokenizer of '{entry['name']}'")
            _tokenizer_only(source, entry["tokenizer"], entry, {"hf_repo": repo, "revision": revision})(target)

        return cached(safe_key(f"{entry['name']}@{revision}"), build, section="tokenizers",
                      outdated=moved_on(repo, revision))
    if form == "hf":
        repo, revision = info["repo"], info["revision"]
        name = registry.find_by_hf_repo(repo)
        casing = registry.get_entry(name)["tokenizer"] if name else None

        def build(target):
            source = hf_download(repo, revision, TOKENIZER_FILES, f"The tokenizer of hf://{repo}@{revision}")
            _tokenizer_only(source, casing, None, {"hf_repo": repo, "revision": revision})(target)

        return cached(hf_key(repo, revision), build, section="tokenizers", outdated=moved_on(repo, revision))
    return resolve_preset(handle)  # a remote handle: the whole preset


def _tokenizer_only(source_dir, casing, entry=None, hub=None):
    """`build(target)`: a tokenizer-only preset of `source_dir`; `hub`: the {"hf_repo", "revision"}
    it was downloaded from (its commit is recorded)."""

    def build(target):
        from biozoo.convert.hf import build_tokenizer, read_hf_config
        from biozoo.models import family_for_model_type

        config = read_hf_config(source_dir, entry and entry["config"], entry and entry["name"])
        family = family_for_model_type(config["model_type"], os.path.join(source_dir, "config.json"))
        tokenizer = build_tokenizer(family, source_dir, config["vocab_size"], casing)
        with atomic_directory(target) as tmp:
            tokenizer.save_to_preset(tmp)
            atomic_write_json(os.path.join(tmp, "config.json"),
                              backbone_config(family, config, os.path.join(source_dir, "config.json")))
            commit = {"commit": snapshot_commit(source_dir)} if hub else {}
            write_provenance(tmp, {"format": "hf", "source": source_dir, "tokenizer_only": True, **(hub or {}),
                                   **commit})

    return build


def backbone_config(family, hf_config, source="config.json"):
    """The serialized Keras config of the family's backbone, without building it (with no
    checkpoint to look at, no pooler tensor is found)."""
    cls = family.backbone_cls
    return {
        "module": cls.__module__,
        "class_name": cls.__name__,
        "config": {"name": f"{family.name}_backbone", "trainable": True, "dtype": None,
                   **family.backbone_arguments(hf_config, source=source)},
        "registered_name": f"biozoo>{cls.__name__}",
    }
