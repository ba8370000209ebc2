"""Relation-extraction scores: micro P/R/F1 over the positive classes (ChemProt, DDI, GAD).

This is the metric of the ChemProt/DDI scripts (BioBERT ``re_eval.py``, ELECTRA
``F1_Chemprot``: ``precision_recall_fscore_support(labels=[positive ids], average="micro")``;
LinkBERT ``PRF1``): the negative class is excluded, so

* TP = #(pred == gold and pred != negative)
* P  = TP / #(pred != negative)
* R  = TP / #(gold != negative)

For a binary task with negative label ``"0"`` (GAD) this is the F1 of class ``1``.
Scores are percentages (0-100). Labels are compared as exact strings.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from biozoo.metrics.ner import prf

__all__ = ["micro_prf", "infer_negative_label", "accuracy"]


def infer_negative_label(labels) -> str:
    """The negative label among ``labels``: the one containing "false" (any case) or equal to "0".

    Raises ``ValueError`` when there is none or more than one.
    """
    found = sorted({str(label) for label in labels if "false" in str(label).lower() or str(label) == "0"})
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(
            "cannot infer the negative label: no label contains 'false' or equals '0' "
            f"(labels seen: {sorted({str(x) for x in labels})[:20]}); pass negative_label explicitly"
        )
    raise ValueError(
        f"ambiguous negative label: {found} all look negative; pass negative_label explicitly "
        "(labels are compared as exact strings, so check that gold and predictions use the same spelling)"
    )


def micro_prf(gold_labels, pred_labels, negative_label=None) -> dict:
    """Micro precision/recall/F1 (percent) over all labels except ``negative_label``.

    Args:
        gold_labels, pred_labels: equal-length sequences of labels (compared as strings).
        negative_label: the negative class; by default inferred from the union of gold and
            predicted labels (the label containing "false", any case, or equal to "0").

    Returns:
        ``{"precision", "recall", "f1", "negative_label",
        "counts": {"tp", "pred_positive", "gold_positive", "total"},
        "per_label": {label: {"precision", "recall", "f1", "support"}}}``
        (``per_label`` covers every positive label seen in gold or predictions).
    """
    gold = [str(x) for x in gold_labels]
    pred = [str(x) for x in pred_labels]
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold labels but {len(pred)} predictions")
    if negative_label is None:
        negative_label = infer_negative_label(set(gold) | set(pred))
    negative_label = str(negative_label)

    tp = Counter()
    n_pred = Counter()
    n_gold = Counter()
    for g, p in zip(gold, pred):
        if p != negative_label:
            n_pred[p] += 1
            if p == g:
                tp[p] += 1
        if g != negative_label:
            n_gold[g] += 1
    total_tp, total_pred, total_gold = sum(tp.values()), sum(n_pred.values()), sum(n_gold.values())
    precision, recall, f1 = prf(total_tp, total_pred, total_gold)
    per_label = {}
    for label in sorted(set(n_pred) | set(n_gold)):
        p_, r_, f_ = prf(tp[label], n_pred[label], n_gold[label])
        per_label[label] = {"precision": p_, "recall": r_, "f1": f_, "support": n_gold[label]}
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "negative_label": negative_label,
        "counts": {"tp": total_tp, "pred_positive": total_pred, "gold_positive": total_gold, "total": len(gold)},
        "per_label": per_label,
    }


def accuracy(gold_labels, pred_labels) -> float:
    """Percentage of examples whose predicted label is the gold one (rounded to 4 decimals)."""
    return round(100.0 * float(np.mean([p == g for g, p in zip(gold_labels, pred_labels)])), 4)
