"""JSONL: one document per line.

Read: `{"id", "text"}` (one passage at 0; optional "annotations"/"predictions" are placed into
it), or the full model `{"id", "infons", "passages": [{"offset", "text", "type", "infons",
"annotations"}], "annotations", "predictions", "relations"}`. Written: the full model, the
input's annotations and the predictions apart. An annotation is `{"start", "end", "type",
"text", "score", "model", "concept_id", "id"}`, plus "locations" when discontinuous and
"infons" when it has any.
"""

from __future__ import annotations

import json
import re

from biozoo.documents._checks import encoded, fit_annotations, place
from biozoo.documents.model import Annotation, Document, Passage, Relation
from biozoo.errors import DataFormatError

_SURROGATE = re.compile("[\ud800-\udfff]")


class _Bad(ValueError):
    pass


def _annotation(obj) -> Annotation:
    if not isinstance(obj, dict):
        raise _Bad(f"an annotation must be an object, got {obj!r:.80}")
    missing = [key for key in ("start", "end", "type") if key not in obj]
    if missing:
        bioc = "locations" in obj and "start" not in obj  # BioC's, as a BioC JSON file a document a line has them
        raise _Bad(f"annotation {obj!r:.80} lacks {', '.join(missing)}" + (
            "; it is a BioC annotation: read the file as BioC JSON (--input-format bioc-json)" if bioc else ""))
    locations = obj.get("locations")
    if locations is not None:
        if not isinstance(locations, list) or not all(
                isinstance(span, list) and len(span) == 2 and all(_is_int(x) for x in span) for span in locations):
            raise _Bad(f"annotation {obj!r:.80}: locations must be [[start, end], ...] of integers")
        locations = [tuple(span) for span in locations]
    if not _is_int(obj["start"]) or not _is_int(obj["end"]):
        raise _Bad(f"annotation {obj!r:.80}: start and end must be integers")
    score = obj.get("score")
    if score is not None and (not isinstance(score, (int, float)) or isinstance(score, bool)):
        raise _Bad(f"annotation {obj!r:.80}: score must be a number")
    return Annotation(obj["start"], obj["end"], obj["type"], obj.get("text", ""), score=score,
                      model=obj.get("model"), concept_id=obj.get("concept_id"), id=obj.get("id"),
                      infons=dict(obj.get("infons") or {}), locations=locations or None)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _relation(obj) -> Relation:
    nodes = obj.get("nodes", []) if isinstance(obj, dict) else None
    if not isinstance(nodes, list) or not all(isinstance(node, list) and len(node) == 2 for node in nodes):
        raise _Bad(f"a relation must be an object whose nodes are [refid, role] pairs: {obj!r:.80}")
    return Relation(infons=dict(obj.get("infons") or {}), nodes=[tuple(n) for n in nodes],
                    id=obj.get("id"), raw=obj.get("raw"))


def _passage(obj) -> Passage:
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str) or not isinstance(obj.get("offset"), int):
        raise _Bad(f"a passage needs an integer offset and a text: {obj!r:.80}")
    return Passage(obj["offset"], obj["text"], obj.get("type"), dict(obj.get("infons") or {}),
                   [_annotation(a) for a in obj.get("annotations", [])],
                   [_relation(r) for r in obj.get("relations", [])])


def document_from_dict(obj, source=None) -> Document:
    """A Document from one parsed JSONL line; raises ValueError saying what is wrong."""
    if not isinstance(obj, dict):
        raise _Bad(f"expected a JSON object, got {type(obj).__name__}")
    if "passages" in obj:
        document = Document(str(obj["id"]) if "id" in obj else None, [_passage(p) for p in obj["passages"]],
                            infons=dict(obj.get("infons") or {}),
                            annotations=[_annotation(a) for a in obj.get("annotations", [])])
    elif isinstance(obj.get("text"), str):
        document = Document(str(obj["id"]) if "id" in obj else None, [Passage(0, obj["text"])],
                            infons=dict(obj.get("infons") or {}))
        for annotation in obj.get("annotations", []):
            place(document, _annotation(annotation))
    else:
        raise _Bad('a document needs "text" (a string) or "passages"')
    document.relations = [_relation(r) for r in obj.get("relations", [])]
    document.predictions = [_annotation(a) for a in obj.get("predictions", [])]
    document.source, document.source_format = source, "jsonl"
    return document


