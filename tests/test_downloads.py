"""Downloads against a local HTTP server on 127.0.0.1: a failed or cut transfer is one error naming
the URL (one line from the CLI), and what a killed download left is removed by the next one."""

import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from biozoo import registry
from biozoo.cli import main
from biozoo.convert.archives import fetch_archive
from biozoo.downloads import fetch_file
from biozoo.errors import NetworkError
from biozoo.presets import resolve_archive_preset

REPO = Path(__file__).resolve().parents[1]
HELLO = b"hello\n"


class _Server(http.server.BaseHTTPRequestHandler):
    """/ok serves HELLO; /missing answers 404; /short announces 1000 bytes and sends 100; /stall
    sends a little, then holds the connection open until the test ends; /stall-once does so the
    first time, then answers 404."""

    stalled = threading.Event()  # set once /stall was asked
    release = threading.Event()
    stalled_once = False

    def do_GET(self):
        if self.path == "/ok":
            self._head(200, len(HELLO))
            self.wfile.write(HELLO)
        elif self.path == "/short":
            self._head(200, 1000)
            self.wfile.write(b"x" * 100)
        elif self.path == "/stall" or (self.path == "/stall-once" and not _Server.stalled_once):
            _Server.stalled_once = _Server.stalled_once or self.path == "/stall-once"
            self._head(200, 10 ** 8)
            self.wfile.write(b"y" * 1000)
            self.wfile.flush()
            self.stalled.set()
            self.release.wait(60)
        else:
            self._head(404, 0)

    def _head(self, status, length):
        self.send_response(status)
        self.send_header("Content-Length", str(length))
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    _Server.release.set()
    httpd.shutdown()


def _killed_while_stalled(script):
    """Run `script` in a child process; SIGKILL it once the server is holding its download open."""
    _Server.stalled.clear()
    child = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)})
    stalled = _Server.stalled.wait(60)
    time.sleep(0.2)  # the child is now blocked reading the rest
    child.kill()
    _, stderr = child.communicate()
    assert stalled, stderr.decode()[-2000:]


def _everything_under(folder):
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*"))


def test_a_missing_file_is_a_network_error_naming_the_url(server, tmp_path):
    url = f"{server}/missing"
    with pytest.raises(NetworkError, match=rf"^{url}: .*HTTP 404"):
        fetch_file(url, tmp_path / "data" / "x.tsv", {"sha256": "0" * 64}, progress=False)
    assert not (tmp_path / "data").exists()  # nothing left, not even the folder it made
    with pytest.raises(NetworkError, match=rf"^{url}: .*HTTP 404"):
        fetch_archive({"url": url, "sha256": "0" * 64}, tmp_path, "an archive")


def test_a_cut_transfer_names_the_url_and_the_bytes_received_and_expected(server, tmp_path):
    url = f"{server}/short"
    with pytest.raises(NetworkError, match=rf"^{url}: .*\b100 of the 1000 bytes"):
        fetch_file(url, tmp_path / "x.tsv", {"sha256": "0" * 64}, progress=False)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("path, detail", [("missing", "HTTP 404"), ("short", "100 of the 1000 bytes")])
def test_the_cli_tells_a_failed_dictionary_download_in_one_line(server, tmp_path, capsys, path, detail):
    url = f"{server}/{path}"
    table = {"version": 1, "dictionaries": {"toy": {
        "title": "toy", "version": "1", "entity_types": ["Disease"], "format": "tsv", "options": {},
        "licence": {"spdx": "CC0-1.0"}, "files": [{"name": "toy.tsv", "url": url, "sha256": None, "size": None}]}}}
    sources = tmp_path / "dictionaries.json"
    sources.write_text(json.dumps(table))
    status = main(["data", "download", "toy", "--trust-unverified", "--sources", str(sources)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert lines[-1].startswith(f"biozoo data: error: {url}: ") and detail in lines[-1]
    assert not any("Traceback" in line for line in lines)


def test_a_killed_download_leaves_nothing_once_the_next_one_is_done(server, tmp_path):
    destination = tmp_path / "data" / "big.bin"
    _killed_while_stalled("from biozoo.downloads import fetch_file\n"
                          f"fetch_file({server + '/stall'!r}, {str(destination)!r}, {{'sha256': '0' * 64}}, "
                          "progress=False)")
    assert os.listdir(destination.parent) != []  # the killed download's partial file
    fetch_file(f"{server}/ok", destination, {"sha256": hashlib.sha256(HELLO).hexdigest()}, progress=False)
    assert os.listdir(destination.parent) == ["big.bin"]
    assert destination.read_bytes() == HELLO


def test_a_killed_archive_download_is_removed_by_the_next_run(server, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    cache = os.environ["BIOZOO_CACHE"]
    _killed_while_stalled(
        "from biozoo import registry\nfrom biozoo.presets import resolve_archive_preset\n"
        "registry._load_registry()['checkpoints']['biobert_v1_1']['sources']['tf1'] = "
        f"[{{'url': {server + '/stall-once'!r}, 'sha256': '0' * 64}}]\n"
        "resolve_archive_preset('biobert_v1_1', 'tf1')")
    assert [p for p in _everything_under(cache) if not p.endswith(".lock")] != []
    sources = registry._load_registry()["checkpoints"]["biobert_v1_1"]["sources"]
    monkeypatch.setitem(sources, "tf1", [{"url": f"{server}/stall-once", "sha256": "0" * 64}])  # now a 404
    with pytest.raises(NetworkError, match=f"{server}/stall-once"):
        resolve_archive_preset("biobert_v1_1", "tf1")
    assert [p for p in _everything_under(cache) if not p.endswith(".lock")] == ["presets"]
