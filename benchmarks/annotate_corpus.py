"""Corpus annotation throughput: `biozoo annotate --runner beam` with 1 and 2 Beam workers against
plain `biozoo annotate`, same model, same documents, in the same run; and the projection to the
36M abstracts of PubMed.

The corpus is the 600 shared abstracts (BC5CDR test, NCBI-disease test) repeated with new ids
(`R<k>-<pmid>`) up to `--documents` (5,000 by default), in 10 PubTator files. The model has
Bioformer-8L's shape with random weights and MiniLM-L6's vocabulary (as
benchmarks/annotate_documents.py builds it), converted once before timing. Timed, each from
an empty output:
- plain: `AnnotationRun` (what `biozoo annotate` runs) over every file, written to PubTator;
- beam, 1 worker: Beam's FnApiRunner in this process;
- beam, 2 workers: `--direct_num_workers 2 --direct_running_mode multi_processing` (two worker
  processes, each loading the model once, `--threads-per-worker` TensorFlow threads each).
Every run must annotate every document; the entity counts are printed (plain chunks run across
files, Beam's within one file, so batches differ: equal in float32 up to near-ties, int8
quantizes activations per batch).
Prints documents/s, the ratio to plain, and CPU core-hours (and, with --gpu-docs-per-second
measured elsewhere, GPU-hours) for 36M abstracts.

    .venv/bin/python benchmarks/annotate_corpus.py [--documents 5000] [--precision float32|int8]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import biozoo  # noqa: F401  (first: where triton is installed it must load before TensorFlow)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import shared_data  # noqa: E402
from annotate_documents import build_model  # noqa: E402

PUBMED_ABSTRACTS = 36_000_000


def make_corpus(folder, documents, files=10):
    """`documents` abstracts in `files` PubTator files: the shared ones, repeated with new ids."""
    from biozoo.documents import read_documents, write_documents

    base = list(read_documents([shared_data() / "documents" / "BC5CDR_Test.PubTator",
                                shared_data() / "documents" / "NCBIdisease_Test.PubTator"]))
    corpus = []
    for k in range(documents):
        document = base[k % len(base)]
        copy = type(document)(f"R{k // len(base)}-{document.id}", document.passages, source_format="pubtator")
        corpus.append(copy)
    per_file = -(-documents // files)
    paths = []
    for f in range(files):
        path = Path(folder) / f"corpus-{f:02d}.pubtator"
        write_documents(corpus[f * per_file:(f + 1) * per_file], path, "pubtator")
        paths.append(str(path))
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--precision", default="float32", choices=["float32", "bfloat16", "int8"])
    parser.add_argument("--chunk-size", type=int, default=64)
    parser.add_argument("--threads-per-worker", type=int, default=1,
                        help="TensorFlow intra-op threads in each of the 2 Beam worker processes")
    parser.add_argument("--gpu-docs-per-second", type=float,
                        help="documents/s measured on a GPU (this script on a GPU machine), for the GPU-hour line")
    parser.add_argument("--skip", nargs="*", default=[], choices=["plain", "beam1", "beam2"])
    args = parser.parse_args()

    from biozoo.annotate import AnnotationJob
    from biozoo.annotate.beam import annotate_corpus
    from biozoo.documents import read_documents, write_documents

    work = Path(tempfile.mkdtemp(prefix="biozoo-corpus-"))
    files = make_corpus(work / "in", args.documents)
    model = build_model(work / "model")
    job = AnnotationJob(models=(str(model),), output_format="pubtator", drop_existing=True,
                        precision=args.precision, chunk_size=args.chunk_size)
    job.annotators()  # converted once, cached: not timed
    cores = os.cpu_count()
    print(f"{args.documents} documents in {len(files)} files; Bioformer-8L shape, {args.precision}; {cores} cores; "
          f"chunks of {args.chunk_size}", flush=True)
    results = {}
    if "plain" not in args.skip:
        started = time.perf_counter()
        run = job.run(progress=False)
        written = write_documents(run.annotate(read_documents(files)), work / "plain.pubtator", "pubtator")
        results["plain annotate"] = (time.perf_counter() - started, written, run.entities)
    beam_runs = [("beam, 1 worker (in process)", "beam1", ""),
                 ("beam, 2 workers (processes)", "beam2", "--direct_num_workers 2 --direct_running_mode multi_processing")]
    for label, key, options in beam_runs:
        if key in args.skip:
            continue
        if key == "beam2":  # each worker process: its own TensorFlow threads
            os.environ["TF_NUM_INTRAOP_THREADS"] = str(args.threads_per_worker)
            os.environ["TF_NUM_INTEROP_THREADS"] = "1"
        started = time.perf_counter()
        summary = annotate_corpus(job, files, str(work / key), options, progress=False)
        results[label] = (time.perf_counter() - started, summary["annotated"], summary["entities"])
        assert summary["read"] == summary["annotated"] == args.documents and summary["dead_lettered"] == 0, summary

    plain = results.get("plain annotate")
    print("\n| run | seconds | documents/s | x plain | entities | 36M abstracts: CPU core-hours |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, (seconds, documents, entities) in results.items():
        assert documents == args.documents, (label, documents)
        rate = documents / seconds
        ratio = f"{(plain[0] / seconds):.2f}" if plain else "-"
        core_hours = PUBMED_ABSTRACTS / rate / 3600 * cores
        print(f"| {label} | {seconds:.1f} | {rate:.2f} | {ratio} | {entities} | {core_hours:,.0f} |")
    if plain:  # plain chunks run across files, Beam's within one: other batches (int8 quantizes per batch)
        print("entities against plain: " + ", ".join(f"{label} {entities - plain[2]:+d}"
                                                    for label, (_, _, entities) in results.items()))
    best = max(documents / seconds for seconds, documents, _ in results.values())
    print(f"\nbest: {best:.2f} documents/s on {cores} cores = {best * 3600 / cores:,.0f} abstracts per CPU core-hour; "
          f"36M abstracts = {PUBMED_ABSTRACTS / (best * 3600 / cores):,.0f} core-hours")
    if args.gpu_docs_per_second:
        print(f"GPU: {args.gpu_docs_per_second:.1f} documents/s = {PUBMED_ABSTRACTS / args.gpu_docs_per_second / 3600:,.0f} "
              "GPU-hours for 36M abstracts")
    else:
        print("GPU: not measured here (no GPU on this machine); run this script on one with --skip beam2")


if __name__ == "__main__":
    main()
