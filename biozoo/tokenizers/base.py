"""The base class of biozoo's tokenizers: HF-exact ids and offsets, added tokens, two engines.

`biozoo.Tokenizer` (biozoo/api.py) is the public entry point that loads one from any handle.

A tokenizer has two engines with equal ids. Called eagerly (any Keras backend, no TensorFlow
needed) it runs the HF `tokenizers` pipeline of `biozoo.tokenizers.eager`; inside a TensorFlow
graph (tf.data, tf.function, SavedModel / TF Hub exports) it runs the tensorflow-text ops of
`biozoo.tokenizers.tf_text_engine`, imported only there. KerasHub's tokenizers split their work
the same way.
"""

from __future__ import annotations

import re
import sys
import weakref

import keras_hub
import numpy as np

from biozoo.tokenizers import eager

# tokenizer -> its HF `tokenizers` engine. Kept off the tokenizer: Keras tracks attributes, and
# SavedModel exports would try to save a Rust object.
_ENGINES = weakref.WeakKeyDictionary()


class Tokenizer(keras_hub.tokenizers.Tokenizer):
    """A tokenizer whose ids and offsets equal the HF tokenizer's; `from_preset` reads a local Keras
    preset directory (use `biozoo.Tokenizer.from_preset` for names and other handles).

    Called on a string it returns its ids (a 1-D array); on a list of strings, a list of id lists,
    or a `[batch, sequence_length]` array when `sequence_length` is set; in a TensorFlow graph,
    tensors (ragged without `sequence_length`).

    Example (a WordPiece vocabulary of a few pieces; a preset's is its vocab.txt):
        >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "brca", "##1", "mutations", "il", "-", "2"]
        >>> tokenizer = WordPieceTokenizer(vocabulary=vocab, lowercase=True)
        >>> tokenizer("BRCA1 mutations")
        array([5, 6, 7], dtype=int32)
        >>> tokenizer(["BRCA1 mutations", "IL-2"])
        [[5, 6, 7], [8, 9, 10]]
        >>> tokenizer.token_spans(["BRCA1 mutations"])  # (id, start, end) per token
        [[(5, 0, 4), (6, 4, 5), (7, 6, 15)]]
        >>> WordPieceTokenizer(vocabulary=vocab, lowercase=True, sequence_length=5)(["IL-2"])
        array([[ 8,  9, 10,  0,  0]], dtype=int32)
    """

    # Literal strings kept as single tokens (entity markers such as "@GENE$"); they are
    # matched in the raw text, before normalization, as HF matches its special tokens.
    added_tokens = ()
    # Those of `added_tokens` matched in the normalized text instead, as HF matches an
    # `AddedToken(normalized=True)` (what its `add_tokens` makes): under lower-casing an added
    # "COVID19" is also found in "covid19".
    normalized_added_tokens = ()

    def ids(self, texts):
        """Token ids of each string, without special tokens, as Python lists."""
        texts = text_list(texts)
        return eager.encode_ids(self.engine(), texts) if texts else []

    def token_spans(self, texts):
        """Per text, `[(token id, start, end), ...]` without special tokens: the ids `ids` gives and
        each token's character span in the text (HF's `offset_mapping`)."""
        texts = text_list(texts)
        return eager.encode_spans(self.engine(), texts) if texts else []

    def engine(self):
        """The HF `tokenizers` pipeline of this tokenizer (built once)."""
        engine = _ENGINES.get(self)
        if engine is None:
            engine = _ENGINES[self] = self._build_engine()
        return engine

    def _build_engine(self):
        raise NotImplementedError

    def _forget_engines(self):
        """Drop the engines built from the vocabulary (it changed); they are rebuilt when used."""
        _ENGINES.pop(self, None)
        graph_engine = sys.modules.get("biozoo.tokenizers.tf_text_engine")
        if graph_engine is not None:
            graph_engine.forget(self)

    def _set_added_tokens(self, added_tokens, normalized_added_tokens):
        self.added_tokens = tuple(added_tokens)
        self.normalized_added_tokens = tuple(normalized_added_tokens)
        stray = [t for t in self.normalized_added_tokens if t not in self.added_tokens]
        if stray:
            raise ValueError(f"normalized_added_tokens {stray} are not among added_tokens {list(self.added_tokens)}")

    def kept_whole(self):
        """The special tokens and the added tokens matched in the raw text, which the text keeps
        whole wherever they occur."""
        tokens = [getattr(self, attr) for attr in getattr(self, "_special_token_attrs", [])]
        raw = [t for t in self.added_tokens if t not in self.normalized_added_tokens]
        return list(dict.fromkeys([t for t in tokens if t] + raw))

    def normalized_forms(self):
        """`{normalized text: token}` of `normalized_added_tokens`: HF normalizes each token's
        text with the tokenizer's normalizer and matches that (the first token of a form wins)."""
        normalizer = self.engine().normalizer
        forms = {}
        for token in self.normalized_added_tokens:
            form = normalizer.normalize_str(token)
            if form:
                forms.setdefault(form, token)
        return forms

    def with_added_tokens(self, tokens, normalized=False):
        """A copy of this tokenizer that keeps `tokens` whole (new ids at the end of the
        vocabulary, as HF's `add_tokens`), matched in the raw text or, with `normalized`, in
        the normalized text (HF's `AddedToken(normalized=True)`). Resize the model's embedding
        to match."""
        config = self.get_config()
        new = [t for t in dict.fromkeys(tokens) if t not in self.added_tokens]
        config["added_tokens"] = list(self.added_tokens) + new
        config["normalized_added_tokens"] = list(self.normalized_added_tokens) + (new if normalized else [])
        copy = type(self).from_config(config)
        copy._copy_vocabulary(self)
        return copy

    def split_words(self, text):
        """`[(word, start, end)]`: the words this tokenizer tokenizes separately, with their
        character offsets in `text` (the question-answering pipeline's WordPiece words use them;
        the SQuAD features take each token's own span from `token_spans`)."""
        raise NotImplementedError

    continuation_prefix = None  # WordPiece marks a word's later tokens ("##")

    def tokenize(self, inputs):
        self._check_vocabulary()
        if in_tf_graph():
            from biozoo.tokenizers import tf_text_engine

            return tf_text_engine.tokenize(self, inputs)
        return self._tokenize_eager(inputs)

    def _tokenize_eager(self, inputs):
        """KerasHub's eager output: ids of a string as an array; of a list, id lists; padded with the
        pad token and cut when `sequence_length` is set (`[sequence_length]`, `[batch, sequence_length]`)."""
        if hasattr(inputs, "numpy") and np.ndim(inputs) == 0:  # a scalar tf.Tensor
            inputs = inputs.numpy().decode("utf-8")
        single = isinstance(inputs, (str, bytes))
        rows = self.ids([inputs] if single else inputs)
        if self.sequence_length:
            pad, length = self.pad_token_id, self.sequence_length
            rows = np.asarray([row[:length] + [pad] * (length - len(row[:length])) for row in rows], self.compute_dtype)
        elif single:
            rows = [np.asarray(rows[0], self.compute_dtype)]
        return rows[0] if single else rows

    def ragged_ids(self, inputs):
        """`[batch]` string tensor -> ragged `[batch, (tokens)]` ids, in TensorFlow ops (graphs)."""
        raise NotImplementedError

    def _maybe_initialized_tf(self):
        """Build the tensorflow-text resources (subclasses); the graph engine calls it first."""

    def _use_tf_workflow(self):
        return in_tf_graph()


