"""The in-graph tokenization engine: TensorFlow string ops and tensorflow-text that reproduce HF
tokenizers' normalizers, pre-tokenizers and models.

This is the only module of `biozoo.tokenizers` that imports TensorFlow. It runs where a graph
needs the tokenizer (tf.data, tf.function, exported SavedModels and TF Hub preprocessors); eager
calls use `biozoo.tokenizers.eager`, and the tests hold the two equal. The character classes come
from `hf_unicode`, generated from the HF `tokenizers` library itself, because RE2's `\\p{P}` /
`\\s` and tensorflow-text's `case_fold_utf8` (NFKC case folding: µ->μ, ²->2, ß->ss) differ from
what HF's BERT tokenizer does.
"""

from __future__ import annotations

import weakref

import tensorflow as tf
import tensorflow_text as tf_text
from sentencepiece import sentencepiece_model_pb2

from biozoo.tokenizers import hf_unicode as U
from biozoo.tokenizers.words import special_tokens_pattern


def _join(parts):
    return "".join(parts)


CONTROL = _join(U.CONTROL)
WHITESPACE = _join(U.WHITESPACE)
CJK = _join(U.CJK)
NONSPACING_MARKS = _join(U.NONSPACING_MARKS)
COMBINING_MARKS = _join(U.COMBINING_MARKS)
SPLIT_WHITESPACE = _join(U.SPLIT_WHITESPACE)
SPLIT = f"{SPLIT_WHITESPACE}|{_join(U.PUNCTUATION)}"
KEEP = _join(U.PUNCTUATION)


def lower(text):
    """Per code point lower-casing, as HF's Rust normalizers do. Not case folding (which
    also applies NFKC); and capital sigma always becomes σ, where ICU's string lower-casing
    would write a final ς at the end of a word."""
    text = tf.strings.regex_replace(text, "Σ", "σ")
    return tf.strings.lower(text, encoding="utf-8")


def bert_normalize(text, lowercase, strip_accents, tokenize_chinese_chars=True):
    """HF `BertNormalizer`: clean control chars, space CJK (`tokenize_chinese_chars`), strip accents
    (NFD), lowercase."""
    text = tf.strings.regex_replace(text, CONTROL, "")
    text = tf.strings.regex_replace(text, WHITESPACE, " ")
    if tokenize_chinese_chars:
        text = tf.strings.regex_replace(text, CJK, r" \0 ")
    if strip_accents:
        text = tf_text.normalize_utf8(text, "NFD")
        text = tf.strings.regex_replace(text, NONSPACING_MARKS, "")
    if lowercase:
        text = lower(text)
    return text


def bert_pretokenize(text, lowercase, strip_accents, tokenize_chinese_chars=True):
    """Normalized words of each string: `[batch] -> ragged [batch, (words)]` (HF BertPreTokenizer)."""
    text = bert_normalize(text, lowercase, strip_accents, tokenize_chinese_chars)
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


# ---- the engines of the two tokenizer kinds ------------------------------------------------------


def fast_wordpiece(tokenizer):
    """tensorflow-text's FastWordpieceTokenizer of a biozoo `WordPieceTokenizer`. HF limits words
    by characters, FastWordpiece by bytes: 4 bytes per character are allowed here and HF's
    character limit is applied in `wordpiece_words`."""
    return tf_text.FastWordpieceTokenizer(
        vocab=unique_vocabulary(tokenizer.vocabulary), token_out_type=tokenizer.compute_dtype,
        suffix_indicator=tokenizer.suffix_indicator, unknown_token=tokenizer.oov_token,
        max_bytes_per_word=4 * tokenizer.max_input_chars_per_word, no_pretokenization=True,
        support_detokenization=True)


def unique_vocabulary(vocabulary):
    """`vocabulary` with each duplicated token kept at its last index, as HF's WordPiece keeps it,
    and a placeholder no word can match (it holds a space and a control character) at the earlier
    ones: tensorflow-text takes unique tokens only."""
    last = {token: index for index, token in enumerate(vocabulary)}
    return [token if last[token] == index else f"\x01duplicate {index}" for index, token in enumerate(vocabulary)]


