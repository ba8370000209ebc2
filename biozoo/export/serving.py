"""Fine-tuned task models as SavedModels that serve raw strings (TF Serving, `tf.saved_model.load`
without biozoo or Keras). Tokenization, windowing and decoding are in the graph:

- NER (`TokenClassifier`): `serving_default(text)` -> per text, entities with character offsets
  (`entity_start`, `entity_end`, `entity_type`, `entity_text`, `entity_score`, padded; and
  `num_entities`). Long texts are cut into consecutive windows, so every word is predicted;
  unlike `annotate`, windows do not overlap, so a word at a window edge sees one-sided context.
- RE / documents (`SequenceClassifier`): `serving_default(text)` and `classify_pairs(text,
  text_b)` -> `label`, `score`, `probabilities`, `predicted` (multi-label: per-label thresholds).
- QA (`QuestionAnswerer`): `serving_default(question, context)` -> `answer`, `start`, `end`
  (character offsets), `score`, `null_score_diff`; the answer is "" when the null score wins by
  more than the model's threshold. Spans are widened to whole words; the context is cut into
  consecutive windows.
"""

from __future__ import annotations

import json
import os

import tensorflow as tf

from biozoo._io import check_output
from biozoo.errors import BiozooError
from biozoo.export import tfhub as H
from biozoo.task_kinds import TASK_KINDS, task_kind
from biozoo.tasks import load_task

NEG = -1e9


def _model_inputs(token_ids, segment_ids, mask):
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": mask}


def _consecutive_windows(ids, width):
    """Ragged `[batch, (tokens)]` -> (`[windows, (<= width)]`, row of each window, window of
    each token, position of each token in its window). `width` is a scalar or one per row."""
    lengths = ids.row_lengths()
    width = tf.broadcast_to(tf.cast(width, tf.int64), tf.shape(lengths))
    per_row = (lengths + width - 1) // width
    first_window = tf.cumsum(per_row, exclusive=True)
    rows = ids.value_rowids()
    position = tf.range(tf.size(ids.flat_values, out_type=tf.int64)) - tf.gather(ids.row_starts(), rows)
    token_width = tf.gather(width, rows)
    window_of_token = tf.gather(first_window, rows) + position // token_width
    windows = tf.RaggedTensor.from_value_rowids(ids.flat_values, window_of_token, nrows=tf.reduce_sum(per_row))
    window_row = tf.repeat(tf.range(tf.size(per_row, out_type=tf.int64)), per_row)
    return windows, window_row, window_of_token, position % token_width


# --------------------------------------------------------------------------- NER


def _entities(sentences, tags, probs, starts, ends):
    """Entities by conlleval's rules (seqeval default) from word tags: dense padded outputs."""
    batch = tf.shape(sentences, out_type=tf.int64)[0]
    row = starts.value_rowids()
    tag = tags
    prefix = tf.strings.substr(tag, 0, 1)
    # seqeval's type: what follows the prefix and its "-"; "_" for a bare "B" / "I"
    etype = tf.strings.regex_replace(tf.strings.substr(tag, 1, -1), "^[^-]*-", "")
    etype = tf.where(tf.equal(etype, ""), "_", etype)
    outside = tf.equal(tag, "O")
    prev_same_row = tf.concat([[False], tf.equal(row[1:], row[:-1])], 0)
    prev_outside = tf.concat([[True], outside[:-1]], 0)
    prev_type = tf.concat([[""], etype[:-1]], 0)
    is_start = ~outside & (
        tf.equal(prefix, "B") | tf.equal(prefix, "S") | ~prev_same_row | prev_outside | tf.not_equal(prev_type, etype)
    )
    chunk = tf.cumsum(tf.cast(is_start, tf.int64)) - 1
    inside = ~outside
    count = tf.reduce_sum(tf.cast(is_start, tf.int64))
    chunk_in = tf.boolean_mask(chunk, inside)
    start = tf.math.unsorted_segment_min(tf.boolean_mask(starts.flat_values, inside), chunk_in, count)
    end = tf.math.unsorted_segment_max(tf.boolean_mask(ends.flat_values, inside), chunk_in, count)
    score = tf.math.unsorted_segment_mean(tf.boolean_mask(probs, inside), chunk_in, count)
    chunk_type = tf.boolean_mask(etype, is_start)
    chunk_row = tf.boolean_mask(row, is_start)
    text = tf.strings.substr(tf.gather(sentences, chunk_row), start, end - start, unit="UTF8_CHAR")

    # Serving signatures return dense tensors: row r holds num_entities[r] entities, then
    # padding that cannot be an entity (offset -1, empty type and text, score 0).
    def dense(values, default):
        return tf.RaggedTensor.from_value_rowids(values, chunk_row, nrows=batch).to_tensor(default)

    return {
        "entity_start": dense(tf.cast(start, tf.int32), -1),
        "entity_end": dense(tf.cast(end, tf.int32), -1),
        "entity_type": dense(chunk_type, ""),
        "entity_text": dense(text, ""),
        "entity_score": dense(score, 0.0),
        "num_entities": tf.cast(tf.math.bincount(chunk_row, minlength=batch, maxlength=batch, dtype=tf.int64), tf.int32),
    }


