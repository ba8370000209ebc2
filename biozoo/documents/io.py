"""Reading and writing documents in any of the supported formats.

    >>> for document in read_documents(["abstracts.pubtator", "pubmed24n0001.xml.gz"]):
    ...     ...
    >>> write_documents(documents, "out.bioc.xml", fmt="bioc-xml")
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import sys
import zlib

from biozoo.documents._checks import KEEP_MISMATCHED
from biozoo.documents._streams import GZIP_MAGIC, BrokenInput, display_name, iter_input_files, open_input, open_output
from biozoo.documents.bioc_format import read_bioc_json, read_bioc_xml, write_bioc_json, write_bioc_xml
from biozoo.documents.jsonl import read_jsonl, write_jsonl
from biozoo.documents.pubmed import read_pubmed_xml
from biozoo.documents.pubtator import read_pubtator, write_pubtator
from biozoo.documents.text import read_text
from biozoo.errors import DataFormatError, DataWarning

INPUT_FORMATS = ("text", "jsonl", "pubtator", "bioc-xml", "bioc-json", "pubmed-xml")
OUTPUT_FORMATS = ("jsonl", "pubtator", "bioc-xml", "bioc-json")

_READERS = {
    "text": read_text, "jsonl": read_jsonl, "pubtator": read_pubtator, "bioc-xml": read_bioc_xml,
    "bioc-json": read_bioc_json, "pubmed-xml": read_pubmed_xml,
}
_STRICT_READERS = ("jsonl", "pubtator", "bioc-xml", "bioc-json")  # readers of input annotations
_WRITERS = {"jsonl": write_jsonl, "pubtator": write_pubtator, "bioc-xml": write_bioc_xml, "bioc-json": write_bioc_json}

_PUBTATOR_LINE = re.compile(r"[^|\t\n]*\|[ta]\|")
_BIOC_JSON_KEY = re.compile(r'(?<!\\)"(documents|bioctype)"\s*:')
_XML_PROLOG = re.compile(r"\s*(<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^[>]*(\[.*?\])?\s*>)", re.S)
_XML_ROOTS = {"collection": "bioc-xml", "PubmedArticleSet": "pubmed-xml"}


# ------------------------------------------------------------------------------ detection


def _head_text(head: bytes, name) -> str:
    if head.startswith(GZIP_MAGIC):
        head = zlib.decompressobj(wbits=31).decompress(head)
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as error:
        # a few bad bytes (one damaged document) leave the format plain; the reader then names the
        # documents at fault. Mostly undecodable: not UTF-8 text at all.
        text = head.decode("utf-8", errors="replace")
        if text.count("\ufffd") > max(16, len(text) // 100):
            raise DataFormatError(f"{name}: unknown format: not UTF-8 text ({error.reason} at byte "
                                  f"{error.start}, and {text.count(chr(0xfffd)) - 1} more)") from None
    if "\x00" in text:
        raise DataFormatError(f"{name}: unknown format: binary data (NUL bytes)")
    return text.lstrip("\ufeff")


def _xml_format(text, name):
    position = 0
    while match := _XML_PROLOG.match(text, position):
        position = match.end()
    root = re.match(r"\s*<([\w.:-]+)", text[position:])
    fmt = _XML_ROOTS.get(root.group(1)) if root else None
    if fmt is None:
        found = f"<{root.group(1)}>" if root else "no element"
        raise DataFormatError(f"{name}: unknown format: XML with root {found} (BioC XML has <collection>, "
                              "PubMed XML <PubmedArticleSet>)")
    return fmt


# BioC's locations are objects ({"offset", "length"}); biozoo's JSONL writes [start, end] pairs
_BIOC_LOCATIONS = re.compile(r'"locations"\s*:\s*\[\s*\{')


def _json_format(text):
    """'bioc-json' or 'jsonl' for text starting with '{' (the head of a file)."""
    first_line, newline, rest = text.partition("\n")
    try:
        obj = json.loads(first_line)
    except ValueError:
        if newline:
            return "bioc-json"  # a JSON value over several lines: JSONL documents are one a line
        # a line longer than the head: a PMC full text in BioC JSON, one document a line
        return "bioc-json" if '"sentences"' in first_line or _BIOC_LOCATIONS.search(first_line) else "jsonl"
    if not isinstance(obj, dict):
        return "jsonl"
    passages = obj.get("passages")
    if "documents" in obj or "bioctype" in obj or (
            isinstance(passages, list) and passages and isinstance(passages[0], dict) and "sentences" in passages[0]):
        return "bioc-json"
    # BioC JSON a document a line (PubTator3): any annotation in the head as BioC writes one
    return "bioc-json" if _has_bioc_annotation(obj) or _BIOC_LOCATIONS.search(rest) else "jsonl"


def _has_bioc_annotation(document):
    """Whether a document object holds an annotation as BioC writes one: "locations" and no
    "start" (a BioC JSON document a line, as PubTator3 gives them)."""
    units = [document, *(p for p in document.get("passages") or [] if isinstance(p, dict))]
    return any(isinstance(a, dict) and "locations" in a and "start" not in a
               for unit in units if isinstance(unit.get("annotations"), list) for a in unit["annotations"])


def detect_format(path_or_head, name=None) -> str:
    """The format of a file (a path, gzip or not) or of its first bytes: one of INPUT_FORMATS.
    Raises DataFormatError naming the file when the content is none of them."""
    if isinstance(path_or_head, (bytes, bytearray)):
        head, name = bytes(path_or_head), name or "<input>"
    else:
        name = name or display_name(path_or_head)
        with open_input(path_or_head) as (_, head):
            pass
    text = _head_text(head, name).lstrip()
    if not text:
        return "text"
    # a line of plain text may start with "<", "[" or "{" ("[Treatment of ...]", "<i>Aspirin</i> ..."):
    # XML needs a prolog or a known root, JSON an object
    if text[0] == "<" and (text.startswith(("<?xml", "<!")) or re.match(r"<(collection|PubmedArticleSet)\b", text)):
        return _xml_format(text, name)
    if text[0] == "[" and re.match(r"\[\s*(\{|$)", text):
        return "bioc-json"
    if text[0] == "{" and re.match(r'\{\s*("|\}|$)', text):
        if _BIOC_JSON_KEY.search(text.split("\n", 1)[0]):
            return "bioc-json"
        return _json_format(text)
    if _PUBTATOR_LINE.match(text):
        return "pubtator"
    return "text"


# -------------------------------------------------------------------------------- reading


def _skip_to_stderr(message):
    print(f"biozoo: skipped: {message}", file=sys.stderr)


def _note_to_stderr(message):
    print(f"biozoo: {message}", file=sys.stderr)


def _warn_to_stderr(message):
    print(f"biozoo: warning: {message}", file=sys.stderr)


class DocumentStream:
    """The documents of every input, one at a time. `read`, `skipped` (bad documents, or the rest
    of a file that stopped parsing, with skip_bad; each told to `on_skip`), `notes` (what was
    passed over that is no document: PubMed books and deletions; told to `on_note`) and
    `dropped` (input annotations whose text differs from the document's at their offsets, each
    told to `on_warning`; with `strict` their documents are bad instead; with
    `strict=KEEP_MISMATCHED` they are kept, told, and counted in `kept_mismatched`) count as it goes.

    Example (the 4 abstracts biozoo packages):
        >>> stream = DocumentStream([biozoo.data.embedded_corpus("example-pubtator")])
        >>> [document.id for document in stream][:2], stream.read, stream.skipped
        (['15485686', '16046395'], 4, 0)
    """

    def __init__(self, inputs, fmt="auto", skip_bad=False, on_skip=None, on_note=None, strict=False,
                 on_warning=None):
        if fmt != "auto" and fmt not in _READERS:
            raise ValueError(f"unknown input format {fmt!r}; one of auto, {', '.join(INPUT_FORMATS)}")
        self.fmt, self.skip_bad, self.strict = fmt, skip_bad, strict
        self.on_skip = on_skip or _skip_to_stderr
        self.on_note = on_note or _note_to_stderr
        self.on_warning = on_warning or _warn_to_stderr
        self.read = self.skipped = self.notes = self.dropped = self.kept_mismatched = 0
        self.skipped_id = None  # the id of the document `on_skip` hears of, where the reader knew it
        self._documents = self._generate(inputs)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._documents)

    def _note(self, message):
        self.notes += 1
        self.on_note(message)

    def _skip(self, message, document_id=None):
        self.skipped += 1
        self.skipped_id = document_id
        self.on_skip(message)

    def _generate(self, inputs):
        for path in iter_input_files(inputs):
            name = display_name(path)
            before = self.read
            try:
                yield from self._read_file(path, name)
            except BrokenInput as error:
                if not self.skip_bad:
                    raise
                self._skip(f"{error}: the document it cuts is lost and nothing after it can be read; the "
                           f"{self.read - before} complete document(s) before it were read")
            except DataFormatError as error:
                if not self.skip_bad:
                    raise
                self._skip(f"{error} (nothing more is read from {name})")

    def _read_file(self, path, name):
        try:
            with open_input(path) as (stream, head):
                fmt = self.fmt if self.fmt != "auto" else detect_format(head, name)
                if fmt == "pubmed-xml":
                    items = read_pubmed_xml(stream, name, self._note)
                elif fmt in _STRICT_READERS:
                    items = _READERS[fmt](stream, name, strict=self.strict)
                else:
                    items = _READERS[fmt](stream, name)
                for item in items:
                    if isinstance(item, DataWarning):
                        if self.strict == KEEP_MISMATCHED:
                            self.kept_mismatched += 1
                        else:
                            self.dropped += 1
                        self.on_warning(str(item))
                        continue
                    if isinstance(item, DataFormatError):
                        if not self.skip_bad:
                            raise item
                        self._skip(str(item), item.document_id)
                        continue
                    item.source_format = fmt
                    self.read += 1
                    yield item
        except (EOFError, gzip.BadGzipFile, zlib.error) as error:
            raise DataFormatError(f"{name}: broken gzip data: {error}") from None


def read_documents(inputs, fmt="auto", skip_bad=False, on_skip=None, on_note=None, strict=False,
                   on_warning=None) -> DocumentStream:
    """Stream the documents of `inputs` (paths, folders, `.gz`, `gs://`, "-" for stdin; one or a
    list) in `fmt` (one of INPUT_FORMATS, or "auto": detected per file from its first bytes).

    A malformed document raises DataFormatError naming its file and line (or PMID); with
    `skip_bad=True` it is reported through `on_skip(message)` (default: printed to stderr),
    counted in the returned stream's `skipped`, and left out. `on_note(message)` (default:
    stderr) hears of entries that are no document (PubMed books and deletions, counted in `notes`).
    Real corpora have quirks: an input annotation whose text differs from the document's at its
    offsets ('Intersex' for 'intersex') is dropped and its document kept, told to
    `on_warning(message)` (default: stderr; naming file, line and document) and counted in
    `dropped`; with `strict=True` such a document is malformed instead; with
    `strict=KEEP_MISMATCHED` ("keep") the annotation is kept, told and counted in `kept_mismatched`.
    """
    return DocumentStream(inputs, fmt, skip_bad, on_skip, on_note, strict, on_warning)


# -------------------------------------------------------------------------------- writing


EXTENSION = {"jsonl": ".jsonl", "pubtator": ".pubtator", "bioc-xml": ".bioc.xml", "bioc-json": ".bioc.json"}  # written
_EXTENSIONS = {**{extension: fmt for fmt, extension in EXTENSION.items()}, ".ndjson": "jsonl", ".xml": "bioc-xml"}
_AMBIGUOUS = {".json": "bioc-json or jsonl", ".txt": "pubtator, jsonl or another format"}


def output_format_for(path, fmt=None) -> str:
    """The output format for `path`: `fmt` when given, else what its extension says (.jsonl,
    .pubtator, .xml / .bioc.xml, .bioc.json; a .gz after it is allowed); stdout ("-"/None) and a
    name without an extension get jsonl. Raises ValueError when the extension names another
    format than `fmt`, or none unambiguously (.json, .txt, .csv...) and `fmt` is not given.

    Example:
        >>> output_format_for("out.bioc.xml.gz")
        'bioc-xml'
    """
    if fmt is not None and fmt not in _WRITERS:
        raise ValueError(f"unknown output format {fmt!r}; one of {', '.join(OUTPUT_FORMATS)}")
    if path is None or os.fspath(path) == "-":
        return fmt or "jsonl"
    name = os.path.basename(os.fspath(path)).lower()
    name = name[:-3] if name.endswith(".gz") else name
    found = next((f for ext, f in sorted(_EXTENSIONS.items(), key=lambda item: -len(item[0])) if name.endswith(ext)),
                 None)
    if found is not None:
        if fmt is not None and fmt != found:
            raise ValueError(f"--output {path} names {found} by its extension but --output-format is {fmt}: give a "
                             "name that matches the format")
        return found
    if fmt is not None:
        return fmt
    extension = os.path.splitext(name)[1]
    if not extension:
        return "jsonl"
    what = _AMBIGUOUS.get(extension, "no output format")
    raise ValueError(f"--output {path}: the extension {extension} names {what}; give --output-format "
                     f"({', '.join(OUTPUT_FORMATS)}) or a name ending in .jsonl, .pubtator, .bioc.xml or .bioc.json")


def check_not_an_input(output, inputs):
    """Refuse an output file that is one of the `inputs` or lies in an input folder (it would be
    overwritten, or read back as input by the next run)."""
    if output is None or os.fspath(output) in ("-", "") or "://" in os.fspath(output):
        return
    real = os.path.realpath(os.fspath(output))
    for item in inputs:
        item = os.fspath(item)
        if item == "-" or "://" in item or not os.path.exists(item):
            continue
        source = os.path.realpath(item)
        if real == source:
            raise ValueError(f"--output {output} is the input {item}: writing it would destroy the input; choose "
                             "another output")
        if os.path.isdir(source) and real.startswith(source.rstrip(os.sep) + os.sep):
            raise ValueError(f"--output {output} lies inside the input folder {item}: a later run would read it as "
                             "input; choose an output outside it")


def _write(documents, out, fmt, collection, on_unwritable, annotate_run=False):
    if fmt not in _WRITERS:
        raise ValueError(f"unknown output format {fmt!r}; one of {', '.join(OUTPUT_FORMATS)}")
    if fmt in ("bioc-xml", "bioc-json"):
        return _WRITERS[fmt](documents, out, collection, on_unwritable)
    if fmt == "pubtator":
        return _WRITERS[fmt](documents, out, on_unwritable, annotate_run=annotate_run)
    return _WRITERS[fmt](documents, out, on_unwritable)


def encode_documents(documents, fmt="jsonl", *, collection=None, on_unwritable=None,
                     annotate_run=False) -> tuple[bytes, int]:
    """`documents` written in `fmt` (one of OUTPUT_FORMATS) into memory: `(bytes, count)`
    (`collection`, `on_unwritable`, `annotate_run`: as `write_documents`)."""
    out = io.BytesIO()
    count = _write(documents, out, fmt, collection, on_unwritable, annotate_run)
    return out.getvalue(), count


def write_documents(documents, output=None, fmt="jsonl", *, collection=None, on_unwritable=None,
                    annotate_run=False) -> int:
    """Write `documents` (any iterable, consumed once) to `output` (a path, written atomically,
    gzip-compressed when it ends in .gz; a `gs://` path; or "-"/None for stdout) in `fmt` (one
    of OUTPUT_FORMATS); returns the number written. `collection` is the BioC collection header
    (default: the first document's). A document the format cannot hold (PubTator: input
    annotations beside predictions; XML: a control character) raises ValueError naming it, or,
    with `on_unwritable`, is handed to `on_unwritable(document, error)` and left out.
    `annotate_run=True` says the documents are an annotate run's output: PubTator, which has no
    mark for a prediction, then refuses (ValueError naming the document, `on_unwritable` or not;
    a file output is then not written) a document that carries input annotations or relations,
    predictions or not, which would read back as predictions; a plain conversion writes them."""
    if fmt not in _WRITERS:
        raise ValueError(f"unknown output format {fmt!r}; one of {', '.join(OUTPUT_FORMATS)}")
    with open_output(output) as out:
        return _write(documents, out, fmt, collection, on_unwritable, annotate_run)
