"""Token predictions -> entities, by the rules of transformers' token-classification pipeline.

`aggregate(pieces, probs, label_names, strategy)` returns what
`pipeline("token-classification", aggregation_strategy=strategy)` returns for the same token
probabilities: "none" (one entry per token), "simple" (adjacent tokens of one type grouped),
"first" / "average" / "max" (a word takes the label of its first token, of its tokens' mean
probabilities, or of its most confident token, then words are grouped). Labels "O" are left
out; `B-X` starts an entity of type X, `I-X` (or a bare `X`) continues one of the same type.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from biozoo.choices import AGGREGATION_STRATEGIES, DEFAULT_AGGREGATION


class Piece(NamedTuple):
    """One token of the text: its character span and whether it continues a word (a tuple: a
    text has hundreds, made at every prediction)."""

    start: int
    end: int
    is_subword: bool  # continues the word of the token before it (the pipeline's rule)


def is_subword(token, start, end, text, is_unknown, wordpiece):
    """The pipeline's test: a WordPiece token whose string is longer than its text ("##ing" for
    "ing") continues a word; other tokenizers: a token not preceded by a space. An unknown token
    always starts a word."""
    if is_unknown:
        return False
    if wordpiece:
        return len(token) != end - start
    return start > 0 and " " not in text[start - 1:start + 1]


def _entity_of(label):
    """(B or I, type): "B-X" -> (B, X); "I-X" and a bare "X" -> (I, X)."""
    if label.startswith("B-"):
        return "B", label[2:]
    if label.startswith("I-"):
        return "I", label[2:]
    return "I", label


def _token_entities(pieces, probs, label_names):
    out = []
    for index, (piece, p) in enumerate(zip(pieces, probs)):
        best = int(p.argmax())
        out.append({"label": label_names[best], "score": p[best], "start": piece.start, "end": piece.end,
                    "index": index + 1})  # the position in the model input, after [CLS]
    return out


def _word_rows(pieces, probs, strategy):
    """Per word (a token and the subword tokens after it): its first token's index, its last
    token's index, and the probability row that decides its label."""
    starts = [k for k, piece in enumerate(pieces) if k == 0 or not piece.is_subword]
    ends = starts[1:] + [len(pieces)]
    probs = np.asarray(probs)
    if strategy == "first":
        rows = probs[starts]
    elif strategy == "max":  # the first of equally confident tokens
        rows = np.stack([probs[a + int(np.argmax(probs[a:b].max(axis=1)))] for a, b in zip(starts, ends)])
    else:  # average
        rows = np.stack([np.nanmean(probs[a:b], axis=0) for a, b in zip(starts, ends)])
    return starts, [b - 1 for b in ends], rows


def _word_entities(pieces, probs, label_names, strategy, ignore):
    """Words labelled and grouped: a group goes on while words keep one type and none is `B-`."""
    if not len(pieces):
        return []
    first, last, rows = _word_rows(pieces, probs, strategy)
    best = rows.argmax(axis=1)
    scores = rows[np.arange(len(best)), best]
    tags, kinds = zip(*(_entity_of(label) for label in label_names))
    kind_ids = np.unique(kinds, return_inverse=True)[1][best]
    begins = np.asarray(tags)[best] == "B"
    boundaries = np.flatnonzero(np.concatenate([[True], (kind_ids[1:] != kind_ids[:-1]) | begins[1:]]))
    group_ends = np.concatenate([boundaries[1:], [len(best)]])
    out = []
    for a, b in zip(boundaries.tolist(), group_ends.tolist()):
        label = label_names[best[a]].split("-", 1)[-1]
        if label in ignore:
            continue
        out.append({"start": pieces[first[a]].start, "end": pieces[last[b - 1]].end, "type": label,
                    "score": float(scores[a] if b - a == 1 else np.nanmean(scores[a:b]))})
    return out


def _group(entities):
    groups, current = [], []
    for entity in entities:
        if current:
            tag, kind = _entity_of(entity["label"])
            _, last_kind = _entity_of(current[-1]["label"])
            if kind != last_kind or tag == "B":
                groups.append(current)
                current = []
        current.append(entity)
    if current:
        groups.append(current)
    return [{"label": g[0]["label"].split("-", 1)[-1], "score": float(np.nanmean([e["score"] for e in g])),
             "start": g[0]["start"], "end": g[-1]["end"]} for g in groups]


def aggregate(pieces, probs, label_names, strategy=DEFAULT_AGGREGATION, ignore=("O",)):
    """Entities `{"start", "end", "type", "score"}`; for "none", "type" is the token's label and
    "index" its position in the model input ([CLS] is 0), as the pipeline gives them."""
    if strategy not in AGGREGATION_STRATEGIES:
        raise ValueError(f"aggregation {strategy!r} is none of {', '.join(AGGREGATION_STRATEGIES)}")
    if strategy not in ("none", "simple"):
        return _word_entities(pieces, probs, label_names, strategy, ignore)
    entities = _token_entities(pieces, probs, label_names)
    if strategy == "simple":
        entities = _group(entities)
    out = []
    for e in entities:
        if e["label"] in ignore:
            continue
        entity = {"start": e["start"], "end": e["end"], "type": e["label"], "score": float(e["score"])}
        if "index" in e:
            entity["index"] = e["index"]
        out.append(entity)
    return out
