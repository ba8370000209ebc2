"""Character spans of the tokens of a text, as HF fast tokenizers' `offset_mapping` gives them.

A word's tokens cover its normalized form; each normalized character remembers the input
character it came from (lower-casing, accent stripping and control-character removal change
the length), so a token's span is that of its first to its last character in the input.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from biozoo.tokenizers import _hf_unicode as U
from biozoo.tokenizers.words import _python_class


@functools.lru_cache(maxsize=1)
def _classes():
    return re.compile(_python_class(U.CONTROL)), re.compile(_python_class(U.NONSPACING_MARKS))


def bert_alignment(word, lowercase, strip_accents):
    """(normalized word, input index of each normalized character), as HF's BertNormalizer."""
    control, nonspacing = _classes()
    chars, origin = [], []
    for i, c in enumerate(word):
        if c == "\x00" or c == "\ufffd" or control.fullmatch(c):
            continue
        if strip_accents:
            c = "".join(x for x in unicodedata.normalize("NFD", c) if not nonspacing.fullmatch(x))
        if lowercase:
            c = "".join("σ" if x == "Σ" else x.lower() for x in c)
        chars.append(c)
        origin.extend([i] * len(c))
    return "".join(chars), origin


def albert_alignment(word, lowercase, keep_accents):
    """(normalized word, input index of each normalized character), as HF's AlbertTokenizer
    normalizes (quotes, NFKD without accents, lower-casing) before SentencePiece's NFKC."""
    _, nonspacing = _classes()
    chars, origin = [], []
    for i, c in enumerate(word):
        if not keep_accents:
            c = "".join(x for x in unicodedata.normalize("NFKD", c) if not unicodedata.combining(x))
        if lowercase:
            c = c.lower()
        c = unicodedata.normalize("NFKC", c)
        chars.append(c)
        origin.extend([i] * len(c))
    return "".join(chars), origin


def token_spans(tokens, start, end, normalized, origin, prefix="##", unknown=None):
    """(start, end) in the text of each token of the word at text[start:end].

    `tokens`: the word's vocabulary strings (continuations marked by `prefix` for WordPiece;
    word starts by "\u2581" for SentencePiece); `normalized`, `origin`: the word's
    normalized form and where each of its characters came from. An unknown token covers the
    characters up to where the next token's text is found; a lone word-start marker spans the
    character after it, as in HF. Tokens that cannot be placed (a normalization this does not
    follow) all span the word."""
    pieces = [token[len(prefix):] if prefix and token.startswith(prefix) else token.lstrip("\u2581")
              for token in tokens]
    spans, position = [], 0
    for k, (token, piece) in enumerate(zip(tokens, pieces)):
        if token == unknown:
            after = pieces[k + 1:]
            if after and after[0] and tokens[k + 1] != unknown:
                length = normalized.find(after[0], position + 1) - position
            else:
                length = len(normalized) - position - sum(len(p) for p in after)
            if length <= 0:
                return [(start, end)] * len(tokens)
        else:
            length = len(piece)
            if normalized[position:position + length] != piece:
                return [(start, end)] * len(tokens)
        if length == 0:  # a lone word-start marker
            first = start + origin[position] if position < len(origin) else end
            spans.append((first, min(first + 1, end)))
            continue
        spans.append((start + origin[position], start + origin[position + length - 1] + 1))
        position += length
    if position != len(normalized):
        return [(start, end)] * len(tokens)
    return spans
