"""The dictionary readers on files in the sources' real formats: every concept, id, name and
taxon as the fixture holds it (expected values written by hand from the fixture text), and
unreadable files refused with the file (and line) named."""

import gzip
import hashlib

import pytest

from biozoo.errors import DataFormatError
from biozoo.linking.concepts import Concept, Dictionary
from biozoo.linking.formats import read_concepts


def concepts(fmt, paths, **options):
    return {c.id: c for c in read_concepts(fmt, [str(p) for p in paths], options)}


def test_mesh_descriptors_and_supplementary_records(source_files):
    found = concepts("mesh-xml", [source_files["desc2025.gz"], source_files["supp2025.gz"]])
    assert found["D003924"] == Concept("D003924", "Diabetes Mellitus, Type 2", ("Type 2 Diabetes Mellitus", "NIDDM"),
                                       "Disease")  # the permuted term and the pharmacological action's name are not names
    assert found["D001241"] == Concept("D001241", "Aspirin", ("Acetylsalicylic Acid",), "Chemical")
    assert found["C000002"].synonyms == ("bevonium methyl sulfate",) and found["C000002"].type == "Chemical"
    assert found["C536210"].type == "Disease"


def test_mesh_trees_and_classes_choose_what_a_dictionary_holds(source_files):
    paths = [source_files["desc2025.gz"], source_files["supp2025.gz"]]
    assert set(concepts("mesh-xml", paths, trees=["C", "F03"], scr_classes=["3"])) == {"D003924", "D008881", "C536210"}
    assert set(concepts("mesh-xml", paths, trees=["D"], scr_classes=["1"])) == {"D001241", "C000002"}


def test_ctd_vocabularies(source_files):
    diseases = concepts("ctd-tsv", [source_files["CTD_diseases.tsv.gz"]], strip_prefix="MESH:")
    assert diseases["D006527"] == Concept("D006527", "Hepatolenticular Degeneration",
                                          ("Wilson Disease", "Wilson's Disease", "Hepatolenticular Degenerations"), "Disease",
                                          alt_ids=("DO:DOID:893", "OMIM:277900"))  # AltDiseaseIDs
    assert diseases["OMIM:225750"].synonyms == ("AGS1", "Aicardi Goutieres Syndrome")  # OMIM ids keep their prefix
    chemicals = concepts("ctd-tsv", [source_files["CTD_chemicals.tsv.gz"]], strip_prefix="MESH:")
    assert chemicals["D001241"].synonyms == ("Acetylsalicylic Acid", "2-(Acetyloxy)benzoic Acid")
    assert {c.type for c in chemicals.values()} == {"Chemical"}
    assert {c.alt_ids for c in chemicals.values()} == {()}  # CTD_chemicals has no alternate-id column


def test_ctds_alternate_disease_ids_are_kept_as_biosyns_preprocessing_keeps_them(tmp_path):
    path = tmp_path / "CTD_diseases.tsv"  # a retired MeSH id merged into a concept is written MESH:, as the id
    path.write_text("# Fields:\n# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\t"
                    "ParentTreeNumbers\tSynonyms\tSlimMappings\n"
                    "Breast Neoplasms\tMESH:D001943\tDO:DOID:1612|MESH:D001941|OMIM:114480\t\t\t\t\tBreast Cancer\t\n"
                    "Migraine Disorders\tMESH:D008881\t\t\t\t\t\tMigraine\t\n")
    found = concepts("ctd-tsv", [path], strip_prefix="MESH:")
    # BioSyn's ctd_preprocess joins the row's ID and AltIDs with "|": the concept's ids, prefixes stripped alike
    assert found["D001943"].all_ids() == "|".join(["D001943", "DO:DOID:1612", "D001941", "OMIM:114480"])
    assert found["D008881"].alt_ids == () and found["D008881"].all_ids() == "D008881"


def test_gene_info_with_taxa(source_files):
    genes = concepts("gene-info", [source_files["gene_info.gz"]])
    assert genes["7157"] == Concept("7157", "TP53", ("BCC7", "LFS1", "P53", "TRP53", "tumor protein p53"), "Gene", "9606")
    assert genes["852457"].taxon == "559292"
    assert set(concepts("gene-info", [source_files["gene_info.gz"]], taxa=["10090"])) == {"22059"}
    designations = concepts("gene-info", [source_files["gene_info.gz"]], designations=True)
    assert "phosphoprotein p53" in designations["7157"].synonyms


@pytest.mark.parametrize("archive", ["taxdmp_2025-01-01.zip", "taxdump.tar.gz"])
def test_taxonomy_names_inside_the_archive(source_files, archive):
    taxa = concepts("taxdump", [source_files[archive]])
    assert taxa["9606"] == Concept("9606", "Homo sapiens", ("human",), "Species", "9606")  # the authority is no name
    assert taxa["10090"].synonyms == ("house mouse", "mouse")
    assert taxa["4932"].synonyms == ("baker's yeast", "S. cerevisiae")  # "in-part" names are not names of it


