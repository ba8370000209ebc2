"""BioC XML and BioC JSON.

Reading: BioC XML with lxml's `iterparse`, one `<document>` at a time, cleared once read, so a
big collection is never held whole (the `bioc` package's document reader keeps every element
it has read, and its errors name no line); BioC JSON with `json` (a whole collection at once:
no streaming JSON parser is installed), or one BioC document a line (read line by line). Both
go through one converter into the model; sentence-level passages (no passage text) get the
sentences' text at their offsets, and their annotations. Writing: through the `bioc` package's
data structures, its streaming `BioCXMLDocumentWriter` and its JSON encoder (`toJSON`).

Kept: the collection's source/date/key/infons (`Document.collection`, one object shared by the
documents of a file; a writer writes the first document's), document/passage/annotation infons
untouched (a passage's type is its infon "type", an annotation's type its infon "type", its
concept id "identifier" or a key such as "MESH"), several locations (discontinuous), document-
level annotations and relations. Predictions are written as annotations of the passage holding
them (else of the document) with infons type, identifier, annotator (the model) and score, and
ids "p0", "p1", ... that no input id uses; an abbreviation's ShortForm and LongForm predictions
are joined by a document-level relation of type "ABBR" (roles ShortForm, LongForm). The infon
"annotator" is "biozoo:MODEL" ("biozoo" for a prediction of no named model): reading such a
file gives those annotations back as `Document.predictions` (model and score from the infons,
their ABBR relations rebuilt by the writer), so writing it again gives the same file; an
annotation with any other "annotator" (a third party's) is one of the input's.

BioC infons are strings: a BioC JSON infon that is a number, true/false, an object or a list is
read as its JSON text (672 -> "672", true -> "true"), null as "".
"""

from __future__ import annotations

import datetime
import json

import bioc
from bioc.biocjson import toJSON
from bioc.biocxml import BioCXMLDocumentWriter
from lxml import etree

from biozoo.documents._checks import concept_id_from, container, encoded, fit_annotations
from biozoo.documents._xml import iterparse, syntax_error
from biozoo.documents.model import (
    ABBREVIATION_RELATION,
    LONG_FORM_SPAN,
    Annotation,
    Collection,
    Document,
    Passage,
    Relation,
)
from biozoo.errors import DataFormatError


class _Bad(ValueError):
    pass


# ------------------------------------------------------------------- BioC (dict) -> model


# the "annotator" infon of a prediction biozoo writes: "biozoo:MODEL", or "biozoo" without a model
PREDICTION_ANNOTATOR = "biozoo"


def infon_text(value) -> str:
    """An infon value as BioC holds it, a string: JSON's text for a number, true/false, an
    object or a list (672 -> "672", True -> "true"), "" for None."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def _infons(obj) -> dict:
    infons = obj.get("infons") or {}
    if not isinstance(infons, dict):
        raise _Bad(f"infons must be an object, got {infons!r:.60}")
    return {str(k): infon_text(v) for k, v in infons.items()}


def prediction_annotator(model: str | None) -> str:
    """The "annotator" infon that marks a prediction of `model` in biozoo's BioC output."""
    return PREDICTION_ANNOTATOR if model is None else f"{PREDICTION_ANNOTATOR}:{model}"


def predicting_model(infons: dict) -> tuple[bool, str | None]:
    """(whether the infons mark a biozoo prediction, its model or None)."""
    annotator = infons.get("annotator")
    if annotator == PREDICTION_ANNOTATOR:
        return True, None
    if isinstance(annotator, str) and annotator.startswith(PREDICTION_ANNOTATOR + ":"):
        return True, annotator[len(PREDICTION_ANNOTATOR) + 1:]
    return False, None


