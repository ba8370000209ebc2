"""`biozoo convert`: a checkpoint in a published format -> a Keras preset directory."""

import json
import os
import shutil

FORMATS = ("hf", "tf1", "gluon", "megatron")


def register(subparsers):
    parser = subparsers.add_parser(
        "convert",
        help="convert a checkpoint (HF, TF1, GluonNLP, Megatron) into a Keras preset directory",
        description="Convert a checkpoint into a Keras preset that biozoo.from_preset(DIR) and "
        "keras_hub.models.Backbone.from_preset(DIR) load. Tensors are streamed one at a time; "
        "missing, unexpected and misshapen tensors are reported by name; nothing partial is left "
        "at --output.",
    )
    parser.add_argument("--from", dest="source_format", required=True, choices=FORMATS,
                        help="hf: an HF model directory (safetensors or pytorch_model.bin), hf://org/repo"
                        "[@revision] or a registry name; tf1: a google-research BERT/ALBERT/ELECTRA "
                        "checkpoint (prefix or directory, local or gs://), or a registry name (its original "
                        "archive is downloaded, checked and converted); gluon: a GluonNLP ELECTRA "
                        "model.params (with model.yml and vocab.json beside it) or a registry name; megatron: a Megatron-LM "
                        "MegatronBERT.pt state dict or a NeMo .nemo archive")
    parser.add_argument("input", help="the checkpoint")
    parser.add_argument("--output", required=True, help="the preset folder to write: a new or empty folder, or one "
                        "biozoo wrote (replaced only with --overwrite); never the input")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier biozoo output at --output")
    parser.add_argument("--family", help="model family when it cannot be told from the checkpoint "
                        "(bert, albert, electra, megatron_bert, ...)")
    parser.add_argument("--config", help="config file: bert_config.json / albert_config.json (tf1), "
                        "model.yml (gluon), model_config.yaml or an HF-style config.json (megatron)")
    parser.add_argument("--vocab", help="vocab.txt, vocab.json (gluon) or a SentencePiece .model")
    parser.add_argument("--num-heads", type=int, help="attention heads, where the checkpoint does not say "
                        "(ELECTRA TF1 default: hidden // 64)")
    parser.add_argument("--part", choices=["discriminator", "generator"], default="discriminator",
                        help="ELECTRA: which network to convert (the generator shares the embeddings)")
    parser.add_argument("--name", help="registry name: its tokenizer casing and provenance apply")
    parser.add_argument("--trust-unverified", action="store_true",
                        help="--from tf1/gluon NAME: convert an original archive the registry records no sha256 "
                        "for (its digest is printed and kept in the preset's provenance)")
    casing = parser.add_mutually_exclusive_group()
    casing.add_argument("--lowercase", dest="lowercase", action="store_true", default=None,
                        help="the vocabulary is uncased (default: guessed from the vocabulary; --from hf: used where "
                        "the folder's tokenizer files do not say)")
    casing.add_argument("--cased", dest="lowercase", action="store_false")
    parser.set_defaults(func=convert_command)

    parser = subparsers.add_parser(
        "verify",
        help="compare a checkpoint under biozoo and transformers; write parity_certificate.json into its preset",
        description="Load HANDLE (a registry name, hf://org/repo or a local HF directory) with biozoo and, in a "
        "child process, with transformers; compare the sequence output, the pooled output and the converted MLM "
        "and replaced-token heads on fixed biomedical sentences (max |diff| over valid positions) and the "
        "tokenizers' ids; write parity_certificate.json into the converted preset (shown by `biozoo info`) and print it. "
        "Exits 1 when a difference exceeds its tolerance or a sentence tokenizes differently.",
    )
    parser.add_argument("handle")
    parser.add_argument("--sentences", help="a text file: one more sentence per line for the tokenizer check")
    parser.set_defaults(func=verify_command)
    return parser


