"""Concept ids for mentions: dictionaries by name (MeSH, CTD, NCBI Gene, NCBI Taxonomy,
Cellosaurus, one's own TSV), abbreviations, species for genes, and a linker (strings, then
nearest neighbours of a biozoo encoder's embeddings, SapBERT's way), trainable on a dictionary.

Example:
    >>> from biozoo.linking import Linker, NameEncoder, load_dictionary
    >>> linker = Linker(load_dictionary("ctd-diseases", trust_unverified=True),
    ...                 NameEncoder.from_preset("sapbert_pubmedbert_fulltext"))
    >>> linker.link(["heart attack"])[0]
"""

from biozoo.linking.abbreviations import Abbreviation, find_abbreviations
from biozoo.linking.concepts import Concept, Dictionary
from biozoo.linking.encoder import NameEncoder
from biozoo.linking.linker import Link, Linker
from biozoo.linking.pipeline import DocumentLinker, load_document_linker, parse_link_spec
from biozoo.linking.sources import dictionary_names, download_dictionary, load_dictionary
from biozoo.linking.species import assign_taxa

__all__ = [
    "Abbreviation", "Concept", "Dictionary", "DocumentLinker", "Link", "Linker", "NameEncoder",
    "assign_taxa", "dictionary_names", "download_dictionary", "find_abbreviations", "load_dictionary",
    "load_document_linker", "parse_link_spec",
]
