"""Token classification (NER): word-level labels on the first sub-token of each word."""

from __future__ import annotations

import dataclasses

import keras
import keras_hub
import numpy as np

from biozoo.choices import CONFIDENCE_MEASURES, DEFAULT_AGGREGATION, DEFAULT_CONFIDENCE_MEASURE
from biozoo.data import IGNORE_LABEL
from biozoo.data.pipeline import MODEL_INPUTS, model_input_batches
from biozoo.errors import CheckpointError
from biozoo.optim import default_optimizer
from biozoo.tasks._aggregation import Piece, aggregate, is_subword
from biozoo.tasks._util import softmax
from biozoo.tasks.base import ClassifierHeadMixin, GlobalBatchLossMixin, PresetTaskMixin, head_dropout
from biozoo.tasks.inference import batch_progress, compile_ahead, compiled_predict, compiles_predictions
from biozoo.tokenizers.base import Tokenizer, text_list


@dataclasses.dataclass
class Windows:
    """Model inputs for sentences split into windows, and how to read predictions back.

    `owner[s][w]` is the window whose prediction word `w` of sentence `s` takes: the one
    where the word has the most context on both sides, as SQuAD does for answer spans.
    """

    token_ids: list
    labels: list
    word_positions: list  # per window: token position of each word's first piece (-1: not in window)
    sentence: np.ndarray  # window -> sentence index
    first_word: np.ndarray  # window -> index of its first word in the sentence
    owner: list


