"""A tagger's host stages in worker processes, so that one process feeding an accelerator is not
the bottleneck: sentence splitting, tokenization and windows before the model; probabilities,
entity grouping and placing after it. The model runs in the calling process, which dispatches a
chunk's batches before it reads back the chunk before it.

Workers are started with "spawn" from `biozoo._worker_start`, which blocks the modules they never
use before Keras is imported; they never touch an accelerator (JAX and CUDA see only the CPU).
"""

from __future__ import annotations

import collections
import concurrent.futures
import gc
import pickle
import time

import keras

from biozoo._worker_start import WorkerContext
from biozoo._worker_start import start as worker_start
from biozoo.annotate._gc import collection_paused
from biozoo.annotate.annotators import Sentences, TaggerAnnotator
from biozoo.documents.sentences import english_tokenizer
from biozoo.tasks.inference import compiles_predictions
from biozoo.tasks.token_classifier import (
    group_entities,
    logits_per_window,
    token_windows,
    unit_probabilities,
    window_batches,
)


class TaggerHostStages:
    """What a `TaggerAnnotator` does off the model, picklable for a worker: its tokenizer and
    windowing (the task's preprocessor), batching, label names, aggregation and name."""

    def __init__(self, annotator):
        self.preprocessor = annotator.task.preprocessor
        self.label_names = list(annotator.task.label_names)
        self.aggregation = annotator.aggregation
        self.name = annotator.name
        self.batch_size = annotator.batch_size
        # decided here: the workers see no accelerator
        self.exact_lengths = not compiles_predictions()

    def prepare(self, documents):
        """`documents` -> their sentences, each sentence's tokens, and the model windows."""
        sentences = Sentences.of(documents)
        spans, windows = token_windows(self.preprocessor, sentences.texts)
        return sentences, spans, windows

    def batches(self, windows):
        """The windows' padded model batches (`window_batches`)."""
        return window_batches(self.preprocessor, windows.token_ids, self.batch_size, self.exact_lengths)

    def finish(self, sentences, spans, owner, word_positions, window_lengths, batch_logits, count):
        """The model's logits per batch, `[(window indices, logits), ...]` -> per document
        `(start, end, type, score, model)`."""
        logits = logits_per_window(batch_logits, window_lengths)
        probabilities = unit_probabilities(owner, word_positions, [len(row) for row in spans], logits,
                                           len(self.label_names))
        grouped = group_entities(self.preprocessor.tokenizer, self.label_names, sentences.texts,
                                 zip(spans, probabilities), self.aggregation)
        return sentences.place([g["entities"] for g in grouped], count, [self.name] * len(sentences.texts))


def can_run_in_workers(annotators):
    """Whether the host stages of `annotators` can move to workers: one plain tagger."""
    return len(annotators) == 1 and type(annotators[0]) is TaggerAnnotator


# what a worker's stages never use, and Keras (scikit-learn 1.1 s, matplotlib 0.8 s, pandas 0.3 s
# of a worker's 7 s start on one H100's host) and spaCy's thinc (PyTorch 1.8 s here, CuPy) import
# when installed: blocked in workers (`biozoo._worker_start`), PyTorch not when Keras runs on it
UNUSED_IN_WORKERS = ("sklearn", "pandas", "matplotlib", "torch", "cupy", "cupyx")

_STAGES = None


def blocked_in_workers():
    """The modules workers block, for this process's Keras backend."""
    return tuple(name for name in UNUSED_IN_WORKERS if name != "torch" or keras.backend.backend() != "torch")


def load_stages(stages):
    """A worker's start, after `biozoo._worker_start.start`: its host stages from `stages`."""
    global _STAGES
    _STAGES = pickle.loads(stages)
    english_tokenizer()  # loaded while the calling process still reads and batches
    gc.freeze()  # what was loaded lives as long as the worker: no collection walks it again


def _prepare(documents):
    """A chunk's model batches, padded, and what finishing it needs, pickled here: the calling
    process only dispatches the batches and passes those bytes on to the finishing worker unread
    (padding batches, unpickling thousands of small per-window objects, or cutting the logits
    per window cost it more than the model's dispatch)."""
    with collection_paused():
        sentences, spans, windows = _STAGES.prepare(documents)
        state = (sentences, spans, windows.owner, windows.word_positions, [len(ids) for ids in windows.token_ids])
        return _STAGES.batches(windows), pickle.dumps(state, pickle.HIGHEST_PROTOCOL)


