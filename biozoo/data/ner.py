"""NER data readers: typed IOB2 TSV, BLURB (bare ``B``/``I``/``O`` tags) and BioBERT files.

Formats (``fmt``):

* ``"tsv"`` — ``token<TAB>tag``, exactly two tab-separated columns (MTL-Bioinformatics-2016
  release, e.g. ``/shared/data/ner/NCBI-disease``: ``B-Disease``/``I-Disease``/``O``).
* ``"blurb"`` — the same layout with bare ``B``/``I``/``O`` tags (BLURB ``data_generation``);
  a typed tag is an error in this format.
* ``"biobert"`` — BioBERT ``run_ner.py``: fields split at spaces and tabs, word = first field,
  tag = last field (at least two fields).
* ``"auto"`` — ``tsv`` when the first token line has exactly two tab-separated columns,
  otherwise ``biobert``.

In every format columns are split at ASCII tabs and spaces only: a no-break space (U+00A0) or
another Unicode space is part of the word. A blank line ends a sentence, ``-DOCSTART-`` lines
are skipped (and end a sentence), tags must be ``O``, ``B``, ``I``, ``B-TYPE`` or ``I-TYPE``,
and a file may not mix bare and typed tags. Anything else raises ``DataFormatError`` naming
the file and the 1-based line. Nothing is dropped silently. An IOB1 file (its entities begin
with ``I-``, never with ``B-`` after ``O``) is converted to IOB2 with a ``DataWarning``; the
entities stay those conlleval reads.

Bare tags are typed (``B`` -> ``B-Disease``) with ``entity_type``, or, when it is not given,
from the name of the folder holding the file (case-insensitive):

======================  ===========
folder                  entity type
======================  ===========
NCBI-disease            Disease
BC5CDR-disease          Disease
BC5CDR-chem             Chemical
BC4CHEMD                Chemical
BC2GM                   Gene
s800                    Species
linnaeus                Species
JNLPBA                  (kept as is: bare tags stay bare)
======================  ===========

Any other folder with bare tags and no ``entity_type`` is an error. Typed tags are never
re-typed.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from biozoo.data.embedded import packaged_names_hint, resolve_data_path
from biozoo.data.files import text_lines
from biozoo.errors import DataFormatError, DataWarning
from biozoo.task_kinds import task_kind

__all__ = ["Sentence", "read_ner", "find_split", "infer_entity_type", "tag_kind", "FOLDER_ENTITY_TYPES",
           "NER_FORMATS"]

NER_FORMATS = ("auto", "tsv", "blurb", "biobert")

#: folder name (lower case) -> entity type for bare B/I tags; None = keep bare tags as they are.
FOLDER_ENTITY_TYPES = {
    "ncbi-disease": "Disease",
    "bc5cdr-disease": "Disease",
    "bc5cdr-chem": "Chemical",
    "bc4chemd": "Chemical",
    "bc2gm": "Gene",
    "s800": "Species",
    "linnaeus": "Species",
    "jnlpba": None,
}

_KEEP = object()
_COLUMN_GAP = re.compile(r"[ \t]+")  # columns are split here: not at U+00A0 or other Unicode spaces


def _fields(line):
    """The space- or tab-separated fields of `line`."""
    return _COLUMN_GAP.split(line.strip(" \t"))


@dataclass
class Sentence:
    """One sentence: words, their tags, the file and the 1-based line of its first token.

    Example (the packaged NCBI-disease corpus):
        >>> first = read_ner(find_split(embedded_corpus("ncbi-disease"), "train"))[0]
        >>> list(zip(first.words[8:12], first.tags[8:12]))  # doctest: +NORMALIZE_WHITESPACE
        [('adenomatous', 'B-Disease'), ('polyposis', 'I-Disease'), ('coli', 'I-Disease'),
         ('tumour', 'I-Disease')]
        >>> Path(first.path).name, first.line, len(first)
        ('train.tsv.gz', 1, 14)
    """

    words: list = field(default_factory=list)
    tags: list = field(default_factory=list)
    path: str = ""
    line: int = 0

    def __len__(self):
        return len(self.words)


def infer_entity_type(path):
    """Entity type for bare tags from the folder name of ``path`` (see module doc).

    Returns the type name, ``None`` for folders whose tags are kept as they are (JNLPBA),
    and raises ``ValueError`` for an unknown folder. The folder named in ``path`` counts first,
    then, for a link, the folder of the file it links to.
    """
    folder = Path(path).absolute().parent.name
    for named in (folder, Path(path).resolve().parent.name):
        if named.lower() in FOLDER_ENTITY_TYPES:
            return FOLDER_ENTITY_TYPES[named.lower()]
    raise ValueError(
        f"{path}: bare B/I tags but the entity type cannot be inferred from folder {folder!r} "
        f"(known: {', '.join(sorted(FOLDER_ENTITY_TYPES))}): name the folder after its corpus, write typed tags "
        "(B-TYPE/I-TYPE), or give the type (entity_type=...; `biozoo finetune ner --entity-type TYPE`; `biozoo "
        "evaluate` reads them as the model's type when it tags one type)"
    )


def tag_kind(tag):
    """What an IOB tag is: 'O', 'bare' (``B``, ``I``), 'typed' (``B-TYPE``, ``I-TYPE``) or None (not
    an IOB tag: ``E-X``, ``X``, a non-string...)."""
    if not isinstance(tag, str):
        return None
    if tag == "O":
        return "O"
    if tag in ("B", "I"):
        return "bare"
    if tag[:2] in ("B-", "I-") and len(tag) > 2:
        return "typed"
    return None


def read_ner(path, entity_type=None, fmt="auto") -> list[Sentence]:
    """Read an NER file into sentences (see the module doc for formats and typing rules).

    Args:
        path: the file.
        entity_type: type given to bare ``B``/``I`` tags; default: inferred from the folder.
        fmt: ``"auto"``, ``"tsv"``, ``"blurb"`` or ``"biobert"``.

    Returns:
        list of :class:`Sentence` with ``line`` = 1-based line of the first token.
    """
    if fmt not in NER_FORMATS:
        raise ValueError(f"unknown NER format {fmt!r}; expected one of {', '.join(NER_FORMATS)}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no NER file at {path}")
    sentences: list[Sentence] = []
    words: list[str] = []
    tags: list[str] = []
    first_line = 0
    style = None  # 'bare' or 'typed', fixed by the first non-O tag
    style_line = 0
    resolved = fmt
    bare_type = _KEEP if entity_type is None else entity_type
    need_inference = entity_type is None

    def flush():
        nonlocal words, tags
        if words:
            sentences.append(Sentence(words, tags, str(path), first_line))
            words, tags = [], []

    for lineno, raw in text_lines(path):
        line = raw.rstrip("\r\n")
        if not line.strip(" \t"):
            flush()
            continue
        if _fields(line)[0] == "-DOCSTART-":
            flush()
            continue
        if resolved == "auto":
            resolved = "tsv" if len(line.split("\t")) == 2 else "biobert"
        if resolved in ("tsv", "blurb"):
            cols = line.split("\t")
            if len(cols) != 2:
                raise DataFormatError(
                    f"{path}:{lineno}: expected 'token<TAB>tag' (2 tab-separated columns), "
                    f"got {len(cols)} column(s): {line!r}"
                )
            word, tag = cols[0], cols[1].strip(" \t")
        else:
            cols = _fields(line)
            if len(cols) < 2:
                raise DataFormatError(
                    f"{path}:{lineno}: expected 'word ... label' (at least 2 fields separated by spaces or "
                    f"tabs), got {len(cols)}: {line!r}"
                )
            word, tag = cols[0], cols[-1]
        if not word.strip():
            raise DataFormatError(f"{path}:{lineno}: empty token: {line!r}")
        if not tag:
            raise DataFormatError(f"{path}:{lineno}: empty label: {line!r}")
        kind = tag_kind(tag)
        if kind is None:
            raise DataFormatError(
                f"{path}:{lineno}: label {tag!r} is not O, B, I, B-TYPE or I-TYPE: {line!r}"
            )
        if kind != "O":
            if resolved == "blurb" and kind == "typed":
                raise DataFormatError(
                    f"{path}:{lineno}: typed label {tag!r} in a BLURB file (bare B/I/O expected); "
                    "use fmt='tsv' for typed IOB2 files"
                )
            if style is None:
                style, style_line = kind, lineno
            elif kind != style:
                raise DataFormatError(
                    f"{path}:{lineno}: {kind} label {tag!r} in a file whose labels are {style} "
                    f"(since line {style_line}); a file may not mix bare and typed tags"
                )
            if kind == "bare":
                if need_inference:
                    try:
                        inferred = infer_entity_type(path)
                    except ValueError as error:
                        raise DataFormatError(f"{path}:{lineno}: {error}") from None
                    bare_type = _KEEP if inferred is None else inferred
                    need_inference = False
                if bare_type is not _KEEP:
                    tag = f"{tag}-{bare_type}"
        if not words:
            first_line = lineno
        words.append(word)
        tags.append(tag)
    flush()
    _read_iob1_as_iob2(sentences, path)
    return sentences


def _entity_starts(tags):
    """Per tag: "I" where an I- tag begins an entity (after O, the sentence start or another
    type), "B" where a B- tag follows O or the sentence start, else None."""
    found, previous = [], "O"
    for tag in tags:
        kind = tag[2:] if tag != "O" else None  # "" for a bare B / I
        before = previous[2:] if previous != "O" else None
        if tag[:1] == "I" and kind != before:
            found.append("I")
        elif tag[:1] == "B" and before is None:
            found.append("B")
        else:
            found.append(None)
        previous = tag
    return found


def _read_iob1_as_iob2(sentences, path):
    """IOB1 (an entity begins with I-; B- only splits two adjacent entities of one type) is
    converted to IOB2 (every entity begins with B-), saying so: a file whose entities begin
    with I- and never with B- after O. In an IOB2 file, an entity beginning with I- is read as
    conlleval reads it (an entity start) and kept, with a warning."""
    starts = [(sentence, _entity_starts(sentence.tags)) for sentence in sentences]
    by_i = [(sentence, i) for sentence, found in starts for i, kind in enumerate(found) if kind == "I"]
    if not by_i:
        return
    first = by_i[0][0].line + by_i[0][1]
    if any(kind == "B" for _, found in starts for kind in found):
        warnings.warn(DataWarning(
            f"{path}:{first}: {len(by_i)} entit{'y begins' if len(by_i) == 1 else 'ies begin'} with I- in an IOB2 "
            "file (first on this line); read as entity starts, as conlleval reads them"), stacklevel=3)
        return
    for sentence, i in by_i:
        sentence.tags[i] = "B" + sentence.tags[i][1:]
    warnings.warn(DataWarning(
        f"{path}: IOB1 tags (entities begin with I-, first at line {first}; none with B- after O): converted to "
        f"IOB2, {len(by_i)} I- tag(s) that begin an entity became B-"), stacklevel=3)


_SPLIT_NAMES = {
    "train": ("train",),
    "dev": ("dev", "devel"),
    "devel": ("devel", "dev"),
    "test": ("test",),
    "train_dev": ("train_dev",),
}


def find_split(data_dir, split, extensions=task_kind("ner").data_extensions) -> Path:
    """The file of ``split`` in ``data_dir``: ``<name>.tsv`` or ``<name>.txt`` (or other
    ``extensions``, e.g. ``(".json",)`` for QA), each also gzip-compressed (``<name>.tsv.gz``).
    ``data_dir`` may name an embedded corpus (``"ncbi-disease"``; see ``biozoo.data.embedded``).

    ``split`` is ``train``, ``dev``/``devel`` (aliases: both names are tried), ``test``, or
    ``train_dev`` (BioBERT's train+dev file, only when asked for by that name). Raises
    ``FileNotFoundError`` listing the files present when none matches, and ``ValueError``
    when several do (e.g. both ``dev.tsv`` and ``devel.tsv``).
    """
    data_dir = Path(resolve_data_path(data_dir))
    if split not in _SPLIT_NAMES:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(_SPLIT_NAMES)}")
    if not data_dir.is_dir():
        raise FileNotFoundError(f"no data folder at {data_dir}{packaged_names_hint(data_dir)}")
    candidates = [data_dir / f"{name}{ext}{gz}" for name in _SPLIT_NAMES[split] for ext in extensions
                  for gz in ("", ".gz")]
    found = [c for c in candidates if c.is_file()]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise ValueError(
            f"split {split!r} is ambiguous in {data_dir}: {', '.join(f.name for f in found)}; pass the file itself"
        )
    present = sorted(p.name for p in data_dir.iterdir() if p.is_file())
    raise FileNotFoundError(
        f"no {split!r} split in {data_dir}: looked for {', '.join(c.name for c in candidates)}; "
        f"files present: {', '.join(present) if present else '(none)'}"
    )
