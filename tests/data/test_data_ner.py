"""read_ner / find_split: real corpora, every format variant, malformed lines."""

import pytest

from biozoo.data.embedded import embedded_corpus
from biozoo.data.files import open_text
from biozoo.data.ner import find_split, infer_entity_type, read_ner
from biozoo.errors import DataFormatError


@pytest.mark.parametrize(
    "corpus, counts, etype",
    [
        ("NCBI-disease", (5424, 923, 940), "Disease"),
        ("BC5CDR-chem", (4560, 4581, 4797), "Chemical"),
        ("BC5CDR-disease", (4560, 4581, 4797), "Disease"),
    ],
)
def test_real_corpora(corpus, counts, etype, request):
    """NCBI-disease as packaged with biozoo (gzipped, read as it is), the others from the shared corpora."""
    if corpus == "NCBI-disease":
        folder, suffix = embedded_corpus("ncbi-disease"), ".tsv.gz"
    else:
        folder, suffix = request.getfixturevalue("shared_data") / "ner" / corpus, ".tsv"
    for split, expected in zip(("train", "dev", "test"), counts):
        path = find_split(folder, split)
        sentences = read_ner(path)
        assert len(sentences) == expected
        tags = {t for s in sentences for t in s.tags}
        assert tags == {"O", f"B-{etype}", f"I-{etype}"}
        assert all(len(s.words) == len(s.tags) > 0 for s in sentences)
        # line numbers: the first token of each sentence, as in the file
        lines = open_text(path).read().split("\n")
        for s in sentences[:50] + sentences[-5:]:
            assert lines[s.line - 1].split("\t")[0] == s.words[0]
    assert find_split(folder, "devel") == find_split(folder, "dev") == folder / f"devel{suffix}"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_typed_tsv_with_docstart_and_crlf(tmp_path):
    f = write(tmp_path / "x" / "train.tsv", "-DOCSTART-\tO\r\n\r\nA\tB-Gene\r\nb\tI-Gene\r\n\r\n\r\nc d\tO\r\n")
    sents = read_ner(f)
    assert [s.words for s in sents] == [["A", "b"], ["c d"]]  # a tsv token may hold a space
    assert [s.tags for s in sents] == [["B-Gene", "I-Gene"], ["O"]]
    assert [s.line for s in sents] == [3, 7]
    assert sents[0].path == str(f)


def test_blurb_bare_tags_typed_from_folder(tmp_path):
    text = "Famine\tO\nleads\tO\ncolon\tB\ncancer\tI\n\nx\tI\n"
    f = write(tmp_path / "NCBI-disease" / "test.tsv", text)
    sents = read_ner(f)
    assert sents[0].tags == ["O", "O", "B-Disease", "I-Disease"]
    assert sents[1].tags == ["I-Disease"]  # a stray I is kept, typed
    assert read_ner(f, fmt="blurb")[0].tags == sents[0].tags
    assert read_ner(write(tmp_path / "BC5CDR-chem" / "dev.tsv", text))[0].tags[2] == "B-Chemical"
    assert read_ner(write(tmp_path / "bc2gm" / "dev.tsv", text))[0].tags[2] == "B-Gene"
    assert read_ner(write(tmp_path / "BC4CHEMD" / "dev.tsv", text))[0].tags[2] == "B-Chemical"
    # explicit type wins over the folder
    assert read_ner(f, entity_type="Chemical")[0].tags[2] == "B-Chemical"
    # JNLPBA: kept as they are
    assert read_ner(write(tmp_path / "JNLPBA" / "dev.tsv", text))[0].tags[2] == "B"
    # unknown folder: error naming file and line
    other = write(tmp_path / "mystery" / "dev.tsv", text)
    with pytest.raises(DataFormatError, match=r"dev\.tsv:3.*entity_type"):
        read_ner(other)
    assert read_ner(other, entity_type="Thing")[0].tags[2] == "B-Thing"
    # typed tags are never re-typed
    typed = write(tmp_path / "NCBI-disease" / "typed.tsv", "a\tB-Chemical\n")
    assert read_ner(typed, entity_type="Disease")[0].tags == ["B-Chemical"]
    with pytest.raises(ValueError, match="mystery"):
        infer_entity_type(other)