@keras.saving.register_keras_serializable(package="biozoo")
class TokenClassifierPreprocessor(keras_hub.models.Preprocessor):
    """Words -> `[CLS] pieces [SEP]` windows with first-sub-token labels.

    A sentence longer than `sequence_length` pieces is cut into overlapping windows
    (consecutive windows share at least `stride` pieces of context), so that every word is
    predicted and every gold entity is scored. A word that the tokenizer reduces to nothing
    (a lone control character) becomes `[UNK]`, so it still gets a label.

    Example (labels on each word's first piece; -100 elsewhere):
        >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "brca", "##1", "mutations"]
        >>> pre = TokenClassifierPreprocessor(WordPieceTokenizer(vocabulary=vocab, lowercase=True), sequence_length=8)
        >>> windows = pre.windows([["BRCA1", "mutations"]], [[1, 0]])
        >>> windows.token_ids[0].tolist(), windows.labels[0].tolist()
        ([2, 5, 6, 7, 3], [-100, 1, -100, 0, -100])
    """

    tokenizer_cls = Tokenizer

    def __init__(self, tokenizer, sequence_length=128, stride=None, **kwargs):
        super().__init__(**kwargs)
        self.tokenizer = tokenizer
        self.sequence_length = sequence_length
        self.stride = stride

    def word_pieces(self, sentences):
        """Piece ids of every word: `[[ids of word 0], [ids of word 1], ...]` per sentence."""
        flat = [w for words in sentences for w in words]
        pieces = self.tokenizer.ids(flat)
        unk = self.tokenizer.unk_token_id
        pieces = [ids or [unk] for ids in pieces]
        out, start = [], 0
        for words in sentences:
            out.append(pieces[start:start + len(words)])
            start += len(words)
        return out

    def windows(self, sentences, tags=None):
        """Model inputs for word lists (`tags`: label ids per word), every word in a window."""
        return self.piece_windows(self.word_pieces(sentences), tags)

    def piece_windows(self, word_pieces, tags=None):
        """`windows` for sentences already cut into pieces: per sentence, the piece ids of each word."""
        budget = self.sequence_length - 2
        stride = self.stride or max(1, budget // 2)
        cls_id, sep_id = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        token_ids, labels, positions, sentence_of, first_word, owner = [], [], [], [], [], []
        for s, pieces in enumerate(word_pieces):
            flat = [i for p in pieces for i in p]
            if len(flat) <= budget:  # every piece fits one window (most sentences): the loop's result
                window = len(token_ids)
                if len(flat) == len(pieces):  # a piece per word (as `token_windows` gives them)
                    offsets = np.arange(1, len(pieces) + 1, dtype=np.int32)
                else:
                    offsets = np.cumsum([1] + [len(p) for p in pieces[:-1]]).astype(np.int32)
                ids = np.empty(len(flat) + 2, np.int32)
                ids[0], ids[1:-1], ids[-1] = cls_id, flat, sep_id
                lab = np.full(len(ids), IGNORE_LABEL, np.int32)
                if tags is not None and pieces:
                    lab[offsets] = np.asarray(tags[s], np.int32)
                token_ids.append(ids)
                labels.append(lab)
                positions.append(offsets)
                sentence_of.append(s)
                first_word.append(0)
                owner.append([window] * len(pieces))
                continue
            lengths = [min(len(p), budget) for p in pieces]
            spans, start = [], 0
            while True:
                end, used = start, 0
                while end < len(pieces) and (used + lengths[end] <= budget or end == start):
                    used += lengths[end]
                    end += 1
                spans.append((start, end))
                if end >= len(pieces):
                    break
                # next window starts so that about `stride` pieces overlap (always advance)
                back, kept = end, 0
                while back > start + 1 and kept + lengths[back - 1] <= stride:
                    back -= 1
                    kept += lengths[back]
                start = back
            best = [(-1, -1)] * len(pieces)  # (context score, window)
            for start, end in spans:
                window = len(token_ids)
                ids, lab, pos = [cls_id], [IGNORE_LABEL], [-1] * len(pieces)
                offsets = np.cumsum([0] + lengths[start:end])
                total = offsets[-1]
                for k, w in enumerate(range(start, end)):
                    pos[w] = len(ids)
                    ids.extend(pieces[w][: lengths[w]])
                    lab.append(IGNORE_LABEL if tags is None else int(tags[s][w]))
                    lab.extend([IGNORE_LABEL] * (lengths[w] - 1))
                    # context = pieces on the word's shorter side in this window (SQuAD's
                    # max-context rule; the 0.01 x length term is a constant per word and only
                    # keeps scores positive). Strictly greater: on a tie the earlier window wins.
                    score = min(offsets[k], total - offsets[k + 1]) + 0.01 * lengths[w]
                    if score > best[w][0]:
                        best[w] = (score, window)
                ids.append(sep_id)
                lab.append(IGNORE_LABEL)
                token_ids.append(np.asarray(ids, np.int32))
                labels.append(np.asarray(lab, np.int32))
                positions.append(np.asarray(pos, np.int32))
                sentence_of.append(s)
                first_word.append(start)
            owner.append([w for _, w in best])
        return Windows(token_ids, labels, positions, np.asarray(sentence_of), np.asarray(first_word), owner)

    def call(self, x, y=None, sample_weight=None):
        """In-graph: ragged words `[batch, (words)]` -> model inputs for one window each
        (truncated to `sequence_length`; use `windows` to keep every word)."""
        if isinstance(x, dict) and "token_ids" in x:  # already model inputs (windows)
            return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)
        from biozoo.tasks.tf_graph import words_to_model_inputs

        return words_to_model_inputs(self, x, y, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.update({"sequence_length": self.sequence_length, "stride": self.stride})
        return config


@keras.saving.register_keras_serializable(package="biozoo")
class TokenClassifier(GlobalBatchLossMixin, ClassifierHeadMixin, PresetTaskMixin, keras_hub.models.Task):
    """Named-entity recognition on any biozoo backbone.

    Each word's label sits on its first sub-token; predictions are read back per word and to
    character offsets. Sentences longer than the model's window are split into overlapping
    windows, so nothing is dropped. A hub `*ForTokenClassification` checkpoint loads with its
    `id2label`, and `annotate` groups tokens into entities as transformers' pipeline does.

    Example:
        >>> ner = biozoo.TokenClassifier.from_preset(
        ...     "bioformer_8l", label_names=["O", "B-Disease", "I-Disease"])
        >>> ner.predict_tags([["BRCA1", "causes", "breast", "cancer"]])
        >>> ner.annotate(["BRCA1 mutations cause breast cancer."])
        >>> biozoo.TokenClassifier.from_preset("hf://org/some-biobert-ner").annotate(["..."], aggregation="max")
    """

    backbone_cls = None
    preprocessor_cls = TokenClassifierPreprocessor
    hf_class_suffix = "ForTokenClassification"
    reads_pooled_output = False
    padding_invariant_loss = True  # padded positions are labelled -100
    token_level_labels = True

    def __init__(self, backbone, label_names, preprocessor=None, dropout=None, **kwargs):
        dropout = head_dropout(backbone, dropout)
        inputs = backbone.input
        hidden = backbone(inputs)["sequence_output"]
        self.output_dropout = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy, name="output_dropout")
        self.output_dense = keras.layers.Dense(
            len(label_names),
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            dtype=backbone.dtype_policy,
            name="logits",
        )
        outputs = self.output_dense(self.output_dropout(hidden))
        # Logits stay float32 under mixed precision (the loss needs it).
        outputs = keras.layers.Activation("linear", dtype="float32", name="float32_logits")(outputs)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.label_names = list(label_names)
        self.dropout = dropout

    def get_config(self):
        config = super().get_config()
        config.update({"label_names": self.label_names, "dropout": self.dropout})
        return config

    def _init_from_heads(self, heads, config):
        heads = self._classifier_weights(heads, config)
        if heads is None:
            return
        if "classifier/hidden/kernel" in heads or "classifier/output/kernel" in heads:
            raise CheckpointError("the checkpoint's classifier is a sequence-classification head (a dense layer "
                                  "on the first token), not a token-classification head")
        self.output_dense.set_weights([heads["classifier/dense/kernel"], heads["classifier/dense/bias"]])
        # transformers' pipeline reads up to 512 tokens at once; longer sentences are windowed
        self.preprocessor.sequence_length = min(512, self.backbone.max_sequence_length)

    def compile(self, optimizer="auto", loss="auto", metrics=None, **kwargs):
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE_LABEL)
        super().compile(optimizer=default_optimizer(optimizer), loss=loss, metrics=metrics, **kwargs)

    # ---- inference --------------------------------------------------------------------

    def predict_word_probabilities(self, sentences, batch_size=64, windows=None):
        """Per sentence, an array [words, labels] of probabilities (every word predicted)."""
        windows = windows or self.preprocessor.windows(sentences)
        return self._unit_probabilities(windows, [len(words) for words in sentences], batch_size)

    def _unit_probabilities(self, windows, counts, batch_size):
        """Probabilities of each window's units (words, or single tokens), per sentence."""
        logits = self.window_logits(windows.token_ids, batch_size)
        return unit_probabilities(windows.owner, windows.word_positions, counts, logits, len(self.label_names))

    def window_logits(self, token_ids, batch_size=64):
        """The model's logits for each window (`token_ids`: per window its ids, as `Windows`
        holds them), `[tokens, labels]` arrays: the part of prediction that runs the model.
        Every batch is dispatched before the first is read, so an accelerator is not kept
        waiting on the host."""
        return self.dispatch_window_logits(token_ids, batch_size)()

    def dispatch_window_logits(self, token_ids, batch_size=64):
        """`window_logits` in two halves: the batches are dispatched now, and the function
        returned waits for them and gives the logits, so that the host can do other work (a
        pipeline's next chunk) while an accelerator runs these.

        Example:
            >>> collect = task.dispatch_window_logits(windows.token_ids, 256)
            >>> ...  # the host prepares the next chunk meanwhile
            >>> logits = collect()
        """
        batches = window_batches(self.preprocessor, token_ids, batch_size, exact_lengths=not compiles_predictions())
        return self.dispatch_window_batches(batches)

    def dispatch_window_batches(self, batches):
        """`dispatch_window_logits` from the batches `window_batches` made: dispatched now, and
        read back by the function returned, per window or, with `per_window=False`, per batch as
        `[(window indices, logits [windows, longest, labels])]` (filler rows and the padding past
        the batch's longest window cut off)."""
        if not batches:
            return lambda per_window=True: []
        predict = compiled_predict(self)
        compile_ahead(predict, {x["token_ids"].shape for _, x in batches}, MODEL_INPUTS)
        pending = [(indices, x["padding_mask"][:len(indices)].sum(axis=1), predict(x))
                   for indices, x in batch_progress(batches, len(batches))]

        def collect(per_window=True):
            read = [(indices, np.asarray(logits)[:len(indices), :int(lengths.max())])
                    for indices, lengths, logits in pending]
            if not per_window:
                return read
            window_lengths = [0] * sum(len(indices) for indices, _, _ in pending)
            for indices, lengths, _ in pending:
                for window, length in zip(indices, lengths.tolist()):
                    window_lengths[window] = length
            return logits_per_window(read, window_lengths)

        return collect

    def predict_tags(self, sentences, batch_size=64):
        """Word lists in, `(tags, scores)` per sentence out."""
        tags, scores = [], []
        for probs in self.predict_word_probabilities(sentences, batch_size):
            best = probs.argmax(-1) if len(probs) else np.zeros(0, int)
            tags.append([self.label_names[i] for i in best])
            scores.append([float(p[i]) for p, i in zip(probs, best)])
        return tags, scores

    def annotate(self, texts, batch_size=64, aggregation=DEFAULT_AGGREGATION, truncate=False):
        """Raw texts in, `{"text", "entities": [{"start", "end", "type", "text", "score"}]}` out,
        with character offsets into each text.

        Entities are the ones transformers' `pipeline("token-classification",
        aggregation_strategy=aggregation)` finds: "first" (default; a word takes its first
        token's label, as biozoo trains), "average", "max", "simple" (tokens grouped without
        words) or "none" (one entry per token, with its "index"). Texts longer than the model's
        window are read in overlapping windows; `truncate=True` drops what does not fit in the
        first window instead, as the pipeline does. `texts` is a list of strings (a bare string,
        bytes, None or a lone surrogate is refused with a message saying so).
        """
        texts = text_list(texts)
        return self.group(texts, self.token_probabilities(texts, batch_size, truncate), aggregation)

    def token_probabilities(self, texts, batch_size=64, truncate=False):
        """Per text, `(tokens, probabilities)`: its tokens `[(id, start, end), ...]` (character
        spans, no special tokens) and their label probabilities `[tokens, labels]`. Predict once,
        then `group` them several ways."""
        spans, windows = token_windows(self.preprocessor, texts, truncate)
        return list(zip(spans, self._unit_probabilities(windows, [len(row) for row in spans], batch_size)))

    def group(self, texts, token_probabilities, aggregation=DEFAULT_AGGREGATION):
        """`annotate`'s results from `token_probabilities(texts)`, grouped by `aggregation`."""
        return group_entities(self.preprocessor.tokenizer, self.label_names, texts, token_probabilities, aggregation)

    def confidence(self, texts, token_probabilities, measure=DEFAULT_CONFIDENCE_MEASURE):
        """Per text, the model's least confident word: the lowest over its words (their first
        tokens, as `aggregation="first"` reads them) of the top label's probability
        (`measure="probability"`) or of its lead over the second label (`"margin"`); 1.0 for a
        text without tokens."""
        if measure not in CONFIDENCE_MEASURES:
            raise ValueError(f"measure must be one of {', '.join(CONFIDENCE_MEASURES)}, got {measure!r}")
        pieces, out = piece_reader(self.preprocessor.tokenizer), []
        for text, (row, probs) in zip(texts, token_probabilities):
            starts = [k for k, piece in enumerate(pieces(text, row)) if not piece.is_subword]
            if not starts:
                out.append(1.0)
                continue
            top = np.sort(np.asarray(probs)[starts], axis=-1)
            values = top[:, -1] if measure == "probability" or top.shape[1] < 2 else top[:, -1] - top[:, -2]
            out.append(float(values.min()))
        return out


