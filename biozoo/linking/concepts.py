"""The concept table every dictionary reader fills and the linker reads.

A `Dictionary` holds concepts (id, preferred name, synonyms, type, the taxon for genes, and
the alternate ids a source merged into the concept, such as CTD's AltDiseaseIDs) with the
dictionary's name and version. Its `names()` are every (name, concept) pair, each name once
per concept, grouped by taxon so that one taxon's names are contiguous (genes are
searched within a taxon). The table is written and read as a gzipped TSV (the cached form).

    >>> table = Dictionary([Concept("D003920", "Diabetes Mellitus", ("diabetes",), "Disease")], "mine", "1")
    >>> table.names()
    NameTable(names=['Diabetes Mellitus', 'diabetes'], concepts=array([0, 0], dtype=int32), ...)
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import zlib

import numpy as np

from biozoo._io import atomic_binary_file
from biozoo.errors import DataFormatError

TABLE_COLUMNS = ("id", "type", "taxon", "name", "synonyms", "alt_ids")  # synonyms, alt_ids: JSON lists
OLD_TABLE_COLUMNS = TABLE_COLUMNS[:5]  # tables written before alt_ids: read with alt_ids=()


@dataclasses.dataclass(frozen=True)
class Concept:
    """One concept: `id` (as the source writes it, e.g. "D003920", "OMIM:222100", "7157",
    "CVCL_0030"), its preferred `name`, its other names, its entity `type`, for genes,
    cell lines and species its NCBI `taxon` id, and `alt_ids`: other ids of the same concept
    (CTD's AltDiseaseIDs: OMIM ids, retired MeSH ids merged into it). Annotations write `id`;
    a gold id among `all_ids()` counts as correct in evaluation (SapBERT's `check_label`).

    Example:
        >>> Concept("D009203", "Myocardial Infarction", ("heart attack",), "Disease").all_names()
        ['Myocardial Infarction', 'heart attack']
    """

    id: str
    name: str
    synonyms: tuple = ()
    type: str | None = None
    taxon: str | None = None
    alt_ids: tuple = ()

    def all_names(self):
        """The preferred name, then the synonyms, each once (case kept)."""
        return list(dict.fromkeys([self.name, *self.synonyms]))

    def all_ids(self):
        """`id`, then `alt_ids`, joined by "|" (BioSyn's `ID|AltIDs` concept label)."""
        return "|".join([self.id, *self.alt_ids])


@dataclasses.dataclass
class NameTable:
    """Every name of a dictionary: `names[i]` names concept `concepts[i]` (an index into
    `Dictionary.concepts`); `taxon_ranges` maps a taxon to its contiguous rows `(start, end)`."""

    names: list
    concepts: np.ndarray
    taxon_ranges: dict

    def __len__(self):
        return len(self.names)


class Dictionary:
    """A concept table: `concepts` (a list of `Concept`), with the dictionary's `name`,
    `version` and where it came from (`source`: URLs or a path, for provenance).

    Example:
        >>> table = Dictionary([Concept("D009203", "Myocardial Infarction", ("heart attack",))], "diseases", "1")
        >>> table.label, table.names().names
        ('diseases@1', ['Myocardial Infarction', 'heart attack'])

    `Dictionary.read_tsv("concepts.tsv.gz")` reads one from a file, `load_dictionary` by name.
    """

    def __init__(self, concepts, name, version, source=None):
        self.concepts = list(concepts)
        self.name, self.version, self.source = name, str(version), source
        self._names = None
        self._by_id = None

    def __len__(self):
        return len(self.concepts)

    def __repr__(self):
        return f"Dictionary({self.name!r}, version {self.version!r}, {len(self.concepts)} concepts)"

    @property
    def label(self):
        """`name@version`: what a linked annotation records as its dictionary."""
        return f"{self.name}@{self.version}"

    def concept(self, concept_id):
        """The concept with this id (KeyError naming the dictionary when there is none)."""
        if self._by_id is None:
            self._by_id = {c.id: i for i, c in enumerate(self.concepts)}
        try:
            return self.concepts[self._by_id[concept_id]]
        except KeyError:
            raise KeyError(f"{concept_id!r} is not a concept of {self.label}") from None

    def names(self):
        """The `NameTable` of every (name, concept) pair, rows grouped by taxon (concepts
        without one first), in dictionary order within a taxon."""
        if self._names is None:
            order = sorted(range(len(self.concepts)), key=lambda i: (self.concepts[i].taxon or "", i))
            names, owners, ranges = [], [], {}
            for i in order:
                concept = self.concepts[i]
                taxon = concept.taxon or ""
                start, _ = ranges.get(taxon, (len(names), None))
                for name in concept.all_names():
                    names.append(name)
                    owners.append(i)
                ranges[taxon] = (start, len(names))
            self._names = NameTable(names, np.asarray(owners, np.int32), ranges)
        return self._names

    def digest(self):
        """sha256 of the table's canonical TSV: the same concepts give the same digest. A table
        none of whose concepts has alt ids is hashed in the layout without the alt_ids column, so
        that its digest (the key of its cached indexes) is the one it had before that column."""
        columns = TABLE_COLUMNS if any(c.alt_ids for c in self.concepts) else OLD_TABLE_COLUMNS
        digest = hashlib.sha256()
        for line in self._lines(columns):
            digest.update(line.encode("utf-8"))
        return digest.hexdigest()

    def _lines(self, columns=TABLE_COLUMNS):
        yield f"# biozoo concept table\t{self.name}\t{self.version}\n"
        yield "\t".join(columns) + "\n"
        for c in self.concepts:
            fields = [c.id, c.type or "", c.taxon or "", c.name, json.dumps(list(c.synonyms), ensure_ascii=False)]
            if "alt_ids" in columns:
                fields.append(json.dumps(list(c.alt_ids), ensure_ascii=False))
            yield "\t".join(fields) + "\n"

    def write_tsv(self, path):
        """Write the table as a gzipped TSV, atomically (mtime 0: the same table, the same bytes)."""
        with atomic_binary_file(path) as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed:
            with io.TextIOWrapper(packed, encoding="utf-8", newline="\n") as out:
                out.writelines(self._lines())

    @classmethod
    def read_tsv(cls, path, source=None):
        """A table `write_tsv` wrote (one written before the alt_ids column too: its concepts get
        no alt ids); a malformed line, or a file that is not whole gzip, raises DataFormatError
        naming path (and line)."""
        try:
            return cls._read_tsv(path, source)
        except (EOFError, gzip.BadGzipFile, UnicodeDecodeError, zlib.error) as error:
            raise DataFormatError(f"{path}: not a whole gzipped concept table ({type(error).__name__}: {error}): "
                                  "remove it to build it again") from None

    @classmethod
    def _read_tsv(cls, path, source):
        with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
            header = f.readline().rstrip("\n").split("\t")
            if len(header) != 3 or header[0] != "# biozoo concept table":
                raise DataFormatError(f"{path}:1: not a biozoo concept table")
            columns = tuple(f.readline().rstrip("\n").split("\t"))
            if columns not in (TABLE_COLUMNS, OLD_TABLE_COLUMNS):
                raise DataFormatError(f"{path}:2: expected the columns {', '.join(TABLE_COLUMNS)} (or, in a table "
                                      f"written before alt_ids, {', '.join(OLD_TABLE_COLUMNS)}), got {', '.join(columns)}")
            concepts = []
            for lineno, line in enumerate(f, 3):
                fields = line.rstrip("\n").split("\t")
                if len(fields) != len(columns) or not fields[0] or not fields[3]:
                    raise DataFormatError(f"{path}:{lineno}: expected {len(columns)} columns with an id "
                                          f"and a name, got {line[:80]!r}")
                synonyms = _json_list(fields[4], path, lineno, "synonyms")
                alt_ids = _json_list(fields[5], path, lineno, "alt_ids") if len(columns) > 5 else ()
                concepts.append(Concept(fields[0], fields[3], synonyms, fields[1] or None, fields[2] or None, alt_ids))
        return cls(concepts, header[1], header[2], source=source or str(path))


def _json_list(text, path, lineno, column):
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, list):
        raise DataFormatError(f"{path}:{lineno}: the {column} column is not a JSON list")
    return tuple(value)


def merge_names(concepts):
    """Concepts with the same id merged (first preferred name kept, later names added as
    synonyms, alternate ids added), in first-seen order: readers whose rows repeat an id use it."""
    merged = {}
    for concept in concepts:
        seen = merged.get(concept.id)
        if seen is None:
            merged[concept.id] = concept
            continue
        extra = [n for n in concept.all_names() if n not in seen.all_names()]
        extra_ids = [i for i in concept.alt_ids if i not in seen.alt_ids]
        if extra or extra_ids:
            merged[concept.id] = dataclasses.replace(seen, synonyms=seen.synonyms + tuple(extra),
                                                     alt_ids=seen.alt_ids + tuple(extra_ids))
    return list(merged.values())


def clean_name(text):
    """A name with every run of whitespace (tabs and line breaks included) as one space, trimmed."""
    return " ".join(text.split())
