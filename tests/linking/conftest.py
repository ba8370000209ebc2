"""Small files in the dictionary sources' real formats (MeSH XML, CTD TSV, NCBI gene_info,
NCBI taxdump, Cellosaurus), as the real releases lay them out, and a tiny random BERT with
MiniLM's real vocabulary for encoder tests."""

import gzip
import io
import tarfile
import zipfile

import pytest

MESH_DESCRIPTORS = """<?xml version="1.0"?>
<!DOCTYPE DescriptorRecordSet SYSTEM "https://www.nlm.nih.gov/databases/dtd/nlmdescriptorrecordset_20250101.dtd">
<DescriptorRecordSet LanguageCode = "eng">
<DescriptorRecord DescriptorClass = "1">
 <DescriptorUI>D003924</DescriptorUI>
 <DescriptorName><String>Diabetes Mellitus, Type 2</String></DescriptorName>
 <PharmacologicalActionList>
  <PharmacologicalAction><DescriptorReferredTo><DescriptorUI>D000001</DescriptorUI>
   <DescriptorName><String>Not A Name Of It</String></DescriptorName></DescriptorReferredTo></PharmacologicalAction>
 </PharmacologicalActionList>
 <TreeNumberList><TreeNumber>C18.452.394.750.149</TreeNumber><TreeNumber>C19.246.300</TreeNumber></TreeNumberList>
 <ConceptList>
  <Concept PreferredConceptYN="Y">
   <ConceptUI>M0006150</ConceptUI><ConceptName><String>Diabetes Mellitus, Type 2</String></ConceptName>
   <TermList>
    <Term ConceptPreferredTermYN="Y" IsPermutedTermYN="N" LexicalTag="NON" RecordPreferredTermYN="Y">
     <TermUI>T011806</TermUI><String>Diabetes Mellitus, Type 2</String></Term>
    <Term ConceptPreferredTermYN="N" IsPermutedTermYN="N" LexicalTag="NON" RecordPreferredTermYN="N">
     <TermUI>T011807</TermUI><String>Type 2 Diabetes Mellitus</String></Term>
    <Term ConceptPreferredTermYN="N" IsPermutedTermYN="Y" LexicalTag="NON" RecordPreferredTermYN="N">
     <TermUI>T011808</TermUI><String>Mellitus, Type 2 Diabetes</String></Term>
   </TermList>
  </Concept>
  <Concept PreferredConceptYN="N">
   <ConceptUI>M0006151</ConceptUI><ConceptName><String>NIDDM</String></ConceptName>
   <TermList><Term ConceptPreferredTermYN="Y" IsPermutedTermYN="N" LexicalTag="ABB" RecordPreferredTermYN="N">
     <TermUI>T011810</TermUI><String>NIDDM</String></Term></TermList>
  </Concept>
 </ConceptList>
</DescriptorRecord>
<DescriptorRecord DescriptorClass = "1">
 <DescriptorUI>D001241</DescriptorUI>
 <DescriptorName><String>Aspirin</String></DescriptorName>
 <TreeNumberList><TreeNumber>D02.455.426.559.389.657.410.595.054</TreeNumber></TreeNumberList>
 <ConceptList><Concept PreferredConceptYN="Y"><ConceptUI>M0001787</ConceptUI><ConceptName><String>Aspirin</String></ConceptName>
  <TermList>
   <Term ConceptPreferredTermYN="Y" IsPermutedTermYN="N" LexicalTag="NON" RecordPreferredTermYN="Y"><TermUI>T003342</TermUI><String>Aspirin</String></Term>
   <Term ConceptPreferredTermYN="N" IsPermutedTermYN="N" LexicalTag="NON" RecordPreferredTermYN="N"><TermUI>T003343</TermUI><String>Acetylsalicylic Acid</String></Term>
  </TermList></Concept></ConceptList>
</DescriptorRecord>
<DescriptorRecord DescriptorClass = "1">
 <DescriptorUI>D008881</DescriptorUI>
 <DescriptorName><String>Migraine Disorders</String></DescriptorName>
 <TreeNumberList><TreeNumber>C10.228.140.546.399.750</TreeNumber></TreeNumberList>
 <ConceptList><Concept PreferredConceptYN="Y"><ConceptUI>M0013803</ConceptUI><ConceptName><String>Migraine Disorders</String></ConceptName>
  <TermList>
   <Term ConceptPreferredTermYN="Y" IsPermutedTermYN="N" LexicalTag="NON" RecordPreferredTermYN="Y"><TermUI>T025813</TermUI><String>Migraine Disorders</String></Term>
   <Term ConceptPreferredTermYN="N" IsPermutedTermYN="N" LexicalTag="NON" RecordPreferredTermYN="N"><TermUI>T025814</TermUI><String>Migraine</String></Term>
  </TermList></Concept></ConceptList>
</DescriptorRecord>
</DescriptorRecordSet>
"""

