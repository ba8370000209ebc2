"""Writing and reading biozoo's Keras preset directories.

A preset is a KerasHub preset (config.json, model.weights.h5, tokenizer.json + assets,
metadata.json) plus, when the source checkpoint had them, its converted heads
(`heads.safetensors` with `heads.json`) and `biozoo.json` (where it came from).
"""

from __future__ import annotations

import os

import numpy as np
from safetensors.numpy import load_file, save_file

from biozoo._io import atomic_directory, atomic_write_json, file_mode, read_json, sha256_file
from biozoo.errors import CheckpointError

HEADS_FILE = "heads.safetensors"
HEADS_CONFIG_FILE = "heads.json"
PROVENANCE_FILE = "biozoo.json"
METRICS_FILE = "metrics.json"  # a training run's scores beside its preset (`biozoo finetune / pretrain / distill`)
PARITY_CERTIFICATE_FILE = "parity_certificate.json"  # written by `biozoo verify`
OLD_PARITY_CERTIFICATE_FILE = "certificate.json"  # its earlier name: presets written before still show theirs
# A task preset's kind and the options of the task adapter that wrote it: {"kind": "ner", "options": {...}}.
# The name predates "task adapter" and is kept so that task presets already written still load.
TASK_KIND_FILE = "recipe.json"


def write_preset(out_dir, backbone, tokenizer, heads=None, heads_config=None, provenance=None, weights_file=None,
                 overwrite=False, task_kind=None):
    """Write a complete preset to `out_dir` atomically (nothing partial is ever visible); an
    earlier biozoo output there is replaced only with `overwrite` (`biozoo._io.check_output`).

    `weights_file`: a `.weights.h5` already written for `backbone` (streamed conversion); it is
    moved into place instead of saving the backbone's variables. `task_kind`: the task kind the
    preset records (a task preset that no transformers class describes, AIONER's)."""
    with atomic_directory(out_dir, overwrite) as tmp:
        if weights_file is None:
            backbone.save_to_preset(tmp)
        else:
            _save_with_weights_file(backbone, tmp, weights_file)
        tokenizer.save_to_preset(tmp)
        if heads:
            save_safetensors({k: np.ascontiguousarray(v) for k, v in heads.items()}, os.path.join(tmp, HEADS_FILE))
            present = sorted({key.split("/")[0] for key in heads})
            config = {name: (heads_config or {}).get(name, {}) for name in present}
            atomic_write_json(os.path.join(tmp, HEADS_CONFIG_FILE), config)
        if task_kind is not None:
            atomic_write_json(os.path.join(tmp, TASK_KIND_FILE), task_kind_record(task_kind))
        write_provenance(tmp, provenance)
    return out_dir


def write_provenance(preset_dir, provenance):
    """Write `provenance` as the preset's biozoo.json, with the sha256, size and modification time
    of each of its files (what the cache compares a cached entry with, `biozoo check-cache`)."""
    record = dict(provenance or {})
    record["files_sha256"] = preset_digests(preset_dir)
    stats = {name: os.stat(os.path.join(preset_dir, name)) for name in record["files_sha256"]}
    record["files_bytes"] = {name: stat.st_size for name, stat in stats.items()}
    # with the sizes, what tells a cached preset's file changed since it was written without reading it
    record["files_mtime_ns"] = {name: stat.st_mtime_ns for name, stat in stats.items()}
    atomic_write_json(os.path.join(preset_dir, PROVENANCE_FILE), record)


def preset_digests(preset_dir):
    """{relative path: sha256} of every file of a preset but its provenance record, which holds
    them (`biozoo check-cache` compares a cached preset with them)."""
    digests = {}
    for root, _, names in os.walk(preset_dir):
        for name in names:
            path = os.path.join(root, name)
            relative = os.path.relpath(path, preset_dir).replace(os.sep, "/")
            if relative != PROVENANCE_FILE:
                digests[relative] = sha256_file(path)
    return dict(sorted(digests.items()))


def _save_with_weights_file(backbone, preset_dir, weights_file):
    """KerasHub's own preset writer (config, metadata), with the weights file supplied."""

    def move_into_place(path, max_shard_size=None, **kwargs):
        if not str(path).endswith(".weights.h5"):
            raise CheckpointError(f"a sharded weights file was requested ({path}); streamed conversion writes one file.")
        os.replace(weights_file, path)

    backbone.save_weights = move_into_place  # an instance attribute: only this save is affected
    try:
        backbone.save_to_preset(preset_dir)
    finally:
        del backbone.save_weights


def save_safetensors(tensors, path, metadata=None):
    """safetensors' `save_file`, the file readable as every other file biozoo writes (it makes
    its files private: a shared cache's users could load a backbone but not its heads)."""
    save_file(tensors, path, metadata=metadata)
    os.chmod(path, file_mode())


class _Heads(dict):
    """A preset's head tensors by name; a missing one is a CheckpointError naming the file."""

    def __init__(self, tensors, path):
        super().__init__(tensors)
        self.path = path

    def __missing__(self, key):
        raise CheckpointError(f"{self.path}: no '{key}' tensor: the {key.split('/')[0]} head is incomplete (a "
                              "checkpoint that holds only part of it, or a damaged file); convert the checkpoint "
                              "again, or load the backbone alone")


def read_heads(preset_dir):
    """`({"mlm/dense/kernel": array, ...}, {"mlm": {...}})`; empty when the preset has none."""
    path = os.path.join(preset_dir, HEADS_FILE)
    if not os.path.exists(path):
        return {}, {}
    return _Heads(load_file(path), path), read_json(os.path.join(preset_dir, HEADS_CONFIG_FILE), "heads config")


def read_provenance(preset_dir):
    path = os.path.join(preset_dir, PROVENANCE_FILE)
    return read_json(path, "provenance") if os.path.exists(path) else {}


def weights_format(names):
    """"safetensors" or "bin": the format of HF weight files `names` (a registry entry's declared
    file, or the files a preset was converted from); None when they are none or mixed."""
    formats = {"safetensors" if name.endswith(".safetensors") else "bin"
               for name in names if name.endswith((".safetensors", ".bin"))}
    return formats.pop() if len(formats) == 1 else None


def task_kind_record(kind, options=None):
    """What TASK_KIND_FILE holds for a task preset of `kind` written with adapter `options`."""
    return {"kind": kind, "options": dict(options or {})}


def read_task_kind(preset_dir):
    """(kind, adapter options) a task preset records, or None where it records none."""
    path = os.path.join(os.fspath(preset_dir), TASK_KIND_FILE)
    if not os.path.exists(path):
        return None
    record = read_json(path, "task kind record")
    return record["kind"], record.get("options", {})


def read_certificate(preset_dir):
    """The parity certificate `biozoo verify` wrote into a preset, or None."""
    for name in (PARITY_CERTIFICATE_FILE, OLD_PARITY_CERTIFICATE_FILE):
        path = os.path.join(preset_dir, name)
        if os.path.exists(path):
            return read_json(path, "parity certificate")
    return None


def is_keras_preset(directory):
    path = os.path.join(directory, "config.json")
    if not os.path.exists(path):
        return False
    return "registered_name" in read_json(path, "config")
