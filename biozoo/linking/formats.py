"""Readers of the dictionary sources' own formats, each yielding `Concept`s.

| format        | files                                   | concept id           | names |
|---------------|-----------------------------------------|----------------------|-------|
| `mesh-xml`    | descNNNN(.gz), suppNNNN(.gz) (NLM XML)  | D.../C... (MeSH UI)  | every term of every concept of the record |
| `ctd-tsv`     | CTD_diseases / CTD_chemicals .tsv(.gz)  | D... / OMIM:... (+ AltDiseaseIDs as alt_ids) | name, Synonyms |
| `gene-info`   | gene_info(.gz), NCBI Gene               | GeneID               | Symbol, Synonyms, authority symbol and full name, description |
| `taxdump`     | taxdmp_*.zip / taxdump.tar.gz, NCBI     | tax_id               | names.dmp: scientific name first, then synonyms, common names... |
| `cellosaurus` | cellosaurus.txt                         | CVCL_....            | ID, SY |
| `tsv`         | `id<TAB>name[<TAB>type[<TAB>taxon]]`    | as written           | a repeated id adds synonyms |
| `biosyn`      | `id||name` (BioSyn / SapBERT)           | as written           | as `tsv` |

Every reader streams (gzip detected by its magic bytes; zip and tar members are read in
place, never extracted; text is UTF-8, a byte order mark as Excel writes it dropped) and raises DataFormatError naming the file and line (or record) of
anything it cannot read. `read_concepts(format, paths, options)` picks the reader.

Example:
    >>> concepts = list(read_concepts("ctd-tsv", ["CTD_diseases.tsv.gz"], {"strip_prefix": "MESH:"}))
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import tarfile
import xml.etree.ElementTree as ElementTree
import zipfile
import zlib

from biozoo.errors import DataFormatError
from biozoo.linking.concepts import Concept, clean_name, merge_names

GZIP_MAGIC = b"\x1f\x8b"


@contextlib.contextmanager
def open_text(path):
    """`path` as text lines (UTF-8, a leading byte order mark dropped), decompressed when it is gzip."""
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == GZIP_MAGIC
    raw = gzip.open(path, "rb") if gzipped else open(path, "rb")
    try:
        with io.TextIOWrapper(raw, encoding="utf-8-sig", errors="strict", newline=None) as text:
            yield text
    except UnicodeDecodeError:
        raise DataFormatError(f"{path}{_first_undecodable(path)}; save the file as UTF-8") from None
    except (OSError, EOFError, zlib.error) as error:
        raise DataFormatError(f"{path}: unreadable ({type(error).__name__}: {error}); truncated or corrupt?") from None


def _lines(path):
    with open_text(path) as f:
        yield from enumerate(f, 1)


def _first_undecodable(path):
    """`:LINE: not UTF-8 (byte 0x.. at column N)` for the first line of `path` that is not UTF-8."""
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == GZIP_MAGIC
    with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as raw:
        for lineno, data in enumerate(raw, 1):
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as error:
                return f":{lineno}: not UTF-8 (byte 0x{data[error.start]:02x} at column {error.start + 1})"
    return ": not UTF-8"


def _names(text, separator):
    return [clean_name(n) for n in text.split(separator) if clean_name(n) and n.strip() != "-"]


# ------------------------------------------------------------------ MeSH (NLM XML)

MESH_TYPES = {"C": "Disease", "F03": "Disease", "D": "Chemical", "B": "Species", "A": "Anatomy"}
SCR_CLASSES = {"1": "Chemical", "2": "Protocol", "3": "Disease", "4": "Species"}


def read_mesh(paths, trees=None, scr_classes=None, **_):
    """MeSH descriptors (DescriptorRecordSet) and supplementary concept records
    (SupplementalRecordSet), recognised by their root element. A descriptor is kept when one
    of its tree numbers starts with one of `trees` (all when None), and typed by the first
    such prefix (`MESH_TYPES`); a supplementary record when its SCRClass is in `scr_classes`.
    Names: every term of every concept of the record, the record's own name first."""
    for path in paths:
        yield from _read_mesh_file(path, trees, scr_classes)


def _mesh_terms(record):
    names = []
    for concept in record.iterfind("ConceptList/Concept"):
        for term in concept.iterfind("TermList/Term"):
            if term.get("IsPermutedTermYN") == "Y":
                continue
            names.append(clean_name(term.findtext("String") or ""))
    return [n for n in names if n]


