"""The original TF1 archives by registry name (`from_preset(name, source="tf1")`, `biozoo
convert --from tf1 NAME`), served by a local HTTP server on 127.0.0.1: the right archive
converts to the model it was made from; a corrupted one, or one with a member that escapes its
folder, is refused before anything is converted."""

import functools
import hashlib
import http.server
import io
import json
import os
import tarfile
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

import biozoo
from biozoo import registry
from biozoo import testing as H
from biozoo.cli import main
from biozoo.convert.archives import google_drive_id
from biozoo.errors import CheckpointError
from biozoo.testing import tf1_checkpoints as T

GLUON = Path(__file__).resolve().parents[1] / "fixtures" / "gluon"
BERT_KEYS = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
             "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
             "type_vocab_size", "initializer_range"]


def _tar(files, extra=()):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in list(files.items()) + list(extra):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _zip(files):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A TF1 BERT checkpoint (google-research names, Adam slots) as archives on 127.0.0.1."""
    root = tmp_path_factory.mktemp("tf1")
    model = H.make_model("bert", "BertForPreTraining")
    checkpoint = root / "biobert_v1.1_pubmed"
    checkpoint.mkdir()
    T.write_tf1_checkpoint(T.bert_tf1_variables(T.torch_state(model)), checkpoint / "model.ckpt-1000000")
    config = model.config.to_dict()
    (checkpoint / "bert_config.json").write_text(json.dumps({k: config[k] for k in BERT_KEYS}))
    (checkpoint / "vocab.txt").write_text("\n".join(H.wordpiece_vocab()) + "\n", encoding="utf-8")
    files = {f"biobert_v1.1_pubmed/{p.name}": p.read_bytes() for p in checkpoint.iterdir()}
    www = root / "www"
    www.mkdir()
    good = _tar(files)
    (www / "good.tar.gz").write_bytes(good)
    (www / "good.zip").write_bytes(_zip(files))
    corrupt = bytearray(good)
    corrupt[len(corrupt) // 2] ^= 0x01
    (www / "corrupt.tar.gz").write_bytes(bytes(corrupt))
    evil = _tar(files, extra=[("../../escaped.txt", b"outside")])
    (www / "evil.tar.gz").write_bytes(evil)
    buffer = io.BytesIO()  # a symbolic link pointing out of the archive's folder
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        link = tarfile.TarInfo("biobert_v1.1_pubmed/vocab.txt")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    (www / "link.tar.gz").write_bytes(buffer.getvalue())
    gluon = GLUON / "electra_disc"  # written by real mxnet 1.9.1 (tests/fixtures/gluon/README.md)
    (www / "gluon.tar.gz").write_bytes(_tar({f"BioM-ELECTRA-Base/{name}": (gluon / name).read_bytes()
                                             for name in ("disc_model.v3.params", "model.yml", "vocab.json")}))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    hf = H.save_hf_directory(model.bert, root / "hf")
    digests = {name: hashlib.sha256((www / name).read_bytes()).hexdigest() for name in
               ("good.tar.gz", "good.zip", "evil.tar.gz", "link.tar.gz", "gluon.tar.gz")}
    yield {"url": f"http://127.0.0.1:{httpd.server_address[1]}", "model": model, "hf": hf, "sha256": digests,
           "size": len(good)}
    httpd.shutdown()


def _point_registry_at(monkeypatch, served, file, sha256=None, size=None):
    H.registry_entry_describes(monkeypatch, "biobert_v1_1", served["hf"])
    archive = {"url": f"{served['url']}/{file}", "part": "model"}
    if sha256:
        archive["sha256"] = sha256
    if size:
        archive["size"] = size
    sources = registry._load_registry()["checkpoints"]["biobert_v1_1"]["sources"]
    monkeypatch.setitem(sources, "tf1", [archive])


@pytest.mark.parametrize("file", ["good.tar.gz", "good.zip"])
def test_the_original_archive_converts_to_its_model(served, monkeypatch, file):
    _point_registry_at(monkeypatch, served, file, served["sha256"][file])
    backbone = biozoo.from_preset("biobert_v1_1", source="tf1")
    inputs = H.random_inputs()
    sequence, pooled = H.hf_outputs(served["model"], inputs)
    outputs = backbone(inputs)
    assert H.max_diff(outputs["sequence_output"], sequence, inputs["padding_mask"]) <= 1e-4
    assert np.abs(np.asarray(outputs["pooled_output"]) - pooled).max() <= 1e-4
    from biozoo import presets
    from biozoo.preset_files import read_provenance

    provenance = read_provenance(presets.resolve_archive_preset("biobert_v1_1", "tf1"))
    assert provenance["archive_sha256"] == served["sha256"][file] and provenance["archive_verified"]


def test_a_corrupted_archive_is_refused_and_nothing_cached(served, monkeypatch):
    _point_registry_at(monkeypatch, served, "corrupt.tar.gz", served["sha256"]["good.tar.gz"], served["size"])
    with pytest.raises(CheckpointError, match=f"sha256 [0-9a-f]{{64}}, the registry records {served['sha256']['good.tar.gz']}"):
        biozoo.from_preset("biobert_v1_1", source="tf1")

    from biozoo import presets

    cached = os.path.join(presets.cache_root(), "presets")
    assert not os.path.isdir(cached) or [n for n in os.listdir(cached) if not n.endswith(".lock")] == []


@pytest.mark.parametrize("file, member", [("evil.tar.gz", r"\.\./\.\./escaped\.txt"),
                                          ("link.tar.gz", r"biobert_v1\.1_pubmed/vocab\.txt")])
def test_a_member_outside_the_archive_is_refused(served, monkeypatch, file, member):
    _point_registry_at(monkeypatch, served, file, served["sha256"][file])
    with pytest.raises(CheckpointError, match=rf"refused member '{member}'"):
        biozoo.from_preset("biobert_v1_1", source="tf1")


def test_an_archive_without_a_recorded_digest_needs_trust(served, monkeypatch):
    _point_registry_at(monkeypatch, served, "good.tar.gz")
    with pytest.raises(CheckpointError, match="records no sha256 .*its sha256 is " + served["sha256"]["good.tar.gz"]):
        biozoo.from_preset("biobert_v1_1", source="tf1")
    assert biozoo.from_preset("biobert_v1_1", source="tf1", trust_unverified=True) is not None


def test_the_cli_converts_by_name(served, monkeypatch, tmp_path, capsys):
    _point_registry_at(monkeypatch, served, "good.tar.gz", served["sha256"]["good.tar.gz"])
    assert main(["convert", "--from", "tf1", "biobert_v1_1", "--output", str(tmp_path / "out")]) == 0
    reloaded = biozoo.from_preset(str(tmp_path / "out"))
    inputs = H.random_inputs()
    sequence, _ = H.hf_outputs(served["model"], inputs)
    assert H.max_diff(reloaded(inputs)["sequence_output"], sequence, inputs["padding_mask"]) <= 1e-4


def test_registry_archive_links_are_google_drive_files():
    urls = [a["url"] for name in registry.list_presets() for a in registry.get_entry(name)["sources"].get("tf1", [])
            + registry.get_entry(name)["sources"].get("gluonnlp", [])]
    drive = [u for u in urls if "drive.google.com" in u]
    assert len(drive) >= 10 and all(google_drive_id(u) for u in drive)
    assert google_drive_id("https://drive.google.com/file/d/1R84voFKHfWV9xjzeLzWBbmY1uOMYpnyD/view?usp=sharing") == \
        "1R84voFKHfWV9xjzeLzWBbmY1uOMYpnyD"


def test_the_original_gluonnlp_archive_converts_to_its_model(served, monkeypatch):
    import torch
    import transformers

    folder = GLUON / "electra_disc"
    H.registry_entry_describes(monkeypatch, "biom_electra_base_discriminator", folder / "hf")
    sources = registry._load_registry()["checkpoints"]["biom_electra_base_discriminator"]["sources"]
    monkeypatch.setitem(sources, "gluonnlp", [{"url": f"{served['url']}/gluon.tar.gz",
                                               "sha256": served["sha256"]["gluon.tar.gz"]}])
    backbone = biozoo.from_preset("biom_electra_base_discriminator", source="gluonnlp")
    data = np.load(folder / "reference.npz")
    model = transformers.ElectraModel.from_pretrained(str(folder / "hf")).eval()
    with torch.no_grad():
        expected = model(input_ids=torch.tensor(data["input_ids"]).long(),
                         token_type_ids=torch.tensor(data["token_type_ids"]).long(),
                         attention_mask=torch.tensor(data["attention_mask"]).long()).last_hidden_state.numpy()
    inputs = {"token_ids": data["input_ids"].astype("int32"), "segment_ids": data["token_type_ids"].astype("int32"),
              "padding_mask": data["attention_mask"].astype("int32")}
    assert H.max_diff(backbone(inputs)["sequence_output"], expected, inputs["padding_mask"]) <= 1e-4


def test_an_archive_the_registry_records_anew_is_converted_anew(served, monkeypatch):
    """A conversion is cached per archive: after the registry names another archive (a new URL or
    digest), its conversion is what the name gives, not the cached one of the old archive."""
    from biozoo import presets
    from biozoo.preset_files import read_provenance

    _point_registry_at(monkeypatch, served, "good.tar.gz", served["sha256"]["good.tar.gz"])
    first = presets.resolve_archive_preset("biobert_v1_1", "tf1")
    _point_registry_at(monkeypatch, served, "good.zip", served["sha256"]["good.zip"])
    second = presets.resolve_archive_preset("biobert_v1_1", "tf1")
    assert read_provenance(first)["archive_url"].endswith("/good.tar.gz")
    assert read_provenance(second)["archive_url"].endswith("/good.zip")
