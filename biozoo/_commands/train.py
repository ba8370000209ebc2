"""`biozoo pretrain mlm|electra` and `biozoo distill`: the command lines of
biozoo.train.pretrain and biozoo.train.distill (imported only when a command runs): parsed
options -> their hyperparameter dataclasses -> `run_pretrain` / `run_distill`."""

import json
import sys

from biozoo.choices import CLIP_NORM_HELP
from biozoo.train import DISTILL_METHODS, PRETRAIN_METHODS, STRATEGIES
from biozoo.train.hyperparameters import DistillHyperparameters, PretrainHyperparameters

# the defaults the options show and give (one definition: the hyperparameter dataclasses)
PRETRAIN, DISTILL = PretrainHyperparameters(), DistillHyperparameters()


def _per_method(name):
    """`distilbert 0.05, tinybert 0.1, ...`: DISTILL_METHODS' `name` per method, for --help."""
    return ", ".join(f"{method} {spec[name]}" for method, spec in DISTILL_METHODS.items())


def register(subparsers):
    parser = subparsers.add_parser(
        "pretrain",
        help="pretrain or continue pretraining: MLM (whole-word masking, NSP/SOP) or ELECTRA",
        description="Pack plain-text corpora (one sentence per line, a blank line between documents) into "
        "shards (TFRecords on TensorFlow, NumPy arrays on JAX and PyTorch) and pretrain with masked language modelling or ELECTRA's replaced-token detection, from a "
        "config or continuing from a preset. The metrics JSON is printed last on stdout.",
    )
    parser.add_argument("method", choices=PRETRAIN_METHODS)
    add_pretrain_arguments(parser)
    add_strategy_arguments(parser)
    parser.set_defaults(func=pretrain_command)

    parser = subparsers.add_parser(
        "distill",
        help="distil a compact student from a teacher (DistilBERT, TinyBERT or CompactBioBERT recipe)",
        description="Knowledge distillation on plain-text corpora with the three procedures of the compact "
        "biomedical transformers paper. Writes the student preset and metrics.json; prints the metrics JSON.",
    )
    add_distill_arguments(parser)
    parser.set_defaults(func=distill_command)


def add_strategy_arguments(parser):
    """--strategy and --tpu (finetune, pretrain, distill); returns their argument group."""
    group = parser.add_argument_group("distribution")
    group.add_argument("--strategy", choices=STRATEGIES, default="auto",
                       help="auto: multi-worker if TF_CONFIG is set (on JAX: if KERAS_DISTRIBUTION_NUM_PROCESSES is "
                       "above 1, through jax.distributed), else a TPU if one resolves, else all GPUs (mirrored), else "
                       "the CPU. BIOZOO_LOGICAL_CPUS=N splits the CPU into N devices (on JAX: XLA_FLAGS="
                       "--xla_force_host_platform_device_count=N)")
    group.add_argument("--tpu", help="TPU name, grpc://ADDRESS or local (default: TPU_NAME / COLAB_TPU_ADDR)")
    return group


def resolve_strategy_from(args, log):
    """`--strategy` / `--tpu`: a tf.distribute strategy on TensorFlow, a keras.distribution elsewhere."""
    from biozoo.train.run import resolve_strategy

    resolved = resolve_strategy(args.strategy, args.tpu)
    log(resolved.describe())
    return resolved


