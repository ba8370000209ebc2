"""Hallmarks of Cancer (HoC) document-level scores: the two published "micro F1" variants.

Both group sentence-level 10-label vectors by abstract (id ``PMID_sentidx`` -> ``PMID``, the
text before the first ``_``) and OR the labels, then:

* :func:`hoc_micro_f1_linkbert` — LinkBERT / BioM ``utils_hoc.eval_hoc``: micro P/R/F1 over all
  (abstract x label) cells: TP = #(pred == gold == 1), P = TP/#pred 1s, R = TP/#gold 1s.
  Use this one to reproduce BLURB-leaderboard-style numbers.
* :func:`hoc_f1_blue` — BLUE ``blue/eval_hoc.py``: per-abstract precision and recall of the
  label sets, each averaged over abstracts, then F = 2PR/(P+R). (BLUE's script prints P and R
  swapped; here they are named correctly. F is symmetric.) An abstract with no predicted label
  has precision 0, as in BLUE; one with no gold label gets recall 0 (BLUE divides by zero).

Which of the two BLURB's "Average Micro F1" is remains unconfirmed (eval-facts §6).
Scores are percentages.
"""

from __future__ import annotations

import numpy as np

from biozoo.metrics.ner import prf

__all__ = ["hoc_micro_f1_linkbert", "hoc_f1_blue", "group_by_abstract", "abstract_id", "tune_thresholds",
           "document_scores"]


def abstract_id(sentence_id: str) -> str:
    """``"12345_3"`` -> ``"12345"`` (LinkBERT: ``id.split('_')[0]``)."""
    return str(sentence_id).split("_")[0]


def _as_vectors(rows, what):
    vectors = []
    width = None
    for i, row in enumerate(rows):
        vec = tuple(int(v) for v in row)
        if any(v not in (0, 1) for v in vec):
            raise ValueError(f"{what} row {i}: labels must be 0/1, got {list(row)}")
        if width is None:
            width = len(vec)
        elif len(vec) != width:
            raise ValueError(f"{what} row {i}: {len(vec)} labels, expected {width}")
        vectors.append(vec)
    return vectors


def group_by_abstract(ids, *label_lists):
    """OR-group aligned label-vector lists by abstract id, in first-seen order.

    Returns ``(abstract_ids, grouped_list_1, grouped_list_2, ...)``.
    """
    ids = list(ids)
    for labels in label_lists:
        if len(labels) != len(ids):
            raise ValueError(f"{len(ids)} ids but {len(labels)} label rows")
    order: list[str] = []
    seen: set[str] = set()
    grouped = [dict() for _ in label_lists]
    for i, sid in enumerate(ids):
        key = abstract_id(sid)
        if key not in seen:
            seen.add(key)
            order.append(key)
        for g, labels in zip(grouped, label_lists):
            row = labels[i]
            if key in g:
                g[key] = tuple(a | b for a, b in zip(g[key], row))
            else:
                g[key] = tuple(row)
    return (order, *[[g[k] for k in order] for g in grouped])


def _prepare(gold, pred, ids):
    gold = _as_vectors(gold, "gold")
    pred = _as_vectors(pred, "pred")
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold rows but {len(pred)} prediction rows")
    if gold and pred and len(gold[0]) != len(pred[0]):
        raise ValueError(f"gold rows have {len(gold[0])} labels, predictions {len(pred[0])}")
    if not gold:
        raise ValueError("no rows to score")
    if ids is not None:
        _, gold, pred = group_by_abstract(ids, gold, pred)
    return gold, pred


def hoc_micro_f1_linkbert(gold, pred, ids=None) -> dict:
    """LinkBERT's HoC score: micro P/R/F1 (percent) over all abstract x label cells.

    Args:
        gold, pred: aligned rows of 0/1 label vectors (10 for HoC).
        ids: sentence ids (``PMID_n``) aligned with the rows; when given, rows are first
            OR-grouped by abstract. Without ids the rows are taken as abstracts already.

    Returns:
        ``{"precision", "recall", "f1", "abstracts", "counts": {"tp", "pred", "gold"}}``.
    """
    gold, pred = _prepare(gold, pred, ids)
    tp = sum(1 for g, p in zip(gold, pred) for a, b in zip(g, p) if a == b == 1)
    n_pred = sum(sum(p) for p in pred)
    n_gold = sum(sum(g) for g in gold)
    precision, recall, f1 = prf(tp, n_pred, n_gold)
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "abstracts": len(gold),
        "counts": {"tp": tp, "pred": n_pred, "gold": n_gold},
    }


def hoc_f1_blue(gold, pred, ids=None) -> dict:
    """BLUE's HoC score: per-abstract P and R averaged, F = 2PR/(P+R) (percent).

    Arguments as :func:`hoc_micro_f1_linkbert`. Returns ``{"precision", "recall", "f1", "abstracts"}``.
    """
    gold, pred = _prepare(gold, pred, ids)
    precisions, recalls = [], []
    for g, p in zip(gold, pred):
        gold_set = {j for j, v in enumerate(g) if v == 1}
        pred_set = {j for j, v in enumerate(p) if v == 1}
        tt = len(gold_set & pred_set)
        precisions.append(tt / len(pred_set) if pred_set else 0.0)
        recalls.append(tt / len(gold_set) if gold_set else 0.0)
    mean_p = float(np.mean(precisions))  # numpy's mean, as BLUE (pairwise summation)
    mean_r = float(np.mean(recalls))
    f1 = 2 * mean_p * mean_r / (mean_p + mean_r) if mean_p + mean_r else 0.0
    return {"precision": 100.0 * mean_p, "recall": 100.0 * mean_r, "f1": 100.0 * f1, "abstracts": len(gold)}


def tune_thresholds(probabilities, gold) -> list:
    """One decision threshold per label, the one maximising that label's F1 on `gold`.

    Args:
        probabilities: [abstracts, labels] predicted probabilities (dev set).
        gold: [abstracts, labels] 0/1 gold labels.

    Returns:
        A threshold per label: one of the label's predicted probabilities, or 0.5 (the first
        of equally good ones in ascending order, 0.5 included as a candidate). A label no gold
        row has keeps 0.5: every threshold scores 0 there, and the lowest would predict it for all.
    """
    probs = np.asarray(probabilities)
    gold = np.asarray(gold)
    thresholds = []
    for j in range(gold.shape[1]):
        best, best_f1 = 0.5, -1.0
        if not gold[:, j].any():
            thresholds.append(best)
            continue
        for t in np.unique(np.concatenate([probs[:, j], [0.5]])):
            pred = probs[:, j] >= t
            tp = float((pred & (gold[:, j] == 1)).sum())
            f1 = 2 * tp / max(1.0, pred.sum() + gold[:, j].sum())
            if f1 > best_f1:
                best, best_f1 = float(t), f1
        thresholds.append(best)
    return thresholds


def document_scores(gold, pred) -> dict:
    """Both HoC variants on abstract-level rows: ``{"micro_f1_linkbert", "f1_blue", "abstracts"}``
    (what ``biozoo finetune doc`` reports)."""
    return {"micro_f1_linkbert": hoc_micro_f1_linkbert(gold, pred), "f1_blue": hoc_f1_blue(gold, pred),
            "abstracts": len(gold)}
