"""HoC document-level scores: both variants against sklearn and hand-worked values."""

import random

import numpy as np
import pytest
from sklearn.metrics import precision_recall_fscore_support, precision_score, recall_score

from biozoo.metrics.hoc import abstract_id, group_by_abstract, hoc_f1_blue, hoc_micro_f1_linkbert


def test_hand_worked():
    gold = [(1, 0, 0), (0, 1, 1)]
    pred = [(1, 1, 0), (0, 0, 0)]
    link = hoc_micro_f1_linkbert(gold, pred)
    # cells: TP 1, predicted 2, gold 3
    assert link["counts"] == {"tp": 1, "pred": 2, "gold": 3}
    assert link["precision"] == pytest.approx(50.0)
    assert link["recall"] == pytest.approx(100 / 3)
    assert link["f1"] == pytest.approx(40.0)
    blue = hoc_f1_blue(gold, pred)
    # abstract 1: P 1/2, R 1; abstract 2: no prediction -> P 0, R 0 => P 1/4, R 1/2
    assert blue["precision"] == pytest.approx(25.0)
    assert blue["recall"] == pytest.approx(50.0)
    assert blue["f1"] == pytest.approx(100 * 2 * 0.25 * 0.5 / 0.75)


def test_grouping_by_abstract_ors_labels():
    ids = ["100_0", "100_1", "200_0", "100_2"]
    gold = [(1, 0), (0, 0), (0, 1), (0, 1)]
    pred = [(0, 0), (1, 0), (0, 1), (0, 0)]
    order, g, p = group_by_abstract(ids, gold, pred)
    assert order == ["100", "200"]
    assert g == [(1, 1), (0, 1)]
    assert p == [(1, 0), (0, 1)]
    assert abstract_id("12345_3") == "12345"
    res = hoc_micro_f1_linkbert(gold, pred, ids=ids)
    assert res["abstracts"] == 2
    assert res["counts"] == {"tp": 2, "pred": 2, "gold": 3}


def test_random_against_sklearn():
    rng = random.Random(5)
    for _ in range(50):
        n = rng.randint(2, 30)
        gold = [[rng.random() < 0.3 for _ in range(10)] for _ in range(n)]
        for row in gold:  # BLUE needs >= 1 gold label per abstract
            row[rng.randrange(10)] = True
        pred = [[rng.random() < 0.3 for _ in range(10)] for _ in range(n)]
        y_true, y_pred = np.array(gold, dtype=int), np.array(pred, dtype=int)
        p, r, f, _ = precision_recall_fscore_support(y_true, y_pred, average="micro", zero_division=0)
        link = hoc_micro_f1_linkbert(y_true.tolist(), y_pred.tolist())
        assert (link["precision"], link["recall"], link["f1"]) == pytest.approx((100 * p, 100 * r, 100 * f))
        sp = precision_score(y_true, y_pred, average="samples", zero_division=0)
        sr = recall_score(y_true, y_pred, average="samples", zero_division=0)
        blue = hoc_f1_blue(y_true.tolist(), y_pred.tolist())
        assert blue["precision"] == pytest.approx(100 * sp)
        assert blue["recall"] == pytest.approx(100 * sr)
        expected_f = 2 * sp * sr / (sp + sr) if sp + sr else 0.0
        assert blue["f1"] == pytest.approx(100 * expected_f)


def test_bad_input():
    with pytest.raises(ValueError, match="0/1"):
        hoc_micro_f1_linkbert([(2, 0)], [(0, 0)])
    with pytest.raises(ValueError, match="prediction rows"):
        hoc_f1_blue([(1, 0)], [])
    with pytest.raises(ValueError, match="ids"):
        hoc_f1_blue([(1, 0)], [(1, 0)], ids=["1_0", "1_1"])


def test_tuned_thresholds_maximise_each_labels_f1():
    from biozoo.metrics.hoc import tune_thresholds

    probs = np.array([[0.9, 0.2], [0.6, 0.4], [0.55, 0.1], [0.2, 0.45]])
    gold = np.array([[1, 0], [1, 1], [0, 0], [0, 1]])
    # label 0: 0.6 keeps the two positives only (0.5 lets 0.55 in); label 1: 0.4 the two positives
    assert tune_thresholds(probs, gold) == [0.6, 0.4]
    # no positive gold: every threshold scores 0; 0.5 stays, even where lower candidates exist
    # (the lowest would predict the label for every abstract)
    assert tune_thresholds(np.array([[0.7], [0.8]]), np.array([[0], [0]])) == [0.5]
    assert tune_thresholds(np.array([[0.1, 0.9], [0.2, 0.7]]), np.array([[0, 1], [0, 0]])) == [0.5, 0.9]
