"""The linker and the document linker: each step (exact, normalized, dense, sparse) gives the
id a hand-made dictionary says; below the threshold no id; genes are searched within their
taxon (the nearest species mention's), and a taxon the dictionary lacks gives none; concept
ids reach PubTator's id column, BioC's identifier infon and JSONL; abbreviations are used and
written."""

import json
import re

import numpy as np
import pytest

from biozoo.documents import Annotation, Document, Passage, read_documents, write_documents
from biozoo.linking import DocumentLinker, Linker, assign_taxa, parse_link_spec
from biozoo.linking.concepts import Concept, Dictionary
from biozoo.linking.evaluation import evaluate_linking
from biozoo.linking.species import GENE_TAXON, most_frequent


class KeyEncoder:
    """A stand-in encoder: a name's vector counts its known words on fixed axes (other words count
    nothing), normalized, so the expected neighbours are known by hand."""

    identity, pooling, max_length = "key-encoder", "cls", 25
    AXES = {"heart": 0, "attack": 1, "myocardial": 0, "infarction": 1, "breast": 2, "cancer": 3, "tumour": 3,
            "carcinoma": 3, "p53": 4, "tp53": 4, "tumor": 5, "protein": 6, "wilson": 7, "hepatolenticular": 7}

    def encode(self, names, batch_size=256, progress=False):
        out = np.zeros((len(names), 8), np.float32)
        for i, name in enumerate(names):
            for word in name.lower().replace("-", " ").split():
                if word in self.AXES:
                    out[i, self.AXES[word]] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def diseases():
    return Dictionary([Concept("D009203", "Myocardial Infarction", ("heart attack",), "Disease"),
                       Concept("D001943", "Breast Neoplasms", ("breast cancer",), "Disease"),
                       Concept("D006527", "Hepatolenticular Degeneration", ("Wilson disease",), "Disease")],
                      "toy-diseases", "1")


def genes():
    return Dictionary([Concept("7157", "TP53", ("tumor protein p53", "p53"), "Gene", "9606"),
                       Concept("22059", "Trp53", ("p53",), "Gene", "10090"),
                       Concept("852457", "CDC28", ("CDK1",), "Gene", "559292")], "toy-genes", "1")


def test_each_step_of_the_linker():
    linker = Linker(diseases(), KeyEncoder(), threshold=0.6, progress=False)
    links = linker.link(["heart attack", "HEART-ATTACK", "infarction of the myocardial", "breast carcinoma", "a dog"])
    assert [(l.id, l.method) for l in links] == [("D009203", "exact"), ("D009203", "normalized"),
                                                  ("D009203", "dense"), ("D001943", "dense"), (None, "none")]
    assert links[0].name == "heart attack" and links[0].score == 1.0 and links[0].dictionary == "toy-diseases@1"
    assert links[3].name == "breast cancer" and links[3].score == pytest.approx(1.0)  # {breast, cancer/carcinoma}
    assert links[4].name is not None and links[4].score < 0.6  # the nearest name is kept, not its id


def test_without_an_encoder_char_trigrams_link():
    linker = Linker(diseases(), None, progress=False)
    links = linker.link(["Wilson's disease", "breast cancers", "xyz"])
    assert [(l.id, l.method) for l in links] == [("D006527", "sparse"), ("D001943", "sparse"), (None, "none")]


def test_sparse_weight_adds_the_char_trigram_score():
    linker = Linker(diseases(), KeyEncoder(), threshold=0.0, sparse_weight=0.5, progress=False)
    link = linker.link(["breast carcinoma"])[0]
    assert link.score == pytest.approx(1.0 + 0.5 * linker.sparse.similarity("breast carcinoma", "breast cancer"))


