"""Task-agnostic knowledge distillation behind `biozoo distill`.

The three procedures of "On the effectiveness of compact biomedical transformers" (Rohanian
et al., 2023), with the loss weights and temperatures of their released scripts:

- `distilbert` (DistilBioBERT): 2 * MLM + 5 * T^2 KL(teacher || student) on the masked tokens
  (T = 2) + 1 * (1 - cosine) between the last hidden states of every real token.
- `tinybert` (TinyBioBERT): per student layer l, MSE(h_s^l W_p, h_t^g(l)) + MSE(a_s^l, a_t^g(l))
  (hidden states and attention probabilities), plus the embedding MSE and the soft
  cross-entropy of the teacher's masked-token distribution, all weighted 1. W_p is a learned
  projection, used when the widths differ.
- `compact` (CompactBioBERT): 1 * MLM + 3 * sum_l [(1 - cosine(h_s^l, h_t^g(l))) +
  KL(a_t^g(l) || a_s^l) / key length] + 5 * KL(teacher || student) on the masked tokens. The
  attention term is the released script's KLDivLoss(reduction="mean"): the mean over every entry
  of the real query rows, padding keys included, so it alone depends on how far a batch is padded.

KL terms take the teacher as the reference distribution, as both reference implementations do
(the paper's formulas write the arguments the other way round). Hidden-state and attention
terms average over real (non-padding) tokens and query rows, an attention row's MSE over its real
keys: no other term changes when a batch is padded further. Where the student has fewer
heads than the teacher, attention maps are compared head-averaged.

The student is the teacher's architecture with changes (`{"num_layers": 6}`); where the widths
agree it starts from the teacher: embeddings, MLM head, and student layer l from teacher layer
g(l), by default the method's (`DISTILL_METHODS`): the first or the last teacher layer of each
of L_s equal blocks (1, 3, ..., 11 or 2, 4, ..., 12 for half of 12 layers).

The command line (`biozoo distill`) is in `biozoo._commands.train`.
"""

from __future__ import annotations

import dataclasses
import json
import os

import keras
import numpy as np

from biozoo import presets
from biozoo._io import read_json
from biozoo.api import Tokenizer
from biozoo.data import IGNORE_LABEL, pretraining
from biozoo.errors import BiozooError
from biozoo.optim import adamw
from biozoo.preset_files import METRICS_FILE
from biozoo.tasks.inference import compiled_predict
from biozoo.tasks.pretraining import MaskedLM
from biozoo.train import DISTILL_METHODS
from biozoo.train.hyperparameters import DistillHyperparameters
from biozoo.train.loss_history import TENSORFLOW, LabelsInInputs, LossHistoryStep, freeze_unused_pooler
from biozoo.train.run import TrainingRun, check_values, examples_per_second, resume_settings

BACKBONE_INPUTS = ("token_ids", "segment_ids", "padding_mask")


# ---- layer map and student ----------------------------------------------------------


def uniform_layer_map(student_layers, teacher_layers, block_layer="last"):
    """g(l) for l = 1..student_layers (1-based): the last teacher layer of each of L_s equal blocks,
    round(l * L_t / L_s), or the first, round((l - 1) * L_t / L_s) + 1."""
    if block_layer == "first":
        return [round((l - 1) * teacher_layers / student_layers) + 1 for l in range(1, student_layers + 1)]
    return [max(1, round(l * teacher_layers / student_layers)) for l in range(1, student_layers + 1)]


def parse_layer_map(layer_map, student_layers, teacher_layers, block_layer="last"):
    """`"2,4,6"` or a list -> validated 1-based teacher layers, one per student layer; None:
    `uniform_layer_map` with `block_layer`."""
    if layer_map is None or layer_map == "":
        return uniform_layer_map(student_layers, teacher_layers, block_layer)
    if isinstance(layer_map, str):
        try:
            layer_map = [int(x) for x in layer_map.replace(" ", "").split(",") if x]
        except ValueError:
            raise BiozooError(f"--layer-map must be comma-separated teacher layer numbers, got {layer_map!r}") from None
    layer_map = [int(x) for x in layer_map]
    if len(layer_map) != student_layers:
        raise BiozooError(f"--layer-map gives {len(layer_map)} teacher layers for a {student_layers}-layer student.")
    bad = [x for x in layer_map if not 1 <= x <= teacher_layers]
    if bad:
        raise BiozooError(f"--layer-map: teacher layers are numbered 1..{teacher_layers}; got {bad}.")
    return layer_map


