"""Choosing a cascade's escalation threshold (`biozoo cascade-calibrate`).

Both models tag every development sentence once (timed). For each threshold P, the cascade's
output is the large model's entities in the sentences the small model is unsure of (confidence
below P) and the small model's elsewhere. Agreement is the share of the large model's entities
that the cascade gives exactly (same span and type; the table also gives the share of the
cascade's entities that the large model gives); the expected speed-up is the large
model's time over the cascade's (the small model everywhere, plus the large model's time per
token on the escalated tokens). The chosen P is the smallest one reaching the target agreement.
With gold tags, each row also has the cascade's entity F1.

Example:
    >>> result = calibrate(load_annotator("out/small"), load_annotator("out/large"), texts, target=0.99)
    >>> result.chosen["threshold"], result.chosen["speedup"]
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from biozoo._io import atomic_binary_file
from biozoo.choices import DEFAULT_CONFIDENCE_MEASURE

GRID = (0.0, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.999)


@dataclasses.dataclass
class Calibration:
    """`rows`: one per threshold (`threshold`, `escalated` fraction of sentences,
    `escalated_tokens` fraction, `agreement`, `speedup`, and `f1` with gold); `chosen`: the row
    picked for `target`; times of each model on all sentences."""

    rows: list
    chosen: dict
    target: float
    small_seconds: float
    large_seconds: float
    small_f1: float | None = None
    large_f1: float | None = None


def _spans(entities):
    return {(e["start"], e["end"], e.get("type", e.get("entity"))) for e in entities}


def _f1(predicted, gold):
    correct = sum(len(p & g) for p, g in zip(predicted, gold))
    n_pred, n_gold = sum(map(len, predicted)), sum(map(len, gold))
    precision = correct / n_pred if n_pred else 0.0
    recall = correct / n_gold if n_gold else 0.0
    return 100.0 * 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def calibrate(small, large, texts, target=0.99, measure=DEFAULT_CONFIDENCE_MEASURE, gold=None, thresholds=None):
    """Agreement and expected speed-up of the cascade `small` -> `large` (`TaggerAnnotator`s)
    on `texts` for each threshold; `gold`: per text a set of `(start, end, type)`."""
    if not texts:
        raise ValueError("no sentences to calibrate on")
    if not 0.0 < target <= 1.0:
        raise ValueError(f"the target agreement is a fraction in (0, 1], got {target}")
    small.tag(texts[:2], measure), large.tag(texts[:2])  # trace both before timing
    started = time.perf_counter()
    small_entities, confidence = small.tag(texts, measure)
    small_seconds = time.perf_counter() - started
    started = time.perf_counter()
    large_entities, _ = large.tag(texts)
    large_seconds = time.perf_counter() - started
    small_spans, large_spans = [_spans(e) for e in small_entities], [_spans(e) for e in large_entities]
    tokens = np.array([len(row) for row in large.task.preprocessor.tokenizer.token_spans(texts)], float)
    confidence = np.asarray(confidence, np.float64)
    # between two consecutive confidences (not one float step above one: batches shift them by ~1e-7)
    levels = np.unique(confidence)
    cuts = ((levels[:-1] + levels[1:]) / 2).tolist() + [float(levels[-1]) + 1e-6]
    candidates = sorted(set(thresholds or GRID) | set(cuts))
    n_large = sum(map(len, large_spans))
    rows = []
    for threshold in candidates:
        escalate = confidence < threshold
        kept = sum(len(l) if e else len(s & l) for s, l, e in zip(small_spans, large_spans, escalate))
        given = sum(len(l) if e else len(s) for s, l, e in zip(small_spans, large_spans, escalate))
        seconds = small_seconds + large_seconds * (tokens[escalate].sum() / max(tokens.sum(), 1.0))
        row = {"threshold": float(threshold), "escalated": float(escalate.mean()),
               "escalated_tokens": float(tokens[escalate].sum() / max(tokens.sum(), 1.0)),
               "agreement": kept / n_large if n_large else 1.0,
               "agreement_precision": kept / given if given else 1.0, "speedup": large_seconds / seconds}
        if gold is not None:
            row["f1"] = _f1([l if e else s for s, l, e in zip(small_spans, large_spans, escalate)], gold)
        rows.append(row)
    reached = [row for row in rows if row["agreement"] >= target]
    chosen = min(reached, key=lambda row: row["threshold"])  # the last row escalates everything: agreement 1
    in_grid = [row for row in rows if row["threshold"] in set(thresholds or GRID) or row is chosen]
    return Calibration(in_grid if thresholds is None else rows, chosen, target, small_seconds, large_seconds,
                       _f1(small_spans, gold) if gold is not None else None,
                       _f1(large_spans, gold) if gold is not None else None)


def table(calibration):
    """The calibration as a markdown table, the chosen row marked."""
    has_f1 = "f1" in calibration.chosen
    lines = ["| P | escalated sentences | escalated tokens | large's entities kept | cascade's entities in large's |"
             " expected speed-up |" + (" F1 |" if has_f1 else ""),
             "|---:|---:|---:|---:|---:|---:|" + ("---:|" if has_f1 else "")]
    for row in calibration.rows:
        mark = " **chosen**" if row is calibration.chosen else ""
        lines.append(f"| {row['threshold']:.6g}{mark} | {row['escalated']:.1%} | {row['escalated_tokens']:.1%} | "
                     f"{row['agreement']:.2%} | {row['agreement_precision']:.2%} | {row['speedup']:.2f}x |" + (f" {row['f1']:.2f} |" if has_f1 else ""))
    return "\n".join(lines)


def plot(calibration, path):
    """A PNG: agreement and expected speed-up against the threshold, the chosen one marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(calibration.rows, key=lambda row: row["threshold"])
    x = [min(row["threshold"], 1.0) for row in rows]
    figure, left = plt.subplots(figsize=(7, 4.2), dpi=110)
    left.plot(x, [100 * row["agreement"] for row in rows], "o-", color="tab:blue", label="agreement with the large model")
    left.axhline(100 * calibration.target, color="tab:blue", ls=":", lw=1)
    left.set_xlabel("escalation threshold P (a sentence goes to the large model below P)")
    left.set_ylabel("large model's entities kept (%)", color="tab:blue")
    right = left.twinx()
    right.plot(x, [row["speedup"] for row in rows], "s-", color="tab:orange", label="expected speed-up")
    right.set_ylabel("expected speed-up over the large model (x)", color="tab:orange")
    chosen = calibration.chosen
    left.axvline(min(chosen["threshold"], 1.0), color="gray", ls="--", lw=1)
    left.set_title(f"cascade calibration: P = {chosen['threshold']:.4g}, {100 * chosen['agreement']:.2f} % agreement, "
                   f"{chosen['speedup']:.2f}x", fontsize=10)
    figure.tight_layout()
    with atomic_binary_file(path) as out:
        figure.savefig(out, format="png")
    plt.close(figure)
    return path
