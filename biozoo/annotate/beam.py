"""`biozoo annotate --runner beam`: the annotation run as an Apache Beam pipeline.

    input files -> Reshuffle -> chunks of documents (committed chunks skipped)
      -> RunInference(ChunkModelHandler)            [a cascade: small stage, then large stage]
      -> commit each chunk's shard, dead letters and manifest (`ShardStore`)

The models run through `apache_beam.ml.inference.RunInference` with a biozoo `ModelHandler`
that loads the task presets once per worker (Beam's own TensorFlow handlers load through
`tf.keras.models.load_model`, which Keras 3 refuses for SavedModels). The unit of inference is
a chunk (the unit of commit): the handler splits its documents into sentences and batches
them by length, exactly as plain `annotate` does, so both give the same annotations. When a
model raises on a chunk its documents are tried one at a time (as plain `annotate` does): those
that fail, or whose predictions do not fit their text, are dead-lettered one by one and the chunk
is committed; a chunk on each of whose documents the model raised (the worker's fault: memory,
device) goes to Beam's dead-letter output (`with_exception_handling`) and is recorded with the
reason, to be retried by the next run. An input file named twice is refused. Without `--runner` in the Beam options the pipeline
runs in this process on Beam's portable FnApiRunner (`--direct_num_workers N
--direct_running_mode multi_processing` for N worker processes); `--runner DataflowRunner`,
`FlinkRunner` or `SparkRunner` run it on a cluster.

Example:
    >>> job = AnnotationJob(models=("out/ncbi",), output_format="pubtator", drop_existing=True)
    >>> summary = annotate_corpus(job, ["pubmed25n0001.xml.gz"], "gs://bucket/out")
"""

from __future__ import annotations

import logging
import shlex
import sys
import time
from types import SimpleNamespace

_root_level = logging.getLogger().level
logging.getLogger().setLevel(logging.ERROR)  # Beam's import warns of GCP clients that local runs do not use
try:
    import apache_beam as beam
    from apache_beam.ml.inference.base import ModelHandler, PredictionResult, RunInference
    from apache_beam.options.pipeline_options import PipelineOptions
finally:
    logging.getLogger().setLevel(_root_level)

from biozoo.annotate.annotators import CascadeAnnotator, CascadeFirstPass, Sentences, load_annotator
from biozoo.annotate.job import distinct_input_files
from biozoo.annotate.shards import ShardStore, read_chunks
from biozoo.errors import DataFormatError

STAGES = ("annotate", "small", "large")
_LOADED = {}  # job -> its annotators, loaded by `annotate_corpus`: a worker in this process reuses them


class ChunkModelHandler(ModelHandler):
    """Beam's view of a biozoo annotation stage: `load_model` loads the stage's models (once
    per worker), `run_inference` annotates chunks. Stages: "annotate" (every model of the job),
    and a cascade's "small" (every sentence, and which ones to escalate) and "large" (the
    escalated sentences, then the chunk's checked predictions)."""

    def __init__(self, job, stage="annotate"):
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}, got {stage!r}")
        if (stage == "annotate") != (job.cascade is None):
            raise ValueError(f"stage {stage!r} does not fit a job {'with' if job.cascade else 'without'} a cascade")
        # one chunk a call: a chunk batches its own sentences by length
        super().__init__(min_batch_size=1, max_batch_size=1)
        self.job, self.stage = job, stage

    def load_model(self):
        job = self.job
        if self.stage == "annotate":
            return _Annotators(_LOADED.get(job) or job.annotators())
        if job in _LOADED:
            tagger = getattr(_LOADED[job][0], self.stage)
        else:  # a worker process: this stage's model only
            tagger = load_annotator(job.cascade[0 if self.stage == "small" else 1], aggregation=job.aggregation,
                                    batch_size=job.batch_size, precision=job.precision)
        small, large = (tagger, None) if self.stage == "small" else (None, tagger)
        return CascadeAnnotator(small, large, job.escalate_below, job.escalate_measure)

    def run_inference(self, batch, model, inference_args=None):
        run = getattr(self, f"_{self.stage}")
        return [PredictionResult(chunk, run(chunk, model)) for chunk in batch]

    def get_num_bytes(self, batch):
        return sum(len(passage.text) for chunk in batch for d in chunk.documents for passage in d.passages)

    def get_metrics_namespace(self):
        return f"biozoo_{self.stage}"

    def _annotate(self, chunk, model):
        run = self.job.run(model.annotators, progress=False, skip_bad=True, on_skip=_quiet)
        found = run.predict_chunk(chunk.documents)
        _fail_if_the_model_failed(chunk.documents, found)
        return _finished(chunk, run, found)

    def _small(self, chunk, cascade):
        try:
            first = cascade.first_pass(chunk.documents)
        except Exception:  # find the document(s) at fault, dead-letter them, read the others
            errors = []
            for document in chunk.documents:
                try:
                    cascade.first_pass([document])
                    errors.append(None)
                except Exception as error:
                    errors.append(error)
            _fail_if_the_model_failed(chunk.documents, errors)
            chunk.dead_letters = chunk.dead_letters + [
                {"id": d.id, "source": d.source, "stage": "annotate", "reason": _document_error(d, error)}
                for d, error in zip(chunk.documents, errors) if error is not None]
            chunk.documents = [d for d, error in zip(chunk.documents, errors) if error is None]
            first = cascade.first_pass(chunk.documents)
        chunk.stage_state = first
        chunk.stats = {**chunk.stats, "sentences": len(first.entities), "escalated": len(first.escalate)}
        return chunk

    def _large(self, chunk, cascade):
        first, chunk.stage_state = chunk.stage_state, None
        try:
            found = cascade.second_pass(first)
        except Exception:  # find the document(s) at fault: one at a time, as plain `annotate` does
            found = []
            for part in _per_document(first):
                try:
                    found.extend(cascade.second_pass(part))
                except Exception as error:
                    found.append(error)
            _fail_if_the_model_failed(chunk.documents, found)
        # the cascade's own earlier predictions (read from JSONL) are replaced, as plain `annotate` replaces them
        names = SimpleNamespace(name="cascade", models=(first.model, cascade.large.name))
        run = self.job.run([names], progress=False, skip_bad=True, on_skip=_quiet)
        return _finished(chunk, run, found)