# ---- the host's half of token classification (`biozoo annotate` runs it in worker processes) ----


def token_windows(preprocessor, texts, truncate=False):
    """Per text its tokens `[(id, start, end), ...]`, and the model windows of all the texts' tokens."""
    spans = preprocessor.tokenizer.token_spans(texts)
    if truncate:
        spans = [row[:preprocessor.sequence_length - 2] for row in spans]
    return spans, preprocessor.piece_windows([[[i] for i, _, _ in row] for row in spans])


def window_batches(preprocessor, token_ids, batch_size=64, exact_lengths=False):
    """The windows `token_ids` as padded model inputs, `[(window indices, x), ...]`, for
    `TokenClassifier.dispatch_window_batches`: length buckets, or with `exact_lengths` (where
    prediction is not compiled per shape) each batch padded to its longest window."""
    if not len(token_ids):
        return []
    batches = model_input_batches(token_ids, preprocessor.tokenizer.pad_token_id, batch_size=batch_size,
                                  max_length=preprocessor.sequence_length, exact_lengths=exact_lengths)
    return [(indices, batches.batch(indices)) for indices in batches.plan]


def logits_per_window(batch_logits, window_lengths):
    """Per window its `[tokens, labels]` logits, from `[(window indices, logits [rows, length,
    labels]), ...]` (`TokenClassifier.dispatch_window_batches`) and each window's length."""
    out = [None] * len(window_lengths)
    for indices, logits in batch_logits:
        for row, window in enumerate(indices):
            out[window] = logits[row, :window_lengths[window]]
    return out


