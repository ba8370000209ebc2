"""Weight files the registry records no sha256 for are checked against the Git LFS pointer the
hub publishes at the pinned revision; `tools/record_weight_digests.py` writes those pointers
into the registry. A local HTTP server on 127.0.0.1 answers the hub's paths-info API as the
hub does (huggingface_hub's own client talks to it)."""

import hashlib
import http.server
import importlib.util
import json
import threading
from pathlib import Path
from urllib.parse import parse_qs, unquote

import pytest

from biozoo import presets, registry
from biozoo.errors import CheckpointError
from biozoo.testing.mirrors import send_json

ROOT = Path(__file__).resolve().parent.parent
NAME = "biobert_v1_1"


class _PathsInfo(http.server.BaseHTTPRequestHandler):
    published = {}  # (repo, revision) -> {path: (sha256, size)}
    requests = []

    def do_POST(self):  # /api/models/{org}/{repo}/paths-info/{revision}
        parts = unquote(self.path).split("/")
        if len(parts) != 7 or parts[1:3] != ["api", "models"] or parts[5] != "paths-info":
            self.send_error(404)
            return
        repo, revision = f"{parts[3]}/{parts[4]}", parts[6]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        asked = json.loads(body)["paths"] if body.startswith("{") else parse_qs(body).get("paths", [])
        type(self).requests.append((repo, revision, asked))
        files = self.published.get((repo, revision))
        if files is None:
            self.send_error(500)
            return
        answer = [{"type": "file", "path": p, "size": 134, "oid": "0" * 40,
                   "lfs": {"oid": files[p][0], "size": files[p][1], "pointerSize": 134}} for p in asked if p in files]
        send_json(self, answer)

    def log_message(self, *args):
        pass


@pytest.fixture
def hub(monkeypatch):
    import huggingface_hub.constants

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PathsInfo)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{httpd.server_address[1]}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("BIOZOO_OFFLINE", raising=False)
    _PathsInfo.published, _PathsInfo.requests = {}, []
    yield _PathsInfo
    httpd.shutdown()


@pytest.fixture
def downloaded(tmp_path):
    """A downloaded biobert_v1_1 folder (as the HF cache's snapshot would hold) and the good bytes."""
    data = bytes(range(256)) * 400
    (tmp_path / "pytorch_model.bin").write_bytes(data)
    return tmp_path, data


def _publish(hub, data):
    hf = registry.get_entry(NAME)["sources"]["hf"]
    assert "integrity" not in hf  # tests/conftest.py drops the real records
    hub.published[(hf["repo"], hf["revision"])] = {"pytorch_model.bin": (hashlib.sha256(data).hexdigest(), len(data))}
    return hf


def test_the_hubs_pointer_checks_an_unrecorded_file(hub, downloaded):
    folder, data = downloaded
    hf = _publish(hub, data)
    entry = registry.get_entry(NAME)
    assert presets.check_source_files(folder, entry, "Preset") == {"pytorch_model.bin": hashlib.sha256(data).hexdigest()}
    assert hub.requests == [(hf["repo"], hf["revision"], ["pytorch_model.bin"])]

    (folder / "pytorch_model.bin").write_bytes(data[:100] + b"\x00" + data[101:])
    with pytest.raises(CheckpointError, match=rf"pytorch_model.bin has sha256 [0-9a-f]{{64}}, the hub's LFS pointer "
                                              rf"at {hf['revision']} records {hashlib.sha256(data).hexdigest()}"):
        presets.check_source_files(folder, entry, "Preset")
    (folder / "pytorch_model.bin").write_bytes(data[:-10])
    with pytest.raises(CheckpointError, match=rf"is {len(data) - 10} bytes, the hub's LFS pointer at \w+ records {len(data)}"):
        presets.check_source_files(folder, entry, "Preset")


def test_an_unreadable_pointer_is_said_not_silently_passed(hub, downloaded):
    folder, _ = downloaded  # the server knows no such repo: HTTP 500
    with pytest.warns(UserWarning, match="pytorch_model.bin not verified: the registry records no sha256"):
        assert presets.check_source_files(folder, registry.get_entry(NAME), "Preset") == {}


def test_offline_the_hub_is_not_asked_and_the_file_is_said_unverified(hub, downloaded, monkeypatch):
    folder, data = downloaded
    _publish(hub, data)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.warns(UserWarning, match=r"Preset: pytorch_model.bin not verified: the registry records no sha256 "
                                         r"and, offline, the hub's LFS pointer cannot be read"):
        assert presets.check_source_files(folder, registry.get_entry(NAME), "Preset") == {}
    assert hub.requests == []


def test_info_says_how_an_unrecorded_download_is_checked(capsys):
    from biozoo.cli import main

    assert main(["info", NAME]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("integrity"))
    assert "checked against the hub's Git LFS pointer" in line and "not checked" not in line


def _tool():
    spec = importlib.util.spec_from_file_location("record_weight_digests", ROOT / "tools" / "record_weight_digests.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tool_records_the_hubs_pointers(hub, downloaded, tmp_path):
    folder, data = downloaded
    hf = _publish(hub, data)
    path = tmp_path / "registry.json"
    original = json.loads((ROOT / "checkpoints_registry.json").read_text(encoding="utf-8"))
    assert "integrity" not in original["checkpoints"][NAME]["sources"]["hf"]  # one of the 20 with no recorded digest
    path.write_text(json.dumps(original, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    _tool().main([NAME, "--registry", str(path)])
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "biozoo" / "registry_schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), schema)  # the tool writes a valid registry
    written = json.loads(path.read_text(encoding="utf-8"))["checkpoints"][NAME]["sources"]["hf"]["integrity"]
    record = written["pytorch_model.bin"]
    assert (record["sha256"], record["size"]) == (hashlib.sha256(data).hexdigest(), len(data))
    assert record["read_from"] == f"https://huggingface.co/{hf['repo']}/blob/{hf['revision']}/pytorch_model.bin"

    written_record = dict(record, size=None)  # a record read on a blob page, size not shown exactly
    registry_data = json.loads(path.read_text(encoding="utf-8"))
    registry_data["checkpoints"][NAME]["sources"]["hf"]["integrity"]["pytorch_model.bin"] = written_record
    assert _tool().record_digests(registry_data, {NAME}) == [(NAME, "pytorch_model.bin", "kept")]
    assert written_record["size"] == len(data)

    hub.published[(hf["repo"], hf["revision"])]["pytorch_model.bin"] = ("f" * 64, len(data))
    with pytest.raises(SystemExit, match=f"has sha256 {'f' * 64} on the hub .* the registry records {record['sha256']}"):
        _tool().main([NAME, "--registry", str(path)])


def test_the_tool_skips_unpinned_entries():
    registry_data = {"checkpoints": {"x": {"sources": {"hf": {"repo": "a/b", "revision": "main",
                                                               "weights": "pytorch_model.bin",
                                                               "files": ["pytorch_model.bin"]}}}}}
    asked = []
    report = _tool().record_digests(registry_data, lookup=lambda *a: asked.append(a) or {})
    assert asked == [] and "not pinned to a full commit" in report[0][2]
