"""Document formats: round trips on the shared PubTator/BioC files, PubMed XML written here,
plain text and JSONL, predictions on output, and errors that name file, line and PMID."""

import dataclasses
import gzip
import io
import json
import os
import sys

import pytest

from biozoo.documents import (
    Annotation,
    Document,
    Passage,
    detect_format,
    iter_input_files,
    read_documents,
    write_documents,
)
from biozoo.errors import DataFormatError

PUBTATOR_FILES = ["BC5CDR_Test.PubTator", "NCBIdisease_Test.PubTator", "example.PubTator"]
SHARED_FILES = PUBTATOR_FILES + ["example_pmc.BioC.xml"]


@pytest.fixture(scope="module")
def documents_dir(shared_data):
    folder = shared_data / "documents"
    if not folder.is_dir():
        pytest.skip(f"no shared documents at {folder}")
    return folder


_read_cache = {}


def read(path, **kwargs):
    return list(read_documents([path], **kwargs))


def shared(documents_dir, name):
    if name not in _read_cache:
        _read_cache[name] = read(documents_dir / name)
    return _read_cache[name]


def gold(document):
    return [(a.start, a.end, a.type, a.text, a.concept_id) for a in document.existing_annotations()]


def layout(document):
    return [(p.offset, p.text, p.type, p.infons) for p in document.passages]


def expected_pubtator(original: bytes) -> bytes:
    """The writer ends every document with a blank line; example.PubTator's last has none."""
    return original if original.endswith(b"\n\n") else original + b"\n"


# ------------------------------------------------------------------ shared files: round trips


@pytest.mark.parametrize("name", PUBTATOR_FILES)
def test_pubtator_read_then_written_is_byte_identical(documents_dir, name, tmp_path):
    documents = shared(documents_dir, name)
    assert documents and all(d.source_format == "pubtator" for d in documents)
    out = tmp_path / "out.pubtator"
    assert write_documents(documents, out, "pubtator") == len(documents)
    assert out.read_bytes() == expected_pubtator((documents_dir / name).read_bytes())


@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json", "jsonl"])
@pytest.mark.parametrize("name", PUBTATOR_FILES)
def test_pubtator_through_another_format_and_back(documents_dir, name, fmt, tmp_path):
    documents = shared(documents_dir, name)
    middle = tmp_path / f"middle.{fmt}"
    write_documents(documents, middle, fmt)
    assert detect_format(middle) == fmt
    back = read(middle)
    assert [d.id for d in back] == [d.id for d in documents]
    assert [layout(d) for d in back] == [layout(d) for d in documents]
    assert [gold(d) for d in back] == [gold(d) for d in documents]
    again = tmp_path / "again.pubtator"
    write_documents(back, again, "pubtator")
    assert again.read_bytes() == expected_pubtator((documents_dir / name).read_bytes())
    if fmt != "jsonl":  # BioC -> BioC: infons of everything stay as they are
        write_documents(back, tmp_path / f"twice.{fmt}", fmt)
        twice = read(tmp_path / f"twice.{fmt}")
        assert [content(d) for d in twice] == [content(d) for d in back]


def content(document):
    return dataclasses.replace(document, source=None)


@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json", "jsonl"])
def test_pmc_bioc_keeps_every_passage_and_offset(documents_dir, fmt, tmp_path):
    (document,) = shared(documents_dir, "example_pmc.BioC.xml")
    assert len(document.passages) == 81 and document.infons == {"license": "CC BY"}
    assert document.passages[1].offset == 71 and document.passages[1].type == "abstract"
    assert (document.collection.source, document.collection.date, document.collection.key) == ("PMC", "20180513", "pmc.key")
    write_documents([document], tmp_path / "out", fmt)
    (back,) = read(tmp_path / "out")
    assert back.id == document.id and back.infons == document.infons
    assert layout(back) == layout(document)
    if fmt != "jsonl":
        assert back.collection == document.collection


