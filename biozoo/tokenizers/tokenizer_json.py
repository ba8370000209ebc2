"""Tokenizer arguments from an HF `tokenizer.json` alone.

transformers 5 saves a tokenizer as tokenizer.json + tokenizer_config.json only: no vocab.txt
for WordPiece, no spiece.model for SentencePiece. `wordpiece_arguments` and
`sentencepiece_arguments` read the vocabulary, normalizer, pre-tokenizer, special and added
tokens from tokenizer.json and return the keyword arguments with which `WordPieceTokenizer` /
`SentencePieceTokenizer` give the HF tokenizer's ids. What biozoo cannot reproduce raises a
`CheckpointError` that names the file and the component.

Example:
    >>> WordPieceTokenizer(**wordpiece_arguments("tokenizer.json", {"pad_token": "[PAD]"}))
"""

from __future__ import annotations

import base64

from sentencepiece import sentencepiece_model_pb2 as model_pb2

from biozoo._io import read_json
from biozoo.errors import CheckpointError
from biozoo.tokenizers.eager import HF_MAX_INPUT_CHARS_PER_WORD

METASPACE = "\u2581"
# The normalizer steps of HF's AlbertTokenizer (transformers 4 and 5) in order, in groups of
# (meaning, step names); only the first group is always there. The SentencePieceTokenizer
# applies the same steps, the last two inside the SentencePiece model (its precompiled
# charsmap; collapsing runs of spaces changes nothing before HF's WhitespaceSplit).
ALBERT_NORMALIZER = (
    ("quotes", ("Replace('``' -> '\"')", "Replace(\"''\" -> '\"')")),
    ("strip_accents", ("NFKD", "StripAccents")),
    ("lowercase", ("Lowercase",)),
    ("charsmap", ("Precompiled",)),
    ("collapse_spaces", ("Replace(' {2,}' -> ' ')",)),
)


def wordpiece_arguments(path, special_tokens=None, as_bert_tokenizer=False):
    """`WordPieceTokenizer` keyword arguments from a tokenizer.json with a WordPiece model.

    `special_tokens` ({"pad_token": "[PAD]", ...}, from tokenizer_config.json) name the roles
    that tokenizer.json leaves implicit, and override those it names. With `as_bert_tokenizer`,
    only what transformers' BertTokenizer takes from the file: the vocabulary, special and added
    tokens. It builds the rest itself (BertNormalizer from tokenizer_config.json, BertPreTokenizer,
    WordPiece with "##" and its default limit on a word's characters), so the file's normalizer,
    pre-tokenizer and word limit are neither read nor checked; the caller gives the casing."""
    data = read_json(path, "tokenizer")
    model = _model(data, "WordPiece", path)
    vocabulary = _vocabulary_in_id_order(model["vocab"], path)
    roles = {"unk_token": model.get("unk_token", "[UNK]"), **_post_processor_roles(data), **(special_tokens or {})}
    arguments = {"vocabulary": vocabulary, **roles, **_added_tokens(data, vocabulary, roles, path)}
    if as_bert_tokenizer:
        return arguments
    prefix = model.get("continuing_subword_prefix", "##")
    if prefix != "##":
        raise CheckpointError(f"{path}: continuing_subword_prefix {prefix!r} is not supported; biozoo's "
                              "WordPiece tokenizer marks word continuations with '##'.")
    normalizer = _bert_normalizer(data.get("normalizer"), path)
    _check_bert_pre_tokenizer(data.get("pre_tokenizer"), path)
    return {
        **arguments,
        **normalizer,
        "max_input_chars_per_word": model.get("max_input_chars_per_word", HF_MAX_INPUT_CHARS_PER_WORD),
    }


def sentencepiece_arguments(path, special_tokens=None):
    """`SentencePieceTokenizer` keyword arguments from a tokenizer.json with a Unigram model:
    a SentencePiece model rebuilt from its pieces, scores and charsmap (`proto`, bytes), and
    the casing of its normalizer. `special_tokens` as for `wordpiece_arguments`."""
    data = read_json(path, "tokenizer")
    model = _model(data, "Unigram", path)
    if model.get("byte_fallback"):
        raise CheckpointError(f"{path}: the Unigram model uses byte_fallback, which ALBERT's tokenizer "
                              "does not; biozoo's SentencePiece tokenizer cannot reproduce it.")
    pieces = [(piece, score) for piece, score in model["vocab"]]
    unk_id = model.get("unk_id")
    if unk_id is None or not 0 <= unk_id < len(pieces):
        raise CheckpointError(f"{path}: the Unigram model has no valid unk_id ({unk_id!r}).")
    casing, charsmap = _albert_normalizer(data.get("normalizer"), path)
    _check_metaspace_pre_tokenizer(data.get("pre_tokenizer"), path)
    vocabulary = [piece for piece, _ in pieces]
    roles = {"unk_token": vocabulary[unk_id], **_post_processor_roles(data), **(special_tokens or {})}
    added_tokens = _added_tokens(data, vocabulary, roles, path)
    special_ids = {entry["id"] for entry in data.get("added_tokens") or [] if entry.get("special")}
    return {
        "proto": _sentencepiece_proto(pieces, unk_id, special_ids, charsmap),
        **casing,
        **roles,
        **added_tokens,
    }


