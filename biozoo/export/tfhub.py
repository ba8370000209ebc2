"""TF Hub-style SavedModels: `DIR/encoder` and `DIR/preprocessor`, in the conventions of Model
Garden's `export_tfhub_lib`, loadable with `tf.saved_model.load` where only tensorflow and
tensorflow_text are installed.

KerasHub's own export fails on the tensorflow-text resources its tokenizers hold (keras-hub
issues 1629, 2015: Keras layers do not track the SentencePiece resource or the lookup tables).
Here the tensorflow-text objects are attributes of a plain trackable object, so the SavedModel
tracks and restores them, and the Keras layers are traced away: the graphs hold only
TensorFlow and tensorflow-text ops.

Example (no biozoo needed to use the result):
    >>> preprocessor = tf.saved_model.load("out/preprocessor")
    >>> encoder = tf.saved_model.load("out/encoder")
    >>> outputs = encoder(preprocessor(tf.constant(["BRCA1 is a tumour suppressor."])))
"""

from __future__ import annotations

import json
import os
import tempfile

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from biozoo import api
from biozoo._io import atomic_directory, check_output
from biozoo.errors import BiozooError
from biozoo.export.hf import registry_card
from biozoo.tokenizers import SentencePieceTokenizer, WordPieceTokenizer, tf_text_engine
from biozoo.tokenizers.words import re2_class, special_tokens_pattern, word_break_spaces

# No-pooler families: what `pooled_output` holds instead of an (untrained) pooler.
CLS_STATE = "the final hidden state of the first token ([CLS]); this family has no pooler"
POOLER = "the pooler's tanh(dense([CLS] state)), as the checkpoint's pooler computes it"
MAX_SEGMENTS = 3


def _trackable():
    # A plain trackable with free attribute names: tf.Module reserves `variables` and
    # `trainable_variables`, which the TF Hub convention needs as saved attributes.
    return tf.__internal__.tracking.AutoTrackable()


def _metadata_function(info):
    text = json.dumps(info, indent=2, sort_keys=True)
    return tf.function(lambda: tf.constant(text), input_signature=[])


# --------------------------------------------------------------------------- preprocessor


class _Tokenization:
    """The tokenizer's in-graph ops, bound to the tensorflow-text resources of `root`."""

    def __init__(self, tokenizer, root):
        self.tokenizer = tokenizer
        tokenizer._maybe_initialized_tf()
        if isinstance(tokenizer, WordPieceTokenizer):
            self.kind = "wordpiece"
            root.wordpiece = tokenizer._fast_word_piece
        elif isinstance(tokenizer, SentencePieceTokenizer):
            self.kind = "sentencepiece"
            root.sentencepiece = tokenizer._sentence_piece
            root.special_token_table = tf_text_engine.special_token_table(tokenizer)
        else:
            raise BiozooError(f"no TF Hub preprocessor for tokenizer {type(tokenizer).__name__}.")
        if tokenizer.normalized_added_tokens:
            root.normalized_token_table = tf_text_engine.normalized_token_table(tokenizer)

    def ids(self, sentences):
        """`[batch]` strings -> int32 ragged `[batch, (tokens)]`, the ids `Tokenizer` gives."""
        return tf.cast(self.tokenizer.ragged_ids(sentences), tf.int32)

    def ids_by_word(self, sentences):
        """Words split off the raw text with character offsets, and their token ids:
        `(ids [batch, (words), (tokens)], starts, ends [batch, (words)])`."""
        if self.kind == "wordpiece":
            pattern = _bert_word_pattern(self.tokenizer.kept_whole(), self.tokenizer.tokenize_chinese_chars)
        else:
            pattern = _words_between_pattern(self.tokenizer.word_breaks)
        words, starts, ends = _split_with_offsets(sentences, *pattern)
        ids = self.ids(words.flat_values)
        return words.with_flat_values(ids), _char_offsets(sentences, starts), _char_offsets(sentences, ends)


