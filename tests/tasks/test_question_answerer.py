"""Extractive QA: SQuAD features keep character spans, answers map back to the context,
null answers follow the SQuAD v2.0 rule, BioASQ answers aggregate over snippets."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

import biozoo
from biozoo.data.qa import read_squad
from biozoo.tasks.question_answerer import QuestionAnswererPreprocessor
from biozoo.testing import bioasq_dev
from biozoo.train.finetune import Hyperparameters, run_finetune


@pytest.fixture(scope="module")
def qa(tiny_bert_real_vocab):
    return biozoo.QuestionAnswerer.from_preset(str(tiny_bert_real_vocab))


@pytest.fixture(scope="module")
def bioasq(shared_data):
    return read_squad(bioasq_dev(shared_data))


def test_answer_spans_map_back_to_the_context(qa, bioasq):
    qa.preprocessor.sequence_length, qa.preprocessor.doc_stride = 64, 16
    examples = bioasq[:300]
    answers = [(e.answers[0]["answer_start"], e.answers[0]["text"]) for e in examples]
    features = qa.preprocessor.features([e.question for e in examples], [e.context for e in examples], answers)
    assert max(len(t) for t in features.token_ids) <= 64
    found = 0
    for w, e in enumerate(features.example):
        s, t = features.start_positions[w], features.end_positions[w]
        if s == 0:
            continue
        found += 1
        start, text = answers[e]
        span = examples[e].context[features.spans[w][s][0]:features.spans[w][t][1]]
        # the token span covers the answer; it can only grow to whole sub-word pieces
        assert text.lower() in span.lower() and len(span) <= len(text) + 12, (span, text)
    assert found >= 290  # nearly every answer falls in at least one window
    for w in range(len(features.token_ids)):  # each context token has one "max context" window
        assert len(features.max_context[w]) == len(features.token_ids[w])


def test_answers_are_substrings_of_the_context(qa):
    contexts = ["BRCA1 is a tumour suppressor gene mutated in hereditary breast cancer. " * 3,
                "Cystic fibrosis is caused by mutations in CFTR."]
    results = qa.answer(["Which gene is mutated?", "What causes cystic fibrosis?"], contexts)
    for result, context in zip(results, contexts):
        assert result["best_non_null"] in context
        for candidate in result["nbest"]:
            assert context[candidate["start"]:candidate["end"]] == candidate["text"]
        # n-best probabilities: a softmax over the n-best scores and the null score (which the
        # null_score_diff and the best score give back), recomputed here with numpy
        assert result["nbest"] and np.isfinite(result["null_score_diff"])
        scores = np.array([c["score"] for c in result["nbest"]] + [result["score"] + result["null_score_diff"]])
        expected = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
        np.testing.assert_allclose([c["probability"] for c in result["nbest"]], expected[:-1], rtol=0, atol=1e-6)
        assert result["score"] == result["nbest"][0]["score"] == max(c["score"] for c in result["nbest"])
        assert (result["text"] == "") == (result["null_score_diff"] > qa.null_threshold)


def test_finetune_qa_on_bioasq(tmp_path, shared_data, tiny_bert_real_vocab):
    data = json.loads(bioasq_dev(shared_data).read_text())
    paragraphs = data["data"][0]["paragraphs"] if len(data["data"]) == 1 else [p for a in data["data"] for p in a["paragraphs"]]
    (tmp_path / "train.json").write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs[:60]}]}))
    (tmp_path / "test.json").write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs[60:100]}]}))
    hp = Hyperparameters(epochs=1, batch_size=8, learning_rate=1e-3, max_seq_length=64)
    metrics = run_finetune("qa", str(tiny_bert_real_vocab), tmp_path, tmp_path / "model", hp, log=lambda m: None)
    assert set(metrics["test"]["squad_v1"]) == {"exact_match", "f1"}
    assert set(metrics["test"]["bioasq_factoid"]) >= {"strict_accuracy", "lenient_accuracy", "mrr"}


def test_context_tokens_are_the_hf_tokenizers(qa, tiny_bert_real_vocab):
    """A window's tokens are those of transformers' tokenizer on (question, context), words that
    the normalizer removes (zero-width space, soft hyphen, a lone combining mark, BOM) included."""
    transformers = pytest.importorskip("transformers")
    reference = transformers.AutoTokenizer.from_pretrained(str(tiny_bert_real_vocab))
    question = "Which gene?"
    contexts = ["BRCA1 \u200b mutations", "BRCA1 \u00ad cancer \u0301 cells \ufeff.", "IL-2 receptor\u200b alpha"]
    features = qa.preprocessor.features([question] * len(contexts), contexts)
    assert len(features.token_ids) == len(contexts)  # one window each
    for ids, context in zip(features.token_ids, contexts):
        expected = reference(question, context)["input_ids"]
        assert [int(i) for i in ids if i != reference.pad_token_id] == expected, context


def test_a_model_of_fewer_positions_than_the_default_window_answers(tmp_path, minilm_dir):
    """A 64-position checkpoint reads a long context in windows of 64, not the default 384
    (position embeddings have no row past 64: the model failed)."""
    from biozoo import testing as H

    model = H.make_model("bert", "BertForQuestionAnswering", vocab_size=30522, max_position_embeddings=64)
    qa = biozoo.QuestionAnswerer.from_preset(str(H.save_hf_directory(model, tmp_path / "qa64",
                                                                     vocab_file=minilm_dir / "vocab.txt")))
    context = "BRCA1 is a tumour suppressor gene mutated in hereditary breast and ovarian cancer. " * 8
    features = qa.preprocessor.features(["Which gene is mutated?"], [context])
    assert len(features.token_ids) > 1 and max(len(ids) for ids in features.token_ids) == 64
    (result,) = qa.answer(["Which gene is mutated?"], [context])
    assert result["nbest"] and all(context[c["start"]:c["end"]] == c["text"] for c in result["nbest"])


# Words whose pieces the QA features once gave the whole word's span (an unknown character, a
# ligature, a soft hyphen), or the wrong characters (zero-width no-break spaces around a Hangul
# syllable that the normalizer splits into three jamo); a [SEP] written in the text, once three pieces.
SPAN_TEXTS = ["risk of Alzheimer\u2665s disease", "(\ufb01brosis), and", "soft\u00adhyphenated BRCA1",
              "the [SEP] token", "\ufeff\ud55c\ufeffmdo", "in[SEP]text"]
ALBERT_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "qa_pipeline" / "albert"


@pytest.fixture(scope="module", params=["wordpiece", "sentencepiece"])
def tokenizer_dir(request, tiny_bert_real_vocab):
    return tiny_bert_real_vocab if request.param == "wordpiece" else ALBERT_FIXTURE


def test_context_spans_are_the_hf_offsets(tokenizer_dir):
    """Each context token of a window has the HF tokenizer's id and `offset_mapping` span."""
    transformers = pytest.importorskip("transformers")
    reference = transformers.AutoTokenizer.from_pretrained(str(tokenizer_dir))
    pre = QuestionAnswererPreprocessor(biozoo.Tokenizer.from_preset(str(tokenizer_dir)), sequence_length=64)
    features = pre.features(["Which gene?"] * len(SPAN_TEXTS), SPAN_TEXTS)
    assert len(features.token_ids) == len(SPAN_TEXTS)  # one window each
    for ids, spans, text in zip(features.token_ids, features.spans, SPAN_TEXTS):
        context = [i for i, span in enumerate(spans) if span[0] >= 0]
        expected = reference(text, add_special_tokens=False, return_offsets_mapping=True)
        assert [int(ids[i]) for i in context] == expected["input_ids"], text
        assert [tuple(spans[i]) for i in context] == [tuple(s) for s in expected["offset_mapping"]], text