def test_cellosaurus(source_files):
    lines = concepts("cellosaurus", [source_files["cellosaurus.txt"]])
    assert lines["CVCL_0030"] == Concept("CVCL_0030", "HeLa", ("HeLa-CCL2", "Henrietta Lacks cells", "HELA"),
                                         "CellLine", "9606")
    assert lines["CVCL_0594"].taxon == "10090"


def test_a_users_own_tsv_and_biosyns_format(tmp_path):
    tsv = tmp_path / "mine.tsv"
    tsv.write_text("id\tname\n# a comment\nX1\tfoo bar\nX2\tbaz\tDisease\nX1\tFoo-bar\n")
    found = concepts("tsv", [tsv])
    assert found == {"X1": Concept("X1", "foo bar", ("Foo-bar",)), "X2": Concept("X2", "baz", (), "Disease")}
    commented = tmp_path / "commented.tsv"  # the header after a comment is a header still, CRLF lines too
    commented.write_bytes(b"# my diseases\r\nid\tname\r\nX1\tfoo bar\r\n")
    assert concepts("tsv", [commented]) == {"X1": Concept("X1", "foo bar", ())}
    commented.write_bytes(b"# old Mac lines\rid\tname\rX1\tfoo bar\rX2\tbaz\r")
    assert concepts("tsv", [commented]) == {"X1": Concept("X1", "foo bar", ()), "X2": Concept("X2", "baz", ())}
    biosyn = tmp_path / "dict.txt"
    biosyn.write_text("D001||first name\nD001||second name\nD002|OMIM:1||composite id\n")
    found = concepts("biosyn", [biosyn])
    assert found["D001"].all_names() == ["first name", "second name"] and "D002|OMIM:1" in found


@pytest.mark.parametrize("name, cut", [("CTD_diseases.tsv.gz", 0.6), ("gene_info.gz", 0.5), ("desc2025.gz", 0.7)])
def test_a_truncated_gzip_file_is_refused_naming_it(source_files, tmp_path, name, cut):
    data = source_files[name].read_bytes()
    broken = tmp_path / name
    broken.write_bytes(data[: int(len(data) * cut)])
    fmt = {"CTD_diseases.tsv.gz": "ctd-tsv", "gene_info.gz": "gene-info", "desc2025.gz": "mesh-xml"}[name]
    with pytest.raises(DataFormatError, match=str(broken)):
        list(read_concepts(fmt, [str(broken)]))


def test_truncated_cellosaurus_and_malformed_rows_name_file_and_line(source_files, tmp_path):
    text = source_files["cellosaurus.txt"].read_text()
    cut = tmp_path / "cellosaurus.txt"
    cut.write_text(text[: text.rindex("//")])
    with pytest.raises(DataFormatError, match=r"cellosaurus.txt:\d+: entry 'NIH 3T3' has no closing '//'"):
        list(read_concepts("cellosaurus", [str(cut)]))
    bad = tmp_path / "bad.tsv"
    bad.write_text("X1\tfine\nonly-an-id\n")
    with pytest.raises(DataFormatError, match=r"bad.tsv:2: expected id"):
        list(read_concepts("tsv", [str(bad)]))
    windows = tmp_path / "cp1252.tsv"  # the line and byte that are not UTF-8, not a decoder chunk's offset
    windows.write_bytes(b"X1\tfine\n" * 3000 + b"X2\tCrohn\x92s disease\n")
    with pytest.raises(DataFormatError, match=r"cp1252.tsv:3001: not UTF-8 \(byte 0x92 at column 9\)"):
        list(read_concepts("tsv", [str(windows)]))
    headerless = tmp_path / "CTD_x.tsv"
    headerless.write_text("Aspirin\tMESH:D001241\n")
    with pytest.raises(DataFormatError, match=r"CTD_x.tsv:1: no '# Fields:' header"):
        list(read_concepts("ctd-tsv", [str(headerless)]))


BOM = "\ufeff".encode()  # the UTF-8 byte order mark Excel and many Windows tools begin a file with


@pytest.mark.parametrize("fmt, text", [
    ("tsv", "D006527\tWilson disease\nD009203\theart attack\n"),
    ("tsv", "id\tname\nD006527\tWilson disease\nD009203\theart attack\n"),  # the header is still a header
    ("biosyn", "D006527||Wilson disease\nD009203||heart attack\n"),
])
def test_a_byte_order_mark_is_no_part_of_the_first_id(tmp_path, fmt, text):
    path = tmp_path / "excel.txt"
    path.write_bytes(BOM + text.encode())
    assert concepts(fmt, [path]) == {"D006527": Concept("D006527", "Wilson disease"),
                                     "D009203": Concept("D009203", "heart attack")}
    path.write_bytes(gzip.compress(BOM + text.encode()))
    assert set(concepts(fmt, [path])) == {"D006527", "D009203"}