@pytest.mark.parametrize("name", SHARED_FILES)
def test_every_gold_annotation_indexes_its_text(documents_dir, name):
    for document in shared(documents_dir, name):
        for annotation in document.existing_annotations():
            assert document.text_at(annotation.start, annotation.end) == annotation.text


def test_shared_pubtator_counts(documents_dir):
    bc5 = shared(documents_dir, "BC5CDR_Test.PubTator")
    assert len(bc5) == 500 and sum(len(gold(d)) for d in bc5) == 9796
    ncbi = shared(documents_dir, "NCBIdisease_Test.PubTator")
    assert len(ncbi) == 100 and sum(len(gold(d)) for d in ncbi) == 960
    # NCBI-disease abstracts end with a space: kept, so later offsets do not shift
    assert ncbi[0].passages[1].text.endswith(". ")


# --------------------------------------------------------------------------- PubMed XML

PUBMED_XML = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">
<PubmedArticleSet>
  <PubmedArticle>
    <MedlineCitation Status="MEDLINE" Owner="NLM">
      <PMID Version="1">1001</PMID>
      <Article PubModel="Print">
        <ArticleTitle>&#x3b2;-catenin signalling in <i>Mus musculus</i> M&#xfc;ller glia.</ArticleTitle>
        <Abstract>
          <AbstractText Label="BACKGROUND" NlmCategory="BACKGROUND">Wnt/&#x3b2;-catenin is active.</AbstractText>
          <AbstractText Label="RESULTS" NlmCategory="RESULTS">Ca<sup>2+</sup> rose (<i>p</i> &lt; 0.05).</AbstractText>
          <AbstractText Label="CONCLUSIONS" NlmCategory="CONCLUSIONS">It works.</AbstractText>
        </Abstract>
      </Article>
      <CommentsCorrectionsList>
        <CommentsCorrections RefType="Cites"><PMID Version="1">42</PMID></CommentsCorrections>
      </CommentsCorrectionsList>
    </MedlineCitation>
    <PubmedData><ArticleIdList><ArticleId IdType="pubmed">1001</ArticleId></ArticleIdList></PubmedData>
  </PubmedArticle>
  <PubmedArticle>
    <MedlineCitation Status="MEDLINE" Owner="NLM">
      <PMID Version="1">1002</PMID>
      <Article PubModel="Print">
        <ArticleTitle>A title without abstract.</ArticleTitle>
      </Article>
    </MedlineCitation>
  </PubmedArticle>
  <PubmedBookArticle>
    <BookDocument><PMID Version="1">1003</PMID><ArticleTitle>A book chapter</ArticleTitle></BookDocument>
  </PubmedBookArticle>
  <PubmedArticle>
    <MedlineCitation Status="MEDLINE" Owner="NLM">
      <PMID Version="1">1004</PMID>
      <Article PubModel="Print">
        <ArticleTitle>H<sub>2</sub>O<sub>2</sub> and <b>NF-&#x3ba;B</b>.</ArticleTitle>
        <Abstract><AbstractText>One unlabelled paragraph with 5 &#xb5;M.</AbstractText></Abstract>
      </Article>
    </MedlineCitation>
  </PubmedArticle>
  <DeleteCitation><PMID Version="1">9001</PMID><PMID Version="1">9002</PMID></DeleteCitation>
