"""read_hoc / group_by_abstract on BLURB-layout files written here."""

import pytest

from biozoo.data.hoc import LABELS, group_by_abstract, parse_hoc_labels, read_hoc
from biozoo.errors import DataFormatError


def labels(*on):
    return ",".join(f"{j}_{int(j in on)}" for j in range(10))


def test_read_and_group(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text(
        "labels\tsentence\tindex\n"
        f"{labels(0)}\tFirst sentence.\t111_0\n"
        f"{labels()}\tSecond \"quoted\" one.\t111_1\n"
        f"{labels(3, 9)}\tOther abstract.\t222_0\n"
        f"{labels(5)}\tBack to the first.\t111_2\n"
    )
    sents = read_hoc(path)
    assert len(sents) == 4 and len(LABELS) == 10
    assert sents[0].labels == (1,) + (0,) * 9 and sents[0].line == 2 and sents[0].id == "111_0"
    assert sents[1].text == 'Second "quoted" one.'
    abstracts = group_by_abstract(sents)
    assert [a.id for a in abstracts] == ["111", "222"]
    first = abstracts[0]
    assert first.text == 'First sentence. Second "quoted" one. Back to the first.'
    assert [j for j, v in enumerate(first.labels) if v] == [0, 5]
    assert first.sentence_ids == ["111_0", "111_1", "111_2"]
    assert [j for j, v in enumerate(abstracts[1].labels) if v] == [3, 9]


def test_labels_in_any_order_and_no_header(tmp_path):
    items = ",".join(f"{j}_{int(j == 2)}" for j in reversed(range(10)))
    assert parse_hoc_labels(items) == (0, 0, 1) + (0,) * 7
    path = tmp_path / "train.tsv"
    path.write_text(f"{items}\ts\t9_0\n")
    assert read_hoc(path)[0].line == 1


MALFORMED = [
    (f"{labels()}\tonly two columns", "3 columns"),
    ("0_0,1_1\ttext\t1_0", "expected 10"),
    (f"{labels()[:-1]}2\ttext\t1_0", "not 'index_value'"),
    (labels() + ",3_1\ttext\t1_0", "given twice"),
    (f"{labels()}\t \t1_0", "empty sentence"),
    (f"{labels()}\ttext\t ", "empty sentence id"),
    ("0-0" + labels()[3:] + "\ttext\t1_0", "'0-0' is not 'index_value'"),
    ("labels\ttext\t1_0", "'labels' is not 'index_value'"),
]


@pytest.mark.parametrize("row, message", MALFORMED)
def test_malformed(tmp_path, row, message):
    path = tmp_path / "bad.tsv"
    path.write_text(f"labels\tsentence\tindex\n{labels()}\tfine\t1_0\n{row}\n")
    with pytest.raises(DataFormatError, match=message) as info:
        read_hoc(path)
    assert f"{path}:3:" in str(info.value)


@pytest.mark.parametrize("row, message", MALFORMED)
def test_a_malformed_first_row_is_reported_not_taken_for_a_header(tmp_path, row, message):
    path = tmp_path / "headerless.tsv"
    path.write_text(f"{row}\n{labels()}\tfine\t1_1\n")
    with pytest.raises(DataFormatError, match=message) as info:
        read_hoc(path)
    assert f"{path}:1:" in str(info.value)


@pytest.mark.parametrize("header", ["labels\tsentence\tindex", "label\tsentence\tid", "Labels\tText\tPMID_sentence"])
def test_a_header_names_the_columns(tmp_path, header):
    path = tmp_path / "test.tsv"
    path.write_text(f"{header}\n{labels(7)}\tSecond.\t111_1\n")
    assert [(s.id, s.text, s.labels[7], s.line) for s in read_hoc(path)] == [("111_1", "Second.", 1, 2)]
