"""Corpora packaged with biozoo, usable by name wherever a data folder or document file is asked for.

A machine with only biozoo installed still fine-tunes, evaluates and annotates real data:

| name            | what                                                     | licence   |
|-----------------|----------------------------------------------------------|-----------|
| `ncbi-disease`  | NCBI-disease NER, IOB2 (5,424 / 923 / 940 sentences)     | CC BY 4.0 |
| `example-pubtator` | 4 PubMed abstracts in PubTator format (AIONER's example) | MIT     |

Each sits compressed under `biozoo/data/corpora/` with its licence and a NOTICE.md giving its
source and attribution; the readers read the `.gz` files as they are. `biozoo data download`
fetches the other corpora the benchmarks use.

Example:
    >>> folder = biozoo.data.embedded_corpus("ncbi-disease")
    >>> biozoo.data.read_ner(biozoo.data.find_split(folder, "train"))[:1]
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

CORPORA_ROOT = Path(__file__).resolve().parent / "corpora"


@dataclass(frozen=True)
class EmbeddedCorpus:
    """A packaged corpus: its path under `corpora/`, what it is, and where it came from."""

    path: str  # a folder (NER splits) or one document file, relative to CORPORA_ROOT
    description: str
    licence: str
    data_source: str | None = None  # its key in biozoo/benchmark/data_sources.json, which pins each file's sha256


EMBEDDED_CORPORA = {
    "ncbi-disease": EmbeddedCorpus(
        "NCBI-disease", "NCBI-disease NER (Disease), MTL-Bioinformatics-2016 release, IOB2", "CC-BY-4.0",
        data_source="ner/NCBI-disease"),
    "example-pubtator": EmbeddedCorpus(
        "documents/example.PubTator.gz", "4 PubMed abstracts in PubTator format (AIONER's example input)", "MIT"),
}


def embedded_corpus(name):
    """The local path of the packaged corpus `name` (a folder of NER splits, or a document file)."""
    try:
        corpus = EMBEDDED_CORPORA[name]
    except KeyError:
        raise KeyError(f"no embedded corpus {name!r}; biozoo packages {', '.join(EMBEDDED_CORPORA)}") from None
    return CORPORA_ROOT / corpus.path


def resolve_data_path(path):
    """`path` itself, or the packaged corpus it names when no file or folder of that name exists."""
    text = os.fspath(path)
    if text in EMBEDDED_CORPORA and not os.path.exists(text):
        return embedded_corpus(text)
    return path


def packaged_names_hint(path):
    """What to say after "no data folder at PATH": the packaged data folders' names, the closest first.

    Example:
        >>> packaged_names_hint("ncbi_disease")
        ' (did you mean ncbi-disease? biozoo packages the data folder ncbi-disease)'
    """
    folders = [name for name, corpus in EMBEDDED_CORPORA.items() if (CORPORA_ROOT / corpus.path).is_dir()]
    close = difflib.get_close_matches(os.path.basename(os.fspath(path).rstrip("/")).lower(), folders, n=1)
    return f" ({f'did you mean {close[0]}? ' if close else ''}biozoo packages the data folder {', '.join(folders)})"
