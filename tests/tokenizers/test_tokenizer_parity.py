"""biozoo.Tokenizer.from_preset(handle) gives the same ids as the checkpoint's HF tokenizer
(transformers' AutoTokenizer) on real biomedical sentences and on hard cases, with both of its
engines: eager (HF `tokenizers`, any backend) and in-graph (tensorflow-text)."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf

import biozoo
from biozoo.tokenizers import tf_text_engine

ENGINES = ("eager", "graph")

HARD_CASES = [
    "ΟΔΟΣ Σίσυφος: α-β γ-δ Δ9-THC and TGF-β1, ΣΣ; κ-opioid",
    "İstanbul ß ﬁ µg m² ™ café naïve Ångström",
    "soft\u00adhyphen zero\u200bwidth no\u00a0break thin\u2009space x\u0085y",
    "TNF‐α (tumour necrosis factor‐alpha) – 5 µM ± 2 °C × 10⁻³ ≥ 3",
    "“quoted” ‘single’ «guillemets» ¿¡ … • † ‡ § ¶ ‰",
    "IL-2 receptor [SEP] foo[CLS]bar [MASK] [UNK] [PAD]",
    "中文 漢字 text 日本語 한국어",
    "\ttabs\nand\r\nnewlines   and   spaces  ",
    "",
    "a" * 150 + " short",
    "é" * 70 + " " + "é" * 120,
    "Na+/K+-ATPase; Ca2+; [3H]-thymidine; 5'-UTR; p53-/-; (+/-)-propranolol",
    "ŁÓDŹ Œuvre Ærø ðþ İı ǅ ǈ ǋ",
    "x [CL\x00S] y [SEP\x00] a\x00b \x00[MASK]\x00",  # NUL is removed, but joins no special token
]


def hf_tokenizer(directory):
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(str(directory))


def engine_ids(tokenizer, engine):
    """`texts -> ids` of one engine of `tokenizer`."""
    if engine == "eager":
        return tokenizer
    return lambda texts: tf_text_engine.ids_function(tokenizer)(tf.constant(texts)).to_list()


def assert_same_ids(ours, reference, texts):
    got = [list(map(int, ids)) for ids in ours(texts)]
    expected = [reference(text, add_special_tokens=False)["input_ids"] for text in texts]
    mismatches = [(t, g, e) for t, g, e in zip(texts, got, expected) if g != e]
    assert not mismatches, "first mismatch: %r\nours %s\nHF   %s" % mismatches[0]


@pytest.mark.parametrize("engine", ENGINES)
def test_uncased_wordpiece_minilm(minilm_dir, corpus_sentences, engine):
    ours = biozoo.Tokenizer.from_preset(str(minilm_dir))
    assert ours.lowercase is True
    assert len(corpus_sentences) >= 300
    assert_same_ids(engine_ids(ours, engine), hf_tokenizer(minilm_dir), corpus_sentences + HARD_CASES)


@pytest.fixture(scope="module")
def cased_vocab_dir(tmp_path_factory, ncbi_disease):
    """A cased WordPiece vocabulary trained on NCBI-disease with HF tokenizers."""
    from tokenizers import BertWordPieceTokenizer

    from biozoo.testing import read_sentences

    directory = tmp_path_factory.mktemp("cased")
    trainer = BertWordPieceTokenizer(lowercase=False, strip_accents=False)
    text = read_sentences(ncbi_disease / "train.tsv") + HARD_CASES
    trainer.train_from_iterator(text, vocab_size=4000, min_frequency=2)
    trainer.save_model(str(directory))
    (directory / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    (directory / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 4000}))
    return directory


@pytest.mark.parametrize("engine", ENGINES)
def test_cased_wordpiece(cased_vocab_dir, corpus_sentences, engine):
    ours = biozoo.Tokenizer.from_preset(str(cased_vocab_dir))
    assert ours.lowercase is False
    assert_same_ids(engine_ids(ours, engine), hf_tokenizer(cased_vocab_dir), corpus_sentences + HARD_CASES)


@pytest.mark.parametrize("engine", ENGINES)
def test_albert_sentencepiece(corpus_spiece, corpus_sentences, tmp_path, engine):
    shutil.copy(corpus_spiece, tmp_path / "spiece.model")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "albert", "vocab_size": 2000}))
    ours = biozoo.Tokenizer.from_preset(str(tmp_path))
    assert_same_ids(engine_ids(ours, engine), hf_tokenizer(tmp_path),
                    corpus_sentences + HARD_CASES + ["``double'' quotes", "fullwidth ＜pad＞ x［CLS］ ［MASK］y"])


@pytest.mark.parametrize("engine", ENGINES)
def test_the_word_length_limit_leaves_special_and_added_tokens_whole(minilm_dir, engine):
    """HF limits the WordPiece model's words, which special and added tokens never reach: with a
    limit of 5 characters "[MASK]" and "@GENE$" stay themselves (the graph engine made them [UNK])."""
    from tokenizers import AddedToken, models

    reference = hf_tokenizer(minilm_dir)
    reference.add_tokens([AddedToken("@GENE$", normalized=False), AddedToken("chemicalx", normalized=True)])
    reference.backend_tokenizer.model = models.WordPiece(reference.get_vocab(), unk_token="[UNK]",
                                                         max_input_chars_per_word=5)
    ours = biozoo.Tokenizer.from_preset(str(minilm_dir), max_input_chars_per_word=5)
    ours = ours.with_added_tokens(["@GENE$"]).with_added_tokens(["chemicalx"], normalized=True)
    texts = ["[CLS] the [MASK] @GENE$ protein and ChemicalX [SEP]", "a [PAD] longword x@GENE$y", *HARD_CASES]
    assert_same_ids(engine_ids(ours, engine), reference, texts)


WORD_BREAK_CASES = ["a\x0bb", "a\x0cb c", "a\x85b", "a\x1cb", "a\u2028b", "x\u1680y", "a\x0b b", "Σ\x0cβ-1"]


@pytest.mark.parametrize("kind", ["wordpiece", "sentencepiece"])
def test_words_tokenized_one_by_one_give_the_whole_texts_ids(kind, minilm_dir, corpus_spiece, tmp_path):
    """QA tokenizes a context word by word (`split_words`): the words must break where HF's do, so
    \v, \f and NEL, which HF's normalizers delete, join the characters around them."""
    if kind == "wordpiece":
        directory = minilm_dir
    else:
        directory = tmp_path
        shutil.copy(corpus_spiece, tmp_path / "spiece.model")
        (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
        (tmp_path / "config.json").write_text(json.dumps({"model_type": "albert", "vocab_size": 2000}))
    ours, reference = biozoo.Tokenizer.from_preset(str(directory)), hf_tokenizer(directory)
    for text in WORD_BREAK_CASES:
        words = ours.split_words(text)
        assert all(text[start:end] == word for word, start, end in words)
        pieces = [int(i) for word, _, _ in words for i in ours([word])[0]]
        assert pieces == reference(text, add_special_tokens=False)["input_ids"], (text, [w for w, _, _ in words])


def test_tokenizer_works_in_tf_data(minilm_dir):
    ours = biozoo.Tokenizer.from_preset(str(minilm_dir))
    dataset = tf.data.Dataset.from_tensor_slices(["BRCA1 mutations", "Σ µg"]).batch(2).map(ours)
    (batch,) = list(dataset)
    assert batch.to_list() == [list(map(int, x)) for x in ours(["BRCA1 mutations", "Σ µg"])]


@pytest.mark.slow
@pytest.mark.parametrize("lowercase", [False, True])
def test_every_code_point_like_hf(lowercase):
    """Normalization and word splitting equal HF's BertNormalizer + BertPreTokenizer for each
    of the 1,112,064 code points. Where Unicode versions differ between the libraries, only
    letters HF lower-cases and TensorFlow's case table does not know, or characters TensorFlow
    decomposes and HF's NFD table does not, may differ (all in scripts added since Unicode 13)."""
    from tokenizers import normalizers, pre_tokenizers

    from biozoo.tokenizers import tf_text_engine

    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = ["a" + chr(c) + "b" for c in points]
    normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase
    )
    pre = pre_tokenizers.BertPreTokenizer()
    expected = [[w for w, _ in pre.pre_tokenize_str(normalizer.normalize_str(t))] for t in texts]
    got = [[w.decode() for w in words] for words in tf_text_engine.bert_pretokenize(tf.constant(texts), lowercase, lowercase).to_list()]
    differing = [i for i in range(len(points)) if got[i] != expected[i]]
    if not lowercase:
        assert differing == []
        return
    chars = [chr(points[i]) for i in differing]
    unexplained = sorted(hex(ord(c)) for c in set(chars) - table_drift(chars))
    assert unexplained == []
    assert len(differing) < 200


