"""Helpers of the reliability tests: tree digests (nothing deleted), leftovers (nothing written),
tiny data and documents, a gzip whose damage is known (independent of biozoo's reader)."""

import hashlib
import random
import zlib
from pathlib import Path

BIOC_OVERLAP = ('<?xml version="1.0"?>\n<collection><source>s</source><date>d</date><key>k</key>\n'
                '<document><id>PMC1</id>'
                '<passage><infon key="type">title</infon><offset>0</offset><text>Aspirin and cancer</text></passage>'
                '<passage><infon key="type">abstract</infon><offset>10</offset><text>Cancer cells grow.</text>'
                '</passage></document>\n</collection>\n')

WORDS = ["the", "gene", "cancer", "protein", "cell", "brca", "a", "b", "c"]


def tree_digest(path):
    """{relative path: sha256 (or "dir")} of everything under `path` (a file: itself)."""
    path = Path(path)
    if not path.exists():
        return None
    if path.is_file():
        return {".": hashlib.sha256(path.read_bytes()).hexdigest()}
    found = {}
    for item in sorted(path.rglob("*")):
        key = str(item.relative_to(path))
        found[key] = "dir" if item.is_dir() else hashlib.sha256(item.read_bytes()).hexdigest()
    return found


def leftovers(folder):
    """Temporary files and folders a write leaves beside its output when it goes wrong."""
    return sorted(p.name for p in Path(folder).iterdir()
                  if any(f".{kind}-" in p.name for kind in ("partial", "streamed", "old")))


def ner_lines(count, seed):
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        for word in rng.sample(WORDS, 5):
            tag = "B-Disease" if word == "cancer" else "O"
            lines.append(f"{word}\t{tag}")
        lines.append("")
    return "\n".join(lines) + "\n"


def write_ner_data(folder, splits=("train", "devel", "test"), sizes=None):
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    sizes = sizes or {"train": 24, "devel": 8, "test": 8}
    for seed, split in enumerate(splits):
        (folder / f"{split}.tsv").write_text(ner_lines(sizes.get(split, 8), seed), encoding="utf-8")
    return folder


def pubtator_document(pmid, words=60):
    rng = random.Random(pmid)
    title = f"Cancer and gene {pmid}"
    abstract = " ".join(rng.choice(WORDS) for _ in range(words))
    return f"{pmid}|t|{title}\n{pmid}|a|{abstract}\n{pmid}\t0\t6\tCancer\tDisease\tD1\n\n"


def flushed_gzip(documents):
    """gzip bytes of `documents` with a full flush after each, and the compressed offset at which
    each document ends: an independent account of which documents a cut keeps whole."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    data, ends = bytearray(), []
    for document in documents:
        data += compressor.compress(document.encode("utf-8")) + compressor.flush(zlib.Z_FULL_FLUSH)
        ends.append(len(data))
    data += compressor.flush()
    return bytes(data), ends


def damaged_gzip_inputs(folder, count=40):
    """(a .gz cut in the middle of a document, the number of documents before it, which it holds whole)."""
    documents = [pubtator_document(2000 + i, words=200) for i in range(count)]
    data, ends = flushed_gzip(documents)
    half = count // 2
    cut = (ends[half - 1] + ends[half]) // 2  # in the middle of a document's compressed block
    path = Path(folder) / "cut.pubtator.gz"
    path.write_bytes(data[:cut])
    return path, half