def _read_mesh_file(path, trees, scr_classes):
    kind = None
    with open_text(path) as text:
        try:
            for event, element in ElementTree.iterparse(text, events=("start", "end")):
                if event == "start":
                    if kind is None:
                        kind = element.tag
                        if kind not in ("DescriptorRecordSet", "SupplementalRecordSet"):
                            raise DataFormatError(f"{path}: a MeSH XML file's root is DescriptorRecordSet or "
                                                  f"SupplementalRecordSet, not {kind}")
                    continue
                if element.tag == "DescriptorRecord":
                    concept = _descriptor(element, trees, path)
                elif element.tag == "SupplementalRecord":
                    concept = _supplementary(element, scr_classes, path)
                else:
                    continue
                element.clear()
                if concept is not None:
                    yield concept
        except ElementTree.ParseError as error:
            raise DataFormatError(f"{path}: malformed MeSH XML ({error}); truncated or corrupt?") from None
    if kind is None:
        raise DataFormatError(f"{path}: empty MeSH XML file")


def _descriptor(record, trees, path):
    ui, name = record.findtext("DescriptorUI"), clean_name(record.findtext("DescriptorName/String") or "")
    if not ui or not name:
        raise DataFormatError(f"{path}: a DescriptorRecord without DescriptorUI or DescriptorName ({ui!r})")
    numbers = [n.text or "" for n in record.iterfind("TreeNumberList/TreeNumber")]
    kind = None
    if trees is None:
        kind = next((MESH_TYPES[k] for n in numbers for k in sorted(MESH_TYPES, key=len, reverse=True)
                     if n.startswith(k)), None)
    else:
        kind = next((MESH_TYPES.get(t, t) for t in trees for n in numbers if n.startswith(t)), False)
        if kind is False:
            return None
    synonyms = [n for n in _mesh_terms(record) if n != name]
    return Concept(ui.strip(), name, tuple(dict.fromkeys(synonyms)), kind)


def _supplementary(record, scr_classes, path):
    ui, name = record.findtext("SupplementalRecordUI"), clean_name(record.findtext("SupplementalRecordName/String") or "")
    if not ui or not name:
        raise DataFormatError(f"{path}: a SupplementalRecord without SupplementalRecordUI or name ({ui!r})")
    scr_class = record.get("SCRClass", "1")
    if scr_classes is not None and scr_class not in scr_classes:
        return None
    synonyms = [n for n in _mesh_terms(record) if n != name]
    return Concept(ui.strip(), name, tuple(dict.fromkeys(synonyms)), SCR_CLASSES.get(scr_class))


# ------------------------------------------------------------------ CTD (MEDIC diseases, chemicals)

# (name, id, alternate ids): CTD_chemicals has no alternate-id column
CTD_COLUMNS = {"diseases": ("DiseaseName", "DiseaseID", "AltDiseaseIDs"),
               "chemicals": ("ChemicalName", "ChemicalID", None)}


def read_ctd(paths, strip_prefix="MESH:", entity_type=None, **_):
    """CTD's `CTD_diseases.tsv` (MEDIC) or `CTD_chemicals.tsv`: the column names are read from
    the file's `# Fields:` header; ids lose `strip_prefix` (MeSH ids are written bare, as the
    NCBI-disease and BC5CDR corpora write them; OMIM ids keep "OMIM:"). A disease's
    AltDiseaseIDs ("|"-separated: OMIM ids, retired MeSH ids merged into it, DO ids) become its
    `alt_ids`, `strip_prefix` applied alike, as BioSyn's CTD preprocessing writes `ID|AltIDs`."""
    for path in paths:
        columns = None
        for lineno, line in _lines(path):
            line = line.rstrip("\n")
            if line.startswith("#"):
                fields = line.lstrip("#").strip().split("\t")
                if any(name in fields for name, _, _ in CTD_COLUMNS.values()):
                    columns = {name: i for i, name in enumerate(fields)}
                continue
            if not line.strip():
                continue
            if columns is None:
                raise DataFormatError(f"{path}:{lineno}: no '# Fields:' header naming the columns before the rows")
            row = line.split("\t")
            name_key, id_key, alt_key = next((keys for keys in CTD_COLUMNS.values() if keys[0] in columns),
                                             (None, None, None))
            kind = entity_type or ("Disease" if name_key == "DiseaseName" else "Chemical")
            try:
                name, identifier = clean_name(row[columns[name_key]]), row[columns[id_key]].strip()
            except IndexError:
                raise DataFormatError(f"{path}:{lineno}: {len(row)} columns, fewer than the header's") from None
            if not name or not identifier:
                raise DataFormatError(f"{path}:{lineno}: a row without a name or an id")
            identifier = _without_prefix(identifier, strip_prefix)
            synonyms = _names(row[columns["Synonyms"]], "|") if "Synonyms" in columns and len(row) > columns["Synonyms"] else []
            alt_ids = [_without_prefix(i.strip(), strip_prefix) for i in row[columns[alt_key]].split("|")
                       if i.strip()] if alt_key in columns and len(row) > columns[alt_key] else []
            yield Concept(identifier, name, tuple(dict.fromkeys(s for s in synonyms if s != name)), kind,
                          alt_ids=tuple(dict.fromkeys(i for i in alt_ids if i != identifier)))
        if columns is None:
            raise DataFormatError(f"{path}: no rows and no '# Fields:' header: not a CTD vocabulary file")


