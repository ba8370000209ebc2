"""The annotation run: documents in, the same documents with predictions out, in order.

Documents are read lazily and annotated `chunk_size` at a time (each model batches the
sentences of a whole chunk). Every prediction's offsets are checked against the document's
text before it is kept; progress (documents/s, entities) goes to stderr.

Example:
    >>> run = AnnotationRun([load_annotator("aioner_bioformer")])
    >>> for document in run.annotate(read_documents(["abstracts.pubtator"])):
    ...     print(document.id, len(document.predictions))
"""

from __future__ import annotations

import collections
import dataclasses
import sys
import time

from tqdm.auto import tqdm

from biozoo.annotate._gc import collection_paused, heap_frozen
from biozoo.annotate._workers import WAITS, can_run_in_workers, predictions_in_workers
from biozoo.choices import DEFAULT_OVERLAP_RULE, OVERLAP_RULES
from biozoo.documents.model import Annotation
from biozoo.linking.linker import count_link_methods


def _overlap(a, b):
    return a.start < b.end and b.start < a.end


def resolve_overlaps(predictions, rule="keep"):
    """Predictions (of one document, from every model) with overlaps resolved: `keep` keeps all;
    `longest` keeps the longest of overlapping mentions, `score` the highest-scoring (ties: the
    longer, then the earlier model and position). The result is in document order."""
    if rule not in OVERLAP_RULES:
        raise ValueError(f"overlaps must be one of {', '.join(OVERLAP_RULES)}, got {rule!r}")
    if rule == "keep":
        return sorted(predictions, key=lambda a: (a.start, a.end))
    indexed = list(enumerate(predictions))
    if rule == "longest":
        priority = lambda item: (-(item[1].end - item[1].start), -(item[1].score or 0.0), item[0])  # noqa: E731
    else:
        priority = lambda item: (-(item[1].score if item[1].score is not None else float("-inf")),  # noqa: E731
                                 -(item[1].end - item[1].start), item[0])
    kept = []
    for _, candidate in sorted(indexed, key=priority):
        if not any(_overlap(candidate, other) for other in kept):
            kept.append(candidate)
    return sorted(kept, key=lambda a: (a.start, a.end))


