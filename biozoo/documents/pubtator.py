"""PubTator: `PMID|t|title`, `PMID|a|abstract`, `PMID<TAB>start<TAB>end<TAB>mention<TAB>type[<TAB>id]`
annotation lines, `PMID<TAB>type<TAB>id1<TAB>id2` relation lines, a blank line after each document.

Own streaming parser, not `bioc.pubtator`: bioc 2.1 strips every line (NCBI-disease abstracts
end in a space, so offsets after a lost character would shift), reads a 5-column annotation
(no concept id) as a relation, and prints bad lines instead of raising with a line number.

The text is `title + " " + abstract`; the title passage (type "title") is at 0, the abstract
passage (type "abstract", present when the file has an `|a|` line) at `len(title) + 1`. A
concept id column is kept verbatim ("-", "-1", "D1|D2"; None when the column is absent), extra
columns in the infon "pubtator_extra", relation lines verbatim in `Relation.raw`: what is read
is written back as it was, except the layout: the writer writes a document's annotation lines
as three runs, the title's, the abstract's and those crossing from title to abstract, each in
input order, merged by start offset (an abstract line read before a title line comes after it),
then its relation lines, with "\n" line ends and a blank line after every document. A file laid
out so (as PubTator's are: annotation lines in offset order) comes back byte for byte.

PubTator has no mark for a prediction: the writer writes a document's predictions, or, when it
has none, the input's annotations, as annotation lines. It refuses a document that has both,
and, for an annotate run's output (`annotate_run`), one with any input annotation or relation:
the input's (gold) annotations would read back as predictions.
"""

from __future__ import annotations

import heapq
import re

from biozoo.documents._checks import (
    KEEP_MISMATCHED,
    annotation_problem,
    container,
    encoded,
    quirk_warning,
    refuses,
    text_mismatch,
)
from biozoo.documents.model import Annotation, Document, Passage, Relation
from biozoo.errors import DataFormatError

TITLE_OR_ABSTRACT = re.compile(r"([^|\t]*)\|([ta])\|(.*)\Z", re.S)
RELATION_TYPE = re.compile(r"[^\W\d_]")  # a relation line's second column (CID, Association...) starts with a letter
EXTRA = "pubtator_extra"


def _int(value):
    try:
        return int(value)
    except ValueError:
        return None