def _bert_word_pattern(kept_whole, tokenize_chinese_chars):
    """`WordPieceTokenizer` words (as `split_words`, but the special and added tokens kept whole,
    as the tokenizer keeps them): `(delimiters, kept delimiters)` for `_split_with_offsets`."""
    single = tf_text_engine.KEEP + (f"|{tf_text_engine.CJK}" if tokenize_chinese_chars else "")
    if kept_whole:  # first: RE2 takes the first alternative that matches at a position
        single = f"{special_tokens_pattern(kept_whole)}|{single}"
    return f"{re2_class(word_break_spaces())}|{single}", single


def _words_between_pattern(breaks):
    """`SentencePieceTokenizer.split_words`: words between the `breaks` characters."""
    return re2_class(breaks), ""


def _split_with_offsets(sentences, delimiters, kept):
    """`tf_text.regex_split_with_offsets`, NUL included: the split stops at a NUL, so it runs on
    a copy with \\x01 there (one byte too, and no word break), and the words come from `sentences`."""
    _, starts, ends = tf_text.regex_split_with_offsets(
        tf.strings.regex_replace(sentences, "\\x00", "\x01"), delimiters, kept)
    rows = tf.gather(sentences, starts.value_rowids())
    words = tf.strings.substr(rows, starts.flat_values, ends.flat_values - starts.flat_values)
    return starts.with_flat_values(words), starts, ends


def _char_offsets(sentences, byte_offsets):
    """Byte offsets into each sentence -> character offsets."""
    rows = tf.gather(sentences, byte_offsets.value_rowids())
    prefix = tf.strings.substr(rows, tf.zeros_like(byte_offsets.flat_values), byte_offsets.flat_values)
    return byte_offsets.with_flat_values(tf.strings.length(prefix, unit="UTF8_CHAR"))


