"""read_squad / read_bioasq_golden: real BioASQ data, SQuAD v2 variants, answer checks, errors."""

import json
import warnings

import pytest

from biozoo.data.qa import check_answers, read_bioasq_golden, read_squad
from biozoo.errors import DataFormatError
from biozoo.testing import bioasq_dev


def test_real_bioasq(shared_data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # this release has no offset mismatches
        examples = read_squad(bioasq_dev(shared_data))
    assert len(examples) == 1809
    assert len({e.qid.rsplit(":", 1)[0] for e in examples}) == 214
    assert not any(e.is_impossible for e in examples)
    assert all(len(e.answers) == 1 for e in examples)
    first = examples[0]
    assert first.qid == "58edf567eda5a57672000011:5"
    assert first.answers == [{"text": "48 genes", "answer_start": 101}]
    assert check_answers(examples) == []


def write_json(tmp_path, obj, name="data.json"):
    path = tmp_path / name
    path.write_text(json.dumps(obj, indent=1), encoding="utf-8")
    return path


def squad(qas, context="The Cat sat on the mat."):
    return {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}


def test_squad_v2_and_unlabelled(tmp_path):
    path = write_json(
        tmp_path,
        squad(
            [
                {"id": "a", "question": "Who?", "answers": [{"text": "Cat", "answer_start": 4}], "is_impossible": False},
                {"id": "b", "question": "Why?", "answers": [], "is_impossible": True},
                {"id": "c", "question": "Test question without answers"},
            ]
        ),
    )
    ex = read_squad(path)
    assert [(e.qid, e.is_impossible, len(e.answers)) for e in ex] == [("a", False, 1), ("b", True, 0), ("c", False, 0)]
    assert ex[0].context == "The Cat sat on the mat." and ex[0].question == "Who?"


def test_answer_mismatches_are_reported_not_dropped(tmp_path):
    path = write_json(
        tmp_path,
        squad(
            [
                {"id": "case", "question": "?", "answers": [{"text": "cat", "answer_start": 4}]},
                {"id": "off", "question": "?", "answers": [{"text": "mat", "answer_start": 3}]},
                {"id": "ok", "question": "?", "answers": [{"text": "sat", "answer_start": 8}]},
            ]
        ),
    )
    with pytest.warns(UserWarning, match=r"2 answer\(s\).*1 differ only in case") as record:
        ex = read_squad(path)
    assert "case" in str(record[0].message) and "off" in str(record[0].message)
    assert len(ex) == 3 and ex[0].answers == [{"text": "cat", "answer_start": 4}]
    mismatches = check_answers(ex)
    assert [(m.qid, m.case_only, m.found) for m in mismatches] == [("case", True, "Cat"), ("off", False, " Ca")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(read_squad(path, check=False)) == 3


@pytest.mark.parametrize(
    "obj, message",
    [
        ({"version": "1.1"}, "missing key 'data'"),
        ({"data": [{"paragraphs": [{"qas": []}]}]}, r"data\[0\]\.paragraphs\[0\]: missing key 'context'"),
        (squad([{"id": "q", "answers": []}]), r"qas\[0\]: missing key 'question'"),
        (squad([{"id": "q", "question": "?", "answers": [{"text": "x"}]}]), "answer_start"),
        (squad([{"id": "q", "question": "?", "answers": [{"text": "x", "answer_start": 99}]}]), "outside the context"),
        (squad([{"id": "q", "question": "?", "answers": "x"}]), "expected list"),
        (squad([{"id": "q", "question": "?", "answers": [], "is_impossible": "yes"}]), "is_impossible"),
    ],
)
def test_malformed_squad(tmp_path, obj, message):
    path = write_json(tmp_path, obj)
    with pytest.raises(DataFormatError, match=message) as info:
        read_squad(path)
    assert str(path) in str(info.value)


def test_invalid_json_names_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"data": [\n  {"paragraphs": [}\n]}\n')
    with pytest.raises(DataFormatError, match=r"broken\.json:2"):
        read_squad(path)


def test_bioasq_golden(tmp_path):
    golden = {
        "questions": [
            {"id": "q1", "type": "factoid", "body": "?", "exact_answer": [["BRCA1", "breast cancer 1"]]},
            {"id": "q2", "type": "yesno", "exact_answer": "yes"},
            {"id": "q3", "type": "summary"},
        ]
    }
    data = read_bioasq_golden(write_json(tmp_path, golden))
    assert data == golden
    golden["questions"][0]["exact_answer"] = ["BRCA1"]
    with pytest.raises(DataFormatError, match=r"questions\[0\] \(id q1\).*list of lists"):
        read_bioasq_golden(write_json(tmp_path, golden))
    with pytest.raises(DataFormatError, match="missing key 'questions'"):
        read_bioasq_golden(write_json(tmp_path, {"data": []}))
    with pytest.raises(DataFormatError, match=r"questions\[0\]: missing key 'id'"):
        read_bioasq_golden(write_json(tmp_path, {"questions": [{"type": "factoid"}]}))


def test_a_question_id_given_twice_is_an_error(tmp_path):
    # the scores are keyed by id: a second "q" would replace the first (a perfect model scored 50)
    twice = {"data": [
        {"paragraphs": [{"context": "abc", "qas": [{"id": "q", "question": "?", "answers": [{"text": "b", "answer_start": 1}]}]}]},
        {"paragraphs": [{"context": "abc", "qas": [{"id": "r", "question": "?", "answers": []}]},
                        {"context": "abc", "qas": [{"id": "q", "question": "??", "answers": [{"text": "c", "answer_start": 2}]}]}]},
    ]}
    path = write_json(tmp_path, twice)
    with pytest.raises(DataFormatError) as info:
        read_squad(path)
    assert str(info.value).startswith(f"{path}: data[1].paragraphs[1].qas[0]: question id 'q' given twice "
                                      "(first at data[0].paragraphs[0].qas[0])")
    twice["data"][1]["paragraphs"][1]["qas"][0]["id"] = "q2"
    assert [e.qid for e in read_squad(write_json(tmp_path, twice))] == ["q", "r", "q2"]

    golden = {"questions": [{"id": "a", "type": "yesno"}, {"id": "b", "type": "yesno"}, {"id": "a", "type": "summary"}]}
    with pytest.raises(DataFormatError, match=r"questions\[2\]: question id 'a' given twice \(first at questions\[0\]\)"):
        read_bioasq_golden(write_json(tmp_path, golden))



def squad_with_ids(*ids):
    """One paragraph "abc" with a question per id, each answered "b" at 1."""
    return {"data": [{"paragraphs": [{"context": "abc", "qas": [
        {"id": qid, "question": f"q{n}?", "answers": [{"text": "b", "answer_start": 1}]} for n, qid in enumerate(ids)]}]}]}


def test_a_training_split_keeps_a_question_id_given_twice(tmp_path):
    """BioBERT's BioASQ 7b training file joins 6b's train and test: ids repeat. Only a scored split
    needs unique ids; training read every split and refused it."""
    path = write_json(tmp_path, squad_with_ids("a", "b", "a", "c", "b"))
    with pytest.warns(UserWarning) as caught:
        examples = read_squad(path, unique_ids=False)
    assert [(e.qid, e.question) for e in examples] == [("a", "q0?"), ("b", "q1?"), ("a", "q2?"), ("c", "q3?"),
                                                      ("b", "q4?")]
    (warning,) = caught
    assert str(warning.message) == (f"{path}: 2 question(s) with an id given before, kept (a training split is not "
                                    "scored by id); the first: 'a' at data[0].paragraphs[0].qas[2] "
                                    "(first at data[0].paragraphs[0].qas[0])")
    with pytest.raises(DataFormatError, match=r"qas\[2\]: question id 'a' given twice"):
        read_squad(path)


def test_the_qa_adapter_refuses_a_repeated_id_only_where_it_scores(tmp_path):
    from biozoo.tasks.adapters import adapter_for

    write_json(tmp_path, squad_with_ids("a", "a"), "train.json")
    write_json(tmp_path, squad_with_ids("d1", "d2"), "dev.json")
    with pytest.warns(UserWarning, match=r"train.json: 1 question\(s\) with an id given before, kept"):
        splits = adapter_for("qa").load(tmp_path)
    assert [e.qid for e in splits["train"]] == ["a", "a"] and [e.qid for e in splits["dev"]] == ["d1", "d2"]
    with pytest.raises(DataFormatError, match=r"train.json: .*question id 'a' given twice"):
        adapter_for("qa").load(tmp_path, only="train")  # asked for by name: to be scored
    write_json(tmp_path, squad_with_ids("d1", "d1"), "dev.json")
    with pytest.raises(DataFormatError, match=r"dev.json: .*question id 'd1' given twice"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adapter_for("qa").load(tmp_path)
