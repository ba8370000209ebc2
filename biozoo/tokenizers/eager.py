"""The eager tokenization engine: HF `tokenizers` pipelines built from a biozoo tokenizer's settings.

Outside a TensorFlow graph, biozoo's tokenizers tokenize with the Rust library that HF's fast
tokenizers are made of, configured as transformers configures BERT's and ALBERT's, so ids and
character offsets equal HF's by construction and no TensorFlow is needed (JAX, PyTorch, Grain
pipelines). Inside a graph (tf.data, tf.function, SavedModel exports) the tensorflow-text engine
runs instead (`biozoo.tokenizers.tf_text_engine`); the tests hold the two equal.

- WordPiece: `BertNormalizer` (clean text, CJK spacing, accents stripped when HF strips them,
  per-code-point lower-casing), `BertPreTokenizer`, a `WordPiece` model with HF's per-word
  character limit.
- SentencePiece (ALBERT): the normalizer sequence of transformers' ALBERT converter (quotes,
  NFKD and accent stripping unless kept, lower-casing, the model's own precompiled charsmap,
  collapsed spaces), `WhitespaceSplit` + `Metaspace("▁")`, a `Unigram` model of the
  SentencePiece model's pieces and scores.

Special and added tokens are kept whole: matched in the raw text (`normalized=False`, as HF's
special tokens), or in the normalized text for the added tokens HF matches there (`normalized=True`,
what its `add_tokens` makes), in both engines.

Example:
    >>> engine = wordpiece_engine(vocabulary, lowercase=True, strip_accents=None,
    ...                           max_input_chars_per_word=100, unk_token="[UNK]", kept=["[CLS]"])
    >>> engine.encode("BRCA1 mutations", add_special_tokens=False).ids
"""

from __future__ import annotations

from sentencepiece import sentencepiece_model_pb2
from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers

METASPACE = "\u2581"
# WordPiece's limit on a word's characters (a longer word is the unknown token): transformers'
# BertTokenizer builds its model with this one whatever its files say
HF_MAX_INPUT_CHARS_PER_WORD = 100


def _keep_whole(engine, kept, normalized):
    engine.add_special_tokens([AddedToken(token, normalized=False, special=True) for token in kept])
    engine.add_tokens([AddedToken(token, normalized=True, special=False) for token in normalized])
    return engine


def wordpiece_engine(vocabulary, lowercase, strip_accents, max_input_chars_per_word, unk_token, kept, normalized=(),
                     tokenize_chinese_chars=True):
    """A `tokenizers.Tokenizer` equal to HF's BertTokenizerFast for these settings (`strip_accents`
    None: follows `lowercase`, as HF's); `kept`: tokens kept whole, matched in the raw text (special
    and added ones); `normalized`: added tokens matched in the normalized text;
    `tokenize_chinese_chars`: CJK characters are words of their own."""
    model = models.WordPiece({token: i for i, token in enumerate(vocabulary)}, unk_token=unk_token,
                             max_input_chars_per_word=max_input_chars_per_word)
    engine = Tokenizer(model)
    engine.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=tokenize_chinese_chars,
                                                   strip_accents=strip_accents, lowercase=lowercase)
    engine.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return _keep_whole(engine, kept, normalized)


def sentencepiece_engine(proto, lowercase, keep_accents, vocabulary, kept, normalized=()):
    """A `tokenizers.Tokenizer` equal to HF's AlbertTokenizerFast for the SentencePiece model
    `proto` (serialized bytes); `vocabulary` is biozoo's (the model's pieces, then added tokens)."""
    model_proto = sentencepiece_model_pb2.ModelProto()
    model_proto.ParseFromString(proto)
    pieces = [(piece.piece, piece.score) for piece in model_proto.pieces]
    engine = Tokenizer(models.Unigram(pieces, unk_id=model_proto.trainer_spec.unk_id, byte_fallback=False))
    # The added tokens the model lacks take the ids after its pieces, in order, as HF's added
    # vocabulary gives them; as pieces of the model they would also be found in normalized text.
    for index, token in enumerate(vocabulary[len(pieces):], len(pieces)):
        _keep_whole(engine, [] if token in normalized else [token], [token] if token in normalized else [])
        if engine.token_to_id(token) != index:
            raise ValueError(f"added token {token!r} got id {engine.token_to_id(token)}, not its vocabulary index {index}")
    engine.normalizer = albert_normalizer(lowercase, keep_accents, model_proto.normalizer_spec.precompiled_charsmap)
    engine.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always")])
    return _keep_whole(engine, kept, normalized)


def albert_normalizer(lowercase, keep_accents, charsmap=None, model_steps=True):
    """HF AlbertTokenizer's normalizer: its own steps, then the SentencePiece model's precompiled
    `charsmap` and the collapsing of runs of spaces; without `model_steps`, NFKC in their place
    (what the graph engine matches added tokens after)."""
    steps = [normalizers.Replace("``", '"'), normalizers.Replace("''", '"')]
    if not keep_accents:
        steps += [normalizers.NFKD(), normalizers.StripAccents()]
    if lowercase:
        steps.append(normalizers.Lowercase())
    if not model_steps:
        steps.append(normalizers.NFKC())
    elif charsmap:
        steps.append(normalizers.Precompiled(charsmap))
    if model_steps:
        steps.append(normalizers.Replace(Regex(" {2,}"), " "))
    return normalizers.Sequence(steps)


def encode_ids(engine, texts):
    """Token ids of each text, without special tokens (encoded in parallel, offsets not tracked)."""
    return [encoding.ids for encoding in engine.encode_batch_fast(list(texts), add_special_tokens=False)]


def encode_spans(engine, texts):
    """Per text, `[(token id, start, end), ...]` without special tokens: HF's `offset_mapping`."""
    return [list(zip(encoding.ids, *zip(*encoding.offsets))) if encoding.ids else []
            for encoding in engine.encode_batch(list(texts), add_special_tokens=False)]
