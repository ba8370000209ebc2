"""A handle resolved once: the local preset directory (downloaded, verified and converted once, cached)
and the facts every later step reads of it (registry entry, provenance, task kind).

Example:
    >>> preset = resolve("bioformer_8l_ncbi_disease")
    >>> preset.directory, preset.task_kind, preset.entry["name"]
"""

from __future__ import annotations

import dataclasses
import os
import warnings

from biozoo import registry
from biozoo._io import read_json
from biozoo.preset_files import HEADS_CONFIG_FILE, read_provenance, read_task_kind, weights_format
from biozoo.presets.aioner import aioner_build
from biozoo.presets.cache import cached
from biozoo.presets.digests import check_source_files
from biozoo.presets.handles import hf_key, local_key, parse_handle, safe_key
from biozoo.presets.hub import hf_snapshot, hub_commit, is_commit, registry_snapshot, registry_source, snapshot_commit
from biozoo.presets.remote import resolve_remote
from biozoo.task_kinds import kind_of_hf_class


@dataclasses.dataclass(frozen=True)
class Preset:
    """What a handle resolves to: `directory` (a local Keras preset), the registry `entry` it comes
    from (None outside the registry), its `provenance` (biozoo.json), and, for a task preset, its
    `task_kind` (a name of `biozoo.task_kinds`; None for a backbone) with the `task_options` its
    task adapter was written with.

    Example:
        >>> preset = resolve("bioformer_8l_ncbi_disease")  # downloaded and converted once, then cached
        >>> preset.task_kind, preset.entry["family"], preset.entry["task"]["label_names"]
        ('ner', 'bert', ['B-bio', 'I-bio', 'O'])
        >>> biozoo.from_preset(preset.directory)  # the TokenClassifier
    """

    handle: str
    directory: str
    entry: dict | None = None
    provenance: dict = dataclasses.field(default_factory=dict)
    task_kind: str | None = None
    task_options: dict = dataclasses.field(default_factory=dict)


def resolve(handle, accept=None):
    """The `Preset` of `handle`, converting (once) when needed.

    `accept(hf_config, source)` may refuse an HF checkpoint by raising (e.g. a question-answering
    checkpoint asked for as a token classifier); it runs before a conversion writes anything,
    and on the recorded config of a preset converted earlier.
    """
    form, info = parse_handle(handle)
    entry = _entry(form, info)
    directory = _directory(form, info, entry, accept)
    provenance = read_provenance(directory)
    if accept is not None and provenance.get("hf_config") is not None:
        accept(provenance["hf_config"], os.fspath(handle))
    kind, options = _task_kind(directory, provenance)
    return Preset(os.fspath(handle), directory, entry, provenance, kind, options)


def resolve_preset(handle, accept=None):
    """The local preset directory of `handle` (`resolve(handle, accept).directory`)."""
    return resolve(handle, accept).directory


def _entry(form, info):
    if form == "registry":
        return registry.get_entry(info["name"])
    if form == "hf":
        name = registry.find_by_hf_repo(info["repo"])
        return registry.get_entry(name) if name else None
    return None


def _task_kind(directory, provenance):
    """(task kind, adapter options) of a preset: what it records (written by biozoo), else an AIONER
    head (presets converted before AIONER presets recorded their kind), else the kind of the
    transformers head class it was converted from; (None, {}) for a backbone."""
    recorded = read_task_kind(directory)
    if recorded is not None:
        return recorded
    heads_path = os.path.join(directory, HEADS_CONFIG_FILE)
    heads = read_json(heads_path, "heads config") if os.path.exists(heads_path) else {}
    if "aioner" in heads:
        return "aioner", {}
    hf_class = ((provenance.get("hf_config") or {}).get("architectures") or [""])[0]
    classifier = heads.get("classifier") or {}
    kind = kind_of_hf_class(hf_class, classifier.get("problem_type") == "multi_label_classification")
    if kind is None:
        return None, {}
    types = {name.split("-", 1)[-1] for name in classifier.get("label_names", []) if name != "O"}
    # a one-type tagger (B-bio, I-bio) reads bare B/I gold tags as its own type
    return kind.name, ({"entity_type": types.pop()} if kind.name == "ner" and len(types) == 1 else {})


