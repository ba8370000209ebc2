"""Linking gold mentions and scoring them (`biozoo evaluate link`), and dictionaries built from
annotated documents.

`evaluate_linking` links every gold mention of some documents (with its document's
abbreviations expanded, as annotation does) and reports accuracy@1 (`biozoo.metrics.linking`)
overall, per type and per method (exact, normalized, dense, sparse, none).
`dictionary_from_documents` turns the (mention, id) pairs of annotated documents into a
concept table: each id a concept, its mentions its names (the most frequent one preferred);
composite mentions (several ids) and mentions without an id name no concept.

Example:
    >>> train, test = split_documents(documents)
    >>> linker = Linker(dictionary_from_documents(train, "train-half"), encoder)
    >>> evaluate_linking(linker, test)["accuracy"]
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict

from biozoo.documents.sentences import split_sentences
from biozoo.linking.abbreviations import DEFAULT_ENGINE, expand, expansions, find_abbreviations
from biozoo.linking.concepts import Concept, Dictionary, clean_name
from biozoo.linking.species import DEFAULT_TAXON_RULE, HUMAN, TAXON_RULES, assign_taxa, gene_taxa
from biozoo.metrics.linking import accuracy_at_1, ids_of


def gold_mentions(documents, types=None):
    """[(document, annotation)] of the input annotations (of `types`, when given)."""
    return [(d, a) for d in documents for a in d.existing_annotations() if types is None or a.type in types]


def split_documents(documents, seed="biozoo"):
    """Two halves of `documents` by a hash of each id (stable across runs and machines)."""
    halves = ([], [])
    for document in documents:
        digest = hashlib.sha256(f"{seed}:{document.id}".encode()).digest()
        halves[digest[0] & 1].append(document)
    return halves


def dictionary_from_documents(documents, name, types=None, version="gold"):
    """A `Dictionary` of the (mention, id) pairs of the documents' annotations."""
    names = defaultdict(Counter)
    kinds = {}
    for _, annotation in gold_mentions(documents, types):
        ids = ids_of(annotation.concept_id)
        if len(ids) != 1:
            continue
        (concept_id,) = ids
        names[concept_id][clean_name(annotation.text)] += 1
        kinds.setdefault(concept_id, annotation.type)
    concepts = []
    for concept_id in sorted(names):
        ranked = [n for n, _ in sorted(names[concept_id].items(), key=lambda kv: (-kv[1], kv[0])) if n]
        if ranked:
            concepts.append(Concept(concept_id, ranked[0], tuple(ranked[1:]), kinds[concept_id]))
    return Dictionary(concepts, name, version)


def evaluate_linking(linker, documents, types=None, abbreviations=DEFAULT_ENGINE, details=False,
                     taxon_rule=DEFAULT_TAXON_RULE):
    """Accuracy@1 of `linker` on the gold mentions of `documents` of `types` (default: the entity
    types of the linker's dictionary; every type when some concept has none): accuracy_at_1's
    result (the ids the linker gives, its threshold applied, as annotation writes them; a
    prediction is correct when a gold id is its concept's id or one of its `alt_ids`) plus
    "top1_accuracy" (the best candidate's id, no threshold: SapBERT's acc@1 with its
    `check_label` on whole mentions; a composite mention is not split into parts as BioSyn's
    preprocessing splits it, so one of its gold ids is a hit: "composite_gold" says how many),
    "types", "methods" ({method: [mentions, correct]}) and "unlinked" (mentions given no id).
    No gold mention of `types` is an error naming the types the documents have. With `details`,
    "mentions_linked": [doc id, start, end, type, text, gold id, id, method, score]. A linker that
    searches genes by taxon gets each mention's taxon from the document's gold species mentions
    under `taxon_rule`, as annotation does from predicted ones."""
    if types is None:
        kinds = {concept.type for concept in linker.dictionary.concepts}
        types = None if None in kinds or "" in kinds else tuple(sorted(kinds))
    pairs = gold_mentions(documents, types)
    if not pairs:
        found = Counter(a.type for d in documents for a in d.existing_annotations())
        raise ValueError(f"no gold mention of type {', '.join(types or ())} to link; the documents' types: "
                         f"{dict(found) or 'none'} (choose with --types)")
    tables = {}
    queries = []
    for document, annotation in pairs:  # by the document itself: two files may hold one PMID
        if id(document) not in tables:
            tables[id(document)] = _expansions(document, abbreviations)
        queries.append(expand(annotation.text, tables[id(document)]))
    taxa = _gold_taxa(pairs, taxon_rule, linker.only_taxon or HUMAN) if linker.by_taxon else None
    links = linker.link(queries, taxa)
    gold = [a.concept_id for _, a in pairs]
    predicted = [_all_ids(linker.dictionary, link.id) for link in links]
    result = accuracy_at_1(gold, predicted, [a.type for _, a in pairs])
    result["top1_accuracy"] = accuracy_at_1(gold, [_all_ids(linker.dictionary, link.candidate)
                                                   for link in links])["accuracy"]
    methods = defaultdict(lambda: [0, 0])
    for (_, annotation), link, ids in zip(pairs, links, predicted):
        if ids_of(annotation.concept_id):
            methods[link.method][0] += 1
            methods[link.method][1] += bool(ids_of(ids) & ids_of(annotation.concept_id))
    result["methods"] = {k: {"mentions": v[0], "correct": v[1]} for k, v in sorted(methods.items())}
    result["unlinked"] = sum(1 for link in links if link.id is None)
    result["types"] = list(types) if types is not None else None
    result["dictionary"] = linker.dictionary.label
    if details:
        result["mentions_linked"] = [[d.id, a.start, a.end, a.type, a.text, a.concept_id, link.id, link.method,
                                      round(link.score, 4)] for (d, a), link in zip(pairs, links)]
    return result