class ChunkFailed(RuntimeError):
    """The model failed on every document of a chunk: the worker's fault (memory, device) rather
    than the documents'; the chunk goes to Beam's dead-letter output and the next run retries it."""


def _document_error(document, error):
    return f"{document.source or 'document'} (id {document.id}): {error}"


def _fail_if_the_model_failed(documents, found):
    """Raise `ChunkFailed` when the model raised on each of `documents` (`found`: per document, its
    predictions or the error). A document that failed alone among others, or on its own data
    (`DataFormatError`), is a dead letter instead; so is one whose predictions do not fit its text."""
    errors = [error for error in found if isinstance(error, Exception)]
    if documents and len(errors) == len(documents) and not any(isinstance(e, DataFormatError) for e in errors):
        raise ChunkFailed(f"every document of the chunk failed in the model; the first: "
                          f"{_document_error(documents[0], errors[0])}")


def _finished(chunk, run, found):
    """`chunk` with its documents finished by `run` from `found`; those that fail are dead letters."""
    chunk.documents = list(run.finish_chunk(chunk.documents, found))
    chunk.dead_letters = chunk.dead_letters + [{**letter, "stage": "annotate"} for letter in run.dead_letters]
    return chunk


def _per_document(first):
    """A cascade's first pass over a chunk as one first pass per document (to find the document
    the large model fails on)."""
    escalated = set(first.escalate)
    for d in range(first.count):
        rows = [i for i, (owner, _) in enumerate(first.sentences.owners) if owner == d]
        sentences = Sentences([first.sentences.texts[i] for i in rows], [(0, first.sentences.owners[i][1]) for i in rows])
        yield CascadeFirstPass(sentences, [first.entities[i] for i in rows], [first.confidence[i] for i in rows],
                               [k for k, i in enumerate(rows) if i in escalated], 1, first.model)


class _Annotators:
    """The annotators of a stage, as one object (Beam keeps a weak reference to the model)."""

    def __init__(self, annotators):
        self.annotators = annotators


def _quiet(message):
    pass


class _ReadChunks(beam.DoFn):
    def __init__(self, job, done):
        self.job, self.done = job, frozenset(done)

    def process(self, item):
        position, source = item
        yield from read_chunks(source, position, self.job.chunk_size, self.job.input_format, self.done,
                               strict=self.job.strict)


