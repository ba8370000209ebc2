"""TensorFlow string ops that reproduce HF tokenizers' normalizers and pre-tokenizers.

Everything here runs in-graph (tf.data, tf.function, exported SavedModels). The character
classes come from `_hf_unicode`, generated from the HF `tokenizers` library itself, because
RE2's `\\p{P}` / `\\s` and tensorflow-text's `case_fold_utf8` (NFKC case folding: µ->μ, ²->2,
ß->ss) differ from what HF's BERT tokenizer does.
"""

from __future__ import annotations

import re

import tensorflow as tf
import tensorflow_text as tf_text

from biozoo.tokenizers import _hf_unicode as U


def _join(parts):
    return "".join(parts)


CONTROL = _join(U.CONTROL)
WHITESPACE = _join(U.WHITESPACE)
CJK = _join(U.CJK)
NONSPACING_MARKS = _join(U.NONSPACING_MARKS)
COMBINING_MARKS = _join(U.COMBINING_MARKS)
SPLIT = f"{_join(U.SPLIT_WHITESPACE)}|{_join(U.PUNCTUATION)}"
KEEP = _join(U.PUNCTUATION)


def lower(text):
    """Per code point lower-casing, as HF's Rust normalizers do. Not case folding (which
    also applies NFKC); and capital sigma always becomes σ, where ICU's string lower-casing
    would write a final ς at the end of a word."""
    text = tf.strings.regex_replace(text, "Σ", "σ")
    return tf.strings.lower(text, encoding="utf-8")


def bert_normalize(text, lowercase, strip_accents):
    """HF `BertNormalizer`: clean control chars, space CJK, strip accents (NFD), lowercase."""
    text = tf.strings.regex_replace(text, CONTROL, "")
    text = tf.strings.regex_replace(text, WHITESPACE, " ")
    text = tf.strings.regex_replace(text, CJK, r" \0 ")
    if strip_accents:
        text = tf_text.normalize_utf8(text, "NFD")
        text = tf.strings.regex_replace(text, NONSPACING_MARKS, "")
    if lowercase:
        text = lower(text)
    return text


def bert_pretokenize(text, lowercase, strip_accents):
    """Normalized words of each string: `[batch] -> ragged [batch, (words)]` (HF BertPreTokenizer)."""
    text = bert_normalize(text, lowercase, strip_accents)
    return tf_text.regex_split(text, SPLIT, KEEP)


def albert_normalize(text, lowercase, keep_accents=False):
    """The normalizers HF's AlbertTokenizer applies before the SentencePiece model's own."""
    text = tf.strings.regex_replace(text, "``|''", '"')
    if not keep_accents:
        text = tf_text.normalize_utf8(text, "NFKD")
        text = tf.strings.regex_replace(text, COMBINING_MARKS, "")
    if lowercase:
        text = lower(text)
    return text


def special_tokens_pattern(tokens):
    """An RE2 alternation matching any of `tokens` literally (longest first)."""
    tokens = sorted(set(tokens), key=len, reverse=True)
    return "|".join(re.escape(t) for t in tokens)


def split_special_tokens(text, pattern):
    """`[batch]` strings -> ragged `[batch, (segments)]` with special tokens as their own
    segments, plus a boolean ragged mask marking them. As HF, special tokens are matched in
    the raw text before any normalization."""
    segments = tf_text.regex_split(text, pattern, pattern)
    is_special = tf.strings.regex_full_match(segments.flat_values, pattern)
    return segments, segments.with_flat_values(is_special)


def replace_rows(values, is_special_row, replacements):
    """Row i of ragged `values` becomes `[replacements[i]]` where `is_special_row[i]`."""
    keep = tf.gather(tf.logical_not(is_special_row), values.value_rowids())
    kept = tf.ragged.boolean_mask(values, values.with_flat_values(keep))
    extra = tf.RaggedTensor.from_value_rowids(
        tf.boolean_mask(replacements, is_special_row),
        tf.boolean_mask(tf.range(tf.shape(is_special_row, out_type=tf.int64)[0]), is_special_row),
        nrows=tf.shape(is_special_row, out_type=tf.int64)[0],
    )
    return tf.concat([kept, extra], axis=1)