def _all_ids(dictionary, concept_id):
    """`concept_id` with its concept's alternate ids, "|"-joined (None for no id): a gold id
    among them is correct, as SapBERT's `check_label` compares BioSyn's `ID|AltIDs` labels."""
    return None if concept_id is None else dictionary.concept(concept_id).all_ids()


def _gold_taxa(pairs, rule, default):
    """The taxon of each (document, gene mention) from the document's linked species mentions
    (`default` where a document names none)."""
    taxa, by_document = [None] * len(pairs), defaultdict(list)
    for i, (document, _) in enumerate(pairs):
        by_document[id(document)].append(i)
    for members in by_document.values():
        document = pairs[members[0]][0]
        spans = [(pairs[i][1].start, pairs[i][1].end) for i in members]
        for i, taxon in zip(members, gene_taxa(spans, document.existing_annotations(), document.text, rule, default)):
            taxa[i] = taxon
    return taxa


def _expansions(document, engine):
    if engine is None:
        return {}
    units = [(document.text, 0)] if document.whole_text else \
        [(p.text, p.offset) for p in document.passages]
    return expansions([a for text, offset in units for a in find_abbreviations(text, engine, offset)])


def abbreviation_scores(gold, found):
    """Precision, recall and F1 (0-100) of (short form, long form) pairs: `gold` and `found`
    map a document id to its pairs (a document found but not in `gold` counts as one without
    abbreviations: its pairs are wrong); a pair counts once per document; surrounding quotes are
    no part of a long form."""
    def clean(pairs):
        return {(short, long.strip("\"'“”‘’")) for short, long in pairs}

    tp = n_gold = n_found = 0
    missed, wrong = [], []
    for doc_id in sorted(set(gold) | set(found)):
        g, f = clean(gold.get(doc_id, ())), clean(found.get(doc_id, ()))
        tp += len(g & f)
        n_gold += len(g)
        n_found += len(f)
        missed += [(doc_id, *pair) for pair in sorted(g - f)]
        wrong += [(doc_id, *pair) for pair in sorted(f - g)]
    precision = 100.0 * tp / n_found if n_found else 0.0
    recall = 100.0 * tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 2), "recall": round(recall, 2), "f1": round(f1, 2), "tp": tp,
            "gold": n_gold, "found": n_found, "missed": missed, "wrong": wrong}


def taxon_rule_accuracy(documents, genes, species_words):
    """How often each taxon rule (`biozoo.linking.species.TAXON_RULES`) gives a gene mention its
    species. `genes`: {doc id: {gene string: [taxa per occurrence, in text order: "9606",
    "9606|10090" (any of them), or None (not counted)]}}; species mentions are the whole-word
    occurrences of `species_words` ({word: taxon}). Returns {"documents", "gene_mentions",
    rule: {"accuracy", "correct", "wrong": [[doc, gene, start, got, expected]]}}."""
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, species_words)) + r")(?![\w-])")
    mentions = {}
    for doc_id, expected_by_gene in genes.items():
        text = documents[doc_id].text
        species = [(m.start(), m.end(), species_words[m.group(1)]) for m in pattern.finditer(text)]
        spans, taxa = [], []
        for gene, expected in expected_by_gene.items():
            found = [m.start() for m in re.finditer(r"(?<![\w-])" + re.escape(gene) + r"(?![\w])", text)]
            if len(found) != len(expected):
                raise ValueError(f"document {doc_id}: {gene!r} occurs {len(found)} times, the gold lists {len(expected)}")
            for start, taxon in zip(found, expected):
                if taxon is not None:
                    spans.append((start, start + len(gene)))
                    taxa.append(set(taxon.split("|")))
        mentions[doc_id] = (spans, taxa, species, split_sentences(text))
    result = {"documents": len(mentions), "gene_mentions": sum(len(m[0]) for m in mentions.values())}
    for rule in TAXON_RULES:
        right, wrong = 0, []
        for doc_id, (spans, taxa, species, sentences) in mentions.items():
            for span, expected, got in zip(spans, taxa, assign_taxa(spans, species, rule, sentences)):
                if got in expected:
                    right += 1
                else:
                    wrong.append([doc_id, documents[doc_id].text[span[0]:span[1]], span[0], got, sorted(expected)])
        result[rule] = {"accuracy": round(100.0 * right / max(result["gene_mentions"], 1), 2), "correct": right,
                        "wrong": wrong}
    return result