def test_a_byte_order_mark_before_ctds_header(source_files, tmp_path):
    path = tmp_path / "CTD_chemicals.tsv"
    path.write_bytes(BOM + gzip.decompress(source_files["CTD_chemicals.tsv.gz"].read_bytes()))
    assert set(concepts("ctd-tsv", [path])) == {"D001241", "C000002"}


def test_the_concept_table_round_trips_byte_for_byte(tmp_path, source_files):
    table = Dictionary(read_concepts("ctd-tsv", [str(source_files["CTD_diseases.tsv.gz"])]), "ctd", "v1")
    table.write_tsv(tmp_path / "a.tsv.gz")
    again = Dictionary.read_tsv(tmp_path / "a.tsv.gz")
    assert again.concepts == table.concepts and again.label == "ctd@v1" and again.digest() == table.digest()
    assert again.concept("D006527").alt_ids == ("DO:DOID:893", "OMIM:277900")
    again.write_tsv(tmp_path / "b.tsv.gz")
    assert (tmp_path / "a.tsv.gz").read_bytes() == (tmp_path / "b.tsv.gz").read_bytes()
    assert gzip.decompress((tmp_path / "a.tsv.gz").read_bytes()).decode().count("\n") == len(table) + 2


def test_a_table_without_alt_ids_keeps_the_digest_it_had_before_that_column():
    """The digest keys every cached dense index: the alt_ids column changed it for every
    dictionary, so that all of them (NCBI Gene: hours) were embedded again."""
    concepts = [Concept("7157", "TP53", ("p53", "tumor protein p53"), "Gene", "9606"),
                Concept("D003920", "Diabetes Mellitus", (), "Disease")]
    old_form = ("# biozoo concept table\tgenes\t2024\n"  # the canonical TSV before alt_ids, written out by hand
                "id\ttype\ttaxon\tname\tsynonyms\n"
                '7157\tGene\t9606\tTP53\t["p53", "tumor protein p53"]\n'
                "D003920\tDisease\t\tDiabetes Mellitus\t[]\n")
    assert Dictionary(concepts, "genes", "2024").digest() == hashlib.sha256(old_form.encode()).hexdigest()
    tiny = Dictionary([Concept("7157", "TP53", ("p53",), "Gene", "9606")], "ncbi-gene", "2024")
    assert tiny.digest() == "d3f4e3b64d99a1c52de3813fc0f3871b61ddbd396bd5e6cce81cc86569fd9724"  # the old code's
    merged = [concepts[0], Concept("D003920", "Diabetes Mellitus", (), "Disease", alt_ids=("OMIM:222100",))]
    assert Dictionary(merged, "genes", "2024").digest() != Dictionary(concepts, "genes", "2024").digest()
    assert Dictionary(merged, "genes", "2024").digest() != Dictionary(
        [concepts[0], Concept("D003920", "Diabetes Mellitus", (), "Disease", alt_ids=("OMIM:222101",))],
        "genes", "2024").digest()


def test_a_table_written_before_the_alt_ids_column_is_read(tmp_path):
    path = tmp_path / "old.tsv.gz"
    path.write_bytes(gzip.compress(("# biozoo concept table\tmine\t1\n"
                                    "id\ttype\ttaxon\tname\tsynonyms\n"
                                    'D003920\tDisease\t\tDiabetes Mellitus\t["diabetes"]\n').encode()))
    table = Dictionary.read_tsv(path)
    assert table.concepts == [Concept("D003920", "Diabetes Mellitus", ("diabetes",), "Disease")]
    assert table.label == "mine@1" and table.concepts[0].alt_ids == ()
    path.write_bytes(gzip.compress(("# biozoo concept table\tmine\t1\n"
                                    "id\ttype\ttaxon\tname\tsynonyms\n"
                                    'D003920\tDisease\t\tDiabetes Mellitus\t["diabetes"]\t[]\n').encode()))
    with pytest.raises(DataFormatError, match=r"old.tsv.gz:3: expected 5 columns"):
        Dictionary.read_tsv(path)
    path.write_bytes(gzip.compress(b"# biozoo concept table\tmine\t1\nid\tname\n"))
    with pytest.raises(DataFormatError, match=r"old.tsv.gz:2: expected the columns .* got id, name"):
        Dictionary.read_tsv(path)


def test_names_are_grouped_by_taxon(source_files):
    table = Dictionary(read_concepts("gene-info", [str(source_files["gene_info.gz"])]), "genes", "v1")
    names = table.names()
    for taxon, (start, end) in names.taxon_ranges.items():
        assert {table.concepts[c].taxon for c in names.concepts[start:end]} == {taxon}
    assert sum(end - start for start, end in names.taxon_ranges.values()) == len(names)
