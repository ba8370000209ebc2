"""Extractive question answering (SQuAD v1.1 / v2.0, BioASQ factoid).

Two ways to read answers from the span logits: `QuestionAnswerer.answer` (the default, used
by `biozoo evaluate qa`) follows SQuAD's official BERT post-processing; `pipeline_answers`
gives what transformers' `pipeline("question-answering")` (4.x) answers.
"""

from __future__ import annotations

import dataclasses
import warnings

import keras
import keras_hub
import numpy as np

from biozoo.data.pipeline import model_input_batches
from biozoo.errors import DataWarning
from biozoo.models import family_for_backbone
from biozoo.optim import default_optimizer
from biozoo.tasks._qa_pipeline import answer_chars, decode_spans, pipeline_tokens, span_probabilities
from biozoo.tasks.base import GlobalBatchLossMixin, PresetTaskMixin
from biozoo.tasks.inference import batch_progress, compile_ahead, compiled_predict
from biozoo.tokenizers.base import Tokenizer, text_list


@dataclasses.dataclass
class QAFeatures:
    """Windows of `[CLS] question [SEP] context-part [SEP]`, and how to read answers back."""

    token_ids: list
    segment_ids: list
    spans: list  # per window: (start, end) characters in the context of each token, (-1, -1) if none
    max_context: list  # per window: bool per token, this window is the best one for that token
    example: np.ndarray  # window -> example index
    start_positions: np.ndarray
    end_positions: np.ndarray
    words: list = None  # pipeline windows: per window, the context word of each token, -1 if none
    p_mask: list = None  # pipeline windows: per window, True where a token cannot be in an answer
    answers_in_no_window: list = None  # `features` with answers: examples whose answer no window holds


def question_context_lists(questions, contexts):
    """`questions` and `contexts` as lists of strings (`text_list`), one context per question."""
    questions, contexts = text_list(questions, "questions"), text_list(contexts, "contexts")
    if len(questions) != len(contexts):
        raise ValueError(f"{len(questions)} questions and {len(contexts)} contexts: give one context per question")
    return questions, contexts


@keras.saving.register_keras_serializable(package="biozoo")
def span_loss(y_true, y_pred):
    """Mean of the start and end cross-entropies; y_true [batch, 2] positions, y_pred
    [batch, seq, 2] logits (BERT's run_squad loss)."""
    y_true = keras.ops.cast(y_true, "int32")
    start = keras.losses.sparse_categorical_crossentropy(y_true[:, 0], y_pred[:, :, 0], from_logits=True)
    end = keras.losses.sparse_categorical_crossentropy(y_true[:, 1], y_pred[:, :, 1], from_logits=True)
    return (start + end) / 2.0


@keras.saving.register_keras_serializable(package="biozoo")
class SpanLoss(keras.losses.Loss):
    """`span_loss` averaged over the real windows of a batch (weighted mean: filler rows that
    complete a short batch carry weight 0)."""

    def __init__(self, name="span_loss", reduction="mean_with_sample_weight", **kwargs):
        super().__init__(name=name, reduction=reduction, **kwargs)

    def call(self, y_true, y_pred):
        return span_loss(y_true, y_pred)


