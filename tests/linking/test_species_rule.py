"""The taxon rules on 85 gene mentions hand-checked in 11 shared abstracts that name several
species (tests/fixtures/linking/species_gold.json): the default rule (preceding) is the best,
at the README's figure, and always-human (BERN2's) the worst."""

import json
from pathlib import Path

from biozoo.documents import read_documents
from biozoo.linking.evaluation import taxon_rule_accuracy
from biozoo.linking.species import assign_taxa

GOLD = Path(__file__).resolve().parents[1] / "fixtures" / "linking" / "species_gold.json"


def test_the_default_rule_on_hand_checked_gene_mentions(shared_data):
    gold = json.loads(GOLD.read_text())
    paths = [str(shared_data / "documents" / n) for n in ("NCBIdisease_Test.PubTator", "BC5CDR_Test.PubTator")]
    documents = {d.id: d for d in read_documents(paths) if d.id in gold["documents"]}
    result = taxon_rule_accuracy(documents, gold["documents"], gold["species_words"])
    assert (result["documents"], result["gene_mentions"]) == (11, 85)
    assert assign_taxa.__defaults__[0] == "preceding"
    assert result["preceding"]["correct"] == 74 and result["nearest"]["correct"] == 58  # 87.1 % and 68.2 %
    assert result["human"]["correct"] == 43 and max(result[r]["correct"] for r in result if isinstance(result[r], dict)) == 74
