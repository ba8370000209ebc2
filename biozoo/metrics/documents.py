"""Mention-level NER scores by character offsets, for documents (PubTator, BioC, ...).

Two ways of counting a predicted mention as correct, both per type and micro over all types:

* **strict**: same document, same type and the same spans (``start``/``end``; a discontinuous
  mention compares its whole list of spans), as the BioCreative evaluations count.
* **approximate**: same document, same type and the spans overlap by at least one character
  (or are identical, so that an empty span found exactly is no worse than strict).
  Gold and predicted mentions are paired one to one: ``tp`` is the largest number of
  overlapping (gold, pred) pairs in which no mention is used twice (a maximum bipartite
  matching; see :func:`match_overlapping`). Recall counts the matched gold mentions,
  precision the matched predictions (the same number, ``tp``).

Mentions are compared as ``(spans, type)`` inside one document. Identical mentions (same
spans and type) listed twice in one input are counted once; how many were removed is
reported in ``duplicates_removed``. Scores are percentages (0-100), as in
:func:`biozoo.metrics.ner.entity_scores`, whose result shape each section repeats.

    >>> gold = {"d1": [(0, 7, "Chemical"), (20, 27, "Disease")]}
    >>> pred = {"d1": [(0, 7, "Chemical"), (19, 27, "Disease")]}
    >>> result = score_offsets(gold, pred)
    >>> result["strict"]["counts"]["tp"], result["approximate"]["counts"]["tp"]
    (1, 2)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from typing import Iterable, Mapping, NamedTuple

from biozoo.documents.model import ABBREVIATION_TYPES
from biozoo.metrics.ner import prf

__all__ = ["Mention", "document_mentions", "match_overlapping", "resolve_source", "score_mentions", "score_offsets"]

_SOURCES = ("existing", "predictions", "all")
_IDS_SHOWN = 10


class Mention(NamedTuple):
    """One mention of one document: its spans, sorted, as ``((start, end), ...)``, and its type."""

    spans: tuple[tuple[int, int], ...]
    type: str


# ------------------------------------------------------------------ building mentions


def _as_mention(item, doc_id) -> Mention:
    """A Mention from a Mention, an ``(start, end, type)`` triple or an annotation-like object."""
    if isinstance(item, Mention):
        spans, type_ = item.spans, item.type
    elif isinstance(item, tuple) and len(item) == 3:
        spans, type_ = ((item[0], item[1]),), item[2]
    elif hasattr(item, "spans") and hasattr(item, "type"):
        spans, type_ = item.spans(), item.type
    else:
        raise TypeError(f"document {doc_id}: expected (start, end, type), a Mention or an Annotation, got {item!r}")
    spans = tuple(sorted((int(start), int(end)) for start, end in spans))
    if not spans:
        raise ValueError(f"document {doc_id}: mention of type {type_!r} has no spans")
    for start, end in spans:
        if start < 0 or end < start:
            raise ValueError(f"document {doc_id}: bad mention offsets {start}-{end} (type {type_!r})")
    return Mention(spans, type_)


def _annotations(doc, source: str):
    if source == "existing":
        return doc.existing_annotations()
    if source == "predictions":
        return list(doc.predictions)
    return doc.existing_annotations() + list(doc.predictions)




def document_mentions(documents, source: str = "existing") -> dict[str, list[Mention]]:
    """The mentions of each document, by document id, in input order (duplicates kept).

    ``source``: ``"existing"`` (the annotations the input carried), ``"predictions"`` (what a
    model added) or ``"all"`` (both). Abbreviation definitions (``ABBREVIATION_TYPES``) are no
    entity mentions and are left out. A document id given twice raises ``ValueError``.

        >>> from biozoo.documents import Annotation, Document, Passage
        >>> doc = Document("7", [Passage(0, "Aspirin helps.")])
        >>> doc.passages[0].annotations.append(Annotation(0, 7, "Chemical", "Aspirin"))
        >>> document_mentions([doc])
        {'7': [Mention(spans=((0, 7),), type='Chemical')]}
    """
    if source not in _SOURCES:
        raise ValueError(f"source must be one of {', '.join(_SOURCES)}, got {source!r}")
    by_id: dict[str, list[Mention]] = {}
    for doc in documents:
        if doc.id in by_id:
            where = f" ({doc.source})" if getattr(doc, "source", None) else ""
            raise ValueError(f"document id {doc.id!r} appears twice{where}")
        by_id[doc.id] = [_as_mention(a, doc.id) for a in _annotations(doc, source) if a.type not in ABBREVIATION_TYPES]
    return by_id


def _deduplicate(mentions_by_doc: Mapping[str, Iterable]) -> tuple[dict[str, list[Mention]], int]:
    """Mentions per document with identical ones kept once (first occurrence), and how many went."""
    unique_by_doc, removed = {}, 0
    for doc_id, items in mentions_by_doc.items():
        mentions = [_as_mention(item, doc_id) for item in items]
        unique = list(dict.fromkeys(mentions))
        removed += len(mentions) - len(unique)
        unique_by_doc[doc_id] = unique
    return unique_by_doc, removed


# ------------------------------------------------------------------ matching


def _merged(spans) -> list[tuple[int, int]]:
    """Sorted spans with overlapping or touching ones joined."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def _overlap(a: Mention, b: Mention) -> int:
    """Characters that the spans of ``a`` and ``b`` share."""
    return sum(max(0, min(end_a, end_b) - max(start_a, start_b))
               for start_a, end_a in _merged(a.spans) for start_b, end_b in _merged(b.spans))


