"""Task SavedModels serving raw strings: the in-graph tokenization, windowing and decoding give
what the task's Python API gives (NER entities with offsets, classifier probabilities, QA
spans and null scores); the NER export also runs where Keras and biozoo cannot be imported."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import biozoo
from biozoo.export.serving import export_task_hub
from biozoo.testing import bioasq_dev

LABELS = ["O", "B-Disease", "I-Disease", "B-Chemical", "I-Chemical"]


def sharpen_head(dense, seed, scale=3.0, bias=None):
    """Random, confident head weights so that decoded outputs vary from word to word."""
    rng = np.random.default_rng(seed)
    kernel, b = dense.get_weights()
    dense.set_weights([rng.normal(0, scale, kernel.shape).astype("float32"),
                       np.zeros_like(b) if bias is None else np.asarray(bias, "float32")])


def decode(outputs):
    return {k: v.numpy() for k, v in outputs.items()}


@pytest.fixture(scope="module")
def ner(tiny_bert_real_vocab):
    task = biozoo.TokenClassifier.from_preset(str(tiny_bert_real_vocab), label_names=LABELS)
    task.preprocessor.sequence_length = 64
    sharpen_head(task.output_dense, 0)
    return task


def served_entities(out, i):
    n = int(out["num_entities"][i])
    text = out["entity_text"][i][:n]
    return [{"start": int(out["entity_start"][i][j]), "end": int(out["entity_end"][i][j]),
             "type": out["entity_type"][i][j].decode() if isinstance(out["entity_type"][i][j], bytes) else out["entity_type"][i][j],
             "text": text[j].decode() if isinstance(text[j], bytes) else text[j],
             "score": float(out["entity_score"][i][j])} for j in range(n)]


@pytest.mark.slow  # serves in a child process without Keras
def test_ner_serving_equals_annotate(ner, corpus_sentences, tmp_path, keras_free_site_dir):
    texts = [s for s in corpus_sentences[:80] if len(ner.preprocessor.tokenizer.ids([s])[0]) < 60][:40]
    texts += ["Naïve µ-opioid (IL-2\u00adR) in Σ cells.", "", "   "]
    export_task_hub(ner, tmp_path / "ner")
    served = decode(tf.saved_model.load(str(tmp_path / "ner")).signatures["serving_default"](text=tf.constant(texts)))
    expected = ner.annotate(texts)
    total = 0
    for i, result in enumerate(expected):
        got = served_entities(served, i)
        assert [(e["start"], e["end"], e["type"], e["text"]) for e in got] == \
               [(e["start"], e["end"], e["type"], e["text"]) for e in result["entities"]], texts[i]
        np.testing.assert_allclose([e["score"] for e in got], [e["score"] for e in result["entities"]], atol=1e-4)
        total += len(got)
    assert total > 20

    # and where keras and biozoo cannot be imported
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"signature": "serving_default", "inputs": {"text": texts[:5]}}))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PYTHONPATH=str(keras_free_site_dir(tmp_path)), TF_CPP_MIN_LOG_LEVEL="2")
    child = Path(__file__).with_name("keras_free_serve.py")
    result = subprocess.run([sys.executable, "-S", str(child), str(tmp_path / "ner"), str(request), str(tmp_path / "out.json")],
                            capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    isolated = json.loads((tmp_path / "out.json").read_text())
    assert isolated["num_entities"] == served["num_entities"][:5].tolist()
    for i, n in enumerate(isolated["num_entities"]):
        assert isolated["entity_start"][i][:n] == served["entity_start"][i][:n].tolist()
        assert isolated["entity_text"][i][:n] == [t.decode() for t in served["entity_text"][i][:n]]


def test_ner_serving_predicts_every_word_of_a_long_text(ner, tmp_path):
    ner.preprocessor.sequence_length = 16
    try:
        bias = [0, 5, 0, 0, 0]  # every word B-Disease: one entity per word
        kernel, old_bias = ner.output_dense.get_weights()
        ner.output_dense.set_weights([kernel * 0, np.asarray(bias, "float32")])
        text = " ".join(f"word{i}" if i % 2 else "cancer" for i in range(60))
        export_task_hub(ner, tmp_path / "ner16")
        served = decode(tf.saved_model.load(str(tmp_path / "ner16")).signatures["serving_default"](text=tf.constant([text])))
        words = text.split(" ")
        starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
        got = served_entities(served, 0)
        # "wordN" is several pieces: still one word, one entity
        assert [(e["start"], e["text"]) for e in got] == list(zip(starts.tolist(), words))
    finally:
        ner.output_dense.set_weights([kernel, old_bias])
        ner.preprocessor.sequence_length = 64


@pytest.mark.parametrize("labels, problem_type", [
    (["false", "CPR:3", "CPR:4", "CPR:9"], None),  # softmax
    (["relevant"], None),  # one output: sigmoid
    (["score"], "regression"),  # the raw output
], ids=["softmax", "one_output", "regression"])
def test_classifier_serving_equals_predict(labels, problem_type, tiny_bert_real_vocab, corpus_sentences, tmp_path):
    """Served probabilities equal `predict_probabilities` for every kind of head, single texts and
    pairs (an empty second text is no pair, as in HF's tokenizers)."""
    task = biozoo.SequenceClassifier.from_preset(str(tiny_bert_real_vocab), label_names=labels,
                                                 problem_type=problem_type)
    task.preprocessor.sequence_length = 48
    sharpen_head(task.output_dense, 1, scale=1.0)
    texts, pairs = corpus_sentences[100:130], ["", ""] + corpus_sentences[132:160]
    export_task_hub(task, tmp_path / "re")
    loaded = tf.saved_model.load(str(tmp_path / "re"))
    single = decode(loaded.signatures["serving_default"](text=tf.constant(texts)))
    np.testing.assert_allclose(single["probabilities"], task.predict_probabilities(texts), atol=1e-5)
    assert [x.decode() for x in single["label"]] == task.predict_labels(texts)
    paired = decode(loaded.signatures["classify_pairs"](text=tf.constant(texts), text_b=tf.constant(pairs)))
    np.testing.assert_allclose(paired["probabilities"], task.predict_probabilities(texts, pairs), atol=1e-5)


def test_multilabel_serving_uses_thresholds(tiny_bert_real_vocab, corpus_sentences, tmp_path):
    labels = [f"hallmark_{i}" for i in range(5)]
    task = biozoo.SequenceClassifier.from_preset(str(tiny_bert_real_vocab), label_names=labels, multi_label=True,
                                                 thresholds=[0.3, 0.4, 0.5, 0.6, 0.7])
    task.preprocessor.sequence_length = 48
    sharpen_head(task.output_dense, 2, scale=1.0)
    texts = corpus_sentences[200:230]
    export_task_hub(task, tmp_path / "doc")
    served = decode(tf.saved_model.load(str(tmp_path / "doc")).signatures["serving_default"](text=tf.constant(texts)))
    predicted = [[n for n, on in zip(labels, row) if on] for row in served["predicted"]]
    assert predicted == task.predict_labels(texts)


def test_qa_serving_equals_answer(tiny_bert_real_vocab, shared_data, tmp_path):
    from biozoo.data.qa import read_squad

    task = biozoo.QuestionAnswerer.from_preset(str(tiny_bert_real_vocab))
    task.preprocessor.sequence_length, task.preprocessor.max_query_length = 64, 16
    sharpen_head(task.span_dense, 3, scale=1.0)
    tokenizer = task.preprocessor.tokenizer
    examples = read_squad(bioasq_dev(shared_data))
    context_ids, question_ids = tokenizer.ids([e.context for e in examples]), tokenizer.ids([e.question for e in examples])
    examples = [e for e, c, q in zip(examples, context_ids, question_ids) if len(c) < 40 and len(q) <= 16][:25]
    assert len(examples) >= 10
    questions, contexts = [e.question for e in examples], [e.context for e in examples]
    contexts[:3] = [c.replace(" ", " \u200b ", 2) for c in contexts[:3]]  # words that give no token
    expected = task.answer(questions, contexts, n_best=200)
    export_task_hub(task, tmp_path / "qa")
    served = decode(tf.saved_model.load(str(tmp_path / "qa")).signatures["serving_default"](
        question=tf.constant(questions), context=tf.constant(contexts)))
    for i, result in enumerate(expected):
        assert served["score"][i] == pytest.approx(result["score"], abs=1e-4)
        assert served["null_score_diff"][i] == pytest.approx(result["null_score_diff"], abs=1e-4)
        best = next(n for n in result["nbest"] if n["text"] == result["best_non_null"])
        # served spans are widened to whole words
        assert served["start"][i] <= best["start"] and best["end"] <= served["end"][i]
        text = served["best_non_null"][i].decode()
        assert result["best_non_null"] in text and contexts[i][served["start"][i]:served["end"][i]] == text


def test_qa_serving_of_empty_contexts_equals_answer(tiny_bert_real_vocab, tmp_path):
    """A request whose contexts are all empty has no window to read: no answer, as `answer`
    gives (the span arithmetic divided by the longest window, 0 there)."""
    task = biozoo.QuestionAnswerer.from_preset(str(tiny_bert_real_vocab))
    task.preprocessor.sequence_length, task.preprocessor.max_query_length = 32, 8
    export_task_hub(task, tmp_path / "qa")
    serve = tf.saved_model.load(str(tmp_path / "qa")).signatures["serving_default"]
    for questions, contexts in (([""], [""]), (["the gene"], [""]), (["the gene", ""], ["", " "])):
        served = decode(serve(question=tf.constant(questions), context=tf.constant(contexts)))
        for i, result in enumerate(task.answer(questions, contexts)):
            assert (result["text"], result["best_non_null"], result["nbest"]) == ("", "", [])  # the premise
            assert (served["answer"][i].decode(), served["best_non_null"][i].decode()) == ("", "")
            assert (served["start"][i], served["end"][i]) == (-1, -1)
            assert served["null_score_diff"][i] == result["null_score_diff"] == float("inf")


# NUL, control characters that join their neighbours (\v, \f, NEL), special tokens in the text
WORDPIECE_TEXTS = ["BRCA1\x00 mutations cause breast cancer", "x\x00y \x01\x02 a\x7fb c\x9fd", "a\x0bb gene",
                   "x\x85y", "a\x0cb c", "\x0bthe gene\x0b", "tab\tin\x0bthe\x0cmiddle\x1cand\u2028line\u2029sep",
                   "IL-2 receptor [SEP] foo[CLS]bar [MASK] [UNK] [PAD]", "[sep] [Sep] x[SEP]y [SEP][SEP]",
                   "x [CL\x00S] y [SEP\x00] \x00[MASK]\x00", "Naïve µ-opioid 中文 (IL-2\u00adR) in Σ cells.",
                   "p53基因突变 in 乳腺癌"]


@pytest.mark.parametrize("tokenize_chinese_chars", [True, False])
def test_wordpiece_serving_splits_words_as_hf(tokenize_chinese_chars, tiny_bert_real_vocab, tmp_path):
    """The words a BERT NER / QA SavedModel splits off the raw text are HF's: their ids are
    those HF's tokenizer gives the whole text, grouped by HF's words, and each word's character
    span holds its tokens' HF offsets and, besides, only characters HF's normalizer removes
    (CJK characters are words of their own only with tokenize_chinese_chars)."""
    from biozoo.export.tfhub import _Tokenization, _trackable

    for name in ("vocab.txt", "config.json"):
        shutil.copy(tiny_bert_real_vocab / name, tmp_path / name)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenize_chinese_chars": tokenize_chinese_chars}))
    reference = pytest.importorskip("transformers").AutoTokenizer.from_pretrained(str(tmp_path))
    tokenizer = biozoo.Tokenizer.from_preset(str(tmp_path))
    ids, starts, ends = _Tokenization(tokenizer, _trackable()).ids_by_word(tf.constant(WORDPIECE_TEXTS))
    for i, text in enumerate(WORDPIECE_TEXTS):
        encoding = reference(text, add_special_tokens=False).encodings[0]
        hf_words = {}
        for token_id, word, span in zip(encoding.ids, encoding.word_ids, encoding.offsets):
            hf_words.setdefault(word, []).append((token_id, span))
        served = [(word_ids, start, end) for word_ids, start, end in
                  zip(ids[i].to_list(), starts[i].numpy().tolist(), ends[i].numpy().tolist()) if word_ids]
        assert [word_ids for word_ids, _, _ in served] == [[t for t, _ in w] for w in hf_words.values()], text
        for (_, start, end), tokens in zip(served, hf_words.values()):
            first, last = tokens[0][1][0], tokens[-1][1][1]
            assert start <= first and last <= end, (text, text[start:end])
            assert reference.backend_tokenizer.normalizer.normalize_str(text[start:first] + text[last:end]) == "", text


WHITESPACE_TEXTS = ["the gene\vcancer cell\vprotein the", "the\fgene cancer\x85cell", "the\u00a0gene\u2003cancer",
                    "gene\v\vcell the\u3000protein\u200bcancer", "cell\u2028the gene\u2009protein"]


def test_sentencepiece_serving_splits_words_as_the_tokenizer(tiny_spiece, tmp_path):
    """An ALBERT NER SavedModel splits words where the eager tokenizer does (`split_words`):
    at the whitespace the model's normalizer keeps or makes a space, not at what it deletes
    (nmt_nfkc: \\v), so its ids, offsets and entities are the task's."""
    from biozoo import testing as H
    from biozoo.export.tfhub import _Tokenization, _trackable

    _, source = H.save_case("albert", "AlbertModel", tmp_path, "safetensors", tiny_spiece)
    task = biozoo.TokenClassifier.from_preset(str(source), label_names=LABELS)
    task.preprocessor.sequence_length = 32
    sharpen_head(task.output_dense, 4)
    tokenizer = task.preprocessor.tokenizer
    assert "\v" not in tokenizer.word_breaks and "\f" in tokenizer.word_breaks  # the premise: nmt_nfkc deletes \v

    # and deleted characters at a text's ends: entities there end where the word ends, not the
    # pipeline's last token, and HF's offsets after a leading one are one short (so not below)
    texts = WHITESPACE_TEXTS + ["\vthe gene\v", "the\x00gene cell\x00 protein"]
    ids, starts, ends = _Tokenization(tokenizer, _trackable()).ids_by_word(tf.constant(texts))
    for i, text in enumerate(texts):
        words = tokenizer.split_words(text)
        assert list(zip(starts[i].numpy().tolist(), ends[i].numpy().tolist())) == [(s, e) for _, s, e in words], text
        assert ids[i].to_list() == tokenizer.ids([w for w, _, _ in words]), text
        assert [t for row in ids[i].to_list() for t in row] == tokenizer.ids([text])[0], text

    export_task_hub(task, tmp_path / "ner")
    served = decode(tf.saved_model.load(str(tmp_path / "ner")).signatures["serving_default"](
        text=tf.constant(WHITESPACE_TEXTS)))
    expected = task.annotate(WHITESPACE_TEXTS)
    for i, result in enumerate(expected):
        got = served_entities(served, i)
        assert [(e["start"], e["end"], e["type"], e["text"]) for e in got] == \
               [(e["start"], e["end"], e["type"], e["text"]) for e in result["entities"]], WHITESPACE_TEXTS[i]
    assert any("\v" in e["text"] for result in expected for e in result["entities"])  # a word joined across \v


def test_served_entities_are_seqevals():
    """The serving graph's decoding of word tags gives seqeval's entities (conlleval's rules) on
    random tag sequences: typed, bare ("B", "I": type "_") and ill-formed ones."""
    from seqeval.metrics.sequence_labeling import get_entities

    from biozoo.export.serving import _entities

    rng = np.random.default_rng(0)
    tags = ["O", "B", "I", "B-Disease", "I-Disease", "B-Chemical", "I-Chemical", "I-Gene-Product"]
    rows = [[str(t) for t in rng.choice(tags, size=rng.integers(1, 12))] for _ in range(200)]
    texts = [" ".join(f"w{i}" for i in range(len(row))) for row in rows]
    starts = [[len(" ".join(f"w{i}" for i in range(k))) + (k > 0) for k in range(len(row))] for row in rows]
    ends = [[start + len(f"w{k}") for k, start in enumerate(row_starts)] for row_starts in starts]
    out = decode(_entities(tf.constant(texts), tf.constant([t for row in rows for t in row]),
                           tf.ones([sum(map(len, rows))]), tf.ragged.constant(starts, tf.int64),
                           tf.ragged.constant(ends, tf.int64)))
    for i, row in enumerate(rows):
        expected = [(kind, starts[i][first], ends[i][last]) for kind, first, last in get_entities(row)]
        assert [(e["type"], e["start"], e["end"]) for e in served_entities(out, i)] == expected, row
