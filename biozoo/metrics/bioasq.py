"""BioASQ factoid scores, equal to the official Java evaluator, and the BioBERT n-best transform.

``factoid_scores`` reproduces ``java -cp BioASQEvaluation.jar evaluation.EvaluatorTask1b
-phaseB -e 5 golden.json system.json`` (BioASQ/Evaluation-Measures, ``-e 5`` = the BIOASQ5
rule set) for factoid questions:

* every exact answer, gold and submitted, is lower-cased on reading (Java ``toLowerCase``;
  Python ``str.lower`` here) and then compared with exact string equality: no trimming,
  no punctuation or article removal;
* gold ``exact_answer`` = list of synonym lists; a submission keeps only the **first string of
  each inner list** (``readExactAnswerListOfArraysv3``); an empty inner list is dropped
  (so later answers move up one rank), as the Java reader does;
* a submitted answer is correct if it equals any synonym of any gold answer;
* per question: strict = rank-1 correct, lenient = any correct, MRR = 1/rank of the first
  correct answer (0 if none). The evaluator never truncates the list;
* averages run over the gold **factoid** questions, each scored with the submission's first
  entry of its id. A question the submission lacks stops the evaluator (since 2021, commit
  8c8e689: it skips one only under ``-e 9``), so it is a ``ValueError`` naming the ids here;
  ``missing="skip"`` leaves such questions out, as the evaluator of 2020 (``cd93f3b``) did. An
  entry without ``exact_answer`` (or with a yes/no string) scores 0.

Unlike the Java program, which prints fractions (0-1), the scores returned here are
**percentages** (0-100), for consistency with the other biozoo scorers.

Where the Java evaluator aborts (a submitted factoid ``exact_answer`` that is a flat list of
strings instead of a list of lists), ``ValueError`` is raised naming the question.
"""

from __future__ import annotations

from pathlib import Path

from biozoo._io import read_json
from biozoo.errors import DataFormatError

__all__ = ["factoid_scores", "aggregate_factoid", "question_group_id", "snippet_golden", "snippet_factoid_scores"]


def _questions(data, what):
    if isinstance(data, dict):
        if "questions" not in data:
            raise ValueError(f"{what}: expected a BioASQ json object with a 'questions' list")
        data = data["questions"]
    if not isinstance(data, list):
        raise ValueError(f"{what}: expected a BioASQ json object or a list of questions")
    for i, q in enumerate(data):
        if not isinstance(q, dict) or "id" not in q:
            raise ValueError(f"{what}: question #{i} is not an object with an 'id'")
    return data


def _read_answer_lists(exact_answer, qid, what, first_only):
    """Java's reading of a list-of-lists exact answer: lower-case; v3 (system) keeps the first string."""
    if exact_answer is None or isinstance(exact_answer, str):
        return []  # yes/no-style answer or none: no factoid answers
    if not isinstance(exact_answer, list):
        raise ValueError(f"{what}: question {qid}: exact_answer must be a list of lists of strings")
    lists = []
    for inner in exact_answer:
        if not isinstance(inner, list):
            raise ValueError(
                f"{what}: question {qid}: exact_answer must be a list of lists of strings "
                f"(e.g. [[\"a1\"], [\"a2\"]]), got element {inner!r} (the official evaluator aborts here)"
            )
        strings = []
        for s in inner:
            if not isinstance(s, str):
                raise ValueError(f"{what}: question {qid}: answer {s!r} is not a string")
            strings.append(s.lower())
        if not strings:
            continue  # Java: an empty inner array adds nothing
        lists.append(strings[:1] if first_only else strings)
    return lists


def _contains_synonym(gold_lists, resp):
    for synonyms in gold_lists:
        for ans in synonyms:
            if ans in resp:
                return True
    return False


