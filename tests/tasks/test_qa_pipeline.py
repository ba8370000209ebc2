"""`QuestionAnswerer.pipeline_answers` answers as transformers' `pipeline("question-answering")`.

The reference answers, windows and tokens come from transformers 4.x (5.0 removed the
pipeline), written by tests/fixtures/qa_pipeline/make.py with one tiny random QA model per
family: same answer text and character offsets, score within 1e-4, on short and multi-window
contexts (non-ASCII text, chemical names, whitespace runs, CJK, unknown characters), with
top_k 1-3, handle_impossible_answer on and off, several max_answer_len, align_to_words off.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import biozoo

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "qa_pipeline"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
QUESTIONS = [q for q, _ in EXPECTED["examples"]]
CONTEXTS = [c for _, c in EXPECTED["examples"]]
SCORE_TOLERANCE = 1e-4


@pytest.fixture(scope="module", params=sorted(EXPECTED["families"]))
def family(request, tmp_path_factory):
    """(family name, QuestionAnswerer converted from the fixture's HF directory, expectations)."""
    name = request.param
    with pytest.MonkeyPatch.context() as patch:  # module scope: the per-test cache is not set up yet
        patch.setenv("BIOZOO_CACHE", str(tmp_path_factory.mktemp("biozoo-cache")))
        qa = biozoo.QuestionAnswerer.from_preset(str(FIXTURE / name))
    return name, qa, EXPECTED["families"][name]


def as_list(result):
    return result if isinstance(result, list) else [result]


def differences(got, expected):
    """Descriptions of the answers of `got` that differ from `expected` (lists per question)."""
    out = []
    for e, (ours, theirs) in enumerate(zip(got, expected)):
        ours = as_list(ours)
        same = len(ours) == len(theirs) and all(
            a["answer"] == b["answer"] and a["start"] == b["start"] and a["end"] == b["end"]
            and abs(a["score"] - b["score"]) <= SCORE_TOLERANCE for a, b in zip(ours, theirs))
        if not same:
            brief = lambda answers: [(a["answer"], a["start"], a["end"], round(a["score"], 6)) for a in answers]
            out.append(f"example {e}: biozoo {brief(ours)} != pipeline {brief(theirs)}")
    return out


def canonical_words(words):
    """Word ids renumbered by first appearance (only the grouping of tokens counts)."""
    seen = {}
    return [seen.setdefault(w, len(seen)) for w in words]


def test_context_tokens_equal_the_fast_tokenizer(family):
    """Ids, character offsets and word grouping of the tokens of every context, and of texts
    with odd whitespace, removed characters and special tokens written in them."""
    name, qa, expected = family
    texts = CONTEXTS + EXPECTED["token_texts"]
    features = qa.preprocessor.pipeline_features(["x"] * len(texts), texts, max_seq_len=100000)
    for e, tokens in enumerate(expected["context_tokens"] + expected["text_tokens"]):
        (window,) = np.flatnonzero(features.example == e)
        context = np.flatnonzero(features.segment_ids[window])[:-1]  # less the final [SEP]
        assert [int(i) for i in features.token_ids[window][context]] == [t[0] for t in tokens], f"{name} {e}: ids"
        assert [tuple(features.spans[window][i]) for i in context] == [(t[1], t[2]) for t in tokens], f"{name} {e}"
        ours = canonical_words([features.words[window][i] for i in context])
        assert ours == canonical_words([t[3] for t in tokens]), f"{name} {e}: words"


def test_windows_equal_the_tokenizer_overflow(family):
    """[CLS] question [SEP] context window [SEP], windows overlapping by doc_stride tokens."""
    name, qa, expected = family
    tok = qa.preprocessor.tokenizer
    for key, windows in expected["windows"].items():
        max_seq_len, doc_stride = map(int, key.split("/"))
        features = qa.preprocessor.pipeline_features(QUESTIONS, CONTEXTS, max_seq_len, doc_stride)
        for e, (question, context) in enumerate(zip(expected["question_ids"], expected["context_tokens"])):
            ours = [[int(i) for i in features.token_ids[w]] for w in np.flatnonzero(features.example == e)]
            context = [t[0] for t in context]
            theirs = [[tok.cls_token_id, *question, tok.sep_token_id, *context[a:a + n], tok.sep_token_id]
                      for a, n in windows[e]]
            assert ours == theirs, f"{name} {key} example {e}"


def test_answers_equal_the_pipeline(family):
    name, qa, expected = family
    for setting, answers in zip(EXPECTED["settings"], expected["answers"]):
        got = qa.pipeline_answers(QUESTIONS, CONTEXTS, **setting)
        for result, context in zip(got, CONTEXTS):
            for answer in as_list(result):
                assert context[answer["start"]:answer["end"]] == answer["answer"]
        assert (not differences(got, answers)), f"{name} {setting}:\n" + "\n".join(differences(got, answers))


def test_the_fixture_tells_the_rules_apart(family):
    """The comparison can fail: without word alignment, or with biozoo's SQuAD rule, answers
    differ from the pipeline's on these inputs."""
    name, qa, expected = family
    setting, answers = EXPECTED["settings"][0], expected["answers"][0]
    assert setting.get("align_to_words", True)
    unaligned = qa.pipeline_answers(QUESTIONS, CONTEXTS, **{**setting, "align_to_words": False})
    assert len(differences(unaligned, answers)) >= 2, name

    pre = qa.preprocessor
    saved = pre.sequence_length, pre.doc_stride
    pre.sequence_length, pre.doc_stride = setting["max_seq_len"], setting["doc_stride"]
    try:
        squad = qa.answer(QUESTIONS, CONTEXTS, max_answer_length=15)
    finally:
        pre.sequence_length, pre.doc_stride = saved
    differing = [e for e, (ours, theirs) in enumerate(zip(squad, answers))
                 if ours["best_non_null"] != theirs[0]["answer"]]
    assert len(differing) >= 2, name


def test_refuses_what_the_tokenizer_refuses(family):
    """doc_stride must stay below the context tokens of a window, as the tokenizer's stride."""
    _, qa, _ = family
    with pytest.raises(ValueError, match="doc_stride"):
        qa.pipeline_answers(QUESTIONS[3:4], CONTEXTS[3:4], max_seq_len=40, doc_stride=30)
    with pytest.raises(ValueError, match="larger than"):
        qa.pipeline_answers(QUESTIONS[:1], CONTEXTS[:1], max_seq_len=40, doc_stride=41)
    # a context that fits one window needs no stride
    assert qa.pipeline_answers(QUESTIONS[:1], CONTEXTS[:1], max_seq_len=64, doc_stride=60)[0]["answer"]


def test_refuses_what_the_pipeline_refuses(family):
    """transformers' pipeline refuses an empty question or context ("`context` cannot be empty")
    and questions and contexts of different lengths; biozoo did neither (an empty context gave
    the answer "", two contexts for one question answered the second None, and bare strings
    were read as lists of characters)."""
    _, qa, _ = family
    with pytest.raises(ValueError, match=r"contexts\[1\] is empty"):
        qa.pipeline_answers(QUESTIONS[:2], [CONTEXTS[0], ""])
    with pytest.raises(ValueError, match=r"questions\[0\] is empty"):
        qa.pipeline_answers([""], CONTEXTS[:1])
    for answer in (qa.pipeline_answers, qa.answer):
        with pytest.raises(ValueError, match="1 questions and 2 contexts"):
            answer(QUESTIONS[:1], CONTEXTS[:2])
        with pytest.raises(ValueError, match="2 questions and 1 contexts"):
            answer(QUESTIONS[:2], CONTEXTS[:1])
        with pytest.raises(TypeError, match=r"questions must be a list of strings, got a string.*\[text\]"):
            answer(QUESTIONS[0], CONTEXTS[0])
    with pytest.raises(ValueError, match="2 questions and 1 answers"):
        qa.preprocessor.features(QUESTIONS[:2], CONTEXTS[:2], [None])
    # what the pipeline answers, biozoo still answers: a context of spaces only
    assert len(qa.pipeline_answers(QUESTIONS[:1], ["   "])) == 1