def convert_command(args):
    from biozoo import registry
    from biozoo._io import check_output

    check_output(args.output, args.overwrite, [args.input, args.config, args.vocab], "--output")

    entry = registry.get_entry(args.name) if args.name else None
    provenance = {"registry_name": args.name} if args.name else {}
    lowercase = args.lowercase
    if lowercase is None and entry is not None:
        lowercase = entry["tokenizer"]["lowercase"]
    if args.source_format in ("tf1", "gluon") and registry.is_registered(args.input) \
            and not os.path.exists(args.input):
        _convert_registry_archive(args)
    elif args.source_format == "hf":
        convert_hf(args, entry, provenance)
    elif args.source_format == "tf1":
        from biozoo.convert.tf1 import convert_tf1

        convert_tf1(args.input, args.output, family=args.family, config=args.config, vocab=args.vocab,
                    num_heads=args.num_heads, part=args.part, lowercase=lowercase, provenance=provenance,
                    overwrite=args.overwrite)
    elif args.source_format == "gluon":
        from biozoo.convert.gluon import convert_gluon

        convert_gluon(args.input, args.output, config=args.config, vocab=args.vocab, part=args.part,
                      num_heads=args.num_heads, lowercase=lowercase, provenance=provenance, overwrite=args.overwrite)
    else:
        from biozoo.convert.megatron import convert_megatron

        convert_megatron(args.input, args.output, config=args.config, vocab=args.vocab,
                         num_heads=args.num_heads, lowercase=lowercase, provenance=provenance,
                         overwrite=args.overwrite)
    print(json.dumps({"output": os.path.abspath(args.output), "format": args.source_format}))
    return 0


def _convert_registry_archive(args):
    """`--from tf1 NAME`: the original archive the registry lists for NAME, downloaded, checked,
    converted (cached), then copied to --output."""
    from biozoo import presets
    from biozoo._io import atomic_directory

    preset = presets.resolve_archive_preset(args.input, "gluonnlp" if args.source_format == "gluon" else "tf1",
                                            trust_unverified=args.trust_unverified)
    with atomic_directory(args.output, args.overwrite) as tmp:
        shutil.copytree(preset, tmp, dirs_exist_ok=True)


def convert_hf(args, entry, provenance):
    from biozoo import presets
    from biozoo._io import atomic_directory
    from biozoo.convert.hf import convert_hf_directory

    not_for_hf = [flag for flag, given in (("--family", args.family), ("--config", args.config), ("--vocab", args.vocab),
                                           ("--num-heads", args.num_heads), ("--part", args.part != "discriminator"),
                                           ("--trust-unverified", args.trust_unverified)) if given]
    if not_for_hf:
        raise ValueError(f"--from hf reads the family, config, vocabulary and heads from the HF folder: "
                         f"{', '.join(not_for_hf)} does not apply")
    kind, info = presets.parse_handle(args.input)
    if kind != "hf_dir" and args.lowercase is not None:
        raise ValueError(f"--{'lowercase' if args.lowercase else 'cased'} applies to an HF folder; {args.input} is "
                         "converted as its tokenizer files and registry entry say")
    if kind == "hf_dir":
        casing = dict(entry["tokenizer"]) if entry else {}
        if args.lowercase is not None:
            casing["lowercase"] = args.lowercase
        convert_hf_directory(info["path"], args.output, casing=casing or None, provenance=provenance,
                             overwrite=args.overwrite)
    elif kind == "keras_dir":
        raise ValueError(f"{args.input} is already a Keras preset.")
    else:
        preset = presets.resolve_preset(args.input)
        with atomic_directory(args.output, args.overwrite) as tmp:
            shutil.copytree(preset, tmp, dirs_exist_ok=True)


def verify_command(args):
    from biozoo.verification import verify

    sentences = []
    if args.sentences:
        with open(args.sentences, encoding="utf-8") as f:
            sentences = [line.rstrip("\n") for line in f if line.strip()]
    certificate = verify(args.handle, sentences)
    print(json.dumps(certificate, indent=2, ensure_ascii=False))
    return 0 if certificate["passed"] else 1