def test_training_positions_of_answers_inside_words(tokenizer_dir):
    """An answer that starts or ends inside a word starts at the first and ends at the last token
    whose HF offsets overlap it, and those tokens' spans cover no more than its pieces."""
    transformers = pytest.importorskip("transformers")
    reference = transformers.AutoTokenizer.from_pretrained(str(tokenizer_dir))
    pre = QuestionAnswererPreprocessor(biozoo.Tokenizer.from_preset(str(tokenizer_dir)), sequence_length=64)
    answers = [(10, "zheimer"), (2, "brosis"), (5, "hyphenated"), (4, "[SEP]"), (3, "mdo"), (4, "EP]te")]
    assert all(text[a:a + len(t)] == t for text, (a, t) in zip(SPAN_TEXTS, answers))
    features = pre.features(["Which gene?"] * len(SPAN_TEXTS), SPAN_TEXTS, answers)
    narrower = 0
    for w, (text, (start, answer)) in enumerate(zip(SPAN_TEXTS, answers)):
        offsets = reference(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        inside = [i for i, (a, b) in enumerate(offsets) if b > start and a < start + len(answer)]
        first = int(np.flatnonzero(features.segment_ids[w])[0])  # the window's first context token
        assert (features.start_positions[w], features.end_positions[w]) == (first + inside[0], first + inside[-1]), text
        spans = features.spans[w]
        read = text[spans[features.start_positions[w]][0]:spans[features.end_positions[w]][1]]
        assert answer in read, text
        word = next(m for m in re.finditer(r"\S+", text) if m.start() <= start < m.end())
        narrower += len(read) < len(word.group())
    assert narrower >= 3
