"""The document model every reader fills and every writer reads.

Offsets are document-level characters, as in BioC: a passage starts at `offset` and an
annotation's `start`/`end` (end exclusive) index the document's text, which is the passages
placed at their offsets. For PubTator the document text is `title + " " + abstract`.

    >>> doc = Document("1", [Passage(0, "Aspirin helps.", "title")])
    >>> doc.text_at(0, 7)
    'Aspirin'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# An abbreviation definition written as two annotations and, in BioC, a relation between them (as
# BioC's abbreviation corpora write it); the ShortForm's infons give its LongForm's offsets. Not
# entities: mention scores leave them out.
ABBREVIATION_TYPES = ("ShortForm", "LongForm")
ABBREVIATION_RELATION = "ABBR"
LONG_FORM_SPAN = ("long_form_start", "long_form_end")
# Formats whose documents are one text (title + " " + abstract) cut into passages: a model reads
# it whole, and a span may cross from title to abstract.
WHOLE_TEXT_FORMATS = ("pubtator", "pubmed-xml")
# A concept id field that gives no id (BC5CDR writes -1 for an unlinkable mention, PubTator "-"),
# and the prefix PubTator3 and HunFlair2 put before MeSH ids (BC5CDR does not).
NO_ID = ("", "-", "-1", None)
MESH_PREFIX = "MESH:"


@dataclass
class Annotation:
    """One mention. `locations` holds every (start, end) of a discontinuous BioC mention; the
    first one is also `start`/`end`. `model` names the model that predicted it (None: it came
    with the input).

    Example:
        >>> Annotation(0, 7, "Chemical", "Aspirin", concept_id="MESH:D001241").spans()
        [(0, 7)]
    """

    start: int
    end: int
    type: str
    text: str
    score: float | None = None
    model: str | None = None
    concept_id: str | None = None
    id: str | None = None
    infons: dict = field(default_factory=dict)
    locations: list[tuple[int, int]] | None = None

    def spans(self) -> list[tuple[int, int]]:
        return list(self.locations) if self.locations else [(self.start, self.end)]


@dataclass
class Relation:
    """A relation as the input gave it (PubTator relation lines, BioC relations), kept for output.

    Example (PubTator writes a relation as its type and its two ends' concept ids):
        >>> doc = Document("1", [Passage(0, "Aspirin causes ulcers.", "title", annotations=[
        ...     Annotation(0, 7, "Chemical", "Aspirin", concept_id="D001241", id="T1"),
        ...     Annotation(15, 21, "Disease", "ulcers", concept_id="D014456", id="T2")])])
        >>> doc.relations.append(Relation({"type": "CID"}, [("T1", "Chemical"), ("T2", "Disease")], id="R1"))
        >>> encode_documents([doc], "pubtator")[0].decode().strip().splitlines()[-1].split()
        ['1', 'CID', 'D001241', 'D014456']
    """

    infons: dict = field(default_factory=dict)
    nodes: list[tuple[str, str]] = field(default_factory=list)  # (refid, role)
    id: str | None = None
    raw: str | None = None  # the PubTator line, verbatim


@dataclass
class Passage:
    """A passage at `offset` (document characters), with the annotations and relations the
    input gave it.

    Example:
        >>> Passage(9, "It helps.", "abstract").end
        18
    """

    offset: int
    text: str
    type: str | None = None
    infons: dict = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)  # those the input had
    relations: list[Relation] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.offset + len(self.text)


@dataclass
class Collection:
    """A BioC collection's header. A BioC reader sets one shared object on every document of a
    file (`Document.collection`); a BioC writer writes the first document's (or a new one).

    Example:
        >>> header = Collection(source="PubMed", date="20261128", key="collection.key")
        >>> xml = encode_documents([Document("1", [Passage(0, "Aspirin.")])], "bioc-xml", collection=header)[0]
        >>> xml.decode().splitlines()[1:4]
        ['<collection><source>PubMed</source>', '<date>20261128</date>', '<key>collection.key</key>']
    """

    source: str = ""
    date: str = ""
    key: str = ""
    infons: dict = field(default_factory=dict)


@dataclass
class Document:
    """A document: its passages, what the input annotated, and what models found (`predictions`).

    Example:
        >>> doc = Document("1", [Passage(0, "Aspirin.", "title"), Passage(9, "It helps.", "abstract")])
        >>> doc.text
        'Aspirin. It helps.'
        >>> doc.predictions.append(Annotation(0, 7, "Chemical", doc.text_at(0, 7), model="bc5cdr"))
    """

    id: str
    passages: list[Passage]
    infons: dict = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)  # input's, not in a passage
    relations: list[Relation] = field(default_factory=list)
    predictions: list[Annotation] = field(default_factory=list)  # what models found
    source: str | None = None  # "file:line" or "file PMID ..." for error messages
    source_format: str | None = None  # the format it was read from ("pubtator", "bioc-xml", ...)
    # the BioC collection header of its file (not content: left out of == and repr)
    collection: Collection | None = field(default=None, compare=False, repr=False)

    def existing_annotations(self) -> list[Annotation]:
        """Every annotation the input carried (passage-level ones first, in passage order)."""
        return [a for p in self.passages for a in p.annotations] + list(self.annotations)

    def overlapping_passages(self) -> tuple[Passage, Passage] | None:
        """The first two passages (in offset order) whose offsets overlap, or None."""
        passages = sorted(self.passages, key=lambda p: p.offset)
        return next(((before, after) for before, after in zip(passages, passages[1:]) if after.offset < before.end),
                    None)

    def passage_at(self, start: int, end: int) -> Passage | None:
        for passage in self.passages:
            if passage.offset <= start and end <= passage.end:
                return passage
        return None

    def text_at(self, start: int, end: int) -> str:
        """The text of [start, end); raises ValueError naming the document when no passage
        holds the span (a PubTator document's span may cross from title to abstract)."""
        passage = self.passage_at(start, end)
        if passage is None and self.whole_text and 0 <= start <= end <= len(self.text):
            return self.text[start:end]  # title + " " + abstract is one text: a span may cross it
        if passage is None or start > end:
            raise ValueError(f"document {self.id}: offsets {start}-{end} are outside every passage "
                             f"({', '.join(f'{p.offset}-{p.end}' for p in self.passages)})")
        return passage.text[start - passage.offset:end - passage.offset]

    @property
    def whole_text(self) -> bool:
        """Whether the document is one text cut into passages (`WHOLE_TEXT_FORMATS`)."""
        return self.source_format in WHOLE_TEXT_FORMATS

    @property
    def text(self) -> str:
        """The passages at their offsets, gaps filled with spaces (PubTator: title + " " + abstract)."""
        parts, position = [], 0
        for passage in sorted(self.passages, key=lambda p: p.offset):
            if passage.offset > position:
                parts.append(" " * (passage.offset - position))
                position = passage.offset
            if passage.offset < position:  # overlapping passages: text_at() is the authority
                continue
            parts.append(passage.text)
            position = passage.end
        return "".join(parts)


# between the ids of one mention: "|" (PubTator, NCBI-disease), "," (BioRED), ";" (GNormPlus's composite genes)
ID_SEPARATORS = re.compile(r"[|,;]")
# Variant ids hold "|" and ";" themselves: tmVar's "p|SUB|V|600|E", PubTator3's
# "tmVar:p|SUB|V|600|E;HGVS:p.V600E;VariantGroup:0;CorrespondingGene:673;RS#:113488022",
# "RS#:121908192;HGVS:c.581G>A;CorrespondingGene:2671", "p.F83S;CorrespondingGene:5290"
VARIANT_ID = re.compile(r"(tmVar:)?[cgmnpr]\|[A-Z]+\||(tmVar|HGVS|RS#|CA#|Variant|CorrespondingGene|VariantGroup):")
VARIANT_CONTEXT = ("VariantGroup:", "CorrespondingGene:")  # the variant's group and gene, not the variant


def split_ids(value):
    """The ids of a concept id field in order ("D001|MESH:D002" -> ["D001", "D002"]); [] for no id.
    A variant's id field is split at ";" and "," only, less the variant's group and gene
    ("tmVar:p|SUB|V|600|E;HGVS:p.V600E;VariantGroup:0" -> ["p|SUB|V|600|E", "HGVS:p.V600E"], as
    older PubTator files write the first)."""
    if value in NO_ID:
        return []
    text = str(value)
    variant = any(VARIANT_ID.match(part.strip()) for part in re.split(r"[;,]", text))
    parts = (part.strip() for part in (re.split(r"[;,]", text) if variant else ID_SEPARATORS.split(text)))
    parts = [part for part in parts if part not in NO_ID and not part.startswith(VARIANT_CONTEXT)]
    for prefix in (MESH_PREFIX, "tmVar:"):
        parts = [part[len(prefix):] if part.upper().startswith(prefix.upper()) else part for part in parts]
    return parts


def ids_of(value):
    """The set of ids in a concept id field ("D001|MESH:D002" -> {"D001", "D002"}); empty for no id."""
    return frozenset(split_ids(value))