def table_drift(chars):
    """Characters whose Unicode tables differ between HF tokenizers and TensorFlow: HF lower-
    cases them and TF's case table does not, or the NFD / NFKD decompositions differ."""
    import tensorflow_text as tf_text
    from tokenizers import normalizers

    if not chars:
        return set()
    tf_lower = [s.decode() for s in tf.strings.lower(chars, encoding="utf-8").numpy()]
    drift = set()
    for form in ("NFD", "NFKD"):
        hf = getattr(normalizers, form)()
        tf_form = [s.decode() for s in tf_text.normalize_utf8(chars, form).numpy()]
        drift |= {c for c, t in zip(chars, tf_form) if t != hf.normalize_str(c)}
    hf_lower = normalizers.Lowercase()
    drift |= {c for c, low in zip(chars, tf_lower) if hf_lower.normalize_str(c) != c and low == c}
    return drift


@pytest.mark.parametrize("engine", ENGINES)
def test_every_bmp_code_point_albert(corpus_spiece, tmp_path, engine):
    """Full token ids for each Basic Multilingual Plane character inside and between words: the
    eager engine exactly; the graph engine but for characters whose Unicode tables differ."""
    shutil.copy(corpus_spiece, tmp_path / "spiece.model")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "albert", "vocab_size": 2000}))
    ours = biozoo.Tokenizer.from_preset(str(tmp_path))
    reference = hf_tokenizer(tmp_path)
    chars = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]
    texts = [f"ab {c}x{c} y" for c in chars]
    expected = reference(texts, add_special_tokens=False)["input_ids"]
    got = [list(map(int, ids)) for ids in engine_ids(ours, engine)(texts)]
    differing = [c for c, g, e in zip(chars, got, expected) if g != e]
    if engine == "eager":
        assert differing == []
        return
    unexplained = sorted(hex(ord(c)) for c in set(differing) - table_drift(differing))
    assert unexplained == []
    assert len(differing) < 50


