"""`biozoo annotate`: documents in, the same documents with predicted entities out."""

import json
import os
import sys

from biozoo._commands import PRECISION_HELP, data_argument, documents_argument
from biozoo.choices import (
    AGGREGATION_STRATEGIES,
    ANNOTATE_CHUNK_SIZE,
    CONFIDENCE_MEASURES,
    DEFAULT_AGGREGATION,
    DEFAULT_CONFIDENCE_MEASURE,
    DEFAULT_LINK_ENCODER,
    DEFAULT_OVERLAP_RULE,
    DEFAULT_PRECISION,
    OVERLAP_RULES,
    PRECISIONS,
    SWITCHES,
)
from biozoo.documents import (
    INPUT_FORMATS,
    OUTPUT_FORMATS,
    check_not_an_input,
    iter_input_files,
    output_format_for,
    read_documents,
    write_documents,
)
from biozoo.linking.abbreviations import DEFAULT_ENGINE, ENGINES
from biozoo.linking.species import DEFAULT_TAXON_RULE, TAXON_RULES
from biozoo.task_kinds import task_kind

DEFAULT_MODEL = "aioner_bioformer"
DEFAULT_NOTICE = ("no --model given: using aioner_bioformer (AIONER, the NER of PubTator3: Gene, Chemical, Disease, "
                  "Species, Variant, CellLine; MIT licence, github ncbi/AIONER)")


