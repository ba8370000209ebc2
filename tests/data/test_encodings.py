"""Every data reader and scorer reads files the same way: UTF-8 with or without a byte-order
mark, gzip when named .gz, and a byte that is not UTF-8 is an error naming the file and line
(it was a UnicodeDecodeError naming neither; a BOM made NER's first -DOCSTART- a sentence;
the scorers could not read .gz)."""

import gzip
import json
import os

import pytest

from biozoo.data.hoc import read_hoc
from biozoo.data.ner import infer_entity_type, read_ner
from biozoo.data.qa import read_squad
from biozoo.data.relation import read_relation
from biozoo.errors import DataFormatError
from biozoo.metrics.ner import read_conlleval

BOM = "\ufeff"
NER = "-DOCSTART- -X- -X- O\n\nAspirin\tB-Chemical\nintoxication\tO\n\nFever\tO\n"
SQUAD = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "The cat sat.", "qas": [
    {"id": "a", "question": "Who sat?", "answers": [{"text": "cat", "answer_start": 4}]}]}]}]}


def sentences(path, **options):
    return [(s.words, s.tags, s.line) for s in read_ner(path, **options)]


@pytest.mark.parametrize("fmt", ["auto", "tsv"])
def test_a_bom_changes_nothing_in_ner(tmp_path, fmt):
    plain, marked = tmp_path / "plain.tsv", tmp_path / "marked.tsv"
    plain.write_text(NER, encoding="utf-8")
    marked.write_text(BOM + NER, encoding="utf-8")
    assert sentences(marked, fmt=fmt) == sentences(plain, fmt=fmt) == [
        (["Aspirin", "intoxication"], ["B-Chemical", "O"], 3), (["Fever"], ["O"], 6)]
    only_bom = tmp_path / "only_bom.tsv"
    only_bom.write_text(BOM + "\nAspirin\tB-Chemical\n", encoding="utf-8")
    assert sentences(only_bom) == [(["Aspirin"], ["B-Chemical"], 2)]
    conll = tmp_path / "conll.txt"
    conll.write_text(BOM + "-DOCSTART- -X- O O\n\nAspirin B-Chemical B-Chemical\n", encoding="utf-8")
    assert read_conlleval(conll) == ([["B-Chemical"]], [["B-Chemical"]])



def test_a_bom_changes_nothing_in_squad_json(tmp_path):
    marked = tmp_path / "marked.json"
    marked.write_bytes(b"\xef\xbb\xbf" + json.dumps(SQUAD).encode("utf-8"))
    (example,) = read_squad(marked)
    assert (example.qid, example.question, example.context) == ("a", "Who sat?", "The cat sat.")
    assert example.answers == [{"text": "cat", "answer_start": 4}]


def _with_bad_byte(path, text, line):
    """`text` written as UTF-8 with a Latin-1 é on its 1-based `line`."""
    lines = text.encode("utf-8").split(b"\n")
    lines[line - 1] = lines[line - 1].replace(b"e", b"\xe9", 1)
    assert b"\xe9" in lines[line - 1]
    path.write_bytes(b"\n".join(lines))
    return path


READERS = {
    "ner": (read_ner, "Aspirin\tB-Chemical\nintoxication\tO\n\nfever\tO\n", 4),
    "ner.gz": (read_ner, "Aspirin\tB-Chemical\nintoxication\tO\n\nfever\tO\n", 4),
    "relation": (read_relation, "sentence\tlabel\n@GENE$ binds @CHEMICAL$.\tCPR:3\nthe end.\tFalse\n", 3),
    "hoc": (read_hoc, "labels\tsentence\tid\n{0}\tsentence one.\t1_0\n{0}\tthe end.\t1_1\n".format(
        ",".join(f"{j}_0" for j in range(10))), 3),
    "squad": (read_squad, json.dumps(SQUAD, indent=1), 12),  # line 12: "question": "Who sat?"
    "conlleval": (read_conlleval, "Aspirin B-Chemical B-Chemical\n\nthe O O\n", 3),
}