def _ner_signature(task, tokenization, seq_length, special):
    labels = tf.constant(task.label_names)
    outside_id = task.label_names.index("O") if "O" in task.label_names else 0
    width = seq_length - 2

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve(text):
        ids, starts, ends = tokenization.ids_by_word(text)
        tokens = ids.merge_dims(1, 2)
        windows, _, window_of_token, position = _consecutive_windows(tokens, width)
        packed = H._pack([windows], seq_length, **special)
        logits = task(_model_inputs(packed["input_word_ids"], packed["input_type_ids"], packed["input_mask"]),
                      training=False)
        token_logits = tf.gather_nd(logits, tf.stack([window_of_token, position + 1], axis=1))
        word_pieces = ids.values  # [words, (tokens)], rows index the flat tokens
        has_token = word_pieces.row_lengths() > 0
        # a trailing zero row for words without tokens (their tag is "O")
        token_logits = tf.concat([token_logits, tf.zeros([1, len(task.label_names)], token_logits.dtype)], 0)
        first = tf.where(has_token, word_pieces.row_starts(), tf.size(tokens.flat_values, out_type=tf.int64))
        word_probs = tf.nn.softmax(tf.gather(token_logits, first), axis=-1)
        best = tf.where(has_token, tf.argmax(word_probs, axis=-1, output_type=tf.int32), outside_id)
        best_prob = tf.where(has_token, tf.reduce_max(word_probs, axis=-1), 1.0)
        return _entities(text, tf.gather(labels, best), best_prob, starts, ends)

    return {"serving_default": serve}


# --------------------------------------------------------------------------- classification


def _classifier_signatures(task, tokenization, seq_length, special):
    labels = tf.constant(task.label_names)
    thresholds = tf.constant(task.thresholds, tf.float32)

    def classify(packed):
        logits = task(_model_inputs(packed["input_word_ids"], packed["input_type_ids"], packed["input_mask"]),
                      training=False)
        # as `SequenceClassifier.predict_probabilities`: the raw output of a regression, sigmoid
        # for multi-label and one-output models, else softmax
        if task.problem_type == "regression":
            probs = logits
        elif task.multi_label or len(task.label_names) == 1:
            probs = tf.sigmoid(logits)
        else:
            probs = tf.nn.softmax(logits, axis=-1)
        if task.multi_label:
            predicted = probs >= thresholds
        else:
            predicted = tf.one_hot(tf.argmax(probs, -1), len(task.label_names), on_value=True, off_value=False)
        best = tf.argmax(probs, axis=-1)
        return {"label": tf.gather(labels, best), "score": tf.reduce_max(probs, -1), "probabilities": probs,
                "predicted": predicted}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve(text):
        return classify(H._pack([tokenization.ids(text)], seq_length, **special))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text"),
                                  tf.TensorSpec([None], tf.string, name="text_b")])
    def serve_pairs(text, text_b):
        first = tokenization.ids(text)
        single = H._pack([first], seq_length, **special)
        paired = H._pack([first, tokenization.ids(text_b)], seq_length, **special)
        no_pair = tf.equal(text_b, "")[:, None]  # an empty text_b is no pair, as HF's tokenizers read it
        return classify({key: tf.where(no_pair, single[key], paired[key]) for key in single})

    return {"serving_default": serve, "classify_pairs": serve_pairs}


# --------------------------------------------------------------------------- QA


