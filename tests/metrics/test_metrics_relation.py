"""micro_prf against sklearn's precision_recall_fscore_support(labels=positives, average='micro')."""

import random

import pytest
from sklearn.metrics import f1_score, precision_recall_fscore_support

from biozoo.data.relation import read_relation
from biozoo.metrics.relation import infer_negative_label, micro_prf

CHEMPROT = ["CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "False"]


def sklearn_reference(gold, pred, negative):
    labels = sorted(set(gold) | set(pred))
    index = {label: i for i, label in enumerate(labels)}
    positives = [index[label] for label in labels if label != negative]
    p, r, f, _ = precision_recall_fscore_support(
        [index[g] for g in gold],
        [index[x] for x in pred],
        labels=positives,
        average="micro",
        zero_division=0,
    )
    return 100 * p, 100 * r, 100 * f


def test_random_labels_match_sklearn():
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(1, 60)
        weights = [rng.random() for _ in CHEMPROT]
        gold = rng.choices(CHEMPROT, weights=weights, k=n)
        pred = rng.choices(CHEMPROT, weights=weights, k=n)
        ours = micro_prf(gold, pred, negative_label="False")
        if "False" in gold + pred:
            assert micro_prf(gold, pred) == ours  # inferred negative label
        ref = sklearn_reference(gold, pred, "False")
        assert (ours["precision"], ours["recall"], ours["f1"]) == pytest.approx(ref)


def test_real_chemprot_test_labels_against_random_prediction(shared_data):
    path = shared_data / "re" / "chemprot" / "test.tsv"
    gold = [ex.label for ex in read_relation(path)]
    assert sorted(set(gold)) == CHEMPROT
    rng = random.Random(42)
    pred = [rng.choice(CHEMPROT) if rng.random() < 0.5 else g for g in gold]
    ours = micro_prf(gold, pred)
    ref = sklearn_reference(gold, pred, "False")
    assert (ours["precision"], ours["recall"], ours["f1"]) == pytest.approx(ref)
    assert ours["counts"]["gold_positive"] == sum(g != "False" for g in gold) == 3441
    assert ours["counts"]["total"] == 14396
    assert 0 < ours["f1"] < 100


def test_gad_equals_class_one_f1():
    rng = random.Random(3)
    gold = [rng.choice("01") for _ in range(300)]
    pred = [rng.choice("01") for _ in range(300)]
    ours = micro_prf(gold, pred)
    assert ours["negative_label"] == "0"
    assert ours["f1"] == pytest.approx(100 * f1_score(gold, pred, pos_label="1"))


def test_hand_worked_counts():
    gold = ["CPR:3", "CPR:4", "false", "false", "CPR:9"]
    pred = ["CPR:3", "false", "CPR:4", "false", "CPR:3"]
    res = micro_prf(gold, pred)
    # TP = 1 (CPR:3); predicted positives = 3; gold positives = 3
    assert res["counts"] == {"tp": 1, "pred_positive": 3, "gold_positive": 3, "total": 5}
    assert res["precision"] == pytest.approx(100 / 3)
    assert res["recall"] == pytest.approx(100 / 3)
    assert res["per_label"]["CPR:3"]["precision"] == 50.0
    assert "false" not in res["per_label"]


def test_negative_label_inference():
    assert infer_negative_label(["DDI-mechanism", "DDI-false"]) == "DDI-false"
    assert infer_negative_label(["CPR:3", "False"]) == "False"
    assert infer_negative_label(["1", "0"]) == "0"
    with pytest.raises(ValueError, match="ambiguous"):
        micro_prf(["False", "CPR:3"], ["false", "CPR:3"])
    with pytest.raises(ValueError, match="cannot infer"):
        micro_prf(["a", "b"], ["a", "a"])
    res = micro_prf(["a", "b"], ["a", "a"], negative_label="b")
    assert res["precision"] == 50.0 and res["recall"] == 100.0
    with pytest.raises(ValueError, match="2 gold labels but 1"):
        micro_prf(["a", "b"], ["a"], negative_label="b")
