"""AIONER models scored on NER data: token<TAB>tag files, entity-level P/R/F1 as conlleval counts them.

AIONER tags raw text with its own sentence and word splitting; here each gold sentence is given as
its words joined by spaces, the entities AIONER finds are read back onto those words (a word takes
the type of the entity it lies in), and only the entity types the gold data has are asked for (one
AIONER pass per type), so a Disease corpus is not scored against AIONER's genes. AIONER models are
imported, not fine-tuned: `build_task` and `batches` refuse.

Example:
    >>> adapter = AionerAdapter()
    >>> adapter.evaluate(AionerTagger.from_preset("aioner_bioformer"), adapter.load("ncbi-disease")["test"])
"""

from __future__ import annotations

from biozoo.metrics.ner import entity_scores
from biozoo.tasks.adapters.ner import NerAdapter
from biozoo.tasks.aioner import ENTITY_TYPES


class AionerAdapter(NerAdapter):
    """Evaluation of an AIONER model on NER files (typed IOB2, BLURB bare tags, BioBERT files): the
    NER adapter's data and options, AIONER's own tagging."""

    kind = "aioner"

    def build_task(self, preset, splits, hp):
        raise ValueError("AIONER models are imported (biozoo.convert.aioner), not fine-tuned by biozoo: fine-tune a "
                         "token classifier on the same data with `biozoo finetune ner --preset bioformer_8l ...`")

    batches = build_task

    def evaluate(self, task, sentences):
        gold_types = sorted({t.split("-", 1)[-1] for s in sentences for t in s.tags if t != "O"})
        asked = [t for t in gold_types if t in ENTITY_TYPES]
        if gold_types and not asked:
            raise ValueError(f"AIONER tags {', '.join(ENTITY_TYPES)} and the data's entities are {gold_types}: no type "
                             "in common, every entity would count as wrong")
        texts, starts = [], []
        for sentence in sentences:
            offsets, position = [], 0
            for word in sentence.words:
                offsets.append(position)
                position += len(word) + 1
            texts.append(" ".join(sentence.words))
            starts.append(offsets)
        results = task.annotate(texts, entity_types=asked or ("ALL",)) if texts else []
        predicted = [_word_tags(s.words, offsets, result["entities"])
                     for s, offsets, result in zip(sentences, starts, results)]
        scores = entity_scores([s.tags for s in sentences], predicted)
        scores["sentences"] = len(sentences)
        scores["entity_types"] = asked or ["ALL"]
        return scores


def _word_tags(words, starts, entities):
    """IOB2 tags of `words` (at character `starts`) from entities over their joined text: a word
    inside an entity's span takes its type, the entity's first word B-, the others I-."""
    tags = ["O"] * len(words)
    for entity in sorted(entities, key=lambda e: (e["start"], -e["end"])):
        inside = [i for i, (word, start) in enumerate(zip(words, starts))
                  if start < entity["end"] and start + len(word) > entity["start"] and tags[i] == "O"]
        for k, i in enumerate(inside):
            tags[i] = ("B-" if k == 0 else "I-") + entity["type"]
    return tags