class _Block:
    """The lines of one document while it is read."""

    def __init__(self, name, lineno, pmid, known=True):
        self.name, self.lineno, self.pmid = name, lineno, pmid
        # the document's id where a title or abstract line (or a readable PMID) gave it, for errors
        self.document_id = pmid if known and pmid.strip() and pmid != "?" else None
        self.title = self.abstract = None
        self.annotations, self.relations, self.error = [], [], None

    def fail(self, lineno, message):
        if self.error is None:
            self.error = f"{self.name}:{lineno}: PMID {self.pmid}: {message}"

    def add_line(self, lineno, line):
        fields = line.split("\t")
        if fields[0] != self.pmid:
            return self.fail(lineno, f"a line of PMID {fields[0]!r} inside this document: {line[:80]!r}")
        start, end = (_int(fields[1]), _int(fields[2])) if len(fields) >= 3 else (None, None)
        if len(fields) >= 3 and not RELATION_TYPE.match(fields[1]) and (start is None or end is None):
            bad = [f"{what} {value!r}" for what, value, number in (("start", fields[1], start), ("end", fields[2], end))
                   if number is None]
            return self.fail(lineno, f"malformed line: an annotation whose {' and '.join(bad)} is not an integer: "
                                     f"{line[:80]!r}")
        if len(fields) >= 5 and start is not None and end is not None:
            concept_id = fields[5] if len(fields) >= 6 else None
            infons = {EXTRA: "\t".join(fields[6:])} if len(fields) > 6 else {}
            annotation = Annotation(start, end, fields[4], fields[3], concept_id=concept_id, infons=infons)
            self.annotations.append((lineno, annotation))
        elif len(fields) >= 4 and start is None:
            infons = {"type": fields[1], "role1": fields[2], "role2": fields[3]}
            if len(fields) > 4:
                infons[EXTRA] = "\t".join(fields[4:])
            self.relations.append(Relation(infons=infons, raw=line))
        else:
            self.fail(lineno, "malformed line (expected PMID|t|, PMID|a|, an annotation "
                              f"PMID start end mention type [id], or a relation line): {line[:80]!r}")

    def finish(self, strict=False):
        """[the Document after a DataWarning per annotation dropped for a quirk], or [the
        DataFormatError that says what is wrong with it]."""
        if self.error is None and self.title is None:
            self.fail(self.lineno, "no title line (PMID|t|...)")
        if self.error is not None:
            return [DataFormatError(self.error, self.document_id)]
        passages = [Passage(0, self.title, "title", {"type": "title"})]
        if self.abstract is not None:
            passages.append(Passage(len(self.title) + 1, self.abstract, "abstract", {"type": "abstract"}))
        document = Document(self.pmid, passages, relations=self.relations,
                            source=f"{self.name}:{self.lineno}", source_format="pubtator")
        text, warnings = None, []
        for lineno, annotation in self.annotations:
            passage = container(document, annotation)
            if passage is None and text is None:
                text = document.text
            where = f"{self.name}:{lineno}: PMID {self.pmid}"
            problem = annotation_problem(annotation, passage, text, check_text=False)
            mismatch = None if problem else text_mismatch(annotation, passage, text)
            if problem or (mismatch and refuses(strict)):
                return [DataFormatError(f"{where}: {problem or mismatch}", self.document_id)]
            if mismatch:
                warnings.append(quirk_warning(where, mismatch, strict))
                if strict != KEEP_MISMATCHED:
                    continue
            (passage.annotations if passage is not None else document.annotations).append(annotation)
        return warnings + [document]


def _decode(raw: bytes, name, lineno):
    line = raw.decode("utf-8")
    if line.endswith("\n"):
        line = line[:-1]
    if line.endswith("\r"):
        line = line[:-1]
    return line.lstrip("\ufeff") if lineno == 1 else line


def read_pubtator(stream, name, strict=False):
    """Yield each Document of a PubTator byte stream, or a DataFormatError (naming file:line
    and PMID) in place of a malformed one. An annotation whose text differs from the
    document's at its offsets is dropped, after a DataWarning naming it (`strict`: the
    document is refused instead)."""
    block = None
    for lineno, raw in enumerate(stream, 1):
        try:
            line = _decode(raw, name, lineno)
        except UnicodeDecodeError as error:
            if block is None:  # the PMID before the first "|" or tab is ASCII in a readable line
                pmid = re.split(rb"[|\t]", raw, maxsplit=1)[0].decode("utf-8", "replace").strip()
                block = _Block(name, lineno, pmid if pmid.isdigit() else "?")
            block.fail(lineno, f"not UTF-8 ({error.reason} at byte {error.start})")
            continue
        if not line.strip():
            if block is not None:
                yield from block.finish(strict)
            block = None
            continue
        match = TITLE_OR_ABSTRACT.match(line)
        if match and match.group(2) == "t":
            if block is not None:  # no blank line between two documents: tolerated
                yield from block.finish(strict)
            block = _Block(name, lineno, match.group(1))
            block.title = match.group(3)
            if not block.pmid.strip():
                block.fail(lineno, "empty PMID")
        elif match:
            pmid, text = match.group(1), match.group(3)
            if block is None:
                block = _Block(name, lineno, pmid)
                block.fail(lineno, "abstract line before the title line")
            elif pmid != block.pmid:
                block.fail(lineno, f"abstract of PMID {pmid!r} after the title of PMID {block.pmid}")
            elif block.abstract is not None:
                block.fail(lineno, "a second abstract line")
            else:
                block.abstract = text
        else:
            if block is None:
                block = _Block(name, lineno, line.split("\t")[0][:20], known=False)
                block.fail(lineno, f"line before any title line (PMID|t|...): {line[:80]!r}")
            block.add_line(lineno, line)
    if block is not None:
        yield from block.finish(strict)


