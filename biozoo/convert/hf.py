"""HuggingFace model directory -> biozoo Keras preset."""

from __future__ import annotations

import json
import os
import warnings

from biozoo._io import check_output, read_json
from biozoo.convert.core import convert_tensors
from biozoo.convert.readers import open_checkpoint
from biozoo.errors import CheckpointError
from biozoo.models import family_for_model_type
from biozoo.tokenizers import SentencePieceTokenizer, tokenizer_json

SENTENCEPIECE_FILES = ("spiece.model", "sentencepiece.bpe.model")


# the keys that fix a model's shape and arithmetic: a hub config.json and a registry entry
# that disagree on one of them describe different models
ARCHITECTURE_KEYS = ("model_type", "vocab_size", "hidden_size", "embedding_size", "num_hidden_layers",
                     "num_attention_heads", "intermediate_size", "max_position_embeddings", "type_vocab_size",
                     "hidden_act", "layer_norm_eps")


def read_hf_config(directory, registry_config=None, registry_name=None):
    """config.json of an HF directory. With the registry entry's config (the handle was a registry
    name), the registry is the truth: keys the hub file lacks (old BERT configs have no
    model_type) come from it, and an architecture key on which they disagree fails, naming both."""
    path = os.path.join(directory, "config.json")
    if not os.path.exists(path):
        raise CheckpointError(f"{directory}: no config.json; not a HuggingFace model directory.")
    config = read_json(path, "model config", allow_nan=False)
    if registry_config is not None:
        config = reconcile_config(config, registry_config, path, registry_name)
    if "model_type" not in config:
        raise CheckpointError(f"{path}: no 'model_type' key; cannot tell the model family.")
    vocab_size = config.get("vocab_size")
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 1:
        said = "no 'vocab_size' key" if "vocab_size" not in config else f"'vocab_size' is {vocab_size!r}"
        raise CheckpointError(f"{path}: {said}; the rows of the token embedding must be a positive whole number.")
    return config


def reconcile_config(hub_config, registry_config, source, registry_name=None):
    """The registry's config completed by the hub's config.json; raises CheckpointError when they
    disagree on an architecture key (e.g. hidden_size 768 in one, 1024 in the other).

        >>> reconcile_config({"hidden_size": 768}, {"model_type": "bert", "hidden_size": 768}, "config.json")
        {'model_type': 'bert', 'hidden_size': 768}
    """
    hub_type = hub_config.get("model_type")
    differ = [key for key in ARCHITECTURE_KEYS if key in hub_config and key in registry_config
              and hub_config[key] != registry_config[key]
              and not (key == "model_type" and str(hub_type).replace("_", "-") == registry_config[key])]
    if differ:
        pairs = ", ".join(f"{key} {hub_config[key]!r} in the file, {registry_config[key]!r} in the registry"
                          for key in differ)
        raise CheckpointError(f"{source}: config.json and the registry entry {registry_name or ''} disagree: "
                              f"{pairs}; they describe different models.")
    return {**registry_config, **hub_config, "model_type": hub_type or registry_config["model_type"]}


SPECIAL_TOKEN_KEYS = ("unk_token", "cls_token", "sep_token", "pad_token", "mask_token")


# tokenizer_config.json's tokenizer_class for a tokenizer that runs tokenizer.json as it is
GENERIC_TOKENIZERS = ("PreTrainedTokenizerFast", "TokenizersBackend")


def _tokenizer_settings(directory):
    """Casing and special tokens from tokenizer_config.json, when present."""
    settings = {}
    config_path = os.path.join(directory, "tokenizer_config.json")
    if os.path.exists(config_path):
        config = read_json(config_path, "tokenizer config", allow_nan=False)
        for key in ("do_lower_case", "strip_accents", "keep_accents", "tokenize_chinese_chars", "tokenizer_class"):
            if config.get(key) is not None:
                settings[key] = config[key]
        for key in SPECIAL_TOKEN_KEYS:
            value = config.get(key)
            if isinstance(value, dict):
                value = value.get("content")
            if isinstance(value, str):
                settings[key] = value
    return settings


