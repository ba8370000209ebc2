"""Entity-linking scores: accuracy@1 of gold mentions, and end-to-end NER + concept id F1.

A predicted id is correct when it is one of the gold ids: gold ids and predicted ids are
split at "|", "," and ";" (composite mentions such as "D001|D002"; BioRED's "D001,D002") and
correct when the two sets meet: SapBERT's and BioSyn's `check_label`, applied to the whole
mention. Their evaluation (`evaluate_topk_acc`) scores a composite mention ("breast and
ovarian cancer", "D001943|D010051") after BioSyn's preprocessing split its text into parts,
each part linked and every part required to hit; biozoo links whole mentions, so one id of a
composite gold counts as correct (`accuracy_at_1` reports how many golds are composite,
`composite_gold`). "MESH:D001" and "D001" are one id
(PubTator3 and HunFlair2 write the prefix, BC5CDR does not, NCBI-disease both). A predicted
id field may carry the predicted concept's alternate ids too (`evaluate link` passes
`Concept.all_ids()`, BioSyn's `ID|AltIDs`: an OMIM gold id of a CTD disease is then found);
`score ner --ids` compares the ids the files hold. A gold mention
without an id (none, "", "-" or "-1": BC5CDR's unlinkable mentions) is left out of both scores
and counted, and so is a prediction of its type and span (overlapping it, in the approximate
score) that meets no gold mention with an id: the entity is found, and there is no id to be
right or wrong about.

End-to-end (NER + id), per entity type and micro over all types:
- strict: same document, type and spans, and a correct id;
- approximate: same document and type, spans overlapping by a character, and a correct id;
  gold and predicted mentions paired one to one (a maximum bipartite matching).
A prediction without an id (nothing above the linker's threshold) is a false positive like
a wrong id (counted in `pred_without_id`). A mention given twice counts once (the copies are
counted in `duplicates_removed`).

    >>> accuracy_at_1(["D001|D002", "D003", "-1"], ["D002", "D004", None])["accuracy"]
    50.0
"""

from __future__ import annotations

from collections import defaultdict

from biozoo.documents.model import ids_of
from biozoo.metrics.ner import prf


def correct(predicted, gold):
    return bool(ids_of(predicted) & ids_of(gold))


def accuracy_at_1(gold_ids, predicted_ids, types=None):
    """Share (0-100) of gold mentions with an id whose predicted id is correct; per type too
    when `types` (one per mention) is given. `composite_gold`: the gold mentions with several
    ids, each counted correct when the prediction is any one of them (module docstring)."""
    gold_ids, predicted_ids = list(gold_ids), list(predicted_ids)
    if len(gold_ids) != len(predicted_ids):
        raise ValueError(f"{len(gold_ids)} gold ids but {len(predicted_ids)} predictions")
    types = list(types) if types is not None else [None] * len(gold_ids)
    counts = defaultdict(lambda: [0, 0])
    no_id = composite = 0
    for gold, predicted, kind in zip(gold_ids, predicted_ids, types):
        if not ids_of(gold):
            no_id += 1
            continue
        composite += len(ids_of(gold)) > 1
        for key in {None, kind}:
            counts[key][0] += 1
            counts[key][1] += correct(predicted, gold)
    total, right = counts[None]
    result = {"accuracy": round(100.0 * right / total, 2) if total else 0.0, "correct": right, "mentions": total,
              "gold_without_id": no_id, "composite_gold": composite}
    if any(t is not None for t in types):
        result["per_type"] = {k: {"accuracy": round(100.0 * v[1] / v[0], 2) if v[0] else 0.0, "correct": v[1],
                                  "mentions": v[0]} for k, v in sorted(counts.items(), key=lambda kv: str(kv[0]))
                              if k is not None}
    return result


def _overlap(a, b):
    return a[0] < b[1] and b[0] < a[1] or (a[0] == b[0] and a[1] == b[1])


def _spans(mention):
    """A mention's spans: its optional fifth element (a discontinuous one's), else (start, end)."""
    return tuple(sorted(tuple(map(int, span)) for span in mention[4])) if len(mention) > 4 and mention[4] else (
        (int(mention[0]), int(mention[1])),)


def _located(spans, other, approximate):
    return spans == other or approximate and any(_overlap(a, b) for a in spans for b in other)


def _meets(mention, located, approximate):
    """Whether `mention` ((spans, type, ...)) has the type and spans of one of `located`
    ((spans, type)), or, when `approximate`, overlaps one of its type."""
    return any(mention[1] == kind and _located(mention[0], spans, approximate) for spans, kind in located)