def _candidate_pairs(gold: list[Mention], pred: list[Mention]) -> list[tuple[int, int]]:
    """Same-type ``(gold index, pred index)`` pairs that overlap (or are identical, which
    matters for empty spans only), largest overlap first, then by gold spans, then by pred
    spans. Only predictions near a gold mention are looked at."""
    by_start = sorted(range(len(pred)), key=lambda pi: pred[pi].spans[0])
    starts = [pred[pi].spans[0][0] for pi in by_start]
    longest = max((max(end for _, end in p.spans) - p.spans[0][0] for p in pred), default=0)
    scored = []
    for gi, g in enumerate(gold):
        g_start, g_end = g.spans[0][0], max(end for _, end in g.spans)
        low, high = bisect_left(starts, g_start - longest), bisect_right(starts, g_end)
        for pi in by_start[low:high]:
            if pred[pi].type == g.type:
                size = _overlap(g, pred[pi])
                if size or g == pred[pi]:
                    scored.append((-size, g.spans, pred[pi].spans, gi, pi))
    return [(gi, pi) for *_, gi, pi in sorted(scored)]


def match_overlapping(gold: list[Mention], pred: list[Mention]) -> list[tuple[int, int]]:
    """One-to-one pairs ``(gold index, pred index)`` of same-type mentions that overlap, as many
    as possible (a maximum bipartite matching), sorted.

    Rule: (1) greedy: candidate pairs are taken in a fixed order, largest overlap (in
    characters) first, ties by gold spans then pred spans, when neither mention is taken yet;
    (2) then each gold mention still unmatched, in the same order, is matched if an augmenting
    path exists (other pairs are moved to free predictions they also overlap, none is dropped).
    Step 2 makes the number of pairs the maximum possible, whatever the order; the order only
    decides which pairs are reported. Greedy alone can fall short:

        >>> g = [Mention(((0, 10),), "X"), Mention(((10, 20),), "X")]
        >>> p = [Mention(((2, 11),), "X"), Mention(((0, 1),), "X")]
        >>> match_overlapping(g, p)  # greedy alone pairs g0-p0 (8 chars) and leaves g1 and p1 out
        [(0, 1), (1, 0)]
    """
    pairs = _candidate_pairs(gold, pred)
    candidates = defaultdict(list)  # gold index -> pred indices, in pair order
    for gi, pi in pairs:
        candidates[gi].append(pi)
    gold_of_pred: dict[int, int] = {}
    matched: set[int] = set()
    for gi, pi in pairs:  # (1) greedy
        if pi not in gold_of_pred and gi not in matched:
            gold_of_pred[pi] = gi
            matched.add(gi)
    for gi in dict.fromkeys(gi for gi, _ in pairs):  # (2) augmenting paths
        if gi not in matched and _augment(gi, candidates, gold_of_pred):
            matched.add(gi)
    return sorted((gi, pi) for pi, gi in gold_of_pred.items())


def _augment(root: int, candidates, gold_of_pred: dict[int, int]) -> bool:
    """Match gold ``root`` along an augmenting path (depth first, free predictions tried first,
    each prediction visited once); update ``gold_of_pred`` and say whether it worked."""
    seen: set[int] = set()
    path: list[tuple[int, int]] = []  # (gold, the matched pred it would take over)
    stack = [(root, iter(candidates[root]))]
    while stack:
        gi, options = stack[-1]
        free = next((pi for pi in candidates[gi] if pi not in gold_of_pred), None)
        if free is not None:
            gold_of_pred[free] = gi
            for g, p in path:
                gold_of_pred[p] = g
            return True
        pi = next((pi for pi in options if pi not in seen), None)
        if pi is None:
            stack.pop()
            if path:
                path.pop()
            continue
        seen.add(pi)
        path.append((gi, pi))
        stack.append((gold_of_pred[pi], iter(candidates[gold_of_pred[pi]])))
    return False


