"""SQuAD evaluation, equal to the official ``evaluate-v2.0.py`` and ``evaluate-v1.1.py`` scripts.

The functions below follow the official scripts step by step (same normalisation, same
summation order), so the numbers are bit-identical. Scores are percentages, as the
official scripts print them.

Where the official v2.0 script would crash, these functions do something defined instead:

* A question without a prediction is reported (a ``UserWarning`` listing the ids, where the
  official script prints ``Missing prediction for <id>``) and skipped, as the official script
  does. The official script then raises ``KeyError`` when building the HasAns/NoAns
  breakdown; here the breakdown covers the scored questions only. With ``missing="wrong"``
  such a question counts instead, as a wrong answer (0) at every threshold.
* No prediction matching any question, or ``na_probs`` lacking a scored question id, raise
  ``ValueError`` with a clear message (the official script raises ZeroDivisionError/KeyError).
"""

from __future__ import annotations

import collections
import re
import string
import warnings

import numpy as np

__all__ = [
    "normalize_answer",
    "compute_exact",
    "compute_f1",
    "evaluate_v1",
    "evaluate_v2",
    "find_best_thresh",
    "missing_predictions",
    "squad_dataset",
    "answer_scores",
]

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace (official order)."""

    def remove_articles(text):
        return re.sub(_ARTICLES, " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        return "".join(ch for ch in text if ch not in _PUNCT)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def _get_tokens(s):
    if not s:
        return []
    return normalize_answer(s).split()


def compute_exact(a_gold: str, a_pred: str) -> int:
    """1 when the normalised strings are equal, else 0 (v2.0 definition)."""
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold: str, a_pred: str) -> float:
    """Token F1 over normalised tokens; if either side is empty, int(both empty) (v2.0)."""
    gold_toks = _get_tokens(a_gold)
    pred_toks = _get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        # If either is no-answer, then F1 is 1 if they agree, 0 otherwise
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def _articles(dataset):
    """Accept the whole SQuAD json ({"data": [...], "version": ...}) or its "data" list."""
    if isinstance(dataset, dict):
        if "data" not in dataset:
            raise ValueError("dataset dict has no 'data' key (expected SQuAD json)")
        dataset = dataset["data"]
    if not isinstance(dataset, list):
        raise ValueError("dataset must be the SQuAD json or its 'data' list")
    return dataset


def _iter_qas(dataset):
    for article in _articles(dataset):
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def _check_predictions(predictions):
    if not isinstance(predictions, dict):
        raise ValueError("predictions must be a dict {question id: answer text}")
    for qid, text in predictions.items():
        if not isinstance(text, str):
            raise ValueError(f"prediction for {qid!r} is {type(text).__name__}, expected a string")


def missing_predictions(dataset, predictions) -> list[str]:
    """Question ids of ``dataset`` that have no entry in ``predictions``."""
    return [qa["id"] for qa in _iter_qas(dataset) if qa["id"] not in predictions]


def _warn_missing(missing, score_word):
    if missing:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        warnings.warn(f"{len(missing)} question(s) have no prediction and are {score_word}: {shown}", stacklevel=3)


def _make_qid_to_has_ans(dataset):
    qid_to_has_ans = {}
    for qa in _iter_qas(dataset):
        qid_to_has_ans[qa["id"]] = bool(qa["answers"])
    return qid_to_has_ans


def _get_raw_scores(dataset, preds):
    exact_scores = {}
    f1_scores = {}
    for qa in _iter_qas(dataset):
        qid = qa["id"]
        gold_answers = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])]
        if not gold_answers:
            # For unanswerable questions, only correct answer is empty string
            gold_answers = [""]
        if qid not in preds:
            continue  # reported by the caller, as the official "Missing prediction for"
        a_pred = preds[qid]
        # Take max over all gold answers
        exact_scores[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
        f1_scores[qid] = max(compute_f1(a, a_pred) for a in gold_answers)
    return exact_scores, f1_scores


def _apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, na_prob_thresh, unanswered=()):
    new_scores = {}
    for qid, s in scores.items():
        pred_na = qid not in unanswered and na_probs[qid] > na_prob_thresh
        if pred_na:
            new_scores[qid] = float(not qid_to_has_ans[qid])
        else:
            new_scores[qid] = s
    return new_scores


def _make_eval_dict(exact_scores, f1_scores, qid_list=None):
    if not qid_list:
        total = len(exact_scores)
        return collections.OrderedDict(
            [
                ("exact", 100.0 * sum(exact_scores.values()) / total),
                ("f1", 100.0 * sum(f1_scores.values()) / total),
                ("total", total),
            ]
        )
    total = len(qid_list)
    return collections.OrderedDict(
        [
            ("exact", 100.0 * sum(exact_scores[k] for k in qid_list) / total),
            ("f1", 100.0 * sum(f1_scores[k] for k in qid_list) / total),
            ("total", total),
        ]
    )


def _merge_eval(main_eval, new_eval, prefix):
    for k in new_eval:
        main_eval[f"{prefix}_{k}"] = new_eval[k]


def find_best_thresh(preds, scores, na_probs, qid_to_has_ans, unanswered=()) -> tuple[float, float]:
    """The official threshold search: returns ``(100 * best_score / len(scores), best_thresh)``.

    Starts from the number of no-answer questions (all answered as empty), then walks the
    question ids in ascending ``na_prob`` (stable: ties keep ``na_probs`` order), adding the
    score of answerable questions and -1 for a non-empty answer to an unanswerable one. Only
    the scored questions (``scores``) count: the official script has a prediction for every
    question, and an unanswerable question left unscored would be a free point. `unanswered`
    questions (scored without a prediction) are wrong at every threshold.
    """
    num_no_ans = sum(1 for k in scores if not qid_to_has_ans[k] and k not in unanswered)
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    qid_list = sorted(na_probs, key=lambda k: na_probs[k])
    for qid in qid_list:
        if qid not in scores or qid in unanswered:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if preds[qid] else 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0, missing="skip") -> dict:
    """Official SQuAD v2.0 evaluation.

    Args:
        dataset: the SQuAD json (dict with ``"data"``) or its ``"data"`` list. Questions with
            ``answers == []`` are unanswerable (BioASQ-as-SQuAD v1.1 data: all answerable).
        predictions: ``{qid: answer text}``; ``""`` means "no answer".
        na_probs: optional ``{qid: probability of no answer}``. Without it every na_prob is
            0.0 (as the official script) and no ``best_*`` keys are returned.
        na_prob_thresh: a question with ``na_prob > na_prob_thresh`` counts as answered
            "no answer" (official default 1.0).
        missing: questions without a prediction are "skip"ped (the official script's total),
            or scored as "wrong" (0, in every total and breakdown).

    Returns:
        dict with ``exact``, ``f1``, ``total``, ``HasAns_exact``, ``HasAns_f1``,
        ``HasAns_total``, ``NoAns_exact``, ``NoAns_f1``, ``NoAns_total`` (the HasAns/NoAns
        blocks only when such questions exist) and, with ``na_probs``, ``best_exact``,
        ``best_exact_thresh``, ``best_f1``, ``best_f1_thresh``. Percentages.
    """
    _check_predictions(predictions)
    if missing not in ("skip", "wrong"):
        raise ValueError(f"missing must be 'skip' or 'wrong', got {missing!r}")
    given_na_probs = na_probs is not None
    if not given_na_probs:
        na_probs = {k: 0.0 for k in predictions}
    qid_to_has_ans = _make_qid_to_has_ans(dataset)
    unanswered = [k for k in qid_to_has_ans if k not in predictions]
    _warn_missing(unanswered, "skipped" if missing == "skip" else "scored 0")
    exact_raw, f1_raw = _get_raw_scores(dataset, predictions)
    if not exact_raw:
        raise ValueError("no prediction matches any question id of the dataset")
    if missing == "wrong":
        for qid in unanswered:
            exact_raw[qid] = f1_raw[qid] = 0
    unanswered = set(unanswered)
    lacking = [k for k in exact_raw if k not in na_probs and k not in unanswered]
    if lacking:
        raise ValueError(
            f"na_probs has no value for {len(lacking)} predicted question(s): {', '.join(lacking[:5])}"
        )
    # HasAns/NoAns over the scored questions (the official script raises KeyError on missing ones)
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v and k in exact_raw]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v and k in exact_raw]
    exact_thresh = _apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh, unanswered)
    f1_thresh = _apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh, unanswered)
    out_eval = _make_eval_dict(exact_thresh, f1_thresh)
    if has_ans_qids:
        _merge_eval(out_eval, _make_eval_dict(exact_thresh, f1_thresh, qid_list=has_ans_qids), "HasAns")
    if no_ans_qids:
        _merge_eval(out_eval, _make_eval_dict(exact_thresh, f1_thresh, qid_list=no_ans_qids), "NoAns")
    if given_na_probs:
        best_exact, exact_t = find_best_thresh(predictions, exact_raw, na_probs, qid_to_has_ans, unanswered)
        best_f1, f1_t = find_best_thresh(predictions, f1_raw, na_probs, qid_to_has_ans, unanswered)
        out_eval["best_exact"] = best_exact
        out_eval["best_exact_thresh"] = exact_t
        out_eval["best_f1"] = best_f1
        out_eval["best_f1_thresh"] = f1_t
    return dict(out_eval)


# ---------------------------------------------------------------- SQuAD v1.1


def _f1_v1(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def _exact_v1(prediction, ground_truth):
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def evaluate_v1(dataset, predictions) -> dict:
    """Official SQuAD v1.1 evaluation: ``{"exact_match", "f1"}`` (percent).

    Unanswered questions score 0 and count in the total (reported as a ``UserWarning``).
    """
    _check_predictions(predictions)
    f1 = exact_match = total = 0
    missing = []
    for qa in _iter_qas(dataset):
        total += 1
        if qa["id"] not in predictions:
            missing.append(qa["id"])
            continue
        ground_truths = [x["text"] for x in qa["answers"]]
        if not ground_truths:
            raise ValueError(f"question {qa['id']!r} has no answer; SQuAD v1.1 needs one (use evaluate_v2)")
        prediction = predictions[qa["id"]]
        exact_match += max(_exact_v1(prediction, gt) for gt in ground_truths)
        f1 += max(_f1_v1(prediction, gt) for gt in ground_truths)
    _warn_missing(missing, "scored 0")
    if total == 0:
        raise ValueError("the dataset has no questions")
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


def squad_dataset(examples) -> dict:
    """A SQuAD json (``{"data": [...]}``, one article per example) of QA examples: objects with
    ``qid``, ``question``, ``context``, ``answers`` and ``is_impossible`` (``biozoo.data.qa``'s)."""
    return {"data": [{"paragraphs": [{"context": e.context, "qas": [
        {"id": e.qid, "question": e.question, "answers": e.answers, "is_impossible": e.is_impossible}]}]}
        for e in examples]}


def answer_scores(examples, results, version) -> dict:
    """The SQuAD scores of a QA model's answers to `examples` (as :func:`squad_dataset` takes).

    Args:
        results: one dict per example, as ``QuestionAnswerer.answer`` returns them: ``text``
            (the answer, "" for none), ``best_non_null`` (the best non-empty span) and
            ``null_score_diff`` (the no-answer score minus the best span's).
        version: "2.0": ``{"squad_v2": evaluate_v2(...)}`` on the answers, with the sigmoid of
            ``null_score_diff`` as no-answer probability; otherwise ``{"squad_v1": ...}`` on the
            best non-empty spans.

    A question id given twice is refused (`ValueError`): the scores are keyed by id.
    """
    ids = [e.qid for e in examples]
    if len(set(ids)) != len(ids):
        twice = next(qid for n, qid in enumerate(ids) if qid in ids[:n])
        raise ValueError(f"question id {twice!r} is given twice: the SQuAD scores are keyed by id, every question "
                         "needs its own")
    dataset = squad_dataset(examples)
    if version == "2.0":
        predictions = {e.qid: r["text"] for e, r in zip(examples, results)}
        na_probs = {e.qid: float(1.0 / (1.0 + np.exp(-r["null_score_diff"]))) for e, r in zip(examples, results)}
        return {"squad_v2": evaluate_v2(dataset, predictions, na_probs)}
    best = {e.qid: r["best_non_null"] for e, r in zip(examples, results)}
    return {"squad_v1": evaluate_v1(dataset, best)}
