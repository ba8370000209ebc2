"""Test data from text files: sentences of NER files, SentencePiece models trained on them, small
subsets of the shared corpora."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


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


def train_spiece(prefix, text, vocab_size, user_defined_symbols=()):
    """Train an ALBERT-style SentencePiece model (unigram; <pad> <unk> [CLS] [SEP] [MASK], then
    `user_defined_symbols`)."""
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(text), model_prefix=str(prefix), vocab_size=vocab_size,
        model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], user_defined_symbols=list(user_defined_symbols), minloglevel=2,
    )
    return Path(str(prefix) + ".model")


def chemprot_subset(shared_data, target, counts=None):
    """The first lines of ChemProt's train / dev / test splits (`counts` per split, the header
    included) in `target`; dev and test keep only rows of the labels the train rows have."""
    counts = counts or {"train": 96, "dev": 24, "test": 24}
    target.mkdir(parents=True, exist_ok=True)
    labels = None
    for split in sorted(counts, key=lambda name: name != "train"):
        header, *rows = (shared_data / "re" / "chemprot" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        rows = [row for row in rows if labels is None or row.rsplit("\t", 1)[-1] in labels][:counts[split] - 1]
        labels = labels or {row.rsplit("\t", 1)[-1] for row in rows}
        (target / f"{split}.tsv").write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return target


def bioasq_dev(shared_data):
    """The BioASQ 7b factoid dev file (SQuAD v1.1): ../shared/data's qa/bioasq/dev.json, or the same
    file as `biozoo data download tests` saves it (qa/bioasq/test.json)."""
    folder = shared_data / "qa" / "bioasq"
    return folder / "dev.json" if (folder / "dev.json").exists() else folder / "test.json"


def write_hoc(path, count, seed):
    rng = np.random.default_rng(seed)
    words = ["tumour", "growth", "apoptosis", "angiogenesis", "invasion", "immune", "genome", "cells"]
    lines = ["labels\tsentence\tindex"]
    for a in range(count):
        for k in range(2):
            labels = set(int(x) for x in rng.choice(10, size=rng.integers(0, 3), replace=False))
            field = ",".join(f"{j}_{int(j in labels)}" for j in range(10))
            lines.append(f"{field}\t{' '.join(rng.choice(words, 8))} .\t{seed * 1000 + a}_{k}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def task_data(kind, request, root):
    """Small data of task `kind` in `root`: NER from the embedded NCBI-disease (the `ncbi_disease`
    fixture of `request`), RE and QA from the shared corpora (`shared_data`), document
    classification made up (`write_hoc`)."""
    root.mkdir(parents=True, exist_ok=True)
    if kind == "ner":
        ncbi_disease = request.getfixturevalue("ncbi_disease")
        for split in ("train", "devel", "test"):
            blocks = (ncbi_disease / f"{split}.tsv").read_text(encoding="utf-8").split("\n\n")
            (root / f"{split}.tsv").write_text("\n\n".join(blocks[:40]) + "\n", encoding="utf-8")
    elif kind == "re":
        chemprot_subset(request.getfixturevalue("shared_data"), root, {"train": 40, "dev": 8, "test": 8})
    elif kind == "qa":
        shared_data = request.getfixturevalue("shared_data")
        data = json.loads(bioasq_dev(shared_data).read_text(encoding="utf-8"))
        data["data"] = data["data"][:1]
        data["data"][0]["paragraphs"] = data["data"][0]["paragraphs"][:20]
        (root / "train.json").write_text(json.dumps(data), encoding="utf-8")
    else:
        for split, seed in (("train", 1), ("dev", 2), ("test", 3)):
            write_hoc(root / f"{split}.tsv", 24, seed)
    return root
