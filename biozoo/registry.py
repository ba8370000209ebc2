"""The checkpoints registry: registry names -> entries (family, config, sources, licence...).

Task checkpoints (published fine-tunes: NER, classification, QA) are entries too: a normal
entry (so they download and convert like any backbone) plus a `task` section with the task
kind, the HF head class, label names in id order, the base checkpoint, the training data,
the reported scores and the list of fields that were inferred rather than read in a source.

The data lives in `checkpoints_registry.json` (repository root, shipped as package data).
Adding a checkpoint of a known family is one entry there; no code changes.
"""

from __future__ import annotations

import copy
import difflib
import fnmatch
import functools
import json
from importlib import resources

from biozoo.task_kinds import TASK_KINDS, task_kind

REGISTRY_FILE = "checkpoints_registry.json"


class UnknownPresetError(KeyError):
    """Raised for a registry name that does not exist; the message lists the closest names."""

    def __str__(self):  # KeyError would quote the message
        return self.args[0]


@functools.lru_cache(maxsize=1)
def _load_registry():
    text = resources.files("biozoo").joinpath(REGISTRY_FILE).read_text(encoding="utf-8")
    return json.loads(text)


ROLES = ("backbone", "task")  # what an entry is: a pretrained encoder, or a published fine-tune with its head


def list_presets(pattern=None, kind=None):
    """Registry names, sorted; `pattern` is a shell-style wildcard such as `"biom_*"` or `"*bert*"`.

    `kind` keeps only backbone checkpoints (`"backbone"`), only task checkpoints (`"task"`:
    entries with a `task` section, i.e. published fine-tunes with a head), or only task
    checkpoints of one task kind (a name or alias of `biozoo.task_kinds`: `"ner"`, `"re"` or
    `"classification"`, `"qa"`, `"aioner"`...). The default (None) lists every name.

    Example:
        >>> biozoo.list_presets("bioformer_*", kind="backbone")
        ['bioformer_16l', 'bioformer_8l']
    """
    if kind is not None and kind not in ROLES:
        try:
            kind = task_kind(kind).name
        except KeyError:
            raise ValueError(f"Unknown kind '{kind}': expected one of {', '.join(ROLES + tuple(TASK_KINDS))}.") from None
    checkpoints = _load_registry()["checkpoints"]
    names = sorted(checkpoints)
    if pattern:
        names = [n for n in names if fnmatch.fnmatchcase(n, pattern.lower())]
    if kind is not None:
        names = [n for n in names if _kind_matches(checkpoints[n], kind)]
    return names


def _kind_matches(entry, kind):
    task = entry.get("task")
    if kind == "backbone":
        return task is None
    if kind == "task":
        return task is not None
    return task is not None and task["kind"] == kind


def is_task(name):
    """True when `name` is a task checkpoint (its entry has a `task` section)."""
    return is_registered(name) and "task" in _load_registry()["checkpoints"][name]


def is_registered(name):
    return isinstance(name, str) and name in _load_registry()["checkpoints"]


def closest_names(name, n=5):
    names = list_presets()
    close = difflib.get_close_matches(name.lower(), names, n=n, cutoff=0.5)
    # Substring matches help for partial names ("megatron" -> biomegatron_*).
    close += [x for x in names if name.lower() in x and x not in close]
    return close[:n]


def shared_entry(name):
    """The registry's own entry for `name`, not a copy (`get_entry` gives copies): what a test
    patches (with pytest's monkeypatch, which restores it) to change what every later lookup sees."""
    get_entry(name)  # an unknown name: UnknownPresetError
    return _load_registry()["checkpoints"][name]


def get_entry(name):
    """The registry entry for `name` (a deep copy), with `name` added.

    Raises UnknownPresetError listing the closest names.
    """
    checkpoints = _load_registry()["checkpoints"]
    if name not in checkpoints:
        close = closest_names(name)
        hint = f" Closest names: {', '.join(close)}." if close else ""
        raise UnknownPresetError(
            f"Unknown preset '{name}'.{hint} `biozoo list` shows all {len(checkpoints)} names."
        )
    entry = copy.deepcopy(checkpoints[name])
    entry["name"] = name
    return entry


def find_by_hf_repo(repo):
    """The registry name whose HF source (or alias) is `repo`, or None; hub ids ignore case."""
    for name, entry in _load_registry()["checkpoints"].items():
        hf = entry["sources"]["hf"]
        if repo.lower() in (known.lower() for known in [hf["repo"], *hf.get("aliases", [])]):
            return name
    return None
