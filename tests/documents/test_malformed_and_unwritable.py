"""Inputs a reader must not cut, lose or crash on, and documents a writer must name or write so
that its own reader reads them back (each case failed before the fix it tests)."""

import json
import re
import sys
import time

import pytest

import biozoo
from biozoo.documents import Annotation, Document, Passage, Relation, _xml, read_documents, write_documents
from biozoo.errors import BiozooError, DataFormatError


def read_all(path, fmt="auto"):
    """(documents, skip messages, warnings) of `path`, bad documents skipped."""
    skipped, warned = [], []
    documents = list(read_documents([str(path)], fmt, skip_bad=True, on_skip=skipped.append,
                                    on_warning=warned.append))
    return documents, skipped, warned


def bioc_xml(doctype, passage):
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n{doctype}\n<collection><source>s</source><date>d</date>'
            f"<key>k</key>\n<document><id>1</id>{passage}</document></collection>\n")


# ----------------------------------------------------------------------------------- XML entities

def test_an_entity_the_doctype_declares_is_read_as_its_text(tmp_path):
    """lxml kept an entity as a node: the passage read as 'TGF-' and its annotation fell outside."""
    path = tmp_path / "entity.bioc.xml"
    path.write_text(bioc_xml('<!DOCTYPE collection [<!ENTITY beta "&#946;">]>',
                             '<passage><offset>0</offset><text>TGF-&beta; signalling in fibrosis.</text>'
                             '<annotation id="a"><infon key="type">Disease</infon><location offset="20" length="8"/>'
                             "<text>fibrosis</text></annotation></passage>"), encoding="utf-8")
    (document,), skipped, warned = read_all(path)
    assert document.passages[0].text == "TGF-\u03b2 signalling in fibrosis."
    assert [(a.start, a.end, a.text) for a in document.existing_annotations()] == [(20, 28, "fibrosis")]
    assert skipped == warned == []


