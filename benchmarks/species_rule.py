"""Which species a gene mention is about (issue 36): each rule of biozoo.linking.species
(nearest species mention, the preceding one in the sentence, the document's most frequent,
always human) against 85 gene mentions hand-checked in 11 shared abstracts that name several
species (tests/fixtures/linking/species_gold.json). Prints JSON: accuracy per rule, and the
mentions each rule gets wrong.

    python benchmarks/species_rule.py
"""

import json

from _shared import ROOT, shared_data

from biozoo.documents import read_documents
from biozoo.linking.evaluation import taxon_rule_accuracy


def main():
    gold = json.loads((ROOT / "tests" / "fixtures" / "linking" / "species_gold.json").read_text())
    paths = [shared_data() / "documents" / name for name in ("NCBIdisease_Test.PubTator", "BC5CDR_Test.PubTator")]
    documents = {d.id: d for d in read_documents([str(p) for p in paths]) if d.id in gold["documents"]}
    print(json.dumps(taxon_rule_accuracy(documents, gold["documents"], gold["species_words"]), indent=1))


if __name__ == "__main__":
    main()
