"""Document-level evaluation of an annotator: annotate gold documents (their own annotations
kept apart) and score the predictions by offsets (`biozoo evaluate --documents`, the benchmark's
cross-corpus scores)."""

from __future__ import annotations

import sys

from biozoo.annotate.annotators import load_annotator
from biozoo.annotate.runner import AnnotationRun
from biozoo.choices import DEFAULT_PRECISION
from biozoo.documents import KEEP_MISMATCHED, read_documents
from biozoo.metrics.documents import score_mentions

__all__ = ["score_documents"]


def score_documents(model, paths, *, type_map=None, keep_types=None, model_types_only=False, entity_types=("ALL",),
                    precision=DEFAULT_PRECISION, progress=True, strict=KEEP_MISMATCHED):
    """Strict and approximate mention scores of `model` on the gold documents in `paths`.

    Args:
        type_map: {type: new type}, applied to gold and predicted annotations before scoring.
        keep_types: score only these (mapped) types: gold annotations of other types are left
            out and counted in the result's "gold_outside_types" ({type: count}), predictions of
            other types too ("predictions_outside_types").
        model_types_only: keep_types are the entity types the (token-classification) model tags.
        strict: True refuses a gold document whose annotation's text differs from the
            document's at its offsets; by default (`KEEP_MISMATCHED`) that annotation is scored
            by its offsets, as every gold mention is, told on stderr and counted in the result's
            "gold_text_mismatches"; False drops it, counted in "gold_dropped".

    Example:
        >>> score_documents("runs/ncbi", ["BC5CDR_Test.PubTator"], keep_types={"Disease"})["strict"]["f1"]
    """
    type_map = dict(type_map or {})
    annotator = load_annotator(model, entity_types=tuple(entity_types), precision=precision)
    if model_types_only:
        keep_types = {name.split("-", 1)[-1] for name in annotator.task.label_names if name != "O"}
    gold = read_documents(list(paths), strict=strict)
    earlier = [0]
    documents = list(AnnotationRun([annotator], progress=progress).annotate(_without_predictions(gold, earlier)))
    if earlier[0]:
        print(f"note: {earlier[0]} prediction(s) the gold documents carried (an earlier run's) dropped: only "
              f"{model}'s are scored", file=sys.stderr)
    outside = {"gold": {}, "predictions": {}}
    for document in documents:
        for annotation in document.existing_annotations() + document.predictions:
            annotation.type = type_map.get(annotation.type, annotation.type)
        if keep_types is not None:
            for passage in document.passages:
                passage.annotations = _kept(passage.annotations, keep_types, outside["gold"])
            document.annotations = _kept(document.annotations, keep_types, outside["gold"])
            document.predictions = _kept(document.predictions, keep_types, outside["predictions"])
    result = score_mentions(documents, documents, gold_from="existing", pred_from="predictions")
    result["model"] = str(model)
    result["gold_dropped"] = gold.dropped
    result["gold_text_mismatches"] = gold.kept_mismatched
    result["earlier_predictions_dropped"] = earlier[0]
    if keep_types is not None:
        result["kept_types"] = sorted(keep_types)
        result["gold_outside_types"] = outside["gold"]
        result["predictions_outside_types"] = outside["predictions"]
    return result


def _without_predictions(documents, dropped):
    """`documents` without the predictions they carry (an earlier run's, read from JSONL), counted
    in `dropped[0]`: they are not the evaluated model's."""
    for document in documents:
        dropped[0] += len(document.predictions)
        document.predictions = []
        yield document


def _kept(annotations, keep_types, counts):
    kept = []
    for annotation in annotations:
        if annotation.type in keep_types:
            kept.append(annotation)
        else:
            counts[annotation.type] = counts.get(annotation.type, 0) + 1
    return kept