def _convert(source_dir, casing=None, provenance=None, accept=None, registry_config=None, weights=None):
    from biozoo.convert.hf import convert_hf_directory

    return lambda target: convert_hf_directory(source_dir, target, casing=casing, provenance=provenance,
                                               accept=accept, registry_config=registry_config, weights=weights)


def _converted_from_another_file(declared):
    """Why a cached registry preset is not the conversion of `declared` (earlier biozoo converted
    whichever weights file the HF cache snapshot held, safetensors first), or None."""
    declared_format = weights_format([declared]) if declared else None

    def outdated(directory):
        converted = read_provenance(directory).get("weights") or []
        if declared_format and converted and weights_format(converted) != declared_format:
            return f"was converted from {', '.join(converted)}, not {declared}, the weights file the registry verifies"
        return None

    return outdated


_warned_unchecked = set()  # entries of unpinned revisions already said to be used unchecked


def moved_on(repo, revision):
    """`outdated(directory)` for a cache entry converted from `revision` of `repo` when it is not a
    commit sha (a branch or tag such as main, which moves): the hub is asked once what commit it
    is now, and an entry recording another commit is converted again. Offline, or when the hub
    does not answer, the entry is used, with a warning naming the commit it was converted from.
    None for a pinned (40-hex) revision: no request is made."""
    if is_commit(revision):
        return None
    answer = []

    def outdated(directory):
        recorded = read_provenance(directory).get("commit")
        if not answer:
            answer.append(hub_commit(repo, revision))
        current, why = answer[0]
        if current is None:
            if (directory, recorded) not in _warned_unchecked:
                _warned_unchecked.add((directory, recorded))
                warnings.warn(f"the cached preset {directory} was converted from commit {recorded or '(not recorded)'} "
                              f"of hf://{repo}@{revision}; {why}, so whether {revision} has moved on since is not "
                              "known: that conversion is used", stacklevel=5)
            return None
        if current != recorded:
            return (f"was converted from commit {recorded or '(not recorded)'} of hf://{repo}@{revision}, which is "
                    f"now commit {current}")
        return None

    return outdated


def _either(*checks):
    """`outdated(directory)`: the first reason one of `checks` (None ones skipped) gives."""
    checks = [check for check in checks if check is not None]
    return lambda directory: next((why for why in (check(directory) for check in checks) if why), None)


def _directory(form, info, entry, accept):
    if form == "keras_dir":
        return info["path"]
    if form == "registry":
        repo, revision, weights = registry_source(entry)
        if "aioner" in entry.get("task", {}):
            return cached(safe_key(f"{entry['name']}@{revision}"), aioner_build(entry, repo, revision, weights),
                          outdated=moved_on(repo, revision))

        def build(target):
            source = registry_snapshot(entry)
            provenance = {"registry_name": entry["name"], "hf_repo": repo, "revision": revision,
                          "commit": snapshot_commit(source),
                          "source_files_verified": check_source_files(source, entry, f"Preset '{entry['name']}'")}
            _convert(source, entry["tokenizer"], provenance, accept, entry["config"], weights)(target)

        return cached(safe_key(f"{entry['name']}@{revision}"), build,
                      outdated=_either(_converted_from_another_file(weights), moved_on(repo, revision)))
    if form == "hf":
        repo, revision = info["repo"], info["revision"]
        casing = entry["tokenizer"] if entry else None

        def build(target):
            source = hf_snapshot(repo, revision)
            _convert(source, casing, {"hf_repo": repo, "revision": revision, "commit": snapshot_commit(source)},
                     accept)(target)

        return cached(hf_key(repo, revision), build, outdated=moved_on(repo, revision))
    if form == "hf_dir":
        return cached(local_key(info["path"]), _convert(info["path"], None, {}, accept))
    if form == "remote":
        return resolve_remote(info["url"], lambda source, provenance: _convert(source, None, provenance, accept))
    raise AssertionError(form)
