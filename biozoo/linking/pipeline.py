"""Concept ids for the mentions of documents: abbreviations, species, then each type's linker.

`DocumentLinker.link_documents(documents)` sets, on every prediction whose type has a
dictionary, `concept_id` and the infons `link_name` (the dictionary name matched),
`link_score`, `link_method`, `dictionary` (name@version) and, when they differ from the
mention, `link_query` (abbreviations expanded) and `taxon` (genes). A mention with nothing
above the threshold keeps no id (its infons still say what was nearest). With
`write_abbreviations`, each abbreviation definition becomes two predictions, a `LongForm`
and a `ShortForm` (infons name the other).

Link specs (`biozoo annotate --link`): `DICTIONARY` (for the entity types the dictionaries
table gives it; every type for a file of one's own) or `TYPE[,TYPE...]=DICTIONARY`.

Example:
    >>> linker = load_document_linker(("Disease=ctd-diseases", "Chemical=ctd-chemicals"))
    >>> linker.link_documents(documents)
"""

from __future__ import annotations

import dataclasses
import functools
import warnings

from biozoo.choices import DEFAULT_LINK_ENCODER
from biozoo.documents.model import ABBREVIATION_TYPES, LONG_FORM_SPAN, Annotation
from biozoo.errors import DataWarning
from biozoo.linking.abbreviations import DEFAULT_ENGINE, expand, expansions, find_abbreviations
from biozoo.linking.encoder import NameEncoder
from biozoo.linking.linker import Linker
from biozoo.linking.sources import dictionary_table, load_dictionary, parse_dictionary_handle
from biozoo.linking.species import DEFAULT_TAXON_RULE, HUMAN, SPECIES_TYPES, TAXON_RULES, gene_taxa

ANY_TYPE = "*"


def parse_link_spec(spec):
    """`(types or None, dictionary handle)` of `DICTIONARY` or `TYPE[,TYPE...]=DICTIONARY`."""
    types, sep, handle = spec.partition("=")
    if not sep:
        return None, spec.strip()
    types = tuple(t.strip() for t in types.split(",") if t.strip())
    if not types or not handle.strip():
        raise ValueError(f"--link {spec!r}: expected DICTIONARY or TYPE[,TYPE...]=DICTIONARY")
    return types, handle.strip()


def default_link_types(handle):
    """The entity types a dictionary links when no TYPE= says (its table entry's, e.g. Disease and
    NCBI-disease's SpecificDisease, DiseaseClass, ... for ctd-diseases), or ("*",): any type."""
    kind, info = parse_dictionary_handle(handle)
    if kind == "table":
        return tuple(dictionary_table()[info["name"]]["entity_types"])
    return (ANY_TYPE,)


