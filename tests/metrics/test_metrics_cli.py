"""`biozoo score ...` on small files: JSON on stdout, one-line errors."""

import json

import pytest


def run_cli(argv):
    from biozoo.cli import main

    return main(argv)


def score(capsys, *argv):
    status = run_cli(["score", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_ner(tmp_path, capsys):
    f = tmp_path / "pred.txt"
    f.write_text("a B-X B-X\nb I-X I-X\nc O B-Y\n\nd B-Y O\n")
    status, out, _ = score(capsys, "ner", "--input", str(f))
    assert status == 0
    res = json.loads(out)
    assert res["counts"] == {"gold": 2, "pred": 2, "correct": 1}
    assert res["precision"] == 50.0 and res["recall"] == 50.0 and res["f1"] == 50.0
    assert set(res["per_type"]) == {"X", "Y"}
    assert out.startswith("{\n  ")  # indent 2


def test_ner_malformed_is_one_line_error(tmp_path, capsys):
    f = tmp_path / "bad.txt"
    f.write_text("a B-X B-X\nb O\n")
    status, out, err = score(capsys, "ner", "--input", str(f))
    assert status == 2 and out == ""
    assert "bad.txt:2" in err and len(err.strip().splitlines()) == 1


def test_re(tmp_path, capsys):
    gold = tmp_path / "test.tsv"
    gold.write_text('sentence\tlabel\nA "quoted" BC6ENTC .\tCPR:3\nB.\tFalse\nC.\tCPR:4\nC.\tFalse\n')
    pred = tmp_path / "pred.txt"
    pred.write_text("CPR:3\nCPR:4\nCPR:4\nFalse\n")
    status, out, _ = score(capsys, "re", "--gold", str(gold), "--pred", str(pred))
    assert status == 0
    res = json.loads(out)
    assert res["negative_label"] == "False"
    assert res["counts"]["tp"] == 2 and res["counts"]["pred_positive"] == 3
    assert res["precision"] == pytest.approx(200 / 3) and res["recall"] == 100.0

    pred.write_text("CPR:3\nFalse\n")
    status, out, err = score(capsys, "re", "--gold", str(gold), "--pred", str(pred))
    assert status == 2 and "2 predictions" in err and "4 examples" in err

    gad = tmp_path / "gad.tsv"
    gad.write_text("index\tsentence\tlabel\n0\ts1\t1\n1\ts2\t0\n")
    pred.write_text("1\n1\n")
    status, out, _ = score(
        capsys, "re", "--gold", str(gad), "--pred", str(pred), "--gold-format", "biobert_test", "--negative-label", "0"
    )
    assert json.loads(out)["precision"] == 50.0


def test_re_refuses_a_predicted_label_that_is_no_label(tmp_path, capsys):
    """'cpr:3' for 'CPR:3' scored as another positive class (P = R = 0), a typo 'Flase' as a positive:
    both are errors naming the line, unless --labels declares them."""
    gold = tmp_path / "test.tsv"
    gold.write_text("sentence\tlabel\nA.\tCPR:3\nB.\tFalse\nC.\tCPR:4\n")
    pred = tmp_path / "pred.txt"
    for labels, line, hint in ((["cpr:3", "False", "CPR:4"], 1, "did you mean 'CPR:3'"),
                               (["CPR:3", "Flase", "CPR:4"], 2, "CPR:3, CPR:4, False")):
        pred.write_text("\n".join(labels) + "\n")
        status, out, err = score(capsys, "re", "--gold", str(gold), "--pred", str(pred))
        assert status == 2 and out == "" and f"pred.txt:{line}" in err and hint in err
    pred.write_text("CPR:9\nFalse\nCPR:4\n")
    status, out, err = score(capsys, "re", "--gold", str(gold), "--pred", str(pred), "--labels", "CPR:3,CPR:4,CPR:9,False")
    assert status == 0, err
    assert json.loads(out)["counts"] == {"tp": 1, "pred_positive": 2, "gold_positive": 2, "total": 3}


def test_qa(tmp_path, capsys):
    data = {
        "version": "v2.0",
        "data": [
            {
                "paragraphs": [
                    {
                        "context": "The cat sat.",
                        "qas": [
                            {"id": "a", "question": "?", "answers": [{"text": "cat", "answer_start": 4}]},
                            {"id": "b", "question": "?", "answers": [], "is_impossible": True},
                            {"id": "c", "question": "?", "answers": [{"text": "sat", "answer_start": 8}]},
                        ],
                    }
                ]
            }
        ],
    }
    (tmp_path / "data.json").write_text(json.dumps(data))
    (tmp_path / "pred.json").write_text(json.dumps({"a": "the cat", "b": "dog"}))
    (tmp_path / "na.json").write_text(json.dumps({"a": 0.1, "b": 0.2}))
    status, out, err = score(
        capsys,
        "qa",
        "--data",
        str(tmp_path / "data.json"),
        "--pred",
        str(tmp_path / "pred.json"),
        "--na-prob",
        str(tmp_path / "na.json"),
    )
    # c has no prediction: the official script fails on it (KeyError); biozoo names it
    assert status == 2 and out == "" and "no prediction for 1 question(s)" in err and ": c (" in err
    (tmp_path / "pred.json").write_text(json.dumps({"a": "the cat", "b": "dog", "c": "sat"}))
    status, out, err = score(capsys, "qa", "--data", str(tmp_path / "data.json"), "--pred", str(tmp_path / "pred.json"),
                             "--na-prob", str(tmp_path / "na.json"))
    assert status == 2 and "na_probs has no value" in err  # c has an answer but no probability
    (tmp_path / "pred.json").write_text(json.dumps({"a": "the cat", "b": "dog"}))

    status, out, err = score(capsys, "qa", "--data", str(tmp_path / "data.json"), "--pred", str(tmp_path / "pred.json"),
                             "--na-prob", str(tmp_path / "na.json"), "--allow-missing")
    assert status == 0
    res = json.loads(out)
    # by hand: a right, b wrong (an answer to an unanswerable question), c missing = wrong, in every total
    assert res["total"] == 3 and res["missing"] == 1 and res["exact"] == pytest.approx(100 / 3)
    assert res["HasAns_total"] == 2 and res["HasAns_exact"] == 50.0 and res["NoAns_exact"] == 0.0
    # the threshold search: b counted as no-answer below every probability (1), a at 0.1 (+1), b at 0.2 (-1);
    # c is wrong at every threshold: the best is 2 of 3 at 0.1
    assert res["best_exact"] == pytest.approx(200 / 3) and res["best_exact_thresh"] == 0.1
    assert "c" in err  # the missing prediction is reported on stderr

    status, out, _ = score(
        capsys,
        "qa",
        "--data",
        str(tmp_path / "data.json"),
        "--pred",
        str(tmp_path / "pred.json"),
        "--na-prob",
        str(tmp_path / "na.json"),
        "--na-prob-thresh",
        "0.15",
        "--allow-missing",
    )
    res = json.loads(out)
    assert res["exact"] == pytest.approx(200 / 3)  # b (0.2 > 0.15) now counts as "no answer"; c stays wrong


def test_qa_on_v1_data_with_a_missing_prediction_scores_as_the_official_v1_script(tmp_path, capsys):
    """The official evaluate-v1.1.py counts an unanswered question in the total with score 0."""
    from biozoo.metrics.squad import evaluate_v1

    data = {"data": [{"paragraphs": [{"context": "BRCA1 and TP53.", "qas": [
        {"id": "q1", "question": "?", "answers": [{"text": "BRCA1", "answer_start": 0}]},
        {"id": "q2", "question": "?", "answers": [{"text": "TP53", "answer_start": 10}]}]}]}]}
    predictions = {"q1": "BRCA1"}
    (tmp_path / "data.json").write_text(json.dumps(data))
    (tmp_path / "pred.json").write_text(json.dumps(predictions))
    status, out, err = score(capsys, "qa", "--data", str(tmp_path / "data.json"), "--pred", str(tmp_path / "pred.json"),
                             "--allow-missing")
    assert status == 0, err
    res = json.loads(out)
    with pytest.warns(UserWarning):
        official = evaluate_v1(data, predictions)
    assert official == {"exact_match": 50.0, "f1": 50.0}
    assert (res["exact"], res["f1"], res["total"]) == (official["exact_match"], official["f1"], 2)


def test_qa_on_v1_data_uses_the_v1_rules_for_answers_that_normalise_to_nothing(tmp_path, capsys):
    """evaluate-v1.1.py keeps a gold answer that normalises to '' (EM: '' == ''; F1: no common
    token, 0); evaluate-v2.0.py drops it, and scores a question whose gold answers are all such
    as unanswerable. Worked by hand from the two official scripts."""
    data = {"data": [{"paragraphs": [{"context": "The aspirin.", "qas": [
        {"id": "q1", "question": "?", "answers": [{"text": "The", "answer_start": 0},
                                                 {"text": "aspirin", "answer_start": 4}]},
        {"id": "q2", "question": "?", "answers": [{"text": "the", "answer_start": 0}]}]}]}]}
    (tmp_path / "data.json").write_text(json.dumps(data))
    (tmp_path / "pred.json").write_text(json.dumps({"q1": "a", "q2": "the"}))
    args = ("qa", "--data", str(tmp_path / "data.json"), "--pred", str(tmp_path / "pred.json"))
    status, out, err = score(capsys, *args)
    assert status == 0, err
    assert json.loads(out) == {"rules": "1.1", "exact": 100.0, "f1": 0.0, "total": 2, "HasAns_exact": 100.0,
                               "HasAns_f1": 0.0, "HasAns_total": 2, "missing": 0}
    status, out, err = score(capsys, *args, "--rules", "2.0")
    assert status == 0, err
    res = json.loads(out)
    assert (res["rules"], res["exact"], res["f1"], res["total"]) == ("2.0", 50.0, 50.0, 2)
    (tmp_path / "na.json").write_text(json.dumps({"q1": 0.1, "q2": 0.2}))
    status, out, err = score(capsys, *args, "--na-prob", str(tmp_path / "na.json"))
    assert status == 0 and json.loads(out)["rules"] == "2.0"  # no-answer probabilities: the v2.0 script
    status, out, err = score(capsys, *args, "--rules", "1.1", "--na-prob", str(tmp_path / "na.json"))
    assert status == 2 and out == "" and "--na-prob" in err


def test_bioasq(tmp_path, capsys):
    golden = {
        "questions": [
            {"id": "5a0000000000000000000001", "type": "factoid", "exact_answer": [["BRCA1"]]},
            {"id": "5a0000000000000000000002", "type": "factoid", "exact_answer": [["TP53"]]},
        ]
    }
    system = {
        "questions": [
            {"id": "5a0000000000000000000001", "exact_answer": [["x"], ["brca1"]]},
            {"id": "5a0000000000000000000002", "exact_answer": [["tp53"]]},
        ]
    }
    (tmp_path / "golden.json").write_text(json.dumps(golden))
    (tmp_path / "system.json").write_text(json.dumps(system))
    status, out, _ = score(
        capsys, "bioasq", "--gold", str(tmp_path / "golden.json"), "--pred", str(tmp_path / "system.json")
    )
    assert status == 0
    res = json.loads(out)
    assert res == {"strict_accuracy": 50.0, "lenient_accuracy": 100.0, "mrr": 75.0, "questions": 2, "missing": []}

    nbest = {
        "5a0000000000000000000001:0": [{"text": "BRCA1", "probability": 0.9}],
        "5a0000000000000000000002:0": [{"text": "MDM2", "probability": 0.6}, {"text": "TP53", "probability": 0.4}],
    }
    (tmp_path / "nbest.json").write_text(json.dumps(nbest))
    sub = tmp_path / "submission.json"
    status, out, _ = score(
        capsys,
        "bioasq",
        "--gold",
        str(tmp_path / "golden.json"),
        "--nbest",
        str(tmp_path / "nbest.json"),
        "--save-submission",
        str(sub),
    )
    assert json.loads(out) == {"strict_accuracy": 50.0, "lenient_accuracy": 100.0, "mrr": 75.0, "questions": 2,
                               "missing": []}
    assert json.loads(sub.read_text())["questions"][1]["exact_answer"] == [["MDM2"], ["TP53"]]

    # a question the submission lacks stops the official evaluator: an error naming it and the file;
    # with --skip-missing it is left out (the 2020 evaluator's rule) and named
    system["questions"] = system["questions"][1:]
    (tmp_path / "system.json").write_text(json.dumps(system))
    status, out, err = score(capsys, "bioasq", "--gold", str(tmp_path / "golden.json"), "--pred",
                             str(tmp_path / "system.json"))
    assert status == 2 and out == "" and "system.json" in err and "5a0000000000000000000001" in err
    assert "golden.json" in err and "--skip-missing" in err
    status, out, err = score(capsys, "bioasq", "--gold", str(tmp_path / "golden.json"), "--pred",
                             str(tmp_path / "system.json"), "--skip-missing")
    assert status == 0
    assert json.loads(out) == {"strict_accuracy": 100.0, "lenient_accuracy": 100.0, "mrr": 100.0, "questions": 1,
                               "missing": ["5a0000000000000000000001"]}
    assert "1 of the factoid questions" in err and "5a0000000000000000000001" in err

    # errors name the file; --top-k below 1 and a submission written over an input are refused
    system["questions"][0]["exact_answer"] = ["tp53"]  # a flat list, not a list of lists
    (tmp_path / "system.json").write_text(json.dumps(system))
    status, out, err = score(capsys, "bioasq", "--gold", str(tmp_path / "golden.json"), "--pred",
                             str(tmp_path / "system.json"), "--skip-missing")
    assert status == 2 and out == "" and "system.json" in err and "list of lists" in err
    for bad in (["--top-k", "0"], ["--save-submission", str(tmp_path / "nbest.json")]):
        status, out, err = score(capsys, "bioasq", "--gold", str(tmp_path / "golden.json"), "--nbest",
                                 str(tmp_path / "nbest.json"), *bad)
        assert status == 2 and out == "" and bad[0] in err
    assert json.loads((tmp_path / "nbest.json").read_text()) == nbest


def test_doc(tmp_path, capsys):
    def row(vec, sent, sid):
        return ",".join(f"{j}_{v}" for j, v in enumerate(vec)) + f"\t{sent}\t{sid}"

    z = [0] * 10
    a = [1] + [0] * 9
    b = [0, 1] + [0] * 8
    gold = tmp_path / "test.tsv"
    gold.write_text("labels\tsentence\tindex\n" + "\n".join([row(a, "s1", "11_0"), row(z, "s2", "11_1"), row(b, "s3", "22_0")]) + "\n")
    pred = tmp_path / "pred.txt"
    pred.write_text("1,0,0,0,0,0,0,0,0,0\n0 1 0 0 0 0 0 0 0 0\n" + ",".join(f"{j}_0" for j in range(10)) + "\n")
    status, out, _ = score(capsys, "doc", "--gold", str(gold), "--pred", str(pred))
    assert status == 0
    res = json.loads(out)
    assert res["abstracts"] == 2
    # abstract 11: gold {0}, pred {0, 1}; abstract 22: gold {1}, pred {}
    assert res["linkbert_micro"]["precision"] == 50.0 and res["linkbert_micro"]["recall"] == 50.0
    assert res["blue"]["precision"] == 25.0 and res["blue"]["recall"] == 50.0

    # the same vectors separated by tabs (3 lines of 10 fields: not the HoC tsv layout)
    pred.write_text("\t".join("1000000000") + "\n" + "\t".join("0100000000") + "\n" + "\t".join("0" * 10) + "\n")
    status, out, err = score(capsys, "doc", "--gold", str(gold), "--pred", str(pred))
    assert status == 0, err
    assert json.loads(out) == res

    pred.write_text("1,0\n")
    status, _, err = score(capsys, "doc", "--gold", str(gold), "--pred", str(pred))
    assert status == 2 and "1 prediction lines" in err and "3 sentences" in err


def test_help_mentions_formats(capsys):
    with pytest.raises(SystemExit):
        run_cli(["score", "re", "--help"])
    out = capsys.readouterr().out
    assert "--negative-label" in out and "--gold-format" in out


@pytest.mark.parametrize("task, flags", [
    ("re", ["--gold", "gs://bucket/test.tsv", "--pred", "{tmp}/pred.txt"]),
    ("qa", ["--data", "gs://bucket/dev.json", "--pred", "{tmp}/pred.json"]),
    ("bioasq", ["--gold", "gs://bucket/golden.json", "--pred", "{tmp}/system.json"]),
    ("doc", ["--gold", "gs://bucket/test.tsv", "--pred", "{tmp}/pred.txt"]),
])
def test_a_remote_file_is_refused_naming_it(tmp_path, capsys, task, flags):
    """`score` reads these from a local disk: a gs:// path is named whole (pathlib made it gs:/bucket)."""
    status, out, err = score(capsys, task, *[flag.format(tmp=tmp_path) for flag in flags])
    remote = next(flag for flag in flags if flag.startswith("gs://"))
    assert status == 2 and out == "" and f"{remote}: `biozoo score` reads" in err