@pytest.mark.parametrize("folder", ["s800", "S800", "linnaeus", "LINNAEUS"])
def test_biobert_species_corpora_type_bare_tags_as_species(tmp_path, folder):
    f = write(tmp_path / folder / "train.tsv", "Methanoculleus\tB\nbourgensis\tI\nis\tO\n")
    assert read_ner(f)[0].tags == ["B-Species", "I-Species", "O"]


def test_columns_are_split_at_ascii_spaces_and_tabs_only(tmp_path):
    # a no-break space (U+00A0) or a thin space (U+2009) inside a word is part of it
    text = "Dose O\n10\u00a0mg O\nof\u2009cisplatin B\n\n"
    f = write(tmp_path / "NCBI-disease" / "train.txt", text)
    for fmt in ("auto", "biobert"):
        (sentence,) = read_ner(f, fmt=fmt)
        assert sentence.words == ["Dose", "10\u00a0mg", "of\u2009cisplatin"]
        assert sentence.tags == ["O", "O", "B-Disease"]
    tsv = write(tmp_path / "NCBI-disease" / "train.tsv", text.replace(" ", "\t"))
    assert read_ner(tsv, fmt="tsv")[0].words == ["Dose", "10\u00a0mg", "of\u2009cisplatin"]


def test_biobert_whitespace_format(tmp_path):
    f = write(tmp_path / "BC2GM" / "devel.tsv", "Word NN x B\nword2 NN I\n\n-DOCSTART- X O\nlast\tO\n")
    sents = read_ner(f)  # auto: first line is not 2 tab columns -> whitespace split
    assert [s.words for s in sents] == [["Word", "word2"], ["last"]]
    assert [s.tags for s in sents] == [["B-Gene", "I-Gene"], ["O"]]
    assert read_ner(f, fmt="biobert")[1].line == 5
    with pytest.raises(DataFormatError, match=r"devel\.tsv:1"):
        read_ner(f, fmt="tsv")


@pytest.mark.parametrize(
    "text, line, fmt, message",
    [
        ("a\tO\nb\t\n", 2, "auto", "empty label"),
        ("a\tO\nb\tB-\n", 2, "auto", "not O, B, I"),
        ("a\tO\nb\tE-X\n", 2, "auto", "not O, B, I"),
        ("a\tO\nb\tX\tO\n", 2, "auto", "2 tab-separated"),
        ("a\tO\n\nb\n", 3, "auto", "2 tab-separated"),
        ("a\tB-X\nb\tI\n", 2, "auto", "mix"),
        ("a\tB-X\n", 1, "blurb", "typed label"),
        ("a O\nb\n", 2, "biobert", "at least 2"),
        ("a O\nb bad\n", 2, "biobert", "not O, B, I"),
        ("\tO\n", 1, "tsv", "empty token"),
        ("a O\n\u00a0 O\n", 2, "biobert", "empty token"),
        ("a\tO\n\u00a0\n", 2, "auto", "2 tab-separated"),
    ],
)
def test_malformed_lines(tmp_path, text, line, fmt, message):
    f = write(tmp_path / "NCBI-disease" / "bad.tsv", text)
    with pytest.raises(DataFormatError, match=message) as info:
        read_ner(f, fmt=fmt)
    assert f"{f}:{line}:" in str(info.value)


def test_unknown_format(tmp_path):
    with pytest.raises(ValueError, match="unknown NER format"):
        read_ner(write(tmp_path / "a.tsv", "a\tO\n"), fmt="conll")


def test_find_split(tmp_path):
    d = tmp_path / "corpus"
    for name in ("train.tsv", "devel.tsv", "test.txt", "train_dev.tsv"):
        write(d / name, "a\tO\n")
    assert find_split(d, "train") == d / "train.tsv"  # not train_dev
    assert find_split(d, "dev") == d / "devel.tsv"
    assert find_split(d, "devel") == d / "devel.tsv"
    assert find_split(d, "test") == d / "test.txt"
    assert find_split(d, "train_dev") == d / "train_dev.tsv"
    write(d / "dev.tsv", "a\tO\n")
    with pytest.raises(ValueError, match="ambiguous"):
        find_split(d, "dev")
    e = tmp_path / "empty"
    write(e / "notes.md", "")
    with pytest.raises(FileNotFoundError, match="notes.md") as info:
        find_split(e, "test")
    assert "test.tsv" in str(info.value)
    with pytest.raises(FileNotFoundError, match="train_dev"):
        find_split(e, "train_dev")
    with pytest.raises(ValueError, match="unknown split"):
        find_split(d, "validation")
