"""`biozoo finetune` and `biozoo evaluate`."""

import argparse
import json
import os
import sys

from biozoo._commands import DATA_HELP, PRECISION_HELP, data_argument, documents_argument
from biozoo._commands.train import add_strategy_arguments, resolve_strategy_from
from biozoo.choices import (
    CLIP_NORM_HELP,
    DEFAULT_PRECISION,
    FINETUNE_WARMUP_RATIO,
    FINETUNE_WEIGHT_DECAY,
    LINK_LOSSES,
    LINK_WARMUP_RATIO,
    LINK_WEIGHT_DECAY,
    OPTIMIZERS,
    PRECISIONS,
    SWITCHES,
    TRAINING_PRECISION_POLICIES,
)
from biozoo.documents import KEEP_MISMATCHED, read_documents
from biozoo.linking.abbreviations import DEFAULT_ENGINE, ENGINES
from biozoo.task_kinds import TASK_KINDS, kind_name, trained_kinds
from biozoo.train.hyperparameters import Hyperparameters

LINK = "link"  # entity linking (biozoo.linking): its own options below
FINETUNE = Hyperparameters()  # the defaults finetune's options give


def register(subparsers):
    parser = subparsers.add_parser(
        "finetune",
        help="fine-tune a checkpoint for ner, re, qa or doc classification",
        description="Fine-tune a checkpoint (AdamW, linear warmup and decay), evaluate it on the "
        "dev and test splits, and write OUTPUT as a task preset with OUTPUT/metrics.json. "
        "The metrics JSON is printed last on stdout.",
    )
    parser.add_argument("kind", choices=trained_kinds(), type=kind_name,
                        help="ner: entity tagging; re (alias classification): relation or sentence classification; "
                        "qa: extractive question answering; doc: document (multi-label) classification; link: "
                        "an encoder for entity linking, trained on a dictionary's synonyms (--dictionary)")
    parser.add_argument("--preset", required=True, help="registry name, hf://org/repo, or a local directory")
    parser.add_argument("--data", type=data_argument,
                        help=f"folder with train / dev (devel) / test files; {DATA_HELP} (every kind but link)")
    parser.add_argument("--output", required=True, help="where to write the fine-tuned task preset: a new or empty "
                        "folder, or one biozoo wrote (replaced only with --overwrite)")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier biozoo output at --output")
    parser.add_argument("--epochs", type=float, default=None, help=f"default {FINETUNE.epochs:g} (or the --recipe's)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help=f"the global batch, split over the replicas (default {FINETUNE.batch_size}, as the HF Trainer, or the "
                        "--recipe's)")
    parser.add_argument("--learning-rate", type=float, default=None,
                        help=f"peak learning rate for the global batch (default {FINETUNE.learning_rate:g}, or the --recipe's)")
    parser.add_argument("--max-seq-length", type=int, default=None, help="default: 128 (512 for doc, 384 for qa; capped at the "
                        "model's positions); for link the name length the checkpoint declares, else 25")
    parser.add_argument("--seed", type=int, default=FINETUNE.seed)
    parser.add_argument("--seeds", type=int, default=1,
                        help="run this many seeds (seed, seed+1, ...) into OUTPUT/seed-N and report the mean "
                        "and standard deviation of every score in OUTPUT/metrics.json")
    parser.add_argument("--warmup-ratio", type=float, default=None,
                        help=f"share of the steps to warm up over (default {FINETUNE_WARMUP_RATIO:g}, or the "
                        f"--recipe's; link: {LINK_WARMUP_RATIO:g})")
    parser.add_argument("--weight-decay", type=float, default=None,
                        help=f"AdamW weight decay, none on biases and LayerNorms (default "
                        f"{FINETUNE_WEIGHT_DECAY:g}, or the --recipe's; link: {LINK_WEIGHT_DECAY:g})")
    parser.add_argument("--entity-type", help="ner: type for bare B/I tags (default: from the folder name)")
    parser.add_argument("--recipe", choices=["biom"], help="biom: the epochs / learning rate / batch size of the "
                        "BioM-Transformers paper (Appendix Table 4) for this model and task; explicit "
                        "options still win")
    add_training_arguments(parser)
    link = parser.add_argument_group("link (SapBERT-style synonym training)")
    link.add_argument("--dictionary", help="link: the dictionary whose synonyms are trained (a name, FORMAT:PATH or "
                      "an id<TAB>name file; see `biozoo annotate --link`)")
    link.add_argument("--loss", choices=LINK_LOSSES, default=LINK_LOSSES[0],
                      help="link: SapBERT's multi-similarity loss (default) or InfoNCE")
    link.add_argument("--hard-negatives", type=int, default=4, metavar="K",
                      help="link: batch each concept with its K nearest concepts in the current index (default 4; "
                      "0: random batches)")
    link.add_argument("--pooling", choices=("cls", "mean"), help="link: the name vector (default: the checkpoint's "
                      "own, else cls as SapBERT)")
    link.add_argument("--trust-unverified", action="store_true",
                      help="link: accept dictionary downloads with no recorded sha256")
    link.add_argument("--no-progress", action="store_true",
                      help="link: no progress bars (reading and embedding the dictionary, the training steps)")
    parser.set_defaults(func=finetune_command,
                        not_for_link={name: parser.get_default(name) for name in NOT_FOR_LINK})

    parser = subparsers.add_parser(
        "evaluate",
        help="evaluate a fine-tuned model on a data split",
        description="Evaluate a model written by `biozoo finetune` on DATA's split; print the metrics JSON.",
    )
    parser.add_argument("kind", choices=tuple(TASK_KINDS), type=kind_name,
                        help="the task kind of the model: " + ", ".join(f"{k.name} ({k.model})" for k in TASK_KINDS.values()))
    parser.add_argument("--model", required=True, help="the OUTPUT directory of `biozoo finetune`, or a task "
                        "checkpoint: a registry task name, hf://org/repo[@rev] or a local HF directory; link: the "
                        "name encoder (any handle, or 'none' for string and char 3-gram matching)")
    parser.add_argument("--data", type=data_argument, help=f"sentence-level splits: {DATA_HELP}")
    parser.add_argument("--split", default="test", help="train, dev (devel) or test")
    parser.add_argument("--documents", nargs="+", metavar="GOLD", type=documents_argument,
                        help="ner: gold documents (PubTator, BioC, JSONL, or example-pubtator) instead of --data; the "
                        "model annotates them "
                        "as `biozoo annotate` does and mentions are scored by offsets (strict and approximate); "
                        "--model may also be an AIONER model")
    parser.add_argument("--type-map", default="",
                        help="with --documents: rename types before scoring, e.g. "
                        "SpecificDisease=Disease,DiseaseClass=Disease (applied to gold and predictions)")
    parser.add_argument("--entity-types", default="ALL", help="with --documents, AIONER models: as `annotate`")
    parser.add_argument("--strict", action="store_true", help="with --documents: refuse a gold document whose "
                        "annotation's text differs from the document's at its offsets (default: ner scores that "
                        "annotation by its offsets, counted in gold_text_mismatches; link, which needs the "
                        "mention's text, drops it with a warning, counted in gold_dropped)")
    parser.add_argument("--precision", choices=PRECISIONS, default=DEFAULT_PRECISION, help=PRECISION_HELP)
    parser.add_argument("--xla", choices=SWITCHES, default="auto",
                        help="compile prediction with XLA (auto: on GPU/TPU only; on a CPU 'on' pays off "
                        "for large inputs once each bucket shape is compiled)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars (the model's batches, documents, "
                        "a dictionary's names)")
    link = parser.add_argument_group("link: accuracy@1 of the gold mentions of --documents")
    link.add_argument("--dictionary", help="link: the dictionary (as `biozoo annotate --link`)")
    link.add_argument("--types", help="link: only gold mentions of these types (comma-separated; default: the "
                      "dictionary's, as `annotate --link` links them)")
    link.add_argument("--threshold", type=float, help="link: the linker's threshold (default: its own)")
    link.add_argument("--sparse-weight", type=float, default=0.0, metavar="W",
                      help="link: add W x the char 3-gram TF-IDF cosine (scispaCy's) to the dense score (as annotate "
                      "--link-sparse-weight; default 0)")
    link.add_argument("--abbreviations", choices=ENGINES + ("none",), default=DEFAULT_ENGINE,
                      help=f"link: expand short forms before linking (default {DEFAULT_ENGINE})")
    link.add_argument("--trust-unverified", action="store_true",
                      help="link: accept dictionary downloads with no recorded sha256")
    parser.set_defaults(func=evaluate_command)


def add_training_arguments(parser):
    """finetune's options for where and how the steps run (pretrain and distill share
    --strategy / --tpu)."""
    group = add_strategy_arguments(parser)
    group.add_argument("--mixed-precision", "--precision", dest="mixed_precision",
                       choices=["auto", *TRAINING_PRECISION_POLICIES], default=FINETUNE.precision,
                       help="the training dtype policy. auto: bfloat16 on TPU, float16 with loss scaling on GPU, "
                       "float32 on CPU (--precision is the old spelling)")
    group.add_argument("--xla", choices=SWITCHES, default="auto",
                       help="compile train steps with XLA (jit_compile; auto: on GPU/TPU only, on CPUs the "
                       "compile time outweighs the gain)")
    group.add_argument("--static-shapes", choices=SWITCHES, default=FINETUNE.static_shapes,
                       help="pad every batch to --max-seq-length and drop the last partial batch (auto: on TPU; "
                       "on a JAX GPU every batch padded to --max-seq-length, none dropped: one compiled step)")
    group.add_argument("--micro-batches", default=FINETUNE.micro_batches, type=_auto_or_count,
                       help="run each replica's batch as this many micro-batches sorted by length, each padded "
                       "only to its own longest example, with one update from their summed gradients (the "
                       "whole batch's update, less padding computed; on JAX each part is padded to the length "
                       "bucket above it; auto: 4, or 1 with TensorFlow's XLA, static shapes, a JAX or PyTorch GPU/TPU, or several JAX hosts)")
    group.add_argument("--steps-per-execution", type=int, default=FINETUNE.steps_per_execution,
                       help="train steps per call into the compiled function (TPUs want tens to hundreds)")
    group.add_argument("--optimizer", choices=OPTIMIZERS, default=FINETUNE.optimizer)
    group.add_argument("--layer-decay", type=float, default=FINETUNE.layer_decay,
                       help="layer-wise learning-rate decay (ELECTRA fine-tuning: 0.8 base, 0.9 large)")
    group.add_argument("--clip-norm", type=float, default=None, help=CLIP_NORM_HELP)
    group.add_argument("--checkpoint-every", type=int, default=FINETUNE.checkpoint_every,
                       help="checkpoint every N steps into OUTPUT.checkpoints (last 3 kept; removed when the run "
                       "ends); re-running the same command resumes from the last one")
    group.add_argument("--deterministic", action="store_true",
                       help="deterministic TensorFlow ops (reproducible resumes; slower on GPUs)")


def _auto_or_count(value):
    if value == "auto":
        return value
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is neither auto nor a positive whole number")
    return int(value)


def finetune_command(args):
    if args.kind == LINK:
        return _finetune_link(args)
    if args.no_progress:
        raise ValueError(f"--no-progress is an option of finetune link only, not of finetune {args.kind}")
    if not args.data:
        raise ValueError(f"finetune {args.kind} needs --data (a folder with train / dev / test files)")
    from biozoo._io import check_output
    from biozoo.train.finetune import check_hyperparameters, check_seeds_output, run_finetune, run_seeds
    from biozoo.train.run import check_values

    def log(message):
        print(message, file=sys.stderr)

    check_values([("--seeds", args.seeds, "whole")])
    if args.seeds > 1:  # an unfinished --seeds run is resumed
        check_seeds_output(args.output, args.overwrite, [args.preset, args.data])
    else:
        check_output(args.output, args.overwrite, [args.preset, args.data], "--output")
    recipe = None
    if args.recipe == "biom":
        from biozoo.train.recipes import biom_recipe  # the BioM-Transformers hyperparameter table

        recipe = biom_recipe(args.preset, args.kind, dataset=os.path.basename(os.path.normpath(args.data)))
        log(f"recipe biom for {args.preset} / {args.kind}: {json.dumps(recipe)}")
    hp = finetune_hyperparameters(args, recipe)
    check_hyperparameters(hp)
    strategy = resolve_strategy_from(args, log)
    options = {"entity_type": args.entity_type} if args.kind == "ner" else {}
    if args.seeds > 1:
        metrics = run_seeds(args.kind, args.preset, args.data, args.output, hp, args.seeds, options, log=log,
                            strategy=strategy, overwrite=args.overwrite)
    else:
        metrics = run_finetune(args.kind, args.preset, args.data, args.output, hp, options, log=log,
                               strategy=strategy, overwrite=args.overwrite)
    print(json.dumps(metrics))
    return 0


def _given(*values):
    """The first of `values` that is not None (None if all are): an option given, else a recipe's
    value, else the default."""
    return next((value for value in values if value is not None), None)


def finetune_hyperparameters(args, recipe=None):
    """`biozoo finetune`'s options -> `Hyperparameters`: an option given wins, then the --recipe's
    value (`recipe`, a row of `biozoo.train.recipes`), then the default (`FINETUNE`; the
    sequence length: the task kind's)."""
    recipe = recipe or {}

    def value(name, given):
        return _given(given, recipe.get(name), getattr(FINETUNE, name))

    return Hyperparameters(
        epochs=value("epochs", args.epochs), batch_size=value("batch_size", args.batch_size),
        learning_rate=value("learning_rate", args.learning_rate),
        max_seq_length=args.max_seq_length if args.max_seq_length is not None else recipe.get("max_seq_length"),
        seed=args.seed,
        warmup_ratio=value("warmup_ratio", args.warmup_ratio), weight_decay=value("weight_decay", args.weight_decay),
        jit_compile={"auto": "auto", "on": True, "off": False}[args.xla],
        optimizer=args.optimizer if args.optimizer != FINETUNE.optimizer else value("optimizer", None),
        layer_decay=value("layer_decay", args.layer_decay), clip_norm=value("clip_norm", args.clip_norm),
        precision=args.mixed_precision, static_shapes=args.static_shapes,
        steps_per_execution=args.steps_per_execution, checkpoint_every=args.checkpoint_every,
        micro_batches=args.micro_batches, deterministic=args.deterministic,
    )


# finetune's options that `finetune link` does not take: a link run given one (a value other
# than its default) is refused, not run without it.
NOT_FOR_LINK = ("data", "seeds", "entity_type", "recipe", "strategy", "tpu", "mixed_precision", "xla", "static_shapes",
                "micro_batches", "steps_per_execution", "optimizer", "layer_decay", "clip_norm", "checkpoint_every",
                "deterministic")


def _finetune_link(args):
    from biozoo._io import check_output
    from biozoo.linking import load_dictionary
    from biozoo.linking.training import LinkTraining, finetune_linker

    if not args.dictionary:
        raise ValueError("finetune link needs --dictionary (a dictionary name, FORMAT:PATH or an id<TAB>name file)")
    given = ["--" + name.replace("_", "-") for name, default in args.not_for_link.items()
             if getattr(args, name, default) != default]
    if given:
        raise ValueError(f"finetune link does not take {', '.join(given)} (it trains on one device in float32, "
                         "without checkpoints)")
    if args.epochs is not None and args.epochs != int(args.epochs):
        raise ValueError(f"--epochs {args.epochs:g}: finetune link trains whole epochs (each over every synonym pair)")
    check_output(args.output, args.overwrite, [args.preset], "--output")
    settings = LinkTraining(epochs=int(args.epochs or LinkTraining.epochs),
                            batch_pairs=args.batch_size or LinkTraining.batch_pairs,
                            learning_rate=args.learning_rate or LinkTraining.learning_rate,
                            weight_decay=_given(args.weight_decay, LinkTraining.weight_decay),
                            warmup_ratio=_given(args.warmup_ratio, LinkTraining.warmup_ratio), loss=args.loss, hard_negatives=args.hard_negatives,
                            max_length=args.max_seq_length, pooling=args.pooling, seed=args.seed)
    progress = not args.no_progress
    dictionary = load_dictionary(args.dictionary, trust_unverified=args.trust_unverified, progress=progress)
    metrics = finetune_linker(dictionary, args.preset, args.output, settings, log=lambda m: print(m, file=sys.stderr),
                              progress=progress, overwrite=args.overwrite)
    print(json.dumps(metrics))
    return 0


def _evaluate_link(args):
    from biozoo.linking import Linker, NameEncoder, default_link_types, load_dictionary
    from biozoo.linking.evaluation import evaluate_linking
    from biozoo.linking.pipeline import ANY_TYPE

    if not args.documents or not args.dictionary:
        raise ValueError("evaluate link needs --documents (gold documents with concept ids) and --dictionary")
    encoder = None if args.model.lower() == "none" else NameEncoder.from_preset(args.model)
    progress = not args.no_progress
    dictionary = load_dictionary(args.dictionary, trust_unverified=args.trust_unverified, progress=progress)
    linker = Linker(dictionary, encoder, threshold=args.threshold, sparse_weight=args.sparse_weight, progress=progress)
    types = tuple(t.strip() for t in args.types.split(",") if t.strip()) if args.types else None
    if types is None and ANY_TYPE not in default_link_types(args.dictionary):
        types = default_link_types(args.dictionary)  # as `annotate --link DICTIONARY` links
    stream = read_documents(args.documents, strict=args.strict)
    documents = list(stream)
    engine = None if args.abbreviations == "none" else args.abbreviations
    result = evaluate_linking(linker, documents, types, engine)
    result["documents"] = len(documents)
    result["gold_dropped"] = stream.dropped
    print(json.dumps(result))
    return 0


def evaluate_command(args):
    _set_xla(args.xla)
    if args.kind == LINK:
        return _evaluate_link(args)
    if args.documents:
        return _evaluate_documents(args)
    if not args.data:
        raise ValueError("evaluate needs --data (a data folder) or, for ner, --documents (gold documents)")
    from biozoo.train.finetune import run_evaluate

    metrics = run_evaluate(args.model, args.data, args.split, args.precision, kind=args.kind,
                           progress=not args.no_progress)
    print(json.dumps(metrics))
    return 0


def _evaluate_documents(args):
    """Annotate gold documents (their annotations kept apart) and score by offsets."""
    from biozoo.annotate.annotators import ANNOTATORS
    from biozoo.annotate.evaluation import score_documents

    if args.kind not in ANNOTATORS:
        raise ValueError(f"--documents evaluates NER models only ({', '.join(ANNOTATORS)}), not {args.kind}")
    pairs = [pair.strip() for pair in args.type_map.split(",") if pair.strip()]
    bad = [pair for pair in pairs if pair.count("=") != 1 or not all(pair.split("="))]
    if bad:
        raise ValueError(f"--type-map: {', '.join(bad)} is not FROM=TO (e.g. SpecificDisease=Disease)")
    types = tuple(t.strip() for t in args.entity_types.split(",") if t.strip()) or ("ALL",)
    result = score_documents(args.model, args.documents, type_map=dict(pair.split("=") for pair in pairs),
                             entity_types=types, precision=args.precision, progress=not args.no_progress,
                             strict=True if args.strict else KEEP_MISMATCHED)
    print(json.dumps(result))
    return 0


def _set_xla(choice):
    if choice != "auto":
        os.environ["BIOZOO_XLA"] = choice
