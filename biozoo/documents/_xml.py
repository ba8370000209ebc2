"""The XML parsing the BioC and PubMed readers share: entities declared in the file's own DOCTYPE
resolved (a BioC file may spell "TGF-&beta;"); external entities, DTDs and the network never read,
and libxml2's limit on entity expansion kept."""

from __future__ import annotations

from lxml import etree

from biozoo.errors import DataFormatError

# libxml2 before 2.11 turns its entity-amplification check off for a huge tree (billion laughs)
LIBXML_VERSION = etree.LIBXML_VERSION


def parser_options():
    """The options every `iterparse` gets: huge trees (a text node over 10 MB) only where libxml2
    keeps its entity-expansion limit for them (2.11 and later)."""
    return {"huge_tree": LIBXML_VERSION >= (2, 11), "resolve_entities": "internal", "no_network": True,
            "load_dtd": False, "remove_comments": True, "remove_pis": True}


def iterparse(stream, **options):
    """lxml's `iterparse` of `stream` at each element's end, as the readers need it."""
    return etree.iterparse(stream, events=("end",), **parser_options(), **options)


def syntax_error(name, error):
    """A DataFormatError naming file:line for lxml's `XMLSyntaxError` (whose own line is 0 when
    libxml2 told the error only to its log)."""
    line, message = error.lineno, error.msg
    last = error.error_log.last_error
    if not line and last is not None:
        line, message = last.line, last.message
    return DataFormatError(f"{name}:{line}: unparsable XML: {message}")