def _int(value, what):
    """An offset or length: an integer, or its digits as XML gives them (not 2.7, which int() cuts)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise _Bad(f"{what} {value!r} is not an integer")


def _annotation(obj, predictions=None) -> Annotation | None:
    """The annotation; a prediction biozoo wrote (see `predicting_model`) goes to `predictions`
    instead (model and score from its infons, those two infons left out) and None is returned."""
    infons = _infons(obj)
    label = f"annotation {obj.get('id')}"
    spans = []
    for location in obj.get("locations") or []:
        start = _int(location.get("offset"), f"{label}: location offset")
        spans.append((start, start + _int(location.get("length"), f"{label}: location length")))
    if not spans:
        raise _Bad(f"{label} has no location")
    predicted, model = predicting_model(infons)
    score = None
    if predicted:
        infons.pop("annotator")
        if "score" in infons:
            written = infons.pop("score")
            try:
                score = float(written)
            except ValueError:
                raise _Bad(f"{label}: the score {written!r} of a biozoo prediction is not a number") from None
    annotation = Annotation(spans[0][0], spans[0][1], infons.get("type", ""), obj.get("text") or "", score=score,
                            model=model, concept_id=concept_id_from(infons), id=obj.get("id"), infons=infons,
                            locations=spans if len(spans) > 1 else None)
    if predicted and predictions is not None:
        predictions.append(annotation)
        return None
    return annotation


def _annotations(objects, predictions) -> list[Annotation]:
    """The input's annotations among `objects`; biozoo's predictions go to `predictions`."""
    found = (_annotation(obj, predictions) for obj in objects or [])
    return [annotation for annotation in found if annotation is not None]


def _relation(obj) -> Relation:
    nodes = [(node.get("refid"), node.get("role")) for node in obj.get("nodes") or []]
    return Relation(infons=_infons(obj), nodes=nodes, id=obj.get("id"))


def _passage(obj, predictions) -> Passage:
    offset = _int(obj.get("offset"), "passage offset")
    infons = _infons(obj)
    text = obj.get("text")
    if text is not None and not isinstance(text, str):
        raise _Bad(f"passage at {offset}: its text must be a string, got {type(text).__name__}")
    annotations = _annotations(obj.get("annotations"), predictions)
    relations = [_relation(r) for r in obj.get("relations") or []]
    sentences = obj.get("sentences") or []
    # sentence-level BioC: a passage's text is its sentences' at their offsets, unless it gives
    # its own (as the bioc package writes a passage that has both); their annotations are its own
    parts, position = [], offset
    for sentence in sorted(sentences, key=lambda s: _int(s.get("offset"), "sentence offset")):
        start = _int(sentence.get("offset"), "sentence offset")
        if start < position:
            raise _Bad(f"sentence at {start} overlaps the one before it")
        parts += [" " * (start - position), sentence.get("text") or ""]
        position = start + len(parts[-1])
        annotations += _annotations(sentence.get("annotations"), predictions)
        relations += [_relation(r) for r in sentence.get("relations") or []]
    if text is None:
        text = "".join(parts)
    return Passage(offset, text, infons.get("type"), infons, annotations, relations)


def _input_relations(relations, predictions) -> list[Relation]:
    """`relations` less the ABBR relations that join two of biozoo's predictions (its writer
    builds them again from the ShortForm's infons)."""
    predicted = {p.id for p in predictions if p.type in ("ShortForm", "LongForm")}
    return [r for r in relations
            if not (r.infons.get("type") == ABBREVIATION_RELATION and len(r.nodes) == 2
                    and [role for _, role in r.nodes] == ["ShortForm", "LongForm"]
                    and all(refid in predicted for refid, _ in r.nodes))]


def document_from_bioc(obj, source, collection=None, strict=False, warnings=None) -> Document:
    """A Document from a BioC document as a dict (BioC JSON's layout); raises DataFormatError
    naming `source` when it is malformed or an annotation's offsets do not fit its text. An
    annotation whose text differs from the document's at its offsets is dropped, with a
    DataWarning appended to `warnings` (`strict`: raised as an error instead)."""
    ident = obj.get("id") if isinstance(obj, dict) else None
    try:
        if not isinstance(obj, dict):
            raise _Bad(f"a document must be an object, got {type(obj).__name__}")
        if ident is None:
            raise _Bad("document without an id")
        predictions = []
        document = Document(str(ident), [_passage(p, predictions) for p in obj.get("passages") or []],
                            infons=_infons(obj), source=source, collection=collection)
        document.annotations = _annotations(obj.get("annotations"), predictions)
        document.predictions = predictions
        document.relations = _input_relations([_relation(r) for r in obj.get("relations") or []], predictions)
    except (_Bad, AttributeError, TypeError) as error:
        raise DataFormatError(f"{source}: document {ident}: {error}", None if ident is None else str(ident)) from None
    found = fit_annotations(document, f"{source}: document {ident}", strict)
    if warnings is not None:
        warnings.extend(found)
    return document


