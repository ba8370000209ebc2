"""Documents -> sentences -> task presets -> annotations with exact offsets (`biozoo annotate`)."""

from biozoo.annotate.annotators import AionerAnnotator, TaggerAnnotator, load_annotator
from biozoo.annotate.runner import OVERLAP_RULES, AnnotationRun, annotate_documents, resolve_overlaps

__all__ = ["AionerAnnotator", "AnnotationRun", "OVERLAP_RULES", "TaggerAnnotator", "annotate_documents",
           "load_annotator", "resolve_overlaps"]