def read_student_config(student_config):
    """A dict, a JSON file, or an inline JSON object -> the config changes."""
    if isinstance(student_config, dict):
        return dict(student_config)
    text = str(student_config)
    if text.lstrip().startswith("{"):
        try:
            config = json.loads(text)
        except json.JSONDecodeError as error:
            raise BiozooError(f"--student-config: invalid inline JSON ({error.msg}).") from None
    else:
        try:
            config = read_json(text, "student config")
        except FileNotFoundError:
            raise BiozooError(f"--student-config {text}: no such file (give a JSON file, or inline JSON such as "
                              '\'{"num_layers": 6}\').') from None
    if not isinstance(config, dict):
        raise BiozooError(f"{student_config}: the student config must be a JSON object, e.g. {{\"num_layers\": 6}}.")
    return config


def student_backbone_config(teacher_backbone, changes):
    """The teacher backbone's config with `changes` applied (unknown keys are an error)."""
    config = teacher_backbone.get_config()
    config.pop("name", None)
    unknown = sorted(set(changes) - set(config))
    if unknown:
        raise BiozooError(
            f"student config: {', '.join(unknown)} not in {type(teacher_backbone).__name__}'s config "
            f"({', '.join(k for k in config if k not in ('trainable', 'dtype'))})."
        )
    config.update(changes)
    return config


def _copy_into(target, source):
    """A copy, not the teacher's array itself: JAX's train and test steps donate every variable's
    buffer, and one buffer held by two variables cannot be donated twice."""
    target.assign(keras.ops.convert_to_numpy(source.value))


def initialize_student(student, teacher, layer_map):
    """Copy the teacher's weights into `student` (MaskedLM tasks) where shapes agree.

    Embeddings, other non-layer weights and the MLM head are copied when every weight has the
    teacher's shape; student layer l takes teacher layer `layer_map[l - 1]` when that layer's
    weights all match. Returns what was copied.
    """
    s_backbone, t_backbone = student.backbone, teacher.backbone
    copied = {"embeddings": False, "mlm_head": False, "layers": {}}
    s_layers, t_layers = list(s_backbone.transformer_layers), list(t_backbone.transformer_layers)
    in_layers = {id(w) for layer in s_layers for w in layer.weights}
    teacher_weights = {w.path: w for w in t_backbone.weights}
    others = [w for w in s_backbone.weights if id(w) not in in_layers]
    if all(w.path in teacher_weights and tuple(teacher_weights[w.path].shape) == tuple(w.shape) for w in others):
        for w in others:
            _copy_into(w, teacher_weights[w.path])
        copied["embeddings"] = True
    for l, g in enumerate(layer_map, start=1):
        s_weights, t_weights = s_layers[l - 1].weights, t_layers[g - 1].weights
        if len(s_weights) == len(t_weights) and all(
                tuple(a.shape) == tuple(b.shape) for a, b in zip(s_weights, t_weights)):
            for a, b in zip(s_weights, t_weights):
                _copy_into(a, b)
            copied["layers"][l] = g
    s_head, t_head = student.mlm_head.weights, teacher.mlm_head.weights
    if copied["embeddings"] and len(s_head) == len(t_head) and all(
            tuple(a.shape) == tuple(b.shape) for a, b in zip(s_head, t_head)):
        for a, b in zip(s_head, t_head):
            _copy_into(a, b)
        copied["mlm_head"] = True
    return copied


# ---- the distiller ----------------------------------------------------------------------


def _weighted_mean(values, weights):
    weights = keras.ops.broadcast_to(weights, keras.ops.shape(values))
    return keras.ops.sum(values * weights) / keras.ops.maximum(keras.ops.sum(weights), 1.0)


def _l2_normalize(x):
    """tf.math.l2_normalize: x / sqrt(max(sum(x^2), 1e-12))."""
    return x * keras.ops.rsqrt(keras.ops.maximum(keras.ops.sum(keras.ops.square(x), -1, keepdims=True), 1e-12))


def _cosine_distance(a, b):
    return 1.0 - keras.ops.sum(_l2_normalize(a) * _l2_normalize(b), -1)


def _match_heads(student_map, teacher_map):
    if student_map.shape[1] != teacher_map.shape[1]:
        return keras.ops.mean(student_map, 1, keepdims=True), keras.ops.mean(teacher_map, 1, keepdims=True)
    return student_map, teacher_map


