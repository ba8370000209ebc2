"""Sentences of biomedical text, with character offsets into it.

Words come from spaCy's rule-based English tokenizer (no model to download; the tokenizer
AIONER runs through stanza). spaCy's own rule-based sentencizer ends a sentence at every "."
token, which cuts "i.v.", "Fig. 3B" and "et al." apart; `split_sentences` keeps its tokens and
ends a sentence only where the next sentence can start:

- at ".", "?" or "!" (with the closing brackets and quotes that follow), when whitespace
  follows and the next word does not start in lower case ("(n = 24)", "e.g. in"), and the word
  before the period is no abbreviation (Fig., Eq., et al., i.v., vs., ca., single initials);
- at a blank line (a paragraph break), always.

The text is never changed: every sentence is a `(start, end)` span of it, and everything
between two sentences is whitespace.

    >>> split_sentences("Mice got 5 mg/kg i.v. (n = 24). Fig. 3B shows it.")
    [(0, 31), (32, 49)]
"""

from __future__ import annotations

import functools

ABBREVIATIONS = frozenset("""
    al approx ca cf co corp dr drs e.g eq eqs etc fig figs i.e i.m i.p i.v inc jr ltd max min
    mr mrs ms no nos p.o pp prof ref refs resp s.c sp spp sr st subsp suppl tab var viz vol vs
""".split())
ENDINGS = frozenset({".", "?", "!", "...", "…"})
CLOSING = frozenset({")", "]", "}", '"', "'", "”", "’", "»"})
OPENING = frozenset({"(", "[", "{", '"', "'", "“", "‘", "«"})


@functools.lru_cache(maxsize=1)
def english_tokenizer():
    """spaCy's blank English pipeline (tokenizer only)."""
    from spacy.lang.en import English

    return English()


def _is_abbreviation(word):
    lowered = word.lower().rstrip(".")
    return lowered in ABBREVIATIONS or (len(word) == 1 and word.isalpha() and word.isupper())


def _ends_here(tokens, i):
    """Whether a sentence may end after token `i` (an ending, plus closing marks after it)."""
    if i + 1 >= len(tokens):
        return True
    following = tokens[i + 1]
    if following.is_space:
        return True
    if not tokens[i].whitespace_:
        return False
    j = i + 1
    while j < len(tokens) and tokens[j].text in OPENING:
        j += 1
    first = tokens[j].text[0] if j < len(tokens) else ""
    return not first.islower()


def split_sentences(text):
    """`(start, end)` of each sentence of `text`, in order; whitespace-only text has none."""
    tokens = list(english_tokenizer()(text))
    spans, start = [], None
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.is_space:
            if start is not None and "\n\n" in token.text.replace("\r", "").replace(" ", ""):
                spans.append((start, _end(tokens[i - 1])))
                start = None
            i += 1
            continue
        if start is None:
            start = token.idx
        if token.text in ENDINGS:
            while i + 1 < len(tokens) and tokens[i + 1].text in CLOSING and not tokens[i].whitespace_:
                i += 1
            previous = tokens[i - 1].text if i > 0 else ""
            abbreviation = token.text == "." and tokens[i].text == "." and i > 0 and \
                not tokens[i - 1].whitespace_ and _is_abbreviation(previous)
            if not abbreviation and _ends_here(tokens, i):
                spans.append((start, _end(tokens[i])))
                start = None
        i += 1
    if start is not None:
        last = next(t for t in reversed(tokens) if not t.is_space)
        spans.append((start, _end(last)))
    return spans


def _end(token):
    return token.idx + len(token.text)
