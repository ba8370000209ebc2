"""WordPiece tokenizer equal to HF's BertTokenizer (fast) for cased and uncased vocabularies."""

from __future__ import annotations

import keras
import keras_hub
import tensorflow as tf
import tensorflow_text as tf_text

from biozoo.tokenizers import _text
from biozoo.tokenizers.base import Tokenizer


@keras.saving.register_keras_serializable(package="biozoo")
class WordPieceTokenizer(Tokenizer, keras_hub.tokenizers.WordPieceTokenizer):
    """WordPiece with HF `BertNormalizer` + `BertPreTokenizer` semantics, in-graph.

    Differences from `keras_hub.tokenizers.WordPieceTokenizer` that change ids on
    biomedical text: control and format characters (soft hyphen, zero-width space) are
    removed rather than split on; lower-casing is per code point (KerasHub's case folding
    also applies NFKC: µ->μ, ²->2, ß->ss); accents are stripped only when HF strips them
    (`strip_accents=None` follows `lowercase`); words over 100 characters (not bytes) become
    `[UNK]`; special tokens in the text are kept whole, as HF does.

    Example:
        >>> tok = WordPieceTokenizer(vocabulary="vocab.txt", lowercase=True)
        >>> tok(["IL-2 receptor α"])
    """

    def __init__(
        self,
        vocabulary=None,
        lowercase=False,
        strip_accents=None,
        max_input_chars_per_word=100,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        added_tokens=(),
        sequence_length=None,
        **kwargs,
    ):
        for key in ("strip_accents", "oov_token", "split", "split_on_cjk", "special_tokens_in_strings"):
            kwargs.pop(key, None)
        self._add_special_token(cls_token, "cls_token")
        self._add_special_token(sep_token, "sep_token")
        self._add_special_token(pad_token, "pad_token")
        self._add_special_token(mask_token, "mask_token")
        self._add_special_token(unk_token, "unk_token")
        self._add_special_token(cls_token, "start_token")
        self._add_special_token(sep_token, "end_token")
        self.added_tokens = tuple(added_tokens)
        self.hf_strip_accents = strip_accents
        self.max_input_chars_per_word = max_input_chars_per_word
        super().__init__(
            vocabulary=vocabulary,
            sequence_length=sequence_length,
            lowercase=lowercase,
            strip_accents=lowercase if strip_accents is None else strip_accents,
            oov_token=unk_token,
            **kwargs,
        )

    def set_vocabulary(self, vocabulary):
        if isinstance(vocabulary, str):
            with open(vocabulary, encoding="utf-8") as file:
                vocabulary = [line.rstrip("\n").rstrip("\r") for line in file]
        if vocabulary is not None:
            vocabulary = list(vocabulary)
            present = set(vocabulary)
            vocabulary += [t for t in getattr(self, "added_tokens", ()) if t not in present]
        super().set_vocabulary(vocabulary)

    def _set_vocabulary_tf(self):
        # HF limits words by characters, FastWordpiece by bytes: allow 4 bytes per
        # character here and apply HF's character limit in `_words`.
        self._fast_word_piece = tf_text.FastWordpieceTokenizer(
            vocab=self.vocabulary,
            token_out_type=self.compute_dtype,
            suffix_indicator=self.suffix_indicator,
            unknown_token=self.oov_token,
            max_bytes_per_word=4 * self.max_input_chars_per_word,
            no_pretokenization=True,
            support_detokenization=True,
        )

    def _copy_vocabulary(self, other):
        self.set_vocabulary(other.get_vocabulary())

    def split_words(self, text):
        from biozoo.tokenizers.words import split_words

        return split_words(text)

    def _use_tf_workflow(self):
        return True

    continuation_prefix = "##"

    def _alignment(self, word):
        from biozoo.tokenizers._offsets import bert_alignment

        return bert_alignment(word, self.lowercase, self.strip_accents)

    def words(self, inputs):
        """Normalized words, `[batch] -> ragged [batch, (words)]`, special tokens kept whole."""
        # Several string ops stop at NUL, which HF's clean_text removes anyway.
        inputs = tf.strings.regex_replace(inputs, "\\x00", "")
        pattern = _text.special_tokens_pattern(self._special_and_added_tokens())
        segments, is_special = _text.split_special_tokens(inputs, pattern)
        flat = segments.flat_values
        words = _text.bert_pretokenize(flat, self.lowercase, self.strip_accents)
        words = _text.replace_rows(words, is_special.flat_values, flat)
        words = segments.with_flat_values(words).merge_dims(1, 2)
        too_long = tf.strings.length(words.flat_values, unit="UTF8_CHAR") > self.max_input_chars_per_word
        return words.with_flat_values(tf.where(too_long, self.oov_token, words.flat_values))

    def _ragged_ids(self, inputs):
        """`[batch]` strings -> ragged `[batch, (tokens)]` ids (pure TF ops; exports trace it)."""
        return self._fast_word_piece.tokenize(self.words(inputs)).merge_dims(-2, -1)

    def get_config(self):
        config = super().get_config()
        for key in ("oov_token", "split", "special_tokens", "special_tokens_in_strings"):
            config.pop(key, None)
        config.update(
            {
                "strip_accents": self.hf_strip_accents,
                "max_input_chars_per_word": self.max_input_chars_per_word,
                "unk_token": self.unk_token,
                "cls_token": self.cls_token,
                "sep_token": self.sep_token,
                "pad_token": self.pad_token,
                "mask_token": self.mask_token,
                "added_tokens": list(self.added_tokens),
            }
        )
        return config
