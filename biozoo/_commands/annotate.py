"""`biozoo annotate`: documents in, the same documents with predicted entities out."""

import sys

from biozoo._commands import PRECISION_CHOICES, PRECISION_HELP

INPUT_FORMATS = ("auto", "text", "jsonl", "pubtator", "bioc-xml", "bioc-json", "pubmed-xml")
OUTPUT_FORMATS = ("jsonl", "pubtator", "bioc-xml", "bioc-json")
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
    parser.add_argument("inputs", nargs="*", metavar="INPUT",
                        help="files, folders, .gz files, gs:// paths, or - for stdin (default)")
    parser.add_argument("--model", action="append", dest="models", metavar="MODEL",
                        help="a NER model: aioner_bioformer / aioner_pubmedbert, a registry task name, "
                        "hf://org/repo[@rev], a local HF directory or a `biozoo finetune ner` output; repeat for "
                        f"several (default: {DEFAULT_MODEL})")
    parser.add_argument("--input-format", choices=INPUT_FORMATS, default="auto")
    parser.add_argument("--output-format", choices=OUTPUT_FORMATS, default="jsonl")
    parser.add_argument("--output", default="-", help="output file (written atomically), or - for stdout (default)")
    parser.add_argument("--overlaps", choices=("keep", "longest", "score"), default="keep",
                        help="overlapping predictions (of several models): keep all (default), the longest, or "
                        "the highest-scoring")
    parser.add_argument("--drop-existing", action="store_true", help="remove the annotations the input carries")
    parser.add_argument("--skip-bad", action="store_true",
                        help="report a malformed document on stderr and go on (default: stop with an error)")
    parser.add_argument("--entity-types", default="ALL",
                        help="AIONER models: ALL (default) or types among Gene, Chemical, Disease, Species, Variant, "
                        "CellLine, comma-separated (one AIONER pass per type)")
    parser.add_argument("--aggregation", choices=["first", "average", "max", "simple", "none"], default="first",
                        help="token-classification models: how tokens become entities, as transformers' pipeline's "
                        "aggregation_strategy")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per model call")
    parser.add_argument("--precision", choices=PRECISION_CHOICES, default="float32",
                        help=PRECISION_HELP)
    parser.add_argument("--chunk-size", type=int, default=256, help="documents read and annotated together")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--xla", choices=["auto", "on", "off"], default="auto",
                        help="compile prediction with XLA (auto: on GPU/TPU only)")
    parser.set_defaults(func=annotate_command)


def annotate_command(args):
    if args.xla != "auto":
        import os

        os.environ["BIOZOO_XLA"] = args.xla
    from biozoo.annotate import AnnotationRun, load_annotator
    from biozoo.documents import read_documents, write_documents

    models = args.models or [DEFAULT_MODEL]
    if not args.models:
        print(DEFAULT_NOTICE, file=sys.stderr)
    types = tuple(t.strip() for t in args.entity_types.split(",") if t.strip()) or ("ALL",)
    annotators = [load_annotator(m, aggregation=args.aggregation, batch_size=args.batch_size, entity_types=types,
                                 precision=args.precision)
                  for m in models]
    if types != ("ALL",):
        from biozoo.annotate import AionerAnnotator

        for annotator in annotators:
            if not isinstance(annotator, AionerAnnotator):
                print(f"warning: --entity-types applies to AIONER models only; {annotator.name} tags the types "
                      "it was trained for", file=sys.stderr)
    skipped = []

    def on_skip(message):
        skipped.append(message)
        print(f"skipped: {message}", file=sys.stderr)

    run = AnnotationRun(annotators, overlaps=args.overlaps, chunk_size=args.chunk_size,
                        drop_existing=args.drop_existing, progress=not args.no_progress, skip_bad=args.skip_bad,
                        on_skip=on_skip)
    documents = read_documents(args.inputs or ["-"], fmt=args.input_format, skip_bad=args.skip_bad, on_skip=on_skip)
    written = write_documents(run.annotate(documents), args.output, args.output_format)
    summary = run.summary() + (f"; {len(skipped)} bad document(s) skipped" if skipped else "")
    print(f"{summary}; {written} written to {'stdout' if args.output == '-' else args.output}", file=sys.stderr)
    return 0
