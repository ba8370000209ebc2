"""Finding a mention's names in a dictionary: exact and normalized strings, char_wb 3-gram TF-IDF
(scispaCy's; not BioSyn's sparse score, a char 1-2-gram TF-IDF), and nearest neighbours of
embedded names.

`DenseIndex` searches unit vectors by inner product (cosine): exactly (NumPy, blocked matrix
products) or, above `ANN_MIN_NAMES` names when faiss is installed, through a faiss HNSW graph
whose candidates are re-scored exactly against the stored vectors. `embedded_names` builds a
dictionary's vectors with an encoder once and caches them (atomic, locked, with the sha256 of
each file) under `$BIOZOO_CACHE/link-index/KEY`, KEY naming the concept table's digest, the
encoder's weights and pooling, and the index settings.

Example:
    >>> index = embedded_names(dictionary, encoder)
    >>> scores, rows = index.search(encoder.encode(["heart attack"]), k=5)
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import time
import unicodedata
from collections import defaultdict

import numpy as np
from filelock import FileLock
from tqdm.auto import tqdm

from biozoo._io import atomic_directory, atomic_write_json, read_json, sha256_file
from biozoo.errors import DataFormatError
from biozoo.presets import cache_root as presets_root

INDEX_FORMAT = 1
# Exact search below, HNSW above (benchmarks/link_speed.py, 2 cores: exact search answers 222 mentions/s at
# 300,000 names and 25/s at 3M, slower than encoding the mentions; HNSW 3,044/s and 3,862/s, recall@1 99.3 %
# and 95.1 %). At 100,000 names exact search costs about 1.5 ms a mention.
ANN_MIN_NAMES = 100_000
HNSW = {"M": 32, "ef_construction": 80, "ef_search": 128}
EMBEDDINGS_FILE = "embeddings.npy"
HNSW_FILE = "hnsw.faiss"
INDEX_RECORD = "index.json"
_NON_WORD = re.compile(r"[\W_]+")


def normalize_name(text):
    """Case, accents' compatibility forms, punctuation and spacing folded: "Type-2 Diabetes"
    and "type 2 diabetes" meet."""
    return " ".join(_NON_WORD.sub(" ", unicodedata.normalize("NFKC", text).lower()).split())


class StringMatcher:
    """Rows of a name list by exact string and by `normalize_name`.

    Example:
        >>> matcher = StringMatcher(["Heart attack", "heart failure"])
        >>> matcher.find("Heart attack"), matcher.find("heart-attack"), matcher.find("flu")
        (('exact', [0]), ('normalized', [0]), (None, []))
    """

    def __init__(self, names):
        self.exact, self.normalized = defaultdict(list), defaultdict(list)
        for row, name in enumerate(names):
            self.exact[name].append(row)
            key = normalize_name(name)
            if key:
                self.normalized[key].append(row)

    def find(self, mention, within=None):
        """("exact" | "normalized" | None, rows); only rows in the range `within` (start, end)
        when given, so that a name exact in another species' rows leaves normalized matching
        within this one."""
        def kept(rows):
            return [r for r in rows if within[0] <= r < within[1]] if rows and within is not None else rows

        rows = kept(self.exact.get(mention))
        if rows:
            return "exact", rows
        rows = kept(self.normalized.get(normalize_name(mention)))
        return ("normalized", rows) if rows else (None, [])


# ------------------------------------------------------------------ char 3-gram TF-IDF

def char_wb_ngrams(text, n=3):
    """scikit-learn's `analyzer="char_wb"` n-grams of lower-cased `text` (each word padded with
    one space on both sides; a word shorter than n gives itself once)."""
    grams = []
    for word in text.lower().split():
        word = f" {word} "
        if len(word) < n:
            grams.append(word)
            continue
        grams.extend(word[i:i + n] for i in range(len(word) - n + 1))
    return grams


class CharNgramIndex:
    """TF-IDF over char 3-grams of a name list (smooth idf, l2-normalised rows: scikit-learn's
    `TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3))`), kept as an inverted index:
    `search` retrieves names by cosine, `similarity` scores pairs for re-ranking.

    Example:
        >>> scores, rows = CharNgramIndex(["heart attack", "heart failure"]).search(["heart atack"], k=1)[0]
        >>> rows.tolist(), round(float(scores[0]), 2)
        ([0], 0.87)
    """

    def __init__(self, names, n=3, progress=False):
        self.n, self.size = n, len(names)
        bar = _bar(len(names), f"char {n}-grams", progress)
        counts = []
        for name in names:
            counts.append(_counts(name, n))
            if bar is not None and len(counts) % 4096 == 0:
                bar.update(4096)
        if bar is not None:
            bar.update(len(counts) % 4096)
            bar.close()
        self.vocabulary = {}
        for grams in counts:
            for gram in grams:
                self.vocabulary.setdefault(gram, len(self.vocabulary))
        df = np.zeros(len(self.vocabulary))
        for grams in counts:
            for gram in grams:
                df[self.vocabulary[gram]] += 1
        self.idf = np.log((1 + len(names)) / (1 + df)) + 1.0
        postings = defaultdict(list)
        for row, grams in enumerate(counts):
            vector = self._normalised(grams)
            for index, weight in vector.items():
                postings[index].append((row, weight))
        lengths = np.array([len(postings[i]) for i in range(len(self.vocabulary))], np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        self.rows = np.array([r for i in range(len(self.vocabulary)) for r, _ in postings[i]], np.int32)
        self.weights = np.array([w for i in range(len(self.vocabulary)) for _, w in postings[i]], np.float32)

    def _normalised(self, grams):
        vector = {self.vocabulary[g]: c * self.idf[self.vocabulary[g]] for g, c in grams.items() if g in self.vocabulary}
        norm = math.sqrt(sum(w * w for w in vector.values()))
        return {i: w / norm for i, w in vector.items()} if norm else {}

    def vector(self, text):
        """{n-gram index: weight} of `text`, l2-normalised (n-grams the names lack are dropped)."""
        return self._normalised(_counts(text, self.n))

    def similarity(self, text_a, text_b):
        a, b = self.vector(text_a), self.vector(text_b)
        return float(sum(w * b[i] for i, w in a.items() if i in b))

    def search(self, texts, k=10, rows=None):
        """Per text, `(scores, rows)` of its `k` best names by cosine, best first;
        `rows=(start, end)` searches that range only."""
        out = []
        for text in texts:
            scores = np.zeros(self.size, np.float32)
            for index, weight in self.vector(text).items():
                span = slice(self.offsets[index], self.offsets[index + 1])
                scores[self.rows[span]] += weight * self.weights[span]
            out.append(_top_k(scores[None], k, rows))
        return [(s[0], r[0]) for s, r in out]


def _counts(text, n):
    counts = defaultdict(int)
    for gram in char_wb_ngrams(text, n):
        counts[gram] += 1
    return counts


def _top_k(scores, k, rows=None):
    """Best `k` columns of each row of `scores` (restricted to columns [start, end)), best first;
    rows padded with -1 / -inf when fewer exist."""
    offset = 0
    if rows is not None:
        offset = rows[0]
        scores = scores[:, rows[0]:rows[1]]
    count = scores.shape[1]
    best_scores = np.full((scores.shape[0], k), -np.inf, np.float32)
    best_rows = np.full((scores.shape[0], k), -1, np.int64)
    if count == 0:
        return best_scores, best_rows
    take = min(k, count)
    part = np.argpartition(-scores, take - 1, axis=1)[:, :take] if take < count else np.tile(np.arange(count), (len(scores), 1))
    picked = np.take_along_axis(scores, part, axis=1)
    order = np.argsort(-picked, axis=1, kind="stable")
    best_scores[:, :take] = np.take_along_axis(picked, order, axis=1)
    best_rows[:, :take] = np.take_along_axis(part, order, axis=1) + offset
    return best_scores, best_rows


# ------------------------------------------------------------------ dense vectors

def faiss_module():
    """faiss (the CPU build, `pip install 'biozoo[link]'`), or None when it is not installed."""
    try:
        import faiss
    except ImportError:
        return None
    return faiss


class DenseIndex:
    """Unit vectors searched by inner product. `method` "exact" multiplies blocks of the
    matrix (NumPy); "hnsw" asks a faiss HNSW graph for `k * 4` candidates and re-scores them
    exactly. A row range (one taxon's names) is always searched exactly.

    Example:
        >>> index = DenseIndex(vectors)
        >>> scores, rows = index.search(queries, k=10)
    """

    def __init__(self, vectors, method="exact", graph=None, ef_search=HNSW["ef_search"]):
        self.vectors = vectors
        self.method, self.graph = method, graph
        if graph is not None:
            graph.hnsw.efSearch = int(ef_search)

    def __len__(self):
        return len(self.vectors)

    @classmethod
    def build(cls, vectors, method="auto", progress=False):
        """An index over `vectors` (float32 [n, d], rows of norm 1); "auto": HNSW from
        ANN_MIN_NAMES rows on when faiss is installed, else exact."""
        faiss = faiss_module()
        if method == "auto":
            method = "hnsw" if len(vectors) >= ANN_MIN_NAMES and faiss is not None else "exact"
        if method == "exact":
            return cls(vectors)
        if method != "hnsw":
            raise ValueError(f"index method must be auto, exact or hnsw, got {method!r}")
        if faiss is None:
            raise ImportError("an HNSW index needs faiss: pip install 'biozoo[link]' (faiss-cpu)")
        graph = faiss.IndexHNSWFlat(vectors.shape[1], HNSW["M"], faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = HNSW["ef_construction"]
        step = 100_000
        bar = _bar(len(vectors), "indexing", progress)
        for start in range(0, len(vectors), step):
            graph.add(np.ascontiguousarray(vectors[start:start + step], np.float32))
            if bar is not None:
                bar.update(min(step, len(vectors) - start))
        if bar is not None:
            bar.close()
        return cls(vectors, "hnsw", graph)

    def search(self, queries, k=10, rows=None):
        """(scores [q, k], rows [q, k]) best first; -inf / -1 where fewer than k rows exist."""
        queries = np.ascontiguousarray(queries, np.float32)
        if self.method == "hnsw" and rows is None and len(queries):
            _, candidates = self.graph.search(queries, k * 4)
            return self._rescore(queries, candidates, k)
        start, end = rows if rows is not None else (0, len(self.vectors))
        best_scores = np.full((len(queries), k), -np.inf, np.float32)
        best_rows = np.full((len(queries), k), -1, np.int64)
        block = 131_072
        for q in range(0, len(queries), 256):
            chunk = queries[q:q + 256]
            for begin in range(start, end, block):
                stop = min(begin + block, end)
                scores = chunk @ np.asarray(self.vectors[begin:stop], np.float32).T
                s, r = _top_k(scores, k)
                r = np.where(r >= 0, r + begin, -1)
                merged_s = np.concatenate([best_scores[q:q + 256], s], axis=1)
                merged_r = np.concatenate([best_rows[q:q + 256], r], axis=1)
                order = np.argsort(-merged_s, axis=1, kind="stable")[:, :k]
                best_scores[q:q + 256] = np.take_along_axis(merged_s, order, axis=1)
                best_rows[q:q + 256] = np.take_along_axis(merged_r, order, axis=1)
        return best_scores, best_rows

    def _rescore(self, queries, candidates, k):
        scores = np.full(candidates.shape, -np.inf, np.float32)
        for i, row in enumerate(candidates):
            valid = row >= 0
            if valid.any():
                scores[i, valid] = np.asarray(self.vectors[row[valid]], np.float32) @ queries[i]
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        rows = np.take_along_axis(candidates, order, axis=1)
        top = np.take_along_axis(scores, order, axis=1)
        rows[~np.isfinite(top)] = -1
        return top, rows


def index_key(dictionary, encoder, method):
    """The cache key of a dictionary embedded by an encoder and indexed by `method`."""
    parts = [INDEX_FORMAT, dictionary.digest(), encoder.identity, method, HNSW if method != "exact" else None]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def cache_root():
    return os.path.join(presets_root(), "link-index")


def embedded_names(dictionary, encoder, method="auto", progress=True, batch_size=256):
    """The `DenseIndex` of `dictionary`'s names embedded by `encoder`: built once (under a file
    lock, written atomically with each file's sha256 in index.json), then read from the cache
    (vectors memory-mapped)."""
    names = dictionary.names()
    faiss = faiss_module()
    if method == "auto":
        method = "hnsw" if len(names) >= ANN_MIN_NAMES and faiss is not None else "exact"
    directory = os.path.join(cache_root(), index_key(dictionary, encoder, method))
    os.makedirs(os.path.dirname(directory), exist_ok=True)
    with FileLock(directory + ".lock"):
        if not os.path.isfile(os.path.join(directory, INDEX_RECORD)):
            started = time.perf_counter()
            vectors = encoder.encode(names.names, batch_size=batch_size, progress=progress)
            index = DenseIndex.build(vectors, method, progress=progress)
            with atomic_directory(directory) as staging:
                np.save(os.path.join(staging, EMBEDDINGS_FILE), vectors)
                if index.graph is not None:
                    faiss.write_index(index.graph, os.path.join(staging, HNSW_FILE))
                files = {name: sha256_file(os.path.join(staging, name)) for name in sorted(os.listdir(staging))}
                atomic_write_json(os.path.join(staging, INDEX_RECORD), {
                    "format": INDEX_FORMAT, "dictionary": dictionary.label, "dictionary_sha256": dictionary.digest(),
                    "encoder": encoder.identity, "pooling": encoder.pooling, "max_length": encoder.max_length,
                    "names": len(names), "dimension": int(vectors.shape[1]), "method": method,
                    "hnsw": HNSW if method == "hnsw" else None, "files_sha256": files,
                    "build_seconds": round(time.perf_counter() - started, 2)})
    return load_index(directory, expected_names=len(names))


def load_index(directory, expected_names=None, verify=False):
    """A cached `DenseIndex`; `verify` re-computes every file's sha256 against index.json."""
    record = read_json(os.path.join(directory, INDEX_RECORD), "embedded dictionary record", DataFormatError)
    if verify:
        check_index(directory)
    vectors = np.load(os.path.join(directory, EMBEDDINGS_FILE), mmap_mode="r", allow_pickle=False)
    if vectors.shape != (record["names"], record["dimension"]) or (
            expected_names is not None and record["names"] != expected_names):
        raise DataFormatError(f"{directory}: the embedded dictionary holds {vectors.shape} vectors, its record says "
                              f"{record['names']} x {record['dimension']} (dictionary: {expected_names} names); "
                              "delete the folder to rebuild it")
    graph = None
    if record["method"] == "hnsw":
        faiss = faiss_module()
        if faiss is None:
            return DenseIndex(vectors)  # the same vectors, searched exactly
        graph = faiss.read_index(os.path.join(directory, HNSW_FILE))
    return DenseIndex(vectors, record["method"], graph)


def check_index(directory):
    """Raise DataFormatError naming the file of a cached embedded dictionary that differs from
    the sha256 its index.json records."""
    record = read_json(os.path.join(directory, INDEX_RECORD), "embedded dictionary record", DataFormatError)
    for name, digest in record["files_sha256"].items():
        path = os.path.join(directory, name)
        if not os.path.isfile(path) or sha256_file(path) != digest:
            raise DataFormatError(f"{path}: differs from the sha256 recorded in {INDEX_RECORD}; delete {directory} "
                                  "to rebuild it")
    return record


def _bar(total, desc, progress):
    if not progress:
        return None

    return tqdm(total=total, unit="name", desc=desc, file=sys.stderr, dynamic_ncols=True)