def add_pretrain_arguments(parser):
    """The arguments of `biozoo pretrain` (the caller adds the method and strategy options)."""
    parser.add_argument("--corpus", nargs="+", required=True,
                        help="plain-text files (local, or gs:// with TensorFlow): one sentence per line, a blank "
                        "line between documents; each file becomes one shard (TFRecords on TensorFlow, NumPy "
                        "arrays on JAX and PyTorch)")
    parser.add_argument("--preset", help="start from this model (registry name, hf://org/repo, directory): "
                        "continued pretraining; with --config only its tokenizer is used")
    parser.add_argument("--config", help="JSON backbone config to train from scratch, e.g. "
                        '{"family": "bert", "num_layers": 4, "num_heads": 4, "hidden_dim": 256, '
                        '"intermediate_dim": 1024}')
    parser.add_argument("--tokenizer", help="with --config: the preset whose tokenizer to use (default: --preset)")
    parser.add_argument("--generator", help="electra: the generator to continue from (default: PRESET/generator "
                        "when present, else a new one)")
    parser.add_argument("--output", required=True, help="where to write the pretrained preset")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier biozoo output at --output")
    parser.add_argument("--max-seq-length", type=int, default=PRETRAIN.max_seq_length)
    parser.add_argument("--batch-size", type=int, default=PRETRAIN.batch_size, help="global batch size")
    parser.add_argument("--steps", type=int, default=PRETRAIN.steps)
    parser.add_argument("--learning-rate", type=float, default=PRETRAIN.learning_rate)
    parser.add_argument("--warmup-ratio", type=float, default=PRETRAIN.warmup_ratio)
    parser.add_argument("--weight-decay", type=float, default=PRETRAIN.weight_decay)
    parser.add_argument("--clip-norm", type=float, default=PRETRAIN.clip_norm, help=CLIP_NORM_HELP)
    parser.add_argument("--masking", choices=["wwm", "token"], default=PRETRAIN.masking,
                        help="wwm: whole-word masking (default); token: single pieces")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--nsp", dest="sentence_task", action="store_const", const="nsp",
                       help="mlm: add BERT's next-sentence prediction")
    group.add_argument("--sop", dest="sentence_task", action="store_const", const="sop",
                       help="mlm: add ALBERT's sentence-order prediction")
    parser.add_argument("--generator-fraction", type=float, default=PRETRAIN.generator_fraction,
                        help="electra: generator size as a fraction of the discriminator's hidden size")
    parser.add_argument("--rtd-weight", type=float, default=PRETRAIN.rtd_weight, help="electra: discriminator loss weight")
    parser.add_argument("--dupe-factor", type=int, default=PRETRAIN.dupe_factor,
                        help="pack each corpus this many times (masks are drawn anew every epoch anyway)")
    parser.add_argument("--records", help="keep the packed shards here (reused by later runs with the same settings); "
                        "default: OUTPUT.records, removed after a successful run")
    parser.add_argument("--seed", type=int, default=PRETRAIN.seed)
    parser.add_argument("--checkpoint-every", type=int, default=PRETRAIN.checkpoint_every,
                        help="checkpoint every N steps to OUTPUT.checkpoints; a rerun resumes from it")
    return parser


