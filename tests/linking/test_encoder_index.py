"""Name vectors and their search, against independent references: transformers (SapBERT's own
embedding code, in a child process: [CLS] of the last layer; sentence-transformers' masked
mean for MiniLM), scikit-learn's TfidfVectorizer for the char 3-gram scores, NumPy brute force
for exact search, and exact search for faiss' HNSW; the embedded dictionary, built twice in
two caches, is byte for byte the same, and a damaged cached file is found."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from biozoo.errors import DataFormatError
from biozoo.linking.concepts import Concept, Dictionary
from biozoo.linking.encoder import NameEncoder, pooling_of
from biozoo.linking.index import (
    CharNgramIndex,
    DenseIndex,
    StringMatcher,
    check_index,
    embedded_names,
    faiss_module,
    index_key,
    normalize_name,
)

NAMES = ["Diabetes Mellitus, Type 2", "type 2 diabetes", "NIDDM", "breast cancer", "carcinoma of the breast",
         "Wilson disease", "hepatolenticular degeneration", "TNF-α", "tumour necrosis factor alpha", "p53",
         "Acetylsalicylic Acid", "aspirin", "x"]

CHILD = r"""
import json, sys
import torch
from transformers import AutoModel, AutoTokenizer
path, pooling, names = sys.argv[1], sys.argv[2], json.loads(sys.stdin.read())
tokenizer, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
toks = tokenizer(names, padding=True, truncation=True, max_length=25, return_tensors="pt")
with torch.no_grad():
    hidden = model(**toks)[0]
if pooling == "cls":
    out = hidden[:, 0]
else:
    mask = toks["attention_mask"].unsqueeze(-1).float()
    out = (hidden * mask).sum(1) / mask.sum(1)
out = torch.nn.functional.normalize(out, dim=-1)
print(json.dumps(out.tolist()))
"""


def reference_vectors(path, pooling, names):
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), pooling], input=json.dumps(names),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return np.asarray(json.loads(done.stdout), np.float32)


def test_cls_vectors_equal_sapberts_own_code_on_a_tiny_bert(tiny_encoder_dir):
    encoder = NameEncoder.from_preset(str(tiny_encoder_dir))
    assert encoder.pooling == "cls" and encoder.max_length == 25
    ours = encoder.encode(NAMES, batch_size=4)
    np.testing.assert_allclose(ours, reference_vectors(tiny_encoder_dir, "cls", NAMES), atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_the_name_length_a_finetune_link_output_records_is_used(tiny_encoder_dir, tmp_path):
    trained = tmp_path / "linker"
    shutil.copytree(tiny_encoder_dir, trained)
    (trained / "linking.json").write_text(json.dumps({"pooling": "cls", "max_length": 30}))  # --max-seq-length 30
    long_name = "3-(4,5-dimethylthiazol-2-yl)-2,5-diphenyltetrazolium bromide"
    encoder = NameEncoder.from_preset(str(trained))
    pieces = len(encoder.tokenizer.ids([long_name])[0])
    assert encoder.max_length == 30 and pieces + 2 > 30  # the name is longer than both lengths
    assert len(encoder.token_ids([long_name])[0]) == 30
    assert NameEncoder.from_preset(str(trained), max_length=28).max_length == 28  # asked for explicitly
    assert NameEncoder.from_preset(str(tiny_encoder_dir)).max_length == 25  # none recorded: SapBERT's
    (trained / "linking.json").write_text(json.dumps({"pooling": "cls", "max_length": "30"}))
    with pytest.raises(ValueError, match=r"linking.json: max_length must be a whole number"):
        NameEncoder.from_preset(str(trained))


@pytest.mark.slow
def test_minilm_mean_vectors_equal_sentence_transformers_pooling(minilm_dir):
    encoder = NameEncoder.from_preset(str(minilm_dir))
    assert encoder.pooling == "mean"  # read from its 1_Pooling/config.json
    np.testing.assert_allclose(encoder.encode(NAMES), reference_vectors(minilm_dir, "mean", NAMES), atol=2e-5)


def test_a_folder_named_like_a_registry_encoder_declares_its_own_pooling_and_length(tmp_path, monkeypatch):
    """A local folder wins over the registry name it equals (as presets.parse_handle loads it)."""
    from biozoo.linking.encoder import max_length_of

    monkeypatch.chdir(tmp_path)
    (tmp_path / "sapbert_pubmedbert_fulltext").mkdir()
    (tmp_path / "sapbert_pubmedbert_fulltext" / "linking.json").write_text(json.dumps({"pooling": "mean", "max_length": 40}))
    assert (pooling_of("sapbert_pubmedbert_fulltext"), max_length_of("sapbert_pubmedbert_fulltext")) == ("mean", 40)


def test_sapbert_is_registered_with_cls_pooling():
    from biozoo import registry

    assert pooling_of("sapbert_pubmedbert_fulltext") == "cls"
    assert registry.get_entry("sapbert_pubmedbert_fulltext")["sources"]["hf"]["repo"] == \
        "cambridgeltl/SapBERT-from-PubMedBERT-fulltext"


def test_normalized_strings_meet():
    assert normalize_name("Type-2  Diabetes,") == normalize_name("type 2 diabetes") == "type 2 diabetes"
    matcher = StringMatcher(["Wilson Disease", "wilson disease", "TNF-α"])
    assert matcher.find("Wilson Disease") == ("exact", [0])
    assert matcher.find("WILSON-disease") == ("normalized", [0, 1])
    assert matcher.find("unknown") == (None, [])


def test_char_trigram_scores_equal_scikit_learn():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    index = CharNgramIndex(NAMES)
    vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3)).fit(NAMES)
    queries = ["diabetis type II", "breast carcinoma", "aspirine", "TNF alpha", "zzz"]
    expected = cosine_similarity(vectorizer.transform(queries), vectorizer.transform(NAMES))
    for query, row in zip(queries, expected):
        assert [index.similarity(query, name) for name in NAMES] == pytest.approx(row, abs=1e-6)
        scores, rows = index.search([query], k=3)[0]
        best = np.argsort(-row, kind="stable")[:3]
        assert scores == pytest.approx(row[best], abs=1e-6)
        if row[best[0]] > row[best[1]]:
            assert rows[0] == best[0]


def clustered(n, d, seed=0):
    """Unit vectors in tight clusters, like the names of concepts."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n // 10, d))
    vectors = np.repeat(centres, 10, axis=0)[:n] + 0.3 * rng.normal(size=(n, d))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_exact_search_equals_numpy_brute_force_with_row_ranges():
    vectors = clustered(3000, 24)
    queries = clustered(40, 24, seed=1)
    brute = queries @ vectors.T
    for rows in (None, (500, 1700)):
        scores, found = DenseIndex(vectors).search(queries, k=7, rows=rows)
        part = brute if rows is None else brute[:, rows[0]:rows[1]]
        order = np.argsort(-part, axis=1, kind="stable")[:, :7] + (0 if rows is None else rows[0])
        assert (found == order).all()
        np.testing.assert_allclose(scores, np.take_along_axis(brute, order, axis=1), atol=1e-6)
    scores, found = DenseIndex(vectors[:3]).search(queries[:2], k=5)
    assert (found[:, 3:] == -1).all() and np.isneginf(scores[:, 3:]).all()


