"""Small helpers shared by the task models."""

from __future__ import annotations

import numpy as np


def softmax(logits):
    z = logits - logits.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def sigmoid(logits):
    return 1.0 / (1.0 + np.exp(-logits))