@dataclasses.dataclass
class AnnotationRun:
    """Annotators applied to a stream of documents.

    `drop_existing` removes the annotations the input carried; otherwise they stay apart from
    the predictions (`Document.predictions`). A document a model cannot annotate (an offset
    outside its text...) stops the run with an error naming it, or, with `skip_bad`, is
    reported through `on_skip(message)`, counted in `skipped`, recorded in `dead_letters` and
    left out. With `workers` > 0 a single tagger's host stages (sentences, tokens, entity
    grouping) run in that many processes while this one runs the model.

    An annotator is any object with a `name` whose `annotate(documents)` gives, per document,
    its entities `(start, end, type, score, model)` (model None: the annotator's name):

    Example:
        >>> class Aspirin:
        ...     name = "aspirin-finder"
        ...     def annotate(self, documents):
        ...         return [[(at, at + 7, "Chemical", 1.0, None) for at in range(len(d.text))
        ...                  if d.text.startswith("Aspirin", at)] for d in documents]
        >>> run = AnnotationRun([Aspirin()], progress=False)
        >>> [(a.start, a.end, a.text, a.model) for d in run.annotate([Document("1", [Passage(0, "Aspirin helps.")])])
        ...  for a in d.predictions]
        [(0, 7, 'Aspirin', 'aspirin-finder')]
        >>> run.documents, run.entities, run.skipped
        (1, 1, 0)
    """

    annotators: list
    overlaps: str = DEFAULT_OVERLAP_RULE
    chunk_size: int = 64
    drop_existing: bool = False
    progress: bool = True
    skip_bad: bool = False
    on_skip: object = None
    linker: object = None  # a biozoo.linking DocumentLinker: concept ids for each chunk's predictions
    workers: int = 0
    documents: int = 0
    # {link method: predictions} of those a dictionary was asked about (biozoo.linking.describe_links)
    link_methods: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    skipped: int = 0
    entities: int = 0
    seconds: float = 0.0
    waited: dict = dataclasses.field(default_factory=dict)  # with workers: seconds waited for each of `WAITS`
    dead_letters: list = dataclasses.field(default_factory=list)  # {"id", "source", "reason"} of each skipped

    def annotate(self, documents):
        """Yield each document of `documents` with its predictions."""
        if self.overlaps not in OVERLAP_RULES:
            raise ValueError(f"overlaps must be one of {', '.join(OVERLAP_RULES)}, got {self.overlaps!r}")
        bar = self._bar()
        started = time.perf_counter()
        try:
            with heap_frozen():  # the process's objects so far: out of the collections a run starts
                if self.workers > 0 and can_run_in_workers(self.annotators):
                    for chunk, found in predictions_in_workers(self.annotators[0], self._chunks(documents), self.workers,
                                                                   self.waited):
                        if isinstance(found, Exception):
                            found = self.predict_chunk(chunk)  # again here, to find the document at fault
                        yield from self.finish_chunk(chunk, found, bar)
                else:
                    if self.workers > 0:
                        print("note: annotating in one process: worker processes take one tagger (not a cascade, "
                              "AIONER or several models)", file=sys.stderr)
                    for chunk in self._chunks(documents):
                        yield from self._annotate_chunk(chunk, bar)
        finally:
            self.seconds = time.perf_counter() - started
            if bar is not None:
                bar.close()

    def summary(self):
        rate = self.documents / self.seconds if self.seconds else 0.0
        waits = ", ".join(f"{self.waited[wait]:.1f} s for {wait}" for wait in WAITS if wait in self.waited)
        return (f"annotated {self.documents} documents, {self.entities} entities in {self.seconds:.1f} s "
                f"({rate:.1f} documents/s)" + (f"; this process waited {waits}" if waits else ""))

    def _bar(self):
        if not self.progress:
            return None

        return tqdm(unit="doc", desc="annotating", dynamic_ncols=True)

    def _chunks(self, documents):
        chunk = []
        for document in documents:
            chunk.append(document)
            if len(chunk) >= self.chunk_size:
                yield chunk
                chunk = []
        if chunk:
            yield chunk

    def _annotate_chunk(self, chunk, bar):
        yield from self.finish_chunk(chunk, self.predict_chunk(chunk), bar)

    def predict_chunk(self, chunk):
        """Per document of `chunk`, its entities from every annotator, or the exception that
        annotating it alone raised (after the chunk as a whole raised)."""
        try:
            return self._predictions(chunk)
        except Exception:
            pass
        found = []  # find the document(s) at fault: one at a time
        for document in chunk:
            try:
                found.append(self._predictions([document])[0])
            except Exception as error:
                found.append(error)
        return found

    def finish_chunk(self, chunk, found, bar=None):
        """Yield each document of `chunk` with `found` (`predict_chunk`'s result) as its checked
        predictions (linked, with a `linker`); a document that fails stops the run, or with
        `skip_bad` is skipped."""
        with collection_paused():
            finished = self._finished(chunk, found)
        for document in finished:
            yield document
            if bar is not None:
                bar.update(1)
                bar.set_postfix(entities=self.entities, refresh=False)

    def _finished(self, chunk, found):
        finished = []
        for document, predictions in zip(chunk, found):
            try:
                if isinstance(predictions, Exception):
                    raise predictions
                overlapping = document.overlapping_passages() is not None
                annotations = [self._annotation(document, *entity, overlapping=overlapping) for entity in predictions]
            except Exception as error:
                self._skip(document, error)
                continue
            finished.append(self.finish(document, annotations))
        if self.linker is not None:
            finished = self._link(finished)
            self.link_methods.update(count_link_methods(finished))
        return finished

    def unwritable(self, document, error):
        """A finished document the output format cannot hold (`write_documents`' `on_unwritable`):
        the run stops with `error`, which names it, or, with `skip_bad`, it is skipped (recorded in
        `dead_letters`, and no longer counted as annotated)."""
        if not self.skip_bad:
            raise error
        self.documents -= 1
        self.entities -= len(document.predictions)
        self.skipped += 1
        self.dead_letters.append({"id": document.id, "source": document.source, "reason": str(error)})
        (self.on_skip or _print_skip)(str(error))

    def _skip(self, document, error, step=""):
        message = f"{document.source or 'document'} (id {document.id}): {step}{error}"
        if not self.skip_bad:
            raise ValueError(message) from error
        self.skipped += 1
        self.dead_letters.append({"id": document.id, "source": document.source, "reason": message})
        (self.on_skip or _print_skip)(message)

    def _link(self, documents):
        """`documents` with concept ids (all at once; one by one to find a document at fault)."""
        try:
            return self.linker.link_documents(documents)
        except Exception:
            pass
        linked = []
        for document in documents:
            try:
                linked += self.linker.link_documents([document])
            except Exception as error:
                self.documents -= 1
                self.entities -= len(document.predictions)
                self._skip(document, error, "linking: ")
        return linked

    def finish(self, document, annotations):
        """`document` with `annotations` as this run's predictions; those of other models (an
        earlier run's, read from JSONL) are kept unless `drop_existing`, overlaps resolved among
        all; counted."""
        running = {model for annotator in self.annotators for model in getattr(annotator, "models", (annotator.name,))}
        earlier = [p for p in document.predictions if p.model not in running]
        if self.drop_existing:
            document.annotations = []
            for passage in document.passages:
                passage.annotations = []
                passage.relations = []
            document.relations = []
            earlier = []
        document.predictions = resolve_overlaps(earlier + annotations, self.overlaps)
        self.documents += 1
        self.entities += len(document.predictions)
        return document

    def _predictions(self, chunk):
        """Per document, its entities `(start, end, type, score, model)` from every annotator."""
        found = [[] for _ in chunk]
        with collection_paused():
            for annotator in self.annotators:
                for d, entities in enumerate(annotator.annotate(chunk)):
                    found[d].extend((start, end, kind, score, model or annotator.name)
                                    for start, end, kind, score, model in entities)
        return found

    @staticmethod
    def _annotation(document, start, end, kind, score, model, overlapping=False):
        text = document.text_at(start, end)  # raises, naming the document, when outside every passage
        if overlapping:  # the passage a model read is not carried: the offsets must tell it
            texts = {p.text[start - p.offset:end - p.offset] for p in document.passages
                     if p.offset <= start and end <= p.end}
            if len(texts) > 1:
                raise ValueError(f"document {document.id}: an entity at {start}-{end} lies where passages overlap with "
                                 f"different texts ({', '.join(sorted(map(repr, texts)))}): which passage it is in "
                                 "cannot be told by its offsets; give the passages their own offsets")
        return Annotation(start=start, end=end, type=kind, text=text,
                          score=None if score is None else float(score), model=model)


def _print_skip(message):
    print(f"skipped: {message}", file=sys.stderr)


def annotate_documents(documents, annotators, **options):
    """`AnnotationRun(annotators, **options).annotate(documents)`."""
    return AnnotationRun(list(annotators), **options).annotate(documents)
