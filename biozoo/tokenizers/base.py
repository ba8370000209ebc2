"""The base class of biozoo's tokenizers: HF-exact ids, added tokens, word offsets.

`biozoo.Tokenizer` (biozoo/api.py) is the public entry point that loads one from any handle."""

from __future__ import annotations

import weakref

import keras_hub
from keras_hub.src.utils.tensor_utils import preprocessing_function


# tokenizer -> its `_ragged_ids` as a tf.function. Kept off the tokenizer: an attribute would be
# tracked, and saved with any SavedModel the tokenizer is part of.
_ID_FUNCTIONS = weakref.WeakKeyDictionary()


def _ids_function(tokenizer):
    """`_ragged_ids` traced once: eager, its hundreds of string ops cost ~40 ms per call."""
    import tensorflow as tf

    function = _ID_FUNCTIONS.get(tokenizer)
    if function is None:
        tokenizer._maybe_initialized_tf()
        if hasattr(tokenizer, "_special_token_ids"):
            # SentencePiece builds its special-token table on first use: build it eagerly, or its
            # keys would belong to this trace and no SavedModel holding the tokenizer could save it
            tokenizer._special_token_ids(tf.constant([""]))
        owner = weakref.ref(tokenizer)  # the cache must not keep its key alive
        function = tf.function(lambda texts: owner()._ragged_ids(texts),
                               input_signature=[tf.TensorSpec([None], tf.string)])
        _ID_FUNCTIONS[tokenizer] = function
    return function


class Tokenizer(keras_hub.tokenizers.Tokenizer):
    """A tokenizer whose ids equal the HF tokenizer's; `from_preset` reads a local Keras preset
    directory (use `biozoo.Tokenizer.from_preset` for names and other handles).

    Example:
        >>> tokenizer = BertTokenizer(vocabulary="vocab.txt", lowercase=True)
        >>> tokenizer.ids(["BRCA1 mutations in breast cancer."])
    """

    # Literal strings kept as single tokens (entity markers such as "@GENE$"); they are
    # matched in the raw text, before normalization, as HF matches its added tokens.
    added_tokens = ()

    def ids(self, texts):
        """Token ids of each string as Python lists (fast for long lists of strings)."""
        import tensorflow as tf

        if len(texts) == 0:
            return []
        # a tf.constant, not a list: Keras would inspect each element of a Python list
        texts = tf.constant(list(texts), tf.string)
        if self.sequence_length:
            out = self(texts)
            return [list(map(int, x)) for x in out]
        return _ids_function(self)(texts).to_list()

    def with_added_tokens(self, tokens):
        """A copy of this tokenizer that keeps `tokens` whole (new ids at the end of the
        vocabulary, as HF's `add_tokens`). Resize the model's embedding to match."""
        config = self.get_config()
        config["added_tokens"] = list(dict.fromkeys(list(self.added_tokens) + list(tokens)))
        copy = type(self).from_config(config)
        copy._copy_vocabulary(self)
        return copy

    def split_words(self, text):
        """`[(word, start, end)]`: the words this tokenizer tokenizes separately, with their
        character offsets in `text` (for mapping predictions back to the input)."""
        raise NotImplementedError

    def token_spans(self, texts):
        """Per text, `[(token id, start, end), ...]` without special tokens: the ids `ids` gives and
        each token's character span in the text (HF's `offset_mapping`)."""
        from biozoo.tokenizers._offsets import token_spans

        words = [self.split_words(text) for text in texts]
        ids = self.ids([w for ws in words for w, _, _ in ws])
        vocabulary = self.get_vocabulary()
        out, k = [], 0
        for ws in words:
            row = []
            for word, start, end in ws:
                word_ids = ids[k]
                k += 1
                normalized, origin = self._alignment(word)
                spans = token_spans([vocabulary[i] for i in word_ids], start, end, normalized, origin,
                                    self.continuation_prefix, self.unk_token)
                row.extend((i, a, b) for i, (a, b) in zip(word_ids, spans))
            out.append(row)
        return out

    continuation_prefix = None  # WordPiece marks a word's later tokens ("##")

    def _alignment(self, word):
        """(normalized word, input index of each of its characters)."""
        return word, list(range(len(word)))

    @preprocessing_function
    def _tokenize_tf(self, inputs):
        import tensorflow as tf

        # subclasses give `_ragged_ids`: strings -> ragged ids, in pure TF ops
        self._maybe_initialized_tf()
        if not isinstance(inputs, tf.RaggedTensor):
            inputs = tf.convert_to_tensor(inputs)
        unbatched = inputs.shape.rank == 0
        if unbatched:
            inputs = tf.expand_dims(inputs, 0)
        tokens = self._ragged_ids(inputs)
        if self.sequence_length:
            output_shape = tokens.shape.as_list()
            output_shape[-1] = self.sequence_length
            tokens = tokens.to_tensor(shape=output_shape)
        if unbatched:
            tokens = tf.squeeze(tokens, 0)
        return tokens

    def _special_and_added_tokens(self):
        tokens = [getattr(self, attr) for attr in getattr(self, "_special_token_attrs", [])]
        return list(dict.fromkeys([t for t in tokens if t] + list(self.added_tokens)))
