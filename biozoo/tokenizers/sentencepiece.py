"""SentencePiece tokenizer equal to HF's AlbertTokenizer (fast)."""

from __future__ import annotations

import re

import keras
import keras_hub
from sentencepiece import sentencepiece_model_pb2

from biozoo.tokenizers import eager
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

    user_defined_pieces = ()  # the model's user-defined symbols: kept whole in the raw text, as HF's converter adds them

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
        normalized_added_tokens=(),
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
        self._set_added_tokens(added_tokens, normalized_added_tokens)
        self.lowercase = lowercase
        self.keep_accents = keep_accents
        super().__init__(proto=proto, sequence_length=sequence_length, **kwargs)

    def set_proto(self, proto):
        self._sentence_piece = None
        self._forget_engines()
        super().set_proto(proto)
        self.whitespace_to_space = self._word_breaks = None
        if self.proto is not None:
            # HF splits words on Unicode whitespace *after* the model's own normalizer
            # (WhitespaceSplit); SentencePiece only breaks pieces at what that normalizer turns
            # into spaces. The graph engine spaces out the characters it leaves alone (NEL, Ogham
            # space) first.
            survivors = [c for c in UNICODE_WHITESPACE if c in self._sentence_piece_spm.normalize(f"x{c}y")]
            if survivors:
                self.whitespace_to_space = "[" + "".join(f"\\x{{{ord(c):X}}}" for c in survivors) + "]"
            # words break at the whitespace the normalizer keeps or makes a space, not at what it deletes (\v)
            joined = self._sentence_piece_spm.normalize("xy")
            self._word_breaks = "".join(c for c in UNICODE_WHITESPACE
                                        if self._sentence_piece_spm.normalize(f"x{c}y") != joined)
            model = sentencepiece_model_pb2.ModelProto()
            model.ParseFromString(self.proto)
            user_defined = sentencepiece_model_pb2.ModelProto.SentencePiece.USER_DEFINED
            self.user_defined_pieces = tuple(p.piece for p in model.pieces if p.type == user_defined)
            missing = [t for t in self.added_tokens if t not in self._token_to_id_map]
            for token in missing:
                self._token_to_id_map[token] = len(self._vocabulary)
                self._vocabulary.append(token)

    def kept_whole(self):
        return list(dict.fromkeys(super().kept_whole() + list(self.user_defined_pieces)))

    def _set_proto_tf(self, proto):
        # KerasHub builds its tf-text tokenizer whenever tf-text is installed; biozoo only where
        # TensorFlow is the backend or a graph asks for it (`_maybe_initialized_tf`).
        if keras.backend.backend() == "tensorflow":
            self._sentence_piece = None
            self._maybe_initialized_tf(proto)

    def _maybe_initialized_tf(self, proto=None):
        if getattr(self, "_sentence_piece", None) is None:
            from biozoo.tokenizers import tf_text_engine

            super()._set_proto_tf(tf_text_engine.unigram_proto(proto or self.proto))

    def _copy_vocabulary(self, other):
        self.set_proto(other.proto)

    def _build_engine(self):
        return eager.sentencepiece_engine(self.proto, self.lowercase, self.keep_accents, self.get_vocabulary(),
                                          self.kept_whole(), self.normalized_added_tokens)

    def normalized_forms(self):
        """As `Tokenizer.normalized_forms`, normalized by the steps in front of the SentencePiece
        model and NFKC (the graph engine matches there; the model applies its character map
        itself). A ValueError names a token whose form would differ from HF's."""
        before_model = eager.albert_normalizer(self.lowercase, self.keep_accents, model_steps=False)
        full = super().normalized_forms()
        forms = {before_model.normalize_str(token): token for token in full.values()}
        changed = [token for form, token in forms.items() if full.get(form) != token]
        if changed:
            raise ValueError(f"the added tokens {changed} are matched after normalization (normalized=True), "
                             "and the SentencePiece model's character map makes them other than NFKC does: the TensorFlow engine "
                             "cannot match them as HF does. Add them with normalized=False.")
        return forms

    @property
    def word_breaks(self):
        """The characters words break at: the whitespace the model's normalizer keeps or makes a
        space (not what it deletes, as nmt_nfkc does \v, which joins its neighbours)."""
        return self._word_breaks or UNICODE_WHITESPACE

    def split_words(self, text):
        """Words between `word_breaks`: SentencePiece (HF: WhitespaceSplit + Metaspace)
        tokenizes each on its own, so per-word pieces equal whole-text pieces."""
        return [(m.group(), m.start(), m.end()) for m in re.finditer(f"[^{re.escape(self.word_breaks)}]+", text)]

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

    def ragged_ids(self, inputs):
        from biozoo.tokenizers import tf_text_engine

        return tf_text_engine.sentencepiece_ragged_ids(self, inputs)

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
                "normalized_added_tokens": list(self.normalized_added_tokens),
            }
        )
        return config
