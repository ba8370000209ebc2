"""Annotators: a NER model with the way it reads a document.

An annotator takes documents and returns, per document, entities `(start, end, type, score,
model)` with document-level offsets (model None: the annotator's own name). `TaggerAnnotator`
runs a `TokenClassifier` (fine-tuned by biozoo or a hub checkpoint) sentence by sentence;
`CascadeAnnotator` runs a small tagger everywhere and a large one where the small is unsure;
`AionerAnnotator` runs AIONER on the units AIONER's own code tags (a PubTator or PubMed
document's `title + " " + abstract`, or each BioC passage except references).

Example:
    >>> annotator = load_annotator("aioner_bioformer")
    >>> annotator.annotate(documents)  # [[(start, end, type, score, model), ...], ...]
"""

from __future__ import annotations

import dataclasses

from biozoo.choices import CONFIDENCE_MEASURES, DEFAULT_AGGREGATION, DEFAULT_CONFIDENCE_MEASURE, DEFAULT_PRECISION
from biozoo.documents.sentences import split_sentences
from biozoo.task_kinds import task_kind
from biozoo.tasks.finetuned import load_task


def _units(document, whole_pubtator_text, skip_types=()):
    """`(text, offset)` pieces of a document that a model reads independently."""
    if whole_pubtator_text and document.whole_text:
        return [(document.text, 0)]
    return [(p.text, p.offset) for p in document.passages
            if p.text.strip() and (p.type or p.infons.get("type")) not in skip_types]


@dataclasses.dataclass
class Sentences:
    """The sentences of some documents: `texts`, and per sentence `owners` (the document's index,
    the sentence's document-level offset)."""

    texts: list
    owners: list

    @classmethod
    def of(cls, documents):
        texts, owners = [], []
        for d, document in enumerate(documents):
            for text, offset in _units(document, whole_pubtator_text=False):
                for start, end in split_sentences(text):
                    texts.append(text[start:end])
                    owners.append((d, offset + start))
        return cls(texts, owners)

    def place(self, entities, count, models=None):
        """Per-sentence entities -> per-document `(start, end, type, score, model)`, for `count`
        documents; `models[i]` names the model of sentence i (default: None)."""
        found = [[] for _ in range(count)]
        for i, ((d, base), result) in enumerate(zip(self.owners, entities)):
            for entity in result:
                found[d].append((base + entity["start"], base + entity["end"], entity.get("type", entity.get("entity")),
                                 entity.get("score"), None if models is None else models[i]))
        return found


@dataclasses.dataclass
class TaggerAnnotator:
    """A `TokenClassifier` reading every passage sentence by sentence (`split_sentences`); a
    sentence longer than the model's window is read in overlapping windows.

    Example:
        >>> tagger = load_annotator("bioformer_8l_ncbi_disease")  # a TaggerAnnotator
        >>> found = tagger.annotate([Document("1", [Passage(0, "Familial adenomatous polyposis.")])])
        >>> found[0]  # the document's entities: [(start, end, type, score, model), ...]
    """

    task: object
    name: str
    aggregation: str = DEFAULT_AGGREGATION
    batch_size: int = 64

    def annotate(self, documents):
        sentences = Sentences.of(documents)
        entities, _ = self.tag(sentences.texts)
        return sentences.place(entities, len(documents), [self.name] * len(sentences.texts))

    def summary(self):
        """What the run summary says of this annotator after a run ("" for nothing)."""
        return ""

    def tag(self, texts, measure=None):
        """Per text, its entities (and, with a confidence `measure`, the model's confidence in it
        as `TokenClassifier.confidence` gives it; else None)."""
        if not texts:
            return [], []
        probabilities = self.task.token_probabilities(texts, self.batch_size)
        entities = [result["entities"] for result in self.task.group(texts, probabilities, self.aggregation)]
        return entities, (self.task.confidence(texts, probabilities, measure) if measure else None)


@dataclasses.dataclass
class CascadeFirstPass:
    """What the small model of a cascade found in some documents, and which sentences go on."""

    sentences: Sentences
    entities: list
    confidence: list
    escalate: list  # indices of the sentences the large model reads
    count: int  # documents
    model: str  # the small model's name