def _without_prefix(identifier, prefix):
    return identifier[len(prefix):] if prefix and identifier.startswith(prefix) else identifier


# ------------------------------------------------------------------ NCBI Gene

GENE_COLUMNS = ("#tax_id", "GeneID", "Symbol", "Synonyms")


def read_gene_info(paths, taxa=None, designations=False, **_):
    """NCBI Gene's `gene_info` (all species, or GENE_INFO/<group>/<Species>.gene_info): one
    concept per GeneID with its tax_id, the Symbol as preferred name, then Synonyms,
    the nomenclature authority's symbol and full name, the description, and with
    `designations` the Other_designations. `taxa`: keep only these tax_ids."""
    taxa = None if taxa is None else {str(t) for t in taxa}
    for path in paths:
        columns = None
        for lineno, line in _lines(path):
            row = line.rstrip("\n").split("\t")
            if columns is None:
                if not row or row[0] not in ("#tax_id", "#Format: tax_id"):
                    raise DataFormatError(f"{path}:{lineno}: expected the gene_info header (#tax_id GeneID "
                                          f"Symbol ...), got {line[:60]!r}")
                row[0] = "#tax_id"
                columns = {name: i for i, name in enumerate(row)}
                missing = [c for c in GENE_COLUMNS if c not in columns]
                if missing:
                    raise DataFormatError(f"{path}:{lineno}: the header lacks {', '.join(missing)}")
                continue
            if not line.strip():
                continue
            if len(row) < len(columns):
                raise DataFormatError(f"{path}:{lineno}: {len(row)} columns, the header has {len(columns)}")
            taxon = row[columns["#tax_id"]]
            if taxa is not None and taxon not in taxa:
                continue
            symbol = clean_name(row[columns["Symbol"]])
            names = _names(row[columns["Synonyms"]], "|")
            for key in ("Symbol_from_nomenclature_authority", "Full_name_from_nomenclature_authority", "description"):
                if key in columns:
                    names += _names(row[columns[key]], "|") if key == "description" else _names(row[columns[key]], "\0")
            if designations and "Other_designations" in columns:
                names += _names(row[columns["Other_designations"]], "|")
            yield Concept(row[columns["GeneID"]], symbol, tuple(dict.fromkeys(n for n in names if n != symbol)),
                          "Gene", taxon)


# ------------------------------------------------------------------ NCBI Taxonomy

TAXONOMY_NAME_CLASSES = ("scientific name", "equivalent name", "synonym", "genbank common name", "common name",
                         "acronym", "genbank acronym")  # kept; authority, type material, in-part... are not names


def read_taxdump(paths, **_):
    """NCBI Taxonomy's `names.dmp`, read inside a taxdmp_*.zip or taxdump.tar.gz (or as a
    plain file): one concept per tax_id, its scientific name preferred, then the other name
    classes of TAXONOMY_NAME_CLASSES."""
    for path in paths:
        with _names_dmp(path) as (lines, where):
            concepts, scientific = {}, {}
            for lineno, line in enumerate(lines, 1):
                fields = [f.strip() for f in line.rstrip("\t|\n").split("\t|\t")]
                if len(fields) < 4:
                    raise DataFormatError(f"{where}:{lineno}: expected 'tax_id | name | unique name | class |'")
                taxon, name, kind = fields[0], clean_name(fields[1]), fields[3]
                if kind not in TAXONOMY_NAME_CLASSES or not name:
                    continue
                concepts.setdefault(taxon, [])
                if kind == "scientific name":
                    scientific[taxon] = name
                elif name not in concepts[taxon]:
                    concepts[taxon].append(name)
        for taxon, names in concepts.items():
            if taxon not in scientific:
                raise DataFormatError(f"{where}: tax_id {taxon} has no scientific name")
            preferred = scientific[taxon]
            yield Concept(taxon, preferred, tuple(n for n in names if n != preferred), "Species", taxon)


