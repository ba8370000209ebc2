"""The linker: a mention's text -> a concept of a dictionary.

Steps, first hit wins:
1. the exact name, then the normalized name (`normalize_name`), in the dictionary;
2. the nearest names of the mention's embedding (`NameEncoder`; SapBERT's way), optionally
   re-scored as `dense + sparse_weight * sparse`, a fixed-weight sum in the form of BioSyn's
   hybrid score whose sparse part is scispaCy's char_wb 3-gram TF-IDF cosine (BioSyn's own is a
   char 1-2-gram TF-IDF, its weight learned); without an encoder, the char 3-gram TF-IDF
   neighbours alone (scispaCy's way).
A candidate below `threshold` gives no id (`Link.id` None), not a wrong one. A gene mention
is looked up among the names of its taxon only (`taxa`); a taxon the dictionary lacks gives
no id.

Example:
    >>> linker = Linker(load_dictionary("ctd-diseases"), NameEncoder.from_preset("sapbert_pubmedbert_fulltext"))
    >>> linker.link(["heart attack"])[0].id
    'D009203'
"""

from __future__ import annotations

import collections
import dataclasses

from biozoo.linking.index import CharNgramIndex, StringMatcher, embedded_names, normalize_name

DEFAULT_THRESHOLD = 0.6
SPARSE_THRESHOLD = 0.5
# the methods of a Link without an id, and what each means for the mentions it left unlinked
UNLINKED_METHODS = {"none": "nothing above the threshold", "no-taxon": "a taxon whose genes the dictionary lacks"}


@dataclasses.dataclass(frozen=True)
class Link:
    """What a mention was linked to: `id` (None: nothing above the threshold), the dictionary
    `name` matched and its `score` (1.0 for string matches), the `method` (exact, normalized,
    dense, sparse, none, no-taxon), the `dictionary` (name@version), the text looked up
    (`query`: the mention, its abbreviations expanded), the `taxon` searched within, and the
    ids of other concepts with the same matched name (`alternatives`); `candidate`: the best
    concept's id whether or not it passed the threshold (what SapBERT's accuracy@1 scores).

    Example:
        >>> table = Dictionary([Concept("D009203", "Myocardial Infarction", ("heart attack",))], "diseases", "1")
        >>> link = Linker(table, progress=False).link(["Heart-Attack"])[0]
        >>> link.id, link.name, link.method, link.score, link.dictionary
        ('D009203', 'heart attack', 'normalized', 1.0, 'diseases@1')
    """

    id: str | None
    name: str | None
    score: float
    method: str
    dictionary: str
    query: str
    taxon: str | None = None
    alternatives: tuple = ()
    candidate: str | None = None