def test_an_external_entity_is_refused_unread_and_an_undeclared_one_named_at_its_line(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET", encoding="utf-8")
    external = tmp_path / "external.bioc.xml"
    external.write_text(bioc_xml(f'<!DOCTYPE collection [<!ENTITY x SYSTEM "file://{secret}">]>',
                                 "<passage><offset>0</offset><text>a &x; b</text></passage>"), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"external\.bioc\.xml:4: unparsable XML: Entity 'x' not defined"):
        list(read_documents([str(external)]))
    undeclared = tmp_path / "undeclared.bioc.xml"
    undeclared.write_text(bioc_xml("", "<passage><offset>0</offset><text>a&nbsp;b</text></passage>"),
                          encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"undeclared\.bioc\.xml:4: unparsable XML: Entity 'nbsp' not defined"):
        list(read_documents([str(undeclared)]))


def test_pubmed_xml_reads_an_entity_its_doctype_declares(tmp_path):
    path = tmp_path / "pubmed.xml"
    path.write_text('<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet [<!ENTITY mu "&#181;">]>\n<PubmedArticleSet>'
                    '<PubmedArticle><MedlineCitation><PMID Version="1">7</PMID><Article><ArticleTitle>T.</ArticleTitle>'
                    "<Abstract><AbstractText>5 &mu;M of it.</AbstractText></Abstract></Article></MedlineCitation>"
                    "</PubmedArticle></PubmedArticleSet>\n", encoding="utf-8")
    (document,), _, _ = read_all(path)
    assert document.text == "T. 5 \u00b5M of it."


def test_pubmed_xml_an_article_titled_only_in_its_language_keeps_that_title(tmp_path):
    path = tmp_path / "pubmed.xml"
    path.write_text('<?xml version="1.0"?>\n<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID Version="1">101'
                    "</PMID><Article><ArticleTitle></ArticleTitle><VernacularTitle>Über Aspirin.</VernacularTitle>"
                    "</Article></MedlineCitation></PubmedArticle></PubmedArticleSet>\n", encoding="utf-8")
    (document,), _, _ = read_all(path)
    assert (document.id, document.passages[0].text) == ("101", "Über Aspirin.")


# ------------------------------------------------------------------------------------------ BioC

def test_a_passage_with_text_and_sentences_keeps_the_sentences_annotations(tmp_path):
    """The bioc package writes both when a passage has both; the sentences' annotations were lost."""
    path = tmp_path / "sentences.bioc.xml"
    sentence = ('<sentence><offset>{0}</offset><text>{1}</text><annotation id="{2}"><infon key="type">Chemical'
                '</infon><location offset="{0}" length="{3}"/><text>{4}</text></annotation></sentence>')
    path.write_text(bioc_xml("", "<passage><offset>0</offset><text>Aspirin helps. Heparin too.</text>"
                             + sentence.format(0, "Aspirin helps.", "a1", 7, "Aspirin")
                             + sentence.format(15, "Heparin too.", "a2", 7, "Heparin") + "</passage>"),
                    encoding="utf-8")
    (document,), skipped, warned = read_all(path)
    assert document.passages[0].text == "Aspirin helps. Heparin too."
    assert [(a.start, a.text) for a in document.existing_annotations()] == [(0, "Aspirin"), (15, "Heparin")]
    assert skipped == warned == []


def bioc_json_document(ident, text="Aspirin helps."):
    return {"id": str(ident), "infons": {}, "passages": [{"offset": 0, "text": text, "infons": {}, "annotations": []}]}


def test_a_bad_line_of_bioc_json_lines_costs_that_line_alone(tmp_path):
    path = tmp_path / "lines.bioc.json"
    lines = [json.dumps(bioc_json_document(1)), json.dumps(bioc_json_document(2))[:-9],
             json.dumps(bioc_json_document(3)), json.dumps({"id": "4"}), json.dumps(bioc_json_document(5))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    documents, skipped, _ = read_all(path, "bioc-json")
    assert [d.id for d in documents] == ["1", "3", "5"]
    assert len(skipped) == 2
    assert skipped[0].startswith(f"{path}:2: unparsable JSON") and skipped[1].startswith(f"{path}:4: not BioC JSON")
    lines[0] = lines[0][:-9]  # the first line bad too: it alone is lost, not read as the start of one value
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    documents, skipped, _ = read_all(path, "bioc-json")
    assert [d.id for d in documents] == ["3", "5"]
    assert [message.split(": ")[0] for message in skipped] == [f"{path}:1", f"{path}:2", f"{path}:4"]


@pytest.mark.parametrize("fmt, value, message", [
    ("jsonl", {"id": "1", "text": "abc", "relations": ["x"]}, "nodes are \\[refid, role\\] pairs"),
    ("jsonl", {"id": "1", "text": "abc", "relations": [{"nodes": [["a"]]}]}, "nodes are \\[refid, role\\] pairs"),
    ("jsonl", {"id": "1", "text": "abc", "annotations": [{"start": 0, "end": 1, "type": "T", "score": "high"}]},
     "score must be a number"),
    ("jsonl", {"id": "1", "text": "abc", "annotations": [{"start": 0, "end": 2, "type": "T",
                                                          "locations": [[0.9, 2.7]]}]}, "of integers"),
    ("bioc-json", {"documents": None}, 'a collection\'s "documents" must be a list'),
    ("bioc-json", {"documents": [{"id": "1", "passages": [{"offset": 0, "text": 123}]}]},
     "its text must be a string, got int"),
    ("bioc-json", {"documents": [{"id": "1", "passages": [{"offset": 0, "text": "abc", "annotations": [
        {"id": "a", "infons": {}, "locations": [{"offset": 0.9, "length": 2}]}]}]}]}, "0.9 is not an integer"),
])
def test_a_malformed_field_is_a_format_error_naming_the_file(tmp_path, fmt, value, message):
    path = tmp_path / f"bad.{fmt}"
    path.write_text(json.dumps(value) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=f"bad\\.{fmt}.*{message}"):
        list(read_documents([str(path)], fmt))


# --------------------------------------------------------------------------------------- writers

@pytest.mark.parametrize("fmt", ["jsonl", "bioc-json", "bioc-xml"])
def test_a_document_a_writer_cannot_encode_is_named(tmp_path, fmt):
    document = Document("7", [Passage(0, "abc")], infons={"note": "x\ud800"}, source="in.jsonl:3")
    with pytest.raises(ValueError, match=r"document 7 \(in\.jsonl:3\): cannot be written as"):
        write_documents([document], str(tmp_path / f"out.{fmt}"), fmt)
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_pubtator_output_with_tabs_reads_back_with_every_annotation(tmp_path):
    text = "Aspirin\tsodium helps."
    mention = Annotation(0, 14, "Chemical", "Aspirin\tsodium", concept_id="D001\nD002")
    document = Document("1", [Passage(0, text, "title")], predictions=[mention], source_format="jsonl")
    path = tmp_path / "out.pubtator"
    write_documents([document], str(path), "pubtator")
    (back,), skipped, warned = read_all(path)
    assert skipped == warned == []
    assert back.text == "Aspirin sodium helps."  # a tab in a column cannot be: a space, same length
    assert [(a.start, a.end, a.text, a.concept_id) for a in back.existing_annotations()] == [
        (0, 14, "Aspirin sodium", "D001 D002")]


def test_a_bioc_relation_is_written_to_pubtator_with_its_type_and_the_ids_of_its_ends(tmp_path):
    text = "Aspirin causes ulcers."
    annotations = [Annotation(0, 7, "Chemical", "Aspirin", concept_id="D001241", id="T1"),
                   Annotation(15, 21, "Disease", "ulcers", concept_id="D014456", id="T2")]
    relation = Relation({"relation": "CID"}, [("T1", "Chemical"), ("T2", "Disease")], id="R1")
    document = Document("9", [Passage(0, text, "title", annotations=annotations)], relations=[relation])
    path = tmp_path / "out.pubtator"
    write_documents([document], str(path), "pubtator")
    assert path.read_text(encoding="utf-8").rstrip("\n").splitlines()[-1] == "9\tCID\tD001241\tD014456"
    (back,), skipped, _ = read_all(path)
    assert skipped == [] and [r.infons["type"] for r in back.relations] == ["CID"]
    untyped = Document("10", [Passage(0, text, "title", annotations=annotations)],
                       relations=[Relation({}, [("T1", "a"), ("T2", "b")], id="R2")], source="in.xml:4")
    with pytest.raises(ValueError, match=r"document 10 \(in\.xml:4\).*relation R2.*is not a PubTator relation"):
        write_documents([untyped], str(tmp_path / "untyped.pubtator"), "pubtator")
    # an end without a concept id was written as its annotation id ("T2"), read back as a concept id
    unlinked = Document("11", [Passage(0, text, "title", annotations=[annotations[0], Annotation(
        15, 21, "Disease", "ulcers", id="T2")])], relations=[relation], source="in.xml:9")
    with pytest.raises(ValueError, match=r"document 11 \(in\.xml:9\).*relation R1 links annotation T2, which has no "
                                         "concept id"):
        write_documents([unlinked], str(tmp_path / "unlinked.pubtator"), "pubtator")


@pytest.mark.tensorflow
def test_a_remote_output_is_complete_or_absent(tmp_path):
    """tf.io.gfile (gs://; its in-memory ram:// stands in) finishes a file it closes on an error."""
    import tensorflow as tf

    documents = [Document(str(i), [Passage(0, "Aspirin helps.", "title")]) for i in range(3)]

    def failing():
        yield from documents[:2]
        raise RuntimeError("stopped")

    for output in ("ram://biozoo-out/run.jsonl", "ram://biozoo-out/run.pubtator.gz"):
        with pytest.raises(RuntimeError, match="stopped"):
            write_documents(failing(), output, "jsonl")
        assert tf.io.gfile.glob("ram://biozoo-out/*") == []
    write_documents(documents, "ram://biozoo-out/run.jsonl", "jsonl")
    assert tf.io.gfile.glob("ram://biozoo-out/*") == ["ram://biozoo-out/run.jsonl"]
    assert [d.id for d in read_documents(["ram://biozoo-out/run.jsonl"])] == ["0", "1", "2"]


@pytest.mark.parametrize("name, text, bad_id", [
    ("bad.pubtator", "1|t|Fine\n1|a|Text.\n\n2|t|Bad\n2|a|Text.\n2\t0\t99\tBad\tGene\n\n3|t|Fine\n3|a|Too.\n", "2"),
    ("bad.jsonl", '{"id": "1", "text": "abc"}\n{"id": "2", "text": "abc", "annotations": [{"start": 0, "end": 9, '
                  '"type": "T"}]}\n{"id": "3", "text": "abc"}\n', "2"),
    ("bad.bioc.json", json.dumps({"documents": [{"id": "1", "passages": [{"offset": 0, "text": "abc"}]},
                                                {"id": "2", "passages": [{"offset": 0, "text": 5}]}]}), "2"),
    ("junk.pubtator", "1|t|Fine\n1|a|Text.\n\nhello world\tthis is not PubTator\n\n3|t|Fine\n3|a|Too.\n", None),
    ("empty.pubtator", "|t|No PMID\n|a|Text.\n\n1|t|Fine\n1|a|Text.\n", None),
])
def test_a_skipped_document_is_known_by_its_id_where_the_reader_knows_it(tmp_path, name, text, bad_id):
    """What a corpus run records as the dead letter's id (it was None, though the message named the PMID)."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    ids = []
    stream = read_documents([str(path)], skip_bad=True, on_skip=lambda message: ids.append(stream.skipped_id))
    assert bad_id not in [d.id for d in stream] and ids == [bad_id]
    with pytest.raises(DataFormatError) as error:
        list(read_documents([str(path)]))
    assert error.value.document_id == bad_id


def test_bioc_json_a_document_a_line_is_read_as_bioc_json(tmp_path):
    """PubTator3's BioC JSON, one compact document a line, with no "sentences": it was read as
    biozoo's JSONL and refused."""
    line = {"id": "1", "infons": {}, "passages": [{"infons": {"type": "title"}, "offset": 0, "text": "Aspirin works.",
                                                   "annotations": [{"id": "1", "infons": {"type": "Chemical",
                                                                                           "identifier": "MESH:D001241"},
                                                                    "text": "Aspirin",
                                                                    "locations": [{"offset": 0, "length": 7}]}]}]}
    path = tmp_path / "pubtator3.json"
    path.write_text(json.dumps(line) + "\n" + json.dumps({**line, "id": "2"}) + "\n", encoding="utf-8")
    documents = list(read_documents([str(path)]))
    assert [(d.id, [(a.start, a.end, a.type, a.concept_id) for a in d.existing_annotations()]) for d in documents] == [
        ("1", [(0, 7, "Chemical", "MESH:D001241")]), ("2", [(0, 7, "Chemical", "MESH:D001241")])]
    # the first document without annotations: the next lines of the head tell
    bare = {**line, "passages": [{**line["passages"][0], "annotations": []}]}
    path.write_text(json.dumps(bare) + "\n" + json.dumps({**line, "id": "2"}) + "\n", encoding="utf-8")
    assert [len(d.existing_annotations()) for d in read_documents([str(path)])] == [0, 1]
    # a first line longer than the 64 KB head, its annotations after its text: the error says what to do
    long = {**line, "passages": [{**line["passages"][0], "text": "Aspirin works. " + "x" * 70000}]}
    path.write_text(json.dumps(long) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"it is a BioC annotation: read the file as BioC JSON "
                                              r"\(--input-format bioc-json\)"):
        list(read_documents([str(path)]))
    assert len(next(iter(read_documents([str(path)], "bioc-json"))).existing_annotations()) == 1


@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json"])
def test_an_empty_pubtator_id_column_survives_bioc(tmp_path, fmt):
    source = tmp_path / "in.pubtator"
    source.write_text("5|t|Only one\n5|a|\n5\t0\t4\tOnly\tX\t\n5\t5\t8\tone\tX\t-\n\n", encoding="utf-8")
    documents = list(read_documents([str(source)]))
    write_documents(documents, str(tmp_path / "out"), fmt)
    write_documents(list(read_documents([str(tmp_path / "out")], fmt)), str(tmp_path / "back.pubtator"), "pubtator")
    assert (tmp_path / "back.pubtator").read_text(encoding="utf-8") == source.read_text(encoding="utf-8")


@pytest.mark.parametrize("given", ["gs://bucket/abstracts.pubtator", "gs://bucket/pubmed25n*.xml.gz"])
def test_a_remote_input_without_tensorflow_is_one_error_naming_it(monkeypatch, given):
    """Where TensorFlow cannot be imported (a JAX or PyTorch machine), a gs:// input or glob is refused
    naming the path (the message named an empty one)."""
    monkeypatch.setitem(sys.modules, "biozoo.tf_gfile", None)
    monkeypatch.delattr(biozoo, "tf_gfile", raising=False)
    with pytest.raises(BiozooError, match=rf"^{re.escape(given)}: remote paths are read through TensorFlow"):
        list(read_documents([given]))


@pytest.mark.parametrize("fmt", ["bioc-xml", "pubmed-xml"])
def test_a_billion_laughs_file_is_refused_at_once(tmp_path, fmt):
    """libxml2's entity-amplification limit holds (10**10 bytes declared in a 1 KB file)."""
    root, inner = (("collection", bioc_xml("", "<passage><offset>0</offset><text>&lol9;</text></passage>"))
                   if fmt == "bioc-xml" else
                   ("PubmedArticleSet", "<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>1</PMID><Article>"
                    "<ArticleTitle>&lol9;</ArticleTitle></Article></MedlineCitation></PubmedArticle>"
                    "</PubmedArticleSet>"))
    entities = ['<!ENTITY lol0 "lollollollollollollollollollol">'] + [
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)]
    body = inner.split("\n", 1)[1] if inner.startswith("<?xml") else inner
    path = tmp_path / "bomb.xml"
    path.write_text(f'<?xml version="1.0"?>\n<!DOCTYPE {root} [\n' + "\n".join(entities) + "\n]>\n" + body)
    started = time.monotonic()
    with pytest.raises(DataFormatError, match=r"bomb\.xml:\d+: unparsable XML: .*amplification"):
        list(read_documents([str(path)], fmt))
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("version, huge", [((2, 10, 3), False), ((2, 11, 0), True), ((2, 14, 6), True)])
def test_huge_trees_only_where_libxml2_limits_entity_expansion_in_them(monkeypatch, version, huge):
    monkeypatch.setattr(_xml, "LIBXML_VERSION", version)
    assert _xml.parser_options()["huge_tree"] is huge