@contextlib.contextmanager
def _names_dmp(path):
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive, archive.open("names.dmp") as member:
                yield io.TextIOWrapper(member, encoding="utf-8-sig"), f"{path}!names.dmp"
            return
        with open(path, "rb") as probe:
            gzipped = probe.read(2) == GZIP_MAGIC
        if gzipped and tarfile.is_tarfile(path):
            with tarfile.open(path, "r:gz") as archive:
                member = archive.getmember("names.dmp")
                if not member.isfile():
                    raise DataFormatError(f"{path}: names.dmp is not a regular file in the archive")
                yield io.TextIOWrapper(archive.extractfile(member), encoding="utf-8-sig"), f"{path}!names.dmp"
            return
        with open_text(path) as text:
            yield text, path
    except KeyError:
        raise DataFormatError(f"{path}: the archive holds no names.dmp") from None
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, UnicodeDecodeError, zlib.error) as error:
        raise DataFormatError(f"{path}: unreadable taxonomy dump ({type(error).__name__}: {error}); "
                              "truncated or corrupt?") from None


# ------------------------------------------------------------------ Cellosaurus

def read_cellosaurus(paths, **_):
    """Cellosaurus' flat file `cellosaurus.txt`: one concept per entry (ID name preferred,
    SY synonyms; AC accession as id; the first OX NCBI_TaxID as taxon). A file that does
    not end with a complete entry ("//") is refused as truncated."""
    for path in paths:
        entry, start, entries = {}, None, 0
        for lineno, line in _lines(path):
            line = line.rstrip("\n")
            code, value = line[:2], line[5:].strip()
            if code == "//":
                if entry:
                    yield _cell_line(entry, path, start)
                    entries += 1
                entry, start = {}, None
            elif code == "ID" and line[2:5] == "   ":
                entry, start = {"ID": value}, lineno
            elif start is not None and line[2:5] == "   ":
                entry.setdefault(code, []).append(value)
        if entry:
            raise DataFormatError(f"{path}:{start}: entry {entry.get('ID')!r} has no closing '//': the file is truncated")
        if not entries:
            raise DataFormatError(f"{path}: no Cellosaurus entry (ID ... //) found")


def _cell_line(entry, path, start):
    accession = (entry.get("AC") or [""])[0]
    if not accession:
        raise DataFormatError(f"{path}:{start}: entry {entry['ID']!r} has no AC line")
    synonyms = [clean_name(s) for line in entry.get("SY", []) for s in line.split(";") if clean_name(s)]
    taxon = None
    for line in entry.get("OX", []):
        if line.startswith("NCBI_TaxID="):
            taxon = line.split("=", 1)[1].split(";", 1)[0].strip()
            break
    name = clean_name(entry["ID"])
    return Concept(accession, name, tuple(dict.fromkeys(s for s in synonyms if s != name)), "CellLine", taxon)


# ------------------------------------------------------------------ a user's own

def read_tsv(paths, entity_type=None, separator="\t", **_):
    """`id<TAB>name[<TAB>type[<TAB>taxon]]` per line ('#' comments, blank lines and an
    `id<TAB>name` header, the first other line, skipped); the first name of an id is its
    preferred name, later rows add synonyms. `separator="||"` reads BioSyn / SapBERT dictionaries (`id||name`)."""
    def rows():
        for path in paths:
            first = True
            for lineno, line in _lines(path):
                line = line.rstrip("\n")
                if not line.strip() or line.startswith("#"):
                    continue
                fields = line.split(separator)
                if first and [f.strip().lower() for f in fields[:2]] == ["id", "name"]:  # the header
                    first = False
                    continue
                first = False
                if len(fields) < 2 or not fields[0].strip() or not clean_name(fields[1]):
                    raise DataFormatError(f"{path}:{lineno}: expected id{separator!r}name, got {line[:80]!r}")
                kind = fields[2].strip() if len(fields) > 2 and fields[2].strip() else entity_type
                taxon = fields[3].strip() if len(fields) > 3 and fields[3].strip() else None
                yield Concept(fields[0].strip(), clean_name(fields[1]), (), kind, taxon)

    yield from merge_names(rows())


def read_biosyn(paths, **options):
    return read_tsv(paths, separator="||", **options)


READERS = {"mesh-xml": read_mesh, "ctd-tsv": read_ctd, "gene-info": read_gene_info, "taxdump": read_taxdump,
           "cellosaurus": read_cellosaurus, "tsv": read_tsv, "biosyn": read_biosyn}


def read_concepts(fmt, paths, options=None):
    """The concepts of `paths` in format `fmt` (a READERS key), reader `options` applied."""
    if fmt not in READERS:
        raise ValueError(f"unknown dictionary format {fmt!r}; known: {', '.join(READERS)}")
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise FileNotFoundError(f"dictionary file(s) not found: {', '.join(map(str, missing))}")
    return READERS[fmt](list(paths), **(options or {}))
