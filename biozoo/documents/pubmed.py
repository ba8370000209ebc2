"""PubMed baseline/update XML (`PubmedArticleSet`), read streaming with lxml's `iterparse`, each
article cleared once read.

A document per `PubmedArticle`: id = `MedlineCitation/PMID`, a title passage (type "title", at
0) and an abstract passage (type "abstract", at `len(title) + 1`, empty when the article has
none) whose text joins the `AbstractText` sections with single spaces, each as "LABEL: text"
when it has a Label, which is PubTator's own text for such abstracts, so the document written
as PubTator has the same offsets. Inline markup (<i>, <sup>, <sub>, <b>, MathML) becomes its
text content; nothing else is changed. `PubmedBookArticle` entries are skipped and
`DeleteCitation` PMIDs are not applied; both are counted and reported once per file.
"""

from __future__ import annotations

from lxml import etree

from biozoo.documents._xml import iterparse, syntax_error
from biozoo.documents.model import Document, Passage
from biozoo.errors import DataFormatError

ENTRIES = ("PubmedArticle", "PubmedBookArticle", "DeleteCitation")


def _text(element) -> str:
    return "" if element is None else "".join(element.itertext())


def abstract_text(abstract) -> str:
    """The abstract's sections as PubTator writes them: "LABEL: text" joined by spaces."""
    if abstract is None:
        return ""
    sections = []
    for section in abstract.iterchildren("AbstractText"):
        label = section.get("Label")
        sections.append(f"{label}: {_text(section)}" if label else _text(section))
    return " ".join(sections)


def _article(element, name):
    where = f"{name}:{element.sourceline}"
    pmid = element.findtext("MedlineCitation/PMID")
    article = element.find("MedlineCitation/Article")
    if not pmid or article is None:
        missing = "PMID" if not pmid else "Article"
        return DataFormatError(f"{where}: PMID {pmid or '?'}: PubmedArticle without MedlineCitation/{missing}",
                               pmid.strip() if pmid else None)
    pmid = pmid.strip()
    title = _text(article.find("ArticleTitle")) or _text(article.find("VernacularTitle"))  # some give only that
    passages = [Passage(0, title, "title", {"type": "title"}),
                Passage(len(title) + 1, abstract_text(article.find("Abstract")), "abstract", {"type": "abstract"})]
    return Document(pmid, passages, source=f"{where} PMID {pmid}", source_format="pubmed-xml")


def _check_root(root, name):
    if root is None or root.tag != "PubmedArticleSet":
        tag = "none" if root is None else f"<{root.tag}>"
        raise DataFormatError(f"{name}: not PubMed XML: the root element is {tag}, not <PubmedArticleSet>")


def read_pubmed_xml(stream, name, report=None):
    """Yield a Document per PubmedArticle of a PubMed XML byte stream (a DataFormatError in place
    of a bad one); `report(message)` is told how many books and deletions were passed over.
    Raises DataFormatError for XML that does not parse or is not a PubmedArticleSet."""
    events = iterparse(stream, tag=ENTRIES)
    books = deletions = 0
    checked = False
    try:
        for _, element in events:
            if not checked:
                _check_root(element.getroottree().getroot(), name)
                checked = True
            if element.tag == "PubmedArticle":
                yield _article(element, name)
            elif element.tag == "PubmedBookArticle":
                books += 1
            else:
                deletions += len(element.findall("PMID"))
            element.clear()
            while element.getprevious() is not None:
                del element.getparent()[0]
    except etree.XMLSyntaxError as error:
        raise syntax_error(name, error) from None
    _check_root(events.root, name)
    if (books or deletions) and report is not None:
        report(f"{name}: {books} PubmedBookArticle entries skipped (books are not read); "
               f"{deletions} PMIDs in DeleteCitation not applied")
