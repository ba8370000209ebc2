"""Relation-extraction (sentence classification) readers: BLURB, ELECTRA and BioBERT layouts.

Formats (``fmt``):

===============  =====================================  =========================================
fmt              layout                                 seen in
===============  =====================================  =========================================
``blurb``        ``id<TAB>sentence<TAB>label``; a       BLURB chemprot/DDI (no header), GAD
                 header line is skipped when present    (header)
``electra``      header ``sentence<TAB>label``, then    ``/shared/data/re/chemprot`` (ELECTRA
                 ``sentence<TAB>label``                 fine-tuning release)
``biobert``      ``sentence<TAB>label``, no header      BioBERT ``RE/*/train.tsv``, ``dev.tsv``
``biobert_test`` header ``index<TAB>sentence<TAB>label``  BioBERT ``RE/*/test.tsv``;
                 then ``index<TAB>sentence<TAB>label``    ``/shared/data/re/gad/{dev,test}.tsv``
``auto``         detected from the first line: a header with 2 columns -> ``electra``, with 3 ->
                 ``biobert_test``; no header: 3 columns -> ``blurb``, 2 -> ``biobert``
===============  =====================================  =========================================

Rows are split on tabs only: quotes are kept literally (no csv quoting) and entity markers
(``@GENE$``, ``BC6ENTC``, ...) are untouched. Duplicate sentences are kept (ChemProt repeats a
sentence once per entity pair). ``\\r\\n`` line ends are accepted. Two-column formats have no id
column; their example id is the 0-based example index (as BioBERT's test ``index``).

A header names the columns: ``sentence<TAB>label`` or ``index<TAB>sentence<TAB>label`` (any
case; ``id`` for ``index`` and ``text`` for ``sentence`` are accepted too). A first line that is
not such a header is data, whatever its label. A row with the wrong number of columns, a header
line after the first line (two files joined), an empty sentence, id or label, or a blank line
followed by more rows raises ``DataFormatError`` naming the file and the 1-based line.
Blank lines at the end of the file are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from biozoo.data.files import text_lines
from biozoo.errors import DataFormatError

__all__ = ["RelationExample", "read_relation", "detect_relation_format", "RELATION_FORMATS"]

RELATION_FORMATS = ("auto", "blurb", "electra", "biobert", "biobert_test")

_COLUMNS = {"blurb": 3, "electra": 2, "biobert": 2, "biobert_test": 3}


@dataclass
class RelationExample:
    """One sentence with its relation label; ``line`` is the 1-based line in ``path``.

    Example (a BLURB ChemProt row: the two entities masked by their types):
        >>> example = RelationExample("10064839.T1.T22", "@CHEMICAL$ inhibits @GENE$ activity.", "CPR:4")
        >>> example.label, example.text.split()[0]
        ('CPR:4', '@CHEMICAL$')
    """

    id: str
    text: str
    label: str
    path: str = ""
    line: int = 0


def _is_header(fields) -> bool:
    """Whether `fields` name the columns (see the module doc), rather than hold an example."""
    names = [name.strip().lower() for name in fields]
    if len(names) == 2:
        return names[0] in ("sentence", "text") and names[1] == "label"
    return len(names) == 3 and names[0] in ("index", "id") and _is_header(names[1:])


def _unknown_header(fields) -> bool:
    """Whether `fields` look like a header that names columns biozoo does not know (a label
    column named "label" after column names, e.g. pmid, sentence, label): neither an example
    nor a header to skip."""
    *others, label = [name.strip() for name in fields]
    return label.lower() == "label" and bool(others) and all(re.fullmatch(r"[A-Za-z_]\w*", name) for name in others)


def _first_line(path):
    for lineno, raw in text_lines(path):
        line = raw.rstrip("\r\n")
        if line.strip():
            return lineno, line
    return None, None


def detect_relation_format(path) -> str:
    """The format of ``path`` by the rules of ``fmt="auto"`` (see the module doc)."""
    path = Path(path)
    lineno, line = _first_line(path)
    if line is None:
        raise DataFormatError(f"{path}: empty file, no relation examples")
    fields = line.split("\t")
    if _is_header(fields):
        if len(fields) == 2:
            return "electra"
        if len(fields) == 3:
            return "biobert_test"
    elif len(fields) == 3:
        return "blurb"
    elif len(fields) == 2:
        return "biobert"
    raise DataFormatError(
        f"{path}:{lineno}: cannot detect the relation format from {len(fields)} tab-separated column(s) "
        "(expected 'sentence<TAB>label' or 'id<TAB>sentence<TAB>label', optionally after a header)"
    )


def read_relation(path, fmt="auto") -> list[RelationExample]:
    """Read a relation-extraction file (see the module doc for the formats).

    Returns:
        list of :class:`RelationExample` in file order, duplicates kept.
    """
    if fmt not in RELATION_FORMATS:
        raise ValueError(f"unknown relation format {fmt!r}; expected one of {', '.join(RELATION_FORMATS)}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no relation file at {path}")
    if fmt == "auto":
        fmt = detect_relation_format(path)
    ncols = _COLUMNS[fmt]
    examples: list[RelationExample] = []
    first_line = None
    blank_line = None
    for lineno, raw in text_lines(path):
        line = raw.rstrip("\r\n")
        if not line.strip():
            if blank_line is None:
                blank_line = lineno
            continue
        if blank_line is not None:
            raise DataFormatError(f"{path}:{blank_line}: blank line between examples")
        fields = line.split("\t")
        if first_line is not None and _is_header(fields):
            raise DataFormatError(f"{path}:{lineno}: a header line {line!r} after line {first_line} (two files "
                                  "joined?): a header may only be the first line")
        if first_line is None:
            first_line = lineno
            is_header = _is_header(fields) and len(fields) == ncols
            if fmt in ("electra", "biobert_test") and not is_header:
                expected = "sentence<TAB>label" if fmt == "electra" else "index<TAB>sentence<TAB>label"
                raise DataFormatError(f"{path}:{lineno}: expected the header '{expected}' for format {fmt!r}, got {line!r}")
            if fmt == "biobert" and _is_header(fields):
                raise DataFormatError(
                    f"{path}:{lineno}: header line {line!r} in a headerless BioBERT file; use fmt='electra'"
                )
            if is_header:
                continue
            if _unknown_header(fields):
                raise DataFormatError(
                    f"{path}:{lineno}: {line!r} looks like a header naming columns biozoo does not know; a header "
                    "is 'sentence<TAB>label' or 'index<TAB>sentence<TAB>label' (text, id also): rename its columns "
                    "or remove the line")
        if len(fields) != ncols:
            layout = "id<TAB>sentence<TAB>label" if ncols == 3 else "sentence<TAB>label"
            raise DataFormatError(
                f"{path}:{lineno}: expected {ncols} tab-separated columns ({layout}) for format {fmt!r}, "
                f"got {len(fields)}"
            )
        if ncols == 3:
            ex_id, text, label = fields[0].strip(), fields[1], fields[2].strip()
            if not ex_id:
                raise DataFormatError(f"{path}:{lineno}: empty id")
        else:
            ex_id, text, label = str(len(examples)), fields[0], fields[1].strip()
        if not text.strip():
            raise DataFormatError(f"{path}:{lineno}: empty sentence")
        if not label:
            raise DataFormatError(f"{path}:{lineno}: empty label")
        examples.append(RelationExample(ex_id, text, label, str(path), lineno))
    return examples