# ------------------------------------------------------------------ counting


def _type_counts(gold_by_doc, pred_by_doc, approximate: bool) -> dict[str, list[int]]:
    """``{type: [gold, pred, tp]}`` summed over the documents."""
    counts = defaultdict(lambda: [0, 0, 0])
    for doc_id in sorted(set(gold_by_doc) | set(pred_by_doc)):
        gold, pred = gold_by_doc.get(doc_id, []), pred_by_doc.get(doc_id, [])
        for m in gold:
            counts[m.type][0] += 1
        for m in pred:
            counts[m.type][1] += 1
        if approximate:
            matched = [gold[gi] for gi, _ in match_overlapping(gold, pred)]
        else:
            matched = set(gold) & set(pred)
        for m in matched:
            counts[m.type][2] += 1
    return counts


def _scores(n_gold: int, n_pred: int, tp: int) -> dict:
    precision, recall, f1 = prf(tp, n_pred, n_gold)
    return {"precision": precision, "recall": recall, "f1": f1}


def _section(counts: dict[str, list[int]]) -> dict:
    """entity_scores' shape: micro scores, ``per_type`` and ``counts``, with tp/fp/fn added."""
    per_type = {}
    for type_ in sorted(counts):
        n_gold, n_pred, tp = counts[type_]
        per_type[type_] = {**_scores(n_gold, n_pred, tp), "support": n_gold,
                           "tp": tp, "fp": n_pred - tp, "fn": n_gold - tp}
    n_gold, n_pred, tp = (sum(c[i] for c in counts.values()) for i in range(3))
    return {
        **_scores(n_gold, n_pred, tp),
        "per_type": per_type,
        "counts": {"gold": n_gold, "pred": n_pred, "correct": tp, "tp": tp, "fp": n_pred - tp, "fn": n_gold - tp},
    }


def _check_same_documents(gold_ids, pred_ids, allow_missing: bool) -> tuple[list[str], list[str]]:
    only_gold = sorted(set(gold_ids) - set(pred_ids))
    only_pred = sorted(set(pred_ids) - set(gold_ids))
    if (only_gold or only_pred) and not allow_missing:
        problems = []
        for ids, where in ((only_gold, "only in gold"), (only_pred, "only in pred")):
            if ids:
                more = f" and {len(ids) - _IDS_SHOWN} more" if len(ids) > _IDS_SHOWN else ""
                problems.append(f"{len(ids)} document(s) {where}: {', '.join(ids[:_IDS_SHOWN])}{more}")
        raise ValueError("gold and pred hold different documents: " + "; ".join(problems)
                         + " (allow_missing / --allow-missing counts them: gold-only mentions as FN, pred-only as FP)")
    return only_gold, only_pred


def score_offsets(gold: Mapping[str, Iterable], pred: Mapping[str, Iterable], *, allow_missing: bool = False) -> dict:
    """Strict and approximate mention scores from mentions by document id.

    Args:
        gold, pred: ``{doc_id: mentions}``; a mention is ``(start, end, type)``, a
            :class:`Mention` or an annotation with ``spans()`` and ``type``. List every document,
            even one without mentions.
        allow_missing: score documents found on one side only (gold-only: all FN, pred-only:
            all FP) instead of raising ``ValueError`` naming them.

    Returns:
        ``{"strict": S, "approximate": S, "documents": {"gold", "pred", "only_in_gold",
        "only_in_pred"}, "mentions": {"gold", "pred"}, "duplicates_removed": {"gold", "pred"}}``,
        each ``S`` shaped like :func:`~biozoo.metrics.ner.entity_scores`' result:
        ``{"precision", "recall", "f1", "per_type": {type: {"precision", "recall", "f1",
        "support", "tp", "fp", "fn"}}, "counts": {"gold", "pred", "correct", "tp", "fp", "fn"}}``.
        Mention counts are after duplicates were removed.

        >>> score_offsets({"a": [(0, 3, "X")]}, {"a": [(0, 3, "X"), (0, 3, "X")]})["duplicates_removed"]
        {'gold': 0, 'pred': 1}
    """
    only_gold, only_pred = _check_same_documents(gold, pred, allow_missing)
    gold_by_doc, gold_duplicates = _deduplicate(gold)
    pred_by_doc, pred_duplicates = _deduplicate(pred)
    return {
        "strict": _section(_type_counts(gold_by_doc, pred_by_doc, approximate=False)),
        "approximate": _section(_type_counts(gold_by_doc, pred_by_doc, approximate=True)),
        "documents": {"gold": len(gold_by_doc), "pred": len(pred_by_doc),
                      "only_in_gold": only_gold, "only_in_pred": only_pred},
        "mentions": {"gold": sum(map(len, gold_by_doc.values())), "pred": sum(map(len, pred_by_doc.values()))},
        "duplicates_removed": {"gold": gold_duplicates, "pred": pred_duplicates},
    }


