"""read_relation: real ChemProt/GAD files, every layout, malformed lines."""

import re

import pytest

from biozoo.data.relation import detect_relation_format, read_relation
from biozoo.errors import DataFormatError


def test_real_chemprot(shared_data):
    folder = shared_data / "re" / "chemprot"
    counts = {}
    for split in ("train", "dev", "test"):
        path = folder / f"{split}.tsv"
        assert detect_relation_format(path) == "electra"
        examples = read_relation(path)
        counts[split] = len(examples)
        assert {e.label for e in examples} == {"CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "False"}
        assert examples[0].line == 2 and examples[0].id == "0"
        assert not any(e.text.endswith("\r") or e.label.endswith("\r") for e in examples)  # CRLF file
        # ChemProt repeats a sentence once per entity pair (only the masks differ): all rows kept
        unmasked = {re.sub(r"BC6(ENTC|ENTG|OTHER)", "E", e.text) for e in examples}
        assert len(unmasked) < len(examples) / 2
    assert counts == {"train": 16521, "dev": 10361, "test": 14396}
    assert any('"' in e.text for e in read_relation(folder / "test.tsv"))  # quotes kept literally


def test_real_gad(shared_data):
    folder = shared_data / "re" / "gad"
    assert detect_relation_format(folder / "train.tsv") == "biobert"
    assert detect_relation_format(folder / "test.tsv") == "biobert_test"
    train = read_relation(folder / "train.tsv")
    dev = read_relation(folder / "dev.tsv")
    test = read_relation(folder / "test.tsv")
    # train.tsv has 4,796 rows and no header (its first row is a sentence); the data README's
    # 4,795 is what a header-assuming reader (pandas' default header=0) would count.
    assert (len(train), len(dev), len(test)) == (4796, 534, 534)
    assert train[0].text.startswith("this study proposes") and train[0].line == 1
    assert {e.label for e in train} == {"0", "1"}
    assert test[0].id == "0" and test[-1].id == "533" and test[0].line == 2
    assert any('"S"' in e.text for e in train)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_all_layouts(tmp_path):
    blurb = write(tmp_path, "chemprot.tsv", '1.T1.T2\tA "q" @CHEMICAL$ x @GENE$.\tCPR:3\n1.T1.T3\tA "q" @CHEMICAL$ x @GENE$.\tfalse\n')
    blurb_gad = write(tmp_path, "gad.tsv", "index\tsentence\tlabel\n0\t@GENE$ and @DISEASE$\t1\n")
    electra = write(tmp_path, "electra.tsv", "sentence\tlabel\r\nBC6ENTC binds BC6ENTG .\tCPR:4\r\n")
    biobert = write(tmp_path, "biobert.tsv", "@GENE$ in @DISEASE$.\t1\nno link\t0\n\n\n")
    biobert_test = write(tmp_path, "biobert_test.tsv", "index\tsentence\tlabel\n7\tbinds\tcpr:3\n")

    assert detect_relation_format(blurb) == "blurb"
    assert detect_relation_format(electra) == "electra"
    assert detect_relation_format(biobert) == "biobert"
    assert detect_relation_format(biobert_test) == "biobert_test"

    ex = read_relation(blurb)
    assert [(e.id, e.label, e.line) for e in ex] == [("1.T1.T2", "CPR:3", 1), ("1.T1.T3", "false", 2)]
    assert ex[0].text == ex[1].text == 'A "q" @CHEMICAL$ x @GENE$.'
    assert read_relation(blurb, fmt="blurb") == ex

    ex = read_relation(blurb_gad, fmt="blurb")  # GAD's header is skipped
    assert [(e.id, e.text, e.label, e.line) for e in ex] == [("0", "@GENE$ and @DISEASE$", "1", 2)]

    ex = read_relation(electra, fmt="electra")
    assert [(e.id, e.text, e.label, e.line) for e in ex] == [("0", "BC6ENTC binds BC6ENTG .", "CPR:4", 2)]

    ex = read_relation(biobert, fmt="biobert")  # trailing blank lines ignored
    assert [(e.id, e.label, e.line) for e in ex] == [("0", "1", 1), ("1", "0", 2)]

    ex = read_relation(biobert_test, fmt="biobert_test")
    assert [(e.id, e.text, e.label, e.line) for e in ex] == [("7", "binds", "cpr:3", 2)]
    assert ex[0].path == str(biobert_test)


@pytest.mark.parametrize(
    "text, fmt, line, message",
    [
        ("a\t1\nb\n", "auto", 2, "expected 2 tab-separated"),
        ("a\t1\nb\t1\textra\n", "auto", 2, "expected 2"),
        ("a\t1\n\nb\t0\n", "auto", 2, "blank line"),
        ("a\t1\nb\t \n", "auto", 2, "empty label"),
        ("a\t1\n \t0\n", "auto", 2, "empty sentence"),
        ("id1\ts\tCPR:3\n\ts\tfalse\n", "auto", 2, "empty id"),
        ("sentence\tlabel\nx\t1\n", "biobert", 1, "use fmt='electra'"),
        ("x\t1\n", "electra", 1, "expected the header"),
        ("0\tx\t1\n", "biobert_test", 1, "expected the header"),
        ("x\t1\n", "blurb", 1, "expected 3"),
        ("a\tb\tc\td\n", "auto", 1, "cannot detect"),
        ("sentence\tlabel\nA.\tCPR:3\nsentence\tlabel\nB.\tFalse\n", "auto", 3, "header line .* after line 1"),
        ("index\tsentence\tlabel\n0\tA.\t1\nIndex\tSentence\tLabel\n", "auto", 3, "after line 1"),
        ("index\tsentence\tlabel\n0\tA.\t1\nindex\tsentence\tlabel\n", "blurb", 3, "after line 1"),
        ("A.\t1\nB.\t0\nsentence\tlabel\nC.\t1\n", "auto", 3, "after line 1"),
    ],
)
def test_malformed(tmp_path, text, fmt, line, message):
    path = write(tmp_path, "bad.tsv", text)
    with pytest.raises(DataFormatError, match=message) as info:
        read_relation(path, fmt=fmt)
    assert f"{path}:{line}:" in str(info.value)


def test_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown relation format"):
        read_relation(write(tmp_path, "a.tsv", "x\t1\n"), fmt="csv")
    with pytest.raises(FileNotFoundError):
        read_relation(tmp_path / "missing.tsv")
    with pytest.raises(DataFormatError, match="empty file"):
        read_relation(write(tmp_path, "empty.tsv", "\n"))


def test_a_first_row_labelled_label_is_data_not_a_header(tmp_path):
    biobert = write(tmp_path, "train.tsv", "Some sentence with @GENE$ and @DISEASE$.\tLabel\nx @GENE$ y @DISEASE$\t1\n")
    assert detect_relation_format(biobert) == "biobert"
    ex = read_relation(biobert)
    assert [(e.id, e.text, e.label, e.line) for e in ex] == [
        ("0", "Some sentence with @GENE$ and @DISEASE$.", "Label", 1), ("1", "x @GENE$ y @DISEASE$", "1", 2)]
    blurb = write(tmp_path, "blurb.tsv", "1.T1.T2\t@CHEMICAL$ x @GENE$.\tlabel\n")
    assert [(e.id, e.label, e.line) for e in read_relation(blurb)] == [("1.T1.T2", "label", 1)]


@pytest.mark.parametrize("header", ["pmid\tsentence\tlabel", "guid\ttext\tlabel", "Sentence_text\tLabel"])
def test_a_header_of_unknown_columns_is_an_error_not_an_example(tmp_path, header):
    path = write(tmp_path, "train.tsv", f"{header}\n" + "\t".join(["7", "A @GENE$ B @DISEASE$.", "1"][-len(header.split()):])
                 + "\n")
    with pytest.raises(DataFormatError, match=r"train\.tsv:1: .* looks like a header naming columns biozoo does not know"):
        read_relation(path)


@pytest.mark.parametrize("header, fmt", [("Sentence\tLabel", "electra"), ("text\tlabel", "electra"),
                                         ("id\tsentence\tlabel", "biobert_test"), ("INDEX\tSENTENCE\tLABEL", "biobert_test")])
def test_headers_name_the_columns(tmp_path, header, fmt):
    row = "A @GENE$ B @DISEASE$.\t1" if fmt == "electra" else "5\tA @GENE$ B @DISEASE$.\t1"
    path = write(tmp_path, "test.tsv", f"{header}\n{row}\n")
    assert detect_relation_format(path) == fmt
    assert [(e.text, e.label, e.line) for e in read_relation(path)] == [("A @GENE$ B @DISEASE$.", "1", 2)]