def _unpack(data):
    """`(x, mask_ids[, weights])` or `(x, {"mask_labels"})` (IGNORE_LABEL = no mask) -> (x, ids, weights)."""
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    if isinstance(y, dict):
        y = y["mask_labels"]
    y = keras.ops.cast(y, "int32")
    real = keras.ops.cast(y >= 0, "float32")
    sample_weight = real if sample_weight is None else keras.ops.cast(sample_weight, "float32") * real
    return x, keras.ops.maximum(y, 0), sample_weight


class Distiller(LossHistoryStep, keras.Model):
    """A student `MaskedLM` trained to imitate a frozen teacher `MaskedLM`.

    `method` is "distilbert", "tinybert" or "compact" (see the module docstring); `layer_map`
    gives the 1-based teacher layer g(l) for each student layer (default: the method's). Batches are
    `(x, {"mask_labels"})` as `biozoo.data.pretraining.MaskedBatches` makes them (IGNORE_LABEL where no
    token is masked), or `(x, mask_ids, mask_weights)`; on JAX and PyTorch each wrapped in a
    1-tuple (see `biozoo.train.loss_history`). On TensorFlow calling the distiller runs the student.
    With `total_steps`, every loss term is averaged over each `log_every` steps in the graph (a
    model variable, so checkpoints keep it): `loss_curves(steps)`. The distributed train step is
    `biozoo.train.loss_history.LossHistoryStep`'s.

    Example:
        >>> distiller = Distiller(teacher, student, "compact", layer_map=[2, 4])
        >>> distiller.compile(optimizer=biozoo.optim.adamw(5e-4, 1000))
        >>> distiller.fit(dataset, steps_per_epoch=1000)
        >>> distiller.student.save_to_preset("student")
    """

    def __init__(self, teacher, student, method, layer_map=None, temperature=None, loss_weights=None,
                 layer_weights=None, total_steps=None, log_every=1, **kwargs):
        super().__init__(**kwargs)
        if method not in DISTILL_METHODS:
            raise BiozooError(f"unknown distillation method {method!r}; choose one of {', '.join(DISTILL_METHODS)}")
        teacher.trainable = False
        freeze_unused_pooler(student.backbone)
        self.teacher, self.student, self.method = teacher, student, method
        t_layers, s_layers = len(teacher.backbone.transformer_layers), len(student.backbone.transformer_layers)
        spec = DISTILL_METHODS[method]
        self.layer_map = parse_layer_map(layer_map, s_layers, t_layers, spec["layer_map"])
        self.temperature = float(spec["temperature"] if temperature is None else temperature)
        unknown = sorted(set(loss_weights or {}) - set(spec["weights"]))
        if unknown:
            raise BiozooError(f"{method}: unknown loss weights {unknown}; known: {sorted(spec['weights'])}")
        self.loss_weights = {**spec["weights"], **(loss_weights or {})}
        self.layer_weights = [1.0] * s_layers if layer_weights is None else [float(x) for x in layer_weights]
        if len(self.layer_weights) != s_layers:
            raise BiozooError(f"layer_weights needs {s_layers} values (one per student layer).")
        t_width, s_width = teacher.backbone.hidden_dim, student.backbone.hidden_dim
        self.projection = None
        if s_width != t_width:
            if method != "tinybert":
                raise BiozooError(
                    f"{method} distillation compares hidden states directly, so the student keeps the "
                    f"teacher's hidden_dim ({t_width}, not {s_width}); use --method tinybert for a narrower student."
                )
            self.projection = keras.layers.Dense(t_width, name="projection", dtype=student.dtype_policy)
            self.projection.build((None, None, s_width))
        self.init_loss_history(("loss",) + spec["terms"], total_steps, log_every)
        self.built = True

    if TENSORFLOW:  # elsewhere `call` is LossHistoryStep's: the losses of a batch
        def call(self, inputs, training=False):
            return self.student(inputs, training=training)

    def _project(self, hidden):
        return hidden if self.projection is None else self.projection(hidden)

    def compute_terms(self, x, y, sample_weight=None, training=False):
        """The unweighted loss terms of this method for one batch (dict of scalars)."""
        ops = keras.ops
        inputs = {k: x[k] for k in BACKBONE_INPUTS}
        positions = x["mask_positions"]
        attentions = self.method != "distilbert"
        t = self.teacher.backbone.features(inputs, attentions=attentions, training=False)
        t = keras.tree.map_structure(ops.stop_gradient, t)
        s = self.student.backbone.features(inputs, attentions=attentions, training=training)
        gather = lambda h: ops.take_along_axis(h, ops.expand_dims(positions, -1), axis=1)  # noqa: E731
        t_logits = ops.cast(self.teacher.mlm_head(gather(t["sequence_output"])), "float32")
        s_logits = ops.cast(self.student.mlm_head(gather(s["sequence_output"])), "float32")
        w = ops.ones(ops.shape(positions), "float32") if sample_weight is None else ops.cast(sample_weight, "float32")
        mask = ops.cast(x["padding_mask"], "float32")
        f32 = lambda v: ops.cast(v, "float32")  # noqa: E731
        temperature = self.temperature
        terms = {}
        if "mlm" in DISTILL_METHODS[self.method]["terms"]:
            ce = keras.losses.sparse_categorical_crossentropy(ops.cast(y, "int32"), s_logits, from_logits=True)
            terms["mlm"] = _weighted_mean(ce, w)
        t_log_p = ops.log_softmax(t_logits / temperature, -1)
        s_log_p = ops.log_softmax(s_logits / temperature, -1)
        if self.method == "tinybert":
            soft_ce = -ops.sum(ops.exp(t_log_p) * s_log_p, -1)
            terms["output"] = _weighted_mean(soft_ce, w)
        else:
            kl = ops.sum(ops.exp(t_log_p) * (t_log_p - s_log_p), -1)
            terms["output"] = temperature ** 2 * _weighted_mean(kl, w)
        if self.method == "distilbert":
            last = _cosine_distance(f32(s["sequence_output"]), f32(t["sequence_output"]))
            terms["align"] = _weighted_mean(last, mask)
            return terms
        rows = mask[:, None, :]  # [batch, 1, query]: real query rows
        keys = mask[:, None, None, :]  # [batch, 1, 1, key]: real key columns
        real_keys = ops.maximum(ops.sum(keys, -1), 1.0)
        hidden, attention = 0.0, 0.0
        for l, (g, weight) in enumerate(zip(self.layer_map, self.layer_weights), start=1):
            s_h, t_h = f32(s["hidden_states"][l]), f32(t["hidden_states"][g])
            s_a, t_a = _match_heads(f32(s["attentions"][l - 1]), f32(t["attentions"][g - 1]))
            if self.method == "tinybert":
                hidden += weight * _weighted_mean(ops.mean(ops.square(f32(self._project(s_h)) - t_h), -1), mask)
                row_mse = ops.sum(ops.square(s_a - t_a) * keys, -1) / real_keys  # over the row's real keys
                attention += weight * _weighted_mean(row_mse, rows)
            else:
                hidden += weight * _weighted_mean(_cosine_distance(s_h, t_h), mask)
                # CompactBioBERT-Distillation.py: KLDivLoss(reduction="mean")(log(s + eps), t + eps) over the real
                # query rows, the mean taken over every key column too (padding's add nothing, and count)
                eps = 1e-12
                t_a, s_a = t_a + eps, s_a + eps
                row_kl = ops.sum(t_a * (ops.log(t_a) - ops.log(s_a)), -1)
                attention += weight * _weighted_mean(row_kl, rows) / f32(ops.shape(t_a)[-1])
        terms["hidden"], terms["attention"] = hidden, attention
        if self.method == "tinybert":
            s_e, t_e = f32(self._project(s["hidden_states"][0])), f32(t["hidden_states"][0])
            terms["embedding"] = _weighted_mean(ops.mean(ops.square(s_e - t_e), -1), mask)
        return terms

    def total_loss(self, terms):
        w = self.loss_weights
        if self.method == "distilbert":
            return w["mlm"] * terms["mlm"] + w["output"] * terms["output"] + w["align"] * terms["align"]
        if self.method == "tinybert":
            return (w["embedding"] * terms["embedding"] + w["layer"] * (terms["hidden"] + terms["attention"])
                    + w["output"] * terms["output"])
        return (w["mlm"] * terms["mlm"] + w["compact"] * (terms["hidden"] + terms["attention"])
                + w["output"] * terms["output"])

    def step_losses(self, data, training):
        """The total loss ("loss") and the unweighted terms of a batch."""
        x, y, sample_weight = _unpack(data)
        terms = self.compute_terms(x, y, sample_weight, training=training)
        return {"loss": self.total_loss(terms), **terms}