def test_genes_are_searched_within_their_taxon():
    linker = Linker(genes(), KeyEncoder(), threshold=0.5, progress=False)
    assert linker.by_taxon
    links = linker.link(["p53", "p53", "p53", "TP53 protein"], taxa=["9606", "10090", "7227", "9606"])
    assert [(l.id, l.method) for l in links] == [("7157", "exact"), ("22059", "exact"), (None, "no-taxon"),
                                                  ("7157", "dense")]
    assert Linker(genes(), KeyEncoder(), progress=False).link(["p53"])[0].alternatives == ("22059",)
    # "TP53" is exact only in the human genes' rows; within the mouse's it is found by normalizing ("Tp53")
    mouse = Linker(Dictionary([*genes().concepts, Concept("22060", "Tp53", (), "Gene", "10090")], "g", "1"),
                   KeyEncoder(), threshold=0.5, progress=False)
    assert [(l.id, l.method) for l in mouse.link(["TP53", "tp53"], taxa=["10090", "10090"])] == [
        ("22060", "normalized"), ("22060", "normalized")]


def test_species_rules():
    species = [(0, 5, "9606"), (40, 45, "10090"), (90, 95, "10090")]
    genes_at = [(8, 12), (30, 38), (100, 104)]
    assert assign_taxa(genes_at, species, "nearest") == ["9606", "10090", "10090"]
    assert assign_taxa(genes_at, species, "frequent") == ["10090"] * 3
    assert assign_taxa(genes_at, species, "human") == ["9606"] * 3
    assert assign_taxa(genes_at, species, "preceding", sentences=[(0, 20), (20, 60), (60, 120)]) == \
        ["9606", "10090", "10090"]  # (30, 38) has none before it in its sentence: the most frequent
    assert assign_taxa(genes_at, [], "nearest") == ["9606"] * 3
    assert most_frequent([(0, 1, "1"), (5, 6, "2")]) == "1"  # a tie: the first mentioned
    assert assign_taxa([(10, 14)], [(0, 5, "9606"), (15, 20, "10090")], "nearest") == ["10090"]  # 1 char vs 5
    assert GENE_TAXON["4932"] == "559292"


def document(text, *mentions, fmt="pubtator"):
    doc = Document("1", [Passage(0, text)], source_format=fmt)
    for start, end, kind in mentions:
        doc.predictions.append(Annotation(start, end, kind, text[start:end], score=0.9, model="m"))
    return doc


def test_the_document_linker_uses_abbreviations_species_and_writes_every_format(tmp_path):
    text = "Heart attack (HA) in mice: p53 rose with HA; in yeast CDK1 did not."
    species = Dictionary([Concept("10090", "Mus musculus", ("mice", "mouse"), "Species", "10090"),
                          Concept("4932", "Saccharomyces cerevisiae", ("yeast",), "Species", "4932")], "toy-taxa", "1")
    linker = DocumentLinker([(("Disease",), Linker(diseases(), KeyEncoder(), threshold=0.6, progress=False)),
                             (("Species",), Linker(species, None, progress=False)),
                             (("Gene",), Linker(genes(), KeyEncoder(), threshold=0.5, progress=False))],
                            abbreviations="schwartz-hearst", write_abbreviations=True)
    at = {word: (text.index(word, 20), text.index(word, 20) + len(word)) for word in ("HA", "mice", "p53", "yeast", "CDK1")}
    doc = document(text, (*at["HA"], "Disease"), (*at["mice"], "Species"), (*at["p53"], "Gene"),
                   (*at["yeast"], "Species"), (*at["CDK1"], "Gene"))
    linker.link_documents([doc])
    found = {(a.text, a.type): a for a in doc.predictions}
    ha = found[("HA", "Disease")]
    assert ha.concept_id == "D009203" and ha.infons["link_query"] == "Heart attack"
    assert ha.infons["link_method"] == "normalized" and ha.infons["dictionary"] == "toy-diseases@1"  # "heart attack"
    assert found[("mice", "Species")].concept_id == "10090"
    p53 = found[("p53", "Gene")]
    assert p53.concept_id == "22059" and p53.infons["taxon"] == "10090"  # the mouse's, not the human TP53
    assert found[("CDK1", "Gene")].concept_id == "852457" and found[("CDK1", "Gene")].infons["taxon"] == "559292"
    assert found[("HA", "ShortForm")].infons["long_form"] == "Heart attack" and ("Heart attack", "LongForm") in found
    assert (linker.mentions, linker.linked) == (5, 5)

    write_documents([doc], str(tmp_path / "out.pubtator"), "pubtator")
    lines = [l.split("\t") for l in (tmp_path / "out.pubtator").read_text().splitlines()[2:] if l]
    assert ["1", str(at["HA"][0]), str(at["HA"][1]), "HA", "Disease", "D009203"] in lines
    write_documents([doc], str(tmp_path / "out.xml"), "bioc-xml")
    back = next(iter(read_documents([str(tmp_path / "out.xml")])))
    p53_back = next(a for a in back.predictions if a.text == "p53")  # BioC reads biozoo's predictions back apart
    assert p53_back.infons["identifier"] == "22059" and p53_back.infons["link_name"] == "p53"
    # the abbreviation as BioC's abbreviation corpora write it: a relation joins its two forms (read
    # back as the ShortForm's infons, the relation rebuilt by the writer)
    xml = (tmp_path / "out.xml").read_text()
    by_id = {a.id: a for a in back.predictions}
    nodes = re.findall(r'<node refid="([^"]+)" role="([^"]+)"', xml)
    assert '<infon key="type">ABBR</infon>' in xml and [(by_id[refid].text, by_id[refid].type, role)
                                                        for refid, role in nodes] == [
        ("HA", "ShortForm", "ShortForm"), ("Heart attack", "LongForm", "LongForm")]
    assert back.relations == [] and by_id[nodes[0][0]].infons["long_form"] == "Heart attack"
    write_documents([doc], str(tmp_path / "out.jsonl"), "jsonl")
    record = json.loads((tmp_path / "out.jsonl").read_text())
    ha_json = next(p for p in record["predictions"] if p["text"] == "HA" and p["type"] == "Disease")
    assert ha_json["concept_id"] == "D009203" and ha_json["infons"]["link_score"] == "1.0000"