MESH_SUPPLEMENTARY = """<?xml version="1.0"?>
<!DOCTYPE SupplementalRecordSet SYSTEM "https://www.nlm.nih.gov/databases/dtd/nlmsupplementalrecordset_20250101.dtd">
<SupplementalRecordSet LanguageCode = "eng">
<SupplementalRecord SCRClass = "1">
 <SupplementalRecordUI>C000002</SupplementalRecordUI>
 <SupplementalRecordName><String>bevonium</String></SupplementalRecordName>
 <HeadingMappedToList><HeadingMappedTo><DescriptorReferredTo><DescriptorUI>*D001561</DescriptorUI>
  <DescriptorName><String>Benzilates</String></DescriptorName></DescriptorReferredTo></HeadingMappedTo></HeadingMappedToList>
 <ConceptList><Concept PreferredConceptYN="Y"><ConceptUI>M0353609</ConceptUI><ConceptName><String>bevonium</String></ConceptName>
  <TermList>
   <Term ConceptPreferredTermYN="Y" IsPermutedTermYN="N" LexicalTag="NON" RecordPreferredTermYN="Y"><TermUI>T000002</TermUI><String>bevonium</String></Term>
   <Term ConceptPreferredTermYN="N" IsPermutedTermYN="N" LexicalTag="NON" RecordPreferredTermYN="N"><TermUI>T000003</TermUI><String>bevonium methyl sulfate</String></Term>
  </TermList></Concept></ConceptList>
</SupplementalRecord>
<SupplementalRecord SCRClass = "3">
 <SupplementalRecordUI>C536210</SupplementalRecordUI>
 <SupplementalRecordName><String>Copper Toxicosis, Canine</String></SupplementalRecordName>
 <ConceptList><Concept PreferredConceptYN="Y"><ConceptUI>M0561234</ConceptUI><ConceptName><String>Copper Toxicosis, Canine</String></ConceptName>
  <TermList><Term ConceptPreferredTermYN="Y" IsPermutedTermYN="N" LexicalTag="NON" RecordPreferredTermYN="Y"><TermUI>T000099</TermUI><String>Copper Toxicosis, Canine</String></Term></TermList>
 </Concept></ConceptList>
</SupplementalRecord>
</SupplementalRecordSet>
"""

CTD_DISEASES = """# Comparative Toxicogenomics Database (CTD), https://ctdbase.org/
# Report created: Tue Oct 07 2025
#
# Use is subject to the terms set forth at https://ctdbase.org/about/legal.jsp
# These terms include:
#
# Fields:
# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings
#
Hepatolenticular Degeneration\tMESH:D006527\tDO:DOID:893|OMIM:277900\tA rare autosomal recessive disease.\tMESH:D001927\tC06.552.413|C10.228.140.163.100.362\tC06.552|C10.228.140.163.100\tWilson Disease|Wilson's Disease|Hepatolenticular Degenerations\tDigestive system disease|Nervous system disease
Aicardi-Goutieres Syndrome 1\tOMIM:225750\t\t\tMESH:C536577\tC10.228.140.163.100.435.825.300/225750\tC10.228.140.163.100.435.825.300\tAGS1|Aicardi Goutieres Syndrome\tNervous system disease
Migraine Disorders\tMESH:D008881\t\t\tMESH:D020773\tC10.228.140.546.399.750\tC10.228.140.546.399\tMigraine|Migraines|Sick Headache\tNervous system disease
"""

CTD_CHEMICALS = """# Comparative Toxicogenomics Database (CTD), https://ctdbase.org/
# Report created: Tue Oct 07 2025
#
# Fields:
# ChemicalName\tChemicalID\tCasRN\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms
#
Aspirin\tMESH:D001241\t50-78-2\tThe prototypical analgesic.\tMESH:D012459\tD02.455.426.559.389.657.410.595.054\tD02.455.426.559.389.657.410.595\tAcetylsalicylic Acid|2-(Acetyloxy)benzoic Acid
bevonium\tMESH:C000002\t\t\tMESH:D001561\tD02.455.426.559.389.127.085/C000002\tD02.455.426.559.389.127.085\tbevonium methyl sulfate
"""