# ---- data ---------------------------------------------------------------------------------


@dataclasses.dataclass
class DistillationData:
    """What `run_distill` trains and measures on.

    `stream`: the training batches as `TrainingRun.train` takes them on the backend: on
    TensorFlow a function of the start step giving an endless tf.data.Dataset of global batches
    `(x, y)` (x: the MaskedLM inputs; y: {"mask_labels"}, IGNORE_LABEL where no token is
    masked); on JAX and PyTorch an object whose `batches_from(step)` gives them as `((x, y),)`.
    `eval_dataset`: finite batches `(x, y)` for the agreement figures (a tf.data.Dataset on
    TensorFlow, a list of NumPy batches elsewhere), or None; `eval_source`: where its text
    comes from.
    """

    stream: object
    eval_dataset: object
    train_instances: int
    eval_instances: int
    eval_source: str


def masked_eval_dataset(token_lists, tokenizer, max_seq_length, batch_size, seed, whole_words=True):
    """Fixed masked batches `(x, {"mask_labels"})` of `token_ids` lists ([CLS] ... [SEP]
    instances), all [batch_size, max_seq_length]: a tf.data.Dataset on TensorFlow, a list of
    NumPy batches elsewhere."""
    if not TENSORFLOW:
        return _numpy_eval_batches(token_lists, tokenizer, max_seq_length, batch_size, seed, whole_words)
    from biozoo.data.tf_pretraining import masked_eval_dataset as tf_masked_eval_dataset

    return tf_masked_eval_dataset(token_lists, tokenizer, max_seq_length, batch_size, seed, whole_words)