def test_a_missing_species_linker_is_said_and_stale_ids_go():
    text = "In mice p53 rose."
    gene_linker = Linker(genes(), KeyEncoder(), threshold=0.5, progress=False)
    only_genes = DocumentLinker([(("Gene",), gene_linker)], abbreviations=None)
    with pytest.warns(UserWarning, match="no dictionary links Species mentions"):
        only_genes.link_documents([document(text, (8, 11, "Gene"))])
    doc = document(text, (8, 11, "Gene"))
    doc.passages[0].annotations.append(Annotation(3, 7, "Species", "mice", concept_id="10090"))  # the input's id
    only_genes.link_documents([doc])
    assert doc.predictions[0].infons["taxon"] == "10090" and doc.predictions[0].concept_id == "22059"
    relinked = document(text, (8, 11, "Gene"))
    relinked.predictions[0].concept_id = "stale"
    DocumentLinker([(("Gene",), Linker(genes(), KeyEncoder(), threshold=0.99, progress=False, by_taxon=False))],
                   abbreviations=None).link_documents([document("x", (0, 1, "Gene")), relinked])
    assert relinked.predictions[0].concept_id == "7157"
    below = document("xyz", (0, 3, "Gene"))
    below.predictions[0].concept_id = "stale"
    DocumentLinker([(("Gene",), Linker(genes(), None, progress=False, by_taxon=False))],
                   abbreviations=None).link_documents([below])
    assert below.predictions[0].concept_id is None and below.predictions[0].infons["link_method"] == "none"


