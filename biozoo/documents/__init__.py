"""Documents in the field's formats: one model (documents/passages/annotations with
document-level offsets), readers and writers for text, JSONL, PubTator, BioC XML/JSON and
PubMed XML."""

from biozoo.documents.io import (
    INPUT_FORMATS,
    KEEP_MISMATCHED,
    OUTPUT_FORMATS,
    DocumentStream,
    check_not_an_input,
    detect_format,
    encode_documents,
    iter_input_files,
    output_format_for,
    read_documents,
    write_documents,
)
from biozoo.documents.model import ABBREVIATION_TYPES, Annotation, Collection, Document, Passage, Relation

__all__ = [
    "ABBREVIATION_TYPES", "Annotation", "Collection", "Document", "Passage", "Relation",
    "INPUT_FORMATS", "KEEP_MISMATCHED", "OUTPUT_FORMATS", "DocumentStream",
    "check_not_an_input", "detect_format", "encode_documents", "iter_input_files", "output_format_for",
    "read_documents", "write_documents",
]