@pytest.mark.parametrize("engine", ["eager", "eager_tensor", "graph"])
def test_sequence_length_pads_with_the_pad_token(engine, tmp_path):
    """With `sequence_length`, one text and a batch are cut and padded with the pad token's id (not
    0) by both engines, as HF pads to `max_length`."""
    vocab = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "brca", "##1", "gene", "cancer", "cell", "##s"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": len(vocab)}))
    reference = hf_tokenizer(tmp_path)
    ours = biozoo.tokenizers.WordPieceTokenizer(vocabulary=vocab, lowercase=True, sequence_length=5)
    texts = ["BRCA1 gene", "cancer cells BRCA1 gene cells"]
    expected = reference(texts, add_special_tokens=False, padding="max_length", truncation=True, max_length=5)
    assert expected["input_ids"][0][-1] == 3  # the premise: [PAD] is 3
    if engine == "graph":
        got = tf.function(ours)(tf.constant(texts)).numpy().tolist()
        single = tf.function(ours)(tf.constant(texts[0])).numpy().tolist()
    else:
        wrap = tf.constant if engine == "eager_tensor" else (lambda x: x)
        got, single = np.asarray(ours(wrap(texts))).tolist(), np.asarray(ours(wrap(texts[0]))).tolist()
    assert got == expected["input_ids"]
    assert single == expected["input_ids"][0]