def _qa_signature(task, tokenization, seq_length, special, max_query_length, max_answer_length):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="question"),
                                  tf.TensorSpec([None], tf.string, name="context")])
    def serve(question, context):
        batch = tf.shape(context, out_type=tf.int64)[0]
        query = tokenization.ids(question)[:, :max_query_length]
        ids, starts, ends = tokenization.ids_by_word(context)
        tokens = ids.merge_dims(1, 2)
        width = seq_length - 3 - query.row_lengths()
        windows, window_row, _, _ = _consecutive_windows(tokens, width)
        window_query = tf.gather(query, window_row)
        packed = H._pack([window_query, windows], seq_length, **special)
        logits = task(_model_inputs(packed["input_word_ids"], packed["input_type_ids"], packed["input_mask"]),
                      training=False)
        # context logits per window: positions 2 + len(query) ...
        offset = 2 + window_query.row_lengths()
        columns = tf.ragged.range(offset, offset + windows.row_lengths())
        index = tf.stack([tf.cast(columns.value_rowids(), tf.int64), columns.flat_values], axis=1)
        start_logits = columns.with_flat_values(tf.gather_nd(logits[:, :, 0], index)).to_tensor(NEG)
        end_logits = columns.with_flat_values(tf.gather_nd(logits[:, :, 1], index)).to_tensor(NEG)
        n = tf.shape(start_logits)[1]
        span = tf.range(n)[None, :] - tf.range(n)[:, None]  # end - start
        allowed = (span >= 0) & (span < max_answer_length)
        pair = start_logits[:, :, None] + end_logits[:, None, :]
        pair = tf.where(allowed[None], pair, 2 * NEG)
        flat = tf.reshape(pair, [tf.shape(pair)[0], -1])
        window_best = tf.reduce_max(flat, axis=1)
        window_arg = tf.argmax(flat, axis=1, output_type=tf.int32)
        null = logits[:, 0, 0] + logits[:, 0, 1]
        windows_per_example = tf.math.bincount(window_row, minlength=batch, maxlength=batch, dtype=tf.int64)
        has_window = windows_per_example > 0
        columns_needed = tf.maximum(tf.reduce_max(tf.concat([windows_per_example, [1]], 0)), 1)

        def per_example(values, default):
            ragged = tf.RaggedTensor.from_value_rowids(values, window_row, nrows=batch)
            return ragged.to_tensor(default, shape=tf.stack([batch, columns_needed]))

        local = tf.argmax(per_example(window_best, 3 * NEG), axis=1)

        def pick(values, default):
            return tf.gather(per_example(values, default), local, axis=1, batch_dims=1)

        score = tf.where(has_window, pick(window_best, 0.0), 0.0)
        arg = tf.cast(pick(window_arg, 0), tf.int64)
        window_start = pick(windows.row_starts(), tf.constant(0, tf.int64))
        n64 = tf.maximum(tf.cast(n, tf.int64), 1)  # n is 0 when no context has a token (has_window masks them)
        num_tokens = tf.size(tokens.flat_values, out_type=tf.int64)
        start_token = tf.where(has_window, window_start + arg // n64, num_tokens)
        end_token = tf.where(has_window, window_start + arg % n64, num_tokens)
        null_score = tf.where(has_window, tf.reduce_min(tf.where(
            tf.sequence_mask(windows_per_example, columns_needed), per_example(null, 0.0), -NEG), axis=1), 0.0)
        # token -> word -> character offsets (a trailing pad entry for examples with no tokens)
        word_of_token = tf.concat([ids.values.value_rowids(), [0]], 0)
        word_starts = tf.concat([starts.flat_values, [0]], 0)
        word_ends = tf.concat([ends.flat_values, [0]], 0)
        char_start = tf.gather(word_starts, tf.gather(word_of_token, start_token))
        char_end = tf.gather(word_ends, tf.gather(word_of_token, end_token))
        diff = null_score - score
        answered = has_window & (diff <= task.null_threshold)
        text = tf.strings.substr(context, char_start, char_end - char_start, unit="UTF8_CHAR")
        return {
            "answer": tf.where(answered, text, ""),
            "best_non_null": tf.where(has_window, text, ""),
            "start": tf.where(has_window, tf.cast(char_start, tf.int32), -1),
            "end": tf.where(has_window, tf.cast(char_end, tf.int32), -1),
            "score": score,
            "null_score_diff": tf.where(has_window, diff, float("inf")),
        }

    return {"serving_default": serve}


# --------------------------------------------------------------------------- export


def _ner_module(task, tokenization, seq_length, special):
    return _ner_signature(task, tokenization, seq_length, special), {"labels": task.label_names}


def _classifier_module(task, tokenization, seq_length, special):
    return _classifier_signatures(task, tokenization, seq_length, special), {
        "labels": task.label_names, "multi_label": task.multi_label, "thresholds": list(map(float, task.thresholds))}


def _qa_module(task, tokenization, seq_length, special):
    max_query = int(task.preprocessor.max_query_length)
    if seq_length - max_query - 3 < 8:
        raise BiozooError(f"--seq-length {seq_length} leaves no room for the context after a {max_query}-token question.")
    return _qa_signature(task, tokenization, seq_length, special, max_query, 30), {
        "null_threshold": float(task.null_threshold), "max_query_length": max_query, "max_answer_length": 30}


# TaskKind.serving -> (signatures, the facts `get_metadata` reports beside them)
_SIGNATURES = {"ner": _ner_module, "classification": _classifier_module, "qa": _qa_module}
# TaskKind.serving -> the shortest seq_length that holds a token of each text its signatures pack:
# [CLS] x [SEP], or [CLS] a [SEP] b [SEP] (classify_pairs; a question and its context)
_MIN_SEQ_LENGTH = {"ner": 3, "classification": 5, "qa": 5}


def check_seq_length(serving, seq_length):
    """Refuse a `seq_length` too short for what the `serving` kind's signatures pack."""
    least = _MIN_SEQ_LENGTH[serving]
    if seq_length < least:
        texts = "one text, [CLS] x [SEP]" if least == 3 else "two texts, [CLS] a [SEP] b [SEP]"
        raise ValueError(f"--seq-length {seq_length} is too short for a {serving} model: its inputs hold {texts}, "
                         f"so at least {least}")


def _serving_kind(task):
    """The first task kind with a serving signature whose task class `task` is (None: there is none)."""
    for kind in TASK_KINDS.values():
        if kind.serving is not None and isinstance(task, kind.load_task_class()):
            return kind
    return None


def build_task_module(task, seq_length=None):
    """(trackable root, signatures, info) for a fine-tuned biozoo task."""
    tokenizer = task.preprocessor.tokenizer
    seq_length = task.preprocessor.sequence_length if seq_length is None else seq_length
    H._check_seq_length(task.backbone, seq_length)
    root = H._trackable()
    H._track_variables(root, task)
    tokenization = H._Tokenization(tokenizer, root)
    special = {"cls_id": int(tokenizer.cls_token_id), "sep_id": int(tokenizer.sep_token_id),
               "pad_id": int(tokenizer.pad_token_id)}
    info = {"seq_length": seq_length, "family": type(task.backbone).__name__}
    kind = _serving_kind(task)
    if kind is None:
        raise BiozooError(f"no serving export for {type(task).__name__}.")
    check_seq_length(kind.serving, seq_length)
    signatures, facts = _SIGNATURES[kind.serving](task, tokenization, seq_length, special)
    info.update(task=kind.serving, **facts)
    for name, function in signatures.items():
        setattr(root, name, function)
    root.get_metadata = H._metadata_function(info)
    return root, signatures, info


def export_task_hub(task, out_dir, seq_length=None, overwrite=False, inputs=()):
    """Write a serving SavedModel for `task` (a task object) to `out_dir` (an earlier biozoo
    output there is replaced only with `overwrite`; `inputs` are never written)."""
    H.require_tensorflow_backend("export tfhub")
    check_output(out_dir, overwrite, inputs)
    root, signatures, info = build_task_module(task, seq_length)
    H.save_module(root, out_dir, signatures=signatures, assets={"biozoo_export.json": json.dumps(info, indent=2)},
                  overwrite=overwrite, inputs=inputs)
    return info


def export_task_dir(model_dir, out_dir, seq_length=None, overwrite=False):
    """`biozoo export tfhub --model DIR`: a directory written by `biozoo finetune`."""
    H.require_tensorflow_backend("export tfhub")
    check_output(out_dir, overwrite, [model_dir])
    kind, _, task = load_task(model_dir)
    if task_kind(kind).serving is None:
        raise ValueError(f"{model_dir} is {task_kind(kind).article()} {kind} model, which has no raw-strings serving "
                         "signature (its text splitting runs outside the graph); export it as ONNX or LiteRT "
                         "(`biozoo export onnx --model ...`)")
    info = export_task_hub(task, out_dir, seq_length, overwrite, [model_dir])
    return dict(info, output=os.path.abspath(out_dir))