# ------------------------------------------------------------------------------- BioC XML


def _element_infons(element):
    return {child.get("key"): child.text for child in element.iterchildren("infon")}


def _element_annotation(element):
    return {"id": element.get("id"), "infons": _element_infons(element), "text": element.findtext("text"),
            "locations": [{"offset": loc.get("offset"), "length": loc.get("length")}
                          for loc in element.iterchildren("location")]}


def _element_relation(element):
    return {"id": element.get("id"), "infons": _element_infons(element),
            "nodes": [{"refid": n.get("refid"), "role": n.get("role")} for n in element.iterchildren("node")]}


def _element_annotated(element):
    """offset, infons, text, annotations, relations of a passage or sentence element."""
    return {"offset": element.findtext("offset"), "infons": _element_infons(element), "text": element.findtext("text"),
            "annotations": [_element_annotation(a) for a in element.iterchildren("annotation")],
            "relations": [_element_relation(r) for r in element.iterchildren("relation")]}


def _element_document(element):
    passages = []
    for passage in element.iterchildren("passage"):
        obj = _element_annotated(passage)
        obj["sentences"] = [_element_annotated(s) for s in passage.iterchildren("sentence")]
        passages.append(obj)
    return {"id": element.findtext("id"), "infons": _element_infons(element), "passages": passages,
            "annotations": [_element_annotation(a) for a in element.iterchildren("annotation")],
            "relations": [_element_relation(r) for r in element.iterchildren("relation")]}


def read_bioc_xml(stream, name, strict=False):
    """Yield each Document of a BioC XML byte stream (a DataFormatError naming file:line in
    place of a bad one, DataWarnings before a document that lost an annotation to a quirk:
    see `document_from_bioc`); raises DataFormatError for XML that does not parse."""
    collection = Collection()
    events = iterparse(stream)
    checked = False
    try:
        for _, element in events:
            parent = element.getparent()
            if not checked:
                root = element.getroottree().getroot()
                if root.tag != "collection":
                    raise DataFormatError(f"{name}:{root.sourceline}: not BioC XML: the root element is "
                                          f"<{root.tag}>, not <collection>")
                checked = True
            if parent is None or parent.getparent() is not None:
                continue  # not a child of <collection>: read with its document
            if element.tag == "document":
                source = f"{name}:{element.sourceline}"
                warnings = []
                try:
                    document = document_from_bioc(_element_document(element), source, collection, strict, warnings)
                    document.source_format = "bioc-xml"
                    yield from warnings
                    yield document
                except DataFormatError as error:
                    yield error
            elif element.tag in ("source", "date", "key"):
                setattr(collection, element.tag, element.text or "")
            elif element.tag == "infon":
                collection.infons[element.get("key")] = element.text or ""
            element.clear()
            while element.getprevious() is not None:
                del parent[0]
    except etree.XMLSyntaxError as error:
        raise syntax_error(name, error) from None


# ------------------------------------------------------------------------------ BioC JSON


def _json_documents(obj, where):
    """(document dict, collection) pairs of a parsed BioC JSON value."""
    if isinstance(obj, list):
        for item in obj:
            yield from _json_documents(item, where)
    elif isinstance(obj, dict) and "documents" in obj:
        if not isinstance(obj["documents"], list):
            raise DataFormatError(f"{where}: a collection's \"documents\" must be a list, got "
                                  f"{type(obj['documents']).__name__}")
        try:
            infons = _infons(obj)
        except _Bad as error:
            raise DataFormatError(f"{where}: the collection's {error}") from None
        collection = Collection(str(obj.get("source") or ""), str(obj.get("date") or ""), str(obj.get("key") or ""),
                                infons)
        for document in obj["documents"]:
            yield document, collection
    elif isinstance(obj, dict) and "passages" in obj:
        yield obj, None
    else:
        raise DataFormatError(f"{where}: not BioC JSON (expected a collection with \"documents\", "
                              "a document with \"passages\", or a list of them)")