def unit_probabilities(owner, word_positions, counts, window_logits, num_labels):
    """Per sentence (`counts`: its units), `[units, labels]` probabilities from each window's logits,
    each unit read in the window that owns it (`Windows.owner`, `Windows.word_positions`)."""
    probabilities = [softmax(logits) for logits in window_logits]
    out = []
    for s, count in enumerate(counts):
        probs = np.zeros((count, num_labels), np.float32)
        owners = np.asarray(owner[s], np.int64)
        for window in np.unique(owners):
            words = np.flatnonzero(owners == window)
            probs[words] = probabilities[window][word_positions[window][words]]
        out.append(probs)
    return out


def group_entities(tokenizer, label_names, texts, token_probabilities, aggregation=DEFAULT_AGGREGATION):
    """`TokenClassifier.group`: per text, `{"text", "entities"}` from its `(tokens, probabilities)`."""
    pieces = piece_reader(tokenizer)
    results = []
    for text, (row, probs) in zip(texts, token_probabilities):
        entities = aggregate(pieces(text, row), probs, label_names, aggregation)
        for entity in entities:
            entity["text"] = text[entity["start"]:entity["end"]]
            entity["score"] = round(entity["score"], 6)
        results.append({"text": text, "entities": entities})
    return results


def piece_reader(tokenizer):
    """`pieces(text, row)`: a text's tokens `[(id, start, end), ...]` as aggregation `Piece`s."""
    vocabulary = tokenizer.get_vocabulary()
    wordpiece = tokenizer.continuation_prefix is not None
    return lambda text, row: [Piece(a, b, is_subword(vocabulary[i], a, b, text, i == tokenizer.unk_token_id, wordpiece))
                              for i, a, b in row]