def register(subparsers):
    parser = subparsers.add_parser(
        "annotate",
        help="tag documents (text, JSONL, PubTator, BioC, PubMed XML) with NER models",
        description="Read documents, find entities with one or more NER models, and write the documents "
        "with their predictions. Offsets index each document's text exactly; annotations already in the "
        "input stay apart from the predictions (or go, with --drop-existing). Text input: one document "
        "per line. Progress and a summary go to stderr.",
    )
    parser.add_argument("inputs", nargs="*", metavar="INPUT", type=documents_argument,
                        help="files, folders, .gz files, gs:// paths, - for stdin (default), or example-pubtator "
                        "(4 PubMed abstracts packaged with biozoo)")
    parser.add_argument("--model", action="append", dest="models", metavar="MODEL",
                        help="a NER model: aioner_bioformer / aioner_pubmedbert, a registry task name, "
                        "hf://org/repo[@rev], a local HF directory or a `biozoo finetune ner` output; repeat for "
                        f"several (default: {DEFAULT_MODEL})")
    parser.add_argument("--input-format", choices=("auto", *INPUT_FORMATS), default="auto")
    parser.add_argument("--output-format", choices=OUTPUT_FORMATS, default=None,
                        help="default: from the --output file's extension (.jsonl, .pubtator, .bioc.xml, .bioc.json; "
                        "an ambiguous one such as .json is refused), jsonl on stdout")
    parser.add_argument("--output", default="-", help="output file (written atomically; never one of the inputs), "
                        "or - for stdout (default)")
    parser.add_argument("--overlaps", choices=OVERLAP_RULES, default=DEFAULT_OVERLAP_RULE,
                        help="overlapping predictions (of several models): keep all (default), the longest, or "
                        "the highest-scoring")
    parser.add_argument("--drop-existing", action="store_true",
                        help="remove the annotations the input carries (and the predictions of an earlier run in JSONL "
                        "or BioC); needed for PubTator output of an input that carries annotations")
    parser.add_argument("--skip-bad", action="store_true",
                        help="report a malformed document, or one the output format cannot hold, on stderr and go on "
                        "(default: stop with an error); of a "
                        "damaged .gz every complete document before the damage is kept")
    parser.add_argument("--strict", action="store_true",
                        help="refuse a document whose input annotation's text differs from the document's at its "
                        "offsets (default: drop that annotation with a warning naming file, line and document, "
                        "keep the document)")
    parser.add_argument("--entity-types", default="ALL",
                        help="AIONER models: ALL (default) or types among Gene, Chemical, Disease, Species, Variant, "
                        "CellLine, comma-separated (one AIONER pass per type)")
    parser.add_argument("--aggregation", choices=AGGREGATION_STRATEGIES, default=DEFAULT_AGGREGATION,
                        help="token-classification models: how tokens become entities, as transformers' pipeline's "
                        "aggregation_strategy")
    parser.add_argument("--batch-size", default="auto",
                        help="sentences per model call: a number, or auto (256 where the model runs on a GPU or TPU, "
                        "which calls of 64 would leave waiting on the host; else 64)")
    parser.add_argument("--precision", choices=PRECISIONS, default=DEFAULT_PRECISION,
                        help=PRECISION_HELP)
    parser.add_argument("--chunk-size", type=int, default=ANNOTATE_CHUNK_SIZE, help="documents read and annotated together")
    parser.add_argument("--workers", default="auto",
                        help="processes for a tagger's host stages (sentences, tokens, entity grouping) while this "
                        "one runs the model: a number, or auto (the host's cores less two, at most 16, where the "
                        "model runs on a GPU or TPU; else 0, all in this process)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    cascade = parser.add_argument_group("cascade inference")
    cascade.add_argument("--cascade", metavar="SMALL,LARGE",
                         help="two token-classification models: SMALL tags every sentence, LARGE re-tags the "
                         "sentences where SMALL is unsure (instead of --model)")
    cascade.add_argument("--escalate-below", type=float, metavar="P",
                         help="escalate a sentence whose least confident word is below P "
                         "(`biozoo cascade-calibrate` picks P)")
    cascade.add_argument("--escalate-measure", choices=CONFIDENCE_MEASURES, default=DEFAULT_CONFIDENCE_MEASURE,
                         help="a word's confidence: its top label's probability (default) or the margin over the "
                         "second label")
    beam = parser.add_argument_group("PubMed scale (Apache Beam)")
    beam.add_argument("--runner", choices=["local", "beam"], default="local",
                      help="local: this process (default); beam: an Apache Beam pipeline writing resumable shards "
                      "to the --output folder (pip install 'biozoo[beam]')")
    beam.add_argument("--beam-options", default="",
                      help='Beam pipeline options, e.g. "--direct_num_workers 2 --direct_running_mode '
                      'multi_processing" (default: Beam\'s portable runner in this process), or "--runner '
                      'DataflowRunner --project P --region R --temp_location gs://B/tmp"')
    parser.add_argument("--xla", choices=SWITCHES, default="auto",
                        help="compile prediction with XLA (auto: on GPU/TPU only)")
    add_link_arguments(parser)
    parser.set_defaults(func=annotate_command)

    parser = subparsers.add_parser(
        "cascade-calibrate",
        help="pick a cascade's --escalate-below P for a target agreement with the large model",
        description="Tag development sentences with both models, then for each threshold P print the share of the "
        "large model's entities the cascade keeps, the sentences and tokens escalated and the expected speed-up "
        "over the large model alone (from both models' measured times), as a table and a PNG plot. The chosen P "
        "is the smallest reaching --target; it is printed as JSON on stdout.",
    )
    parser.add_argument("--small", required=True, help="the small token-classification model (any annotate handle)")
    parser.add_argument("--large", required=True, help="the large token-classification model")
    parser.add_argument("--data", required=True, type=data_argument,
                        help="a NER data folder (its --split is read, gold tags give F1) or document files "
                        "(PubTator, BioC, ...; their sentences)")
    parser.add_argument("--split", default="dev", help="NER data folder: the split to read (default dev)")
    parser.add_argument("--target", type=float, default=0.99,
                        help="share of the large model's entities the cascade must keep (default 0.99)")
    parser.add_argument("--escalate-measure", choices=CONFIDENCE_MEASURES, default=DEFAULT_CONFIDENCE_MEASURE)
    parser.add_argument("--plot", default="cascade-calibration.png", help="the PNG plot to write")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--precision", choices=PRECISIONS, default=DEFAULT_PRECISION, help=PRECISION_HELP)
    parser.set_defaults(func=calibrate_command)


def add_link_arguments(parser):
    """annotate's concept-id options (biozoo.linking)."""
    group = parser.add_argument_group("concept ids (entity linking)")
    group.add_argument("--link", action="append", metavar="[TYPE[,TYPE]=]DICTIONARY",
                       help="give each predicted mention of TYPE a concept id from DICTIONARY: a name (mesh-diseases, "
                       "mesh-chemicals, ctd-diseases, ctd-chemicals, ncbi-gene[:TAXA], ncbi-gene-human, "
                       "ncbi-taxonomy, cellosaurus; `biozoo data download NAME` fetches it), FORMAT:PATH, or a file "
                       "of id<TAB>name lines; without TYPE=, the dictionary's own types; repeat for several")
    group.add_argument("--link-encoder", default=DEFAULT_LINK_ENCODER, metavar="HANDLE",
                       help="the encoder whose embeddings find the nearest dictionary name (default: SapBERT; any "
                       "biozoo handle, e.g. a `biozoo finetune link` output; 'none': exact, normalized and char "
                       "3-gram matching only)")
    group.add_argument("--link-threshold", type=float, metavar="S",
                       help="a mention whose best candidate scores below S gets no id (default 0.6 with an encoder, "
                       "0.5 without)")
    group.add_argument("--link-sparse-weight", type=float, default=0.0, metavar="W",
                       help="add W x the char 3-gram TF-IDF cosine (scispaCy's) to the dense score (default 0)")
    group.add_argument("--abbreviations", choices=ENGINES + ("none",), default=None,
                       help=f"find abbreviations (default with --link: {DEFAULT_ENGINE}, used to link short forms); "
                       "given explicitly, also write them as LongForm / ShortForm predictions")
    group.add_argument("--taxon-rule", choices=TAXON_RULES, default=DEFAULT_TAXON_RULE,
                       help="a gene mention's species: the nearest species mention before it in its sentence, else "
                       "the document's most frequent (default; 87 %% of 85 hand-checked gene mentions), the nearest "
                       "anywhere (68 %%), the most frequent (87 %%), or always human (51 %%)")
    group.add_argument("--trust-unverified", action="store_true",
                       help="accept dictionary downloads with no recorded sha256 (their digests are printed)")


def _link_options(args):
    engine = None if args.abbreviations == "none" else (args.abbreviations or DEFAULT_ENGINE)
    encoder = None if (args.link_encoder or "").lower() == "none" else args.link_encoder
    return dict(link=tuple(args.link or ()), link_encoder=encoder, link_threshold=args.link_threshold,
                link_sparse_weight=args.link_sparse_weight, abbreviations=engine,
                write_abbreviations=args.abbreviations not in (None, "none"), taxon_rule=args.taxon_rule,
                trust_unverified=args.trust_unverified)


def annotate_command(args):
    if args.xla != "auto":
        os.environ["BIOZOO_XLA"] = args.xla
    if args.runner != "beam":
        args.output_format = output_format_for(args.output, args.output_format)
    check_not_an_input(args.output, args.inputs or ["-"])
    _check_inputs(args.inputs or [])
    args.batch_size = model_batch_size(args.batch_size)
    job = job_from_arguments(args)
    if args.runner == "beam":
        return _annotate_on_beam(args, job)
    workers = host_workers(args.workers)
    annotators = job.annotators()
    _warn_entity_types(job, annotators)
    _warn_link_types(job, annotators)
    skipped = []

    def on_skip(message):
        skipped.append(message)
        print(f"skipped: {message}", file=sys.stderr)

    run = job.run(annotators, progress=not args.no_progress, skip_bad=args.skip_bad, on_skip=on_skip,
                  workers=workers)
    documents = read_documents(args.inputs or ["-"], fmt=args.input_format, skip_bad=args.skip_bad, on_skip=on_skip,
                               strict=getattr(args, "strict", False))
    written = write_documents(run.annotate(documents), args.output, args.output_format, on_unwritable=run.unwritable,
                              annotate_run=True)
    if not run.documents and not skipped:
        print(f"warning: no document in {', '.join(args.inputs or ['standard input'])}", file=sys.stderr)
    summary = run.summary() + (f"; {len(skipped)} bad document(s) skipped" if skipped else "")
    if documents.dropped:
        summary += (f"; {documents.dropped} input annotation(s) dropped (their text differs from the document's at "
                    "their offsets; --strict refuses such documents)")
    summary += "".join(annotator.summary() for annotator in annotators)
    if job.link:
        from biozoo.linking.linker import describe_links

        summary += f"; {describe_links(run.link_methods)}"
    print(f"{summary}; {written} written to {'stdout' if args.output == '-' else args.output}", file=sys.stderr)
    return 0


def _check_inputs(inputs):
    """Before any model loads: every local input exists, a folder holds a file, and no file is named twice."""
    from biozoo.annotate.job import distinct_input_files

    for item in inputs:
        if item != "-" and "://" not in item and next(iter_input_files([item]), None) is None:
            raise FileNotFoundError(f"input folder {item} holds no file (hidden files are skipped)")
    distinct_input_files(inputs)


def job_from_arguments(args):
    from biozoo.annotate.job import AnnotationJob

    cascade = None
    if args.cascade:
        if args.models:
            raise ValueError("--cascade SMALL,LARGE replaces --model: give one or the other")
        cascade = tuple(m.strip() for m in args.cascade.split(","))
        if len(cascade) != 2 or not all(cascade):
            raise ValueError(f"--cascade takes two models, SMALL,LARGE; got {args.cascade!r}")
    elif args.escalate_below is not None:
        raise ValueError("--escalate-below needs --cascade SMALL,LARGE")
    models = () if cascade else tuple(args.models or [DEFAULT_MODEL])
    if not args.models and not cascade:
        print(DEFAULT_NOTICE, file=sys.stderr)
    types = tuple(t.strip() for t in args.entity_types.split(",") if t.strip()) or ("ALL",)
    return AnnotationJob(models=models, cascade=cascade, escalate_below=args.escalate_below,
                         escalate_measure=args.escalate_measure, input_format=args.input_format,
                         output_format=args.output_format or "jsonl", overlaps=args.overlaps,
                         drop_existing=args.drop_existing, entity_types=types, aggregation=args.aggregation,
                         batch_size=args.batch_size, precision=args.precision, chunk_size=args.chunk_size,
                         strict=getattr(args, "strict", False), **_link_options(args))


def host_workers(value):
    """`--workers`: a count, or "auto" (the host's cores less two, at most 16, when the model runs
    on an accelerator: one process cannot feed it; else 0)."""
    if value != "auto":
        return _count(value, "--workers", "a number of processes (0 or more)", least=0)
    if not _on_accelerator():
        return 0
    return max(0, min(16, (os.cpu_count() or 1) - 2))


def model_batch_size(value):
    """`--batch-size`: a count, or "auto" (256 sentences per model call on an accelerator, 64 else)."""
    if value != "auto":
        return _count(value, "--batch-size", "a number of sentences (1 or more)", least=1)
    return 256 if _on_accelerator() else 64


def _count(value, option, what, least):
    try:
        count = int(value)
    except ValueError:
        count = least - 1
    if count < least:
        raise ValueError(f"{option} takes {what} or auto, got {value!r}")
    return count


def _on_accelerator():
    from biozoo.train.distribution import accelerators, has_gpu

    return bool(accelerators() or has_gpu())


def _warn_entity_types(job, annotators):
    if job.entity_types != ("ALL",):
        for annotator in annotators:
            if not hasattr(annotator, "entity_types"):
                print(f"warning: --entity-types applies to AIONER models only; {annotator.name} tags the types "
                      "it was trained for", file=sys.stderr)


def _tagged_types(annotator):
    """The entity types a token-classification annotator (or a cascade's) tags; None for AIONER,
    whose types are asked for at run time."""
    tagger = getattr(annotator, "small", annotator)
    names = getattr(getattr(tagger, "task", None), "label_names", None)
    return {name.split("-", 1)[-1] for name in names if name != "O"} if names else None


def _warn_link_types(job, annotators):
    """A --link whose types the models never tag would link nothing: say so before the run."""
    from biozoo.linking import default_link_types, parse_link_spec
    from biozoo.linking.pipeline import ANY_TYPE

    tagged = [_tagged_types(annotator) for annotator in annotators]
    if not job.link or any(types is None for types in tagged):
        return
    tagged = sorted(set().union(*tagged))
    for spec in job.link:
        wanted, handle = parse_link_spec(spec)
        wanted = wanted or default_link_types(handle)
        if ANY_TYPE not in wanted and not set(wanted) & set(tagged):
            print(f"warning: --link {spec} links mentions of type {', '.join(wanted)}, and the model tags "
                  f"{', '.join(tagged) or 'none'}: it will link nothing; name the types, e.g. --link "
                  f"{','.join(tagged)}={handle}", file=sys.stderr)


def _annotate_on_beam(args, job):
    if args.output == "-":
        raise ValueError("--runner beam writes shards into a folder: give --output DIR (local or gs://)")
    try:
        from biozoo.annotate.beam import annotate_corpus
    except ImportError as error:
        raise ValueError(f"--runner beam needs Apache Beam: pip install 'biozoo[beam]' ({error})") from None
    summary = annotate_corpus(job, args.inputs or [], args.output, args.beam_options, progress=not args.no_progress)
    line = (f"read {summary['read']} documents: {summary['annotated']} annotated, {summary['dead_lettered']} "
            f"dead-lettered; {summary['entities']} entities in {summary['shards']} shards ({summary['this_run']['chunks_committed']} "
            f"chunks committed now, {summary['this_run']['chunks_already_done']} done before)")
    if summary["incomplete_chunks"]:
        line += (f"; {summary['incomplete_chunks']} chunk(s) failed (their documents are dead-lettered with the "
                 "reason): run the same command again to retry them")
    if summary.get("annotations_dropped"):
        line += (f"; {summary['annotations_dropped']} input annotation(s) dropped (their text differs from the "
                 "document's at their offsets; --strict dead-letters such documents)")
    if job.link:
        from biozoo.linking.linker import describe_links

        line += f"; {describe_links(summary.get('link_methods', {}))}"
    if "escalated" in summary:
        line += (f"; cascade: {summary['escalated']} of {summary['sentences']} sentences escalated "
                 f"({summary['escalated_fraction']:.1%})")
    print(f"{line}; {args.output}/summary.json", file=sys.stderr)
    print(json.dumps(summary))
    return 0


def calibrate_command(args):
    from biozoo.annotate.annotators import load_annotator
    from biozoo.annotate.calibrate import calibrate, plot, table

    texts, gold = _calibration_sentences(args.data, args.split)
    models = [load_annotator(m, batch_size=args.batch_size, precision=args.precision) for m in (args.small, args.large)]
    for model in models:
        if not hasattr(model, "tag"):
            raise ValueError(f"{model.name}: a cascade needs token-classification models")
    print(f"calibrating on {len(texts)} sentences of {args.data}", file=sys.stderr)
    result = calibrate(*models, texts, args.target, args.escalate_measure, gold)
    print(table(result), file=sys.stderr)
    print(f"small model {result.small_seconds:.2f} s, large model {result.large_seconds:.2f} s on all sentences"
          + (f"; F1 small {result.small_f1:.2f}, large {result.large_f1:.2f}" if gold is not None else ""),
          file=sys.stderr)
    plot(result, args.plot)
    print(f"plot: {args.plot}", file=sys.stderr)
    chosen = dict(result.chosen, target=args.target, measure=args.escalate_measure,
                  small_seconds=round(result.small_seconds, 3), large_seconds=round(result.large_seconds, 3),
                  small_f1=result.small_f1, large_f1=result.large_f1, sentences=len(texts), plot=os.fspath(args.plot))
    print(json.dumps(chosen))
    return 0


def _calibration_sentences(data, split):
    """Texts (and gold spans, for a NER data folder) to calibrate on."""
    from biozoo.annotate.annotators import Sentences

    if os.path.isdir(data):
        from biozoo.data.ner import find_split, read_ner

        has_splits = any(name.endswith(task_kind("ner").data_extensions) for name in os.listdir(data))
        path = find_split(data, split) if has_splits else None  # a NER folder without that split: its error
        if path is not None:
            from seqeval.metrics.sequence_labeling import get_entities

            texts, gold = [], []
            for sentence in read_ner(path):
                starts, position = [], 0
                for word in sentence.words:
                    starts.append(position)
                    position += len(word) + 1
                texts.append(" ".join(sentence.words))
                gold.append({(starts[a], starts[b] + len(sentence.words[b]), kind)
                             for kind, a, b in get_entities(list(sentence.tags))})
            return texts, gold
    return Sentences.of(list(read_documents([data]))).texts, None
