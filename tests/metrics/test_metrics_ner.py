"""entity_scores / read_conlleval against independent conlleval implementations."""

import random
from collections import defaultdict

import pytest

from biozoo.errors import DataFormatError
from biozoo.metrics.ner import entity_scores, read_conlleval

TAGS = ["O", "O", "O", "B-X", "I-X", "B-Y", "I-Y", "B", "I"]


# ---------------------------------------------------------------- reference
# A port of conlleval.pl's chunk logic (startOfChunk/endOfChunk, IOB tags only), written
# here independently of seqeval and of biozoo.


def _split(tag):
    # conlleval.pl: ($tag, $type) = split(/-/, $label, 2)
    if "-" in tag:
        head, rest = tag.split("-", 1)
        return head, rest
    return tag, ""


def _ends(prev_tag, tag, prev_type, type_):
    end = False
    if prev_tag == "B" and tag in ("B", "O"):
        end = True
    if prev_tag == "I" and tag in ("B", "O"):
        end = True
    if prev_tag != "O" and prev_type != type_:
        end = True
    return end


def _starts(prev_tag, tag, prev_type, type_):
    start = tag == "B"
    if prev_tag == "O" and tag == "I":
        start = True
    if tag != "O" and prev_type != type_:
        start = True
    return start


def conlleval_reference(sentences):
    """sentences: list of list of (gold, pred). Returns per-type {type: [gold, pred, correct]}."""
    counts = defaultdict(lambda: [0, 0, 0])
    in_correct = False
    last_g, last_gt, last_p, last_pt = "O", "", "O", ""
    stream = []
    for sent in sentences:
        stream.extend(sent)
        stream.append(None)  # sentence boundary: conlleval turns it into an O/O line
    for item in stream:
        g_full, p_full = ("O", "O") if item is None else item
        g, gt = _split(g_full)
        p, pt = _split(p_full)
        end_g = _ends(last_g, g, last_gt, gt)
        end_p = _ends(last_p, p, last_pt, pt)
        start_g = _starts(last_g, g, last_gt, gt)
        start_p = _starts(last_p, p, last_pt, pt)
        if in_correct:
            if end_g and end_p and last_pt == last_gt:
                in_correct = False
                counts[last_gt][2] += 1
            elif end_g != end_p or gt != pt:
                in_correct = False
        if start_g and start_p and gt == pt:
            in_correct = True
        if start_g:
            counts[gt][0] += 1
        if start_p:
            counts[pt][1] += 1
        last_g, last_gt, last_p, last_pt = g, gt, p, pt
    if in_correct:
        counts[last_gt][2] += 1
    return dict(counts)


def random_case(rng):
    gold, pred = [], []
    for _ in range(rng.randint(1, 4)):
        n = rng.randint(1, 12)
        gold.append([rng.choice(TAGS) for _ in range(n)])
        pred.append([rng.choice(TAGS) for _ in range(n)])
    return gold, pred


def _check_against(result, ref):
    total = [sum(v[i] for v in ref.values()) for i in range(3)]
    assert [result["counts"]["gold"], result["counts"]["pred"], result["counts"]["correct"]] == total
    ref_types = {t for t, v in ref.items() if v[0] or v[1]}
    ours = {("" if t == "_" else t): v for t, v in result["per_type"].items()}
    assert set(ours) == ref_types
    for t, (n_gold, n_pred, n_correct) in ref.items():
        if not (n_gold or n_pred):
            continue
        assert ours[t]["support"] == n_gold
        p = 100.0 * n_correct / n_pred if n_pred else 0.0
        r = 100.0 * n_correct / n_gold if n_gold else 0.0
        assert ours[t]["precision"] == pytest.approx(p)
        assert ours[t]["recall"] == pytest.approx(r)


def test_random_cases_equal_reference_conlleval():
    rng = random.Random(1234)
    for _ in range(400):
        gold, pred = random_case(rng)
        ref = conlleval_reference([list(zip(g, p)) for g, p in zip(gold, pred)])
        _check_against(entity_scores(gold, pred), ref)