def _sentencepiece_proto(pieces, unk_id, special_ids, charsmap):
    """A serialized unigram SentencePiece `ModelProto`: `pieces` [(piece, score)], the unknown
    piece at `unk_id`, and the normalizer's precompiled `charsmap` (bytes; empty: none). Each
    input gets a "▁" prefix and runs of whitespace collapse, as with HF's WhitespaceSplit +
    Metaspace(prepend_scheme="always").

    The pieces at `special_ids` are user-defined: HF's Unigram model holds its special tokens
    as pieces of score 0, which win wherever normalization makes them (NFKD: "＜pad＞" ->
    "<pad>"); SentencePiece never produces a control piece, and always a user-defined one."""
    proto = model_pb2.ModelProto()
    kinds = model_pb2.ModelProto.SentencePiece.Type
    for index, (piece, score) in enumerate(pieces):
        kind = kinds.UNKNOWN if index == unk_id else kinds.USER_DEFINED if index in special_ids else kinds.NORMAL
        proto.pieces.add(piece=piece, score=score, type=kind)
    proto.trainer_spec.model_type = model_pb2.TrainerSpec.UNIGRAM
    proto.trainer_spec.vocab_size = len(pieces)
    proto.trainer_spec.unk_id = unk_id
    proto.trainer_spec.bos_id = proto.trainer_spec.eos_id = proto.trainer_spec.pad_id = -1
    proto.normalizer_spec.name = "precompiled" if charsmap else "identity"
    proto.normalizer_spec.precompiled_charsmap = charsmap
    proto.normalizer_spec.add_dummy_prefix = True
    proto.normalizer_spec.remove_extra_whitespaces = True
    proto.normalizer_spec.escape_whitespaces = True
    return proto.SerializeToString()


def _model(data, expected, path):
    """The `model` section, checked to be of the `expected` type."""
    model = data.get("model") or {}
    kind = _model_type(model)
    if kind != expected:
        raise CheckpointError(f"{path}: the tokenizer model is {kind!r}; biozoo reads a {expected} model "
                              "for this model family.")
    return model


def _model_type(model):
    """The model's type; old tokenizer.json files (e.g. DistilBERT's) leave it to the fields."""
    if "type" in model:
        return model["type"]
    if "merges" in model:
        return "BPE"
    if isinstance(model.get("vocab"), list):
        return "Unigram"
    return "WordPiece" if "continuing_subword_prefix" in model else "WordLevel"


def _vocabulary_in_id_order(vocab, path):
    """The tokens of a {token: id} vocabulary as a list indexed by id (ids must be 0..n-1)."""
    tokens = sorted(vocab, key=vocab.get)
    if [vocab[token] for token in tokens] != list(range(len(tokens))):
        raise CheckpointError(f"{path}: the vocabulary's ids are not 0..{len(tokens) - 1}, each once; "
                              "biozoo needs one token per id.")
    broken = [token for token in tokens if "\n" in token or "\r" in token]
    if broken:
        raise CheckpointError(f"{path}: vocabulary token {broken[0]!r} contains a line break; "
                              "a vocabulary file cannot hold it.")
    return tokens


def _steps(component, key):
    """The steps of a normalizer / pre-tokenizer / post-processor, `Sequence`s unpacked
    (`key`: "normalizers", "pretokenizers" or "processors")."""
    if not component:
        return []
    if component.get("type") == "Sequence":
        return [step for part in component[key] for step in _steps(part, key)]
    return [component]


def _step_name(step):
    if step.get("type") != "Replace":
        return step.get("type")
    pattern = step.get("pattern", {})
    return f"Replace({pattern.get('String', pattern.get('Regex'))!r} -> {step.get('content')!r})"


def _describe(steps):
    return " + ".join(_step_name(step) for step in steps) or "none"


def _bert_normalizer(normalizer, path):
    """{lowercase, strip_accents, tokenize_chinese_chars} of a BertNormalizer; anything else raises."""
    steps = _steps(normalizer, "normalizers")
    if [step["type"] for step in steps] != ["BertNormalizer"]:
        raise CheckpointError(f"{path}: normalizer {_describe(steps)} is not supported; biozoo's WordPiece "
                              "tokenizer reproduces a BertNormalizer alone.")
    (step,) = steps
    if not step.get("clean_text", True):
        raise CheckpointError(f"{path}: BertNormalizer with clean_text=false is not supported; biozoo's "
                              "WordPiece tokenizer always applies it.")
    return {"lowercase": step.get("lowercase", True), "strip_accents": step.get("strip_accents"),
            "tokenize_chinese_chars": step.get("handle_chinese_chars", True)}


