"""`biozoo finetune`, `biozoo evaluate` and `biozoo annotate`."""

import json
import sys

KINDS = ("ner", "re", "qa", "doc")


def register(subparsers):
    parser = subparsers.add_parser(
        "finetune",
        help="fine-tune a checkpoint for ner, re, qa or doc classification",
        description="Fine-tune a checkpoint (AdamW, linear warmup and decay), evaluate it on the "
        "dev and test splits, and write OUTPUT as a task preset with OUTPUT/metrics.json. "
        "The metrics JSON is printed last on stdout.",
    )
    parser.add_argument("kind", choices=KINDS, help="ner: entity tagging; re: relation classification; "
                        "qa: extractive question answering; doc: document (multi-label) classification")
    parser.add_argument("--preset", required=True, help="registry name, hf://org/repo, or a local directory")
    parser.add_argument("--data", required=True, help="folder with train / dev (devel) / test files")
    parser.add_argument("--output", required=True, help="where to write the fine-tuned task preset")
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--max-seq-length", type=int, default=None, help="default: 128 (384 for qa)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--warmup-ratio", type=float, default=0.1)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--entity-type", help="ner: type for bare B/I tags (default: from the folder name)")
    parser.add_argument("--xla", choices=["auto", "on", "off"], default="auto",
                        help="compile train steps with XLA (auto: on GPU/TPU only; on CPUs the compile "
                        "time outweighs the gain)")
    parser.set_defaults(func=finetune_command)

    parser = subparsers.add_parser(
        "evaluate",
        help="evaluate a fine-tuned model on a data split",
        description="Evaluate a model written by `biozoo finetune` on DATA's split; print the metrics JSON.",
    )
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--model", required=True, help="the OUTPUT directory of `biozoo finetune`")
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="test", help="train, dev (devel) or test")
    parser.add_argument("--xla", choices=["auto", "on", "off"], default="auto",
                        help="compile prediction with XLA (auto: on GPU/TPU only; on a CPU 'on' pays off "
                        "for large inputs once each bucket shape is compiled)")
    parser.set_defaults(func=evaluate_command)

    parser = subparsers.add_parser(
        "annotate",
        help="tag raw text with a fine-tuned NER model (JSONL out)",
        description="Read raw text (one document per line) from FILE or stdin and write one JSON "
        'object per line: {"text", "entities": [{"start", "end", "type", "text", "score"}]}, '
        "with character offsets into the input line.",
    )
    parser.add_argument("--model", required=True, help="a NER model written by `biozoo finetune ner`")
    parser.add_argument("input", nargs="?", default="-", help="text file, or - for stdin (default)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--xla", choices=["auto", "on", "off"], default="auto",
                        help="compile prediction with XLA (auto: on GPU/TPU only; on a CPU 'on' pays off "
                        "for large inputs once each bucket shape is compiled)")
    parser.set_defaults(func=annotate_command)


def finetune_command(args):
    from biozoo.train.finetune import Hyperparameters, run_finetune

    hp = Hyperparameters(
        epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.learning_rate,
        max_seq_length=args.max_seq_length or (384 if args.kind == "qa" else 128), seed=args.seed,
        warmup_ratio=args.warmup_ratio, weight_decay=args.weight_decay, jit_compile={"auto": "auto", "on": True, "off": False}[args.xla],
    )
    options = {"entity_type": args.entity_type} if args.kind == "ner" else {}
    metrics = run_finetune(args.kind, args.preset, args.data, args.output, hp, options,
                           log=lambda message: print(message, file=sys.stderr))
    print(json.dumps(metrics))
    return 0


def evaluate_command(args):
    _set_xla(args.xla)
    from biozoo.train.finetune import load_task_preset, run_evaluate

    metrics = run_evaluate(args.model, args.data, args.split)
    if metrics["task"] != args.kind:
        raise ValueError(f"{args.model} is a {metrics['task']} model, not {args.kind}.")
    print(json.dumps(metrics))
    return 0


def annotate_command(args):
    _set_xla(args.xla)
    from biozoo.train.finetune import load_task_preset

    kind, _, task = load_task_preset(args.model)
    if kind != "ner":
        raise ValueError(f"{args.model} is a {kind} model; annotate needs a NER model.")
    stream = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
    try:
        lines = [line.rstrip("\n").rstrip("\r") for line in stream]
    finally:
        if stream is not sys.stdin:
            stream.close()
    for start in range(0, len(lines), 1024):
        for result in task.annotate(lines[start:start + 1024], batch_size=args.batch_size):
            print(json.dumps(result, ensure_ascii=False))
    return 0


def _set_xla(choice):
    import os

    if choice != "auto":
        os.environ["BIOZOO_XLA"] = choice
