"""Annotation checks every reader runs, and the placing of annotations into passages."""

from __future__ import annotations

from biozoo.documents.model import Annotation, Document, Passage
from biozoo.errors import DataFormatError, DataWarning

CONCEPT_ID_KEYS = ("identifier", "Identifier", "MESH", "MeSH", "NCBI Gene", "NCBI Taxonomy", "CUI")


def concept_id_from(infons: dict) -> str | None:
    """The concept id a BioC annotation's infons carry ("identifier", or a key such as "MESH");
    "" for an empty "identifier" (a PubTator line's empty id column, kept for its round trip)."""
    for key in CONCEPT_ID_KEYS:
        if infons.get(key) not in (None, ""):
            return infons[key]
    return "" if infons.get("identifier") == "" else None


def container(document: Document, annotation: Annotation) -> Passage | None:
    """The passage holding every span of the annotation, or None."""
    spans = annotation.spans()
    return document.passage_at(min(s for s, _ in spans), max(e for _, e in spans))


def place(document: Document, annotation: Annotation) -> None:
    """Put an input annotation into the passage that holds it, else at document level."""
    passage = container(document, annotation)
    (passage.annotations if passage is not None else document.annotations).append(annotation)


def annotation_problem(annotation: Annotation, passage: Passage | None = None,
                       text: str = "", check_text: bool = True) -> str | None:
    """Why the annotation does not fit (None when it does): a passage's annotation is checked
    against that passage, a document-level one against the document's whole `text`; with
    `check_text=False` only its offsets are (see `text_mismatch`)."""
    low, high = (passage.offset, passage.end) if passage is not None else (0, len(text))
    label = f"annotation {annotation.start}-{annotation.end} {annotation.text!r}"
    for start, end in annotation.spans():
        if not (isinstance(start, int) and isinstance(end, int)):
            return f"{label}: offsets are not integers"
        if start < low or end > high or start > end:
            where = f"passage {low}-{high}" if passage is not None else f"text (0-{high})"
            return f"{label}: offsets {start}-{end} are outside the {where}"
    return text_mismatch(annotation, passage, text) if check_text else None


def text_mismatch(annotation: Annotation, passage: Passage | None = None, text: str = "") -> str | None:
    """When an annotation (whose offsets fit) has a text that differs from the document's at its
    offsets, say so; else None. Real corpora have such quirks (case, quotes, a span shorter
    than its mention)."""
    if annotation.locations and len(annotation.locations) > 1:
        return None  # a discontinuous mention's text is its pieces joined some way: not checked
    if passage is not None:
        found = passage.text[annotation.start - passage.offset:annotation.end - passage.offset]
    else:
        found = text[annotation.start:annotation.end]
    if found != annotation.text:
        return (f"annotation {annotation.start}-{annotation.end} {annotation.text!r} does not match the text there: "
                f"{found!r}")
    return None


KEEP_MISMATCHED = "keep"  # a readers' `strict`: an annotation whose text differs is kept, with a warning


def refuses(strict) -> bool:
    """Does a readers' `strict` (False, True or KEEP_MISMATCHED) refuse a document whose annotation's
    text differs from the document's at its offsets?"""
    return bool(strict) and strict != KEEP_MISMATCHED


def quirk_warning(where: str, mismatch: str, strict=False) -> DataWarning:
    if strict == KEEP_MISMATCHED:
        return DataWarning(f"{where}: {mismatch}: that annotation is kept, at its offsets")
    return DataWarning(f"{where}: {mismatch}: that annotation is dropped, the document kept (--strict refuses "
                       "the document)")


def fit_annotations(document: Document, where: str, strict=False) -> list[DataWarning]:
    """Check the annotations a reader put into `document` against its text. Offsets that do not
    fit raise DataFormatError; an annotation whose text differs from the document's there is
    dropped, with a warning (returned; `strict=True`: raised instead; `strict=KEEP_MISMATCHED`:
    kept, with the warning). Predictions (a biozoo output read back) must fit exactly."""
    warnings = []
    full = document.text if document.annotations or document.predictions else ""

    def keep(annotation, passage, text):
        problem = annotation_problem(annotation, passage, text, check_text=False)
        if problem:
            raise DataFormatError(f"{where}: {problem}", document.id)
        mismatch = text_mismatch(annotation, passage, text)
        if mismatch is None:
            return True
        if refuses(strict):
            raise DataFormatError(f"{where}: {mismatch}", document.id)
        warnings.append(quirk_warning(where, mismatch, strict))
        return strict == KEEP_MISMATCHED

    for passage in document.passages:
        passage.annotations = [a for a in passage.annotations if keep(a, passage, "")]
    document.annotations = [a for a in document.annotations if keep(a, None, full)]
    for prediction in document.predictions:
        problem = annotation_problem(prediction, text=full)
        if problem:
            raise DataFormatError(f"{where}: {problem}", document.id)
    return warnings


def encoded(document: Document, format_name: str, encode, on_unwritable=None):
    """`encode()`: `document` in `format_name`, encoded before anything of it is written. Where the
    format cannot hold it (a lone surrogate, a character XML cannot hold, input annotations beside
    predictions in PubTator...), a ValueError naming the document and where it came from is
    raised, or, with `on_unwritable`, handed to `on_unwritable(document, error)` and None
    returned: the document is left out."""
    try:
        return encode()
    except (AttributeError, TypeError, ValueError) as error:  # a value of a type the format does not take
        error = ValueError(f"document {document.id} ({document.source}): cannot be written as {format_name}: {error}")
        if on_unwritable is None:
            raise error from None
        on_unwritable(document, error)
        return None
