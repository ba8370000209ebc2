"""`biozoo benchmark` and `biozoo data download` (the benchmark grid, which imports Keras, is imported
when a benchmark runs)."""

import argparse
import dataclasses
import json
import sys

from biozoo._commands.train import add_strategy_arguments, resolve_strategy_from
from biozoo._io import read_json
from biozoo.benchmark.download import download
from biozoo.benchmark.suites import SIZES, load_suite, suite_names
from biozoo.linking.sources import dictionary_table, download_dictionary, load_dictionary, raw_directory
from biozoo.presets.handles import parse_handle


def _positive(convert):
    def parse(text):
        value = convert(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text}: give a positive number")
        return value
    parse.__name__ = convert.__name__
    return parse


def register(subparsers):
    parser = subparsers.add_parser(
        "benchmark",
        help="reproduce a paper's table: every task x seed fine-tuned, measured against published",
        description="Fine-tune PRESET on every task of SUITE with the paper's recipe for its size, once per "
        "seed (each cell a `biozoo finetune` run; a rerun of the same command finishes only the missing "
        "cells), then write OUTPUT/report.md, report.json and report.png: per task every seed's score, "
        "mean, SD, the registry's published value for this checkpoint and the difference.",
    )
    parser.add_argument("suite", choices=suite_names())
    parser.add_argument("--preset", required=True, help="registry name, hf://org/repo, or a local directory")
    parser.add_argument("--tasks", nargs="+", help="only these tasks of the suite (default: all)")
    parser.add_argument("--seeds", type=_positive(int), help="runs per task (default: as the paper), seeds 42, 43, ...")
    parser.add_argument("--first-seed", type=int, default=42)
    parser.add_argument("--data", default="data", help="root of the data sets, laid out as `biozoo data download` "
                        "writes them (ner/NCBI-disease, re/chemprot, qa/bioasq, ...)")
    parser.add_argument("--output", required=True)
    parser.add_argument("--size", choices=SIZES, help="which recipe rows to use (default: from the hidden size: "
                        "tiny < 512 <= base < 1024 <= large)")
    parser.add_argument("--epochs", type=_positive(float), help="shortened runs: train every task this many epochs instead "
                        "of the recipe's (the report says so)")
    parser.add_argument("--cross-corpus", action="store_true",
                        help="also score each NER model on the suite's other corpora of its entity type "
                        "(by offsets on gold documents where DATA has them, else on test sentences)")
    parser.add_argument("--checkpoint-every", type=_positive(int), help="steps; a killed cell resumes from its checkpoint")
    parser.add_argument("--dry-run", action="store_true", help="print the cells and their commands; run nothing")
    add_strategy_arguments(parser)
    parser.set_defaults(func=benchmark_command)

    data = subparsers.add_parser("data", help="benchmark data sets and linking dictionaries: download",
                                 description="Benchmark data sets and entity-linking dictionaries.")
    data_commands = data.add_subparsers(dest="data_command", metavar="ACTION")
    data_commands.required = True
    download = data_commands.add_parser(
        "download",
        help="fetch a suite's (or one task's) data sets from their public sources",
        description="Fetch each data set of SUITE (or the data set of TASK) from its public source into "
        "OUTPUT, laid out as `biozoo benchmark --data` reads it. Every file is checked against the sha256 "
        "recorded for it and written atomically; one that differs is refused. Data sets that need a login "
        "or a licence are listed with how to get them. Offline, it prints what to download by hand. A "
        "dictionary name (mesh-diseases, ctd-chemicals, ncbi-gene, ...) fetches that dictionary into biozoo's "
        "cache, where `biozoo annotate --link NAME` finds it: each file is read through its format's reader "
        "before it is kept (a truncated or corrupt file is refused and nothing is cached).",
    )
    download.add_argument("name", help="a suite (" + ", ".join(suite_names()) + "), tests (the corpora the tests read beyond the "
                          "packaged NCBI-disease), a task / data set name, or a dictionary (see "
                          "`biozoo.linking.dictionary_names()`)")
    download.add_argument("--output", default=None, help="where data sets go (default: data); dictionaries go to "
                          "biozoo's cache ($BIOZOO_CACHE/dictionaries)")
    download.add_argument("--sources", help="a JSON file of sources to use instead of biozoo's (mirrors)")
    download.add_argument("--trust-unverified", action="store_true",
                          help="accept files the sources record no sha256 for (their digests are printed)")
    download.set_defaults(func=download_command)