# ------------------------------------------------------------------------------------ writing


def _one_line(text: str, what: str = "a column") -> str:
    """PubTator lines cannot hold line breaks, nor tabs in a column: spaces, same length (in the
    title and abstract too, so that a mention's text stays the document's at its offsets).
    Raises TypeError for a value that is no string (`what` names it)."""
    if not isinstance(text, str):
        raise TypeError(f"{what} {text!r} is not a string ({type(text).__name__})")
    return text.replace("\r", " ").replace("\n", " ").replace("\t", " ")


def title_and_abstract(document: Document) -> tuple[str, str | None]:
    """The document's text as PubTator's title and abstract, keeping every offset: the first
    passage is the title when a gap follows it, the rest of the text (gaps as spaces) after that
    gap is the abstract. None for the abstract of a title-only PubTator document."""
    passages = sorted(document.passages, key=lambda p: p.offset)
    if len(passages) == 1 and passages[0].type == "title" and passages[0].offset == 0:
        return _one_line(passages[0].text), None
    full = document.text
    if len(passages) > 1 and passages[0].offset == 0 and passages[1].offset > passages[0].end:
        title = passages[0].text
    else:
        title = full
    return _one_line(title), _one_line(full[len(title) + 1:])


def _annotation_line(pmid, annotation, text):
    spans = annotation.locations
    if spans and len(spans) > 1:  # PubTator has no discontinuous mentions: the covering span
        start, end = min(s for s, _ in spans), max(e for _, e in spans)
        mention = text[start:end]
    else:
        start, end, mention = annotation.start, annotation.end, annotation.text
    label = f"annotation {start}-{end}"
    columns = [pmid, str(start), str(end), _one_line(mention, f"{label}: its text"),
               _one_line(annotation.type, f"{label}: its type")]
    extra = annotation.infons.get(EXTRA)
    if annotation.concept_id is not None or extra is not None:
        columns.append(_one_line(annotation.concept_id or "", f"{label}: its concept id"))
    if extra is not None:
        columns.append(_extra(extra, f"{label}: its infon {EXTRA}"))
    return "\t".join(columns)


def _extra(columns: str, what: str) -> str:
    """The columns after PubTator's own, as read (tabs kept), on one line."""
    if not isinstance(columns, str):
        raise TypeError(f"{what} {columns!r} is not a string ({type(columns).__name__})")
    return columns.replace("\r", " ").replace("\n", " ")


def _relation_line(pmid, relation, concept_ids):
    """PubTator's `PMID type id1 id2`: the ends are concept ids (a BioC relation's nodes name
    annotations: `concept_ids` maps each annotation id to its concept id, None without one)."""
    if relation.raw is not None:
        return relation.raw
    infons = relation.infons
    if "role1" in infons or "role2" in infons:
        ends = [infons.get("role1", ""), infons.get("role2", "")]
    else:
        without = [refid for refid, _ in relation.nodes if refid in concept_ids and not concept_ids[refid]]
        if without:
            raise ValueError(f"relation {relation.id or ''} links annotation {without[0]}, which has no concept id: a "
                             "PubTator relation line names its ends by concept id: write jsonl or BioC")
        ends = [concept_ids.get(refid) or refid for refid, _ in relation.nodes]
    kind = infons.get("type") or infons.get("relation") or ""
    if not RELATION_TYPE.match(kind) or len(ends) != 2 or not all(ends):
        raise ValueError(f"relation {relation.id or ''} (infons {infons}, {len(ends)} ends) is not a PubTator relation "
                         "line `PMID type id1 id2` (a type that starts with a letter, two ends): write jsonl or BioC")
    label = f"relation {relation.id or ''}"
    columns = [pmid, _one_line(kind, f"{label}: its type"), *(_one_line(end, f"{label}: an end") for end in ends)]
    if EXTRA in infons:
        columns.append(_extra(infons[EXTRA], f"{label}: its infon {EXTRA}"))
    return "\t".join(columns)


