"""The checkpoints registry: registry names -> entries (family, config, sources, licence...).

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

REGISTRY_FILE = "checkpoints_registry.json"


class UnknownPresetError(KeyError):
    """Raised for a registry name that does not exist; the message lists the closest names."""

    def __str__(self):  # KeyError would quote the message
        return self.args[0]


@functools.lru_cache(maxsize=1)
def _load_registry():
    text = resources.files("biozoo").joinpath(REGISTRY_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def list_presets(pattern=None):
    """Registry names, sorted; `pattern` is a shell-style wildcard such as `"biom_*"` or `"*bert*"`.

    Example:
        >>> biozoo.list_presets("bioformer_*")
        ['bioformer_16l', 'bioformer_8l']
    """
    names = sorted(_load_registry()["checkpoints"])
    if pattern:
        names = [n for n in names if fnmatch.fnmatchcase(n, pattern.lower())]
    return names


def is_registered(name):
    return isinstance(name, str) and name in _load_registry()["checkpoints"]


def closest_names(name, n=5):
    names = list_presets()
    close = difflib.get_close_matches(name.lower(), names, n=n, cutoff=0.5)
    # Substring matches help for partial names ("megatron" -> biomegatron_*).
    close += [x for x in names if name.lower() in x and x not in close]
    return close[:n]


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
    """The registry name whose HF source (or alias) is `repo`, or None."""
    for name, entry in _load_registry()["checkpoints"].items():
        hf = entry["sources"]["hf"]
        if repo == hf["repo"] or repo in hf.get("aliases", []):
            return name
    return None