def _numpy_eval_batches(token_lists, tokenizer, max_seq_length, batch_size, seed, whole_words):
    masker = pretraining.WordMasker(tokenizer, pretraining.max_predictions_for(max_seq_length),
                                    whole_words=whole_words)
    pad_id, predictions = int(tokenizer.pad_token_id), masker.max_predictions
    batches = []
    for start in range(0, len(token_lists), batch_size):
        x = {"token_ids": np.full((batch_size, max_seq_length), pad_id, np.int32),
             "segment_ids": np.zeros((batch_size, max_seq_length), np.int32),
             "padding_mask": np.zeros((batch_size, max_seq_length), np.int32),
             "mask_positions": np.zeros((batch_size, predictions), np.int32)}
        labels = np.full((batch_size, predictions), IGNORE_LABEL, np.int32)  # the last batch: empty rows
        for row, index in enumerate(range(start, min(start + batch_size, len(token_lists)))):
            ids = np.asarray(token_lists[index], np.int32)[:max_seq_length]
            masked, x["mask_positions"][row], labels[row] = masker.mask(ids, np.random.default_rng([seed, index]))
            x["token_ids"][row, :len(ids)], x["padding_mask"][row, :len(ids)] = masked, 1
        batches.append((x, {"mask_labels": labels}))
    return batches


def pretraining_data(tokenizer, corpus_files, *, max_seq_length, batch_size, seed, records_dir, eval_corpus=None,
                     whole_words=True, max_eval=2000, log=None):
    """Masked batches of `corpus_files`, packed in `records_dir` (TFRecords on TensorFlow, NumPy
    shards elsewhere; reused by a later run; whole-word or single-piece masking). Agreement is
    measured on `eval_corpus` files when given, else on the first `max_eval` training
    instances."""
    if TENSORFLOW:
        from biozoo.data import tf_pretraining

        files = tf_pretraining.write_pretraining_records(list(corpus_files), tokenizer, records_dir, max_seq_length,
                                                         None, seed=seed, log=log)

        def stream(start_step):
            return tf_pretraining.masked_dataset(files, tokenizer, max_seq_length, batch_size, None, seed=seed,
                                                 start_step=start_step, whole_words=whole_words)

        count = tf_pretraining.count_records(records_dir)
        first_instances = lambda: [r["token_ids"] for r in  # noqa: E731
                                   tf_pretraining.read_records(files).take(max_eval).as_numpy_iterator()]
    else:
        prefixes = pretraining.write_instance_shards(list(corpus_files), tokenizer, records_dir, max_seq_length, None,
                                                     seed=seed, log=log)
        stream = LabelsInInputs(pretraining.MaskedBatches(prefixes, tokenizer, max_seq_length, batch_size, None,
                                                           seed, whole_words=whole_words))
        count = pretraining.count_instances(records_dir)
        instances = stream.data.instances
        first_instances = lambda: [instances[i][0] for i in range(min(max_eval, len(instances)))]  # noqa: E731

    if eval_corpus:
        documents = [d for path in eval_corpus for d in pretraining.read_documents(path)]
        instances = pretraining.create_instances(pretraining.tokenize_documents(documents, tokenizer),
                                                 tokenizer.cls_token_id, tokenizer.sep_token_id, max_seq_length,
                                                 None, seed=seed)
        token_lists = [i["token_ids"] for i in instances[:max_eval]]
        source = "held out: " + ", ".join(_where(p) for p in eval_corpus)
    else:
        token_lists = first_instances()
        source = f"the first {len(token_lists)} training instances (seen in training; pass eval_corpus to hold out)"
    eval_dataset = None
    if token_lists:
        eval_dataset = masked_eval_dataset(token_lists, tokenizer, max_seq_length, batch_size, seed + 1, whole_words)
    return DistillationData(stream, eval_dataset, count, len(token_lists), source)