def test_hnsw_finds_what_exact_search_finds():
    if faiss_module() is None:
        pytest.skip("faiss-cpu is not installed (pip install 'biozoo[link]')")
    vectors, queries = clustered(20000, 32), clustered(300, 32, seed=2)
    exact_scores, exact = DenseIndex(vectors).search(queries, k=10)
    scores, found = DenseIndex.build(vectors, "hnsw").search(queries, k=10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, exact)])
    assert recall >= 0.98 and (found[:, 0] == exact[:, 0]).mean() >= 0.99
    np.testing.assert_allclose(scores[found[:, 0] == exact[:, 0], 0], exact_scores[found[:, 0] == exact[:, 0], 0],
                               atol=1e-6)  # re-scored exactly


def toy_dictionary():
    return Dictionary([Concept("D1", "Diabetes Mellitus, Type 2", ("type 2 diabetes", "NIDDM")),
                       Concept("D2", "breast cancer", ("carcinoma of the breast",)),
                       Concept("D3", "Wilson disease", ("hepatolenticular degeneration",))], "toy", "1")


def test_the_embedded_dictionary_is_cached_and_a_rebuild_equals_the_first(tiny_encoder_dir, tmp_path, monkeypatch):
    encoder = NameEncoder.from_preset(str(tiny_encoder_dir))
    dictionary = toy_dictionary()
    directories = []
    for cache in ("one", "two"):
        monkeypatch.setenv("BIOZOO_CACHE", str(tmp_path / cache))
        index = embedded_names(dictionary, encoder, progress=False)
        directory = tmp_path / cache / "link-index" / index_key(dictionary, encoder, "exact")
        directories.append(directory)
        np.testing.assert_allclose(np.asarray(index.vectors), encoder.encode(dictionary.names().names), atol=1e-6)
    first, second = (json.loads((d / "index.json").read_text()) for d in directories)
    assert first["files_sha256"] == second["files_sha256"]
    assert (directories[0] / "embeddings.npy").read_bytes() == (directories[1] / "embeddings.npy").read_bytes()
    assert check_index(directories[0])["names"] == 7
    called = []
    monkeypatch.setattr(encoder, "encode", lambda *a, **k: called.append(1))
    embedded_names(dictionary, encoder, progress=False)  # from the cache: nothing embedded
    assert called == []
    vectors = np.load(directories[1] / "embeddings.npy")
    vectors[0, 0] += 1.0
    np.save(directories[1] / "embeddings.npy", vectors)
    with pytest.raises(DataFormatError, match="embeddings.npy: differs from the sha256"):
        check_index(directories[1])
    os.remove(directories[1] / "embeddings.npy")
    with pytest.raises(DataFormatError, match="differs"):
        check_index(directories[1])


JAX_CHILD = r"""
import json, os, sys
class NoTensorFlow:
    def find_spec(self, name, path=None, target=None):
        if name == "tensorflow" or name.startswith("tensorflow."):
            raise ImportError("TensorFlow is not importable in this child")
sys.meta_path.insert(0, NoTensorFlow())
from biozoo.linking import NameEncoder
encoder = NameEncoder.from_preset(sys.argv[1])
print(json.dumps(encoder.encode(json.loads(sys.stdin.read())).tolist()))
"""


def test_names_embed_alike_under_jax_without_tensorflow(tiny_encoder_dir):
    pytest.importorskip("jax")
    ours = NameEncoder.from_preset(str(tiny_encoder_dir)).encode(NAMES)
    env = dict(os.environ, KERAS_BACKEND="jax")
    done = subprocess.run([sys.executable, "-c", JAX_CHILD, str(tiny_encoder_dir)], input=json.dumps(NAMES), env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    np.testing.assert_allclose(np.asarray(json.loads(done.stdout.splitlines()[-1])), ours, atol=1e-5)