def _longest_first(first, second, budget):
    """A pair of ragged rows cut to `budget` tokens together as HF's fast tokenizers'
    `longest_first` cuts them (`biozoo.tasks.sequence_classifier.longest_first`, row by row):
    unlike round robin, an odd budget's last token goes to the longer text (a tie: the second)."""
    first_length, second_length = first.row_lengths(), second.row_lengths()
    budget = tf.cast(budget, first_length.dtype)
    shorter, longer = tf.minimum(first_length, second_length), tf.maximum(first_length, second_length)
    longer = tf.where(shorter > budget, shorter, tf.maximum(shorter, budget - shorter))
    halves = shorter + longer > budget
    shorter = tf.where(halves, budget // 2, shorter)
    longer = tf.where(halves, budget // 2 + budget % 2, longer)
    first_is_longer = first_length > second_length
    keep_first = tf.where(first_is_longer, longer, shorter)
    keep_second = tf.where(first_is_longer, shorter, longer)
    fits = first_length + second_length <= budget
    keep_first, keep_second = tf.where(fits, first_length, keep_first), tf.where(fits, second_length, keep_second)

    def cut(rows, keep):
        positions = tf.ragged.range(rows.row_lengths())
        return tf.ragged.boolean_mask(rows, positions < tf.expand_dims(keep, 1))

    return [cut(first, keep_first), cut(second, keep_second)]


def _pack(segments, seq_length, cls_id, sep_id, pad_id):
    """[CLS] a [SEP] b [SEP] ..., a pair trimmed as HF's longest-first (three or more segments,
    which HF's tokenizers do not take, round robin), padded."""
    flat = []
    for segment in segments:
        if isinstance(segment, tf.RaggedTensor) and segment.ragged_rank > 1:
            segment = segment.merge_dims(1, -1)
        flat.append(tf.cast(segment, tf.int32))
    budget = seq_length - (len(flat) + 1)
    if len(flat) == 2:
        trimmed = _longest_first(*flat, budget)
    else:
        trimmed = tf_text.RoundRobinTrimmer(max_seq_length=budget).trim(flat)
    ids, type_ids = tf_text.combine_segments(trimmed, start_of_sequence_id=cls_id, end_of_segment_id=sep_id)
    word_ids, mask = tf_text.pad_model_inputs(ids, max_seq_length=seq_length, pad_value=pad_id)
    type_ids, _ = tf_text.pad_model_inputs(type_ids, max_seq_length=seq_length, pad_value=0)
    return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}


def build_preprocessor(tokenizer, seq_length):
    """The preprocessor object: `__call__(strings)`, `tokenize`, `bert_pack_inputs`."""
    root = _trackable()
    tokenization = _Tokenization(tokenizer, root)
    special = {
        "cls_id": int(tokenizer.token_to_id(tokenizer.cls_token)),
        "sep_id": int(tokenizer.token_to_id(tokenizer.sep_token)),
        "pad_id": int(tokenizer.token_to_id(tokenizer.pad_token)),
    }
    string_spec = tf.TensorSpec([None], tf.string)

    @tf.function(input_signature=[string_spec])
    def tokenize(sentences):
        return tokenization.ids(sentences)

    @tf.function
    def bert_pack_inputs(segments, seq_length=seq_length):
        return _pack(segments, seq_length, **special)

    @tf.function(input_signature=[string_spec])
    def call(sentences):
        return _pack([tokenization.ids(sentences)], seq_length, **special)

    for num_segments in range(1, MAX_SEGMENTS + 1):
        for ragged_rank in (1, 2):
            spec = tf.RaggedTensorSpec([None] * (ragged_rank + 1), tf.int32, ragged_rank=ragged_rank)
            bert_pack_inputs.get_concrete_function([spec] * num_segments)
            bert_pack_inputs.get_concrete_function([spec] * num_segments, seq_length=tf.TensorSpec([], tf.int32))
    root.tokenize = tokenize
    root.bert_pack_inputs = bert_pack_inputs
    root.__call__ = call
    info = {
        "tokenizer": tokenization.kind,
        "seq_length": seq_length,
        "vocab_size": int(tokenizer.vocabulary_size()),
        "lowercase": bool(tokenizer.lowercase),
        "special_tokens": {
            "cls_token": tokenizer.cls_token,
            "sep_token": tokenizer.sep_token,
            "pad_token": tokenizer.pad_token,
            "mask_token": tokenizer.mask_token,
            "unk_token": tokenizer.unk_token,
        },
        "max_segments": MAX_SEGMENTS,
    }
    root.get_metadata = _metadata_function(info)
    return root, call


# --------------------------------------------------------------------------- encoder


def _backbone_features(backbone, inputs, training):
    features = backbone.features(
        {
            "token_ids": tf.cast(inputs["input_word_ids"], tf.int32),
            "segment_ids": tf.cast(inputs["input_type_ids"], tf.int32),
            "padding_mask": tf.cast(inputs["input_mask"], tf.int32),
        },
        training=training,
    )
    sequence = features["sequence_output"]
    pooled = features.get("pooled_output")
    if pooled is None:
        pooled = sequence[:, 0, :]
    layers = features["hidden_states"][-backbone.num_layers :]
    return {"sequence_output": sequence, "pooled_output": pooled, "default": pooled, "encoder_outputs": layers}


def _track_variables(root, model):
    # The underlying tf.Variables of Keras 3 variables: what the traced graphs capture.
    root.variables = [v.value for v in model.variables]
    root.trainable_variables = [v.value for v in model.trainable_variables]
    root.regularization_losses = []


def _input_spec(seq_length=None):
    spec = tf.TensorSpec([None, seq_length], tf.int32)
    return {"input_word_ids": spec, "input_mask": spec, "input_type_ids": spec}


def build_encoder(backbone, preset_info):
    root = _trackable()
    _track_variables(root, backbone)

    @tf.function
    def call(inputs, training=False):
        return _backbone_features(backbone, inputs, training)

    for training in (False, True):
        call.get_concrete_function(_input_spec(), training=training)
    root.__call__ = call
    pooled = "pooler" if getattr(backbone, "pooled_dense", None) is not None else "cls_hidden_state"
    info = dict(preset_info, pooled_output=pooled, pooled_output_description=POOLER if pooled == "pooler" else CLS_STATE)
    root.get_metadata = _metadata_function(info)

    @tf.function(input_signature=[_input_spec()])
    def serve(inputs):
        outputs = _backbone_features(backbone, inputs, False)
        return {"sequence_output": outputs["sequence_output"], "pooled_output": outputs["pooled_output"]}

    return root, serve, info


# --------------------------------------------------------------------------- writing


def save_module(root, directory, signatures=None, assets=None, overwrite=False, inputs=()):
    """tf.saved_model.save into a temporary sibling, then rename: no half-written export (an
    earlier biozoo output at `directory` is replaced only with `overwrite`)."""
    with atomic_directory(directory, overwrite, inputs) as tmp:
        if assets:
            with tempfile.TemporaryDirectory() as staging:
                root.assets = []
                for name, text in assets.items():
                    path = os.path.join(staging, name)
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(text)
                    root.assets.append(tf.saved_model.Asset(path))
                tf.saved_model.save(root, tmp, signatures=signatures)
        else:
            tf.saved_model.save(root, tmp, signatures=signatures)
    return directory


def _readme(info):
    lines = [
        f"# {info.get('name', 'biozoo export')}: TF Hub-style SavedModels",
        "",
        "    preprocessor = tf.saved_model.load('preprocessor')   # needs: import tensorflow_text",
        "    encoder = tf.saved_model.load('encoder')",
        "    outputs = encoder(preprocessor(tf.constant(['some text'])))",
        "",
        "`preprocessor.tokenize(strings)` gives ragged token ids; "
        "`preprocessor.bert_pack_inputs([ids_a, ids_b], seq_length=N)` packs 1 to "
        f"{MAX_SEGMENTS} segments.",
        "Encoder outputs: `sequence_output` [batch, seq, hidden], `pooled_output` [batch, hidden], "
        "`default` (= pooled_output), `encoder_outputs` (one tensor per layer).",
        "",
        f"`pooled_output` here is {info['pooled_output_description']}.",
        "",
        "Provenance: " + json.dumps(info, sort_keys=True),
        "",
    ]
    return "\n".join(lines)


def require_tensorflow_backend(command):
    """SavedModel, TF Hub, ONNX and LiteRT exports trace the model in a TensorFlow graph, which
    Keras builds only on its TensorFlow backend: another backend is refused before any work."""
    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise BiozooError(f"{command} traces the model in a TensorFlow graph, which Keras builds only on its "
                          f"tensorflow backend (this process runs {backend}): run it with KERAS_BACKEND=tensorflow "
                          "(`biozoo --backend tensorflow export ...`); presets are the same files on every backend")


def export_hub(preset, out_dir, seq_length=128, overwrite=False):
    """Write `out_dir/encoder` and `out_dir/preprocessor` for a backbone preset, and README.md
    (the registry's model card first when the preset is a registry checkpoint), in one rename
    (an earlier biozoo output there is replaced only with `overwrite`)."""
    require_tensorflow_backend("export tfhub")
    check_output(out_dir, overwrite, [preset])
    backbone = api.from_preset(preset)
    tokenizer = api.Tokenizer.from_preset(preset)
    _check_seq_length(backbone, seq_length)
    preset_info = {"source": str(preset), "family": type(backbone).__name__, "seq_length": seq_length}
    encoder, serve, info = build_encoder(backbone, preset_info)
    preprocessor, preprocess = build_preprocessor(tokenizer, seq_length)
    with atomic_directory(out_dir, overwrite, [preset]) as tmp:
        save_module(encoder, os.path.join(tmp, "encoder"), signatures={"serving_default": serve},
                    assets={"biozoo_export.json": json.dumps(info, indent=2)})
        save_module(preprocessor, os.path.join(tmp, "preprocessor"), signatures={"serving_default": preprocess})
        registry_card(preset, tmp, "tfhub", after=_readme(info))
    return out_dir


def _check_seq_length(backbone, seq_length):
    limit = getattr(backbone, "max_sequence_length", None)
    if limit and seq_length > limit:
        raise BiozooError(f"--seq-length {seq_length} exceeds the model's {limit} positions.")