def pubtator_block(document: Document) -> str:
    """One document in PubTator, ending with its blank line. Raises ValueError saying what PubTator
    cannot hold (input annotations beside predictions, overlapping passages, a relation that is
    no PubTator relation line); `write_pubtator` names the document."""
    pmid = document.id
    if any(c in pmid for c in "|\t\r\n") or not pmid:
        raise ValueError(f"its id {pmid!r} cannot be a PubTator PMID (empty, or has | or a tab)")
    overlap = document.overlapping_passages()
    if overlap is not None:
        before, after = overlap
        raise ValueError(f"its passages overlap ({before.type or 'passage'} at {before.offset}-{before.end}, "
                         f"{after.type or 'passage'} at {after.offset}-{after.end}); PubTator's one title and "
                         "abstract cannot hold them at their offsets: write jsonl or BioC")
    existing = document.existing_annotations()
    if existing and document.predictions:
        raise ValueError("PubTator output cannot keep the input's annotations apart from the predictions; "
                         "drop the input's annotations (--drop-existing) or write jsonl or BioC")
    title, abstract = title_and_abstract(document)
    lines = [f"{pmid}|t|{title}"]
    if abstract is not None:
        lines.append(f"{pmid}|a|{abstract}")
    if existing:  # in input order within each passage, merged by start
        groups = [p.annotations for p in sorted(document.passages, key=lambda p: p.offset)]
        annotations = heapq.merge(*groups, document.annotations, key=lambda a: a.start)
    else:
        annotations = sorted(document.predictions, key=lambda a: (a.start, a.end))
    text = title + " " + (abstract or "")
    lines += [_annotation_line(pmid, a, text) for a in annotations]
    relations = document.relations + [r for p in document.passages for r in p.relations]
    concept_ids = {a.id: a.concept_id for a in existing if a.id is not None}
    lines += [_relation_line(pmid, r, concept_ids) for r in relations]
    return "\n".join(lines) + "\n\n"


def annotate_run_refusal(document: Document) -> ValueError | None:
    """Why an annotate run's PubTator output cannot hold `document` (it carries input annotations
    or relations, which would read back as predictions), naming it; None when it can."""
    existing = document.existing_annotations()
    relations = document.relations + [r for p in document.passages for r in p.relations]
    if not existing and not relations:
        return None
    what = f"{len(existing)} input annotation(s)" if existing else f"{len(relations)} input relation(s)"
    return ValueError(f"document {document.id} ({document.source}) carries {what}: the PubTator output of an "
                      "annotate run holds its predictions only (PubTator cannot keep the input's annotations "
                      "apart, and they would read back as predictions); drop them with --drop-existing, or "
                      "write jsonl or BioC")


def write_pubtator(documents, out, on_unwritable=None, annotate_run=False) -> int:
    """Write documents to a binary stream; the number written (`on_unwritable`: as
    `biozoo.documents.write_documents`). With `annotate_run` (the documents are an annotate run's
    output), a document that carries input annotations or relations raises ValueError (see
    `annotate_run_refusal`), `on_unwritable` or not: the run's options are at fault, not the document."""
    count = 0
    for document in documents:
        refusal = annotate_run_refusal(document) if annotate_run else None
        if refusal is not None:
            raise refusal
        block = encoded(document, "PubTator", lambda: pubtator_block(document).encode("utf-8"), on_unwritable)
        if block is not None:
            out.write(block)
            count += 1
    return count