def test_random_cases_equal_conlleval_package(tmp_path):
    conlleval = pytest.importorskip("conlleval", reason="the 'conlleval' PyPI package (test extra) is not installed")
    rng = random.Random(99)
    for _ in range(300):
        gold, pred = random_case(rng)
        lines = []
        for g_sent, p_sent in zip(gold, pred):
            lines += [f"w{i} {g} {p}" for i, (g, p) in enumerate(zip(g_sent, p_sent))]
            lines.append("")
        res = conlleval.evaluate(lines)
        ours = entity_scores(gold, pred)
        stats = res["overall"]["chunks"]["stats"]
        assert (ours["counts"]["gold"], ours["counts"]["pred"], ours["counts"]["correct"]) == (
            stats["gold"],
            stats["pred"],
            stats["correct"],
        )
        for slot, data in res["slots"]["chunks"].items():
            key = slot or "_"
            if data["stats"]["gold"] or data["stats"]["pred"]:
                assert ours["per_type"][key]["support"] == data["stats"]["gold"]
                assert ours["per_type"][key]["f1"] == pytest.approx(100 * data["evals"]["f1"])
        # also through a file and read_conlleval (tab separated, with a -DOCSTART- line)
        path = tmp_path / "case.txt"
        path.write_text("-DOCSTART- -X- O O\n\n" + "\n".join(l.replace(" ", "\t") for l in lines) + "\n")
        g2, p2 = read_conlleval(path)
        assert g2 == gold and p2 == pred


def test_matches_seqeval_metrics():
    from seqeval.metrics import f1_score, precision_score, recall_score

    rng = random.Random(7)
    for _ in range(100):
        gold, pred = random_case(rng)
        ours = entity_scores(gold, pred)
        assert ours["f1"] == pytest.approx(100 * f1_score(gold, pred, zero_division=0))
        assert ours["precision"] == pytest.approx(100 * precision_score(gold, pred, zero_division=0))
        assert ours["recall"] == pytest.approx(100 * recall_score(gold, pred, zero_division=0))


def test_hand_worked_default_mode():
    # B-X I-Y I-Y: conlleval / seqeval default -> X(0,0) and Y(1,2)
    res = entity_scores([["B-X", "I-Y", "I-Y"]], [["B-X", "B-Y", "I-Y"]])
    assert res["counts"] == {"gold": 2, "pred": 2, "correct": 2}
    # a stray I- starts an entity
    res = entity_scores([["I-X", "I-X", "O"]], [["B-X", "I-X", "O"]])
    assert res["counts"] == {"gold": 1, "pred": 1, "correct": 1}
    assert res["f1"] == 100.0
    # bare tags
    res = entity_scores([["B", "I", "O", "B"]], [["B", "I", "O", "O"]])
    assert res["counts"] == {"gold": 2, "pred": 1, "correct": 1}
    assert res["precision"] == 100.0 and res["recall"] == 50.0
    assert res["f1"] == pytest.approx(200 / 3)
    assert res["per_type"]["_"]["support"] == 2
    # an entity does not run across sentences
    res = entity_scores([["B-X"], ["I-X"]], [["B-X", ], ["I-X"]])
    assert res["counts"]["gold"] == 2


def test_no_predictions_gives_zero():
    res = entity_scores([["B-X", "O"]], [["O", "O"]])
    assert (res["precision"], res["recall"], res["f1"]) == (0.0, 0.0, 0.0)
    assert res["per_type"]["X"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}


def test_predicted_only_type_is_listed():
    res = entity_scores([["O"]], [["B-Y"]])
    assert res["per_type"]["Y"]["support"] == 0


def test_bad_input():
    with pytest.raises(ValueError, match="2 sentences"):
        entity_scores([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="tags"):
        entity_scores([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="not an IOB tag"):
        entity_scores([["S-X"]], [["O"]])
    with pytest.raises(ValueError, match="not an IOB tag"):
        entity_scores([["O"]], [["X"]])


def test_read_conlleval_boundaries_and_errors(tmp_path):
    path = tmp_path / "pred.txt"
    path.write_text("a NN B-X B-X\nb NN I-X O\n\n-X- -X- O O\nc NN O B-Y\n")
    gold, pred = read_conlleval(path)
    assert gold == [["B-X", "I-X"], ["O"]]
    assert pred == [["B-X", "O"], ["B-Y"]]
    res = entity_scores(gold, pred)
    assert res["counts"] == {"gold": 1, "pred": 2, "correct": 0}

    # a no-break space is part of a token, as conlleval.pl splits at " " only
    spaced = tmp_path / "nbsp.txt"
    spaced.write_text("10\u00a0mg O O\n\u00a0 O B-X\n", encoding="utf-8")
    assert read_conlleval(spaced) == ([["O", "O"]], [["O", "B-X"]])

    bad = tmp_path / "bad.txt"
    bad.write_text("a B-X B-X\n\nb O\n")
    with pytest.raises(DataFormatError, match=r"bad\.txt:3"):
        read_conlleval(bad)
    bad.write_text("a B-X B-X\nb O E-X\n")
    with pytest.raises(DataFormatError, match=r"bad\.txt:2"):
        read_conlleval(bad)
