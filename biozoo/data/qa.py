"""Question-answering readers: SQuAD v1.1/v2.0 json (incl. BioASQ-as-SQuAD) and BioASQ golden json.

``read_squad`` returns one :class:`QAExample` per question-paragraph pair. BioASQ data
converted for BERT-style QA (BioBERT, ``/shared/data/qa/bioasq/dev.json``) is SQuAD v1.1:
every snippet is its own paragraph and question ids are ``<24-char BioASQ id>:<n>`` (or
28 characters in BioBERT's files); ``is_impossible`` is absent and read as ``False``. Unlabelled test files (no ``answers``
key) give ``answers == []``.

Answers are checked against the context: ``context[answer_start:answer_start + len(text)]``
should equal ``text``. BioASQ conversions contain case mismatches (ELECTRA's check is
case-insensitive), so a mismatch is **reported, never dropped**: one ``UserWarning`` per file
with the count and the first question ids; :func:`check_answers` returns the full list.
A structurally malformed file (missing keys, wrong types) raises ``DataFormatError`` naming
the file and the json location (json syntax errors: file and line); so does a question id given
twice (the scores are keyed by id), naming both locations, unless ``unique_ids=False`` (a
training split, never scored: BioBERT's BioASQ 7b training file joins 6b's train and test, which
share questions): then the duplicates are kept and counted in one ``UserWarning``. With
``answers_required=True`` (a training split) a question without answers that is not
``"is_impossible": true`` raises ``DataFormatError`` naming the file, its location and id, as BERT's
run_squad refuses it ("For training, each question should have exactly 1 answer"): SQuAD v1.1
answers every question, SQuAD v2.0 marks the unanswerable ones.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from biozoo._io import read_text
from biozoo.errors import DataFormatError

__all__ = ["QAExample", "AnswerMismatch", "read_squad", "check_answers", "read_bioasq_golden"]


@dataclass
class QAExample:
    """One question over one context; ``answers`` = ``[{"text", "answer_start"}]``.

    Example:
        >>> example = QAExample("q1", "What inhibits COX?", "Aspirin inhibits COX.",
        ...                     [{"text": "aspirin", "answer_start": 0}])
        >>> [str(mismatch) for mismatch in check_answers([example])]
        ["q1: case mismatch: answer 'aspirin' at 0, context has 'Aspirin'"]
    """

    qid: str
    question: str
    context: str
    answers: list = field(default_factory=list)
    is_impossible: bool = False


@dataclass
class AnswerMismatch:
    """An answer whose text is not at its ``answer_start`` in the context."""

    qid: str
    text: str
    answer_start: int
    found: str  # the context slice at answer_start
    case_only: bool  # True when the slice equals the text ignoring case

    def __str__(self):
        kind = "case mismatch" if self.case_only else "mismatch"
        return f"{self.qid}: {kind}: answer {self.text!r} at {self.answer_start}, context has {self.found!r}"


def _load_json(path):
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no json file at {path}")
    try:
        return json.loads(read_text(path, DataFormatError).removeprefix("\ufeff"))  # a BOM, as utf-8-sig drops it
    except json.JSONDecodeError as error:
        raise DataFormatError(f"{path}:{error.lineno}: invalid json: {error.msg}") from None


def _need(obj, key, kind, path, where):
    if not isinstance(obj, dict) or key not in obj:
        raise DataFormatError(f"{path}: {where}: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise DataFormatError(f"{path}: {where}.{key}: expected {names}, got {type(value).__name__}")
    return value


def _once(seen, qid, where, path):
    """Record that question `qid` is at `where`; a second time raises naming both places."""
    if qid in seen:
        raise DataFormatError(f"{path}: {where}: question id {qid!r} given twice (first at {seen[qid]}); "
                              "every question needs its own id")
    seen[qid] = where


def check_answers(examples) -> list[AnswerMismatch]:
    """Every answer of ``examples`` whose text is not at its offset in the context."""
    out = []
    for ex in examples:
        for ans in ex.answers:
            start, text = ans["answer_start"], ans["text"]
            found = ex.context[start : start + len(text)] if start >= 0 else ""
            if found != text:
                out.append(AnswerMismatch(ex.qid, text, start, found, found.lower() == text.lower()))
    return out


def read_squad(path, check=True, unique_ids=True, answers_required=False) -> list[QAExample]:
    """Read SQuAD v1.1/v2.0 json (or BioASQ converted to it) into :class:`QAExample` s.

    Args:
        path: the json file.
        check: report answers not found at their offset (a ``UserWarning``; never dropped).
        unique_ids: refuse a question id given twice (``DataFormatError`` naming both places);
            False (a training split) keeps every question and warns once with the count.
        answers_required: refuse a question without answers unless it is ``is_impossible``
            (a training split: it would be trained as "no answer" without saying so).
    """
    data = _load_json(path)
    articles = _need(data, "data", list, path, "top level")
    examples: list[QAExample] = []
    seen = {}  # question id -> where it was first given
    repeated = []  # (qid, where, first where) of the questions given again, when unique_ids is False
    for a, article in enumerate(articles):
        paragraphs = _need(article, "paragraphs", list, path, f"data[{a}]")
        for p, paragraph in enumerate(paragraphs):
            where = f"data[{a}].paragraphs[{p}]"
            context = _need(paragraph, "context", str, path, where)
            qas = _need(paragraph, "qas", list, path, where)
            for q, qa in enumerate(qas):
                qwhere = f"{where}.qas[{q}]"
                qid = _need(qa, "id", (str, int), path, qwhere)
                if unique_ids:
                    _once(seen, str(qid), qwhere, path)
                elif str(qid) in seen:
                    repeated.append((str(qid), qwhere, seen[str(qid)]))
                else:
                    seen[str(qid)] = qwhere
                question = _need(qa, "question", str, path, qwhere)
                impossible = qa.get("is_impossible", False)
                if not isinstance(impossible, bool):
                    raise DataFormatError(f"{path}: {qwhere} (id {qid}): is_impossible must be true/false")
                # test files (BioBERT's BioASQ-test-*.json) have no answers: read as []
                raw_answers = _need(qa, "answers", list, path, qwhere) if "answers" in qa else []
                answers = []
                for n, ans in enumerate(raw_answers):
                    awhere = f"{qwhere}.answers[{n}] (id {qid})"
                    text = _need(ans, "text", str, path, awhere)
                    start = _need(ans, "answer_start", int, path, awhere)
                    if isinstance(start, bool) or start < 0 or start > len(context):
                        raise DataFormatError(
                            f"{path}: {awhere}: answer_start {start} outside the context (length {len(context)})"
                        )
                    answers.append({"text": text, "answer_start": start})
                if answers_required and not answers and not impossible:
                    raise DataFormatError(
                        f"{path}: {qwhere} (id {qid}): a training question without answers; give its answer, or "
                        "mark it \"is_impossible\": true to train it as unanswerable (SQuAD v2.0)")
                examples.append(QAExample(str(qid), question, context, answers, impossible))
    if repeated:
        qid, where, first = repeated[0]
        warnings.warn(f"{path}: {len(repeated)} question(s) with an id given before, kept (a training split is not "
                      f"scored by id); the first: {qid!r} at {where} (first at {first})", stacklevel=2)
    if check:
        mismatches = check_answers(examples)
        if mismatches:
            n_case = sum(m.case_only for m in mismatches)
            shown = "; ".join(str(m) for m in mismatches[:5])
            warnings.warn(
                f"{path}: {len(mismatches)} answer(s) not at their answer_start "
                f"({n_case} differ only in case); kept as they are. First: {shown}",
                stacklevel=2,
            )
    return examples


def read_bioasq_golden(path) -> dict:
    """Read a BioASQ golden (or submission) json: ``{"questions": [{"id", "type", "exact_answer", ...}]}``.

    Checks the structure the factoid scorer relies on (each question has a string ``id`` and
    ``type``; a factoid ``exact_answer`` is a list of lists of strings) and returns the parsed
    json, ready for :func:`biozoo.metrics.bioasq.factoid_scores`.
    """
    data = _load_json(path)
    questions = _need(data, "questions", list, path, "top level")
    seen = {}
    for i, q in enumerate(questions):
        where = f"questions[{i}]"
        qid = _need(q, "id", str, path, where)
        _once(seen, qid, where, path)
        qtype = q.get("type")
        if qtype is not None and not isinstance(qtype, str):
            raise DataFormatError(f"{path}: {where} (id {qid}): type must be a string")
        if qtype == "factoid" and "exact_answer" in q:
            answer = q["exact_answer"]
            if not isinstance(answer, list) or not all(
                isinstance(inner, list) and all(isinstance(s, str) for s in inner) for inner in answer
            ):
                raise DataFormatError(
                    f"{path}: {where} (id {qid}): factoid exact_answer must be a list of lists of strings"
                )
    return data