@keras.saving.register_keras_serializable(package="biozoo")
class QuestionAnswererPreprocessor(keras_hub.models.Preprocessor):
    """SQuAD features: question truncated to `max_query_length` pieces, the context cut
    into windows of `sequence_length` whose starts are `doc_stride` tokens apart (BERT's
    run_squad: 384 / 128 / 64). `doc_stride=None` (the default) takes min(128, budget // 2) for
    each question, budget being the context tokens its window holds (`sequence_length` - question
    - 3): BERT's 128 at 384, and windows that overlap at any `sequence_length`. A `doc_stride`
    at or above the budget of a context that needs several windows, or above
    `sequence_length` - 2 for any context, is refused for training (ValueError), as transformers'
    tokenizer refuses such a `stride` (windows that only touch lose every answer across their
    border); at inference it warns and the default step is taken. Every context token keeps its
    character span (the HF tokenizer's
    `offset_mapping`, `Tokenizer.token_spans`), so answers map back to the original text exactly,
    also inside a word.

    Example (two windows; the answer is in the first, the second points at [CLS]):
        >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "what", "?", "aspirin", "inhibits", "cox", "."]
        >>> pre = QuestionAnswererPreprocessor(WordPieceTokenizer(vocabulary=vocab, lowercase=True),
        ...                                    sequence_length=10, doc_stride=2)
        >>> features = pre.features(["What inhibits COX?"], ["Aspirin inhibits COX."], [(0, "Aspirin")])
        >>> [ids.tolist() for ids in features.token_ids]
        [[2, 5, 8, 9, 6, 3, 7, 8, 9, 3], [2, 5, 8, 9, 6, 3, 9, 10, 3]]
        >>> features.spans[0][6:9], features.start_positions.tolist(), features.end_positions.tolist()
        ([(0, 7), (8, 16), (17, 20)], [6, 0], [6, 0])
    """

    tokenizer_cls = Tokenizer

    def __init__(self, tokenizer, sequence_length=384, doc_stride=None, max_query_length=64, **kwargs):
        super().__init__(**kwargs)
        self.tokenizer = tokenizer
        self.sequence_length = sequence_length
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length

    def call(self, x, y=None, sample_weight=None):
        if isinstance(x, dict) and "token_ids" in x:
            return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)
        raise ValueError("QuestionAnswerer takes features from `preprocessor.features(...)`; "
                         "use `task.answer(questions, contexts)` for raw text.")

    def _context_pieces(self, contexts):
        """Per context: piece ids and their (start, end) character spans, those of the HF tokenizer
        on the whole context (`Tokenizer.token_spans`, its `offset_mapping`): a piece spans the
        characters it came from, also in a word with an unknown or length-changing character
        ("Alzheimer's" with ALBERT, a ligature, a soft hyphen), and a special token written in
        the context ("[SEP]") is that token, as in HF."""
        return [([i for i, _, _ in tokens], [(start, end) for _, start, end in tokens])
                for tokens in self.tokenizer.token_spans(contexts)]

    def features(self, questions, contexts, answers=None):
        """`answers`: per example None (no answer / inference) or (char_start, text)."""
        questions, contexts = question_context_lists(questions, contexts)
        if answers is not None and len(answers) != len(questions):
            raise ValueError(f"{len(questions)} questions and {len(answers)} answers: give one (or None) per question")
        tok = self.tokenizer
        # a question never leaves less than one context token per window
        keep = min(self.max_query_length, self.sequence_length - 4)
        question_ids = [q[:keep] for q in tok.ids(questions)]
        context_pieces = self._context_pieces(contexts)
        cache = {}
        f = QAFeatures([], [], [], [], [], [], [], answers_in_no_window=[])
        for e, (q, (ids, spans)) in enumerate(zip(question_ids, context_pieces)):
            budget = self.sequence_length - len(q) - 3
            stride = self._stride(budget, len(ids), e, len(q), training=answers is not None)
            windows, start = [], 0
            while True:
                length = min(len(ids) - start, budget)
                windows.append((start, length))
                if start + length >= len(ids):
                    break
                start += min(length, stride)
            answer_tokens = None
            if answers is not None and answers[e] is not None:
                a_start, a_text = answers[e]
                a_end = a_start + len(a_text)
                inside = [i for i, (s, t) in enumerate(spans) if t > a_start and s < a_end]
                if inside:
                    answer_tokens = (inside[0], inside[-1])
                if answer_tokens is None or not any(start <= answer_tokens[0] and answer_tokens[1] < start + length
                                                    for start, length in windows):
                    f.answers_in_no_window.append(e)  # no window holds it: every window says [CLS]
            for w, (start, length) in enumerate(windows):
                offset = len(q) + 2
                token_ids = [tok.cls_token_id] + q + [tok.sep_token_id] + ids[start:start + length] + [tok.sep_token_id]
                segments = [0] * (len(q) + 2) + [1] * (length + 1)
                token_spans = [(-1, -1)] * offset + spans[start:start + length] + [(-1, -1)]
                best = [False] * len(token_ids)
                for i in range(length):
                    best[offset + i] = _is_max_context(windows, w, start + i, cache, e)
                s_pos = e_pos = 0
                if answer_tokens and start <= answer_tokens[0] and answer_tokens[1] < start + length:
                    s_pos, e_pos = answer_tokens[0] - start + offset, answer_tokens[1] - start + offset
                f.token_ids.append(np.asarray(token_ids, np.int32))
                f.segment_ids.append(np.asarray(segments, np.int32))
                f.spans.append(token_spans)
                f.max_context.append(best)
                f.example.append(e)
                f.start_positions.append(s_pos)
                f.end_positions.append(e_pos)
        f.example = np.asarray(f.example, int)
        f.start_positions = np.asarray(f.start_positions, np.int32)
        f.end_positions = np.asarray(f.end_positions, np.int32)
        return f

    def _stride(self, budget, context_length, example, question_length, training):
        """The step between window starts of one context: `doc_stride`, or min(128, budget // 2)
        when it is None. A `doc_stride` the windows cannot overlap with is refused for training;
        at inference (a model saved with one: before None was the default, 128 at any length)
        it warns and the default step is taken, so no context is read without overlap."""
        default = max(1, min(128, budget // 2))
        if self.doc_stride is None:
            return default
        if isinstance(self.doc_stride, bool) or not isinstance(self.doc_stride, int) or self.doc_stride < 1:
            raise ValueError(f"doc_stride={self.doc_stride!r}: give a positive whole number, or None for "
                             "min(128, budget // 2)")
        problem = None
        if self.doc_stride > self.sequence_length - 2:  # as transformers' tokenizer, whatever the context
            problem = (f"doc_stride={self.doc_stride} exceeds sequence_length {self.sequence_length} - 2: no "
                       "window could overlap the next")
        elif context_length > budget and self.doc_stride >= budget:
            problem = (f"doc_stride={self.doc_stride} must be less than the {budget} context tokens a window of "
                       f"question {example} holds (sequence_length {self.sequence_length} - {question_length} "
                       "question tokens - 3): windows that do not overlap lose the answers across their borders")
        if problem is None:
            return self.doc_stride
        if training:
            raise ValueError(f"{problem}; give a smaller doc_stride, None (min(128, budget // 2)), or a longer "
                             "sequence_length")
        warnings.warn(f"{problem}; windows of question {example} step {default} tokens instead (min(128, budget // 2); "
                      "set `preprocessor.doc_stride = None` to take it without this warning)", DataWarning, stacklevel=3)
        return default

    def pipeline_features(self, questions, contexts, max_seq_len=384, doc_stride=128):
        """Windows as transformers' question-answering pipeline (4.x, fast tokenizer) makes them.

        Unlike `features`: the question is kept whole (no `max_query_length`); windows hold
        `max_seq_len - len(question) - 3` context tokens and *overlap* by `doc_stride` tokens
        (the tokenizer's `stride`; in `features`, SQuAD's `doc_stride` is the step between
        window starts); offsets and word ids are the fast tokenizer's (`pipeline_tokens`).
        """
        questions, contexts = question_context_lists(questions, contexts)
        tok = self.tokenizer
        # as contexts: for ALBERT, 4.x's Metaspace keeps a trailing "▁" that biozoo's ids drop
        question_ids = [ids for ids, _, _ in pipeline_tokens(tok, questions)]
        tokens = pipeline_tokens(tok, contexts)
        f = QAFeatures([], [], [], [], [], [], [], words=[], p_mask=[])
        cache = {}
        for e, (q, (ids, spans, words)) in enumerate(zip(question_ids, tokens)):
            budget = max_seq_len - len(q) - 3
            windows = [(0, len(ids))]
            if len(ids) > budget:  # the tokenizer's overflowing windows, and its refusals
                if budget <= 0:
                    raise ValueError(f"question {e} has {len(q)} tokens: no room for the context in "
                                     f"max_seq_len={max_seq_len}")
                if doc_stride >= budget:
                    raise ValueError(f"doc_stride={doc_stride} must be less than the {budget} context tokens "
                                     f"a window of question {e} holds (max_seq_len - question - 3)")
                windows = []
                for start in range(0, len(ids), budget - doc_stride):
                    windows.append((start, min(budget, len(ids) - start)))
                    if start + budget >= len(ids):
                        break
            offset = len(q) + 2
            for w, (start, length) in enumerate(windows):
                token_ids = [tok.cls_token_id] + q + [tok.sep_token_id] + ids[start:start + length] + [tok.sep_token_id]
                # the pipeline masks all but the context, and keeps every [CLS] (the null answer)
                p_mask = [True] * offset + [False] * length + [True]
                p_mask = [m and i != tok.cls_token_id for m, i in zip(p_mask, token_ids)]
                f.token_ids.append(np.asarray(token_ids, np.int32))
                f.segment_ids.append(np.asarray([0] * offset + [1] * (length + 1), np.int32))
                f.spans.append([(-1, -1)] * offset + spans[start:start + length] + [(-1, -1)])
                f.words.append([-1] * offset + words[start:start + length] + [-1])
                f.p_mask.append(p_mask)
                f.max_context.append([False] * offset + [_is_max_context(windows, w, start + i, cache, e)
                                                         for i in range(length)] + [False])
                f.example.append(e)
                f.start_positions.append(0)
                f.end_positions.append(0)
        f.example = np.asarray(f.example, int)
        f.start_positions = np.asarray(f.start_positions, np.int32)
        f.end_positions = np.asarray(f.end_positions, np.int32)
        return f

    def get_config(self):
        config = super().get_config()
        config.update({"sequence_length": self.sequence_length, "doc_stride": self.doc_stride,
                       "max_query_length": self.max_query_length})
        return config


def _is_max_context(windows, w, position, cache, example):
    """BERT's _check_is_max_context: the window where `position` has the most context."""
    key = (example, position)
    if key not in cache:
        best, best_score = None, None
        for i, (start, length) in enumerate(windows):
            if start <= position < start + length:
                score = min(position - start, start + length - 1 - position) + 0.01 * length
                if best_score is None or score > best_score:
                    best, best_score = i, score
        cache[key] = best
    return cache[key] == w


@keras.saving.register_keras_serializable(package="biozoo")
class QuestionAnswerer(GlobalBatchLossMixin, PresetTaskMixin, keras_hub.models.Task):
    """Extractive QA on any biozoo backbone: start/end logits over the tokens.

    Answers come with n-best lists and a null score from `[CLS]` (SQuAD v2.0: predict no
    answer when `null - best > null_threshold`). A SQuAD2 checkpoint's converted QA head
    (biom_electra_large_squad2, biom_albert_xxlarge_squad2) is used as is. `pipeline_answers`
    answers as transformers' `pipeline("question-answering")` does instead.

    Example:
        >>> qa = biozoo.QuestionAnswerer.from_preset("biom_electra_large_squad2")
        >>> qa.answer(["Which gene is mutated?"], ["BRCA1 is mutated in breast cancer."])
    """

    backbone_cls = None
    preprocessor_cls = QuestionAnswererPreprocessor
    hf_class_suffix = "ForQuestionAnswering"
    reads_pooled_output = False

    def __init__(self, backbone, preprocessor=None, dropout=None, null_threshold=0.0, **kwargs):
        if dropout is None:  # a model saved with a dropout keeps it
            dropout = family_for_backbone(backbone).qa_dropout
        inputs = backbone.input
        hidden = backbone(inputs)["sequence_output"]
        self.output_dropout = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy, name="output_dropout")
        self.span_dense = keras.layers.Dense(
            2, kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype=backbone.dtype_policy, name="span_logits",
        )
        logits = self.span_dense(self.output_dropout(hidden))
        logits = keras.layers.Activation("linear", dtype="float32", name="float32_logits")(logits)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        if preprocessor is not None:  # windows no longer than the positions (384 by default)
            preprocessor.sequence_length = min(preprocessor.sequence_length, backbone.max_sequence_length)
        self.dropout = dropout
        self.null_threshold = null_threshold

    def _init_from_heads(self, heads, config):
        if "qa/dense/kernel" in heads:
            self.span_dense.set_weights([heads["qa/dense/kernel"], heads["qa/dense/bias"]])

    def get_config(self):
        config = super().get_config()
        config.update({"dropout": self.dropout, "null_threshold": self.null_threshold})
        return config

    def compile(self, optimizer="auto", loss="auto", metrics=None, **kwargs):
        if loss == "auto":  # mean over real windows: filler rows of a short batch have weight 0
            loss = SpanLoss()
        super().compile(optimizer=default_optimizer(optimizer), loss=loss, metrics=metrics, **kwargs)

    def span_logits(self, features, batch_size=32, max_length=None):
        """Start/end logits per window, `[(start [seq], end [seq]), ...]`; windows are cut to
        `max_length` tokens (default: the preprocessor's `sequence_length`)."""
        batches = model_input_batches(
            features.token_ids, self.preprocessor.tokenizer.pad_token_id, features.segment_ids,
            batch_size=batch_size, max_length=max_length or self.preprocessor.sequence_length,
        )
        out = [None] * len(features.token_ids)
        predict = compiled_predict(self)
        compile_ahead(predict, batches.planned_shapes(), batches.x_keys)
        for indices in batch_progress(batches.plan, len(batches.plan)):
            logits = np.asarray(predict(batches.batch(indices)))
            for row, window in enumerate(indices):
                n = len(features.token_ids[window])
                out[window] = (logits[row, :n, 0], logits[row, :n, 1])
        return out

    def answer(self, questions, contexts, n_best=20, max_answer_length=30, batch_size=32):
        """Per question: {"text", "score", "null_score_diff", "nbest": [{"text", "probability",
        "start", "end"}]}; "text" is "" when the null answer wins (SQuAD v2.0)."""
        questions, contexts = question_context_lists(questions, contexts)
        features = self.preprocessor.features(questions, contexts)
        logits = self.span_logits(features, batch_size) if features.token_ids else []
        results = []
        for e, context in enumerate(contexts):
            windows = np.flatnonzero(features.example == e)
            null_score, candidates = None, {}
            for w in windows:
                start_logits, end_logits = logits[w]
                spans, best = features.spans[w], features.max_context[w]
                score_null = float(start_logits[0] + end_logits[0])
                null_score = score_null if null_score is None else min(null_score, score_null)
                starts = np.argsort(-start_logits)[:n_best]
                ends = np.argsort(-end_logits)[:n_best]
                for s in starts:
                    if spans[s][0] < 0 or not best[s]:
                        continue
                    for t in ends:
                        if spans[t][0] < 0 or t < s or t - s + 1 > max_answer_length:
                            continue
                        char_start, char_end = spans[s][0], spans[t][1]
                        text = context[char_start:char_end]
                        score = float(start_logits[s] + end_logits[t])
                        if text and (text not in candidates or candidates[text][0] < score):
                            candidates[text] = (score, char_start, char_end)
            ranked = sorted(candidates.items(), key=lambda kv: -kv[1][0])[:n_best]
            scores = np.array([v[0] for _, v in ranked] + ([null_score] if null_score is not None else []))
            probs = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum() if len(scores) else scores
            nbest = [{"text": t, "probability": float(p), "start": v[1], "end": v[2], "score": v[0]}
                     for (t, v), p in zip(ranked, probs)]
            best_text, best_score = (ranked[0][0], ranked[0][1][0]) if ranked else ("", None)
            diff = (null_score - best_score) if (null_score is not None and best_score is not None) else float("inf")
            results.append({
                "text": "" if diff > self.null_threshold else best_text,
                "best_non_null": best_text,
                "score": best_score,
                "null_score_diff": diff,
                "nbest": nbest,
            })
        return results

    def pipeline_answers(self, questions, contexts, top_k=1, doc_stride=None, max_answer_len=15, max_seq_len=None,
                         handle_impossible_answer=False, align_to_words=True, batch_size=32):
        """What transformers' `pipeline("question-answering")` (4.x, fast tokenizer) answers,
        with its arguments and defaults: per question {"score", "start", "end", "answer"}
        (`context[start:end] == answer`), a list of up to `top_k` of them when `top_k > 1`.

        The pipeline's rule, not SQuAD's (`answer`): windows as `pipeline_features`; in each
        window a softmax over [CLS] and the context tokens, span score p(start) * p(end) (not
        a sum of logits), the window's best spans of at most `max_answer_len` tokens (no
        max-context rule: every window's spans compete); with `align_to_words`, spans grow to whole words;
        answers of equal lower-cased text add their scores; with `handle_impossible_answer`,
        the null answer "" scores the least p_start([CLS]) * p_end([CLS]) over the windows.
        `max_seq_len` defaults to min(384, the backbone's max_sequence_length) (the pipeline
        reads the tokenizer's `model_max_length`), `doc_stride` to min(max_seq_len // 2, 128).
        """
        questions, contexts = question_context_lists(questions, contexts)
        for what, texts in (("questions", questions), ("contexts", contexts)):
            empty = next((i for i, text in enumerate(texts) if text == ""), None)
            if empty is not None:  # as the pipeline: "`question` cannot be empty"
                raise ValueError(f"{what}[{empty}] is empty: the question-answering pipeline answers no empty "
                                 f"{what[:-1]}")
        if max_seq_len is None:
            max_seq_len = min(384, self.backbone.max_sequence_length)
        if doc_stride is None:
            doc_stride = min(max_seq_len // 2, 128)
        if doc_stride > max_seq_len:
            raise ValueError(f"`doc_stride` ({doc_stride}) is larger than `max_seq_len` ({max_seq_len})")
        if top_k < 1 or max_answer_len < 1:
            raise ValueError(f"top_k ({top_k}) and max_answer_len ({max_answer_len}) must be >= 1")
        features = self.preprocessor.pipeline_features(questions, contexts, max_seq_len, doc_stride)
        logits = self.span_logits(features, batch_size, max_length=max_seq_len) if features.token_ids else []
        # spans dropped by word alignment (equal texts) leave room for others
        candidates = top_k * 2 + 10 if align_to_words else top_k
        results = []
        for e, context in enumerate(contexts):
            null_score, answers = 1000000.0, []
            for w in np.flatnonzero(features.example == e):
                start, end = span_probabilities(*logits[w], features.p_mask[w])
                if handle_impossible_answer:
                    null_score = min(null_score, float(start[0, 0] * end[0, 0]))
                start[0, 0] = end[0, 0] = 0.0
                allowed = np.flatnonzero(~np.asarray(features.p_mask[w], bool))
                for s, t, score in zip(*decode_spans(start, end, candidates, max_answer_len, allowed)):
                    char_start, char_end = answer_chars(features.spans[w], features.words[w], s, t, align_to_words)
                    text = context[char_start:char_end]
                    same = next((a for a in answers if a["answer"].lower() == text.lower()), None)
                    if same is not None:
                        same["score"] += float(score)
                    else:
                        answers.append({"score": float(score), "start": int(char_start), "end": int(char_end),
                                        "answer": text})
            if handle_impossible_answer:
                answers.append({"score": null_score, "start": 0, "end": 0, "answer": ""})
            answers = sorted(answers, key=lambda a: a["score"], reverse=True)[:top_k]
            results.append(answers if top_k > 1 else (answers[0] if answers else None))
        return results
