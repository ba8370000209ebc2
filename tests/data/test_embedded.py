"""The corpora packaged with biozoo: the pinned upstream files, readable by name, with their licences."""

import fnmatch
import gzip
import hashlib
import json
import re
from pathlib import Path

import pytest

import biozoo
from biozoo.data import EMBEDDED_CORPORA, embedded_corpus, find_split, read_ner
from biozoo.data.embedded import CORPORA_ROOT
from biozoo.documents import read_documents

SOURCES = Path(biozoo.__file__).parent / "benchmark" / "data_sources.json"


def test_ncbi_disease_is_the_pinned_release_byte_for_byte():
    """Each packaged split, decompressed, has the sha256 and size that data_sources.json pins for the
    MTL-Bioinformatics-2016 file (read from its repository at a commit, not from our copy)."""
    spec = json.loads(SOURCES.read_text(encoding="utf-8"))["datasets"][EMBEDDED_CORPORA["ncbi-disease"].data_source]
    folder = embedded_corpus("ncbi-disease")
    assert sorted(p.name for p in folder.glob("*.gz")) == sorted(f["name"] + ".gz" for f in spec["files"])
    for file in spec["files"]:
        data = gzip.decompress((folder / (file["name"] + ".gz")).read_bytes())
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (file["sha256"], file["size"]), file["name"]


def test_example_pubtator_is_aioners_example(shared_data):
    packed = gzip.decompress(embedded_corpus("example-pubtator").read_bytes())
    assert packed == (shared_data / "documents" / "example.PubTator").read_bytes()


def test_the_readers_take_the_packaged_files_by_name():
    counts = {split: len(read_ner(find_split("ncbi-disease", split))) for split in ("train", "dev", "test")}
    assert counts == {"train": 5424, "dev": 923, "test": 940}  # the release's counts (shared/data/README.md)
    documents = list(read_documents([embedded_corpus("example-pubtator")]))
    assert [d.id for d in documents] == ["15485686", "16046395", "1848636", "19394258"]
    assert documents[0].passages[0].text.startswith("A novel SCN5A mutation manifests")


@pytest.mark.parametrize("name", sorted(EMBEDDED_CORPORA))
def test_every_packaged_corpus_carries_its_licence_and_attribution(name):
    path = embedded_corpus(name)
    folder = path if path.is_dir() else path.parent
    notice = (folder / "NOTICE.md").read_text(encoding="utf-8")
    licence = next(folder.glob("LICENSE*")).read_text(encoding="utf-8")
    corpus = EMBEDDED_CORPORA[name]
    expected = {"CC-BY-4.0": "Attribution 4.0 International", "MIT": "MIT License"}[corpus.licence]
    assert expected in licence and "Licence" in notice and "doi:" in notice


def test_setup_packages_every_embedded_file():
    """setup.py's package_data globs cover every file under biozoo/data/corpora."""
    text = (Path(biozoo.__file__).parents[1] / "setup.py").read_text(encoding="utf-8")
    globs = re.search(r'"biozoo\.data": \[([^\]]*)\]', text)[1]
    patterns = [p.strip().strip('"') for p in globs.split(",") if p.strip()]
    files = [p.relative_to(CORPORA_ROOT.parent).as_posix() for p in CORPORA_ROOT.rglob("*") if p.is_file()]
    assert files and all(any(fnmatch.fnmatch(f, p) for p in patterns) for f in files), (files, patterns)
