"""What an annotate run writes reads back apart from the input's annotations: BioC marks biozoo's
predictions (annotator "biozoo:MODEL"), PubTator refuses an annotate run's input annotations;
BioC JSON infons are strings; a value a writer cannot take names its document."""

import json
import os

import pytest

from biozoo.annotate.runner import AnnotationRun
from biozoo.documents import (
    Annotation,
    Document,
    Passage,
    Relation,
    encode_documents,
    read_documents,
    write_documents,
)

TITLE, ABSTRACT = "Aspirin and ulcers.", "Nonsteroidal anti-inflammatory drugs (NSAID) harm."


def gold_document():
    """PMID 1: two gold mentions (one with a third party's "annotator" infon) and a gold relation."""
    document = Document("1", [Passage(0, TITLE, "title", {"type": "title"}),
                              Passage(20, ABSTRACT, "abstract", {"type": "abstract"})])
    document.passages[0].annotations = [
        Annotation(0, 7, "Chemical", "Aspirin", concept_id="D1", id="T1", infons={"type": "Chemical",
                                                                                 "identifier": "D1"}),
        Annotation(12, 18, "Disease", "ulcers", concept_id="D2", id="T2",
                   infons={"type": "Disease", "identifier": "D2", "annotator": "Leaman"})]
    document.relations = [Relation({"type": "CID"}, [("T1", "Chemical"), ("T2", "Disease")], id="R0")]
    return document


def predicted(document):
    """`document` with what a model "m" found: a wrong Chemical, and an abbreviation (LongForm
    20-56 "Nonsteroidal anti-inflammatory drugs", ShortForm 58-63 "NSAID")."""
    document.predictions = [
        Annotation(8, 11, "Chemical", "and", score=0.9, model="m"),
        Annotation(20, 56, "LongForm", ABSTRACT[:36], model="m"),
        Annotation(58, 63, "ShortForm", "NSAID", model="m", infons={"long_form_start": "20", "long_form_end": "56"}),
    ]
    return document


@pytest.mark.parametrize("fmt,name", [("bioc-xml", "out.bioc.xml"), ("bioc-json", "out.bioc.json")])
def test_biozoo_bioc_output_reads_back_its_predictions_as_predictions(tmp_path, fmt, name):
    first = tmp_path / name
    write_documents([predicted(gold_document())], first, fmt)
    (back,) = read_documents([first])
    # the gold, the third party's annotation with its own "annotator" included, stays the input's
    assert [(a.id, a.start, a.end, a.type, a.model) for a in back.existing_annotations()] == [
        ("T1", 0, 7, "Chemical", None), ("T2", 12, 18, "Disease", None)]
    assert back.existing_annotations()[1].infons["annotator"] == "Leaman"
    # the predictions: ids p0.. (p0 for the first), model and score from the infons, which then drop them
    assert [(a.id, a.start, a.end, a.type, a.model, a.score) for a in back.predictions] == [
        ("p0", 8, 11, "Chemical", "m", 0.9), ("p1", 20, 56, "LongForm", "m", None),
        ("p2", 58, 63, "ShortForm", "m", None)]
    assert back.predictions[2].infons == {"long_form_start": "20", "long_form_end": "56", "type": "ShortForm"}
    # the ABBR relation the writer built between p2 and p1 is not an input relation: it is built again
    assert [(r.id, r.infons) for r in back.relations] == [("R0", {"type": "CID"})]
    again = tmp_path / ("again" + name[3:])
    write_documents([back], again, fmt)
    assert again.read_bytes() == first.read_bytes()
    text = first.read_text(encoding="utf-8")
    assert "biozoo:m" in text and text.count("ABBR") == 1


def test_bioc_prediction_without_a_model_is_marked_biozoo(tmp_path):
    document = gold_document()
    document.predictions = [Annotation(8, 11, "Chemical", "and")]
    data, _ = encode_documents([document], "bioc-xml")
    assert b'<infon key="annotator">biozoo</infon>' in data
    (tmp_path / "x.bioc.xml").write_bytes(data)
    (back,) = read_documents([tmp_path / "x.bioc.xml"])
    assert [(a.start, a.model, a.score) for a in back.predictions] == [(8, None, None)]
    assert len(back.existing_annotations()) == 2


class Nothing:
    """A model that finds nothing."""

    name = "nothing"

    def annotate(self, documents):
        return [[] for _ in documents]


GOLD_PUBTATOR = ("1|t|Aspirin helps.\n1|a|x\n1\t0\t7\tAspirin\tChemical\tD1\n\n"
                 "2|t|Ulcers hurt.\n2|a|y\n\n")