def in_tf_graph():
    """True while TensorFlow traces a graph (tf.function, tf.data); never imports TensorFlow."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and hasattr(tf, "executing_eagerly") and not tf.executing_eagerly()


_SURROGATE = re.compile("[\ud800-\udfff]")


def text_list(texts, what="texts"):
    """`texts` as a list of str, or a TypeError / ValueError saying what is wrong: a bare string
    (it would be read as a list of characters), bytes, None or another type among them, or a
    lone surrogate (a JSON escape such as \\ud800 that is no character)."""
    if hasattr(texts, "numpy"):  # a tf.Tensor of strings, eagerly
        texts = [t.decode("utf-8") for t in np.asarray(texts.numpy()).reshape(-1)]
    if isinstance(texts, (str, bytes, bytearray)):
        kind = "a string" if isinstance(texts, str) else "bytes"
        raise TypeError(f"{what} must be a list of strings, got {kind}: wrap one text in a list ([text])")
    try:
        texts = list(texts)
    except TypeError:
        raise TypeError(f"{what} must be a list of strings, got {type(texts).__name__}") from None
    for index, text in enumerate(texts):
        if isinstance(text, (bytes, bytearray)):
            raise TypeError(f"{what}[{index}] is bytes, not a string: decode it first (text.decode('utf-8'))")
        if not isinstance(text, str):
            raise TypeError(f"{what}[{index}] is {type(text).__name__}, not a string")
        found = None if text.isascii() else _SURROGATE.search(text)
        if found:
            raise ValueError(f"{what}[{index}] holds a lone surrogate (U+{ord(found.group()):04X}) at character "
                             f"{found.start()}: not Unicode text (was it decoded with errors='surrogateescape'?)")
    return texts
