"""Which species a gene mention is about: the taxon it is linked within.

Rules (`TAXON_RULES`), each falling back to the document's most frequent species, then human:
- `preceding` (default): the nearest species mention before the gene mention, in the same
  sentence ("human PAX6", "mouse Snrpn");
- `nearest`: the species mention nearest to the gene mention anywhere in the document, by
  characters between them (an adjacent or enclosing one is at distance 0; a tie goes to the
  one before);
- `frequent`: the document's most frequent species (first mentioned on a tie);
- `human`: always 9606 (what BERN2 does; its issue #57: yeast genes linked to human ones).
On 85 gene mentions hand-checked in 11 shared abstracts that name several species
(`benchmarks/species_rule.py`): preceding 87.1 %, frequent 87.1 %, nearest 68.2 %, human 50.6 %.

NCBI Gene files list some organisms under a strain's taxon: `GENE_TAXON` maps the species
taxon a species mention links to onto the one gene_info uses.

    >>> assign_taxa([(30, 34)], [(0, 5, "10090")], sentences=[(0, 40)])
    ['10090']
"""

from __future__ import annotations

from collections import Counter

from biozoo.documents.model import split_ids
from biozoo.documents.sentences import split_sentences

SPECIES_TYPES = ("Species", "Organism")  # the entity types whose mentions give genes their taxon
TAXON_RULES = ("nearest", "preceding", "frequent", "human")
DEFAULT_TAXON_RULE = "preceding"
HUMAN = "9606"
GENE_TAXON = {"4932": "559292", "562": "511145"}  # S. cerevisiae -> S288C; E. coli -> K-12 MG1655


def _distance(gene, species):
    (g0, g1), (s0, s1) = gene, species
    return max(0, s0 - g1, g0 - s1)


def most_frequent(species):
    """The taxon most species mentions name (the earliest-mentioned on a tie), or None."""
    counts = Counter(taxon for _, _, taxon in species if taxon)
    if not counts:
        return None
    first = {}
    for start, _, taxon in sorted(species):
        first.setdefault(taxon, start)
    return max(counts, key=lambda t: (counts[t], -first[t]))


def assign_taxa(genes, species, rule=DEFAULT_TAXON_RULE, sentences=None, default=HUMAN):
    """Per gene span `(start, end)`, its taxon under `rule`, from species mentions
    `(start, end, taxon)` (taxon None: not linked, ignored); `sentences`: `(start, end)` spans
    for the `preceding` rule."""
    if rule not in TAXON_RULES:
        raise ValueError(f"taxon rule must be one of {', '.join(TAXON_RULES)}, got {rule!r}")
    species = [s for s in species if s[2]]
    fallback = most_frequent(species) or default
    out = []
    for gene in genes:
        taxon = None
        if rule == "human":
            taxon = HUMAN
        elif rule == "nearest" and species:
            taxon = min(species, key=lambda s: (_distance(gene, s[:2]), s[0] > gene[0], s[0]))[2]
        elif rule == "preceding":
            sentence = next(((a, b) for a, b in sentences or () if a <= gene[0] < b), (0, gene[0]))
            before = [s for s in species if sentence[0] <= s[0] and s[1] <= gene[0]]
            taxon = max(before, key=lambda s: s[1])[2] if before else None
        elif rule == "frequent":
            taxon = fallback
        out.append(taxon or fallback)
    return out


def gene_taxa(genes, annotations, text, rule=DEFAULT_TAXON_RULE, default=HUMAN):
    """The taxon NCBI Gene lists each gene span `(start, end)` of a document under, from the
    species mentions among `annotations` that carry an id (the first, where a mention lists
    several: "10090|9606"; the document's `text` gives the sentences of the `preceding` rule);
    `default` where the document names no species."""
    species = [(a.start, a.end, ids[0]) for a in annotations
               if a.type in SPECIES_TYPES and (ids := split_ids(a.concept_id))]
    sentences = split_sentences(text) if rule == "preceding" else None
    return [gene_taxon(taxon) for taxon in assign_taxa(genes, species, rule, sentences, default)]


def gene_taxon(taxon):
    """The taxon NCBI Gene files list a species' genes under."""
    return GENE_TAXON.get(taxon, taxon)