@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_byte_that_is_not_utf8_is_named_by_file_and_line(tmp_path, kind):
    reader, text, line = READERS[kind]
    path = _with_bad_byte(tmp_path / f"file.{'txt' if kind != 'squad' else 'json'}", text, line)
    if kind.endswith(".gz"):
        gz = tmp_path / "file.txt.gz"
        gz.write_bytes(gzip.compress(path.read_bytes()))
        path = gz
    with pytest.raises(DataFormatError, match=rf"file\.(txt|json)(\.gz)?:{line}: not UTF-8 \(byte 0xE9"):
        reader(path)


def score(capsys, *argv):
    from biozoo.cli import main

    status = main(["score", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def gzipped(path):
    target = path.with_name(path.name + ".gz")
    target.write_bytes(gzip.compress(path.read_bytes()))
    return target


def test_the_scorers_read_gzip_as_plain_files(tmp_path, capsys):
    conll = tmp_path / "pred.txt"
    conll.write_text("a B-X B-X\nb I-X I-X\nc O B-Y\n\nd B-Y O\n")
    plain = score(capsys, "ner", "--input", str(conll))
    assert plain[0] == 0 and score(capsys, "ner", "--input", str(gzipped(conll))) == plain

    gold, pred = tmp_path / "test.tsv", tmp_path / "labels.txt"
    gold.write_text("sentence\tlabel\nA.\tCPR:3\nB.\tFalse\n")
    pred.write_text("CPR:3\nCPR:3\n")
    plain = score(capsys, "re", "--gold", str(gold), "--pred", str(pred))
    assert plain[0] == 0 and score(capsys, "re", "--gold", str(gzipped(gold)), "--pred", str(gzipped(pred))) == plain

    data, answers = tmp_path / "data.json", tmp_path / "answers.json"
    data.write_text(json.dumps(SQUAD))
    answers.write_text(json.dumps({"a": "the cat"}))
    plain = score(capsys, "qa", "--data", str(data), "--pred", str(answers))
    assert plain[0] == 0 and json.loads(plain[1])["exact"] == 100.0
    assert score(capsys, "qa", "--data", str(gzipped(data)), "--pred", str(gzipped(answers))) == plain


def test_a_scorer_names_the_line_of_a_byte_that_is_not_utf8(tmp_path, capsys):
    gold = tmp_path / "test.tsv"
    gold.write_text("sentence\tlabel\nA.\tCPR:3\nB.\tFalse\n")
    pred = _with_bad_byte(tmp_path / "labels.txt", "CPR:3\nFalse\n", 2)
    status, out, err = score(capsys, "re", "--gold", str(gold), "--pred", str(pred))
    assert status == 2 and out == "" and "labels.txt:2: not UTF-8" in err
    data = _with_bad_byte(tmp_path / "data.json", json.dumps(SQUAD, indent=1), 12)
    status, _, err = score(capsys, "qa", "--data", str(data), "--pred", str(gold))
    assert status == 2 and "data.json:12: not UTF-8" in err


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_the_entity_type_comes_from_the_folder_named_then_the_one_linked_to(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "train.tsv").write_text("Fever\tB\n")
    named = tmp_path / "NCBI-disease"
    named.mkdir()
    (named / "train.tsv").symlink_to(store / "train.tsv")
    assert infer_entity_type(named / "train.tsv") == "Disease"  # the folder the user named
    assert sentences(named / "train.tsv") == [(["Fever"], ["B-Disease"], 1)]
    (tmp_path / "BC2GM").mkdir()
    (tmp_path / "BC2GM" / "train.tsv").write_text("BRCA1\tB\n")
    (tmp_path / "genes").symlink_to(tmp_path / "BC2GM")
    assert infer_entity_type(tmp_path / "genes" / "train.tsv") == "Gene"  # a linked folder: where it leads