# ---- measuring ----------------------------------------------------------------------------


def masked_agreement(teacher, student, dataset):
    """Top-1 agreement of `student` with `teacher` on the masked tokens of `dataset` (batches
    `(x, {"mask_labels"})`), and each model's accuracy against the original tokens."""
    agree = total = teacher_right = student_right = 0
    for x, y in (dataset.as_numpy_iterator() if hasattr(dataset, "as_numpy_iterator") else dataset):
        labels = y["mask_labels"] if isinstance(y, dict) else y
        t = np.asarray(compiled_predict(teacher)(x)).argmax(-1)
        s = np.asarray(compiled_predict(student)(x)).argmax(-1)
        real = labels >= 0
        agree += int((t == s)[real].sum())
        teacher_right += int((t == labels)[real].sum())
        student_right += int((s == labels)[real].sum())
        total += int(real.sum())
    n = max(total, 1)
    return {"agreement": agree / n, "teacher_accuracy": teacher_right / n, "student_accuracy": student_right / n,
            "masked_tokens": total}


def _evaluate_terms(distiller, dataset):
    if not TENSORFLOW:  # (x, y) batches into the 1-tuples the loss step reads
        dataset = LabelsInInputs.wrap(dataset)
    result = distiller.evaluate(dataset, verbose=0, return_dict=True)
    return {k: round(float(v), 6) for k, v in result.items()}


def _where(path):
    path = os.fspath(path)
    return path if "://" in path else os.path.abspath(path)


def _count(model):
    return int(sum(np.prod(w.shape) for w in model.weights))


def method_defaults(method, hp):
    """`hp` with the method's warmup and masking (`DISTILL_METHODS`) where it gives none."""
    spec = DISTILL_METHODS[method]
    return dataclasses.replace(hp, **{name: spec[name] for name in ("warmup_ratio", "masking")
                                      if getattr(hp, name) is None})


