"""Data readers for the biomedical fine-tuning tasks (pure Python: no TensorFlow here).

* :mod:`biozoo.data.ner` — NER: typed IOB2 TSV, BLURB bare tags, BioBERT files; split lookup.
* :mod:`biozoo.data.relation` — relation extraction: BLURB, ELECTRA and BioBERT layouts.
* :mod:`biozoo.data.qa` — SQuAD v1.1/v2.0 json (incl. BioASQ-as-SQuAD), BioASQ golden json.
* :mod:`biozoo.data.hoc` — Hallmarks of Cancer (BLURB layout) and abstract grouping.
* :mod:`biozoo.data.embedded` — corpora packaged with biozoo, by name (``ncbi-disease``).

Every reader also reads gzip-compressed files (``.gz``). Every reader raises :class:`biozoo.errors.DataFormatError` naming the file and line of a
malformed row.
"""

# The label of what carries none: padding, special tokens, a word's continuation pieces,
# unmasked tokens. Losses and counts skip it (transformers' -100).
IGNORE_LABEL = -100

from biozoo.data.embedded import EMBEDDED_CORPORA, embedded_corpus
from biozoo.data.hoc import HocAbstract, HocSentence, group_by_abstract, read_hoc
from biozoo.data.ner import Sentence, find_split, read_ner
from biozoo.data.qa import QAExample, read_bioasq_golden, read_squad
from biozoo.data.relation import RelationExample, read_relation

__all__ = [
    "EMBEDDED_CORPORA",
    "embedded_corpus",
    "Sentence",
    "read_ner",
    "find_split",
    "RelationExample",
    "read_relation",
    "QAExample",
    "read_squad",
    "read_bioasq_golden",
    "HocSentence",
    "HocAbstract",
    "read_hoc",
    "group_by_abstract",
]