def _texts_differ(gold_docs, pred_docs) -> list[str]:
    """Ids of documents whose text differs between gold and pred (both non-empty): their offsets
    do not point at the same characters."""
    gold_text = {doc.id: doc.text for doc in gold_docs}
    differ = []
    for doc in pred_docs:
        text = gold_text.get(doc.id)
        if text and doc.text and text != doc.text:
            differ.append(doc.id)
    return sorted(differ)


def resolve_source(documents: list, source: str, side: str = "pred") -> str:
    """``source`` itself, or for ``"auto"``:

    * ``side="pred"``: ``"predictions"`` when any document carries predictions, else
      ``"existing"`` (a PubTator prediction file has plain annotations; a JSONL or BioC file that
      ``biozoo annotate`` wrote from a gold file has both, and its input annotations are the
      gold, not predictions: BioC marks biozoo's predictions by their "annotator" infon,
      "biozoo:MODEL", and reads them back as predictions).
    * ``side="gold"``: ``"existing"`` when any document carries entity annotations, else
      ``"predictions"`` when any carries predictions (another model's output as silver gold),
      else ``"existing"``.

        >>> from biozoo.documents import Document
        >>> resolve_source([Document("1", [])], "auto")
        'existing'
    """
    if side not in ("gold", "pred"):
        raise ValueError(f"side must be 'gold' or 'pred', got {side!r}")
    if source == "auto":
        has_predictions = any(doc.predictions for doc in documents)
        if side == "pred":
            return "predictions" if has_predictions else "existing"
        has_annotations = any(a.type not in ABBREVIATION_TYPES for doc in documents for a in doc.existing_annotations())
        return "predictions" if has_predictions and not has_annotations else "existing"
    if source not in _SOURCES:
        raise ValueError(f"source must be auto or one of {', '.join(_SOURCES)}, got {source!r}")
    return source


def score_mentions(
    gold: Iterable,
    pred: Iterable,
    *,
    gold_from: str = "existing",
    pred_from: str = "auto",
    allow_missing: bool = False,
) -> dict:
    """Strict and approximate mention scores of predicted documents against gold documents.

    Args:
        gold, pred: :class:`biozoo.documents.Document` iterables (any order; ids must be unique).
        gold_from, pred_from: which annotations count: ``"existing"`` (those the input file
            carried), ``"predictions"`` (added by a model), ``"all"`` (both) or ``"auto"``
            (see :func:`resolve_source`, which prefers a gold file's annotations and a pred
            file's predictions; decided once for the whole side).
        allow_missing: see :func:`score_offsets`.

    Returns:
        :func:`score_offsets`' result plus ``"sources"``: ``{"gold", "pred"}``, the annotations
        used on each side (``"auto"`` resolved), ``"abbreviations_left_out"``: ``{"gold", "pred"}``,
        the ShortForm / LongForm annotations not scored (see :func:`document_mentions`), and
        ``"text_differs"``: ids of documents present on both sides whose texts differ (a warning
        sign: offsets then compare different characters).

        >>> from biozoo.documents import Annotation, Document, Passage
        >>> def doc(*annotations):
        ...     return Document("1", [Passage(0, "Aspirin helps.", annotations=list(annotations))])
        >>> result = score_mentions([doc(Annotation(0, 7, "Chemical", "Aspirin"))],
        ...                         [doc(Annotation(0, 6, "Chemical", "Aspiri"))])
        >>> result["strict"]["f1"], result["approximate"]["f1"], result["sources"]["pred"]
        (0.0, 100.0, 'existing')
    """
    gold, pred = list(gold), list(pred)
    gold_from, pred_from = resolve_source(gold, gold_from, "gold"), resolve_source(pred, pred_from, "pred")
    result = score_offsets(document_mentions(gold, gold_from), document_mentions(pred, pred_from),
                           allow_missing=allow_missing)
    result["sources"] = {"gold": gold_from, "pred": pred_from}
    result["abbreviations_left_out"] = {
        side: sum(a.type in ABBREVIATION_TYPES for d in documents for a in _annotations(d, source))
        for side, documents, source in (("gold", gold, gold_from), ("pred", pred, pred_from))}
    result["text_differs"] = _texts_differ(gold, pred)
    return result