GENE_INFO = ("#tax_id\tGeneID\tSymbol\tLocusTag\tSynonyms\tdbXrefs\tchromosome\tmap_location\tdescription\ttype_of_gene\t"
             "Symbol_from_nomenclature_authority\tFull_name_from_nomenclature_authority\tNomenclature_status\t"
             "Other_designations\tModification_date\tFeature_type\n"
             "9606\t7157\tTP53\t-\tBCC7|LFS1|P53|TRP53\tMIM:191170|HGNC:HGNC:11998\t17\t17p13.1\ttumor protein p53\t"
             "protein-coding\tTP53\ttumor protein p53\tO\tcellular tumor antigen p53|phosphoprotein p53\t20251012\t-\n"
             "9606\t7422\tVEGFA\t-\tVEGF|VPF\tMIM:192240\t6\t6p21.1\tvascular endothelial growth factor A\tprotein-coding\t"
             "VEGFA\tvascular endothelial growth factor A\tO\tvascular permeability factor\t20251012\t-\n"
             "10090\t22059\tTrp53\t-\tp53|bbl|bfy\tMGI:MGI:98834\t11\t11 B3\ttransformation related protein 53\t"
             "protein-coding\tTrp53\ttransformation related protein 53\tO\tcellular tumor antigen p53\t20251012\t-\n"
             "559292\t852457\tCDC28\tYBR160W\tCDK1|HSL5|SRM5\tSGD:S000000364\tII\t-\tcyclin-dependent serine/threonine-"
             "protein kinase CDC28\tprotein-coding\tCDC28\t-\t-\tcyclin-dependent kinase 1\t20251012\t-\n")

NAMES_DMP = ("9606\t|\tHomo sapiens\t|\t\t|\tscientific name\t|\n"
             "9606\t|\thuman\t|\t\t|\tgenbank common name\t|\n"
             "9606\t|\tHomo sapiens Linnaeus, 1758\t|\t\t|\tauthority\t|\n"
             "10090\t|\tMus musculus\t|\t\t|\tscientific name\t|\n"
             "10090\t|\thouse mouse\t|\t\t|\tgenbank common name\t|\n"
             "10090\t|\tmouse\t|\tmouse <Mus musculus>\t|\tcommon name\t|\n"
             "4932\t|\tSaccharomyces cerevisiae\t|\t\t|\tscientific name\t|\n"
             "4932\t|\tbaker's yeast\t|\t\t|\tgenbank common name\t|\n"
             "4932\t|\tS. cerevisiae\t|\t\t|\tequivalent name\t|\n"
             "4932\t|\tyeast\t|\t\t|\tin-part\t|\n")

CELLOSAURUS = """ ---------------------------------------------------------------------------
        CELLOSAURUS: an encyclopedia of cell lines
        Version: 52.0 of 2025-07-02
 ---------------------------------------------------------------------------
ID   HeLa
AC   CVCL_0030
SY   HeLa-CCL2; Henrietta Lacks cells; HELA
OX   NCBI_TaxID=9606; ! Homo sapiens (Human)
CA   Cancer cell line
//
ID   NIH 3T3
AC   CVCL_0594
SY   NIH-3T3; NIH3T3
OX   NCBI_TaxID=10090; ! Mus musculus (Mouse)
CA   Spontaneously immortalized cell line
//
"""


def gzipped(text):
    return gzip.compress(text.encode("utf-8"), mtime=0)


def taxdump_zip():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("names.dmp", NAMES_DMP)
        archive.writestr("nodes.dmp", "9606\t|\t9605\t|\tspecies\t|\n")
    return buffer.getvalue()


def taxdump_tar_gz():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        data = NAMES_DMP.encode()
        info = tarfile.TarInfo("names.dmp")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


SOURCE_FILES = {
    "desc2025.gz": lambda: gzipped(MESH_DESCRIPTORS),
    "supp2025.gz": lambda: gzipped(MESH_SUPPLEMENTARY),
    "CTD_diseases.tsv.gz": lambda: gzipped(CTD_DISEASES),
    "CTD_chemicals.tsv.gz": lambda: gzipped(CTD_CHEMICALS),
    "gene_info.gz": lambda: gzipped(GENE_INFO),
    "taxdmp_2025-01-01.zip": taxdump_zip,
    "taxdump.tar.gz": taxdump_tar_gz,
    "cellosaurus.txt": lambda: CELLOSAURUS.encode(),
}


@pytest.fixture(scope="session")
def source_files(tmp_path_factory):
    """{file name: path} of every fixture file."""
    root = tmp_path_factory.mktemp("dictionary-sources")
    paths = {}
    for name, make in SOURCE_FILES.items():
        (root / name).write_bytes(make())
        paths[name] = root / name
    return paths


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory, minilm_dir):
    """A tiny random BERT (2 layers, hidden 32) with MiniLM's real uncased vocabulary."""
    from biozoo import testing as H

    model = H.make_model("bert", "BertModel", vocab_size=30522, initializer_range=0.02)
    return H.save_hf_directory(model, tmp_path_factory.mktemp("encoder") / "bert", vocab_file=minilm_dir / "vocab.txt")
