"""Split raw text into words with character offsets, on the boundaries HF's BERT
pre-tokenizer uses (whitespace, punctuation, CJK characters). NER annotation maps
predictions back to the input text through these offsets."""

from __future__ import annotations

import functools
import re

from biozoo.tokenizers import hf_unicode as U


def python_class(parts):
    """RE2 `[\\x{..}-\\x{..}]` classes -> a Python `re` character class."""
    body = "".join(parts)[1:-1]
    return "[" + re.sub(r"\\x\{([0-9A-F]+)\}", lambda m: re.escape(chr(int(m[1], 16))), body) + "]"


@functools.lru_cache(maxsize=1)
def _patterns():
    # \v, \f and NEL are whitespace that HF's BertNormalizer removes (as control characters)
    # before words are split: they join the characters around them
    space = f"(?!{python_class(U.CONTROL)})(?:{python_class(U.SPLIT_WHITESPACE)}|{python_class(U.WHITESPACE)})"
    single = f"{python_class(U.PUNCTUATION)}|{python_class(U.CJK)}"
    return re.compile(f"(?:{single})|(?:(?!{space}|{single}).)+", re.DOTALL)


def split_words(text):
    """`[(word, start, end), ...]` for `text`; `text[start:end] == word`."""
    return [(m.group(), m.start(), m.end()) for m in _patterns().finditer(text)]


def special_tokens_pattern(tokens):
    """A regular expression (Python `re` and RE2 alike) matching any of `tokens` literally, longest first."""
    tokens = sorted(set(tokens), key=len, reverse=True)
    return "|".join(re.escape(t) for t in tokens)