class Linker:
    """Links mention texts to the concepts of one `Dictionary` (module docstring).

    `encoder` (a `NameEncoder`, or None for strings and char 3-grams only); `threshold`: the
    lowest score that keeps an id (default DEFAULT_THRESHOLD with an encoder, SPARSE_THRESHOLD
    without); `sparse_weight`: the weight of the char 3-gram TF-IDF cosine added to the dense score; `k`: candidate names
    looked at; `method`: the dense index ("auto", "exact", "hnsw"); `by_taxon`: search a
    mention's taxon only (default: when every concept is a gene with a taxon).

    Example (no encoder: strings, then char 3-grams):
        >>> table = Dictionary([Concept("D009203", "Myocardial Infarction", ("heart attack",))], "diseases", "1")
        >>> [(link.id, link.method) for link in Linker(table, progress=False).link(["Heart-Attack", "infarction", "flu"])]
        [('D009203', 'normalized'), ('D009203', 'sparse'), (None, 'none')]
    """

    def __init__(self, dictionary, encoder=None, threshold=None, sparse_weight=0.0, k=20, method="auto",
                 progress=True, by_taxon=None):
        self.dictionary, self.encoder = dictionary, encoder
        self.threshold = threshold if threshold is not None else (DEFAULT_THRESHOLD if encoder else SPARSE_THRESHOLD)
        self.sparse_weight, self.k = float(sparse_weight), int(k)
        self.table = dictionary.names()
        self.strings = StringMatcher(self.table.names)
        if by_taxon is None:  # genes are searched within their taxon; cell lines and species are not
            by_taxon = bool(dictionary.concepts) and all(c.type == "Gene" and c.taxon for c in dictionary.concepts)
        self.by_taxon = by_taxon
        taxa = [taxon for taxon in self.table.taxon_ranges if taxon]
        # a dictionary of one species' genes (`ncbi-gene:10090`): where a text names no species
        self.only_taxon = taxa[0] if len(taxa) == 1 and by_taxon else None
        self.progress = progress
        self._sparse = None
        self.dense = embedded_names(dictionary, encoder, method, progress) if encoder is not None else None

    @property
    def sparse(self):
        if self._sparse is None:
            self._sparse = CharNgramIndex(self.table.names, progress=self.progress)
        return self._sparse

    def link(self, mentions, taxa=None):
        """A `Link` per mention text (`taxa[i]`: the taxon to search within, or None)."""
        mentions = list(mentions)
        taxa = list(taxa) if taxa is not None else [None] * len(mentions)
        if len(taxa) != len(mentions):
            raise ValueError(f"{len(mentions)} mentions but {len(taxa)} taxa")
        links, pending = [None] * len(mentions), []
        for i, (mention, taxon) in enumerate(zip(mentions, taxa)):
            rows = self._rows(taxon)
            if rows is False:
                links[i] = Link(None, None, 0.0, "no-taxon", self.dictionary.label, mention, taxon)
                continue
            method, found = self.strings.find(mention, rows)
            if found:
                links[i] = self._string_link(mention, method, found, taxon)
            else:
                pending.append(i)
        for i, link in zip(pending, self._search([mentions[i] for i in pending], [taxa[i] for i in pending])):
            links[i] = link
        return links

    def _rows(self, taxon):
        """None (every name), the taxon's row range, or False (a taxon the dictionary lacks)."""
        if taxon is None or not self.by_taxon:
            return None
        return self.table.taxon_ranges.get(str(taxon), False)

    def _string_link(self, mention, method, rows, taxon):
        concepts = sorted({int(self.table.concepts[r]) for r in rows})  # in dictionary order
        key = normalize_name(mention)
        preferred = [c for c in concepts if normalize_name(self.dictionary.concepts[c].name) == key]
        best = (preferred or concepts)[0]
        row = next(r for r in rows if self.table.concepts[r] == best)
        others = tuple(self.dictionary.concepts[c].id for c in concepts if c != best)
        best_id = self.dictionary.concepts[best].id
        return Link(best_id, self.table.names[row], 1.0, method, self.dictionary.label, mention, taxon, others, best_id)

    def _search(self, queries, taxa):
        if not queries:
            return []
        candidates = [None] * len(queries)  # per query: [(score, row)]
        if self.dense is not None:
            vectors = self.encoder.encode(queries)
            groups = {}
            for i, taxon in enumerate(taxa):
                groups.setdefault(self._rows(taxon), []).append(i)
            for rows, members in groups.items():
                scores, found = self.dense.search(vectors[members], self.k, rows)
                for i, score_row, row_row in zip(members, scores, found):
                    candidates[i] = [(float(s), int(r)) for s, r in zip(score_row, row_row) if r >= 0]
            method = "dense"
        else:
            for i, (query, taxon) in enumerate(zip(queries, taxa)):
                scores, rows = self.sparse.search([query], self.k, self._rows(taxon))[0]
                candidates[i] = [(float(s), int(r)) for s, r in zip(scores, rows) if r >= 0 and s > 0]
            method = "sparse"
        links = []
        for query, taxon, found in zip(queries, taxa, candidates):
            if self.dense is not None and self.sparse_weight:
                found = [(s + self.sparse_weight * self.sparse.similarity(query, self.table.names[r]), r) for s, r in found]
            if not found:
                links.append(Link(None, None, 0.0, "none", self.dictionary.label, query, taxon))
                continue
            score, row = max(found, key=lambda item: (item[0], -item[1]))
            concept = self.dictionary.concepts[int(self.table.concepts[row])]
            if score < self.threshold:
                links.append(Link(None, self.table.names[row], score, "none", self.dictionary.label, query, taxon,
                                  candidate=concept.id))
            else:
                links.append(Link(concept.id, self.table.names[row], score, method, self.dictionary.label, query, taxon,
                                  candidate=concept.id))
        return links


def count_link_methods(documents):
    """{link method: mentions} over the predictions of `documents` a dictionary was asked about
    (those with a `link_method` infon); `describe_links` tells it."""
    return dict(collections.Counter(p.infons["link_method"] for document in documents
                                    for p in document.predictions if "link_method" in p.infons))


def describe_links(methods):
    """'N of M mentions linked' of `count_link_methods`' counts, with why the others were not.

    Example:
        >>> describe_links({"exact": 3, "dense": 1, "none": 2, "no-taxon": 1})
        '4 of 7 mentions linked (2: nothing above the threshold; 1: a taxon whose genes the dictionary lacks)'
    """
    total = sum(methods.values())
    unlinked = [f"{methods[m]}: {why}" for m, why in UNLINKED_METHODS.items() if methods.get(m)]
    linked = total - sum(methods.get(m, 0) for m in UNLINKED_METHODS)
    return f"{linked} of {total} mentions linked" + (f" ({'; '.join(unlinked)})" if unlinked else "")
