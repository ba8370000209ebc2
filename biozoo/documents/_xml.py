"""The XML parsing the BioC and PubMed readers share: entities declared in the file's own DOCTYPE
resolved (a BioC file may spell "TGF-&beta;"); external entities, DTDs and the network never read,
and libxml2's limit on entity expansion kept."""

from __future__ import annotations

from lxml import etree

from biozoo.errors import DataFormatError


def iterparse(stream, **options):
    """lxml's `iterparse` of `stream` at each element's end, as the readers need it."""
    return etree.iterparse(stream, events=("end",), huge_tree=True, resolve_entities="internal", no_network=True,
                           load_dtd=False, remove_comments=True, remove_pis=True, **options)


def syntax_error(name, error):
    """A DataFormatError naming file:line for lxml's `XMLSyntaxError` (whose own line is 0 when
    libxml2 told the error only to its log)."""
    line, message = error.lineno, error.msg
    last = error.error_log.last_error
    if not line and last is not None:
        line, message = last.line, last.message
    return DataFormatError(f"{name}:{line}: unparsable XML: {message}")
