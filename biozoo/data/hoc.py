"""Hallmarks of Cancer (HoC) reader, BLURB layout, and abstract grouping.

BLURB ``data_generation/data/HoC/{train,dev,test}.tsv``: a header line (skipped when present:
a first line none of whose items is ``j_v`` or an id), then one row per
sentence ``label<TAB>sentence<TAB>id`` where ``label`` is 10 comma-separated ``j_v`` items
(``j`` = label index 0-9, ``v`` in {0, 1}) and ``id`` is ``PMID_sentidx``.

For the document-level task the sentences of one abstract (same ``PMID``) are joined with
spaces and their labels OR-ed (LinkBERT ``preprocess_blurb.py``); :func:`group_by_abstract`
does this in first-seen order (BLURB: 1295/186/371 abstracts).

A row without 3 tab-separated columns, a label field that is not 10 distinct ``j_v`` items,
or an empty sentence/id raises ``DataFormatError`` naming the file and the 1-based line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from biozoo.data.files import text_lines
from biozoo.errors import DataFormatError

__all__ = ["LABELS", "HocSentence", "HocAbstract", "read_hoc", "parse_hoc_labels", "group_by_abstract"]

#: The 10 hallmarks, in label-index order (LinkBERT/BLUE ``LABELS``).
LABELS = (
    "activating invasion and metastasis",
    "avoiding immune destruction",
    "cellular energetics",
    "enabling replicative immortality",
    "evading growth suppressors",
    "genomic instability and mutation",
    "inducing angiogenesis",
    "resisting cell death",
    "sustaining proliferative signaling",
    "tumor promoting inflammation",
)

_ITEM = re.compile(r"\d+_\d+")  # a label item (j_v) or a sentence id (PMID_sentidx)


@dataclass
class HocSentence:
    """One row of a HoC file: its id (``PMID_sentidx``), text, the 10 labels (1: the hallmark of
    `LABELS` at that index holds), and the file and 1-based line it was read from.

    Example:
        >>> sentence = HocSentence("10064741_3", "Apoptosis was induced.", parse_hoc_labels("0_0,1_0,2_0,3_0,4_0,"
        ...                        "5_0,6_0,7_1,8_0,9_0"))
        >>> [LABELS[j] for j, v in enumerate(sentence.labels) if v]
        ['resisting cell death']
    """

    id: str
    text: str
    labels: tuple
    path: str = ""
    line: int = 0


@dataclass
class HocAbstract:
    """The sentences of one abstract joined (`group_by_abstract`): the PMID, their text, their labels
    OR-ed, their ids, and the file and line of the first.

    Example:
        >>> none = (0,) * 10
        >>> abstract, = group_by_abstract([HocSentence("10064741_0", "Tumours grew.", none),
        ...                                HocSentence("10064741_1", "Cells died.", none[:7] + (1, 0, 0))])
        >>> abstract.id, abstract.text, abstract.labels[7], abstract.sentence_ids
        ('10064741', 'Tumours grew. Cells died.', 1, ['10064741_0', '10064741_1'])
    """

    id: str
    text: str
    labels: tuple
    sentence_ids: list = field(default_factory=list)
    path: str = ""
    line: int = 0


def parse_hoc_labels(field_text: str, n_labels: int = len(LABELS)) -> tuple:
    """``"0_0,1_1,...,9_0"`` -> ``(0, 1, ..., 0)``; raises ``ValueError`` on anything else."""
    items = [item.strip() for item in field_text.split(",")]
    vec = [None] * n_labels
    for item in items:
        j, sep, v = item.partition("_")
        if not sep or not j.isdigit() or v not in ("0", "1"):
            raise ValueError(f"label item {item!r} is not 'index_value' with value 0 or 1")
        j = int(j)
        if j >= n_labels:
            raise ValueError(f"label index {j} out of range 0-{n_labels - 1}")
        if vec[j] is not None:
            raise ValueError(f"label index {j} given twice")
        vec[j] = int(v)
    if any(v is None for v in vec):
        missing = [j for j, v in enumerate(vec) if v is None]
        raise ValueError(f"{len(items)} label items, expected {n_labels} (missing index {missing})")
    return tuple(vec)


def _is_header(fields):
    """A header names the columns: none of its comma-separated items is a label item or id (a row
    whose label field is malformed still has its id, and is read, to be reported, not skipped)."""
    return not any(_ITEM.fullmatch(item.strip()) for field_text in fields for item in field_text.split(","))


def read_hoc(path, n_labels: int = len(LABELS)) -> list[HocSentence]:
    """Read a BLURB HoC file into sentences (header skipped when present)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no HoC file at {path}")
    sentences: list[HocSentence] = []
    first = True
    for lineno, raw in text_lines(path):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        fields = line.split("\t")
        if first:
            first = False
            if _is_header(fields):
                continue
        if len(fields) != 3:
            raise DataFormatError(
                f"{path}:{lineno}: expected 'label<TAB>sentence<TAB>id' (3 columns), got {len(fields)}"
            )
        try:
            labels = parse_hoc_labels(fields[0], n_labels)
        except ValueError as error:
            raise DataFormatError(f"{path}:{lineno}: {error}") from None
        text, sid = fields[1], fields[2].strip()
        if not sid:
            raise DataFormatError(f"{path}:{lineno}: empty sentence id")
        if not text.strip():
            raise DataFormatError(f"{path}:{lineno}: empty sentence")
        sentences.append(HocSentence(sid, text, labels, str(path), lineno))
    return sentences


def group_by_abstract(sentences) -> list[HocAbstract]:
    """Group :class:`HocSentence` s by abstract id (text before the first ``_``), OR-ing labels.

    Texts are joined with single spaces (``(abstract + " " + sentence).strip()``, LinkBERT).
    """
    groups: dict[str, HocAbstract] = {}
    for s in sentences:
        key = str(s.id).split("_")[0]
        text = s.text.strip()
        if key not in groups:
            groups[key] = HocAbstract(key, text, tuple(s.labels), [s.id], s.path, s.line)
        else:
            g = groups[key]
            g.text = (g.text + " " + text).strip()
            g.labels = tuple(int(a | b) for a, b in zip(g.labels, s.labels))
            g.sentence_ids.append(s.id)
    return list(groups.values())