</PubmedArticleSet>
"""

PUBMED_EXPECTED = [
    ("1001", "β-catenin signalling in Mus musculus Müller glia.",
     "BACKGROUND: Wnt/β-catenin is active. RESULTS: Ca2+ rose (p < 0.05). CONCLUSIONS: It works."),
    ("1002", "A title without abstract.", ""),
    ("1004", "H2O2 and NF-κB.", "One unlabelled paragraph with 5 µM."),
]


@pytest.mark.parametrize("compressed", [False, True])
def test_pubmed_xml_titles_and_abstracts(tmp_path, compressed):
    path = tmp_path / ("pubmed.xml.gz" if compressed else "pubmed.xml")
    data = PUBMED_XML.encode("utf-8")
    path.write_bytes(gzip.compress(data) if compressed else data)
    assert detect_format(path) == "pubmed-xml"
    notes = []
    documents = list(read_documents(path, on_skip=pytest.fail, on_note=notes.append))
    assert [(d.id, d.passages[0].text, d.passages[1].text) for d in documents] == PUBMED_EXPECTED
    for document in documents:
        title, abstract = document.passages
        assert (title.offset, title.type, abstract.offset, abstract.type) == (0, "title", len(title.text) + 1, "abstract")
        assert document.text == f"{title.text} {abstract.text}"
        assert document.source.startswith(f"{path}:") and document.id in document.source
    assert len(notes) == 1 and "1 PubmedBookArticle" in notes[0] and "2 PMIDs in DeleteCitation" in notes[0]


def test_pubmed_xml_written_as_pubtator_keeps_offsets(tmp_path):
    (tmp_path / "pubmed.xml").write_text(PUBMED_XML, encoding="utf-8")
    documents = list(read_documents(tmp_path / "pubmed.xml", on_note=lambda m: None))
    documents[0].predictions = [Annotation(0, 9, "Gene", "β-catenin", score=0.9, model="m"),
                                Annotation(37, 43, "Species", "Müller", model="m")]
    write_documents(documents, tmp_path / "out.pubtator", "pubtator")
    text = (tmp_path / "out.pubtator").read_text(encoding="utf-8")
    assert text.startswith("1001|t|β-catenin signalling in Mus musculus Müller glia.\n1001|a|BACKGROUND: Wnt/β")
    assert "1001\t0\t9\tβ-catenin\tGene\n1001\t37\t43\tMüller\tSpecies\n" in text
    back = read(tmp_path / "out.pubtator")
    assert [(d.id, d.text) for d in back] == [(d.id, d.text) for d in documents]
    assert [(a.start, a.end, a.text) for a in back[0].existing_annotations()] == [(0, 9, "β-catenin"), (37, 43, "Müller")]


def test_pubmed_xml_bad_article_and_broken_xml(tmp_path):
    no_pmid = PUBMED_XML.replace('<PMID Version="1">1002</PMID>', "")
    (tmp_path / "a.xml").write_text(no_pmid, encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"a\.xml:\d+: .*without MedlineCitation/PMID"):
        read(tmp_path / "a.xml")
    skipped = []
    stream = read_documents(tmp_path / "a.xml", skip_bad=True, on_skip=skipped.append, on_note=lambda m: None)
    assert [d.id for d in stream] == ["1001", "1004"] and stream.skipped == 1 and stream.notes == 1
    assert len(skipped) == 1 and "without MedlineCitation/PMID" in skipped[0]
    (tmp_path / "b.xml").write_text(PUBMED_XML[:1500], encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"b\.xml:\d+: unparsable XML"):
        read(tmp_path / "b.xml")


# ------------------------------------------------------------------------- text and JSONL


def test_text_lines_are_documents(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("Aspirin helps.\r\n\n  Müller glia  \nlast line".encode("utf-8"))
    assert detect_format(path) == "text"
    documents = read(path)
    assert [(d.id, d.passages[0].text, d.source) for d in documents] == [
        ("1", "Aspirin helps.", f"{path}:1"), ("2", "", f"{path}:2"),
        ("3", "  Müller glia  ", f"{path}:3"), ("4", "last line", f"{path}:4")]


def test_jsonl_simple_and_full_documents(tmp_path):
    path = tmp_path / "in.jsonl"
    aspirin = {"start": 0, "end": 7, "type": "Chemical", "text": "Aspirin"}
    lines = [{"id": "a", "text": "Aspirin helps.", "annotations": [aspirin]}, {"text": "no id here"}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    assert detect_format(path) == "jsonl"
    first, second = read(path)
    assert first.passages[0].annotations[0].text == "Aspirin" and second.id == "2"
    first.predictions = [Annotation(8, 13, "Verb", "helps", score=0.5, model="m1"),
                         Annotation(0, 3, "Chemical", "Asp rin", model="m2", concept_id="D001241",
                                    locations=[(0, 3), (4, 7)])]
    write_documents([first, second], tmp_path / "out.jsonl", "jsonl")
    obj = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert obj["passages"][0]["annotations"][0]["model"] is None and len(obj["predictions"]) == 2
    assert obj["predictions"][1]["locations"] == [[0, 3], [4, 7]] and "infons" not in obj["predictions"][0]
    back = read(tmp_path / "out.jsonl")
    assert back[0].predictions == first.predictions and layout(back[0]) == layout(first)
    assert back[0].passages[0].annotations == first.passages[0].annotations


def test_predictions_in_bioc_and_pubtator_output(tmp_path):
    document = Document("7", [Passage(0, "Aspirin.", "title", {"type": "title"}),
                              Passage(9, "Mice got aspirin.", "abstract", {"type": "abstract"})])
    document.passages[1].annotations.append(Annotation(9, 13, "Species", "Mice", id="p0"))
    document.predictions = [Annotation(0, 7, "Chemical", "Aspirin", score=0.75, model="aioner", concept_id="D001241"),
                            Annotation(18, 25, "Chemical", "aspirin", score=None, model="aioner")]
    with pytest.raises(ValueError, match="--drop-existing"):
        write_documents([document], tmp_path / "x.pubtator", "pubtator")
    assert not os.listdir(tmp_path)  # nothing half-written is left
    write_documents([document], tmp_path / "out.xml", "bioc-xml")
    xml = (tmp_path / "out.xml").read_text(encoding="utf-8")
    assert ('<annotation id="p1"><infon key="type">Chemical</infon><infon key="identifier">D001241</infon>'
            '<infon key="annotator">biozoo:aioner</infon><infon key="score">0.75</infon>') in xml
    assert '<annotation id="p2"><infon key="type">Chemical</infon><infon key="annotator">biozoo:aioner</infon>' in xml
    (back,) = read(tmp_path / "out.xml")
    title, abstract = back.passages
    assert title.annotations == [] and [a.id for a in abstract.annotations] == ["p0"]  # p0 is the input's
    aspirin, lower = back.predictions  # read back as predictions, ids kept
    assert (aspirin.id, aspirin.model, aspirin.score, aspirin.concept_id) == ("p1", "aioner", 0.75, "D001241")
    assert aspirin.infons == {"type": "Chemical", "identifier": "D001241"}
    assert (lower.id, lower.model, lower.score, lower.infons) == ("p2", "aioner", None, {"type": "Chemical"})
    document.passages[1].annotations.clear()
    write_documents([document], tmp_path / "out.pubtator", "pubtator")
    assert (tmp_path / "out.pubtator").read_text() == (
        "7|t|Aspirin.\n7|a|Mice got aspirin.\n7\t0\t7\tAspirin\tChemical\tD001241\n7\t18\t25\taspirin\tChemical\n\n")


def test_any_document_written_as_pubtator_keeps_offsets(documents_dir, tmp_path):
    (pmc,) = shared(documents_dir, "example_pmc.BioC.xml")
    text = tmp_path / "in.txt"
    text.write_text("Line one.\nLine two\n", encoding="utf-8")
    documents = [pmc] + read(text)
    write_documents(documents, tmp_path / "out.pubtator", "pubtator")
    back = read(tmp_path / "out.pubtator")
    # a one-passage document gets an empty abstract line: its text gains the separating space
    assert [d.text for d in back] == [pmc.text, "Line one. ", "Line two "]
    assert back[0].passages[0].text == pmc.passages[0].text


def test_pubtator_relations_and_odd_columns_round_trip(tmp_path):
    data = ("5|t|Lithium and tremor.\n5|a|\n5\t0\t7\tLithium\tChemical\n5\t12\t18\ttremor\tDisease\t-\n"
            "5\t0\t7\tLithium\tChemical\tD1|D2\tLi|Li2\n5\tCID\tD008094\tD014202\n\n")
    (tmp_path / "in.pubtator").write_text(data)
    (document,) = read(tmp_path / "in.pubtator")
    assert [a.concept_id for a in document.existing_annotations()] == [None, "-", "D1|D2"]
    assert document.relations[0].raw == "5\tCID\tD008094\tD014202"
    for fmt in ("bioc-xml", "bioc-json", "jsonl", "pubtator"):
        write_documents([document], tmp_path / f"out.{fmt}", fmt)
        write_documents(read(tmp_path / f"out.{fmt}"), tmp_path / "again.pubtator", "pubtator")
        assert (tmp_path / "again.pubtator").read_text() == data, fmt


# --------------------------------------------------------------------------------- inputs


def test_inputs_folders_gzip_and_stdin(tmp_path, monkeypatch):
    (tmp_path / "b").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "b" / "2.txt").write_text("second\n")
    (tmp_path / "a.txt.gz").write_bytes(gzip.compress(b"first\n"))
    (tmp_path / ".hidden" / "x.txt").write_text("hidden\n")
    (tmp_path / ".dot.txt").write_text("hidden\n")
    files = list(iter_input_files(tmp_path))
    assert files == [str(tmp_path / "a.txt.gz"), str(tmp_path / "b" / "2.txt")]
    assert [d.text for d in read_documents(tmp_path)] == ["first", "second"]
    stdin = io.TextIOWrapper(io.BytesIO(gzip.compress(b"1|t|From stdin.\n1|a|Yes.\n\n")))
    monkeypatch.setattr(sys, "stdin", stdin)
    (document,) = read_documents("-")
    assert document.text == "From stdin. Yes." and document.source == "<stdin>:1"
    with pytest.raises(FileNotFoundError, match="missing"):
        list(read_documents(tmp_path / "missing"))


def test_write_to_stdout_and_gzip(tmp_path, capsysbinary):
    documents = [Document("1", [Passage(0, "Text.")])]
    assert write_documents(documents, "-", "jsonl") == 1
    assert json.loads(capsysbinary.readouterr().out)["id"] == "1"
    write_documents(iter(documents), tmp_path / "out.jsonl.gz", "jsonl")
    assert [d.text for d in read(tmp_path / "out.jsonl.gz")] == ["Text."]


@pytest.mark.parametrize("head, fmt", [
    (b"123|t|Title\n123|a|Abstract\n", "pubtator"),
    (b'\xef\xbb\xbf<?xml version="1.0"?>\n<!DOCTYPE collection SYSTEM "BioC.dtd">\n<collection>', "bioc-xml"),
    (b"<!-- c -->\n<PubmedArticleSet>", "pubmed-xml"),
    (b'{"source": "PMC", "date": "", "key": "", "infons": {}, "documents": [', "bioc-json"),
    (b'{\n  "bioctype": "BioCCollection",\n', "bioc-json"),
    (b'[{"bioctype": "BioCCollection"', "bioc-json"),
    (b'{"id": "1", "text": "the \\"documents\\": are here"}\n', "jsonl"),
    (b"Just a sentence | with a bar.\n", "text"),
    ((b'{"id": "long", "text": "' + b"x" * 70000)[:65536], "jsonl"),  # a line longer than the head
    (gzip.compress(b"1|t|x\n", mtime=0), "pubtator"),
])
def test_detect_format(head, fmt):
    assert detect_format(head) == fmt


# --------------------------------------------------------------------------------- errors


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


GOOD = "1|t|Aspirin.\n1|a|Mice.\n1\t0\t7\tAspirin\tChemical\tD1\n\n"


@pytest.mark.parametrize("line, message", [
    ("2\t0\tseven\tMice\tSpecies", r"bad\.pubtator:4: PMID 2: malformed line"),
    ("2\t0\t99\tMice\tSpecies", r"bad\.pubtator:4: PMID 2: annotation 0-99 'Mice': offsets 0-99 are outside"),
    ("2\t9\t13\tRats\tSpecies", r"bad\.pubtator:4: PMID 2: annotation 9-13 'Rats' does not match the text there: 'Mice'"),
    ("3\t9\t13\tMice\tSpecies", r"bad\.pubtator:4: PMID 2: a line of PMID '3'"),
])
def test_bad_pubtator_lines_name_file_line_and_pmid(tmp_path, line, message):
    path = write(tmp_path, "bad.pubtator", f"2|t|Aspirin.\n2|a|Mice.\n2\t0\t7\tAspirin\tChemical\n{line}\n\n" + GOOD)
    with pytest.raises(DataFormatError, match=message):
        read(path, strict=True)  # strict: a mention whose text differs refuses its document (else: dropped, warned)
    reports = []
    stream = read_documents(path, skip_bad=True, on_skip=reports.append, strict=True)
    assert [d.id for d in stream] == ["1"]
    assert stream.skipped == 1 and stream.read == 1 and len(reports) == 1 and "bad.pubtator:4" in reports[0]


def test_unparsable_and_unknown_inputs_name_the_file(tmp_path):
    broken = write(tmp_path, "broken.xml", "<collection><source>x</source><document><id>1</id>\n<passage>")
    with pytest.raises(DataFormatError, match=r"broken\.xml:\d+: unparsable XML"):
        read(broken)
    reports = []
    assert read(broken, skip_bad=True, on_skip=reports.append) == [] and "nothing more is read" in reports[0]
    other = write(tmp_path, "other.xml", "<?xml version='1.0'?><html><body/></html>")
    with pytest.raises(DataFormatError, match=r"other\.xml: unknown format: XML with root <html>"):
        read(other)
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x00\x01\x02\xff" * 10)
    with pytest.raises(DataFormatError, match=r"model\.bin: unknown format"):
        read(binary)
    with pytest.raises(DataFormatError, match=r"other\.xml:1: not BioC XML: the root element is <html>"):
        read(other, fmt="bioc-xml")
    json_file = write(tmp_path, "bad.json", '{"documents": [{"id": "9", "passages": [{"offset": 0, "text": "Abc", '
                      '"annotations": [{"id": "1", "infons": {"type": "X"}, "text": "Abd", '
                      '"locations": [{"offset": 0, "length": 3}]}]}]}]}\n')
    with pytest.raises(DataFormatError, match=r"bad\.json:1: document 9: annotation 0-3 'Abd' does not match"):
        read(json_file, strict=True)


def test_bioc_xml_bad_document_is_skipped_with_its_line(tmp_path):
    text = ('<?xml version="1.0"?>\n<collection><source>s</source><date>d</date><key>k</key>\n'
            '<document><id>1</id><passage><offset>0</offset><text>Abc</text>\n'
            '<annotation id="a"><infon key="type">X</infon><location offset="1" length="5"/><text>bc</text></annotation>'
            '</passage></document>\n'
            '<document><id>2</id><passage><offset>0</offset><text>Abc</text></passage></document>\n</collection>\n')
    path = write(tmp_path, "c.xml", text)
    with pytest.raises(DataFormatError, match=r"c\.xml:3: document 1: annotation 1-6 'bc': offsets 1-6 are outside"):
        read(path)
    stream = read_documents(path, skip_bad=True, on_skip=lambda m: None)
    assert [d.id for d in stream] == ["2"] and stream.skipped == 1


def test_unknown_format_names(tmp_path):
    with pytest.raises(ValueError, match="unknown input format"):
        read_documents(tmp_path, fmt="conll")
    with pytest.raises(ValueError, match="unknown output format"):
        write_documents([], tmp_path / "x", "brat")


def test_pubtator_annotation_over_title_and_abstract_and_no_blank_lines(tmp_path):
    data = "8|t|Heart\n8|a|failure here.\n8\t0\t13\tHeart failure\tDisease\n9|t|Next.\n9\t0\t4\tNext\tX\n"
    (document, following) = read(write(tmp_path, "in.pubtator", data))
    assert document.annotations[0].text == "Heart failure" and not document.passages[0].annotations
    assert document.text[0:13] == "Heart failure" and following.passages[0].annotations[0].text == "Next"
    write_documents([document, following], tmp_path / "out.pubtator", "pubtator")
    assert (tmp_path / "out.pubtator").read_text() == data.replace("\n9|t|", "\n\n9|t|") + "\n"


def test_skip_bad_passes_over_unknown_files_and_broken_gzip(tmp_path):
    write(tmp_path, "a.pubtator", GOOD)
    (tmp_path / "b.bin").write_bytes(b"\x00\xff" * 8)
    (tmp_path / "c.txt.gz").write_bytes(gzip.compress(b"some text\n" * 100)[:-30])
    with pytest.raises(DataFormatError, match=r"b\.bin: unknown format"):
        list(read_documents(tmp_path))
    reports = []
    stream = read_documents(tmp_path, skip_bad=True, on_skip=reports.append)
    assert [d.id for d in stream][:1] == ["1"] and stream.skipped == 2
    assert "b.bin: unknown format" in reports[0] and "c.txt.gz: broken gzip" in reports[1]


def test_skipped_documents_are_reported_on_stderr_by_default(tmp_path, capsys):
    path = write(tmp_path, "bad.pubtator", "2|t|Aspirin.\n2\t0\t7\tAspirin\n\n" + GOOD)
    assert [d.id for d in read_documents(path, skip_bad=True)] == ["1"]
    err = capsys.readouterr().err
    assert "skipped: " in err and "bad.pubtator:2: PMID 2: malformed line" in err


MISMATCHED = {  # one mention whose text column ('Rats') differs from the text at its offsets ('Mice')
    "pubtator": "2|t|Aspirin.\n2|a|Mice.\n2\t0\t7\tAspirin\tChemical\n2\t9\t13\tRats\tSpecies\n\n",
    "jsonl": json.dumps({"id": "2", "text": "Aspirin. Mice.", "annotations": [
        {"start": 0, "end": 7, "type": "Chemical", "text": "Aspirin"},
        {"start": 9, "end": 13, "type": "Species", "text": "Rats"}]}) + "\n",
    "bioc-json": json.dumps({"source": "", "date": "", "key": "", "infons": {}, "documents": [{
        "id": "2", "infons": {}, "relations": [], "passages": [{
            "offset": 0, "infons": {}, "text": "Aspirin. Mice.", "sentences": [], "relations": [], "annotations": [
                {"id": "a", "infons": {"type": "Chemical"}, "text": "Aspirin",
                 "locations": [{"offset": 0, "length": 7}]},
                {"id": "b", "infons": {"type": "Species"}, "text": "Rats",
                 "locations": [{"offset": 9, "length": 4}]}]}]}]}),
}


@pytest.mark.parametrize("fmt", sorted(MISMATCHED))
def test_a_mention_whose_text_differs_is_dropped_refused_or_kept(tmp_path, fmt):
    from biozoo.documents import KEEP_MISMATCHED

    path = write(tmp_path, f"doc.{fmt}", MISMATCHED[fmt])
    told = []
    stream = read_documents(path, fmt=fmt, on_warning=told.append)
    assert [(a.start, a.text) for a in next(stream).existing_annotations()] == [(0, "Aspirin")]
    assert stream.dropped == 1 and stream.kept_mismatched == 0 and "'Rats'" in told[0] and "dropped" in told[0]
    with pytest.raises(DataFormatError, match="'Rats' does not match the text there: 'Mice'"):
        list(read_documents(path, fmt=fmt, strict=True))
    told = []
    stream = read_documents(path, fmt=fmt, strict=KEEP_MISMATCHED, on_warning=told.append)
    assert [(a.start, a.end, a.text) for a in next(stream).existing_annotations()] == [(0, 7, "Aspirin"), (9, 13, "Rats")]
    assert stream.dropped == 0 and stream.kept_mismatched == 1 and "kept" in told[0]