def test_annotate_run_to_pubtator_refuses_input_annotations_even_without_predictions(tmp_path):
    source = tmp_path / "gold.pubtator"
    source.write_text(GOLD_PUBTATOR, encoding="utf-8")
    output = tmp_path / "out.pubtator"
    run = AnnotationRun([Nothing()], progress=False, skip_bad=True, on_skip=lambda message: None)
    with pytest.raises(ValueError, match=r"document 1 \(.*gold\.pubtator:1\) carries 1 input annotation.*--drop-existing"):
        write_documents(run.annotate(read_documents([source])), output, "pubtator", on_unwritable=run.unwritable,
                        annotate_run=True)
    assert sorted(os.listdir(tmp_path)) == ["gold.pubtator"]  # nothing written, --skip-bad or not
    run = AnnotationRun([Nothing()], progress=False, drop_existing=True)
    assert write_documents(run.annotate(read_documents([source])), output, "pubtator", annotate_run=True) == 2
    assert output.read_text(encoding="utf-8") == "1|t|Aspirin helps.\n1|a|x\n\n2|t|Ulcers hurt.\n2|a|y\n\n"
    # a plain conversion (no run) writes the input's annotations
    assert write_documents(read_documents([source]), output, "pubtator") == 2
    assert output.read_text(encoding="utf-8") == GOLD_PUBTATOR


def test_bioc_json_infons_that_are_no_strings_are_read_as_their_json_text(tmp_path):
    document = {"id": "1", "infons": {"year": 2024}, "passages": [{
        "offset": 0, "infons": {"type": "title"}, "text": "BRCA1 in cancer.",
        "annotations": [{"id": "a1", "text": "BRCA1", "locations": [{"offset": 0, "length": 5}],
                         "infons": {"type": "Gene", "identifier": 672, "valid": True, "note": None,
                                    "score": 0.5, "role": {"type": "Gene"}, "ids": [1, 2]}}]}]}
    path = tmp_path / "in.bioc.json"
    path.write_text(json.dumps({"documents": [document]}), encoding="utf-8")
    (back,) = read_documents([path])
    (gene,) = back.existing_annotations()
    assert gene.infons == {"type": "Gene", "identifier": "672", "valid": "true", "note": "", "score": "0.5",
                           "role": '{"type": "Gene"}', "ids": "[1, 2]"}
    assert gene.concept_id == "672" and back.infons == {"year": "2024"}
    data, count = encode_documents([back], "pubtator")
    assert count == 1 and data.decode() == "1|t|BRCA1 in cancer.\n1\t0\t5\tBRCA1\tGene\t672\n\n"


def test_a_value_pubtator_cannot_take_names_its_document(tmp_path):
    document = Document("7", [Passage(0, "BRCA1 in cancer.", "title")], source="in.jsonl:3")
    document.predictions = [Annotation(0, 5, "Gene", "BRCA1", concept_id=672)]  # as a JSONL file may give it
    with pytest.raises(ValueError, match=r"document 7 \(in\.jsonl:3\): cannot be written as PubTator: annotation "
                                         r"0-5: its concept id 672 is not a string"):
        encode_documents([document], "pubtator")
    refused = []
    data, count = encode_documents([document, Document("8", [Passage(0, "Fine.", "title")])], "pubtator",
                                   on_unwritable=lambda d, error: refused.append(d.id))
    assert (refused, count, data) == (["7"], 1, b"8|t|Fine.\n\n")


def test_pubtator_annotation_lines_title_abstract_and_crossing_runs_merged_by_start(tmp_path):
    """As the module says: each passage's lines keep their input order, the runs are merged by start."""
    data = ("1|t|Ab cd.\n1|a|Ef gh.\n1\t7\t9\tEf\tX\n1\t3\t5\tcd\tX\n1\t0\t2\tAb\tX\n1\t3\t9\tcd. Ef\tY\n\n")
    (tmp_path / "in.pubtator").write_text(data, encoding="utf-8")
    out, _ = encode_documents(read_documents([tmp_path / "in.pubtator"]), "pubtator")
    # title run [3, 0], abstract run [7], crossing run [3]: merged by start as heapq.merge does
    assert out.decode() == "1|t|Ab cd.\n1|a|Ef gh.\n1\t3\t5\tcd\tX\n1\t0\t2\tAb\tX\n1\t3\t9\tcd. Ef\tY\n1\t7\t9\tEf\tX\n\n"