@pytest.fixture(scope="module")
def user_defined_spiece_dir(tmp_path_factory, ncbi_disease):
    """A SentencePiece model with user-defined symbols (kept whole by SentencePiece and, as added
    tokens of the raw text, by transformers' converter)."""
    from biozoo.testing import read_sentences, train_spiece

    directory = tmp_path_factory.mktemp("user_defined")
    text = [s.lower() for s in read_sentences(ncbi_disease / "train.tsv")][:3000]
    train_spiece(directory / "spiece", text, 1000, user_defined_symbols=["@gene$", "<e1>"])
    (directory / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    (directory / "config.json").write_text(json.dumps({"model_type": "albert", "vocab_size": 1000}))
    return directory


@pytest.mark.parametrize("engine", ENGINES)
def test_albert_user_defined_symbols(user_defined_spiece_dir, corpus_sentences, engine):
    ours = biozoo.Tokenizer.from_preset(str(user_defined_spiece_dir))
    texts = ["the @gene$ binds<e1>x", "x@gene$y", "the <e1> gene @GENE$ <E1>"]
    reference = hf_tokenizer(user_defined_spiece_dir)
    assert reference.convert_tokens_to_ids("<e1>") in reference(texts[0], add_special_tokens=False)["input_ids"]
    assert_same_ids(engine_ids(ours, engine), reference, texts + corpus_sentences[:300])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_duplicated_vocabulary_token_takes_its_last_index(engine, tmp_path):
    """A vocab.txt listing a token twice loads in both engines (tensorflow-text takes unique tokens
    only) and gives HF's ids: a duplicated token, word piece or special token has its last index."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "gene", "brca", "##1", "gene", "cancer", "##1", "[SEP]"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": len(vocab)}))
    reference = hf_tokenizer(tmp_path)
    texts = ["BRCA1 gene cancer [SEP] gene", "genes brca1 ##1"]
    assert reference(texts[0], add_special_tokens=False)["input_ids"] == [6, 10, 8, 9, 11, 8]  # the premise
    assert_same_ids(engine_ids(biozoo.Tokenizer.from_preset(str(tmp_path)), engine), reference, texts)


# A known difference of the TensorFlow engine of ALBERT (tensorflow-text 2.20's SentencePiece, float32
# scores summed over the whole text) from HF's Unigram (and the eager engine): where two segmentations
# tie, the pieces come in another order. Measured on the distinct sentences of the shared NER corpora
# with `corpus_spiece`: 6 of 21,141 differ.
KNOWN_TIE = "type XIII deficiency"
MAX_TIED_SENTENCES = 12


def test_albert_graph_engine_breaks_unigram_ties_otherwise(corpus_spiece, shared_data, tmp_path):
    """ALBERT's TensorFlow engine (SavedModel and TF Hub exports, tf.data) gives HF's ids but where
    two segmentations tie: there it gives the same pieces in another order ("▁x ii i" for HF's
    "▁x i ii"), on a bounded share of real sentences. The eager engine gives HF's ids throughout."""
    shutil.copy(corpus_spiece, tmp_path / "spiece.model")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "albert", "vocab_size": 2000}))
    ours = biozoo.Tokenizer.from_preset(str(tmp_path))
    reference = hf_tokenizer(tmp_path)
    graph = engine_ids(ours, "graph")

    expected = reference(KNOWN_TIE, add_special_tokens=False)["input_ids"]
    assert ours.ids([KNOWN_TIE]) == [expected]
    (tied,) = graph([KNOWN_TIE])
    assert tied != expected and sorted(tied) == sorted(expected), reference.convert_ids_to_tokens(tied)

    sentences = []
    for path in sorted(shared_data.glob("ner/*/*.tsv")):
        sentences += biozoo.testing.read_sentences(path)
    sentences = list(dict.fromkeys(sentences))
    assert len(sentences) > 20000
    differing = []
    for start in range(0, len(sentences), 2000):
        chunk = sentences[start:start + 2000]
        differing += [(e, g) for e, g in zip(ours.ids(chunk), graph(chunk)) if e != g]
    assert all(sorted(e) == sorted(g) for e, g in differing)  # ties only: the same pieces
    assert len(differing) <= MAX_TIED_SENTENCES, f"{len(differing)} of {len(sentences)} sentences differ"


def test_albert_tasks_tokenize_with_the_eager_engine(tiny_spiece, tmp_path, monkeypatch):
    """Under TensorFlow too, the tasks' own inference (annotate, predict, answer) tokenizes with the
    eager engine (HF's ids): ALBERT's TensorFlow engine, which orders tied pieces otherwise, runs only
    in graphs (exports, tf.data)."""
    from biozoo import testing as H

    _, source = H.save_case("albert", "AlbertModel", tmp_path, "safetensors", tiny_spiece)
    ner = biozoo.TokenClassifier.from_preset(str(source), label_names=["O", "B-Disease", "I-Disease"])
    classifier = biozoo.SequenceClassifier.from_preset(str(source), label_names=["no", "yes"])
    qa = biozoo.QuestionAnswerer.from_preset(str(source))

    def graph_engine(*args):
        raise AssertionError("ALBERT tokenized by the TensorFlow engine")

    monkeypatch.setattr(tf_text_engine, "sentencepiece_ragged_ids", graph_engine)
    texts = ["type XIII deficiency in cancer cells", "the gene and the protein"]
    ner.annotate(texts)
    classifier.predict_probabilities(texts, texts[::-1])
    qa.answer(["which deficiency?"], texts[:1])