def factoid_scores(golden, system, missing="error") -> dict:
    """Strict accuracy, lenient accuracy and MRR over factoid questions (percent).

    Args:
        golden: BioASQ golden json (``{"questions": [...]}``) or its question list.
        system: a submission in the same structure (``exact_answer = [[a1], [a2], ...]``).
        missing: a gold factoid question the submission lacks is an "error" (``ValueError``, as
            the evaluator stops on it), or "skip"ped as the 2020 evaluator did.

    Returns:
        ``{"strict_accuracy", "lenient_accuracy", "mrr", "questions", "missing"}``: percentages,
        the number of factoid questions scored and the ids of those skipped. With no question
        scored all three are 0.0, as the evaluator prints.

    Example:
        >>> golden = {"questions": [{"id": "q1", "type": "factoid", "exact_answer": [["BRCA1"]]}]}
        >>> factoid_scores(golden, {"questions": [{"id": "q1", "exact_answer": [["x"], ["brca1"]]}]})["mrr"]
        50.0
    """
    if missing not in ("error", "skip"):
        raise ValueError(f"missing must be 'error' or 'skip', got {missing!r}")
    gold_qs = _questions(golden, "golden")
    sys_qs = _questions(system, "system")
    responses = {}
    for q in sys_qs:
        responses.setdefault(q["id"], q)  # Java getQuestion(id): first match
    absent = [gold["id"] for gold in gold_qs if gold.get("type") == "factoid" and gold["id"] not in responses]
    if absent and missing == "error":
        shown = ", ".join(absent[:10]) + (" ..." if len(absent) > 10 else "")
        raise ValueError(f"the submission answers {len(absent)} of the golden's factoid questions not at all: {shown} "
                         "(the official evaluator stops there; missing='skip' scores the answered ones only, as its "
                         "2020 version)")
    strict = lenient = mrr = 0.0
    k = 0
    for gold in gold_qs:
        if gold.get("type") != "factoid":
            continue
        resp = responses.get(gold["id"])
        if resp is None:
            continue
        gold_lists = _read_answer_lists(gold.get("exact_answer"), gold["id"], "golden", first_only=False)
        sys_lists = _read_answer_lists(resp.get("exact_answer"), gold["id"], "system", first_only=True)
        if sys_lists and _contains_synonym(gold_lists, sys_lists[0]):
            strict += 1.0
        for rank, answer in enumerate(sys_lists, start=1):
            if _contains_synonym(gold_lists, answer):
                lenient += 1.0
                mrr += 1.0 / rank
                break
        k += 1
    if k == 0:
        return {"strict_accuracy": 0.0, "lenient_accuracy": 0.0, "mrr": 0.0, "questions": 0, "missing": absent}
    return {
        "strict_accuracy": 100.0 * (strict / k),
        "lenient_accuracy": 100.0 * (lenient / k),
        "mrr": 100.0 * (mrr / k),
        "questions": k,
        "missing": absent,
    }


def question_group_id(qid: str) -> str:
    """The BioASQ question id of an n-best entry id.

    ``<question>:<n>`` ids (this project's converted data) are cut at the last ``':'``;
    BioBERT's 28-character ids (24-character BioASQ id + 4-character suffix) are cut at 24.
    """
    if ":" in qid:
        return qid.rsplit(":", 1)[0]
    if len(qid) == 24 + 4:
        return qid[:24]
    raise ValueError(
        f"cannot tell the BioASQ question of n-best id {qid!r}: expected '<question id>:<n>' "
        "or a 28-character id (24-character question id + 4-character suffix)"
    )


