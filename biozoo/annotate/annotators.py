"""Annotators: a NER model with the way it reads a document.

An annotator takes documents and returns, per document, entities `(start, end, type, score)`
with document-level offsets. `TaggerAnnotator` runs a `TokenClassifier` (fine-tuned by biozoo or
a hub checkpoint) sentence by sentence; `AionerAnnotator` runs AIONER on the units AIONER's own
code tags (a PubTator or PubMed document's `title + " " + abstract`, or each BioC passage
except references).

Example:
    >>> annotator = load_annotator("aioner_bioformer")
    >>> annotator.annotate(documents)  # [[(start, end, type, score), ...], ...]
"""

from __future__ import annotations

import dataclasses
import os

from biozoo.documents.sentences import split_sentences


def _units(document, whole_pubtator_text, skip_types=()):
    """`(text, offset)` pieces of a document that a model reads independently."""
    if whole_pubtator_text and document.source_format in ("pubtator", "pubmed-xml"):
        return [(document.text, 0)]
    return [(p.text, p.offset) for p in document.passages
            if p.text.strip() and (p.type or p.infons.get("type")) not in skip_types]


@dataclasses.dataclass
class TaggerAnnotator:
    """A `TokenClassifier` reading every passage sentence by sentence (`split_sentences`); a
    sentence longer than the model's window is read in overlapping windows."""

    task: object
    name: str
    aggregation: str = "first"
    batch_size: int = 64

    def annotate(self, documents):
        sentences, owners = [], []
        for d, document in enumerate(documents):
            for text, offset in _units(document, whole_pubtator_text=False):
                for start, end in split_sentences(text):
                    sentences.append(text[start:end])
                    owners.append((d, offset + start))
        found = [[] for _ in documents]
        if sentences:
            probabilities = self.task.token_probabilities(sentences, self.batch_size)
            grouped = self.task.group(sentences, probabilities, self.aggregation)
            for (d, base), result in zip(owners, grouped):
                for entity in result["entities"]:
                    found[d].append((base + entity["start"], base + entity["end"],
                                     entity.get("type", entity.get("entity")), entity.get("score")))
        return found


@dataclasses.dataclass
class AionerAnnotator:
    """AIONER on the units its own `AIONER_Run.py` tags."""

    tagger: object
    name: str
    entity_types: tuple = ("ALL",)
    batch_size: int = 64

    def annotate(self, documents):
        units, owners = [], []
        for d, document in enumerate(documents):
            for text, offset in _units(document, whole_pubtator_text=True, skip_types=("ref",)):
                units.append(text)
                owners.append((d, offset))
        found = [[] for _ in documents]
        for (d, base), result in zip(owners, self.tagger.annotate(units, self.batch_size, self.entity_types)):
            for entity in result["entities"]:
                found[d].append((base + entity["start"], base + entity["end"], entity["type"], entity["score"]))
        return found


def load_annotator(handle, aggregation="first", batch_size=64, entity_types=("ALL",), precision="float32"):
    """The annotator of a model handle: an AIONER preset, a `biozoo finetune ner` output, or a
    token-classification checkpoint (registry task name, hf://..., local HF directory), running
    at inference `precision` (float32, bfloat16, int8)."""
    from biozoo import presets
    from biozoo.tasks.finetuned import KIND_FILE, load_task

    if not os.path.exists(os.path.join(os.fspath(handle), KIND_FILE)) and presets.is_aioner(handle):
        from biozoo.tasks.aioner import AionerTagger

        return AionerAnnotator(AionerTagger.from_preset(handle, precision), str(handle), tuple(entity_types),
                               batch_size)
    kind, _, task = load_task(handle, precision)
    if kind != "ner":
        raise ValueError(f"{handle} is a {kind} model; annotate needs a NER model.")
    return TaggerAnnotator(task, str(handle), aggregation, batch_size)