def _json_items(stream, name):
    """(parsed value, where) for a whole-file JSON value, or for each line of JSON lines (a
    DataFormatError in place of the value of a line that does not parse: the lines after it are
    read on)."""
    first = stream.readline()
    lineno = 1
    while first and not first.strip():
        first, lineno = stream.readline(), lineno + 1
    try:
        value = json.loads(first)
    except json.JSONDecodeError as first_error:  # one value over many lines: read it whole
        rest = stream.read()
        try:
            value = json.loads(first + rest)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            lines = rest.splitlines(keepends=True)
            if not any(_is_bioc_line(line) for line in lines):
                line = getattr(error, "lineno", 0) + lineno - 1
                raise DataFormatError(f"{name}:{line}: unparsable JSON: {error}") from None
            # JSON lines (a later line is a BioC document or collection) whose first line is bad:
            # that line alone is lost
            yield DataFormatError(f"{name}:{lineno}: unparsable JSON: {first_error}"), f"{name}:{lineno}"
            yield from _json_lines(lines, name, lineno + 1)
            return
        yield value, name
        return
    except UnicodeDecodeError as error:
        raise DataFormatError(f"{name}:{lineno}: not UTF-8: {error}") from None
    yield value, f"{name}:{lineno}"
    yield from _json_lines(stream, name, lineno + 1)


def _json_lines(lines, name, first_lineno):
    for lineno, line in enumerate(lines, first_lineno):
        if line.strip():
            try:
                value = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                value = DataFormatError(f"{name}:{lineno}: unparsable JSON: {error}")
            yield value, f"{name}:{lineno}"


def _is_bioc_line(line):
    if not line.lstrip().startswith(b"{"):
        return False
    try:
        value = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(value, dict) and ("passages" in value or "documents" in value)


def read_bioc_json(stream, name, strict=False):
    """Yield each Document of a BioC JSON byte stream (a collection, a list of them, or one
    BioC document a line); a DataFormatError in place of a bad document, DataWarnings as
    `read_bioc_xml`."""
    for value, where in _json_items(stream, name):
        if isinstance(value, DataFormatError):
            yield value
            continue
        try:
            found = list(_json_documents(value, where))
        except DataFormatError as error:
            if where == name:  # the whole file is this value
                raise
            yield error  # one line: the next ones are read on
            continue
        for obj, collection in found:
            warnings = []
            try:
                document = document_from_bioc(obj, where, collection, strict, warnings)
            except DataFormatError as error:
                yield error
                continue
            yield from warnings
            if where == name:  # a whole-file collection: no line numbers
                document.source = f"{name} document {document.id}"
            document.source_format = "bioc-json"
            yield document


# ------------------------------------------------------------------- model -> bioc objects


def _fresh_ids(prefix, used):
    number = 0
    while True:
        name = f"{prefix}{number}"
        number += 1
        if name not in used:
            used.add(name)
            yield name


def _strings(infons):
    return {str(k): infon_text(v) for k, v in infons.items()}


def _bioc_annotation(annotation, ident, prediction=False):
    infons = dict(annotation.infons)
    if annotation.type and infons.get("type") != annotation.type:
        infons["type"] = annotation.type
    if annotation.concept_id is not None and concept_id_from(infons) != annotation.concept_id:
        infons["identifier"] = annotation.concept_id
    if prediction:
        infons["annotator"] = prediction_annotator(annotation.model)
        if annotation.score is not None:
            infons["score"] = format(float(annotation.score), ".6g")
    result = bioc.BioCAnnotation()
    result.id, result.text, result.infons = str(ident), annotation.text, _strings(infons)
    for start, end in annotation.spans():
        result.add_location(bioc.BioCLocation(start, end - start))
    return result


def _bioc_relation(relation, ident):
    result = bioc.BioCRelation()
    result.id, result.infons = str(ident), _strings(relation.infons)
    for refid, role in relation.nodes:
        result.add_node(bioc.BioCNode(str(refid), "" if role is None else str(role)))
    return result