@dataclasses.dataclass
class DocumentLinker:
    """Linkers by entity type (`linkers`: [(types, Linker)], first match wins; `*` matches
    any type), the abbreviation engine (None: none), whether abbreviations are written as
    predictions, and the rule giving gene mentions their taxon (`TAXON_RULES`).

    Example (a short form is linked by its long form):
        >>> table = Dictionary([Concept("D006527", "Hepatolenticular Degeneration", ("Wilson disease",))], "d", "1")
        >>> doc = Document("1", [Passage(0, "Wilson disease (WD) is rare.", "abstract")])
        >>> doc.predictions.append(Annotation(16, 18, "Disease", "WD"))
        >>> _ = DocumentLinker([(("Disease",), Linker(table, progress=False))]).link_documents([doc])
        >>> doc.predictions[0].concept_id, doc.predictions[0].infons["link_query"]
        ('D006527', 'Wilson disease')
    """

    linkers: list
    abbreviations: str | None = DEFAULT_ENGINE
    write_abbreviations: bool = False
    taxon_rule: str = DEFAULT_TAXON_RULE
    mentions: int = 0
    linked: int = 0
    _warned: bool = dataclasses.field(default=False, repr=False)

    def __post_init__(self):
        if self.taxon_rule not in TAXON_RULES:
            raise ValueError(f"taxon rule must be one of {', '.join(TAXON_RULES)}, got {self.taxon_rule!r}")

    def linker_for(self, kind):
        for types, linker in self.linkers:
            if kind in types or ANY_TYPE in types:
                return linker
        return None

    def link_documents(self, documents, source="predictions"):
        """Link the `source` annotations ("predictions" or "existing") of `documents`, in place;
        mentions of all documents are linked together, one batch per dictionary."""
        documents = list(documents)
        found = [self._abbreviations(d) for d in documents]
        tables = [expansions(f) for f in found]
        jobs = []  # (document index, annotation, linker)
        for d, document in enumerate(documents):
            annotations = document.predictions if source == "predictions" else document.existing_annotations()
            for annotation in annotations:
                linker = self.linker_for(annotation.type)
                if linker is not None and annotation.type not in ABBREVIATION_TYPES:
                    jobs.append((d, annotation, linker))
        species = [job for job in jobs if job[1].type in SPECIES_TYPES]
        others = [job for job in jobs if job[1].type not in SPECIES_TYPES]
        self._link(species, tables, [None] * len(species))
        self._link(others, tables, self._taxa(documents, others))
        if self.write_abbreviations:  # last: a document linked again (after an error) gets them once
            for document, abbreviations in zip(documents, found):
                self._write(document, abbreviations)
        return documents

    def _abbreviations(self, document):
        if self.abbreviations is None:
            return []
        units = [(document.text, 0)] if document.whole_text else \
            [(p.text, p.offset) for p in document.passages]
        return [a for text, offset in units for a in find_abbreviations(text, self.abbreviations, offset)]

    def _write(self, document, abbreviations):
        model = f"abbreviations:{self.abbreviations}"
        # those an earlier run wrote (read back with its output) are replaced, not doubled
        document.predictions[:] = [p for p in document.predictions if p.model != model]
        for a in abbreviations:
            document.predictions.append(Annotation(a.long_start, a.long_end, "LongForm", a.long, model=model,
                                                   infons={"short_form": a.short}))
            document.predictions.append(Annotation(
                a.short_start, a.short_end, "ShortForm", a.short, model=model,
                infons={"long_form": a.long, LONG_FORM_SPAN[0]: str(a.long_start), LONG_FORM_SPAN[1]: str(a.long_end)}))
        document.predictions.sort(key=lambda x: (x.start, x.end))

    def _taxa(self, documents, jobs):
        """The taxon of each job whose linker searches by taxon (None for the others), from the
        linked species mentions: predicted ones and those the input carries with an id."""
        taxa = [None] * len(jobs)
        by_document = {}
        for j, (d, annotation, linker) in enumerate(jobs):
            if linker.by_taxon:
                by_document.setdefault(d, []).append(j)
        if by_document and not any(self.linker_for(kind) for kind in SPECIES_TYPES) and not self._warned:
            self._warned = True
            warnings.warn("genes are linked within a species' genes, but no dictionary links Species mentions "
                          "(e.g. --link Species=ncbi-taxonomy): only species ids the input carries give genes "
                          f"their taxon, else {HUMAN} (human)", DataWarning, stacklevel=3)
        for d, members in by_document.items():
            document = documents[d]
            annotations = document.predictions + document.existing_annotations()
            by_linker = {}
            for j in members:
                by_linker.setdefault(id(jobs[j][2]), []).append(j)
            for group in by_linker.values():
                spans = [(jobs[j][1].start, jobs[j][1].end) for j in group]
                default = jobs[group[0]][2].only_taxon or HUMAN  # where the document names no species
                for j, taxon in zip(group, gene_taxa(spans, annotations, document.text, self.taxon_rule, default)):
                    taxa[j] = taxon
        return taxa

    def _link(self, jobs, tables, taxa):
        by_linker = {}
        for job, taxon in zip(jobs, taxa):
            by_linker.setdefault(id(job[2]), []).append((job, taxon))
        for members in by_linker.values():
            linker = members[0][0][2]
            queries = [expand(annotation.text, tables[d]) for (d, annotation, _), _ in members]
            for ((_, annotation, _), taxon), link in zip(members, linker.link(queries, [t for _, t in members])):
                self.mentions += 1
                _record(annotation, link)
                if link.id is not None:
                    self.linked += 1


# What `_record` writes; an annotation linked again loses what an earlier link wrote.
LINK_INFONS = ("link_method", "dictionary", "link_name", "link_score", "link_query", "taxon", "link_alternatives")


def _record(annotation, link):
    annotation.concept_id = link.id
    for key in LINK_INFONS:
        annotation.infons.pop(key, None)
    infons = {"link_method": link.method, "dictionary": link.dictionary}
    if link.name is not None:
        infons.update(link_name=link.name, link_score=format(link.score, ".4f"))
    if link.query != annotation.text:
        infons["link_query"] = link.query
    if link.taxon is not None:
        infons["taxon"] = link.taxon
    if link.alternatives:
        infons["link_alternatives"] = "|".join(link.alternatives)
    annotation.infons.update(infons)


@functools.lru_cache(maxsize=4)
def load_document_linker(specs, encoder=DEFAULT_LINK_ENCODER, threshold=None, sparse_weight=0.0,
                         abbreviations=DEFAULT_ENGINE, write_abbreviations=False, taxon_rule=DEFAULT_TAXON_RULE,
                         trust_unverified=False, progress=True):
    """A `DocumentLinker` of link specs (a tuple of `DICTIONARY` / `TYPE=DICTIONARY`), built once
    per process for the same arguments (Beam workers reuse it). `encoder`: a biozoo handle, or
    None for string and char 3-gram matching only."""
    if not specs:
        raise ValueError("no dictionary to link with")
    name_encoder = NameEncoder.from_preset(encoder) if encoder else None
    linkers = []
    for spec in specs:
        types, handle = parse_link_spec(spec)
        dictionary = load_dictionary(handle, trust_unverified=trust_unverified, progress=progress)
        linker = Linker(dictionary, name_encoder, threshold=threshold, sparse_weight=sparse_weight, progress=progress)
        linkers.append((types or default_link_types(handle), linker))
    return DocumentLinker(linkers, abbreviations, write_abbreviations, taxon_rule)