def read_jsonl(stream, name, strict=False):
    """Yield each line's Document (a DataFormatError naming file:line for a bad one; DataWarnings
    before a document that lost an input annotation whose text differs from the document's, or
    with `strict` an error); blank lines are skipped; a line without "id" gets its line number."""
    for lineno, raw in enumerate(stream, 1):
        if not raw.strip():
            continue
        where = f"{name}:{lineno}"
        try:
            obj = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            yield DataFormatError(f"{where}: not a JSON line: {error}")
            continue
        try:
            document = document_from_dict(obj, where)
        except (_Bad, AttributeError, KeyError, TypeError, ValueError) as error:
            known = obj.get("id") if isinstance(obj, dict) else None
            ident = f" document {known}" if known is not None else ""
            yield DataFormatError(f"{where}:{ident} {error}", None if known is None else str(known))
            continue
        if document.id is None:
            document.id = str(lineno)
        surrogate = _lone_surrogate(document)
        if surrogate:
            yield DataFormatError(f"{where}: document {document.id}: {surrogate}", document.id)
            continue
        try:
            warnings = fit_annotations(document, f"{where}: document {document.id}", strict)
        except DataFormatError as error:
            yield error
            continue
        yield from warnings
        yield document


def _lone_surrogate(document):
    """What is wrong with a text holding a lone surrogate (a JSON escape such as \\ud800, no
    character: it cannot be tokenized nor written as UTF-8), or None."""
    for passage in document.passages:
        found = _SURROGATE.search(passage.text)
        if found:
            return (f"passage at {passage.offset}: character {found.start()} is a lone surrogate "
                    f"(U+{ord(found.group()):04X}), not a Unicode character")
    return None


def annotation_to_dict(annotation: Annotation) -> dict:
    obj = {"start": annotation.start, "end": annotation.end, "type": annotation.type, "text": annotation.text,
           "score": annotation.score, "model": annotation.model, "concept_id": annotation.concept_id,
           "id": annotation.id}
    if annotation.locations and len(annotation.locations) > 1:
        obj["locations"] = [list(span) for span in annotation.locations]
    if annotation.infons:
        obj["infons"] = annotation.infons
    return obj


def _relation_to_dict(relation: Relation) -> dict:
    obj = {"id": relation.id, "infons": relation.infons, "nodes": [list(n) for n in relation.nodes]}
    if relation.raw is not None:
        obj["raw"] = relation.raw
    return obj


def document_to_dict(document: Document) -> dict:
    passages = []
    for passage in document.passages:
        item = {"offset": passage.offset, "text": passage.text, "type": passage.type, "infons": passage.infons,
                "annotations": [annotation_to_dict(a) for a in passage.annotations]}
        if passage.relations:
            item["relations"] = [_relation_to_dict(r) for r in passage.relations]
        passages.append(item)
    obj = {"id": document.id, "infons": document.infons, "passages": passages,
           "annotations": [annotation_to_dict(a) for a in document.annotations],
           "predictions": [annotation_to_dict(a) for a in document.predictions]}
    if document.relations:
        obj["relations"] = [_relation_to_dict(r) for r in document.relations]
    return obj


def write_jsonl(documents, out, on_unwritable=None) -> int:
    """Write documents to a binary stream, one JSON object a line; the number written
    (`on_unwritable`: as `biozoo.documents.write_documents`)."""
    count = 0
    for document in documents:
        line = encoded(document, "JSONL", lambda: json.dumps(document_to_dict(document), ensure_ascii=False)
                       .encode("utf-8") + b"\n", on_unwritable)
        if line is not None:
            out.write(line)
            count += 1
    return count