def build_tokenizer(family, directory, vocab_size, casing=None):
    """The family's tokenizer from the tokenizer files in `directory`.

    tokenizer.json, what HF's fast tokenizer runs (and all that transformers 5 saves), gives
    the vocabulary when present; otherwise vocab.txt / spiece.model. WordPiece casing is what
    tokenizer_config.json says or, when it says nothing, `casing` ({"lowercase": bool,
    "strip_accents": ...}, from the registry), else lowercase: transformers' BERT-style
    tokenizers build their normalizer from do_lower_case (default True), strip_accents and
    tokenize_chinese_chars (default True) whatever tokenizer.json's says, and their own
    pre-tokenizer and WordPiece limit of 100 characters a word (a generic
    PreTrainedTokenizerFast keeps tokenizer.json's).
    Special tokens named in tokenizer_config.json apply either way.
    """
    settings = _tokenizer_settings(directory)
    specials = {key: settings[key] for key in SPECIAL_TOKEN_KEYS if key in settings}
    sentencepiece = issubclass(family.tokenizer_cls, SentencePieceTokenizer)
    path = os.path.join(directory, "tokenizer.json")
    bert_tokenizer = not sentencepiece and settings.get("tokenizer_class") not in GENERIC_TOKENIZERS
    arguments = _tokenizer_json_arguments(path, specials, sentencepiece, bert_tokenizer) if os.path.exists(path) else None
    if arguments is not None and bert_tokenizer:
        casing = casing or {}
        arguments["lowercase"] = settings.get("do_lower_case", casing.get("lowercase", True))
        arguments["strip_accents"] = settings["strip_accents"] if "strip_accents" in settings \
            else casing.get("strip_accents")
        arguments["tokenize_chinese_chars"] = settings.get("tokenize_chinese_chars", True)
    if arguments is None and sentencepiece:
        path, arguments = _sentencepiece_file_arguments(directory, settings, casing or {})
        arguments.update(_declared_added_tokens(directory, _sentencepiece_pieces(path)))
    elif arguments is None:
        path, arguments = _vocab_txt_arguments(directory, settings, casing or {})
        with open(path, encoding="utf-8") as file:
            vocabulary = [line.rstrip("\n").rstrip("\r") for line in file]
        arguments.update(_declared_added_tokens(directory, vocabulary))
    try:
        tokenizer = family.tokenizer_cls(**{**arguments, **specials})
    except ValueError as error:
        raise CheckpointError(f"{path}: {error}") from None
    if tokenizer.vocabulary_size() > vocab_size:
        raise CheckpointError(
            f"{path}: the vocabulary has {tokenizer.vocabulary_size()} entries but the model's "
            f"embedding has {vocab_size} rows (config.json vocab_size); they must agree."
        )
    return tokenizer


def _tokenizer_json_arguments(path, specials, sentencepiece, bert_tokenizer):
    """Tokenizer arguments from tokenizer.json (with `bert_tokenizer`, what transformers'
    BertTokenizer reads there); None (with a warning) when it holds something biozoo cannot
    reproduce and a vocabulary file lies beside it."""
    try:
        if sentencepiece:
            return tokenizer_json.sentencepiece_arguments(path, specials)
        return tokenizer_json.wordpiece_arguments(path, specials, as_bert_tokenizer=bert_tokenizer)
    except CheckpointError as error:
        directory = os.path.dirname(path)
        if not any(os.path.exists(os.path.join(directory, f)) for f in ("vocab.txt", *SENTENCEPIECE_FILES)):
            raise
        warnings.warn(f"{error}; the vocabulary file beside it is used instead.", stacklevel=3)
        return None


