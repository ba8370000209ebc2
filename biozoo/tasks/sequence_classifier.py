"""Sequence classification: relation extraction (single label) and document classification
(multi-label, e.g. Hallmarks of Cancer)."""

from __future__ import annotations

import keras
import keras_hub
import numpy as np

from biozoo.convert.core import PROBLEM_TYPES
from biozoo.data import IGNORE_LABEL
from biozoo.data.pipeline import model_input_batches
from biozoo.errors import CheckpointError
from biozoo.models import family_for_backbone
from biozoo.optim import default_optimizer
from biozoo.tasks._util import sigmoid, softmax
from biozoo.tasks.base import ClassifierHeadMixin, GlobalBatchLossMixin, PresetTaskMixin, head_dropout
from biozoo.tasks.inference import batch_progress, compile_ahead, compiled_predict
from biozoo.tokenizers.base import Tokenizer, text_list

# Entity markers of the biomedical RE corpora; each stays one token.
ENTITY_MARKERS = (
    "@GENE$", "@CHEMICAL$", "@DISEASE$", "@DRUG$", "@CHEM-GENE$", "@DRUG-DRUG$",
    "BC6ENTC", "BC6ENTG", "BC6OTHER",
)
OTHER_ENTITY_MARKERS = ("BC6OTHER",)  # an entity outside the pair the label is about

@keras.saving.register_keras_serializable(package="biozoo")
class SequenceClassifierPreprocessor(keras_hub.models.TextClassifierPreprocessor):
    """Text (or text pairs) -> `[CLS] a [SEP] (b [SEP])`, as KerasHub's, for any tokenizer.

    Model inputs that are already tokenized (a dict with `token_ids`) pass through, so the
    same task trains on pre-bucketed batches and predicts on raw strings.

    Example:
        >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "aspirin", "inhibits", "cox", "."]
        >>> pre = SequenceClassifierPreprocessor(WordPieceTokenizer(vocabulary=vocab, lowercase=True),
        ...                                      sequence_length=8)
        >>> [ids.tolist() for ids, segments in pre.encode(["Aspirin inhibits COX."], ["COX"])]
        [[2, 5, 6, 7, 8, 3, 7, 3]]
        >>> keras.ops.convert_to_numpy(pre(["Aspirin inhibits COX."])["padding_mask"]).tolist()
        [[True, True, True, True, True, True, False, False]]
    """

    tokenizer_cls = Tokenizer

    def call(self, x, y=None, sample_weight=None):
        if isinstance(x, dict) and "token_ids" in x:
            return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)
        return super().call(x, y=y, sample_weight=sample_weight)

    def encode(self, texts, pairs=None, cut=None):
        """Packed token ids per example (NumPy, unpadded), for bucketed batching. An empty pair
        ("") is no pair, as HF's tokenizers read it. `cut`, a list, receives per example the
        token ids cut to fit `sequence_length` (none: [])."""
        tok = self.tokenizer
        first = tok.ids(texts)
        second = tok.ids(pairs) if pairs is not None else None
        if second is not None and len(second) != len(first):
            raise ValueError(f"{len(first)} texts and {len(second)} pairs: give one pair per text")
        out = []
        for i, a in enumerate(first):
            paired = pairs is not None and pairs[i] != ""
            b = second[i] if paired else []
            kept_a, kept_b = longest_first(a, b, self.sequence_length - (3 if paired else 2))
            if cut is not None:
                cut.append(a[len(kept_a):] + b[len(kept_b):])
            a, b = kept_a, kept_b
            ids = [tok.cls_token_id] + a + [tok.sep_token_id]
            segments = [0] * len(ids)
            if paired:
                ids += b + [tok.sep_token_id]
                segments += [1] * (len(b) + 1)
            out.append((np.asarray(ids, np.int32), np.asarray(segments, np.int32)))
        return out


def longest_first(first, second, budget):
    """`first` and `second` cut to `budget` tokens together, as HF's fast tokenizers' `longest_first`
    cuts a pair: the shorter kept whole when the longer can take the rest, else each cut to half
    the budget, an odd token to the longer (on a tie, to the second).

    Example:
        >>> longest_first(list(range(10)), list(range(3)), 9)
        ([0, 1, 2, 3, 4, 5], [0, 1, 2])
        >>> [len(part) for part in longest_first(list(range(300)), list(range(301)), 509)]
        [254, 255]
    """
    if len(first) + len(second) <= budget:
        return first, second
    shorter, longer = sorted((len(first), len(second)))
    longer = shorter if shorter > budget else max(shorter, budget - shorter)
    if shorter + longer > budget:
        shorter, longer = budget // 2, budget // 2 + budget % 2
    if len(first) > len(second):
        return first[:longer], second[:shorter]
    return first[:shorter], second[:longer]


