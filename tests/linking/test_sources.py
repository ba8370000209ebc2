"""Dictionaries by name against a local HTTP server on 127.0.0.1 serving files in the real
formats: an unrecorded checksum needs trust, a wrong checksum, a truncated transfer or a
corrupt file is refused with nothing cached; a cached dictionary is read without the network;
the table's entries are complete; and the embedded dictionary, rebuilt, equals the first."""

import functools
import hashlib
import http.server
import json
import os
import threading

import pytest

from biozoo.cli import main
from biozoo.downloads import DownloadError
from biozoo.errors import OfflineError
from biozoo.linking import sources
from biozoo.linking.sources import dictionary_table, download_dictionary, load_dictionary, raw_directory

REQUESTS = []


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        REQUESTS.append(self.path)
        if self.path.startswith("/cut/"):  # announces the whole file, sends half, closes
            data = (self.server.root / self.path[5:]).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
            return
        super().do_GET()


@pytest.fixture(scope="module")
def server(source_files):
    root = next(iter(source_files.values())).parent
    corrupt = bytearray(source_files["CTD_diseases.tsv.gz"].read_bytes())
    corrupt[len(corrupt) // 2] ^= 0xFF  # a flipped byte: the gzip CRC check fails
    (root / "corrupt.tsv.gz").write_bytes(bytes(corrupt))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    httpd.root = root
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def table(tmp_path, server, name, fmt, files, **extra):
    entry = {"title": name, "version": "test-1", "entity_types": ["Disease"], "format": fmt, "options": {},
             "licence": {"spdx": None, "name": "test", "url": "https://example.org", "allows": "-", "requires": "-"},
             "files": [{"name": n, "url": f"{server}/{path}", "sha256": sha, "size": None} for n, path, sha in files],
             **extra}
    path = tmp_path / "dictionaries.json"
    document = json.loads(path.read_text()) if path.exists() else {"version": 1, "dictionaries": {}}
    document["dictionaries"][name] = entry
    path.write_text(json.dumps(document))
    return str(path)


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_unrecorded_file_needs_trust_then_is_kept_with_its_digest(server, source_files, tmp_path):
    path = table(tmp_path, server, "toy-ctd", "ctd-tsv", [("CTD_diseases.tsv.gz", "CTD_diseases.tsv.gz", None)])
    asked = len(REQUESTS)
    with pytest.raises(DownloadError, match="no checksum is recorded for it, so it is not downloaded"):
        download_dictionary("toy-ctd", table_path=path, progress=False)
    assert not os.path.exists(raw_directory("toy-ctd")) and len(REQUESTS) == asked  # refused before downloading
    record = download_dictionary("toy-ctd", trust_unverified=True, table_path=path, progress=False)
    expected = sha(source_files["CTD_diseases.tsv.gz"])
    assert record["files"]["CTD_diseases.tsv.gz"]["sha256"] == expected
    assert record["files"]["CTD_diseases.tsv.gz"]["verified"] is False and record["concepts"] == {"CTD_diseases.tsv.gz": 3}
    kept = os.path.join(raw_directory("toy-ctd"), "CTD_diseases.tsv.gz")
    assert hashlib.sha256(open(kept, "rb").read()).hexdigest() == expected


@pytest.mark.parametrize("served, recorded, message", [
    ("CTD_diseases.tsv.gz", "0" * 64, "refused, the download has sha256"),
    ("cut/CTD_diseases.tsv.gz", None, r"/cut/CTD_diseases.tsv.gz: the connection was cut after \d+ of the \d+ bytes"),
    ("corrupt.tsv.gz", None, "not a readable ctd-tsv file"),
])
def test_wrong_truncated_or_corrupt_downloads_are_refused_and_nothing_is_cached(server, tmp_path, served, recorded,
                                                                                 message):
    path = table(tmp_path, server, "bad-ctd", "ctd-tsv", [("CTD_diseases.tsv.gz", served, recorded)])
    with pytest.raises(Exception, match=message):
        download_dictionary("bad-ctd", trust_unverified=True, table_path=path, progress=False)
    root = os.path.dirname(raw_directory("bad-ctd"))
    leftovers = [f for _, _, files in os.walk(root) for f in files if not f.endswith(".lock")] if os.path.exists(root) else []
    assert leftovers == []


def test_a_second_file_failing_keeps_nothing_of_the_first(server, tmp_path):
    path = table(tmp_path, server, "two-files", "mesh-xml",
                 [("desc2025.gz", "desc2025.gz", None), ("supp2025.gz", "cut/supp2025.gz", None)])
    with pytest.raises(Exception):
        download_dictionary("two-files", trust_unverified=True, table_path=path, progress=False)
    assert not os.path.exists(raw_directory("two-files"))


def test_a_cached_dictionary_is_read_without_the_network(server, source_files, tmp_path, monkeypatch):
    path = table(tmp_path, server, "toy-genes", "gene-info", [("gene_info.gz", "gene_info.gz", sha(source_files["gene_info.gz"]))])
    first = load_dictionary("toy-genes:9606,10090", table_path=path, progress=False)
    assert {c.id for c in first.concepts} == {"7157", "7422", "22059"}
    assert first.name == "toy-genes:9606,10090" and first.version.startswith("test-1/")
    served = len(REQUESTS)
    monkeypatch.setenv("BIOZOO_OFFLINE", "1")
    again = load_dictionary("toy-genes:9606,10090", table_path=path, progress=False)
    assert again.concepts == first.concepts and again.label == first.label and len(REQUESTS) == served
    everything = load_dictionary("toy-genes", table_path=path, progress=False)
    assert len(everything) == 4 and len(REQUESTS) == served  # the same files, another table
    with pytest.raises(OfflineError, match="biozoo data download toy-ctd2"):
        download_dictionary("toy-ctd2", table_path=table(tmp_path, server, "toy-ctd2", "ctd-tsv",
                                                          [("x.gz", "CTD_diseases.tsv.gz", None)]), progress=False)


def test_a_tampered_cached_table_is_refused(server, source_files, tmp_path):
    path = table(tmp_path, server, "toy-cells", "cellosaurus", [("cellosaurus.txt", "cellosaurus.txt", None)])
    first = load_dictionary("toy-cells", trust_unverified=True, table_path=path, progress=False)
    cached = [os.path.join(r, f) for r, _, files in os.walk(sources.cache_root()) for f in files
              if f == sources.TABLE_FILE and "toy-cells" in r]
    assert len(cached) == 1 and len(first) == 2
    from biozoo.linking.concepts import Concept, Dictionary
    Dictionary([Concept("CVCL_X", "forged")], "toy-cells", first.version).write_tsv(cached[0])
    with pytest.raises(Exception, match="differs from its record"):
        load_dictionary("toy-cells", table_path=path, progress=False)


def test_a_users_file_and_format_handles(tmp_path, source_files):
    mine = tmp_path / "mine.tsv"
    mine.write_text("X1\tfoo\nX2\tbar\n")
    dictionary = load_dictionary(str(mine), progress=False)
    assert dictionary.name == "mine" and dictionary.version == "sha256:" + hashlib.sha256(
        sha(mine).encode()).hexdigest()[:12]
    ctd = load_dictionary(f"ctd-tsv:{source_files['CTD_chemicals.tsv.gz']}", progress=False)
    assert {c.id for c in ctd.concepts} == {"D001241", "C000002"}
    with pytest.raises(ValueError, match="neither a dictionary of the table"):
        load_dictionary(str(tmp_path / "missing.tsv"))


def test_ctds_alternate_ids_survive_the_cached_table(source_files):
    handle = f"ctd-tsv:{source_files['CTD_diseases.tsv.gz']}"
    for _ in range(2):  # built, then read from the cache
        wilson = load_dictionary(handle, progress=False).concept("D006527")
        assert wilson.alt_ids == ("DO:DOID:893", "OMIM:277900")  # the fixture's AltDiseaseIDs


def test_the_cli_downloads_a_dictionary_into_the_cache(server, source_files, tmp_path, capsys):
    path = table(tmp_path, server, "toy-taxonomy", "taxdump", [("taxdmp_2025-01-01.zip", "taxdmp_2025-01-01.zip", None)])
    assert main(["data", "download", "toy-taxonomy", "--sources", path, "--trust-unverified"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["table_concepts"] == 3 and result["files"]["taxdmp_2025-01-01.zip"]["sha256"] == sha(
        source_files["taxdmp_2025-01-01.zip"])
    assert main(["data", "download", "toy-taxonomy", "--sources", path, "--output", str(tmp_path)]) == 2


def test_every_dictionary_of_the_table_is_complete():
    for name, entry in dictionary_table().items():
        assert entry["format"] in sources.READERS and entry["entity_types"] and entry["version"], name
        licence = entry["licence"]
        assert licence["url"].startswith("https://") and licence["allows"] and licence["requires"], name
        for file in entry["files"]:
            assert file["url"].startswith("https://") and set(file) >= {"name", "url", "sha256", "size", "pinned"}, name
            # no digest could be measured where the table was written: none is made up
            assert file["sha256"] is None and file["size"] is None, name
    assert dictionary_table()["cellosaurus"]["licence"]["spdx"] == "CC-BY-4.0"
    with pytest.raises(ValueError, match=r"ncbi-gene: choose taxa \(ncbi-gene:9606,10090"):
        sources.load_dictionary("ncbi-gene")  # refused before anything is downloaded (no network here)
    assert dictionary_table()["mesh-diseases"]["files"][0]["url"].endswith("/2025/xmlmesh/desc2025.gz")


def test_a_concept_table_cut_short_or_not_gzip_is_named(tmp_path):
    from biozoo.errors import DataFormatError
    from biozoo.linking.concepts import Concept, Dictionary

    whole = tmp_path / "table.tsv.gz"
    Dictionary([Concept("D1", "a b", ("x",), "Disease")], "t", "1").write_tsv(whole)
    assert [c.id for c in Dictionary.read_tsv(whole).concepts] == ["D1"]
    cut, plain = tmp_path / "cut.tsv.gz", tmp_path / "plain.tsv"
    cut.write_bytes(whole.read_bytes()[:-12])
    plain.write_text("# biozoo concept table\tt\t1\n")
    for path in (cut, plain):
        with pytest.raises(DataFormatError, match=f"{path.name}: not a whole gzipped concept table"):
            Dictionary.read_tsv(path)