def test_linking_a_runs_output_again_replaces_its_links_and_abbreviations(tmp_path):
    """A run's JSONL output annotated again: the abbreviations it wrote are not doubled, and an
    annotation linked again keeps nothing of the earlier link (name, score, query) it no longer has."""
    text = "Wilson disease (WD) is rare. WD patients."
    first = document(text, (29, 31, "Disease"))
    DocumentLinker([(("Disease",), Linker(diseases(), None, progress=False))], abbreviations="schwartz-hearst",
                   write_abbreviations=True).link_documents([first])
    linked = first.predictions[[a.type for a in first.predictions].index("Disease")]
    assert linked.concept_id == "D006527" and linked.infons["link_query"] == "Wilson disease"
    write_documents([first], str(tmp_path / "first.jsonl"), "jsonl")
    (again,) = read_documents([str(tmp_path / "first.jsonl")])
    nothing = Dictionary([Concept("D0", "Zebra fever", (), "Disease")], "other", "2")
    DocumentLinker([(("Disease",), Linker(nothing, None, threshold=0.99, progress=False))],
                   abbreviations="schwartz-hearst", write_abbreviations=True).link_documents([again])
    kinds = sorted(a.type for a in again.predictions)
    assert kinds == ["Disease", "LongForm", "ShortForm"], kinds
    relinked = next(a for a in again.predictions if a.type == "Disease")
    assert relinked.concept_id is None
    assert {k: v for k, v in relinked.infons.items() if k.startswith("link_") or k == "dictionary"} == {
        "link_method": "none", "dictionary": "other@2", "link_query": "Wilson disease"}


def test_evaluate_linking_expands_each_documents_own_abbreviations_when_two_share_an_id():
    def gold(text, concept_id):  # two files, one PMID
        at = text.rindex("WD")
        return Document("1", [Passage(0, text, annotations=[Annotation(at, at + 2, "Disease", "WD",
                                                                       concept_id=concept_id)])],
                        source_format="pubtator")

    dictionary = Dictionary([Concept("D006527", "Wilson disease", (), "Disease"),
                             Concept("D015223", "Wolman disease", (), "Disease")], "two", "1")
    documents = [gold("Wilson disease (WD) is rare. WD.", "D006527"), gold("Wolman disease (WD) is rare. WD.", "D015223")]
    result = evaluate_linking(Linker(dictionary, None, progress=False), documents, details=True)
    assert [m[6] for m in result["mentions_linked"]] == ["D006527", "D015223"] and result["accuracy"] == 100.0


def sapbert_check_label(predicted_label, gold_label):
    """SapBERT's `check_label` (cambridgeltl/sapbert, evaluation): correct when the "|"-split
    predicted and gold labels share an id."""
    return len(set(predicted_label.split("|")).intersection(set(gold_label.split("|")))) > 0


def test_a_gold_id_among_the_predicted_concepts_alternate_ids_is_correct():
    dictionary = Dictionary([Concept("D006527", "Hepatolenticular Degeneration", ("Wilson disease",), "Disease",
                                     alt_ids=("DO:DOID:893", "OMIM:277900")),
                             Concept("D009203", "Myocardial Infarction", ("heart attack",), "Disease")], "ctd", "1")
    text = "Wilson disease and heart attack."
    gold = [(0, 14, "OMIM:277900"), (19, 31, "D006527"), (0, 14, "OMIM:999999")]
    documents = [Document(str(i), [Passage(0, text, annotations=[Annotation(start, end, "Disease", text[start:end],
                                                                            concept_id=gold_id)])], source_format="pubtator")
                 for i, (start, end, gold_id) in enumerate(gold)]
    result = evaluate_linking(Linker(dictionary, None, progress=False), documents, details=True)
    # BioSyn's CTD dictionary labels a concept "ID|AltIDs"; SapBERT's check_label compares those labels
    labels = {"D006527": "D006527|DO:DOID:893|OMIM:277900", "D009203": "D009203"}
    expected = [sapbert_check_label(labels[m[6]], m[5]) for m in result["mentions_linked"]]
    assert expected == [True, False, False]  # heart attack is not Wilson disease
    assert result["correct"] == sum(m["correct"] for m in result["methods"].values()) == sum(expected)
    assert result["top1_accuracy"] == result["accuracy"] == round(100 * sum(expected) / 3, 2)
    assert [m[6] for m in result["mentions_linked"]] == ["D006527", "D009203", "D006527"]  # annotations: the id


def pubtator_composite_ids(path):
    """Gold annotations of a PubTator file whose id column joins several ids with "|", counted
    from the raw lines."""
    rows = [line.rstrip("\n").split("\t") for line in open(path, encoding="utf-8")]
    return sum(1 for row in rows if len(row) >= 6 and "|" in row[5])


