"""`biozoo data download` against a local HTTP server on 127.0.0.1: verified files pass, a
corrupted or truncated one is refused with nothing kept, offline prints what to fetch by hand;
and the recorded checksums are those of the real corpora in ../shared/data."""

import contextlib
import functools
import hashlib
import http.server
import json
import re
import socket
import threading
from pathlib import Path

import pytest

import biozoo.benchmark
from biozoo.benchmark.download import data_sources, download
from biozoo.cli import main

CONTENT = {"train.tsv": b"Aspirin\tB-Chemical\nhelps\tO\n\n", "test.tsv": b"Ibuprofen\tB-Chemical\n\n"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    for name, data in CONTENT.items():
        (root / name).write_bytes(data)
    (root / "corrupt.tsv").write_bytes(CONTENT["train.tsv"].replace(b"B-Chemical", b"B-Disease!"))
    (root / "short.tsv").write_bytes(CONTENT["train.tsv"][:10])
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _sources(tmp_path, files, manual=None):
    entry = {"title": "toy", "licence": {"spdx": "CC0-1.0", "url": "x", "note": ""}, "files": files}
    if manual:
        entry["manual"] = manual
    path = tmp_path / "sources.json"
    path.write_text(json.dumps({"datasets": {"ner/toy": entry}}))
    return str(path)


def _spec(server, served, name, data, **extra):
    return {"name": name, "url": f"{server}/{served}", "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data), **extra}


def test_verified_files_are_written(server, tmp_path):
    files = [_spec(server, n, n, d) for n, d in CONTENT.items()]
    result = download("ner/toy", tmp_path / "data", _sources(tmp_path, files), progress=False)
    assert result["complete"]
    for name, data in CONTENT.items():
        assert (tmp_path / "data" / "ner" / "toy" / name).read_bytes() == data
    again = download("ner/toy", tmp_path / "data", _sources(tmp_path, files), progress=False)
    assert set(again["datasets"]["ner/toy"]["files"].values()) == {"present, verified"}


@pytest.mark.parametrize("served", ["corrupt.tsv", "short.tsv"])
def test_a_wrong_file_is_refused_and_nothing_kept(server, tmp_path, served):
    files = [{**_spec(server, "train.tsv", "train.tsv", CONTENT["train.tsv"]), "url": f"{server}/{served}"}]
    if served == "corrupt.tsv":  # same length: only the digest can tell
        assert len((CONTENT["train.tsv"].replace(b"B-Chemical", b"B-Disease!"))) == len(CONTENT["train.tsv"])
    result = download("ner/toy", tmp_path / "data", _sources(tmp_path, files), progress=False)
    status = result["datasets"]["ner/toy"]["files"]["train.tsv"]
    assert not result["complete"] and status.startswith("refused")
    assert ("sha256" in status) if served == "corrupt.tsv" else ("bytes" in status)
    folder = tmp_path / "data" / "ner" / "toy"
    assert not folder.exists() or list(folder.iterdir()) == []


def test_git_blob_hash_verifies_when_no_sha256_is_recorded(server, tmp_path):
    data = CONTENT["test.tsv"]
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    good = [{"name": "test.tsv", "url": f"{server}/test.tsv", "git_blob_sha1": blob}]
    assert download("ner/toy", tmp_path / "a", _sources(tmp_path, good), progress=False)["complete"]
    bad = [{"name": "test.tsv", "url": f"{server}/train.tsv", "git_blob_sha1": blob}]
    result = download("ner/toy", tmp_path / "b", _sources(tmp_path, bad), progress=False)
    assert "git blob hash" in result["datasets"]["ner/toy"]["files"]["test.tsv"]


def test_unrecorded_checksum_needs_trust(server, tmp_path):
    files = [{"name": "test.tsv", "url": f"{server}/test.tsv"}]
    refused = download("ner/toy", tmp_path / "a", _sources(tmp_path, files), progress=False)
    assert "--trust-unverified" in refused["datasets"]["ner/toy"]["files"]["test.tsv"]
    trusted = download("ner/toy", tmp_path / "b", _sources(tmp_path, files), trust_unverified=True, progress=False)
    assert hashlib.sha256(CONTENT["test.tsv"]).hexdigest() in trusted["datasets"]["ner/toy"]["files"]["test.tsv"]


def _offline_url(name):
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/{name}"  # closed again: nothing listens there


def test_a_present_file_no_checksum_covers_is_kept_not_fetched_again(server, tmp_path):
    """A file fetched by hand whose source records no checksum stays as it is (its sha256
    told); without --trust-unverified the data set is not complete."""
    folder = tmp_path / "data" / "ner" / "toy"
    folder.mkdir(parents=True)
    mine = b"Tamoxifen\tB-Chemical\n\n"
    (folder / "test.tsv").write_bytes(mine)
    files = [{"name": "test.tsv", "url": f"{server}/test.tsv"}]  # serves other bytes
    trusted = download("ner/toy", tmp_path / "data", _sources(tmp_path, files), trust_unverified=True, progress=False)
    assert (folder / "test.tsv").read_bytes() == mine and trusted["complete"]
    assert trusted["datasets"]["ner/toy"]["files"]["test.tsv"] == \
        f"present, unverified: sha256 {hashlib.sha256(mine).hexdigest()}"
    untrusted = download("ner/toy", tmp_path / "data", _sources(tmp_path, files), progress=False)
    assert (folder / "test.tsv").read_bytes() == mine and not untrusted["complete"]
    assert "--trust-unverified" in untrusted["datasets"]["ner/toy"]["files"]["test.tsv"]


def test_a_present_file_that_differs_is_set_aside_and_fetched_again(server, tmp_path):
    """A present file that is not the recorded one is never left where the benchmark reads it:
    moved to <name>.rejected, then fetched again (or, offline, left to fetch by hand)."""
    folder = tmp_path / "data" / "ner" / "toy"
    folder.mkdir(parents=True)
    wrong = CONTENT["train.tsv"][:-3]
    (folder / "train.tsv").write_bytes(wrong)
    offline = [{**_spec(server, "train.tsv", "train.tsv", CONTENT["train.tsv"]), "url": _offline_url("train.tsv")}]
    result = download("ner/toy", tmp_path / "data", _sources(tmp_path, offline), progress=False)
    status = result["datasets"]["ner/toy"]["files"]["train.tsv"]
    assert not result["complete"] and "not fetched" in status and "train.tsv.rejected" in status
    assert not (folder / "train.tsv").exists() and (folder / "train.tsv.rejected").read_bytes() == wrong
    (folder / "train.tsv.rejected").rename(folder / "train.tsv")
    online = [_spec(server, "train.tsv", "train.tsv", CONTENT["train.tsv"])]
    result = download("ner/toy", tmp_path / "data", _sources(tmp_path, online), progress=False)
    assert result["complete"] and (folder / "train.tsv").read_bytes() == CONTENT["train.tsv"]
    assert (folder / "train.tsv.rejected").read_bytes() == wrong


def test_offline_lists_what_to_fetch_by_hand(tmp_path, capsys):
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/train.tsv"
    files = [{"name": "train.tsv", "url": url, "sha256": "ab" * 32}]
    status = main(["data", "download", "ner/toy", "--output", str(tmp_path / "d"),
                   "--sources", _sources(tmp_path, files, manual="ask the authors")])
    assert status == 3
    result = json.loads(capsys.readouterr().out)
    hand = {item.get("url") or item.get("how") for item in result["by_hand"]}
    assert hand == {url, "ask the authors"}
    fetch = next(item for item in result["by_hand"] if item.get("url") == url)
    assert fetch["sha256"] == "ab" * 32  # what the file fetched by hand must match
    assert fetch["into"] == str(tmp_path / "d" / "ner" / "toy" / "train.tsv")


def test_suite_and_task_names_resolve_to_data_folders():
    sources = data_sources()
    from biozoo.benchmark.download import datasets_for

    assert datasets_for("ncbi_disease", sources) == ["ner/NCBI-disease"]
    assert datasets_for("ncbi-disease", sources) == ["ner/NCBI-disease"]  # as --data and the README spell it
    assert "qa/bioasq" in datasets_for("biom-table2", sources)
    # with what --cross-corpus scores the suite's models on (read from suites.json itself)
    with open(Path(biozoo.benchmark.__file__).parent / "suites.json", encoding="utf-8") as f:
        suites = json.load(f)["suites"]
    for suite, spec in suites.items():
        targets = [t for task in spec["tasks"].values() for t in task.get("cross_corpus", [])]
        wanted = {t["data"] for t in targets} | {t["documents"].split("/")[0] for t in targets if "documents" in t}
        assert wanted <= set(datasets_for(suite, sources)), suite
    assert {"ner/NLM-Chem", "ner/BC4CHEMD", "documents"} <= set(datasets_for("biom-table2", sources))
    # a suite's unsupported tasks (BLURB's PICO, BIOSSES, PubMedQA, BioASQ yes/no) need no data
    for suite, spec in suites.items():
        supported = {t["data"] for t in spec["tasks"].values() if "unsupported" not in t}
        only_unsupported = {t["data"] for t in spec["tasks"].values() if "unsupported" in t} - supported
        assert supported <= set(datasets_for(suite, sources)), suite
        assert not only_unsupported & set(datasets_for(suite, sources)), suite
    assert "qa/pubmedqa" not in datasets_for("blurb", sources)
    with pytest.raises(KeyError, match="neither a suite"):
        datasets_for("no_such_thing", sources)


@pytest.mark.parametrize("folder", ["ner/NCBI-disease", "ner/BC5CDR-chem", "ner/BC5CDR-disease", "re/chemprot",
                                    "re/gad", "documents"])
def test_recorded_checksums_are_the_real_corpora(folder, shared_data):
    """../shared/data holds byte-identical copies of these sources' files: the recorded sha256,
    size and git blob hash all match them."""
    for file in data_sources()[folder]["files"]:
        path = shared_data / folder / file["name"]
        data = path.read_bytes()
        assert hashlib.sha256(data).hexdigest() == file["sha256"], path
        assert len(data) == file["size"]
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == file["git_blob_sha1"], path


def test_the_tests_group_names_every_shared_corpus_the_tests_read():
    """`biozoo data download tests` fetches every folder under ../shared/data that a test reads (found in
    the tests' source), and nothing the packaged NCBI-disease corpus already gives."""
    from biozoo.benchmark.download import data_groups, datasets_for

    tests = Path(__file__).parents[1]
    read = set()
    for path in tests.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        read |= {f"{a}/{b}" for a, b in re.findall(r'shared_data\s*/\s*"(\w+)"\s*/\s*"([^"]+)"', source)}
        read |= {"documents" for _ in re.findall(r'shared_data\s*/\s*"documents"', source)}
        read |= {"re/chemprot" for _ in re.findall(r"chemprot_subset\(shared_data", source)}
        read |= {"qa/bioasq" for _ in re.findall(r"bioasq_dev\(shared_data\)", source)}
    read = {folder.split("/")[0] if folder.startswith("documents") else folder for folder in read}
    read = {f"ner/{c}" if c in ("BC5CDR-chem", "BC5CDR-disease") else c for c in read if c != "ner/corpus"}
    read |= {"ner/BC5CDR-chem", "ner/BC5CDR-disease", "re/chemprot", "re/gad"}  # corpus_sentences (conftest)
    group = datasets_for("tests", data_sources())
    assert group == data_groups()["tests"] and "ner/NCBI-disease" not in read
    assert read <= set(group), sorted(read - set(group))
    assert all(folder in data_sources() for folder in group)


def test_bioasq_dev_is_the_recorded_test_file(shared_data):
    spec = [f for f in data_sources()["qa/bioasq"]["files"] if f["name"] == "test.json"][0]
    assert hashlib.sha256((shared_data / "qa" / "bioasq" / "dev.json").read_bytes()).hexdigest() == spec["sha256"]
    assert Path(spec["url"]).name == "dev.json"


def test_a_failed_download_leaves_no_empty_folder(tmp_path):
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    files = [{"name": "train.tsv", "url": f"http://127.0.0.1:{port}/train.tsv", "sha256": "ab" * 32}]
    (tmp_path / "d").mkdir()  # the user's folder stays
    result = download("ner/toy", tmp_path / "d", _sources(tmp_path, files), progress=False)
    assert not result["complete"] and "not fetched" in result["datasets"]["ner/toy"]["files"]["train.tsv"]
    assert (tmp_path / "d").is_dir() and not any((tmp_path / "d").iterdir())


def test_the_packaged_ncbi_disease_is_copied_without_the_network(tmp_path, monkeypatch):
    """Its files are the recorded ones (sha256 of data_sources.json), read from the package: no URL is opened."""
    def offline(*args, **kwargs):
        raise AssertionError("the network was used")

    monkeypatch.setattr("biozoo.downloads.stream_url", offline)
    result = download("ner/NCBI-disease", tmp_path / "d", progress=False)
    assert result["complete"]
    for spec in data_sources()["ner/NCBI-disease"]["files"]:
        assert result["datasets"]["ner/NCBI-disease"]["files"][spec["name"]] == \
            "copied from the corpus packaged with biozoo, verified"
        data = (tmp_path / "d" / "ner" / "NCBI-disease" / spec["name"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == spec["sha256"] and len(data) == spec["size"]
    # CC BY 4.0: the copy carries the corpus's licence and attribution, also added to a folder fetched before
    for again in (False, True):
        if again:
            for notice in ("LICENSE.md", "NOTICE.md"):
                (tmp_path / "d" / "ner" / "NCBI-disease" / notice).unlink()
            result = download("ner/NCBI-disease", tmp_path / "d", progress=False)
            assert set(result["datasets"]["ner/NCBI-disease"]["files"].values()) == {"present, verified"}
        for notice in ("LICENSE.md", "NOTICE.md"):
            copied = (tmp_path / "d" / "ner" / "NCBI-disease" / notice).read_text(encoding="utf-8")
            assert "Creative Commons" in copied or "Doğan" in copied
