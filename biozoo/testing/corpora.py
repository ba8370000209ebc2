"""Test data from text files: sentences of NER files, SentencePiece models trained on them, small
subsets of the shared corpora."""

from __future__ import annotations

from pathlib import Path


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


def train_spiece(prefix, text, vocab_size):
    """Train an ALBERT-style SentencePiece model (unigram; <pad> <unk> [CLS] [SEP] [MASK])."""
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(text), model_prefix=str(prefix), vocab_size=vocab_size,
        model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], minloglevel=2,
    )
    return Path(str(prefix) + ".model")


def chemprot_subset(shared_data, target, counts=None):
    """The first lines of ChemProt's train / dev / test splits (`counts` per split) in `target`."""
    counts = counts or {"train": 96, "dev": 24, "test": 24}
    target.mkdir(parents=True, exist_ok=True)
    for split, count in counts.items():
        lines = (shared_data / "re" / "chemprot" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        (target / f"{split}.tsv").write_text("\n".join(lines[:count]) + "\n", encoding="utf-8")
    return target


def bioasq_dev(shared_data):
    """The BioASQ 7b factoid dev file (SQuAD v1.1): ../shared/data's qa/bioasq/dev.json, or the same
    file as `biozoo data download tests` saves it (qa/bioasq/test.json)."""
    folder = shared_data / "qa" / "bioasq"
    return folder / "dev.json" if (folder / "dev.json").exists() else folder / "test.json"
