"""What the bad-input catalogue and the reliability tests share: tiny random-weight models (an HF
BERT, its converted preset, a fine-tuned NER model), small data folders and document files, a
project folder of the user's that must survive every command, and a local stand-in for the
HuggingFace hub on 127.0.0.1 (each repository answers one way: 404, gated, 403, 500, slow)."""

import http.server
import json
import socket
import threading
import time
import types

import pytest
from reliability_kit import pubtator_document, write_ner_data

from biozoo import testing as H


@pytest.fixture(scope="session")
def kit(tmp_path_factory):
    """The shared tiny models, data and documents (built once; read-only for the tests)."""
    from biozoo.convert.hf import convert_hf_directory
    from biozoo.train.finetune import Hyperparameters, run_finetune

    root = tmp_path_factory.mktemp("kit")
    k = types.SimpleNamespace(root=root)
    with pytest.MonkeyPatch.context() as patch:  # before the per-test cache fixture: a cache of its own
        patch.setenv("BIOZOO_CACHE", str(root / "cache"))
        k.tiny_hf = H.save_hf_directory(H.make_model("bert", "BertModel"), root / "tiny_hf")
        ner = H.make_model("bert", "BertForTokenClassification", num_labels=3,
                           id2label={0: "O", 1: "B-Disease", 2: "I-Disease"},
                           label2id={"O": 0, "B-Disease": 1, "I-Disease": 2})
        k.ner_hf = H.save_hf_directory(ner, root / "ner_hf")
        k.preset = root / "preset"
        convert_hf_directory(k.tiny_hf, k.preset, progress=False)
        k.ner_data = write_ner_data(root / "NCBI-disease")
        k.ner_model = root / "ner_model"
        run_finetune("ner", str(k.preset), str(k.ner_data), str(k.ner_model),
                     Hyperparameters(epochs=1, batch_size=8, learning_rate=1e-3, max_seq_length=16), verbose=0,
                     log=lambda message: None)
    k.re_data = root / "re"
    k.re_data.mkdir()
    for split in ("train", "dev", "test"):
        (k.re_data / f"{split}.tsv").write_text(
            "sentence\tlabel\n" + "".join(f"@GENE$ binds @CHEMICAL$ {i}\t{'CPR:3' if i % 2 else 'false'}\n"
                                          for i in range(8)), encoding="utf-8")
    k.corpus = root / "corpus.txt"
    k.corpus.write_text("the gene binds the cell .\nthe cancer cell .\n\nthe protein .\n", encoding="utf-8")
    docs = root / "docs"
    docs.mkdir()
    k.pubtator = docs / "good.pubtator"
    k.pubtator.write_text("".join(pubtator_document(1000 + i) for i in range(3)), encoding="utf-8")
    return k


@pytest.fixture
def work(tmp_path, kit):
    """Per test: the user's project folder (thesis.tex, src/), a file of theirs, an earlier biozoo
    output (marked), and the paths the catalogue formats commands with."""
    project = tmp_path / "work_project"
    (project / "src").mkdir(parents=True)
    (project / "thesis.tex").write_text("\\documentclass{article}\n", encoding="utf-8")
    (project / "src" / "main.py").write_text("print('mine')\n", encoding="utf-8")
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n", encoding="utf-8")
    old = tmp_path / "old_output"
    old.mkdir()
    (old / "config.json").write_text("{}\n", encoding="utf-8")
    (old / ".biozoo-output").write_text('{"written_by": "biozoo"}\n', encoding="utf-8")  # biozoo's marker
    (tmp_path / "link").symlink_to(project, target_is_directory=True)
    paths = dict(tmp=tmp_path, project=project, notes=notes, old_output=old, out=tmp_path / "out",
                 link=tmp_path / "link", **{k: v for k, v in vars(kit).items()})
    return types.SimpleNamespace(tmp=tmp_path, paths={k: str(v) for k, v in paths.items()})


# ---------------------------------------------------------------------------- a local hub


class _Hub(http.server.BaseHTTPRequestHandler):
    """Answers the hub's API the way the hub answers for repositories that are missing, gated,
    private, broken or slow (huggingface_hub's own client talks to it)."""

    delay = 30.0  # seconds org/slow keeps the client waiting (far past BIOZOO_HUB_TIMEOUT=1; daemon threads)
    requests = []  # the paths asked, in order (cleared by the `hub` fixture)
    answers = {  # repository -> (status, X-Error-Code)
        "org/missing": (404, "RepoNotFound"),
        "org/gated": (401, "GatedRepo"),
        "org/private": (403, None),
        "org/broken": (500, None),
    }

    def do_GET(self):
        parts = self.path.split("?")[0].strip("/").split("/")
        repo = "/".join(parts[2:4]) if parts[:2] == ["api", "models"] else "/".join(parts[0:2])
        self.requests.append(self.path)
        if repo == "org/slow":
            time.sleep(self.delay)
        if "revision" in parts and parts[-1] == "nope":
            status, code = 404, "RevisionNotFound"
        else:
            status, code = self.answers.get(repo, (404, "RepoNotFound"))
        body = json.dumps({"error": f"{status} for {repo}"}).encode()
        try:
            self.send_response(status)
            if code:
                self.send_header("X-Error-Code", code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client gave up waiting
            pass

    do_HEAD = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def hub_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    unreachable = closed.getsockname()[1]
    closed.close()  # nothing listens there: connection refused
    yield types.SimpleNamespace(url=f"http://127.0.0.1:{server.server_address[1]}",
                                unreachable=f"http://127.0.0.1:{unreachable}")
    server.shutdown()


@pytest.fixture
def hub(hub_server, monkeypatch, tmp_path):
    """`use(url)`: point huggingface_hub at `url` (the local hub or a closed port), with an empty
    HuggingFace cache and no offline mode."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("BIOZOO_OFFLINE", raising=False)
    monkeypatch.setenv("BIOZOO_HUB_TIMEOUT", "1")
    _Hub.requests.clear()

    def use(url):
        monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", url)

    use(hub_server.url)
    hub_server.use = use
    hub_server.requests = _Hub.requests
    yield hub_server
    from huggingface_hub import close_session

    close_session()  # the next test's client gets its own timeout