def add_distill_arguments(parser):
    """The `biozoo distill` options."""
    parser.add_argument("--teacher", required=True, help="teacher checkpoint: registry name, hf://org/repo, or a "
                        "local directory (its MLM head is used)")
    parser.add_argument("--student-config", required=True,
                        help='JSON file (or inline JSON) of changes to the teacher\'s config, e.g. {"num_layers": 6}')
    parser.add_argument("--method", required=True, choices=tuple(DISTILL_METHODS),
                        help="distilbert: MLM + output KL + last-layer cosine; tinybert: per-layer hidden/attention "
                        "MSE + embedding MSE + output cross-entropy; compact: MLM + per-layer cosine and "
                        "attention KL + output KL")
    parser.add_argument("--corpus", required=True, nargs="+",
                        help="plain-text files: one sentence per line, blank lines between documents")
    parser.add_argument("--output", required=True, help="where to write the student preset and metrics.json")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier biozoo output at --output")
    parser.add_argument("--layer-map", help="teacher layer (1-based) for each student layer, e.g. 2,4,6,8,10,12 "
                        "(default: the method's released script, the first or last teacher layer of each of "
                        f"L_student equal blocks: {_per_method('layer_map')})")
    parser.add_argument("--max-seq-length", type=int, default=DISTILL.max_seq_length)
    parser.add_argument("--batch-size", type=int, default=DISTILL.batch_size, help="global batch size")
    parser.add_argument("--steps", type=int, default=DISTILL.steps)
    parser.add_argument("--learning-rate", type=float, default=DISTILL.learning_rate)
    parser.add_argument("--warmup-ratio", type=float, default=DISTILL.warmup_ratio,
                        help=f"share of the steps to warm up over (default: the method's, {_per_method('warmup_ratio')})")
    parser.add_argument("--clip-norm", type=float, default=DISTILL.clip_norm, help=CLIP_NORM_HELP)
    parser.add_argument("--temperature", type=float, default=DISTILL.temperature,
                        help="softmax temperature of the output loss (default: 2 for distilbert, 1 otherwise)")
    parser.add_argument("--masking", choices=["wwm", "token"], default=DISTILL.masking,
                        help="wwm: whole-word masking; token: single pieces (default: the method's, "
                        f"{_per_method('masking')})")
    parser.add_argument("--eval-corpus", nargs="+", help="held-out text files for the agreement figures "
                        "(default: the first 2,000 training instances)")
    parser.add_argument("--records", help="keep the packed shards here (reused by later runs with the same settings); "
                        "default: OUTPUT.records, removed after a successful run")
    parser.add_argument("--seed", type=int, default=DISTILL.seed)
    parser.add_argument("--checkpoint-every", type=int, default=DISTILL.checkpoint_every,
                        help="checkpoint every N steps to OUTPUT.checkpoints; a rerun resumes from it")
    add_strategy_arguments(parser)
    return parser


def _log(message):
    print(message, file=sys.stderr)


def _run(args, command):
    strategy = resolve_strategy_from(args, _log)
    metrics = command(args, strategy)
    metrics.update({"strategy": strategy.name, "replicas": strategy.replicas})
    print(json.dumps(metrics))
    return 0


def pretrain_hyperparameters(args):
    """`biozoo pretrain`'s options -> `PretrainHyperparameters`."""
    return PretrainHyperparameters(
        max_seq_length=args.max_seq_length, batch_size=args.batch_size, steps=args.steps,
        learning_rate=args.learning_rate, warmup_ratio=args.warmup_ratio, weight_decay=args.weight_decay,
        clip_norm=args.clip_norm, masking=args.masking, sentence_task=args.sentence_task,
        generator_fraction=args.generator_fraction, rtd_weight=args.rtd_weight, dupe_factor=args.dupe_factor,
        seed=args.seed, checkpoint_every=args.checkpoint_every,
    )


def pretrain_from_args(args, strategy=None):
    """Run `biozoo pretrain` from parsed `args`; return the metrics."""
    from biozoo.train.pretrain import run_pretrain

    return run_pretrain(args.method, args.corpus, args.output, pretrain_hyperparameters(args), preset=args.preset,
                        config=args.config, tokenizer=args.tokenizer, generator=args.generator, strategy=strategy,
                        records_dir=args.records, log=_log, overwrite=args.overwrite)


def distill_hyperparameters(args):
    """`biozoo distill`'s options -> `DistillHyperparameters`."""
    return DistillHyperparameters(
        layer_map=args.layer_map, max_seq_length=args.max_seq_length, batch_size=args.batch_size, steps=args.steps,
        learning_rate=args.learning_rate, warmup_ratio=args.warmup_ratio, clip_norm=args.clip_norm,
        temperature=args.temperature, masking=args.masking, seed=args.seed, checkpoint_every=args.checkpoint_every,
    )


def distill_from_args(args, strategy=None):
    """Run `biozoo distill` from parsed `args`; return the metrics."""
    from biozoo.train.distill import run_distill

    return run_distill(args.method, args.teacher, args.student_config, args.corpus, args.output,
                       distill_hyperparameters(args), eval_corpus=args.eval_corpus, records_dir=args.records,
                       strategy=strategy, log=_log, overwrite=args.overwrite)


def pretrain_command(args):
    return _run(args, pretrain_from_args)


def distill_command(args):
    return _run(args, distill_from_args)
