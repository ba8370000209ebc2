"""Abbreviation precision and recall (issue 36) on hand-checked abstracts: the first 20 of the
shared NCBI-disease test documents and the first 20 of BC5CDR's (40 abstracts, 79 definitions,
tests/fixtures/linking/abbreviations_gold.json says how they were checked), for each engine
biozoo has (schwartz-hearst; ab3p where pyab3p is installed). Prints JSON: per engine precision,
recall, F1 and the pairs missed or wrong.

    python benchmarks/abbreviations_gold.py
"""

import json

from _shared import ROOT, shared_data

from biozoo.documents import read_documents
from biozoo.linking.abbreviations import ENGINES, find_abbreviations
from biozoo.linking.evaluation import abbreviation_scores


def main():
    gold = json.loads((ROOT / "tests" / "fixtures" / "linking" / "abbreviations_gold.json").read_text())["documents"]
    paths = [shared_data() / "documents" / name for name in ("NCBIdisease_Test.PubTator", "BC5CDR_Test.PubTator")]
    documents = {d.id: d for d in read_documents([str(p) for p in paths]) if d.id in gold}
    assert set(documents) == set(gold), sorted(set(gold) - set(documents))
    out = {"abstracts": len(gold), "definitions": sum(map(len, gold.values()))}
    for engine in ENGINES:
        try:
            found = {i: [(a.short, a.long) for a in find_abbreviations(d.text, engine)] for i, d in documents.items()}
        except ImportError as error:
            out[engine] = f"not run: {error}"
            continue
        out[engine] = abbreviation_scores(gold, found)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
