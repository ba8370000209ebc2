"""Pretraining behind `biozoo pretrain mlm|electra`: masked language modelling (whole-word
masking, optional NSP / SOP) and ELECTRA replaced-token detection, from scratch or continued
from a preset (as BioM-ALBERT-xxlarge-PMC continued BioM-ALBERT-xxlarge on PMC).

Where the model starts:

* `preset=P`: P's weights, heads and tokenizer (continued pretraining). For ELECTRA, P is the
  discriminator; its generator comes from `generator=G`, from `P/generator` (what this
  command writes), or is new.
* `config=C` (a JSON file or dict: {"family": "bert", "num_layers": 2, ...}, the backbone's
  constructor arguments; `vocabulary_size` defaults to the tokenizer's): fresh weights, with
  the tokenizer of `tokenizer=T`, or of `preset` when no `tokenizer` is given.

It runs on every Keras backend. Corpora are packed (see `biozoo.data.pretraining`) in
`records_dir` (default `OUTPUT.records`, removed after a successful run) and masked dynamically
as they are read: TFRecords and tf.data under TensorFlow (`biozoo.data.tf_pretraining`), NumPy
shards and batches under JAX and PyTorch.
OUTPUT is written atomically as a Keras preset: for MLM the `biozoo.MaskedLM` task (so
`biozoo.from_preset(OUTPUT)` gives the backbone, `biozoo.MaskedLM.from_preset(OUTPUT)` the
task), for ELECTRA the discriminator as a `biozoo.ReplacedTokenDetector` task with the generator
as a `MaskedLM` preset in OUTPUT/generator; the tokenizer, the heads in `heads.safetensors`
and metrics.json go with them.

Example:
    >>> metrics = run_pretrain("mlm", ["pmc.txt"], "out/pmc", preset="biom_albert_xxlarge",
    ...                        sentence_task="sop", steps=1000)
    >>> metrics["loss_first"], metrics["loss_last"]

The command line (`biozoo pretrain`) is in `biozoo._commands.train`.
"""

from __future__ import annotations

import dataclasses
import os

import keras
import numpy as np

from biozoo import presets
from biozoo._io import atomic_write_json, read_json
from biozoo.api import Tokenizer
from biozoo.data import IGNORE_LABEL
from biozoo.data.pretraining import MaskedBatches, count_instances, write_instance_shards
from biozoo.errors import CheckpointError
from biozoo.models import FAMILIES, family_for_backbone, get_family, run_layers
from biozoo.models.electra.backbone import ElectraBackbone
from biozoo.optim import adamw
from biozoo.preset_files import (
    HEADS_CONFIG_FILE,
    HEADS_FILE,
    METRICS_FILE,
    PROVENANCE_FILE,
    read_heads,
    save_safetensors,
)
from biozoo.tasks.pretraining import MaskedLM, MaskedLMHead, ReplacedTokenDetector
from biozoo.train import PRETRAIN_METHODS
from biozoo.train.hyperparameters import PretrainHyperparameters
from biozoo.train.loss_history import LabelsInInputs, LossHistoryStep, freeze_unused_pooler
from biozoo.train.run import TrainingRun, check_values, examples_per_second, resume_settings

# What ELECTRA's generator shares with a discriminator (a family with `electra_discriminator`):
# token + position + segment embeddings, then a LayerNorm (ALBERT adds its projection after them).
SHARED_EMBEDDINGS = ("token_embedding", "position_embedding", "segment_embedding", "embeddings_layer_norm")


# ---- models -----------------------------------------------------------------------------


def _electra_discriminator(backbone):
    try:
        return family_for_backbone(backbone).electra_discriminator
    except CheckpointError:  # not a biozoo backbone
        return False


def _electra_discriminators():
    return ", ".join(f.backbone_cls.__name__ for f in FAMILIES.values() if f.electra_discriminator)


def _masked_cross_entropy(labels, logits):
    """Mean cross-entropy over the positions whose label is not IGNORE_LABEL."""
    weights = keras.ops.cast(keras.ops.not_equal(labels, IGNORE_LABEL), "float32")
    losses = keras.losses.sparse_categorical_crossentropy(keras.ops.maximum(labels, 0), logits, from_logits=True)
    return keras.ops.sum(losses * weights) / keras.ops.maximum(keras.ops.sum(weights), 1.0)