def run_distill(method, teacher, student_config, corpus_files, output, hp=None, *, eval_corpus=None,
                records_dir=None, strategy=None, checkpoint_dir=None, make_data=None, verbose=1, log=print,
                overwrite=False, **hyperparameters):
    """Distil a student from `teacher` (a handle of a checkpoint with an MLM head) on
    `corpus_files` with `method`; write the student preset (backbone, tokenizer, MaskedLM
    task) and metrics.json to `output`; return the metrics.

    `student_config`: changes to the teacher's backbone config (dict, JSON file or inline
    JSON). `hp`: a `DistillHyperparameters` (default: its defaults), changed by any of its
    fields given as keywords (`steps=1000`): `layer_map` g(l) for each student layer ("2,4,6"
    or a list), `warmup_ratio`, `masking` "wwm" (whole words) or "token" (None: the method's,
    `DISTILL_METHODS`). `strategy`: a
    `ResolvedStrategy` or tf.distribute strategy (default: the current one); the models are
    built and compiled in its scope. Corpora are packed in `records_dir` (TFRecords on
    TensorFlow, NumPy shards on JAX and PyTorch; default OUTPUT.records, removed after a
    successful run). Every `checkpoint_every` steps a
    checkpoint goes to `checkpoint_dir` (default OUTPUT.checkpoints); a rerun resumes from it.
    The metrics hold every loss term averaged over each `log_every` steps (`loss_curves`,
    first and last in `loss`) and on the evaluation batches before and after (`eval_loss`).
    `make_data(tokenizer, corpus_files, max_seq_length=, batch_size=, seed=, records_dir=,
    eval_corpus=, whole_words=, log=)` -> `DistillationData` replaces the corpus reading
    (default: `pretraining_data`). Agreement with the teacher is measured on `eval_corpus`
    (held-out text files) when given. An earlier biozoo output at `output` is replaced only with
    `overwrite`.

    Example:
        >>> run_distill("compact", "biobert_v1_1", {"num_layers": 6}, ["pubmed.txt"], "compact-biobert",
        ...             steps=100000, batch_size=192)
    """
    hp = dataclasses.replace(hp or DistillHyperparameters(), **hyperparameters)
    if method not in DISTILL_METHODS:
        raise BiozooError(f"unknown distillation method {method!r}; choose one of {', '.join(DISTILL_METHODS)}")
    hp = method_defaults(method, hp)
    if hp.masking not in ("wwm", "token"):
        raise BiozooError(f"masking must be 'wwm' or 'token', got {hp.masking!r}")
    check_values([("--steps", hp.steps, "whole"), ("--batch-size", hp.batch_size, "whole"),
                  ("--learning-rate", hp.learning_rate, "positive"), ("--max-seq-length", hp.max_seq_length, "whole"),
                  ("--warmup-ratio", hp.warmup_ratio, "fraction"), ("--temperature", hp.temperature, "positive"),
                  ("--clip-norm", hp.clip_norm, "non-negative"),
                  ("--checkpoint-every", hp.checkpoint_every, "whole")], BiozooError)
    output = os.fspath(output)
    run = TrainingRun(output, strategy, batch_size=hp.batch_size, error=BiozooError,
                      checkpoint_dir=checkpoint_dir or (output + ".checkpoints" if hp.checkpoint_every else None),
                      overwrite=overwrite, inputs=[teacher, *corpus_files, *(eval_corpus or [])])
    records_dir = run.scratch(records_dir, ".records")
    changes = read_student_config(student_config)
    presets.resolve_preset(teacher)  # converted (and cached) before seeding: a first run draws what later ones do
    run.seed(hp.seed)
    tokenizer = Tokenizer.from_preset(teacher)
    data = (make_data or pretraining_data)(
        tokenizer, list(corpus_files), max_seq_length=hp.max_seq_length, batch_size=hp.batch_size, seed=hp.seed,
        records_dir=records_dir, eval_corpus=eval_corpus, whole_words=hp.masking == "wwm", log=log)
    log_every = hp.log_every or max(1, hp.steps // 20)
    models = _build_models(run, method, teacher, changes, hp, log_every)
    distiller, teacher_task, student = models.distiller, models.teacher, models.student

    log(f"distilling ({method}) a {_count(teacher_task.backbone):,}-parameter teacher into a "
        f"{_count(student.backbone):,}-parameter student: {len(models.layer_map)} layers, g = {models.layer_map}, "
        f"from the teacher: embeddings {'yes' if models.copied['embeddings'] else 'no'}, layers "
        f"{list(models.copied['layers']) or 'none'}; {hp.steps} steps of global batch {hp.batch_size} over "
        f"{data.train_instances} instances; {run.strategy.describe()}")
    initial = eval_before = None
    if data.eval_dataset is not None:
        initial = masked_agreement(teacher_task, student, data.eval_dataset)
        eval_before = _evaluate_terms(distiller, data.eval_dataset)
    result = run.train(distiller, data.stream, hp.steps, checkpoint_every=hp.checkpoint_every, verbose=verbose,
                       log=log, settings=resume_settings(hp, method=method, teacher=str(teacher), student=changes,
                                                corpus=list(corpus_files)))
    curves = distiller.loss_curves(hp.steps)

    copied = models.copied
    metrics = {
        "method": method,
        "teacher": str(teacher),
        "student_config": changes,
        "layer_map": models.layer_map,
        "initialized_from_teacher": {"embeddings": copied["embeddings"], "mlm_head": copied["mlm_head"],
                                     "layers": {str(k): v for k, v in copied["layers"].items()}},
        "parameters": {"teacher": _count(teacher_task.backbone), "student": _count(student.backbone)},
        "corpus": [_where(f) for f in corpus_files],
        "train_instances": data.train_instances,
        "steps": hp.steps,
        "resumed_from": result["resumed_from"],
        "batch_size": hp.batch_size,
        "max_seq_length": hp.max_seq_length,
        "masking": hp.masking,
        "learning_rate": hp.learning_rate,
        "warmup_ratio": hp.warmup_ratio,
        "clip_norm": hp.clip_norm,
        "temperature": distiller.temperature,
        "loss_weights": distiller.loss_weights,
        "seed": hp.seed,
        **run.placement(),
        "train_seconds": round(result["seconds"], 1),
        "train_examples_per_second": examples_per_second(max(1, hp.steps - result["resumed_from"]), hp.batch_size,
                                                         result["seconds"]),
        "log_every": log_every,
        # every loss term averaged over the first and the last `log_every` training steps
        "loss": {name: {"first": round(values[0], 6), "last": round(values[-1], 6)}
                 for name, values in curves.items() if values},
    }
    if data.eval_dataset is not None:
        metrics.update(_held_out_metrics(run, models, data, initial, eval_before, log))
    metrics["loss_curves"] = {name: [round(v, 6) for v in values] for name, values in curves.items()}
    if not run.chief:
        return metrics

    def save(directory):
        student.save_to_preset(directory)
        tokenizer.save_to_preset(directory)

    run.write(save, {METRICS_FILE: metrics})
    return metrics


@dataclasses.dataclass
class _Models:
    teacher: object
    student: object
    distiller: object
    layer_map: list
    copied: dict
    student_backbone: object  # (class, config): a fresh student for the random-student baseline


def _build_models(run, method, teacher, changes, hp, log_every):
    """Teacher, student (initialised from the teacher where shapes agree) and the compiled
    distiller, built in the run's strategy scope."""
    with run.scope():
        teacher_task = MaskedLM.from_preset(teacher)
        limit = teacher_task.backbone.get_config().get("max_sequence_length")
        if limit and hp.max_seq_length > limit:
            raise BiozooError(f"--max-seq-length {hp.max_seq_length} exceeds the {limit} positions of {teacher}.")
        config = student_backbone_config(teacher_task.backbone, changes)
        backbone_cls = type(teacher_task.backbone)
        student = MaskedLM(backbone=backbone_cls.from_config(config))
        t_layers = len(teacher_task.backbone.transformer_layers)
        g = parse_layer_map(hp.layer_map, len(student.backbone.transformer_layers), t_layers,
                            DISTILL_METHODS[method]["layer_map"])
        copied = initialize_student(student, teacher_task, g)
        distiller = Distiller(teacher_task, student, method, layer_map=g, temperature=hp.temperature,
                              loss_weights=hp.loss_weights, layer_weights=hp.layer_weights, total_steps=hp.steps,
                              log_every=log_every)
        decay = DISTILL_METHODS[method]["weight_decay"] if hp.weight_decay is None else hp.weight_decay
        distiller.compile(optimizer=adamw(hp.learning_rate, hp.steps, hp.warmup_ratio, decay, hp.clip_norm),
                          jit_compile=run.jit("auto"))
    return _Models(teacher_task, student, distiller, g, copied, (backbone_cls, config))


def _held_out_metrics(run, models, data, initial, eval_before, log):
    """Agreement with the teacher and accuracy on the held-out masked tokens (distilled, at
    initialisation, a random student) and the loss terms before and after training."""
    # no re-seeding here: tf.random.set_seed drops SentencePiece's TF resource (the tokenizer)
    backbone_cls, config = models.student_backbone
    with run.scope():
        random_student = MaskedLM(backbone=backbone_cls.from_config(config))
    final = masked_agreement(models.teacher, models.student, data.eval_dataset)
    random = masked_agreement(models.teacher, random_student, data.eval_dataset)
    eval_after = _evaluate_terms(models.distiller, data.eval_dataset)
    log(f"masked tokens ({final['masked_tokens']}): top-1 agreement with the teacher {final['agreement']:.3f} "
        f"(at initialisation {initial['agreement']:.3f}, random student {random['agreement']:.3f})")
    return {
        "eval_source": data.eval_source,
        "eval_masked_tokens": final["masked_tokens"],
        "eval_loss": {term: {"before": eval_before[term], "after": eval_after[term]} for term in eval_after},
        "agreement": {"distilled": final["agreement"], "initial": initial["agreement"], "random": random["agreement"]},
        "masked_accuracy": {"teacher": final["teacher_accuracy"], "distilled": final["student_accuracy"],
                            "initial": initial["student_accuracy"], "random": random["student_accuracy"]},
    }
