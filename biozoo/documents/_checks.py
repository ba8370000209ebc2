"""Annotation checks every reader runs, and the placing of annotations into passages."""

from __future__ import annotations

from biozoo.documents.model import Annotation, Document, Passage

CONCEPT_ID_KEYS = ("identifier", "Identifier", "MESH", "MeSH", "NCBI Gene", "NCBI Taxonomy", "CUI")


def concept_id_from(infons: dict) -> str | None:
    """The concept id a BioC annotation's infons carry ("identifier", or a key such as "MESH")."""
    for key in CONCEPT_ID_KEYS:
        if infons.get(key) not in (None, ""):
            return infons[key]
    return None


def container(document: Document, annotation: Annotation) -> Passage | None:
    """The passage holding every span of the annotation, or None."""
    spans = annotation.spans()
    return document.passage_at(min(s for s, _ in spans), max(e for _, e in spans))


def place(document: Document, annotation: Annotation) -> None:
    """Put an input annotation into the passage that holds it, else at document level."""
    passage = container(document, annotation)
    (passage.annotations if passage is not None else document.annotations).append(annotation)


def annotation_problem(annotation: Annotation, passage: Passage | None = None,
                       text: str = "") -> str | None:
    """Why the annotation does not fit (None when it does): a passage's annotation is checked
    against that passage, a document-level one against the document's whole `text`."""
    low, high = (passage.offset, passage.end) if passage is not None else (0, len(text))
    label = f"annotation {annotation.start}-{annotation.end} {annotation.text!r}"
    for start, end in annotation.spans():
        if not (isinstance(start, int) and isinstance(end, int)):
            return f"{label}: offsets are not integers"
        if start < low or end > high or start > end:
            where = f"passage {low}-{high}" if passage is not None else f"text (0-{high})"
            return f"{label}: offsets {start}-{end} are outside the {where}"
    if annotation.locations and len(annotation.locations) > 1:
        return None  # a discontinuous mention's text is its pieces joined some way: not checked
    if passage is not None:
        found = passage.text[annotation.start - passage.offset:annotation.end - passage.offset]
    else:
        found = text[annotation.start:annotation.end]
    if found != annotation.text:
        return f"{label} does not match the text there: {found!r}"
    return None


def document_problem(document: Document) -> str | None:
    """The first annotation (input or prediction) that does not fit the text, as a message."""
    for passage in document.passages:
        for annotation in passage.annotations:
            problem = annotation_problem(annotation, passage)
            if problem:
                return problem
    text = document.text if document.annotations or document.predictions else ""
    for annotation in document.annotations + document.predictions:
        problem = annotation_problem(annotation, text=text)
        if problem:
            return problem
    return None