def _max_matching(edges, n_gold):
    """Kuhn's augmenting paths: the largest set of (gold, pred) pairs, none used twice."""
    pred_of_gold, gold_of_pred = {}, {}

    def augment(g, seen):
        for p in edges.get(g, ()):
            if p in seen:
                continue
            seen.add(p)
            if p not in gold_of_pred or augment(gold_of_pred[p], seen):
                gold_of_pred[p], pred_of_gold[g] = g, p
                return True
        return False

    for g in range(n_gold):
        augment(g, set())
    return pred_of_gold


def score_linked(gold, pred):
    """Strict and approximate NER + id scores.

    `gold`, `pred`: {doc_id: [(start, end, type, concept_id[, spans]), ...]} (`spans`: a
    discontinuous mention's (start, end) pairs, all compared; documents on one side only
    count: gold as misses, pred as false positives). Returns {"strict", "approximate"}
    (each {"precision", "recall", "f1", "per_type", "counts"}), the gold mentions left out
    (`gold_without_id`), the predictions left out on them (`pred_on_gold_without_id`, per
    section), the predictions without an id, scored as false positives (`pred_without_id`),
    and the repeated mentions counted once (`duplicates_removed`)."""
    sections = {}
    left_out = {"gold_without_id": 0, "pred_without_id": 0, "pred_on_gold_without_id": {}, "duplicates_removed": 0}
    cleaned, unlinkable = {"gold": {}, "pred": {}}, {}
    for side, data in (("gold", gold), ("pred", pred)):
        for doc_id, mentions in data.items():
            kept = []
            for mention in mentions:
                spans, kind, concept = _spans(mention), mention[2], mention[3]
                if not ids_of(concept):
                    left_out[f"{side}_without_id"] += 1
                    if side == "gold":
                        unlinkable.setdefault(doc_id, []).append((spans, kind))
                        continue
                kept.append((spans, kind, concept))
            cleaned[side][doc_id] = list(dict.fromkeys(kept))
            left_out["duplicates_removed"] += len(kept) - len(cleaned[side][doc_id])
    for approximate in (False, True):
        section = "approximate" if approximate else "strict"
        counts = defaultdict(lambda: [0, 0, 0])  # type: gold, pred, tp
        left_out["pred_on_gold_without_id"][section] = 0
        for doc_id in sorted(set(cleaned["gold"]) | set(cleaned["pred"])):
            g, p = cleaned["gold"].get(doc_id, []), cleaned["pred"].get(doc_id, [])
            without_id, with_id = unlinkable.get(doc_id, ()), [m[:2] for m in g]
            scored = [m for m in p if not _meets(m, without_id, approximate) or _meets(m, with_id, approximate)]
            left_out["pred_on_gold_without_id"][section] += len(p) - len(scored)
            p = scored
            for m in g:
                counts[m[1]][0] += 1
            for m in p:
                counts[m[1]][1] += 1
            edges = defaultdict(list)
            for gi, gm in enumerate(g):
                for pi, pm in enumerate(p):
                    if gm[1] == pm[1] and correct(pm[2], gm[2]) and _located(gm[0], pm[0], approximate):
                        edges[gi].append(pi)
            for gi in _max_matching(edges, len(g)):
                counts[g[gi][1]][2] += 1
        sections[section] = _section(counts)
    return {**sections, **left_out}


def _section(counts):
    per_type = {}
    for kind in sorted(counts):
        n_gold, n_pred, tp = counts[kind]
        precision, recall, f1 = prf(tp, n_pred, n_gold)
        per_type[kind] = {"precision": precision, "recall": recall, "f1": f1, "support": n_gold, "tp": tp,
                          "fp": n_pred - tp, "fn": n_gold - tp}
    n_gold, n_pred, tp = (sum(c[i] for c in counts.values()) for i in range(3))
    precision, recall, f1 = prf(tp, n_pred, n_gold)
    return {"precision": precision, "recall": recall, "f1": f1, "per_type": per_type,
            "counts": {"gold": n_gold, "pred": n_pred, "tp": tp, "fp": n_pred - tp, "fn": n_gold - tp}}


def mention_accuracy(gold, pred):
    """Accuracy@1 of the gold mentions (with an id) that the prediction holds with the same
    spans and type: {"accuracy", "correct", "mentions" (those found), "gold_mentions" (all
    with an id)}; the rest were not found, so no id was given to them."""
    found = right = total = 0
    for doc_id, mentions in gold.items():
        predicted = defaultdict(list)
        for mention in pred.get(doc_id, []):
            predicted[(_spans(mention), mention[2])].append(mention[3])
        for mention in mentions:
            concept = mention[3]
            if not ids_of(concept):
                continue
            total += 1
            candidates = predicted.get((_spans(mention), mention[2]))
            if candidates:
                found += 1
                right += any(correct(c, concept) for c in candidates)
    return {"accuracy": round(100.0 * right / found, 2) if found else 0.0, "correct": right, "mentions": found,
            "gold_mentions": total}
