"""Documents -> sentences -> task presets -> annotations with exact offsets (`biozoo annotate`).
The Apache Beam pipeline is `biozoo.annotate.beam` (imported only with Beam installed)."""

from biozoo.annotate.annotators import (
    AionerAnnotator,
    CascadeAnnotator,
    TaggerAnnotator,
    load_annotator,
    load_cascade,
)
from biozoo.annotate.job import AnnotationJob
from biozoo.annotate.runner import OVERLAP_RULES, AnnotationRun, annotate_documents, resolve_overlaps

__all__ = ["AionerAnnotator", "AnnotationJob", "AnnotationRun", "CascadeAnnotator", "OVERLAP_RULES", "TaggerAnnotator",
           "annotate_documents", "load_annotator", "load_cascade", "resolve_overlaps"]