def benchmark_command(args):
    from biozoo.benchmark.grid import BenchmarkPlan, plan_cells, preset_config, resolve_plan, run_benchmark

    plan = BenchmarkPlan(args.suite, args.preset, data=args.data, output=args.output, tasks=tuple(args.tasks or ()),
                         seeds=args.seeds, first_seed=args.first_seed, size=args.size, epochs=args.epochs,
                         cross_corpus=args.cross_corpus, checkpoint_every=args.checkpoint_every,
                         strategy=args.strategy, tpu=args.tpu)
    suite = load_suite(args.suite)
    if args.dry_run:
        parse_handle(args.preset)  # an unknown name or missing folder is refused here too
        config = preset_config(args.preset, download=False)
        if config is None and args.size is None:
            plan = dataclasses.replace(plan, size="base")
            print("size: base assumed (this model's size is read when it runs; give --size to choose)")
        plan, positions = resolve_plan(plan, config)
        cells, skipped, notes = plan_cells(plan, suite, plan.size, positions)
        for cell in cells:
            state = "done" if cell.done else "blocked" if cell.blocked else "to run"
            print(f"{cell.task} seed {cell.seed} ({state}): {cell.command()}")
            print(f"    recipe: {cell.recipe['from']}" + (f"; biozoo defaults for {', '.join(cell.recipe['defaults'])}"
                                                           if cell.recipe["defaults"] else ""))
        for name, why in skipped.items():
            print(f"{name}: skipped, {why}")
        for name, note in notes.items():
            print(f"note ({name}): {note}")
        return 0
    report = run_benchmark(plan, strategy=resolve_strategy_from(args, lambda m: print(m, file=sys.stderr)))
    print(json.dumps({name: {k: t[k] for k in ("n", "mean", "sd", "difference")}
                      for name, t in report["tasks"].items()}))
    # this run's cells decide: cells an earlier, larger run of the same OUTPUT left are only reported
    asked = set(args.tasks or suite.tasks)
    seeds = {args.first_seed + i for i in range(args.seeds or suite.seeds)}
    failed = [name for name, t in report["tasks"].items() if name in asked and seeds & set(t["missing_seeds"])]
    if failed:
        print(f"benchmark: cells of {', '.join(failed)} did not finish (see {args.output}/report.md); rerun the "
              "same command to retry them", file=sys.stderr)
        return 1
    if not asked - set(report["skipped"]):
        print(f"benchmark: no task of {', '.join(sorted(asked))} could run (see the reasons above)", file=sys.stderr)
        return 1
    return 0


def download_command(args):
    if _is_dictionary(args.name, args.sources):
        return _download_dictionary(args)
    result = download(args.name, args.output or "data", sources_file=args.sources,
                      trust_unverified=args.trust_unverified)
    print(json.dumps(result))
    return 0 if result["complete"] else 3


def _is_dictionary(name, sources_file):
    """Whether `name` names a dictionary of biozoo's table, or of `sources_file` when that is a
    dictionaries table ({"dictionaries": ...}) rather than data sources."""
    if sources_file:
        document = read_json(sources_file, "sources file", error_class=ValueError)
        if not (isinstance(document, dict) and "dictionaries" in document):
            return False
    return name.split(":")[0] in dictionary_table(sources_file)


def _download_dictionary(args):
    if args.output:
        raise ValueError(f"{args.name} is a dictionary: it goes to biozoo's cache ({raw_directory(args.name)}), "
                         "not --output (set BIOZOO_CACHE to move the cache)")
    name = args.name.split(":")[0]
    record = download_dictionary(name, trust_unverified=args.trust_unverified, table_path=args.sources)
    result = {"dictionary": name, "complete": True, "cache": raw_directory(name), **record}
    if ":" in args.name or not dictionary_table(args.sources)[name].get("taxa_required"):  # the concept table too
        dictionary = load_dictionary(args.name, table_path=args.sources)
        result.update(label=dictionary.label, table_concepts=len(dictionary), table_names=len(dictionary.names()))
    print(json.dumps(result))
    return 0