def aggregate_factoid(nbest_by_qid, top_k: int = 5) -> dict:
    """Turn n-best predictions into a BioASQ factoid submission (BioBERT's transform).

    ``transform_nbset2bioasqform.py``: entries of all snippets of one question (grouped by
    :func:`question_group_id`, in first-seen order) are concatenated and sorted by
    ``probability`` (descending); empty texts and texts longer than 100 characters are skipped;
    duplicates are merged case-insensitively by summing probabilities, keeping the first-seen
    (highest-probability) casing; the merged answers are re-sorted and the ``top_k`` kept.

    Both sorts are stable (ties keep input order). BioBERT sorts with pandas' default
    quicksort, which is not stable, so its choice among exactly tied answers may differ.

    Args:
        nbest_by_qid: ``{entry id: [{"text", "probability", ...}, ...]}`` (``nbest_predictions.json``),
            or a path to that json file.
        top_k: answers kept per question (5, the BioASQ limit).

    Returns:
        ``{"questions": [{"id", "type": "factoid", "exact_answer": [[a1], ...], "ideal_answer": "Dummy"}]}``.
    """
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be a positive number of answers, got {top_k!r}")
    if isinstance(nbest_by_qid, (str, Path)):
        nbest_by_qid = read_json(nbest_by_qid, "n-best predictions", DataFormatError)
    if not isinstance(nbest_by_qid, dict):
        raise ValueError("n-best predictions must be a dict {question id: [entries]}")
    groups: dict[str, list] = {}
    for multi_qid, entries in nbest_by_qid.items():
        if not isinstance(entries, list):
            raise ValueError(f"n-best entry {multi_qid!r}: expected a list of candidates")
        for entry in entries:
            if not isinstance(entry, dict) or "text" not in entry or "probability" not in entry:
                raise ValueError(f"n-best entry {multi_qid!r}: each candidate needs 'text' and 'probability'")
        groups.setdefault(question_group_id(multi_qid), []).extend(entries)

    questions = []
    for qid, entries in groups.items():
        ordered = sorted(entries, key=lambda e: -float(e["probability"]))
        summed: dict[str, float] = {}
        casing: dict[str, str] = {}
        for entry in ordered:
            text = entry["text"]
            if text == "" or len(text) > 100:
                continue
            key = text.lower()
            if key in casing:
                summed[casing[key]] += float(entry["probability"])
            else:
                casing[key] = text
                summed[text] = float(entry["probability"])
        final = sorted(summed.items(), key=lambda item: item[1], reverse=True)
        questions.append(
            {
                "id": qid,
                "type": "factoid",
                "exact_answer": [[text] for text, _ in final[:top_k]],
                "ideal_answer": "Dummy",
            }
        )
    return {"questions": questions}


def snippet_golden(answers) -> dict:
    """A BioASQ golden json from BioASQ-as-SQuAD examples (one example per snippet).

    Args:
        answers: ``[(example id, [answer texts of that snippet]), ...]``; example ids as
            :func:`question_group_id` reads them.

    Returns:
        ``{"questions": [{"id", "type": "factoid", "exact_answer": [[...]]}]}``, sorted by
        question id: each question's one gold answer has the answers of all its snippets
        (sorted, duplicates removed) as synonyms.
    """
    grouped: dict[str, set] = {}
    for qid, texts in answers:
        grouped.setdefault(question_group_id(qid), set()).update(texts)
    return {"questions": [{"id": group, "type": "factoid", "exact_answer": [sorted(grouped[group])]}
                          for group in sorted(grouped)]}


def snippet_factoid_scores(answers, nbest_by_qid):
    """BioASQ factoid scores of n-best predictions on BioASQ-as-SQuAD examples: the n-best of a
    question's snippets aggregated (:func:`aggregate_factoid`) and scored against
    :func:`snippet_golden`.

    Args:
        answers: ``[(example id, [answer texts]), ...]``, as :func:`snippet_golden` takes.
        nbest_by_qid: ``{example id: [{"text", "probability"}, ...]}``.

    Returns:
        :func:`factoid_scores` with ``"gold"`` saying how the golden was made; None where the
        examples are not BioASQ snippets: ids :func:`question_group_id` cannot read (SQuAD's
        24 hexadecimal characters) or one example per question.
    """
    try:
        groups = {question_group_id(qid) for qid, _ in answers}
    except ValueError:
        return None
    if len(groups) >= len(answers):
        return None
    scores = factoid_scores(snippet_golden(answers), aggregate_factoid(nbest_by_qid))
    scores["gold"] = "snippet answers of each question, as synonyms"
    return scores