@dataclasses.dataclass
class CascadeAnnotator:
    """Cascade inference: the `small` tagger reads every sentence; a sentence in which it is
    unsure (its `confidence` below `threshold`: the lowest per-word top probability, or
    margin between the two top labels, as `measure` says) is read again by the `large`
    tagger, whose entities replace the small model's there. Each entity names the model that
    found it. `sentences` and `escalated` count what it has read.

    Example:
        >>> cascade = CascadeAnnotator(load_annotator("out/minilm"), load_annotator("out/large"), 0.9)
        >>> cascade.annotate(documents); cascade.escalated / cascade.sentences
    """

    small: TaggerAnnotator
    large: TaggerAnnotator
    threshold: float
    measure: str = DEFAULT_CONFIDENCE_MEASURE
    sentences: int = 0
    escalated: int = 0

    @property
    def name(self):
        return f"cascade({self.small.name},{self.large.name})"

    @property
    def models(self):
        """The names its entities carry."""
        return self.small.name, self.large.name

    def annotate(self, documents):
        return self.second_pass(self.first_pass(documents))

    def summary(self):
        fraction = self.escalated / self.sentences if self.sentences else 0.0
        return f"; cascade: {self.escalated} of {self.sentences} sentences escalated ({fraction:.1%})"

    def first_pass(self, documents):
        sentences = Sentences.of(documents)
        entities, confidence = self.small.tag(sentences.texts, self.measure)
        escalate = [i for i, c in enumerate(confidence) if c < self.threshold]
        return CascadeFirstPass(sentences, entities, confidence, escalate, len(documents), self.small.name)

    def second_pass(self, first):
        entities, models = list(first.entities), [first.model] * len(first.entities)
        large, _ = self.large.tag([first.sentences.texts[i] for i in first.escalate])
        for i, found in zip(first.escalate, large):
            entities[i], models[i] = found, self.large.name
        self.sentences += len(first.entities)
        self.escalated += len(first.escalate)
        return first.sentences.place(entities, first.count, models)


@dataclasses.dataclass
class AionerAnnotator:
    """AIONER on the units its own `AIONER_Run.py` tags (PubTator: title and abstract as one
    text; BioC: each passage but references), for the `entity_types` asked for (ALL: every type).

    Example:
        >>> aioner = load_annotator("aioner_bioformer", entity_types=("Gene", "Disease"))
        >>> aioner.annotate(read_documents(["abstracts.PubTator"]))
    """

    tagger: object
    name: str
    entity_types: tuple = ("ALL",)
    batch_size: int = 64

    def summary(self):
        return ""

    def annotate(self, documents):
        units, owners = [], []
        for d, document in enumerate(documents):
            for text, offset in _units(document, whole_pubtator_text=True, skip_types=("ref",)):
                units.append(text)
                owners.append((d, offset))
        found = [[] for _ in documents]
        for (d, base), result in zip(owners, self.tagger.annotate(units, self.batch_size, self.entity_types)):
            for entity in result["entities"]:
                found[d].append((base + entity["start"], base + entity["end"], entity["type"], entity["score"], None))
        return found


# task kind -> how its models annotate documents
ANNOTATORS = {
    "ner": lambda task, name, options: TaggerAnnotator(task, name, options["aggregation"], options["batch_size"]),
    "aioner": lambda task, name, options: AionerAnnotator(task, name, tuple(options["entity_types"]),
                                                          options["batch_size"]),
}


def load_annotator(handle, aggregation=DEFAULT_AGGREGATION, batch_size=64, entity_types=("ALL",),
                   precision=DEFAULT_PRECISION):
    """The annotator of a model handle: a task preset of a kind that tags entities (`ANNOTATORS`): an
    AIONER model, a `biozoo finetune ner` output, or a token-classification checkpoint (registry task
    name, hf://..., local HF directory), running at inference `precision` (float32, bfloat16, int8)."""
    kind, _, task = load_task(handle, precision)
    if kind not in ANNOTATORS:
        found = task_kind(kind)
        raise ValueError(f"{handle} is {found.article()} {kind} model ({found.model}); annotate needs a model that "
                         f"tags entities ({', '.join(ANNOTATORS)})")
    options = {"aggregation": aggregation, "batch_size": batch_size, "entity_types": entity_types}
    return ANNOTATORS[kind](task, str(handle), options)


def load_cascade(small, large, threshold, measure=DEFAULT_CONFIDENCE_MEASURE, **options):
    """A `CascadeAnnotator` of two token-classification model handles (`load_annotator`'s
    `options`); AIONER models have no per-word confidence and are refused."""
    if measure not in CONFIDENCE_MEASURES:
        raise ValueError(f"measure must be one of {', '.join(CONFIDENCE_MEASURES)}, got {measure!r}")
    if not threshold >= 0.0:  # above every confidence (1 + 1e-6, say) escalates every sentence
        raise ValueError(f"the escalation threshold must be 0 or more, got {threshold}")
    taggers = [load_annotator(handle, **options) for handle in (small, large)]
    for tagger in taggers:
        if not hasattr(tagger, "tag"):
            raise ValueError(f"{tagger.name}: a cascade needs token-classification models; AIONER models give no "
                             "per-word confidence")
    return CascadeAnnotator(taggers[0], taggers[1], float(threshold), measure)
