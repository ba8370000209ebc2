"""Downloads against a local HTTP server on 127.0.0.1: a failed or cut transfer is one error naming
the URL (one line from the CLI), and what a killed download left is removed by the next one."""

import gzip
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
    first time, then answers 404; /gzip-cut sends half of a gzip body it did not announce as cut
    (Content-Encoding: gzip), /bad-length HELLO under a Content-Length that is no number,
    /chunk-cut three chunks of 5000 bytes and no end."""

    protocol_version = "HTTP/1.1"  # chunked transfers
    stalled = threading.Event()  # set once /stall was asked
    release = threading.Event()
    stalled_once = False
    accept_encoding = []  # what each request asked for

    def do_GET(self):
        _Server.accept_encoding.append(self.headers.get("Accept-Encoding"))
        self.close_connection = True
        if self.path == "/ok":
            self._head(200, len(HELLO))
            self.wfile.write(HELLO)
        elif self.path == "/gzip-cut":
            body = gzip.compress(b"z" * 5000)
            self._head(200, len(body), {"Content-Encoding": "gzip"})
            self.wfile.write(body[:len(body) // 2])
        elif self.path == "/bad-length":
            self._head(200, "12abc")
            self.wfile.write(HELLO)
        elif self.path == "/chunk-cut":
            self._head(200, None, {"Transfer-Encoding": "chunked"})
            self.wfile.write((b"%x\r\n" % 5000 + b"c" * 5000 + b"\r\n") * 3)
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

    def _head(self, status, length, headers=None):
        self.send_response(status)
        if length is not None:
            self.send_header("Content-Length", str(length))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
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


def test_a_cut_compressed_body_is_refused_and_the_file_is_asked_for_uncompressed(server, tmp_path):
    url = f"{server}/gzip-cut"
    _Server.accept_encoding.clear()
    with pytest.raises(NetworkError, match=rf"^{url}: the connection was cut after \d+ of the \d+ bytes"):
        fetch_file(url, tmp_path / "x.gz", {}, trust_unverified=True, progress=False)
    assert os.listdir(tmp_path) == []
    assert _Server.accept_encoding == ["identity"]


def test_a_content_length_that_is_no_number_is_an_unknown_length(server, tmp_path):
    digest = fetch_file(f"{server}/bad-length", tmp_path / "x.txt", {}, trust_unverified=True, progress=False)
    assert (tmp_path / "x.txt").read_bytes() == HELLO and digest == hashlib.sha256(HELLO).hexdigest()


def test_a_cut_chunked_transfer_counts_the_bytes_it_received(server, tmp_path):
    url = f"{server}/chunk-cut"
    with pytest.raises(NetworkError, match=rf"^{url}: the transfer broke off after 15000 bytes \(IncompleteRead"):
        fetch_file(url, tmp_path / "x.bin", {}, trust_unverified=True, progress=False)
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
