"""WordPiece tokenizer equal to HF's BertTokenizer (fast) for cased and uncased vocabularies."""

from __future__ import annotations

import keras
import keras_hub

from biozoo.tokenizers import eager
from biozoo.tokenizers.base import Tokenizer
from biozoo.tokenizers.words import split_words


@keras.saving.register_keras_serializable(package="biozoo")
class WordPieceTokenizer(Tokenizer, keras_hub.tokenizers.WordPieceTokenizer):
    """WordPiece with HF `BertNormalizer` + `BertPreTokenizer` semantics, eager and in-graph.

    Differences from `keras_hub.tokenizers.WordPieceTokenizer` that change ids on
    biomedical text: control and format characters (soft hyphen, zero-width space) are
    removed rather than split on; lower-casing is per code point (KerasHub's case folding
    also applies NFKC: µ->μ, ²->2, ß->ss); accents are stripped only when HF strips them
    (`strip_accents=None` follows `lowercase`); words over 100 characters (not bytes) become
    `[UNK]`; special tokens in the text are kept whole, as HF does. `tokenize_chinese_chars`
    (HF's, default True): CJK characters are words of their own.

    Example (soft hyphen removed, no-break space split on, "α" kept: HF's ids):
        >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "il", "-", "2", "receptor", "α"]
        >>> tok = WordPieceTokenizer(vocabulary=vocab, lowercase=True)
        >>> tok("IL-2 re\u00adceptor\u00a0α")
        array([5, 6, 7, 8, 9], dtype=int32)
    """

    def __init__(
        self,
        vocabulary=None,
        lowercase=False,
        strip_accents=None,
        max_input_chars_per_word=eager.HF_MAX_INPUT_CHARS_PER_WORD,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        added_tokens=(),
        normalized_added_tokens=(),
        sequence_length=None,
        tokenize_chinese_chars=True,
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
        self._set_added_tokens(added_tokens, normalized_added_tokens)
        self.hf_strip_accents = strip_accents
        self.max_input_chars_per_word = max_input_chars_per_word
        self.tokenize_chinese_chars = tokenize_chinese_chars
        super().__init__(
            vocabulary=vocabulary,
            sequence_length=sequence_length,
            lowercase=lowercase,
            strip_accents=lowercase if strip_accents is None else strip_accents,
            oov_token=unk_token,
            **kwargs,
        )

    def _set_vocabulary_tf(self):
        # KerasHub builds its tf-text tokenizer whenever tf-text is installed; biozoo only where
        # TensorFlow is the backend or a graph asks for it (`_maybe_initialized_tf`).
        if keras.backend.backend() == "tensorflow":
            self._maybe_initialized_tf()

    def _maybe_initialized_tf(self):
        if getattr(self, "_fast_word_piece", None) is None:
            from biozoo.tokenizers import tf_text_engine

            self._fast_word_piece = tf_text_engine.fast_wordpiece(self)

    def set_vocabulary(self, vocabulary):
        if isinstance(vocabulary, str):
            with open(vocabulary, encoding="utf-8") as file:
                vocabulary = [line.rstrip("\n").rstrip("\r") for line in file]
        if vocabulary is not None:
            vocabulary = list(vocabulary)
            present = set(vocabulary)
            vocabulary += [t for t in getattr(self, "added_tokens", ()) if t not in present]
        self._fast_word_piece = None
        self._forget_engines()
        super().set_vocabulary(vocabulary)

    def _copy_vocabulary(self, other):
        self.set_vocabulary(other.get_vocabulary())

    def _build_engine(self):
        return eager.wordpiece_engine(self.get_vocabulary(), self.lowercase, self.hf_strip_accents,
                                      self.max_input_chars_per_word, self.unk_token, self.kept_whole(),
                                      self.normalized_added_tokens, self.tokenize_chinese_chars)

    def split_words(self, text):
        return split_words(text, self.tokenize_chinese_chars)

    continuation_prefix = "##"

    def ragged_ids(self, inputs):
        from biozoo.tokenizers import tf_text_engine

        return tf_text_engine.wordpiece_ragged_ids(self, inputs)

    def get_config(self):
        config = super().get_config()
        for key in ("oov_token", "split", "special_tokens", "special_tokens_in_strings"):
            config.pop(key, None)
        config.update(
            {
                "strip_accents": self.hf_strip_accents,
                "max_input_chars_per_word": self.max_input_chars_per_word,
                "tokenize_chinese_chars": self.tokenize_chinese_chars,
                "unk_token": self.unk_token,
                "cls_token": self.cls_token,
                "sep_token": self.sep_token,
                "pad_token": self.pad_token,
                "mask_token": self.mask_token,
                "added_tokens": list(self.added_tokens),
                "normalized_added_tokens": list(self.normalized_added_tokens),
            }
        )
        return config
