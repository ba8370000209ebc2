"""What an annotation does, as data: the models (or a cascade) and how documents are read,
tagged and written. `biozoo annotate` builds one from its options; the plain run and the
Apache Beam pipeline both annotate through it, so they give the same output.

Example:
    >>> job = AnnotationJob(models=("out/ncbi",), output_format="pubtator", drop_existing=True)
    >>> run = job.run(progress=False)
    >>> annotated = list(run.annotate(read_documents(["abstracts.pubtator"])))
"""

from __future__ import annotations

import dataclasses
import os

from biozoo._io import is_remote
from biozoo.annotate.annotators import load_annotator, load_cascade
from biozoo.annotate.runner import AnnotationRun
from biozoo.choices import (
    ANNOTATE_CHUNK_SIZE,
    DEFAULT_AGGREGATION,
    DEFAULT_CONFIDENCE_MEASURE,
    DEFAULT_LINK_ENCODER,
    DEFAULT_OVERLAP_RULE,
    DEFAULT_PRECISION,
)
from biozoo.documents import iter_input_files
from biozoo.linking import DocumentLinker, load_document_linker
from biozoo.linking.abbreviations import DEFAULT_ENGINE
from biozoo.linking.species import DEFAULT_TAXON_RULE


@dataclasses.dataclass(frozen=True)
class AnnotationJob:
    """The options of an annotation. With `cascade=(SMALL, LARGE)`, `models` is empty and the
    small model's sentences below `escalate_below` (per `escalate_measure`) go to the large one.

    Example (what `biozoo annotate --model bioformer_8l_ncbi_disease --link bio=ctd-diseases` runs;
    that model's one entity type is "bio"):
        >>> job = AnnotationJob(models=("bioformer_8l_ncbi_disease",), link=("bio=ctd-diseases",))
        >>> run = job.run(progress=False)  # loads the model, the dictionary and its name encoder
        >>> write_documents(run.annotate(read_documents(["abstracts.PubTator"])), "out.jsonl")
    """

    models: tuple = ()
    cascade: tuple | None = None
    escalate_below: float | None = None
    escalate_measure: str = DEFAULT_CONFIDENCE_MEASURE
    input_format: str = "auto"
    output_format: str = "jsonl"
    overlaps: str = DEFAULT_OVERLAP_RULE
    drop_existing: bool = False
    entity_types: tuple = ("ALL",)
    aggregation: str = DEFAULT_AGGREGATION
    batch_size: int = 64
    precision: str = DEFAULT_PRECISION
    chunk_size: int = ANNOTATE_CHUNK_SIZE
    # concept ids (biozoo.linking): link specs (DICTIONARY or TYPE=DICTIONARY), the name encoder
    # (None: strings and char 3-grams only), threshold, char 3-gram TF-IDF weight, abbreviations
    # engine (None: none), whether abbreviations are written, the genes' taxon rule
    link: tuple = ()
    link_encoder: str | None = DEFAULT_LINK_ENCODER
    link_threshold: float | None = None
    link_sparse_weight: float = 0.0
    abbreviations: str | None = DEFAULT_ENGINE
    write_abbreviations: bool = False
    taxon_rule: str = DEFAULT_TAXON_RULE
    trust_unverified: bool = False
    strict: bool = False  # refuse a document whose input annotation's text differs from its own (else drop that one)

    def __post_init__(self):
        for field in dataclasses.fields(self):  # lists (from JSON, argparse) as tuples: a job is hashable
            if isinstance(getattr(self, field.name), list):
                object.__setattr__(self, field.name, tuple(getattr(self, field.name)))
        if self.cascade is not None:
            if len(self.cascade) != 2 or self.models:
                raise ValueError("a cascade is two models, SMALL,LARGE, and takes no other --model")
            if self.escalate_below is None:
                raise ValueError("a cascade needs --escalate-below P (`biozoo cascade-calibrate` picks P)")
        elif not self.models:
            raise ValueError("no model to annotate with")
        if self.chunk_size < 1 or self.batch_size < 1:
            raise ValueError(f"chunk size and batch size must be positive, got {self.chunk_size} and {self.batch_size}")

    def annotators(self):
        options = dict(aggregation=self.aggregation, batch_size=self.batch_size, precision=self.precision)
        if self.cascade is not None:
            return [load_cascade(*self.cascade, self.escalate_below, self.escalate_measure, **options)]
        return [load_annotator(m, entity_types=self.entity_types, **options) for m in self.models]

    def linker(self, progress=True):
        """The job's `DocumentLinker` (None without --link / --abbreviations written), built once
        per process."""
        if not self.link and not self.write_abbreviations:
            return None

        if not self.link:
            return DocumentLinker([], self.abbreviations or DEFAULT_ENGINE, True, self.taxon_rule)
        return load_document_linker(tuple(self.link), self.link_encoder, self.link_threshold, self.link_sparse_weight,
                                    self.abbreviations, self.write_abbreviations, self.taxon_rule,
                                    self.trust_unverified, progress)

    def run(self, annotators=None, **options):
        """An `AnnotationRun` of this job (`options`: progress, skip_bad, on_skip)."""
        return AnnotationRun(self.annotators() if annotators is None else annotators, overlaps=self.overlaps,
                             chunk_size=self.chunk_size, drop_existing=self.drop_existing,
                             linker=self.linker(options.get("progress", True)), **options)

    def as_record(self):
        """The job as JSON-ready data (what a resumed corpus run must agree with)."""
        record = dataclasses.asdict(self)
        return {key: list(value) if isinstance(value, tuple) else value for key, value in record.items()}


def distinct_input_files(inputs):
    """Every input file of `inputs` (`iter_input_files`), refusing one named twice (a folder and a
    file in it, a link and its target): its documents would be annotated twice."""
    files, seen = [], {}
    for path in iter_input_files(inputs):
        real = path if path == "-" or is_remote(path) else os.path.realpath(path)
        if real in seen:
            also = "" if seen[real] == path else f" (also as {seen[real]})"
            raise ValueError(f"input file {path} is given twice{also}: its documents would be annotated twice")
        seen[real] = path
        files.append(path)
    return files
