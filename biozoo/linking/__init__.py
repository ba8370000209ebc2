"""Concept ids for mentions: dictionaries by name (MeSH, CTD, NCBI Gene, NCBI Taxonomy,
Cellosaurus, one's own TSV), abbreviations, species for genes, and a linker (strings, then
nearest neighbours of a biozoo encoder's embeddings, SapBERT's way), trainable on a dictionary.

Example:
    >>> from biozoo.linking import Linker, NameEncoder, load_dictionary
    >>> linker = Linker(load_dictionary("ctd-diseases", trust_unverified=True),
    ...                 NameEncoder.from_preset("sapbert_pubmedbert_fulltext"))
    >>> linker.link(["heart attack"])[0]

The names below are imported when first used, so that the command line reads the abbreviation
engines without importing Keras.
"""

from biozoo._lazy import lazy_names

# public name -> the module that defines it
_PUBLIC = {
    "Abbreviation": "biozoo.linking.abbreviations",
    "find_abbreviations": "biozoo.linking.abbreviations",
    "Concept": "biozoo.linking.concepts",
    "Dictionary": "biozoo.linking.concepts",
    "NameEncoder": "biozoo.linking.encoder",
    "Link": "biozoo.linking.linker",
    "Linker": "biozoo.linking.linker",
    "DocumentLinker": "biozoo.linking.pipeline",
    "default_link_types": "biozoo.linking.pipeline",
    "load_document_linker": "biozoo.linking.pipeline",
    "parse_link_spec": "biozoo.linking.pipeline",
    "dictionary_names": "biozoo.linking.sources",
    "download_dictionary": "biozoo.linking.sources",
    "load_dictionary": "biozoo.linking.sources",
    "assign_taxa": "biozoo.linking.species",
}

__all__ = sorted(_PUBLIC)

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)