def test_composite_gold_mentions_are_counted(tmp_path):
    path = tmp_path / "gold.PubTator"
    path.write_text("1|t|Breast and ovarian cancer and Wilson disease.\n1|a|\n"
                    "1\t0\t25\tBreast and ovarian cancer\tCompositeMention\tD001943|D010051\n"
                    "1\t30\t44\tWilson disease\tSpecificDisease\tD006527\n\n")
    dictionary = Dictionary([Concept("D001943", "breast cancer"), Concept("D006527", "Wilson disease")], "toy", "1")
    result = evaluate_linking(Linker(dictionary, None, progress=False), list(read_documents(str(path))))
    assert result["composite_gold"] == pubtator_composite_ids(path) == 1


def test_composite_gold_mentions_of_ncbi_disease_are_counted(shared_data):
    from biozoo.linking.evaluation import dictionary_from_documents

    path = shared_data / "documents" / "NCBIdisease_Test.PubTator"
    documents = list(read_documents(str(path)))
    result = evaluate_linking(Linker(dictionary_from_documents(documents, "self"), None, progress=False), documents)
    assert result["composite_gold"] == pubtator_composite_ids(path) == 15


def test_a_species_mention_with_several_ids_gives_its_genes_the_first():
    doc = document("In mice p53 rose.", (8, 11, "Gene"))
    doc.passages[0].annotations.append(Annotation(3, 7, "Species", "mice", concept_id="10090|9606"))
    with pytest.warns(UserWarning, match="no dictionary links Species mentions"):
        DocumentLinker([(("Gene",), Linker(genes(), KeyEncoder(), threshold=0.5, progress=False))],
                       abbreviations=None).link_documents([doc])
    assert doc.predictions[0].infons["taxon"] == "10090" and doc.predictions[0].concept_id == "22059"


def test_a_dictionary_of_one_species_genes_links_within_it_where_no_species_is_named():
    """`ncbi-gene:10090` on a text that names no species: its genes are the mouse's, not a
    human fallback the dictionary does not hold (which linked nothing)."""
    mouse = Dictionary([c for c in genes().concepts if c.taxon == "10090"], "toy-genes:10090", "1")
    linker = Linker(mouse, KeyEncoder(), threshold=0.5, progress=False)
    assert linker.only_taxon == "10090" and Linker(genes(), None, progress=False).only_taxon is None
    doc = document("The p53 rose.", (4, 7, "Gene"))
    with pytest.warns(UserWarning, match="no dictionary links Species mentions"):
        DocumentLinker([(("Gene",), linker)], abbreviations=None).link_documents([doc])
    assert doc.predictions[0].concept_id == "22059" and doc.predictions[0].infons["taxon"] == "10090"
    gold = Document("1", [Passage(0, "The p53 rose.", annotations=[
        Annotation(4, 7, "Gene", "p53", concept_id="22059")])], source_format="pubtator")
    assert evaluate_linking(linker, [gold])["correct"] == 1


def test_evaluate_linking_searches_genes_in_the_gold_species_and_scores_the_dictionarys_types():
    text = "In mice p53 rose; aspirin did not."
    doc = Document("1", [Passage(0, text, annotations=[
        Annotation(3, 7, "Species", "mice", concept_id="10090"), Annotation(8, 11, "Gene", "p53", concept_id="22059"),
        Annotation(18, 25, "Chemical", "aspirin", concept_id="D001241")])], source_format="pubtator")
    result = evaluate_linking(Linker(genes(), KeyEncoder(), threshold=0.5, progress=False), [doc])
    assert result["types"] == ["Gene"] and (result["correct"], result["mentions"]) == (1, 1)  # the mouse gene
    assert evaluate_linking(Linker(genes(), KeyEncoder(), threshold=0.5, progress=False), [doc], taxon_rule="human")[
        "correct"] == 0


def test_link_specs():
    assert parse_link_spec("ctd-diseases") == (None, "ctd-diseases")
    assert parse_link_spec("Disease,SpecificDisease=./my dict.tsv") == (("Disease", "SpecificDisease"), "./my dict.tsv")
    with pytest.raises(ValueError, match="TYPE"):
        parse_link_spec("=x")
