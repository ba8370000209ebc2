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

Corpora are packed into TFRecords (see `biozoo.data.pretraining`) in `records_dir` (default
`OUTPUT.records`, removed after a successful run) and masked dynamically as they are read.
OUTPUT is written atomically as a Keras preset: for MLM the `biozoo.MaskedLM` task (so
`biozoo.from_preset(OUTPUT)` gives the backbone, `biozoo.MaskedLM.from_preset(OUTPUT)` the
task), for ELECTRA the discriminator as a `biozoo.ReplacedTokenDetector` task with the generator
as a `MaskedLM` preset in OUTPUT/generator; the tokenizer, the heads in `heads.safetensors`
and metrics.json go with them.

Example:
    >>> metrics = run_pretrain("mlm", ["pmc.txt"], "out/pmc", preset="biom_albert_xxlarge",
    ...                        sentence_task="sop", steps=1000)
    >>> metrics["loss_first"], metrics["loss_last"]
"""

from __future__ import annotations

import os
import time

import keras
import numpy as np

from biozoo.data import IGNORE_LABEL
from biozoo.tasks.pretraining import MaskedLM, MaskedLMHead, ReplacedTokenDetector

METHODS = ("mlm", "electra")
# Backbones whose embeddings ELECTRA's generator can share: token + position + segment
# embeddings, then a LayerNorm (ALBERT adds its projection after them).
ELECTRA_DISCRIMINATORS = ("ElectraBackbone", "BertBackbone", "AlbertBackbone")
SHARED_EMBEDDINGS = ("token_embedding", "position_embedding", "segment_embedding", "embeddings_layer_norm")


# ---- models -----------------------------------------------------------------------------


def _replicas():
    import tensorflow as tf

    return tf.distribute.get_strategy().num_replicas_in_sync


def _masked_cross_entropy(labels, logits):
    """Mean cross-entropy over the positions whose label is not -100."""
    weights = keras.ops.cast(keras.ops.not_equal(labels, IGNORE_LABEL), "float32")
    losses = keras.losses.sparse_categorical_crossentropy(keras.ops.maximum(labels, 0), logits, from_logits=True)
    return keras.ops.sum(losses * weights) / keras.ops.maximum(keras.ops.sum(weights), 1.0)


class _Pretrainer(keras.Model):
    """Shared by both objectives: loss trackers, the gradient step and a loss history.

    The history (`loss_history`, [intervals, tracked losses]) sums each step's losses into the
    row of its `log_every`-step interval, in the graph: it works under any strategy (replicas
    add their share), and being a model variable it is checkpointed and restored with it.
    """

    tracked = ("loss",)

    def _init_tracking(self, total_steps, log_every):
        self.trackers = {name: keras.metrics.Mean(name=name) for name in self.tracked}
        self.total_steps = int(total_steps or 0)
        self.log_every = max(1, int(log_every))
        self.loss_history = None
        if self.total_steps:
            rows = -(-self.total_steps // self.log_every)
            self.loss_history = keras.Variable(
                initializer="zeros", shape=(rows, len(self.tracked)), dtype="float32", trainable=False,
                aggregation="sum", synchronization="on_read", name="loss_history")

    @property
    def metrics(self):
        return list(self.trackers.values())

    def train_step(self, data):
        import tensorflow as tf

        x, y = data
        with tf.GradientTape() as tape:
            losses = self._pretraining_losses(x, y, training=True)
            scaled = self._scale(losses["loss"])
        return self._step(tape, scaled, losses)

    def _scale(self, loss):
        # `loss` is this replica's mean and gradients are summed over replicas: divide. (Inside
        # the tape.) `scale_loss` applies the mixed-precision loss scale, which `apply` undoes.
        return self.optimizer.scale_loss(loss / _replicas())

    def _step(self, tape, scaled, losses):
        import tensorflow as tf

        values = [tf.cast(losses[name], tf.float32) for name in self.tracked]
        if self.loss_history is not None:
            rows = self.loss_history.shape[0]
            row = tf.minimum(tf.cast(self.optimizer.iterations, tf.int32) // self.log_every, rows - 1)
            share = tf.stack(values) / float(_replicas())
            self.loss_history.assign_add(tf.one_hot(row, rows)[:, None] * share[None, :])
        variables = self.trainable_variables
        gradients = tape.gradient(scaled, variables)
        pairs = [(g, v) for g, v in zip(gradients, variables) if g is not None]
        self.optimizer.apply([g for g, _ in pairs], [v for _, v in pairs])
        for name, value in zip(self.tracked, values):
            self.trackers[name].update_state(value)
        return {name: tracker.result() for name, tracker in self.trackers.items()}

    def loss_curves(self):
        """{tracked loss: [mean over each `log_every`-step interval]} of the steps run so far
        (resumed runs included)."""
        if self.loss_history is None:
            return {}
        done = int(self.optimizer.iterations.numpy())
        sums = np.asarray(keras.ops.convert_to_numpy(self.loss_history.value))
        out = {name: [] for name in self.tracked}
        for row in range(-(-done // self.log_every)):
            count = min(self.log_every, done - row * self.log_every)
            for column, name in enumerate(self.tracked):
                out[name].append(float(sums[row, column] / count))
        return out


class MaskedLMPretrainer(_Pretrainer):
    """MLM (+ NSP or SOP) training of a `biozoo.MaskedLM` task.

    Batches are `biozoo.data.pretraining.masked_dataset` batches. The sentence head is a
    Dense(2) on the backbone's pooled output.

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
            self.tracked = ("loss", "mlm_loss", "sentence_loss")
        self._init_tracking(total_steps, log_every)
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

    tracked = ("loss", "generator_loss", "discriminator_loss")

    def __init__(self, discriminator, generator, generator_head_weights=None, rtd_weight=50.0, seed=None,
                 total_steps=None, log_every=1, **kwargs):
        super().__init__(**kwargs)
        backbone = discriminator.backbone
        if type(backbone).__name__ not in ELECTRA_DISCRIMINATORS:
            raise ValueError(f"ELECTRA pretraining shares the embeddings of a {', '.join(ELECTRA_DISCRIMINATORS)}; "
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
        self.generator_head = MaskedLMHead(
            backbone.token_embedding, units=embed[-1], activation="gelu",
            layer_norm_epsilon=generator.layer_norm_epsilon, dtype=generator.dtype_policy, name="generator_head")
        self.generator_head.build((None, None, generator.hidden_dim))
        if generator_head_weights is not None:
            self.generator_head.set_weights(generator_head_weights)
        self.rtd_weight = float(rtd_weight)
        self.seed_generator = keras.random.SeedGenerator(seed)
        self._init_tracking(total_steps, log_every)
        self.built = True

    def generator_logits(self, x, training=False):
        """Generator MLM logits [batch, masks, vocabulary] at `x["mask_positions"]`."""
        from biozoo.models._common import run_layers

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
        import tensorflow as tf

        labels = y["mask_labels"]
        logits = self.generator_logits(x, training=training)
        generator_loss = _masked_cross_entropy(labels, logits)
        vocabulary = tf.shape(logits)[-1]
        sampled = keras.random.categorical(tf.reshape(tf.stop_gradient(logits), [-1, vocabulary]), 1,
                                           seed=self.seed_generator, dtype="int32")
        sampled = tf.reshape(sampled, tf.shape(labels))
        # scatter the samples and the original ids back to their positions
        weights = tf.cast(labels != IGNORE_LABEL, tf.int32)
        length = tf.shape(x["token_ids"])[1]
        at = tf.one_hot(x["mask_positions"], length, dtype=tf.int32) * weights[..., None]  # [batch, masks, seq]
        replaced = tf.reduce_max(at, axis=1) > 0
        fake = tf.where(replaced, tf.reduce_sum(at * sampled[..., None], 1), x["token_ids"])
        original = tf.where(replaced, tf.reduce_sum(at * tf.maximum(labels, 0)[..., None], 1), x["token_ids"])
        targets = tf.cast(fake != original, tf.float32)
        inputs = {"token_ids": fake, "segment_ids": x["segment_ids"], "padding_mask": x["padding_mask"]}
        rtd_logits = tf.cast(self.discriminator(inputs, training=training), tf.float32)
        mask = tf.cast(x["padding_mask"], tf.float32)
        bce = tf.nn.sigmoid_cross_entropy_with_logits(labels=targets, logits=rtd_logits)
        discriminator_loss = tf.reduce_sum(bce * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)
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
    from biozoo._io import read_json

    return read_json(os.fspath(config), "backbone config")


def backbone_from_config(config, tokenizer):
    """A freshly initialised backbone from {"family": ..., constructor arguments}."""
    from biozoo.models import get_family

    config = load_config(config)
    if "family" not in config:
        raise ValueError('the backbone config needs a "family" (bert, albert, electra, distilbert, mobilebert, '
                         'megatron_bert) beside the backbone\'s constructor arguments.')
    family = get_family(config.pop("family"))
    config.setdefault("vocabulary_size", tokenizer.vocabulary_size())
    try:
        return family.backbone_cls(**config)
    except TypeError as error:
        raise ValueError(f"backbone config for {family.name}: {error}") from None


def _sentence_head_weights(preset, sentence_task):
    from biozoo import presets
    from biozoo.preset_files import read_heads

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
    from biozoo import presets

    candidate = os.path.join(presets.resolve_preset(preset), "generator")
    return candidate if os.path.exists(os.path.join(candidate, "config.json")) else None


def build_pretrainer(method, tokenizer, preset=None, config=None, sentence_task=None, generator=None,
                     generator_fraction=0.25, rtd_weight=50.0, seed=42, total_steps=None, log_every=1):
    """The `MaskedLMPretrainer` or `ElectraPretrainer` (build it inside `strategy.scope()`);
    `total_steps` sizes its loss history (none without)."""
    from biozoo.models.electra.backbone import ElectraBackbone

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
            if type(backbone).__name__ not in ELECTRA_DISCRIMINATORS:
                raise ValueError(f"ELECTRA pretraining needs a {', '.join(ELECTRA_DISCRIMINATORS)} discriminator "
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


def _rmtree(path):
    import tensorflow as tf

    if tf.io.gfile.exists(path):
        tf.io.gfile.rmtree(path)


def run_pretrain(method, corpus_files, output, preset=None, config=None, *, tokenizer=None, generator=None,
                 max_seq_length=128, batch_size=32, steps=10000, learning_rate=1e-4, warmup_ratio=0.1,
                 weight_decay=0.01, masking="wwm", sentence_task=None, generator_fraction=0.25, rtd_weight=50.0,
                 mask_rate=0.15, dupe_factor=1, short_seq_prob=0.1, seed=42, strategy=None, records_dir=None,
                 checkpoint_every=None, checkpoint_dir=None, log_every=None, jit_compile="auto", verbose=1,
                 log=print):
    """Pretrain with `method` ("mlm" or "electra") on plain-text `corpus_files`; write the
    preset and metrics.json to `output`; return the metrics.

    `preset` gives the starting weights and tokenizer; with `config` (JSON path or dict) the
    model starts from scratch with the tokenizer of `tokenizer` (default: `preset`).
    `batch_size` is global (split over the strategy's replicas). `masking`: "wwm" (whole
    words) or "token". `sentence_task`: None, "nsp" or "sop" (mlm only). `checkpoint_every`
    steps a checkpoint goes to `checkpoint_dir` (default OUTPUT.checkpoints); a rerun resumes
    from it. The metrics hold the loss averaged over every `log_every` steps (`losses`, and
    per part for ELECTRA and sentence tasks) with their first and last values.

    Example:
        >>> run_pretrain("electra", ["pubmed.txt"], "out/electra", config="small.json",
        ...              tokenizer="biom_electra_base_discriminator", steps=10000)
    """
    import tensorflow as tf

    from biozoo._io import atomic_directory, atomic_write_json
    from biozoo.preset_files import HEADS_CONFIG_FILE, HEADS_FILE, PROVENANCE_FILE
    from biozoo.data.pretraining import count_records, masked_dataset, write_pretraining_records
    from biozoo.tokenizers import Tokenizer
    from biozoo.train import loop
    from biozoo.optim import adamw
    from biozoo.train.strategy import is_chief

    if method not in METHODS:
        raise ValueError(f"unknown pretraining method {method!r}; choose mlm or electra.")
    if masking not in ("wwm", "token"):
        raise ValueError(f"masking must be 'wwm' or 'token', got {masking!r}")
    if preset is None and config is None:
        raise ValueError("give a --preset to continue pretraining, or a --config (with --tokenizer) to start "
                         "from scratch.")
    if config is not None and preset is None and tokenizer is None:
        raise ValueError("--config trains from scratch and needs a tokenizer: give --tokenizer (or --preset).")
    if steps < 1 or batch_size < 1:
        raise ValueError("--steps and --batch-size must be positive.")
    corpus_files = [os.fspath(f) for f in corpus_files]
    output = os.fspath(output)
    strategy = getattr(strategy, "strategy", strategy) or tf.distribute.get_strategy()
    replicas = strategy.num_replicas_in_sync
    if batch_size % replicas:
        raise ValueError(f"--batch-size {batch_size} is not a multiple of the {replicas} replicas.")
    from biozoo.train.finetune import set_seed

    set_seed(seed)

    tokenizer_handle = tokenizer if tokenizer is not None else preset
    tok = Tokenizer.from_preset(tokenizer_handle)
    from biozoo.tasks._util import use_xla

    jit = use_xla() if jit_compile == "auto" else bool(jit_compile)
    every = log_every or max(1, steps // 100)
    with strategy.scope():
        trainer = build_pretrainer(method, tok, preset, config, sentence_task, generator, generator_fraction,
                                   rtd_weight, seed, steps, every)
        backbone = trainer.task.backbone if method == "mlm" else trainer.discriminator.backbone
        limit = backbone.get_config().get("max_sequence_length")
        if limit and max_seq_length > limit:
            raise ValueError(f"--max-seq-length {max_seq_length} exceeds the model's {limit} positions.")
        trainer.compile(optimizer=adamw(learning_rate, steps, warmup_ratio, weight_decay), jit_compile=jit)

    keep_records = records_dir is not None
    records_dir = os.fspath(records_dir) if keep_records else output + ".records"
    files = write_pretraining_records(corpus_files, tok, records_dir, max_seq_length, sentence_task, seed,
                                      short_seq_prob, dupe_factor, log=log)
    instances = count_records(records_dir)

    def stream(start_step):
        return masked_dataset(files, tok, max_seq_length, batch_size, sentence_task, seed, start_step,
                              whole_words=masking == "wwm", mask_rate=mask_rate)

    log(f"pretraining {method} ({masking}{', ' + sentence_task if sentence_task else ''}) on {instances} instances: "
        f"{steps} steps of batch {batch_size}")
    checkpoint_dir = checkpoint_dir or (output + ".checkpoints" if checkpoint_every else None)
    start = time.time()
    chief = is_chief(strategy)
    result = loop.train(trainer, stream, steps, checkpoint_dir, checkpoint_every=checkpoint_every, save=chief,
                        verbose=verbose, log=log, strategy=strategy)
    seconds = time.time() - start

    curves = trainer.loss_curves()
    ran = max(1, steps - result["resumed_from"])
    metrics = {
        "method": method,
        "preset": None if preset is None else os.fspath(preset),
        "config": None if config is None else (config if isinstance(config, dict) else os.fspath(config)),
        "tokenizer": os.fspath(tokenizer_handle),
        "corpus": corpus_files,
        "instances": instances,
        "masking": masking,
        "sentence_task": sentence_task,
        "hyperparameters": {
            "steps": steps, "batch_size": batch_size, "max_seq_length": max_seq_length,
            "learning_rate": learning_rate, "warmup_ratio": warmup_ratio, "weight_decay": weight_decay,
            "mask_rate": mask_rate, "seed": seed,
        },
        "replicas": replicas,
        "resumed_from": result["resumed_from"],
        "train_seconds": round(seconds, 1),
        "train_examples_per_second": round(ran * batch_size / max(seconds, 1e-9), 2),
        "log_every": every,
    }
    if method == "electra":
        metrics["hyperparameters"].update({"generator_fraction": generator_fraction, "rtd_weight": rtd_weight})
        metrics["generator"] = {k: v for k, v in trainer.generator.get_config().items()
                                if k in ("num_layers", "num_heads", "hidden_dim", "embedding_dim", "intermediate_dim")}
    for name, values in curves.items():
        key = name + "es"  # loss -> losses, generator_loss -> generator_losses
        metrics[key] = [round(v, 5) for v in values]
        if values:
            metrics[name + "_first"] = metrics[key][0]
            metrics[name + "_last"] = metrics[key][-1]

    if chief:
        heads = {k: np.asarray(keras.ops.convert_to_numpy(v)) for k, v in trainer.heads().items()}
        with atomic_directory(output) as tmp:
            if method == "mlm":
                trainer.task.save_to_preset(tmp)
            else:
                trainer.discriminator.save_to_preset(tmp)
                generator_task = trainer.generator_task()
                generator_task.save_to_preset(os.path.join(tmp, "generator"))
                tok.save_to_preset(os.path.join(tmp, "generator"))
            tok.save_to_preset(tmp)
            from safetensors.numpy import save_file

            save_file({k: np.ascontiguousarray(v) for k, v in heads.items()}, os.path.join(tmp, HEADS_FILE))
            heads_config = {name: {} for name in sorted({k.split("/")[0] for k in heads})}
            if "mlm" in heads_config:
                head = trainer.task.mlm_head
                heads_config["mlm"] = {"activation": head.activation, "layer_norm_epsilon": head.layer_norm_epsilon,
                                       "tied_embedding": True}
            atomic_write_json(os.path.join(tmp, HEADS_CONFIG_FILE), heads_config)
            atomic_write_json(os.path.join(tmp, PROVENANCE_FILE), {"format": "keras", "pretraining": {
                "method": method, "from": metrics["preset"], "config": metrics["config"]}})
            atomic_write_json(os.path.join(tmp, "metrics.json"), metrics)
        if checkpoint_dir:
            _rmtree(checkpoint_dir)
        if not keep_records:
            _rmtree(records_dir)
    return metrics


# ---- command line -----------------------------------------------------------------------


def pretrain_command(args, strategy=None):
    """Run `biozoo pretrain` from parsed `args`; return the metrics."""
    import sys

    return run_pretrain(
        args.method, args.corpus, args.output, preset=args.preset, config=args.config, tokenizer=args.tokenizer,
        generator=args.generator, max_seq_length=args.max_seq_length, batch_size=args.batch_size, steps=args.steps,
        learning_rate=args.learning_rate, warmup_ratio=args.warmup_ratio, weight_decay=args.weight_decay,
        masking=args.masking, sentence_task=args.sentence_task, generator_fraction=args.generator_fraction,
        rtd_weight=args.rtd_weight, dupe_factor=args.dupe_factor, seed=args.seed, strategy=strategy,
        records_dir=args.records, checkpoint_every=args.checkpoint_every,
        log=lambda message: print(message, file=sys.stderr),
    )
