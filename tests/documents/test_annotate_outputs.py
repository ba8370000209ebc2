"""BioC JSON infons are strings; a value a writer cannot take names its document."""

import json

import pytest

from biozoo.documents import Annotation, Document, Passage, encode_documents, read_documents


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