def _check_bert_pre_tokenizer(pre_tokenizer, path):
    steps = _steps(pre_tokenizer, "pretokenizers")
    if [step["type"] for step in steps] != ["BertPreTokenizer"]:
        raise CheckpointError(f"{path}: pre-tokenizer {_describe(steps)} is not supported; biozoo's WordPiece "
                              "tokenizer reproduces a BertPreTokenizer alone.")


def _albert_normalizer(normalizer, path):
    """({"lowercase", "keep_accents"}, precompiled charsmap bytes) of ALBERT's normalizer
    sequence (`ALBERT_NORMALIZER`); another sequence raises."""
    steps = _steps(normalizer, "normalizers")
    names = [_step_name(step) for step in steps]
    found, position = set(), 0
    for meaning, expected in ALBERT_NORMALIZER:
        if tuple(names[position:position + len(expected)]) == expected:
            found.add(meaning)
            position += len(expected)
    if "quotes" not in found or position != len(names):
        allowed = " ".join(" + ".join(group) if meaning == "quotes" else f"[+ {' + '.join(group)}]"
                           for meaning, group in ALBERT_NORMALIZER)
        raise CheckpointError(f"{path}: normalizer {_describe(steps)} is not supported; biozoo's SentencePiece "
                              f"tokenizer reproduces ALBERT's: {allowed} (steps in brackets optional).")
    charsmap = next((step["precompiled_charsmap"] for step in steps if step["type"] == "Precompiled"), "")
    casing = {"lowercase": "lowercase" in found, "keep_accents": "strip_accents" not in found}
    return casing, base64.b64decode(charsmap)


def _check_metaspace_pre_tokenizer(pre_tokenizer, path):
    """WhitespaceSplit + Metaspace("▁", prepend_scheme="always"), as transformers 4 and 5 write
    for ALBERT, or the older Metaspace alone (add_prefix_space=true), which transformers 5 reads
    as the pair; anything else raises."""
    steps = _steps(pre_tokenizer, "pretokenizers")
    names = [step["type"] for step in steps]
    metaspace = steps[-1] if names in (["WhitespaceSplit", "Metaspace"], ["Metaspace"]) else {}
    default_scheme = "always" if metaspace.get("add_prefix_space", True) else "never"
    if metaspace.get("replacement") != METASPACE or metaspace.get("prepend_scheme", default_scheme) != "always":
        raise CheckpointError(f"{path}: pre-tokenizer {_describe(steps)} is not supported; biozoo's SentencePiece "
                              "tokenizer reproduces WhitespaceSplit + Metaspace(replacement='▁', "
                              "prepend_scheme='always').")


def _post_processor_roles(data):
    """cls_token and sep_token from the post-processor that wraps a sequence in them."""
    for step in _steps(data.get("post_processor"), "processors"):
        if step.get("type") == "TemplateProcessing":
            tokens = [item["SpecialToken"]["id"] for item in step.get("single", []) if "SpecialToken" in item]
            if len(tokens) == 2:
                return {"cls_token": tokens[0], "sep_token": tokens[1]}
        if step.get("type") == "BertProcessing":
            return {"cls_token": step["cls"][0], "sep_token": step["sep"][0]}
    return {}


def _added_tokens(data, vocabulary, roles, path):
    return added_token_arguments(data.get("added_tokens") or [], vocabulary, roles, path)


def added_token_arguments(entries, vocabulary, roles, path):
    """`added_tokens` and `normalized_added_tokens` arguments from HF's added-token `entries`
    (`{"id", "content", "special", "normalized", "single_word"}`, as tokenizer.json and
    tokenizer_config.json's added_tokens_decoder hold them): the added tokens biozoo must keep
    whole (those not already kept as a special token's role), checked to get their HF ids
    (biozoo appends the ones missing from the vocabulary at its end, in order), and those of
    them HF matches in the normalized text (non-special tokens with `normalized`, its default)."""
    index = {token: i for i, token in enumerate(vocabulary)}
    kept, normalized, next_id = [], [], len(vocabulary)
    for entry in sorted(entries, key=lambda e: e["id"]):
        token = entry["content"]
        if entry.get("single_word"):
            raise CheckpointError(f"{path}: added token {token!r} is single_word, which biozoo does not "
                                  "reproduce (it keeps added tokens whole wherever they occur).")
        expected = index.get(token, next_id)
        if entry["id"] != expected:
            raise CheckpointError(f"{path}: added token {token!r} has id {entry['id']}, but biozoo would give "
                                  f"it id {expected}: the vocabulary has {len(vocabulary)} tokens and biozoo "
                                  "appends added tokens after them, in id order.")
        if token not in index:
            next_id += 1
        elif token in roles.values():
            continue
        kept.append(token)
        if not entry.get("special") and entry.get("normalized", True):
            normalized.append(token)
    return {"added_tokens": kept, "normalized_added_tokens": normalized}
