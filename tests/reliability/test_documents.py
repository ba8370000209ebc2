"""No silent data loss in documents: a damaged .gz keeps every complete document before the damage
(counted by an independent account of where each document ends in the compressed stream), a bad
byte loses one document, not a file; quirks of real corpora keep their document; PubTator output
refuses what it cannot hold; the output format follows the file name; an input is never the
output."""

import gzip
import json

import pytest
from reliability_kit import BIOC_OVERLAP, damaged_gzip_inputs, flushed_gzip, leftovers, pubtator_document

from biozoo.cli import main
from biozoo.documents import read_documents
from biozoo.errors import DataFormatError

ANNOTATE = ["annotate", "--no-progress", "--model"]


def ids(path):
    return [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_cut_gz_keeps_every_complete_document(kit, tmp_path, capsys):
    path, whole = damaged_gzip_inputs(tmp_path, count=40)
    assert 5 < whole < 35
    out = tmp_path / "kept.jsonl"
    assert main(ANNOTATE + [str(kit.ner_model), str(path), "--skip-bad", "--output", str(out)]) == 0
    assert ids(out) == [str(2000 + i) for i in range(whole)]
    err = capsys.readouterr().err
    assert f"the {whole} complete document(s) before it were read" in err and "1 bad document(s) skipped" in err
    assert main(ANNOTATE + [str(kit.ner_model), str(path), "--output", str(tmp_path / "strict.jsonl")]) == 2
    assert "broken gzip data" in capsys.readouterr().err
    assert not (tmp_path / "strict.jsonl").exists() and leftovers(tmp_path) == []


def test_a_bad_byte_inside_the_compressed_data_loses_only_what_follows_it(tmp_path):
    documents = [pubtator_document(5000 + i, words=200) for i in range(30)]
    data, ends = flushed_gzip(documents)
    damaged = bytearray(data)
    damaged[ends[11] + 40] ^= 0xFF  # inside the 13th document's block
    path = tmp_path / "damaged.pubtator.gz"
    path.write_bytes(bytes(damaged))
    skipped = []
    stream = read_documents([path], skip_bad=True, on_skip=skipped.append)
    read = {document.id: document for document in stream}
    original = {d.id: d for d in read_documents([_plain(tmp_path, documents)])}
    for i in range(12):  # every document before the damage, whole and exact
        pmid = str(5000 + i)
        assert read[pmid].text == original[pmid].text and read[pmid].annotations == original[pmid].annotations
    assert skipped and stream.skipped == len(skipped)
    with pytest.raises(DataFormatError, match="damaged.pubtator.gz"):
        list(read_documents([path]))


def _plain(tmp_path, documents):
    path = tmp_path / "plain.pubtator"
    path.write_text("".join(documents), encoding="utf-8")
    return path


def test_one_bad_byte_in_the_first_64_kb_loses_one_document(tmp_path):
    data = bytearray("".join(pubtator_document(6000 + i) for i in range(20)).encode())
    data[data.index(b"6002|a|") + 30] = 0xFF
    path = tmp_path / "bad.pubtator"
    path.write_bytes(bytes(data))
    for name, content in (("bad.pubtator", bytes(data)), ("bad.pubtator.gz", gzip.compress(bytes(data)))):
        (tmp_path / name).write_bytes(content)
        skipped = []
        stream = read_documents([tmp_path / name], skip_bad=True, on_skip=skipped.append)
        assert [d.id for d in stream] == [str(6000 + i) for i in range(20) if i != 2]
        assert stream.skipped == 1 and "PMID 6002: not UTF-8" in skipped[0]
    title = bytearray("".join(pubtator_document(6000 + i) for i in range(20)).encode())
    title[title.index(b"6005|t|") + 9] = 0xFF  # the title line itself: its PMID is still named
    skipped = []
    stream = read_documents([_bytes(tmp_path / "title.pubtator", bytes(title))], skip_bad=True, on_skip=skipped.append)
    assert [d.id for d in stream] == [str(6000 + i) for i in range(20) if i != 5]
    assert "title.pubtator" in skipped[0] and "PMID 6005: not UTF-8" in skipped[0] and stream.skipped_id == "6005"


def _bytes(path, data):
    path.write_bytes(data)
    return path


def test_overlapping_bioc_passages_are_refused_in_pubtator_and_kept_elsewhere(kit, tmp_path, capsys):
    source = tmp_path / "overlap.bioc.xml"
    source.write_text(BIOC_OVERLAP, encoding="utf-8")
    out = tmp_path / "out.pubtator"
    assert main(ANNOTATE + [str(kit.ner_model), str(source), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "document PMC1" in err and "passages overlap" in err and not out.exists()
    kept = tmp_path / "out.bioc.xml"
    assert main(ANNOTATE + [str(kit.ner_model), str(source), "--output", str(kept)]) == 0
    import bioc

    with open(kept, encoding="utf-8") as f:
        document = bioc.biocxml.load(f).documents[0]
    assert [(p.offset, p.text) for p in document.passages] == [(0, "Aspirin and cancer"), (10, "Cancer cells grow.")]


def test_a_non_integer_start_is_a_malformed_line_and_relations_stay_relations(tmp_path):
    good = ("1|t|Aspirin helps mice.\n1|a|It does.\n1\t0\t7\tAspirin\tChemical\tD1\n1\t14\t18\tmice\tSpecies\t10090\n"
            "1\tCID\tD1\tD2\n1\tAssociation\t7157\tD009369\tNovel\n\n")
    path = tmp_path / "good.pubtator"
    path.write_text(good, encoding="utf-8")
    document = next(iter(read_documents([path])))
    assert len(document.existing_annotations()) == 2
    assert [r.raw for r in document.relations] == ["1\tCID\tD1\tD2", "1\tAssociation\t7157\tD009369\tNovel"]
    bad = tmp_path / "bad.pubtator"
    bad.write_text(good.replace("1\t14\t18\tmice", "1\t1 4\t18\tmice"), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad.pubtator:4: PMID 1: malformed line: an annotation whose start "
                                              r"'1 4' is not an integer"):
        list(read_documents([bad]))


# The four quirks of GNormPlus's test set that made biozoo refuse whole documents, and how a
# PubTator line records each: case, quotes, a doubled apostrophe, a span shorter than its mention.
QUIRKS = [
    ("Intersex genes", "intersex", 0, 8),
    ("The TATA box binds.", '"TATA" box', 4, 12),
    ("Crohn's disease genes", "Crohn''s disease", 0, 15),
    ("The p53 protein acts.", "p53 protein", 4, 7),
]


def _quirky_pubtator(tmp_path):
    blocks = []
    for i, (title, mention, start, end) in enumerate(QUIRKS):
        pmid = 7000 + i
        blocks.append(f"{pmid}|t|{title}\n{pmid}|a|An abstract.\n{pmid}\t{start}\t{end}\t{mention}\tGene\t1\n"
                      f"{pmid}\t{len(title) + 1}\t{len(title) + 3}\tAn\tGene\t2\n\n")
    path = tmp_path / "gnormplus_like.pubtator"
    path.write_text("".join(blocks), encoding="utf-8")
    return path


def test_quirks_keep_the_document_and_warn_about_the_one_annotation(tmp_path):
    path = _quirky_pubtator(tmp_path)
    warnings = []
    stream = read_documents([path], on_warning=warnings.append)
    documents = list(stream)
    assert [d.id for d in documents] == ["7000", "7001", "7002", "7003"]
    for document, (title, *_) in zip(documents, QUIRKS):
        assert document.text.startswith(title)
        assert [a.text for a in document.existing_annotations()] == ["An"]  # the fitting one is kept
    assert stream.dropped == 4 and len(warnings) == 4
    assert warnings[0].startswith(f"{path}:3: PMID 7000: annotation 0-8 'intersex' does not match the text there: "
                                  "'Intersex'")
    with pytest.raises(DataFormatError, match=r"gnormplus_like.pubtator:3: PMID 7000"):
        list(read_documents([path], strict=True))
    skipped = []
    strict = read_documents([path], strict=True, skip_bad=True, on_skip=skipped.append)
    assert list(strict) == [] and len(skipped) == 4


@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json", "jsonl"])
def test_quirks_in_every_format_with_annotations(tmp_path, fmt):
    from biozoo.documents import write_documents

    source = list(read_documents([_quirky_pubtator(tmp_path)], on_warning=lambda m: None))
    for document, (title, mention, start, end) in zip(source, QUIRKS):  # put the quirky mention back
        from biozoo.documents import Annotation

        document.passages[0].annotations.append(Annotation(start, end, "Gene", mention, id="q"))
    path = tmp_path / f"quirks.{fmt}"
    write_documents(source, path, fmt)
    warnings = []
    stream = read_documents([path], on_warning=warnings.append)
    assert [d.id for d in stream] == ["7000", "7001", "7002", "7003"] and stream.dropped == 4
    assert all("does not match the text there" in w and "document 700" in w for w in warnings)
    with pytest.raises(DataFormatError, match="does not match"):
        list(read_documents([path], strict=True))


def test_annotate_counts_the_dropped_annotations_in_its_summary(kit, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert main(ANNOTATE + [str(kit.ner_model), str(_quirky_pubtator(tmp_path)), "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert ids(out) == ["7000", "7001", "7002", "7003"]
    assert err.count("that annotation is dropped, the document kept") == 4
    assert "4 input annotation(s) dropped" in err


@pytest.mark.parametrize("name, fmt", [("out.bioc.xml", "bioc-xml"), ("out.xml", "bioc-xml"),
                                       ("out.bioc.json", "bioc-json"), ("out.pubtator", "pubtator"),
                                       ("out.PubTator", "pubtator"), ("out.jsonl", "jsonl"),
                                       ("out.jsonl.gz", "jsonl"), ("out.bioc.xml.gz", "bioc-xml"), ("out", "jsonl")])
def test_the_output_format_follows_the_extension(kit, tmp_path, name, fmt):
    from biozoo.documents import detect_format, output_format_for, write_documents

    out = tmp_path / name
    assert output_format_for(out) == fmt
    write_documents(read_documents([kit.pubtator]), out, output_format_for(out))
    assert detect_format(str(out)) == fmt and len(list(read_documents([out]))) == 3


def test_annotate_writes_bioc_xml_to_a_bioc_xml_file(kit, tmp_path):
    import bioc

    out = tmp_path / "out.bioc.xml"
    assert main(ANNOTATE + [str(kit.ner_model), str(kit.pubtator), "--output", str(out)]) == 0
    with open(out, encoding="utf-8") as f:  # bioc's own reader: BioC XML, not JSON lines
        assert [d.id for d in bioc.biocxml.load(f).documents] == ["1000", "1001", "1002"]


def test_an_input_is_never_the_output(kit, tmp_path):
    source = tmp_path / "abstracts.pubtator"
    source.write_text(kit.pubtator.read_text(encoding="utf-8"), encoding="utf-8")
    before = source.read_bytes()
    assert main(ANNOTATE + [str(kit.ner_model), str(source), "--output", str(source)]) == 2
    assert main(ANNOTATE + [str(kit.ner_model), str(source), "--output", str(source), "--output-format",
                            "pubtator"]) == 2
    assert source.read_bytes() == before


@pytest.mark.slow
def test_beam_keeps_quirky_documents_and_counts_the_dropped_annotations(kit, tmp_path):
    pytest.importorskip("apache_beam")
    out = tmp_path / "shards"
    assert main(["annotate", "--no-progress", "--runner", "beam", "--model", str(kit.ner_model),
                 str(_quirky_pubtator(tmp_path)), "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["annotated"] == 4 and summary["dead_lettered"] == 0 and summary["annotations_dropped"] == 4


def test_a_cut_pubmed_xml_gz_keeps_every_complete_article(tmp_path):
    head = '<?xml version="1.0"?>\n<PubmedArticleSet>\n'
    articles = [f"<PubmedArticle><MedlineCitation><PMID>{100 + i}</PMID><Article><ArticleTitle>Title {i}."
                f"</ArticleTitle><Abstract><AbstractText>{'Genes and cancer. ' * 80}</AbstractText></Abstract>"
                "</Article></MedlineCitation></PubmedArticle>\n" for i in range(40)]
    data, ends = flushed_gzip([head] + articles)
    path = tmp_path / "pubmed25n0001.xml.gz"
    path.write_bytes(data[:(ends[20] + ends[21]) // 2])  # in the middle of the 21st article
    skipped = []
    stream = read_documents([path], skip_bad=True, on_skip=skipped.append)
    assert [d.id for d in stream] == [str(100 + i) for i in range(20)]
    assert len(skipped) == 1 and "broken gzip data" in skipped[0]
