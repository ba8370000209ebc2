"""SentencePiece tokenizer equal to HF's AlbertTokenizer (fast)."""

from __future__ import annotations

import keras
import keras_hub
import tensorflow as tf

from biozoo.tokenizers import _text
from biozoo.tokenizers.base import Tokenizer


# Rust's char::is_whitespace (Unicode White_Space), which HF's WhitespaceSplit splits on.
UNICODE_WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


@keras.saving.register_keras_serializable(package="biozoo")
class SentencePieceTokenizer(Tokenizer, keras_hub.tokenizers.SentencePieceTokenizer):
    """ALBERT's SentencePiece tokenizer with HF's normalizers in front of the model.

    HF's AlbertTokenizer replaces ``/'' with ", applies NFKD and strips accents (unless
    `keep_accents`), lower-cases (`lowercase`, BioM-ALBERT: True), then runs the
    SentencePiece model. Special tokens in the text are kept whole, as HF does.

    Example:
        >>> tok = SentencePieceTokenizer(proto="spiece.model", lowercase=True)
        >>> tok(["Hypoxia-inducible factor 1α"])
    """

    def __init__(
        self,
        proto=None,
        lowercase=True,
        keep_accents=False,
        unk_token="<unk>",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="<pad>",
        mask_token="[MASK]",
        added_tokens=(),
        sequence_length=None,
        **kwargs,
    ):
        self._add_special_token(cls_token, "cls_token")
        self._add_special_token(sep_token, "sep_token")
        self._add_special_token(pad_token, "pad_token")
        self._add_special_token(mask_token, "mask_token")
        self._add_special_token(unk_token, "unk_token")
        self._add_special_token(cls_token, "start_token")
        self._add_special_token(sep_token, "end_token")
        self.added_tokens = tuple(added_tokens)
        self.lowercase = lowercase
        self.keep_accents = keep_accents
        self._token_table = None
        super().__init__(proto=proto, sequence_length=sequence_length, **kwargs)

    def set_proto(self, proto):
        super().set_proto(proto)
        self._token_table = None
        self._split_whitespace = None
        if self.proto is not None:
            # HF splits words on Unicode whitespace *after* the model's own normalizer
            # (WhitespaceSplit); SentencePiece only breaks pieces at what that normalizer turns
            # into spaces. Characters it leaves alone (NEL, Ogham space) are spaced out first.
            survivors = [c for c in UNICODE_WHITESPACE if c in self._sentence_piece_spm.normalize(f"x{c}y")]
            if survivors:
                self._split_whitespace = "[" + "".join(f"\\x{{{ord(c):X}}}" for c in survivors) + "]"
            missing = [t for t in self.added_tokens if t not in self._token_to_id_map]
            for token in missing:
                self._token_to_id_map[token] = len(self._vocabulary)
                self._vocabulary.append(token)

    def _copy_vocabulary(self, other):
        self.set_proto(other.proto)

    def split_words(self, text):
        """Whitespace-separated words: SentencePiece (HF: WhitespaceSplit + Metaspace)
        tokenizes each on its own, so per-word pieces equal whole-text pieces."""
        import re

        return [(m.group(), m.start(), m.end()) for m in re.finditer(f"[^{re.escape(UNICODE_WHITESPACE)}]+", text)]

    def _alignment(self, word):
        from biozoo.tokenizers._offsets import albert_alignment

        return albert_alignment(word, self.lowercase, self.keep_accents)

    def vocabulary_size(self):
        self._check_vocabulary()
        return len(self._vocabulary)

    def get_vocabulary(self):
        self._check_vocabulary()
        return list(self._vocabulary)

    def id_to_token(self, id):
        self._check_vocabulary()
        return self._vocabulary[id]

    def token_to_id(self, token):
        self._check_vocabulary()
        return self._token_to_id_map[token]

    def _use_tf_workflow(self):
        return True

    def _special_token_ids(self, tokens):
        if self._token_table is None:
            specials = self._special_and_added_tokens()
            self._token_table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(specials), tf.constant([self._token_to_id_map[t] for t in specials], tf.int64)
                ),
                default_value=-1,
            )
        return tf.cast(self._token_table.lookup(tokens), self.compute_dtype)

    def _ragged_ids(self, inputs):
        """`[batch]` strings -> ragged `[batch, (tokens)]` ids (pure TF ops; exports trace it)."""
        # Several string ops stop at NUL; HF reads it as an unknown character, as U+FFFF.
        inputs = tf.strings.regex_replace(inputs, "\\x00", "\uffff")
        pattern = _text.special_tokens_pattern(self._special_and_added_tokens())
        segments, is_special = _text.split_special_tokens(inputs, pattern)
        flat = segments.flat_values
        text = _text.albert_normalize(flat, self.lowercase, self.keep_accents)
        if self._split_whitespace:
            text = tf.strings.regex_replace(text, self._split_whitespace, " ")
        ids = self._sentence_piece.tokenize(text)
        ids = _text.replace_rows(ids, is_special.flat_values, self._special_token_ids(flat))
        tokens = segments.with_flat_values(ids).merge_dims(1, 2)
        return tokens

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "lowercase": self.lowercase,
                "keep_accents": self.keep_accents,
                "unk_token": self.unk_token,
                "cls_token": self.cls_token,
                "sep_token": self.sep_token,
                "pad_token": self.pad_token,
                "mask_token": self.mask_token,
                "added_tokens": list(self.added_tokens),
            }
        )
        return config
