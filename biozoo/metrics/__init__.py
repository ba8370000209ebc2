"""Scorers equal to the official evaluation scripts; every score is a percentage (0-100).

* :mod:`biozoo.metrics.ner` — conlleval-equal entity F1 (seqeval default mode).
* :mod:`biozoo.metrics.relation` — micro P/R/F1 over positive classes (ChemProt, DDI, GAD).
* :mod:`biozoo.metrics.squad` — official SQuAD v1.1 / v2.0 evaluation.
* :mod:`biozoo.metrics.bioasq` — official BioASQ factoid scores, BioBERT's n-best transform and
  the golden of BioASQ-as-SQuAD snippets.
* :mod:`biozoo.metrics.hoc` — the two published HoC document-level F1 variants, per-label
  threshold tuning.
* :mod:`biozoo.metrics.seeds` — mean and sample standard deviation of scores over seeds.

The command line (``biozoo score``) is ``biozoo._commands.score``.

Importing this package is light (no TensorFlow; seqeval is imported on first use).
"""

from biozoo.metrics.bioasq import aggregate_factoid, factoid_scores
from biozoo.metrics.hoc import hoc_f1_blue, hoc_micro_f1_linkbert
from biozoo.metrics.ner import entity_scores, read_conlleval
from biozoo.metrics.relation import micro_prf
from biozoo.metrics.squad import evaluate_v1, evaluate_v2

__all__ = [
    "entity_scores",
    "read_conlleval",
    "micro_prf",
    "evaluate_v1",
    "evaluate_v2",
    "factoid_scores",
    "aggregate_factoid",
    "hoc_micro_f1_linkbert",
    "hoc_f1_blue",
]
