"""Entity-level NER scores, equal to ``conlleval.pl`` (the CoNLL-2000 scorer).

``entity_scores`` uses seqeval's **default** mode (``seqeval.metrics.sequence_labeling.get_entities``),
which is a clone of conlleval's chunk rules: a chunk starts on ``B``, on an ``O``->``I``
transition and on any change of type, so a stray ``I-X`` without ``B-X`` starts an entity.
Bare ``B``/``I`` tags (BLURB) are accepted; seqeval names their type ``_`` (conlleval: empty).
Strict IOB2 mode is *not* used: it differs from conlleval (see eval-facts §4).

Only IOB tags are accepted (``O``, ``B``, ``I``, ``B-X``, ``I-X``): with ``E-``/``S-`` (IOBES)
tags seqeval and conlleval disagree, so such input raises ``ValueError`` instead of
producing a number that matches neither.

All returned scores are percentages (0-100), as conlleval prints them (unrounded).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from seqeval.metrics.sequence_labeling import get_entities

from biozoo.data.files import text_lines
from biozoo.data.ner import tag_kind
from biozoo.errors import DataFormatError

__all__ = ["entity_scores", "read_conlleval", "prf"]

_DOC_MARKERS = ("-DOCSTART-", "-X-")
_FIELD_GAP = re.compile(r"[ \t]+")


def prf(correct: int, pred: int, gold: int) -> tuple[float, float, float]:
    """Precision, recall and F1 in percent from counts; 0 where undefined (as conlleval prints)."""
    precision = 100.0 * correct / pred if pred else 0.0
    recall = 100.0 * correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def _check_sequences(gold, pred):
    if isinstance(gold, (str, bytes)) or isinstance(pred, (str, bytes)):
        raise ValueError("entity_scores expects lists of tag sequences, not strings")
    gold = [list(s) for s in gold]
    pred = [list(s) for s in pred]
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} sentences but pred has {len(pred)}")
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: gold has {len(g)} tags but pred has {len(p)}")
        for side, seq in (("gold", g), ("pred", p)):
            for j, tag in enumerate(seq):
                if tag_kind(tag) is None:
                    raise ValueError(
                        f"sentence {i}, token {j}: {side} tag {tag!r} is not an IOB tag "
                        "(O, B, I, B-TYPE or I-TYPE); map model-specific labels (X, [PAD], ...) to O first"
                    )
    return gold, pred


def entity_scores(gold, pred) -> dict:
    """Entity-level micro precision/recall/F1 (percent) and per-type scores, conlleval-equal.

    Args:
        gold, pred: lists of sentences, each a list of IOB tags (same lengths).

    Returns:
        ``{"precision", "recall", "f1",
        "per_type": {type: {"precision", "recall", "f1", "support"}},
        "counts": {"gold", "pred", "correct"}}``. ``support`` is the number of gold entities
        of that type; types found only in ``pred`` are listed with support 0. Bare ``B``/``I``
        tags get seqeval's type name ``_``.
    """
    gold, pred = _check_sequences(gold, pred)
    true_by_type = defaultdict(set)
    pred_by_type = defaultdict(set)
    # seqeval's nested-list handling joins sentences with an "O" separator, like conlleval's
    # sentence boundary; do it explicitly so empty input and single sentences behave the same.
    flat_gold = [tag for sent in gold for tag in sent + ["O"]]
    flat_pred = [tag for sent in pred for tag in sent + ["O"]]
    for type_, start, end in get_entities(flat_gold):
        true_by_type[type_].add((start, end))
    for type_, start, end in get_entities(flat_pred):
        pred_by_type[type_].add((start, end))

    per_type = {}
    n_gold = n_pred = n_correct = 0
    for type_ in sorted(set(true_by_type) | set(pred_by_type)):
        t, p = true_by_type.get(type_, set()), pred_by_type.get(type_, set())
        correct = len(t & p)
        precision, recall, f1 = prf(correct, len(p), len(t))
        per_type[type_] = {"precision": precision, "recall": recall, "f1": f1, "support": len(t)}
        n_gold += len(t)
        n_pred += len(p)
        n_correct += correct
    precision, recall, f1 = prf(n_correct, n_pred, n_gold)
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "per_type": per_type,
        "counts": {"gold": n_gold, "pred": n_pred, "correct": n_correct},
    }


def read_conlleval(path) -> tuple[list[list[str]], list[list[str]]]:
    """Read a conlleval input file: ``token ... gold pred`` per line.

    Fields are split at spaces and tabs (not at a no-break or other Unicode space, which
    conlleval.pl keeps in a token too); the last two are the gold and the
    predicted tag. A blank line, or a document line whose first field is ``-DOCSTART-`` or
    ``-X-``, ends a sentence. A line with fewer than 3 fields, or a tag that is not an IOB
    tag, raises ``DataFormatError`` naming the file and the 1-based line number.

    Returns:
        ``(gold, pred)``: two lists of sentences (lists of tags), aligned.
    """
    path = Path(path)
    gold: list[list[str]] = []
    pred: list[list[str]] = []
    cur_g: list[str] = []
    cur_p: list[str] = []
    for lineno, line in text_lines(path):
        fields = _FIELD_GAP.split(line.strip(" \t\r\n"))
        if fields == [""] or fields[0] in _DOC_MARKERS:
            if cur_g:
                gold.append(cur_g)
                pred.append(cur_p)
                cur_g, cur_p = [], []
            continue
        if len(fields) < 3:
            raise DataFormatError(
                f"{path}:{lineno}: expected 'token ... gold pred' (at least 3 fields), "
                f"got {len(fields)}: {line.rstrip()!r}"
            )
        for side, tag in (("gold", fields[-2]), ("pred", fields[-1])):
            if tag_kind(tag) is None:
                raise DataFormatError(
                    f"{path}:{lineno}: {side} tag {tag!r} is not an IOB tag (O, B, I, B-TYPE, I-TYPE)"
                )
        cur_g.append(fields[-2])
        cur_p.append(fields[-1])
    if cur_g:
        gold.append(cur_g)
        pred.append(cur_p)
    return gold, pred