def _finish(state, batch_logits, count):
    with collection_paused():
        return _STAGES.finish(*pickle.loads(state), batch_logits, count)


def _worker_died(error, chunks):
    """The error of a run whose worker died, naming the documents of `chunks`: those in flight,
    none of them handed on."""
    documents = [document for chunk in chunks for document in chunk]
    in_flight = ""
    if documents:
        count = f"{len(documents)} document{'s' if len(documents) != 1 else ''}"
        in_flight = f" with {count} in flight, not annotated: from {_named(documents[0])} to {_named(documents[-1])}"
    return RuntimeError(f"a worker process of the annotation ended abruptly ({error}){in_flight}; out of memory? "
                        "Run again with fewer --workers, or --workers 0 to annotate in this process alone")


def _named(document):
    return f"{document.id} ({document.source})" if document.source else document.id


WAITS = ("the workers' batches", "the model", "finished chunks")


def predictions_in_workers(annotator, chunks, workers, waited=None):
    """Yield `(chunk, found)` for each chunk of documents in order: `found` per document its
    entities `(start, end, type, score, model)`, or, where a stage of the chunk failed, the
    exception (the caller annotates that chunk again in its own process to name the document
    at fault). `workers` processes prepare chunks ahead of the model and finish them behind it.
    `waited` (a dict), if given, adds up the seconds this process waited for each of `WAITS`:
    what is slower than the model's dispatch."""
    waited = {} if waited is None else waited

    def timed(wait, result):
        start = time.perf_counter()
        try:
            return result()
        finally:
            waited[wait] = waited.get(wait, 0.0) + time.perf_counter() - start

    stages = pickle.dumps(TaggerHostStages(annotator))
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=WorkerContext(), initializer=worker_start,
                                                initargs=(blocked_in_workers(), f"{__name__}:load_stages", stages)) as pool:
        # chunks being prepared, on the accelerator (one dispatched while the one before is
        # read back and handed on), and being finished
        prepared, running, finishing = collections.deque(), collections.deque(), collections.deque()

        def died(error, *queues):
            """`error` naming the chunks of `queues` (entries `(chunk, ...)`, oldest first)."""
            return _worker_died(error, [entry[0] for queue in queues for entry in queue])

        def run_model():
            chunk, future = prepared.popleft()
            try:
                batches, state = timed(WAITS[0], future.result)
                collect = annotator.task.dispatch_window_batches(batches)
                running.append((chunk, state, collect))
            except concurrent.futures.process.BrokenProcessPool as error:
                raise died(error, finishing, running, [(chunk,)], prepared) from error
            except Exception as error:  # noqa: BLE001 - handed to the caller, which finds the document
                running.append((chunk, error, None))

        def hand_on():
            chunk, state, collect = running.popleft()
            if collect is None:
                finishing.append((chunk, state))
                return
            try:
                logits = timed(WAITS[1], lambda: collect(per_window=False))
                finishing.append((chunk, pool.submit(_finish, state, logits, len(chunk))))
            except concurrent.futures.process.BrokenProcessPool as error:
                raise died(error, finishing, [(chunk,)], running, prepared) from error
            except Exception as error:  # noqa: BLE001
                finishing.append((chunk, error))

        def finished():
            chunk, future = finishing.popleft()
            if isinstance(future, Exception):
                return chunk, future
            try:
                return chunk, timed(WAITS[2], future.result)
            except concurrent.futures.process.BrokenProcessPool as error:
                raise died(error, [(chunk,)], finishing, running, prepared) from error
            except Exception as error:  # noqa: BLE001
                return chunk, error

        reading_error = None

        def read():
            nonlocal reading_error
            try:
                yield from chunks
            except Exception as error:  # noqa: BLE001 - the chunks read before it are annotated first
                reading_error = error

        for chunk in read():
            try:
                prepared.append((chunk, pool.submit(_prepare, chunk)))
            except concurrent.futures.process.BrokenProcessPool as error:
                raise died(error, finishing, running, prepared, [(chunk,)]) from error
            if len(prepared) > workers:
                run_model()
            while len(running) > 1:
                hand_on()
            while len(finishing) > workers:
                yield finished()
        while prepared:
            run_model()
            while len(running) > 1:
                hand_on()
        while running:
            hand_on()
        while finishing:
            yield finished()
        if reading_error is not None:
            raise reading_error