@keras.saving.register_keras_serializable(package="biozoo")
class SequenceClassifier(GlobalBatchLossMixin, ClassifierHeadMixin, PresetTaskMixin, keras_hub.models.Task):
    """Relation extraction and document classification on any biozoo backbone.

    Single-label (`multi_label=False`: softmax, e.g. ChemProt, DDI, GAD) or multi-label
    (`multi_label=True`: sigmoid with a threshold per label, e.g. HoC); `problem_type` takes
    transformers' names ("single_label_classification", "multi_label_classification",
    "regression"), as a hub checkpoint's config.json gives it. The head reads the pooled
    output, or the first token through a dense layer for families without a pooler. A hub
    `*ForSequenceClassification` checkpoint loads with its labels and head.

    Example:
        >>> re = biozoo.SequenceClassifier.from_preset(
        ...     "biobert_v1_1", label_names=["CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false"])
        >>> re.predict_labels(["@CHEMICAL$ inhibits @GENE$ expression."])
        >>> biozoo.SequenceClassifier.from_preset("hf://org/some-biobert-classifier").classify(["..."])
    """

    backbone_cls = None
    preprocessor_cls = SequenceClassifierPreprocessor
    padding_invariant_loss = True  # the head reads the first token only
    hf_class_suffix = "ForSequenceClassification"

    def __init__(self, backbone, label_names, preprocessor=None, multi_label=False, thresholds=None,
                 dropout=None, problem_type=None, head_activation=None, dropout_before_dense=None, **kwargs):
        if problem_type not in (None, *PROBLEM_TYPES):
            raise ValueError(f"problem_type {problem_type!r} is none of {', '.join(PROBLEM_TYPES)}")
        if problem_type is None and multi_label:
            problem_type = "multi_label_classification"
        elif problem_type == "multi_label_classification":
            multi_label = True
        elif multi_label:
            raise ValueError(f"multi_label=True contradicts problem_type {problem_type!r}")
        family = family_for_backbone(backbone)
        if dropout is None:
            dropout = family.classification_dropout
        dropout = head_dropout(backbone, dropout)
        head_activation = head_activation or family.classifier_activation
        if dropout_before_dense is None:
            dropout_before_dense = family.dropout_before_classifier_dense
        inputs = backbone.input
        outputs = backbone(inputs)
        init = keras.initializers.TruncatedNormal(stddev=0.02)
        if "pooled_output" in outputs:
            x = outputs["pooled_output"]
            self.cls_dense = None
        else:
            # no trained pooler: token 0 through a new dense layer, as transformers' head for the family
            x = outputs["sequence_output"][:, 0, :]
            if dropout_before_dense:
                x = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy)(x)
            self.cls_dense = keras.layers.Dense(
                backbone.hidden_dim, activation=head_activation, kernel_initializer=init,
                dtype=backbone.dtype_policy, name="cls_dense",
            )
            x = self.cls_dense(x)
        self.output_dropout = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy, name="output_dropout")
        self.output_dense = keras.layers.Dense(
            len(label_names), kernel_initializer=init, dtype=backbone.dtype_policy, name="logits"
        )
        logits = self.output_dense(self.output_dropout(x))
        logits = keras.layers.Activation("linear", dtype="float32", name="float32_logits")(logits)
        compile_now = kwargs.pop("compile", True)
        super().__init__(inputs=inputs, outputs=logits, compile=False, **kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.label_names = list(label_names)
        self.multi_label = multi_label
        self.thresholds = list(thresholds) if thresholds is not None else [0.5] * len(label_names)
        self.dropout = dropout
        self.problem_type = problem_type
        self.head_activation = head_activation
        self.dropout_before_dense = dropout_before_dense
        if compile_now:
            self.compile()

    @property
    def regression(self):
        """transformers' rule: "regression", or one output and no problem type, trains with MSE."""
        return self.problem_type == "regression" or (self.problem_type is None and len(self.label_names) == 1)

    def get_config(self):
        config = super().get_config()
        config.update({"label_names": self.label_names, "multi_label": self.multi_label,
                       "thresholds": self.thresholds, "dropout": self.dropout, "problem_type": self.problem_type,
                       "head_activation": self.head_activation, "dropout_before_dense": self.dropout_before_dense})
        return config

    @classmethod
    def from_config(cls, config):
        if "head_activation" not in config:
            # saved before the head followed transformers' for every family: dropout, then a gelu
            # dense (DistilBERT's relu), then dropout
            backbone = config.get("backbone")
            name = backbone.get("class_name", "") if isinstance(backbone, dict) else type(backbone).__name__
            config = {**config, "head_activation": "relu" if "DistilBert" in name else "gelu",
                      "dropout_before_dense": True}
        return super().from_config(config)

    @classmethod
    def _problem_arguments(cls, head):
        return {"problem_type": head.get("problem_type")}

    def _init_from_heads(self, heads, config):
        heads = self._classifier_weights(heads, config)
        if heads is None:
            return
        if ("classifier/hidden/kernel" in heads) != (self.cls_dense is not None):
            raise CheckpointError(
                f"the checkpoint's classifier head {'has' if self.cls_dense is None else 'has no'} dense layer before "
                "its output layer, which this backbone's sequence classifier does not match")
        if self.cls_dense is not None:
            self.cls_dense.set_weights([heads["classifier/hidden/kernel"], heads["classifier/hidden/bias"]])
        output = "classifier/output" if "classifier/output/kernel" in heads else "classifier/dense"
        self.output_dense.set_weights([heads[f"{output}/kernel"], heads[f"{output}/bias"]])
        self.preprocessor.sequence_length = min(512, self.backbone.max_sequence_length)

    def compile(self, optimizer="auto", loss="auto", metrics=None, **kwargs):
        if loss == "auto":
            # multi-label: mean over real abstracts (filler rows of a short batch have weight 0)
            if self.multi_label:
                loss = keras.losses.BinaryCrossentropy(from_logits=True, reduction="mean_with_sample_weight")
            elif self.regression:
                loss = keras.losses.MeanSquaredError()
            else:
                loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE_LABEL)
        super().compile(optimizer=default_optimizer(optimizer), loss=loss, metrics=metrics, **kwargs)

    def classify(self, texts, pairs=None, batch_size=64):
        """Per example, every label with its score, best first: `[{"label", "score"}, ...]`, as
        transformers' `pipeline("text-classification", top_k=None)` returns them (softmax; sigmoid
        for multi-label or one-output models; the raw output for regression)."""
        scores = self.predict_probabilities(texts, pairs, batch_size)
        return [[{"label": self.label_names[i], "score": float(row[i])} for i in np.argsort(-row, kind="stable")]
                for row in scores]

    def predict_probabilities(self, texts, pairs=None, batch_size=64, cut=None):
        """Class probabilities per example: softmax (single label), sigmoid (multi-label, or one
        output without a problem type, as transformers' pipeline) or the raw output (regression).
        `cut`: as the preprocessor's `encode` takes it."""
        texts = text_list(texts)
        pairs = None if pairs is None else text_list(pairs, "pairs")
        encoded = self.preprocessor.encode(texts, pairs, cut)
        if not encoded:
            return np.zeros((0, len(self.label_names)), np.float32)
        batches = model_input_batches(
            [ids for ids, _ in encoded], self.preprocessor.tokenizer.pad_token_id, [seg for _, seg in encoded],
            batch_size=batch_size, max_length=self.preprocessor.sequence_length,
        )
        predict = compiled_predict(self)
        compile_ahead(predict, batches.planned_shapes(), batches.x_keys)
        probs = np.zeros((len(encoded), len(self.label_names)), np.float32)
        for indices in batch_progress(batches.plan, len(batches.plan)):
            logits = np.asarray(predict(batches.batch(indices)))[: len(indices)]
            probs[indices] = self._scores(logits)
        return probs

    def _scores(self, logits):
        if self.problem_type == "regression":
            return logits
        if self.multi_label or len(self.label_names) == 1:
            return sigmoid(logits)
        return softmax(logits)

    def predict_labels(self, texts, pairs=None, batch_size=64, cut=None):
        """Label names (single label) or lists of label names (multi-label) per example (`cut`: as
        `encode` takes it)."""
        probs = self.predict_probabilities(texts, pairs, batch_size, cut)
        if self.multi_label:
            return [[n for n, p, t in zip(self.label_names, row, self.thresholds) if p >= t] for row in probs]
        return [self.label_names[i] for i in probs.argmax(-1)]


def markers_to_add(tokenizer, texts, markers=ENTITY_MARKERS):
    """The entity markers present in `texts` that the tokenizer would split into pieces."""
    present = [m for m in markers if any(m in t for t in texts)]
    if not present:
        return []
    pieces = tokenizer(present)
    return [m for m, ids in zip(present, pieces) if len(ids) != 1]