class _Commit(beam.DoFn):
    """Commit each annotated chunk (or, from the dead-letter output, each chunk whose inference
    failed: every document dead-lettered, the chunk left to be retried)."""

    def __init__(self, root, output_format, progress, failed=False):
        self.root, self.output_format, self.progress, self.failed = root, output_format, progress, failed

    def setup(self):
        self.store = ShardStore(self.root, self.output_format)

    def process(self, element):
        if self.failed:
            batch, (error_type, error, lines) = element  # Beam's dead letters: (type, repr, traceback lines)
            message = (lines[-1].strip().partition(": ")[2] if lines else "") or error  # the error's own message
            name = getattr(error_type, "__name__", str(error_type))
            reason = "inference failed for the chunk: " + (message if name == ChunkFailed.__name__ else f"{name}: {message}")
            for chunk in batch:
                letters = chunk.dead_letters + [{"id": d.id, "source": d.source, "stage": "inference", "reason": reason}
                                                for d in chunk.documents]
                yield self._commit(chunk, [], letters, complete=False)
        else:
            chunk = element.inference
            yield self._commit(chunk, chunk.documents, chunk.dead_letters)

    def _commit(self, chunk, documents, dead_letters, complete=True):
        manifest = self.store.commit(chunk, documents, dead_letters, complete)
        if self.progress:
            print(f"biozoo: committed {chunk.key}: {len(documents)} documents, {manifest['entities']} entities"
                  + (f", {len(dead_letters)} dead-lettered" if dead_letters else ""), file=sys.stderr, flush=True)
        return manifest


def pipeline_options(beam_options=""):
    """Beam's `PipelineOptions` from a command-line string, and the runner to use: Beam's
    portable FnApiRunner in this process unless the options name a `--runner`."""
    flags = shlex.split(beam_options or "")
    options = PipelineOptions(flags)
    if any(flag == "--runner" or flag.startswith("--runner=") for flag in flags):
        return options, None
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    return options, FnApiRunner()


def build_pipeline(pipeline, job, files, store, done, progress=True):
    """Add the annotation steps to `pipeline`: `files` in, chunks committed to `store`."""
    # the files are spread over the workers, each read and annotated chunk by chunk where it lands: a
    # reshuffle of the chunks themselves would hold the whole corpus at once on a local runner
    chunks = (pipeline
              | "Files" >> beam.Create(list(enumerate(files)))
              | "Spread" >> beam.Reshuffle()
              | "Read" >> beam.ParDo(_ReadChunks(job, done)))
    if job.cascade is None:
        tagged, dead = chunks | "Annotate" >> RunInference(ChunkModelHandler(job)).with_exception_handling()
        failures = [dead.failed_inferences]
    else:
        first, dead_small = chunks | "Small" >> RunInference(ChunkModelHandler(job, "small")).with_exception_handling()
        tagged, dead_large = (first
                              | "FirstPass" >> beam.Map(lambda result: result.inference)
                              | "Large" >> RunInference(ChunkModelHandler(job, "large")).with_exception_handling())
        failures = [dead_small.failed_inferences, dead_large.failed_inferences]
    tagged | "Commit" >> beam.ParDo(_Commit(store.root, store.output_format, progress))
    (failures | "Failures" >> beam.Flatten()
     | "CommitFailed" >> beam.ParDo(_Commit(store.root, store.output_format, progress, failed=True)))


def annotate_corpus(job, inputs, output, beam_options="", progress=True):
    """Annotate every document of `inputs` (files, folders, `gs://` paths or globs) into the
    shard folder `output` with `job`, on Apache Beam; resumes a run that wrote there before.
    Returns the summary (also written to OUTPUT/summary.json)."""
    files = distinct_input_files(inputs)
    if not files:
        raise ValueError("no input files: give files, folders or gs:// paths (--runner beam reads no stdin)")
    if "-" in files:
        raise ValueError("--runner beam reads files, not stdin")
    # fail here, not in every worker, on a bad model (before anything is written); converted once, cached;
    # reused by in-process workers
    _LOADED.clear()
    _LOADED[job] = job.annotators()
    store = ShardStore(output, job.output_format)
    store.claim({**job.as_record(), "inputs": files})
    done = store.done_keys()
    if progress:
        print(f"biozoo: {len(files)} input file(s); {len(done)} chunk(s) already committed in {store.root}",
              file=sys.stderr)
    options, runner = pipeline_options(beam_options)
    started = time.perf_counter()
    try:
        with beam.Pipeline(runner=runner, options=options) as pipeline:
            build_pipeline(pipeline, job, files, store, done, progress)
    finally:
        _LOADED.clear()
    summary = store.summary()
    # an incomplete chunk is never done, so every one is this run's
    summary["this_run"] = {"chunks_committed": summary["chunks"] - len(done) - summary["incomplete_chunks"],
                           "chunks_failed": summary["incomplete_chunks"], "chunks_already_done": len(done),
                           "seconds": round(time.perf_counter() - started, 2)}
    store.write_summary(summary)
    return summary
