"""SQuAD v2.0 / v1.1 evaluation: hand-worked cases from the official definitions."""

import pytest

from biozoo.data.qa import QAExample
from biozoo.metrics.squad import (
    answer_scores,
    compute_exact,
    compute_f1,
    evaluate_v1,
    evaluate_v2,
    normalize_answer,
)


def dataset(qas):
    return {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "ctx", "qas": qas}]}]}


def qa(qid, *answers):
    return {"id": qid, "question": "?", "answers": [{"text": a, "answer_start": 0} for a in answers]}


DATA = dataset(
    [
        qa("q1", "the Cat", "a big cat"),
        qa("q2", "red blue green", "the"),  # "the" normalises to "" and is dropped
        qa("q3"),  # unanswerable
        qa("q4"),  # unanswerable
        qa("q5", "Paris"),  # no prediction: reported and skipped
    ]
)
PREDS = {"q1": "cat", "q2": "blue green yellow", "q3": "", "q4": "something"}
# q1: EM 1, F1 1 | q2: EM 0, F1 2/3 | q3: EM 1, F1 1 | q4: EM 0, F1 0


def test_normalize_and_token_scores():
    assert normalize_answer("The  Cat's, hat!") == "cats hat"
    assert normalize_answer("an apple a day") == "apple day"
    assert normalize_answer("Theater") == "theater"
    assert compute_exact("The cat.", "cat") == 1
    assert compute_f1("red blue green", "blue green yellow") == pytest.approx(2 / 3)
    assert compute_f1("", "") == 1
    assert compute_f1("the", "") == 1  # both empty after normalisation
    assert compute_f1("", "cat") == 0
    assert compute_f1("a b", "c d") == 0


def test_v2_without_na_probs():
    with pytest.warns(UserWarning, match="q5"):
        res = evaluate_v2(DATA, PREDS)
    assert res["total"] == 4
    assert res["exact"] == pytest.approx(50.0)
    assert res["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1 + 0) / 4)
    assert res["HasAns_total"] == 2 and res["NoAns_total"] == 2
    assert res["HasAns_exact"] == pytest.approx(50.0)
    assert res["HasAns_f1"] == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert res["NoAns_exact"] == pytest.approx(50.0)
    assert res["NoAns_f1"] == pytest.approx(50.0)
    assert not any(k.startswith("best_") for k in res)
    assert list(res)[:3] == ["exact", "f1", "total"]


NA = {"q1": 0.1, "q2": 0.6, "q4": 0.7, "q3": 0.9, "not-in-data": 0.05}


def test_v2_best_threshold_search():
    with pytest.warns(UserWarning):
        res = evaluate_v2(DATA, PREDS, na_probs=NA)
    # default threshold 1.0: nothing is switched to no-answer
    assert res["exact"] == pytest.approx(50.0)
    # start = 2 no-answer questions; ascending na_prob:
    # q1 (+EM 1 / +F1 1) -> 3 | q2 (+0 / +2/3) -> 3 / 3.667 | q4 (non-empty, -1) | q3 (empty, 0)
    assert res["best_exact"] == pytest.approx(75.0)
    assert res["best_exact_thresh"] == pytest.approx(0.1)
    assert res["best_f1"] == pytest.approx(100 * (3 + 2 / 3) / 4)
    assert res["best_f1_thresh"] == pytest.approx(0.6)


def test_v2_threshold_applied():
    with pytest.warns(UserWarning):
        res = evaluate_v2(DATA, PREDS, na_probs=NA, na_prob_thresh=0.5)
    # q2 (0.6) and q4 (0.7) and q3 (0.9) are answered "no answer":
    # q2 answerable -> 0; q4 unanswerable -> 1; q3 -> 1; q1 unchanged (1)
    assert res["exact"] == pytest.approx(75.0)
    assert res["f1"] == pytest.approx(75.0)
    assert res["NoAns_exact"] == pytest.approx(100.0)
    assert res["HasAns_f1"] == pytest.approx(50.0)


def test_v2_best_thresh_zero_when_answering_never_helps():
    data = dataset([qa("a", "x"), qa("b")])
    res = evaluate_v2(data, {"a": "wrong", "b": "oops"}, na_probs={"a": 0.2, "b": 0.3})
    # start 1 (b as no-answer); a adds 0; b adds -1 -> best stays 1 at thresh 0.0
    assert res["best_exact"] == pytest.approx(50.0)
    assert res["best_exact_thresh"] == 0.0


def test_v2_best_threshold_counts_only_the_scored_questions():
    """An unanswerable question without a prediction is skipped, as in the breakdown: it gave the
    threshold search a free point (best_exact 150 here, 200 with q0 alone)."""
    data = dataset([qa("q0", "Paris"), qa("q1"), qa("q2")])
    with pytest.warns(UserWarning, match="q2"):
        res = evaluate_v2(data, {"q0": "Paris", "q1": ""}, na_probs={"q0": 0.2, "q1": 0.4, "q2": 0.1})
    # scored q0, q1: start 1 (q1 as no-answer); q0 (na 0.2) adds 1 -> 2 of 2; q1 (empty) adds 0
    assert res["total"] == 2 and res["best_exact"] == pytest.approx(100.0) and res["best_f1"] == pytest.approx(100.0)
    assert res["best_exact_thresh"] == pytest.approx(0.2)
    with pytest.warns(UserWarning, match="q1, q2"):
        alone = evaluate_v2(data, {"q0": "London"}, na_probs={"q0": 0.5})
    # scored q0 alone: start 0; q0 adds 0 -> 0
    assert alone["best_exact"] == alone["best_f1"] == 0.0


def test_v2_errors():
    with pytest.raises(ValueError, match="no prediction"), pytest.warns(UserWarning):
        evaluate_v2(DATA, {"zzz": "x"})
    with pytest.raises(ValueError, match="na_probs has no value"):
        evaluate_v2(dataset([qa("a", "x")]), {"a": "x"}, na_probs={})
    with pytest.raises(ValueError, match="expected a string"):
        evaluate_v2(dataset([qa("a", "x")]), {"a": 3})


def test_v2_on_v1_data_and_data_list():
    data = dataset([qa("a", "Aspirin"), qa("b", "p53", "TP53")])
    res = evaluate_v2(data["data"], {"a": "aspirin", "b": "the tp53 gene"})
    assert res["exact"] == pytest.approx(50.0)
    assert res["f1"] == pytest.approx(100 * (1 + 2 * (1 / 2) * 1 / (1 / 2 + 1)) / 2)
    assert "NoAns_total" not in res


def test_v1():
    data = dataset([qa("q1", "the Cat", "a big cat"), qa("q2", "red blue green"), qa("q5", "Paris")])
    with pytest.warns(UserWarning, match="q5"):
        res = evaluate_v1(data, {"q1": "cat", "q2": "blue green yellow"})
    # the unanswered q5 counts as 0 in the total
    assert res["exact_match"] == pytest.approx(100 / 3)
    assert res["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)


def test_the_squad_scores_refuse_a_question_id_given_twice():
    examples = [QAExample("q", "?", "abc", [{"text": "b", "answer_start": 1}]),
                QAExample("q", "??", "abc", [{"text": "c", "answer_start": 2}])]
    results = [{"text": t, "best_non_null": t, "null_score_diff": -5.0} for t in "bc"]
    with pytest.raises(ValueError, match="question id 'q' is given twice"):
        answer_scores(examples, results, "1.1")
    examples[1].qid = "q2"
    assert answer_scores(examples, results, "1.1")["squad_v1"]["exact_match"] == 100.0
