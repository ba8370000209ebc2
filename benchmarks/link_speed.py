"""Entity-linking speed and memory (issue 36): mentions linked per second against dictionaries of
300,000 and 3,000,000 names, exact search (NumPy) against faiss' HNSW graph (CPU build).

Names: no real dictionary is reachable from this machine, so the 300,000 names are synthetic:
2 to 4 words drawn from the vocabulary of the shared NER training mentions (NCBI-disease,
BC5CDR), each name unique; they are embedded with MiniLM-L6 (the time is reported: that is the
dictionary's one-off build). The 3,000,000 are those 300,000 embeddings each perturbed ten times
(Gaussian noise, renormalised), so the vectors keep the clustering of real name embeddings;
embedding 3M names would take 10x the 300k time, reported as an extrapolation, not measured.
Queries: the 2,915 gold mentions of the shared NCBI-disease and the first 100 BC5CDR test
documents (their text), encoded once (encoding speed reported apart).

Per dictionary and method: build seconds, index bytes, process RSS growth, search mentions/s
(batches of 256, k = 20), recall@1 of HNSW against exact search, and the whole `Linker.link`
(string match, encoding, search) mentions/s on the 300k dictionary.

    python benchmarks/link_speed.py --output /tmp/link-speed [--sizes 300000 3000000]
"""

import argparse
import gc
import json
import os
import random
import re
import sys
import time

import numpy as np
import psutil
from _shared import minilm, shared_data

from biozoo.documents import read_documents
from biozoo.linking import Linker, NameEncoder
from biozoo.linking.concepts import Concept, Dictionary
from biozoo.linking.index import HNSW, DenseIndex, faiss_module


def log(message):
    print(message, file=sys.stderr, flush=True)


def rss():
    return psutil.Process().memory_info().rss


def vocabulary():
    words = set()
    for corpus in ("NCBI-disease", "BC5CDR-chem", "BC5CDR-disease"):
        for line in (shared_data() / "ner" / corpus / "train.tsv").read_text().splitlines():
            parts = line.split("\t")
            if len(parts) >= 2 and parts[-1] != "O" and re.fullmatch(r"[A-Za-z][\w-]*", parts[0]):
                words.add(parts[0].lower())
    return sorted(words)


def synthetic_names(count, seed=0):
    words, rng, names = vocabulary(), random.Random(seed), set()
    while len(names) < count:
        names.add(" ".join(rng.choice(words) for _ in range(rng.randint(2, 4))))
    return sorted(names)


def queries():
    documents = list(read_documents([str(shared_data() / "documents" / "NCBIdisease_Test.PubTator")]))
    documents += list(read_documents([str(shared_data() / "documents" / "BC5CDR_Test.PubTator")]))[:100]
    return [a.text for d in documents for a in d.existing_annotations()]


def search_speed(index, vectors, k=20, rows=None):
    started = time.perf_counter()
    found = [index.search(vectors[i:i + 256], k, rows)[1] for i in range(0, len(vectors), 256)]
    seconds = time.perf_counter() - started
    return len(vectors) / seconds, np.concatenate(found)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[300_000, 3_000_000])
    parser.add_argument("--threads", type=int, default=None, help="faiss/BLAS threads (default: all)")
    args = parser.parse_args()
    os.makedirs(args.output, exist_ok=True)
    faiss = faiss_module()
    if faiss is None:
        sys.exit("faiss-cpu is not installed (pip install 'biozoo[link]')")
    if args.threads:
        faiss.omp_set_num_threads(args.threads)
    result = {"cpus": os.cpu_count(), "load_average_start": os.getloadavg(), "hnsw": HNSW}
    encoder = NameEncoder.from_preset(minilm())
    texts = queries()
    started = time.perf_counter()
    query_vectors = encoder.encode(texts)
    result["queries"] = {"mentions": len(texts), "encode_per_second": round(len(texts) / (time.perf_counter() - started), 1)}
    base_size = min(args.sizes)
    cache = os.path.join(args.output, f"names-{base_size}.npy")
    names = synthetic_names(base_size)
    if os.path.isfile(cache):
        base = np.load(cache)
        result["embed_base"] = json.load(open(cache + ".json"))
    else:
        started = time.perf_counter()
        base = encoder.encode(names, batch_size=512, progress=True)
        seconds = time.perf_counter() - started
        np.save(cache, base)
        result["embed_base"] = {"names": base_size, "seconds": round(seconds, 1), "names_per_second": round(base_size / seconds, 1)}
        json.dump(result["embed_base"], open(cache + ".json", "w"))
    log(f"embedded {base_size} names: {result['embed_base']}")
    for size in sorted(args.sizes):
        copies = size // base_size
        rng = np.random.default_rng(1)
        if copies == 1:
            vectors = base
        else:
            vectors = np.empty((copies * len(base), base.shape[1]), np.float32)
            for c in range(copies):
                block = vectors[c * len(base):(c + 1) * len(base)]
                block[:] = base if c == 0 else base + 0.02 * rng.standard_normal(base.shape, dtype=np.float32)
                block /= np.linalg.norm(block, axis=1, keepdims=True)
        entry = {"names": len(vectors), "vectors_bytes": int(vectors.nbytes)}
        exact_speed, exact_rows = search_speed(DenseIndex(vectors), query_vectors)
        entry["exact"] = {"mentions_per_second": round(exact_speed, 1)}
        before = rss()
        started = time.perf_counter()
        hnsw = DenseIndex.build(vectors, "hnsw", progress=True)
        entry["hnsw"] = {"build_seconds": round(time.perf_counter() - started, 1),
                         "rss_growth_bytes": int(rss() - before)}
        path = os.path.join(args.output, "hnsw.faiss")
        faiss.write_index(hnsw.graph, path)
        entry["hnsw"]["index_bytes"] = os.path.getsize(path)
        os.remove(path)
        speed, rows = search_speed(hnsw, query_vectors)
        entry["hnsw"]["mentions_per_second"] = round(speed, 1)
        entry["hnsw"]["recall_at_1"] = round(float((rows[:, 0] == exact_rows[:, 0]).mean()), 4)
        entry["hnsw"]["recall_at_20"] = round(float(np.mean([len(set(a) & set(b)) / 20 for a, b in zip(rows, exact_rows)])), 4)
        log(f"{size}: {entry}")
        if copies == 1:  # the whole linker: strings, encoding, search
            dictionary = Dictionary([Concept(f"S{i}", n) for i, n in enumerate(names)], "synthetic", "1")
            before = rss()
            started = time.perf_counter()
            for method in ("exact", "hnsw"):
                linker = Linker(dictionary, None, threshold=-2.0, progress=False)
                linker.encoder, linker.dense = encoder, DenseIndex(vectors) if method == "exact" else hnsw
                linker.link(texts[:64])  # warm
                started = time.perf_counter()
                linker.link(texts)
                entry[method]["linker_mentions_per_second"] = round(len(texts) / (time.perf_counter() - started), 1)
            entry["string_tables_rss_bytes"] = int(rss() - before)
        result[str(size)] = entry
        del vectors, hnsw
        gc.collect()
        with open(os.path.join(args.output, "summary.json"), "w") as f:
            json.dump(result, f, indent=1)
    result["load_average_end"] = os.getloadavg()
    with open(os.path.join(args.output, "summary.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