def wordpiece_words(tokenizer, inputs):
    """Normalized words of a `WordPieceTokenizer`, `[batch] -> ragged [batch, (words)]`, special
    tokens kept whole, words over HF's character limit replaced by the unknown token."""
    # Several string ops stop at NUL, which HF's clean_text removes; so it does \x01, which must not
    # join a special token's halves (it is removed after the special tokens are found).
    inputs = tf.strings.regex_replace(inputs, "\\x00", "\x01")
    pattern = special_tokens_pattern(tokenizer.kept_whole())
    segments, is_special = split_special_tokens(inputs, pattern)
    flat = segments.flat_values
    text = bert_normalize(flat, tokenizer.lowercase, tokenizer.strip_accents, tokenizer.tokenize_chinese_chars)
    forms = tokenizer.normalized_forms()
    def limited(words):  # HF's limit is on the WordPiece model's words: not on special or added tokens
        too_long = tf.strings.length(words.flat_values, unit="UTF8_CHAR") > tokenizer.max_input_chars_per_word
        return words.with_flat_values(tf.where(too_long, tokenizer.oov_token, words.flat_values))

    if forms:
        pieces, is_added = split_special_tokens(text, special_tokens_pattern(forms))
        words = limited(tf_text.regex_split(pieces.flat_values, SPLIT, KEEP))
        words = replace_rows(words, is_added.flat_values, normalized_token_table(tokenizer).lookup(pieces.flat_values))
        words = pieces.with_flat_values(words).merge_dims(1, 2)
    else:
        words = limited(tf_text.regex_split(text, SPLIT, KEEP))
    words = replace_rows(words, is_special.flat_values, flat)
    return segments.with_flat_values(words).merge_dims(1, 2)


def wordpiece_ragged_ids(tokenizer, inputs):
    """`[batch]` strings -> ragged `[batch, (tokens)]` ids of a `WordPieceTokenizer`."""
    tokenizer._maybe_initialized_tf()
    return tokenizer._fast_word_piece.tokenize(wordpiece_words(tokenizer, inputs)).merge_dims(-2, -1)


# tokenizer -> the StaticHashTable of its special and added tokens' ids (off the tokenizer: an
# attribute would be tracked and saved with any SavedModel holding it)
_SPECIAL_TABLES = weakref.WeakKeyDictionary()


def special_token_table(tokenizer):
    """A StaticHashTable from the special and added tokens of `tokenizer` to their ids (built once,
    eagerly: a table built inside a trace would belong to it, and no SavedModel could hold it)."""
    table = _SPECIAL_TABLES.get(tokenizer)
    if table is None:
        specials = tokenizer.kept_whole() + list(tokenizer.normalized_added_tokens)
        with tf.init_scope():
            table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(specials), tf.constant([tokenizer.token_to_id(t) for t in specials], tf.int64)),
                default_value=-1)
        _SPECIAL_TABLES[tokenizer] = table
    return table


# tokenizer -> the StaticHashTable from the normalized forms of its normalized added tokens to the tokens
_NORMALIZED_TABLES = weakref.WeakKeyDictionary()


def normalized_token_table(tokenizer):
    """A StaticHashTable from the normalized forms of `tokenizer.normalized_added_tokens` to the
    tokens (built once, eagerly, as `special_token_table`)."""
    table = _NORMALIZED_TABLES.get(tokenizer)
    if table is None:
        forms = tokenizer.normalized_forms()
        with tf.init_scope():
            table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(tf.constant(list(forms)), tf.constant(list(forms.values()))),
                default_value="")
        _NORMALIZED_TABLES[tokenizer] = table
    return table


def forget(tokenizer):
    """Drop what was built from `tokenizer`'s vocabulary (it changed)."""
    _SPECIAL_TABLES.pop(tokenizer, None)
    _NORMALIZED_TABLES.pop(tokenizer, None)
    _ID_FUNCTIONS.pop(tokenizer, None)


def _special_token_ids(tokenizer, tokens):
    return tf.cast(special_token_table(tokenizer).lookup(tokens), tokenizer.compute_dtype)