class _Pretrainer(LossHistoryStep, keras.Model):
    """Shared by both objectives: loss trackers, the gradient step and the loss history of
    `biozoo.train.loss_history.LossHistoryStep`; a subclass computes the losses of a batch
    `(x, y)` in `_pretraining_losses`."""

    def step_losses(self, data, training):
        x, y = data
        return self._pretraining_losses(x, y, training=training)


class MaskedLMPretrainer(_Pretrainer):
    """MLM (+ NSP or SOP) training of a `biozoo.MaskedLM` task.

    Batches are masked `(x, y)` batches (`biozoo.data.pretraining.MaskedBatches`;
    `biozoo.data.tf_pretraining.masked_dataset` on TensorFlow). The sentence head is a Dense(2)
    on the backbone's pooled output.

    Example:
        >>> trainer = MaskedLMPretrainer(biozoo.MaskedLM.from_preset("bioformer_8l"), "nsp")
        >>> trainer.compile(optimizer=adamw(1e-4, 1000)); trainer.fit(batches, steps_per_epoch=1000)
    """

    def __init__(self, task, sentence_task=None, sentence_head_weights=None, total_steps=None, log_every=1,
                 **kwargs):
        super().__init__(**kwargs)
        self.task = task
        self.sentence_task = sentence_task
        self.sentence_head = None
        if sentence_task:
            if "pooled_output" not in task.backbone.output:
                raise ValueError(f"--{sentence_task} needs a backbone with a pooler; "
                                 f"{type(task.backbone).__name__} has none here.")
            self.sentence_head = keras.layers.Dense(2, kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=task.backbone.get_config().get("initializer_range", 0.02)),
                dtype=task.backbone.dtype_policy, name=f"{sentence_task}_head")
            self.sentence_head.build((None, task.backbone.hidden_dim))
            if sentence_head_weights is not None:
                self.sentence_head.set_weights(sentence_head_weights)
        else:
            freeze_unused_pooler(task.backbone)
        tracked = ("loss", "mlm_loss", "sentence_loss") if sentence_task else ("loss",)
        self.init_loss_history(tracked, total_steps, log_every)
        self.built = True

    def _pretraining_losses(self, x, y, training):
        backbone = self.task.backbone
        outputs = backbone({k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")}, training=training)
        hidden = outputs["sequence_output"]
        gathered = keras.ops.take_along_axis(hidden, keras.ops.expand_dims(x["mask_positions"], -1), axis=1)
        logits = keras.ops.cast(self.task.mlm_head(gathered), "float32")
        losses = {"mlm_loss": _masked_cross_entropy(y["mask_labels"], logits)}
        if self.sentence_head is not None:
            sentence_logits = keras.ops.cast(self.sentence_head(outputs["pooled_output"]), "float32")
            losses["sentence_loss"] = keras.ops.mean(keras.losses.sparse_categorical_crossentropy(
                y["sentence_label"], sentence_logits, from_logits=True))
        losses["loss"] = sum(losses.values())
        return losses

    def heads(self):
        """The task's head variables by converted-heads name (`mlm/...`, `nsp/...` or `sop/...`)."""
        head = self.task.mlm_head
        out = {
            "mlm/dense/kernel": head.dense.kernel, "mlm/dense/bias": head.dense.bias,
            "mlm/layer_norm/gamma": head.layer_norm.gamma, "mlm/layer_norm/beta": head.layer_norm.beta,
            "mlm/output_bias": head.output_bias,
        }
        if head.extra_output_kernel is not None:
            out["mlm/extra_output_kernel"] = head.extra_output_kernel
        if self.sentence_head is not None:
            out[f"{self.sentence_task}/dense/kernel"] = self.sentence_head.kernel
            out[f"{self.sentence_task}/dense/bias"] = self.sentence_head.bias
        return out


def generator_config(discriminator, fraction):
    """ELECTRA generator (an ElectraBackbone) for `discriminator`: the same depth, embedding
    size and positions, `fraction` of its hidden size, heads and feed-forward size."""
    config = discriminator.get_config()
    embedding_dim = discriminator.token_embedding.embeddings.shape[-1]
    hidden = max(1, int(round(config["hidden_dim"] * fraction)))
    heads = max(1, int(round(config["num_heads"] * fraction)))
    while hidden % heads:
        heads -= 1
    return {
        "vocabulary_size": config["vocabulary_size"],
        "num_layers": config["num_layers"],
        "num_heads": heads,
        "hidden_dim": hidden,
        "embedding_dim": embedding_dim,
        "intermediate_dim": max(1, int(round(config["intermediate_dim"] * fraction))),
        "activation": config.get("activation", "gelu"),
        "layer_norm_epsilon": config.get("layer_norm_epsilon", 1e-12),
        "dropout": config.get("dropout", 0.1),
        "max_sequence_length": config["max_sequence_length"],
        "num_segments": config["num_segments"],
        "initializer_range": config.get("initializer_range", 0.02),
    }


class ElectraPretrainer(_Pretrainer):
    """ELECTRA: a small generator fills the masked positions with samples from its MLM
    softmax; the discriminator (`ReplacedTokenDetector`) tells replaced tokens from original
    ones. The generator reads the discriminator's token, position and segment embeddings and
    embedding LayerNorm (tied, as ELECTRA) and ties its output layer to the same token
    embedding. loss = generator MLM loss + `rtd_weight` * discriminator BCE (non-pad tokens).
    A sample equal to the original token counts as original.

    Example:
        >>> rtd = biozoo.ReplacedTokenDetector.from_preset("biom_electra_base_discriminator")
        >>> generator = ElectraBackbone(**generator_config(rtd.backbone, 0.25))
        >>> trainer = ElectraPretrainer(rtd, generator)
    """

    def __init__(self, discriminator, generator, generator_head_weights=None, rtd_weight=50.0, seed=None,
                 total_steps=None, log_every=1, **kwargs):
        super().__init__(**kwargs)
        backbone = discriminator.backbone
        if not _electra_discriminator(backbone):
            raise ValueError(f"ELECTRA pretraining shares the embeddings of a {_electra_discriminators()}; "
                             f"{type(backbone).__name__} is not one of them.")
        embed = backbone.token_embedding.embeddings.shape
        for name in SHARED_EMBEDDINGS:
            ours = [tuple(w.shape) for w in getattr(backbone, name).weights]
            theirs = [tuple(w.shape) for w in getattr(generator, name).weights]
            if ours != theirs:
                raise ValueError(f"the generator's {name} {theirs} differs from the discriminator's {ours}: "
                                 "they cannot be shared.")
        self.discriminator = discriminator
        self.generator = generator
        for name in SHARED_EMBEDDINGS:  # the generator's own copies are unused while training
            getattr(generator, name).trainable = False
        freeze_unused_pooler(backbone)
        self.generator_head = MaskedLMHead(
            backbone.token_embedding, units=embed[-1], activation="gelu",
            layer_norm_epsilon=generator.layer_norm_epsilon, dtype=generator.dtype_policy, name="generator_head")
        self.generator_head.build((None, None, generator.hidden_dim))
        if generator_head_weights is not None:
            self.generator_head.set_weights(generator_head_weights)
        self.rtd_weight = float(rtd_weight)
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.init_loss_history(("loss", "generator_loss", "discriminator_loss"), total_steps, log_every)
        self.built = True

    def generator_logits(self, x, training=False):
        """Generator MLM logits [batch, masks, vocabulary] at `x["mask_positions"]`."""
        shared, g = self.discriminator.backbone, self.generator
        tokens = shared.token_embedding(x["token_ids"])
        h = tokens + shared.position_embedding(tokens) + shared.segment_embedding(x["segment_ids"])
        h = shared.embeddings_layer_norm(h)
        h = g.embeddings_dropout(h, training=training)
        if g.embeddings_projection is not None:
            h = g.embeddings_projection(h)
        h = run_layers(g.transformer_layers, h, x["padding_mask"], None, training)
        h = keras.ops.take_along_axis(h, keras.ops.expand_dims(x["mask_positions"], -1), axis=1)
        return keras.ops.cast(self.generator_head(h), "float32")

    def _pretraining_losses(self, x, y, training):
        ops = keras.ops
        labels = y["mask_labels"]
        logits = self.generator_logits(x, training=training)
        generator_loss = _masked_cross_entropy(labels, logits)
        sampled = keras.random.categorical(ops.reshape(ops.stop_gradient(logits), (-1, logits.shape[-1])), 1,
                                           seed=self.seed_generator, dtype="int32")
        sampled = ops.reshape(sampled, ops.shape(labels))
        # scatter the samples and the original ids back to their positions
        weights = ops.cast(ops.not_equal(labels, IGNORE_LABEL), "int32")
        at = ops.one_hot(x["mask_positions"], ops.shape(x["token_ids"])[1], dtype="int32") * weights[..., None]
        replaced = ops.max(at, axis=1) > 0  # at: [batch, masks, sequence]
        token_ids = ops.cast(x["token_ids"], "int32")
        fake = ops.where(replaced, ops.sum(at * sampled[..., None], axis=1), token_ids)
        original = ops.where(replaced, ops.sum(at * ops.maximum(labels, 0)[..., None], axis=1), token_ids)
        targets = ops.cast(ops.not_equal(fake, original), "float32")
        inputs = {"token_ids": fake, "segment_ids": x["segment_ids"], "padding_mask": x["padding_mask"]}
        rtd_logits = ops.cast(self.discriminator(inputs, training=training), "float32")
        mask = ops.cast(x["padding_mask"], "float32")
        bce = ops.binary_crossentropy(targets, rtd_logits, from_logits=True)
        discriminator_loss = ops.sum(bce * mask) / ops.maximum(ops.sum(mask), 1.0)
        return {"loss": generator_loss + self.rtd_weight * discriminator_loss,
                "generator_loss": generator_loss, "discriminator_loss": discriminator_loss}

    def generator_task(self):
        """The generator as a standalone `MaskedLM` (embeddings and head copied in)."""
        shared = self.discriminator.backbone
        for name in SHARED_EMBEDDINGS:
            for target, source in zip(getattr(self.generator, name).weights, getattr(shared, name).weights):
                target.assign(source)
        task = MaskedLM(self.generator)
        task.mlm_head.set_weights(self.generator_head.get_weights())
        return task

    def heads(self):
        """The discriminator's head variables by converted-heads name (`rtd/...`)."""
        return {
            "rtd/dense/kernel": self.discriminator.rtd_dense.kernel, "rtd/dense/bias": self.discriminator.rtd_dense.bias,
            "rtd/output/kernel": self.discriminator.rtd_output.kernel, "rtd/output/bias": self.discriminator.rtd_output.bias,
        }


# ---- building ---------------------------------------------------------------------------


def load_config(config):
    """A backbone config: a dict, or the path of a JSON file holding one."""
    if isinstance(config, dict):
        return dict(config)

    return read_json(os.fspath(config), "backbone config")


def backbone_from_config(config, tokenizer):
    """A freshly initialised backbone from {"family": ..., constructor arguments}."""
    config = load_config(config)
    if "family" not in config:
        raise ValueError(f'the backbone config needs a "family" ({", ".join(FAMILIES)}) beside the backbone\'s '
                         'constructor arguments.')
    family = get_family(config.pop("family"))
    config.setdefault("vocabulary_size", tokenizer.vocabulary_size())
    try:
        return family.backbone_cls(**config)
    except TypeError as error:
        raise ValueError(f"backbone config for {family.name}: {error}") from None


def _sentence_head_weights(preset, sentence_task):
    heads, _ = read_heads(presets.resolve_preset(preset))
    key = f"{sentence_task}/dense/"
    if key + "kernel" in heads:
        return [heads[key + "kernel"], heads[key + "bias"]]
    return None


def _generator_source(preset, generator):
    if generator is not None:
        return generator
    if preset is None:
        return None

    candidate = os.path.join(presets.resolve_preset(preset), "generator")
    return candidate if os.path.exists(os.path.join(candidate, "config.json")) else None


def build_pretrainer(method, tokenizer, preset=None, config=None, sentence_task=None, generator=None,
                     generator_fraction=0.25, rtd_weight=50.0, seed=42, total_steps=None, log_every=1):
    """The `MaskedLMPretrainer` or `ElectraPretrainer` (build it inside `strategy.scope()`);
    `total_steps` sizes its loss history (none without)."""
    if method == "mlm":
        if config is not None:
            task = MaskedLM(backbone_from_config(config, tokenizer))
            head_weights = None
        else:
            task = MaskedLM.from_preset(preset)
            head_weights = _sentence_head_weights(preset, sentence_task) if sentence_task else None
        backbone = task.backbone
        trainer = MaskedLMPretrainer(task, sentence_task, head_weights, total_steps, log_every, name="mlm_pretrainer")
    elif method == "electra":
        if sentence_task:
            raise ValueError("ELECTRA has no sentence task: --nsp / --sop are for mlm.")
        if config is not None:
            discriminator = ReplacedTokenDetector(backbone_from_config(config, tokenizer))
        else:
            discriminator = ReplacedTokenDetector.from_preset(preset)
        backbone = discriminator.backbone
        source = _generator_source(preset, generator) if config is None else generator
        head_weights = None
        if source is not None:
            generator_task = MaskedLM.from_preset(source)
            if not isinstance(generator_task.backbone, ElectraBackbone):
                raise ValueError(f"{source}: the generator must be an ELECTRA model, "
                                 f"not {type(generator_task.backbone).__name__}.")
            generator_backbone = generator_task.backbone
            head_weights = generator_task.mlm_head.get_weights()
        else:
            if not _electra_discriminator(backbone):
                raise ValueError(f"ELECTRA pretraining needs a {_electra_discriminators()} discriminator "
                                 f"(its embeddings are shared with the generator); got {type(backbone).__name__}.")
            generator_backbone = ElectraBackbone(**generator_config(backbone, generator_fraction),
                                                 dtype=backbone.dtype_policy)
        trainer = ElectraPretrainer(discriminator, generator_backbone, head_weights, rtd_weight, seed, total_steps,
                                    log_every, name="electra_pretrainer")
    else:
        raise ValueError(f"unknown pretraining method {method!r}; choose mlm or electra.")
    vocabulary = tokenizer.vocabulary_size()
    if vocabulary > backbone.vocabulary_size:
        raise ValueError(f"the tokenizer has {vocabulary} tokens but the model's embedding only "
                         f"{backbone.vocabulary_size} rows.")
    return trainer


# ---- the driver -------------------------------------------------------------------------


def run_pretrain(method, corpus_files, output, hp=None, *, preset=None, config=None, tokenizer=None, generator=None,
                 strategy=None, records_dir=None, checkpoint_dir=None, verbose=1, log=print, overwrite=False,
                 **hyperparameters):
    """Pretrain with `method` ("mlm" or "electra") on plain-text `corpus_files`; write the
    preset and metrics.json to `output`; return the metrics.

    `preset` gives the starting weights and tokenizer; with `config` (JSON path or dict) the
    model starts from scratch with the tokenizer of `tokenizer` (default: `preset`). `hp`: a
    `PretrainHyperparameters` (default: its defaults), changed by any of its fields given as
    keywords (`steps=1000`): `batch_size` is global (split over the strategy's replicas),
    `masking` "wwm" (whole words) or "token", `sentence_task` None, "nsp" or "sop" (mlm only).
    Every `checkpoint_every` steps a checkpoint goes to `checkpoint_dir` (default
    OUTPUT.checkpoints); a rerun resumes from it. Corpora are packed into `records_dir`
    (default OUTPUT.records, removed after a successful run). The metrics hold the loss
    averaged over every `log_every` steps (`losses`, and per part for ELECTRA and sentence
    tasks) with their first and last values. An earlier biozoo output at `output` is replaced
    only with `overwrite`.

    Example:
        >>> run_pretrain("electra", ["pubmed.txt"], "out/electra", config="small.json",
        ...              tokenizer="biom_electra_base_discriminator", steps=10000)
    """
    hp = dataclasses.replace(hp or PretrainHyperparameters(), **hyperparameters)
    _check_arguments(method, hp, preset, config, tokenizer)
    corpus_files = [os.fspath(f) for f in corpus_files]
    output = os.fspath(output)
    run = TrainingRun(output, strategy, batch_size=hp.batch_size,
                      checkpoint_dir=checkpoint_dir or (output + ".checkpoints" if hp.checkpoint_every else None),
                      overwrite=overwrite, inputs=[preset, generator, *corpus_files])
    tokenizer_handle = tokenizer if tokenizer is not None else preset
    tok = Tokenizer.from_preset(tokenizer_handle)
    for handle in (preset, generator):  # converted (and cached) before seeding: a first run draws what later ones do
        if handle is not None:
            presets.resolve_preset(handle)
    run.seed(hp.seed)
    every = hp.log_every or max(1, hp.steps // 100)
    with run.scope():
        trainer = build_pretrainer(method, tok, preset, config, hp.sentence_task, generator, hp.generator_fraction,
                                   hp.rtd_weight, hp.seed, hp.steps, every)
        backbone = trainer.task.backbone if method == "mlm" else trainer.discriminator.backbone
        limit = backbone.get_config().get("max_sequence_length")
        if limit and hp.max_seq_length > limit:
            raise ValueError(f"--max-seq-length {hp.max_seq_length} exceeds the model's {limit} positions.")
        trainer.compile(optimizer=adamw(hp.learning_rate, hp.steps, hp.warmup_ratio, hp.weight_decay,
                                        hp.clip_norm),
                        jit_compile=run.jit(hp.jit_compile))

    records_dir = run.scratch(records_dir, ".records")
    batches, instances = _masked_batches(run, corpus_files, tok, records_dir, hp, log, method)
    log(f"pretraining {method} ({hp.masking}{', ' + hp.sentence_task if hp.sentence_task else ''}) on {instances} "
        f"instances: {hp.steps} steps of batch {hp.batch_size}")
    result = run.train(trainer, batches, hp.steps, checkpoint_every=hp.checkpoint_every, verbose=verbose, log=log,
                       settings=resume_settings(hp, method=method, preset=preset,
                                                config=None if config is None else load_config(config),
                                                tokenizer=tokenizer_handle, corpus=corpus_files))

    metrics = {
        "method": method,
        "preset": None if preset is None else os.fspath(preset),
        "config": None if config is None else (config if isinstance(config, dict) else os.fspath(config)),
        "tokenizer": os.fspath(tokenizer_handle),
        "corpus": corpus_files,
        "instances": instances,
        "masking": hp.masking,
        "sentence_task": hp.sentence_task,
        "hyperparameters": {
            "steps": hp.steps, "batch_size": hp.batch_size, "max_seq_length": hp.max_seq_length,
            "learning_rate": hp.learning_rate, "warmup_ratio": hp.warmup_ratio, "weight_decay": hp.weight_decay,
            "clip_norm": hp.clip_norm, "mask_rate": hp.mask_rate, "seed": hp.seed,
        },
        **run.placement(),
        "resumed_from": result["resumed_from"],
        "train_seconds": round(result["seconds"], 1),
        "train_examples_per_second": examples_per_second(max(1, hp.steps - result["resumed_from"]), hp.batch_size,
                                                         result["seconds"]),
        "log_every": every,
    }
    if method == "electra":
        metrics["hyperparameters"].update({"generator_fraction": hp.generator_fraction, "rtd_weight": hp.rtd_weight})
        metrics["generator"] = {k: v for k, v in trainer.generator.get_config().items()
                                if k in ("num_layers", "num_heads", "hidden_dim", "embedding_dim", "intermediate_dim")}
    for name, values in trainer.loss_curves(hp.steps).items():
        key = name + "es"  # loss -> losses, generator_loss -> generator_losses
        metrics[key] = [round(v, 5) for v in values]
        if values:
            metrics[name + "_first"] = metrics[key][0]
            metrics[name + "_last"] = metrics[key][-1]

    if run.chief:
        run.write(lambda directory: save_pretrained(trainer, method, tok, directory, metrics),
                  {METRICS_FILE: metrics})
    return metrics


def _masked_batches(run, corpus_files, tokenizer, records_dir, hp, log, method="mlm"):
    """The corpora packed into `records_dir`, as the run's backend reads them: a function of the
    start step giving a tf.data stream (TensorFlow), or an object whose `batches_from(step)`
    gives `((x, y),)` NumPy batches (JAX, PyTorch: see `biozoo.train.loss_history`); and the
    number of instances."""
    whole_words = hp.masking == "wwm"
    replacement = PRETRAIN_METHODS[method]["replacement"]
    if run.tensorflow:
        from biozoo.data.tf_pretraining import count_records, masked_dataset, write_pretraining_records

        files = write_pretraining_records(corpus_files, tokenizer, records_dir, hp.max_seq_length, hp.sentence_task,
                                          hp.seed, hp.short_seq_prob, hp.dupe_factor, log=log)

        def stream(start_step):
            return masked_dataset(files, tokenizer, hp.max_seq_length, hp.batch_size, hp.sentence_task, hp.seed,
                                  start_step, whole_words=whole_words, mask_rate=hp.mask_rate, replacement=replacement)

        return stream, count_records(records_dir)
    prefixes = write_instance_shards(corpus_files, tokenizer, records_dir, hp.max_seq_length, hp.sentence_task,
                                     hp.seed, hp.short_seq_prob, hp.dupe_factor, log=log)
    data = MaskedBatches(prefixes, tokenizer, hp.max_seq_length, hp.batch_size, hp.sentence_task, hp.seed,
                         whole_words=whole_words, mask_rate=hp.mask_rate, replacement=replacement)
    return LabelsInInputs(data), count_instances(records_dir)


def _check_arguments(method, hp, preset, config, tokenizer):
    if method not in PRETRAIN_METHODS:
        raise ValueError(f"unknown pretraining method {method!r}; choose {' or '.join(PRETRAIN_METHODS)}.")
    if hp.masking not in ("wwm", "token"):
        raise ValueError(f"masking must be 'wwm' or 'token', got {hp.masking!r}")
    if preset is None and config is None:
        raise ValueError("give a --preset to continue pretraining, or a --config (with --tokenizer) to start "
                         "from scratch.")
    if config is not None and preset is None and tokenizer is None:
        raise ValueError("--config trains from scratch and needs a tokenizer: give --tokenizer (or --preset).")

    check_values([("--steps", hp.steps, "whole"), ("--batch-size", hp.batch_size, "whole"),
                  ("--learning-rate", hp.learning_rate, "positive"), ("--max-seq-length", hp.max_seq_length, "whole"),
                  ("--warmup-ratio", hp.warmup_ratio, "fraction"), ("--weight-decay", hp.weight_decay, "non-negative"),
                  ("--clip-norm", hp.clip_norm, "non-negative"), ("--generator-fraction", hp.generator_fraction, "decay"), ("--rtd-weight", hp.rtd_weight, "positive"),
                  ("--dupe-factor", hp.dupe_factor, "whole"), ("--checkpoint-every", hp.checkpoint_every, "whole")])


def save_pretrained(trainer, method, tokenizer, directory, metrics):
    """Write the trained model into `directory` as a Keras preset: the MaskedLM task (mlm) or
    the discriminator with its generator in `directory`/generator (electra), the tokenizer,
    the heads (heads.safetensors, heads.json) and the provenance record."""
    heads = {k: np.asarray(keras.ops.convert_to_numpy(v)) for k, v in trainer.heads().items()}
    if method == "mlm":
        trainer.task.save_to_preset(directory)
    else:
        trainer.discriminator.save_to_preset(directory)
        trainer.generator_task().save_to_preset(os.path.join(directory, "generator"))
        tokenizer.save_to_preset(os.path.join(directory, "generator"))
    tokenizer.save_to_preset(directory)
    save_safetensors({k: np.ascontiguousarray(v) for k, v in heads.items()}, os.path.join(directory, HEADS_FILE))
    heads_config = {name: {} for name in sorted({k.split("/")[0] for k in heads})}
    if "mlm" in heads_config:
        head = trainer.task.mlm_head
        heads_config["mlm"] = {"activation": head.activation, "layer_norm_epsilon": head.layer_norm_epsilon,
                               "tied_embedding": True}
    atomic_write_json(os.path.join(directory, HEADS_CONFIG_FILE), heads_config)
    atomic_write_json(os.path.join(directory, PROVENANCE_FILE), {"format": "keras", "pretraining": {
        "method": method, "from": metrics["preset"], "config": metrics["config"]}})