def document_to_bioc(document: Document):
    """The document as a `bioc.BioCDocument`, predictions included as annotations."""
    existing = document.existing_annotations()
    relations = document.relations + [r for p in document.passages for r in p.relations]
    used = {a.id for a in existing if a.id is not None} | {r.id for r in relations if r.id is not None}
    # a prediction read back from biozoo's BioC keeps its id; a new one gets the next free "p<n>"
    kept_ids = {}
    for prediction in document.predictions:
        if prediction.id is not None and prediction.id not in used:
            kept_ids[id(prediction)] = prediction.id
            used.add(prediction.id)
    annotation_ids, prediction_ids, relation_ids = (_fresh_ids(p, used) for p in ("", "p", "R"))

    result = bioc.BioCDocument()
    result.id, result.infons = document.id, _strings(document.infons)
    by_passage = {}
    for passage in document.passages:
        item = bioc.BioCPassage()
        infons = dict(passage.infons)
        if passage.type is not None and infons.get("type") != passage.type:
            infons["type"] = passage.type
        item.offset, item.text, item.infons = passage.offset, passage.text, _strings(infons)
        for annotation in passage.annotations:
            item.add_annotation(_bioc_annotation(annotation, annotation.id or next(annotation_ids)))
        for relation in passage.relations:
            item.add_relation(_bioc_relation(relation, relation.id or next(relation_ids)))
        by_passage[id(passage)] = item
        result.add_passage(item)
    for annotation in document.annotations:
        result.add_annotation(_bioc_annotation(annotation, annotation.id or next(annotation_ids)))
    long_forms, short_forms = {}, []
    for prediction in document.predictions:
        passage = container(document, prediction)
        target = by_passage[id(passage)] if passage is not None else result
        ident = kept_ids.get(id(prediction)) or next(prediction_ids)
        target.add_annotation(_bioc_annotation(prediction, ident, prediction=True))
        if prediction.type == "LongForm":
            long_forms[(prediction.start, prediction.end)] = ident
        elif prediction.type == "ShortForm":
            short_forms.append((prediction, ident))
    for relation in document.relations:
        result.add_relation(_bioc_relation(relation, relation.id or next(relation_ids)))
    for short, ident in short_forms:
        long_ident = long_forms.get(tuple(int(short.infons.get(key, -1)) for key in LONG_FORM_SPAN))
        if long_ident is not None:
            result.add_relation(_bioc_relation(Relation({"type": ABBREVIATION_RELATION}, [
                (ident, "ShortForm"), (long_ident, "LongForm")]), next(relation_ids)))
    return result


def collection_header(documents, collection=None):
    """(first document or None, the collection to write): `collection`, else the first
    document's, else a new one (source "biozoo", today's date)."""
    first = next(documents, None)
    if collection is None:
        collection = first.collection if first is not None and first.collection is not None else None
    if collection is None:
        collection = Collection("biozoo", datetime.date.today().strftime("%Y%m%d"), "")
    return first, collection


def _documents_after(first, documents):
    if first is not None:
        yield first
        yield from documents


def write_bioc_xml(documents, out, collection: Collection | None = None, on_unwritable=None) -> int:
    """Write documents as one BioC XML collection to a binary stream; the number written
    (`on_unwritable`: as `biozoo.documents.write_documents`)."""
    documents = iter(documents)
    first, header = collection_header(documents, collection)
    info = bioc.BioCCollection()
    info.source, info.date, info.key, info.infons = header.source, header.date, header.key, _strings(header.infons)
    writer = BioCXMLDocumentWriter(out, encoding="UTF-8")
    writer.write_collection_info(info)
    count = 0
    for document in _documents_after(first, documents):
        # bioc builds the whole element (where a character XML cannot hold raises) before writing it
        if encoded(document, "BioC XML", lambda: writer.write_document(document_to_bioc(document)) or True,
                   on_unwritable):
            count += 1
    writer.close()
    return count


def write_bioc_json(documents, out, collection: Collection | None = None, on_unwritable=None) -> int:
    """Write documents as one BioC JSON collection to a binary stream; the number written
    (`on_unwritable`: as `biozoo.documents.write_documents`)."""
    documents = iter(documents)
    first, header = collection_header(documents, collection)
    head = {"bioctype": "BioCCollection", "source": header.source, "date": header.date, "key": header.key,
            "version": "1.0", "infons": _strings(header.infons)}
    out.write(json.dumps(head, ensure_ascii=False)[:-1].encode("utf-8") + b', "documents": [')
    count = 0
    for document in _documents_after(first, documents):
        item = encoded(document, "BioC JSON", lambda: json.dumps(toJSON(document_to_bioc(document)),
                                                                 ensure_ascii=False).encode("utf-8"), on_unwritable)
        if item is not None:
            out.write((",\n" if count else "\n").encode("utf-8") + item)
            count += 1
    out.write(b"\n]}\n")
    return count