def unigram_proto(proto):
    """The SentencePiece model `proto` (bytes) with its control pieces ([CLS], <pad>, ...) made
    user-defined. HF's Unigram model holds them as ordinary pieces, which win wherever
    normalization makes their text (NFKD: "＜pad＞" -> "<pad>"); SentencePiece never produces a
    control piece, and always a user-defined one. Special tokens written as such are kept whole
    before the model either way."""
    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(proto)
    kinds = sentencepiece_model_pb2.ModelProto.SentencePiece.Type
    for piece in model.pieces:
        if piece.type == kinds.CONTROL:
            piece.type = kinds.USER_DEFINED
    return model.SerializeToString()


def sentencepiece_ragged_ids(tokenizer, inputs):
    """`[batch]` strings -> ragged `[batch, (tokens)]` ids of a `SentencePieceTokenizer`."""
    tokenizer._maybe_initialized_tf()
    # Several string ops stop at NUL; HF reads it as an unknown character, as U+FFFF.
    inputs = tf.strings.regex_replace(inputs, "\\x00", "\uffff")
    pattern = special_tokens_pattern(tokenizer.kept_whole())
    segments, is_special = split_special_tokens(inputs, pattern)
    flat = segments.flat_values
    text = albert_normalize(flat, tokenizer.lowercase, tokenizer.keep_accents)
    if tokenizer.whitespace_to_space:
        text = tf.strings.regex_replace(text, tokenizer.whitespace_to_space, " ")
    forms = tokenizer.normalized_forms()
    if forms:
        # The model's character map (nmt_nfkc: NFKC and a few more) applies inside the model;
        # HF matches the added tokens after it.
        text = tf_text.normalize_utf8(text, "NFKC")
        pieces, is_added = split_special_tokens(text, special_tokens_pattern(forms))
        flat_pieces = pieces.flat_values
        ids = tokenizer._sentence_piece.tokenize(flat_pieces)
        added = _special_token_ids(tokenizer, normalized_token_table(tokenizer).lookup(flat_pieces))
        ids = pieces.with_flat_values(replace_rows(ids, is_added.flat_values, added)).merge_dims(1, 2)
    else:
        ids = tokenizer._sentence_piece.tokenize(text)
    ids = replace_rows(ids, is_special.flat_values, _special_token_ids(tokenizer, flat))
    return segments.with_flat_values(ids).merge_dims(1, 2)


def tokenize(tokenizer, inputs):
    """The graph path of a biozoo tokenizer's `tokenize`: strings (a scalar or `[batch]`) ->
    ragged ids, or dense `[batch, sequence_length]` when the tokenizer has one."""
    if not isinstance(inputs, tf.RaggedTensor):
        inputs = tf.convert_to_tensor(inputs)
    unbatched = inputs.shape.rank == 0
    if unbatched:
        inputs = tf.expand_dims(inputs, 0)
    tokens = tokenizer.ragged_ids(inputs)
    if tokenizer.sequence_length:
        output_shape = tokens.shape.as_list()
        output_shape[-1] = tokenizer.sequence_length
        tokens = tokens.to_tensor(default_value=tf.cast(tokenizer.pad_token_id, tokens.dtype), shape=output_shape)
    if unbatched:
        tokens = tf.squeeze(tokens, 0)
    return tokens


# tokenizer -> its `ragged_ids` as a tf.function (kept off the tokenizer, as the tables are)
_ID_FUNCTIONS = weakref.WeakKeyDictionary()


def ids_function(tokenizer):
    """`tokenizer.ragged_ids` traced once, `[batch]` strings -> ragged ids: what the tests compare
    with the eager engine, and what serving code calls outside a graph."""
    function = _ID_FUNCTIONS.get(tokenizer)
    if function is None:
        tokenizer._maybe_initialized_tf()
        special_token_table(tokenizer)
        if tokenizer.normalized_added_tokens:
            normalized_token_table(tokenizer)
        owner = weakref.ref(tokenizer)  # the cache must not keep its key alive
        function = tf.function(lambda texts: owner().ragged_ids(texts),
                               input_signature=[tf.TensorSpec([None], tf.string)])
        _ID_FUNCTIONS[tokenizer] = function
    return function
