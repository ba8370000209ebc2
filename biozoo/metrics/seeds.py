"""Scores over several seeds, as the papers report them: mean and sample standard deviation."""

from __future__ import annotations

import numpy as np

__all__ = ["mean_std"]


def mean_std(scores) -> dict:
    """{key: {"mean", "std", "values"}} for every number all the score dicts have (nested dicts
    kept); std is the sample standard deviation (n - 1), 0 for one run."""
    out = {}
    for key, value in scores[0].items():
        if not all(key in s for s in scores):  # e.g. a label one run never predicted
            continue
        if isinstance(value, dict):
            out[key] = mean_std([s[key] for s in scores])
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            values = [float(s[key]) for s in scores]
            std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
            out[key] = {"mean": round(float(np.mean(values)), 4), "std": round(std, 4), "values": values}
    return out
