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


def _code_points(parts):
    """The characters of a small RE2 `[\\x{..}-\\x{..}]` class."""
    chars = []
    for first, last in re.findall(r"\\x\{([0-9A-F]+)\}(?:-\\x\{([0-9A-F]+)\})?", "".join(parts)):
        chars += map(chr, range(int(first, 16), int(last or first, 16) + 1))
    return chars


@functools.lru_cache(maxsize=1)
def word_break_spaces():
    """The whitespace words break at: HF's BertPreTokenizer splits on what BertNormalizer leaves
    or makes a space, so not on \\v, \\f and NEL, which it removes as control characters
    (they join the characters around them)."""
    control = re.compile(python_class(U.CONTROL))
    spaces = dict.fromkeys(_code_points(U.SPLIT_WHITESPACE) + _code_points(U.WHITESPACE))
    return "".join(c for c in spaces if not control.fullmatch(c))


def re2_class(chars):
    """An RE2 character class of `chars`."""
    return "[" + "".join(f"\\x{{{ord(c):X}}}" for c in chars) + "]"


@functools.lru_cache(maxsize=2)
def _patterns(tokenize_chinese_chars):
    space = "[" + re.escape(word_break_spaces()) + "]"
    single = python_class(U.PUNCTUATION) + (f"|{python_class(U.CJK)}" if tokenize_chinese_chars else "")
    return re.compile(f"(?:{single})|(?:(?!{space}|{single}).)+", re.DOTALL)


def split_words(text, tokenize_chinese_chars=True):
    """`[(word, start, end), ...]` for `text`; `text[start:end] == word`. Without
    `tokenize_chinese_chars`, CJK characters are not words of their own."""
    return [(m.group(), m.start(), m.end()) for m in _patterns(tokenize_chinese_chars).finditer(text)]


def special_tokens_pattern(tokens):
    """A regular expression (Python `re` and RE2 alike) matching any of `tokens` literally, longest first."""
    tokens = sorted(set(tokens), key=len, reverse=True)
    return "|".join(re.escape(t) for t in tokens)
