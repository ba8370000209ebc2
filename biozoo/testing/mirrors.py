"""Registry entries and offline HF caches that describe the tiny checkpoints, for tests of the
registry's download paths without the network."""

from __future__ import annotations

import json
from pathlib import Path

from biozoo import registry
from biozoo.testing.checkpoints import make_model, populate_hf_cache, save_hf_directory


def send_json(handler, body, status=200):
    """Answer an `http.server` request with `body` as JSON (the fake hubs of the tests)."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def offline_registry_mirror(monkeypatch, directory, name, model=None):
    """An offline HF cache under `directory` holding registry checkpoint `name` as the small
    `model` (default: a random tiny BERT) at the entry's pinned revision, with the entry made to
    describe it; returns the model's HF directory."""
    cache = Path(directory) / "hf-cache"
    cache.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    source = save_hf_directory(model if model is not None else make_model("bert", "BertModel"),
                               Path(directory) / "hf", "bin")
    registry_entry_describes(monkeypatch, name, source)
    hf = registry.get_entry(name)["sources"]["hf"]
    populate_hf_cache(cache, hf["repo"], hf["revision"], source)
    return source


def registry_entry_describes(monkeypatch, name, source_dir):
    """Make registry entry `name` describe the (small, random) model in `source_dir`: its config
    becomes that config.json's and its recorded weight digests are dropped, so a hub mirror of it
    agrees with the registry, as the real checkpoint agrees with the real entry (restored by
    `monkeypatch` after the test)."""
    config = json.loads((Path(source_dir) / "config.json").read_text())
    keep = ("id2label", "label2id", "architectures", "torch_dtype", "transformers_version")
    config = {k: v for k, v in config.items() if k not in keep}
    entry = registry.shared_entry(name)
    monkeypatch.setitem(entry, "config", config)
    # the digests the registry records are the real weights', not this small model's
    monkeypatch.delitem(entry["sources"]["hf"], "integrity", raising=False)