def _declared_added_tokens(directory, vocabulary):
    """`added_tokens` / `normalized_added_tokens` arguments from what transformers saves beside a
    vocab.txt or spiece.model: tokenizer_config.json's added_tokens_decoder (each token's id and
    how it is matched) and added_tokens.json (ids only: matched in the normalized text, as
    transformers then reads them)."""
    entries = {}
    config_path = os.path.join(directory, "tokenizer_config.json")
    if os.path.exists(config_path):
        for key, entry in (read_json(config_path, "tokenizer config", allow_nan=False).get("added_tokens_decoder") or {}).items():
            entries[int(key)] = {**entry, "id": int(key)}
    added_path = os.path.join(directory, "added_tokens.json")
    if os.path.exists(added_path):
        added = read_json(added_path, "added tokens", allow_nan=False)
        if not isinstance(added, dict) or not all(isinstance(i, int) for i in added.values()):
            raise CheckpointError(f"{added_path}: expected {{token: id}}, got {json.dumps(added)[:200]}")
        for token, index in added.items():
            entries.setdefault(index, {"id": index, "content": token, "special": False, "normalized": True})
    if not entries:
        return {}
    return tokenizer_json.added_token_arguments(list(entries.values()), vocabulary, {}, added_path
                                                if os.path.exists(added_path) else config_path)


def _sentencepiece_pieces(path):
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    with open(path, "rb") as file:
        model.ParseFromString(file.read())
    return [piece.piece for piece in model.pieces]


def _sentencepiece_file_arguments(directory, settings, casing):
    """(spiece.model path, SentencePieceTokenizer arguments but special tokens)."""
    paths = [os.path.join(directory, f) for f in SENTENCEPIECE_FILES]
    path = next((p for p in paths if os.path.exists(p)), None)
    if path is None:
        raise CheckpointError(f"{directory}: no SentencePiece model (spiece.model) and no tokenizer.json.")
    lowercase = settings.get("do_lower_case", casing.get("lowercase", True))
    return path, {"proto": path, "lowercase": lowercase, "keep_accents": settings.get("keep_accents", False)}


def _vocab_txt_arguments(directory, settings, casing):
    """(vocab.txt path, WordPieceTokenizer arguments but special tokens)."""
    path = os.path.join(directory, "vocab.txt")
    if not os.path.exists(path):
        raise CheckpointError(f"{directory}: no vocab.txt and no tokenizer.json for the WordPiece tokenizer.")
    lowercase = settings.get("do_lower_case", casing.get("lowercase", True))
    strip = settings["strip_accents"] if "strip_accents" in settings else casing.get("strip_accents")
    return path, {"vocabulary": path, "lowercase": lowercase, "strip_accents": strip,
                  "tokenize_chinese_chars": settings.get("tokenize_chinese_chars", True)}


def convert_hf_directory(directory, out_dir, casing=None, provenance=None, progress=True, accept=None,
                         registry_config=None, overwrite=False, weights=None):
    """Convert an HF model directory (config.json, weights, vocabulary) into a Keras preset.

    Streams the weights tensor by tensor into a backbone built from config.json, keeps the
    heads the checkpoint carries, and writes the preset atomically. Returns `out_dir`.
    `accept(hf_config, source)` may refuse the checkpoint (raise) before anything is written.
    `registry_config`: the registry entry's config when the handle named one (see read_hf_config).
    An earlier biozoo output at `out_dir` is replaced only with `overwrite`. `weights`: the one
    weights file to read (a registry entry's verified file, or its shard index); default: the
    first of model.safetensors, pytorch_model.bin and their shard indexes present.
    """
    directory = os.fspath(directory)
    check_output(out_dir, overwrite, [directory])
    config = read_hf_config(directory, registry_config, (provenance or {}).get("registry_name"))
    if accept is not None:
        accept(config, directory)
    family = family_for_model_type(config["model_type"], os.path.join(directory, "config.json"))
    reader = open_checkpoint(directory, weights)
    tokenizer = build_tokenizer(family, directory, config["vocab_size"], casing)
    record = {
        "format": "hf",
        "source": os.path.abspath(directory),
        "weights": [os.path.basename(p) for p in reader.paths],
        "label": (provenance or {}).get("registry_name") or (provenance or {}).get("hf_repo")
        or os.path.basename(directory.rstrip("/")),
    }
    record.update(provenance or {})
    table = family.hf_table.for_config(config)
    return convert_tensors(family, config, table, reader.names(), reader.tensors(), tokenizer, out_dir,
                           ", ".join(reader.paths), record, progress, overwrite=overwrite,
                           config_source=os.path.join(directory, "config.json"))
