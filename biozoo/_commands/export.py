"""`biozoo export {tfhub,hf,garden,onnx,litert}`: TF Hub SavedModels, HuggingFace directories, Model
Garden encoder checkpoints, ONNX and LiteRT models with accuracy certificates."""

import argparse
import json
import os

from biozoo._commands import data_argument
from biozoo.export.formats import IDS_FORMATS, OPSET, QUANTIZATIONS


def register(subparsers):
    parser = subparsers.add_parser(
        "export", help="export a preset or a fine-tuned model (TF Hub SavedModel, HuggingFace, Model Garden, ONNX, "
        "LiteRT)",
        description="Export a backbone preset (registry name, hf://, local directory, gs://) or a model "
        "written by `biozoo finetune`. Nothing partial is left at --output.",
    )
    formats = parser.add_subparsers(dest="export_format", metavar="FORMAT")
    formats.required = True

    hub = formats.add_parser(
        "tfhub", aliases=["hub"], help="TF Hub-style SavedModels (encoder + preprocessor, or a serving task model)",
        description="--preset P writes OUT/encoder and OUT/preprocessor (Model Garden's TF Hub "
        "conventions: input_word_ids/input_mask/input_type_ids -> sequence_output, pooled_output, "
        "default, encoder_outputs; preprocessor.tokenize and bert_pack_inputs). --model DIR (from "
        "`biozoo finetune`) writes one SavedModel whose serving signatures take raw strings. Both load "
        "with tf.saved_model.load and tensorflow-text, without biozoo or Keras.",
    )
    source = hub.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", help="a backbone preset handle")
    source.add_argument("--model", help="a fine-tuned model directory (biozoo finetune --output)")
    _output_arguments(hub)
    hub.add_argument("--seq-length", type=_seq_length, default=None,
                     help="packed sequence length: at least 3 ([CLS] token [SEP]), 5 for a classification or QA "
                     "--model (two texts) (default: 128 for --preset, the trained length for --model)")
    hub.set_defaults(func=export_hub_command)

    hf = formats.add_parser("hf", help="a HuggingFace directory (config.json, model.safetensors, tokenizer)",
                          description="--preset P (a backbone; a task model is refused, as its head would be "
                          "dropped): transformers.AutoModel.from_pretrained(OUT) loads it with equal "
                          "outputs. --model DIR (from `biozoo finetune`, or a task checkpoint handle): the matching "
                          "*ForTokenClassification / *ForSequenceClassification / *ForQuestionAnswering class with "
                          "id2label, which transformers' pipelines run with the task's predictions.")
    source = hf.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", help="a backbone preset handle")
    source.add_argument("--model", help="a fine-tuned model directory or task checkpoint")
    _output_arguments(hf)
    hf.set_defaults(func=export_hf_command)

    garden = formats.add_parser(
        "garden", help="a TF Model Garden encoder checkpoint (BertEncoderV2 / AlbertEncoder; extra 'garden')",
        description="Writes OUT/encoder.index and OUT/encoder.data-* (the checkpoint prefix OUT/encoder of "
        "tf.train.Checkpoint(encoder=...)) and OUT/garden_encoder.json "
        "(the encoder class and its constructor arguments). Needs tf-models-official: pip install 'biozoo[garden]'.",
    )
    garden.add_argument("--preset", required=True)
    _output_arguments(garden)
    garden.set_defaults(func=export_garden_command)

    for fmt in IDS_FORMATS.values():
        sub = formats.add_parser(
            fmt.name, help=f"an {fmt.title} model taking token ids, with an accuracy certificate",
            description=f"Writes OUT/{fmt.file} for {fmt.runtime}: inputs "
            "input_word_ids, input_mask, input_type_ids (int32 [batch, seq]); outputs logits (--model) or "
            "sequence_output and pooled_output (--preset). The model takes ids, not text: OUT/tokenizer holds the "
            "tokenizer as transformers' AutoTokenizer loads it, and OUT/README.md says how to use them. "
            "OUT/accuracy_certificate.json compares it with biozoo's float32 model: max |diff| on fixed sentences, "
            "speed, with --data the task's F1 on a dev split for both, and whether a sentence's outputs depend on "
            "the rest of its batch (ONNX int8 ones do).",
        )
        source = sub.add_mutually_exclusive_group(required=True)
        source.add_argument("--model", help="a fine-tuned model directory or task checkpoint")
        source.add_argument("--preset", help="a backbone preset handle")
        _output_arguments(sub)
        offered = [q for q in fmt.quantizations if q]
        sub.add_argument("--quantize", choices=offered, help="; ".join(f"{q}: {QUANTIZATIONS[q]}" for q in offered))
        sub.add_argument("--data", type=data_argument, help="a data folder whose --split the certificate scores both models on")
        sub.add_argument("--split", help="the split of --data (default: dev); only with --data")
        sub.add_argument("--max-f1-drop", type=_f1_points, metavar="POINTS",
                         help="fail, writing nothing, when the export's F1 on --data is lower than float32's by more "
                         "than POINTS (e.g. 0.5)")
        if fmt.name == "onnx":
            sub.add_argument("--opset", type=int, default=None, help=f"ONNX opset (default: {OPSET})")
        sub.set_defaults(func=export_ids_command, export_format=fmt.name)

    card = subparsers.add_parser(
        "card", help="a model card in the hub's format for a registry checkpoint",
        description="Write the model card of registry checkpoint NAME: YAML front matter (licence, tags, base "
        "model), description, the papers' results with what each applies to, how to load it in biozoo, KerasHub "
        "and transformers, its `biozoo verify` certificate when the cached preset has one, and beside it "
        "STEM_parameters_f1.png, named after --output (README_parameters_f1.png for README.md): parameters against "
        "reported F1 for the family's checkpoints.",
    )
    card.add_argument("name", help="registry name (see `biozoo list`)")
    card.add_argument("--output", default="README.md")
    card.add_argument("--overwrite", action="store_true", help="replace an existing --output file and its plot")
    card.set_defaults(func=card_command)
    return parser


ONE_TEXT = 3  # [CLS] x [SEP]; a --model's serving signatures may need more (`serving.check_seq_length`)


def _seq_length(value):
    """A --seq-length value: an integer of at least 3."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
    if number < ONE_TEXT:
        raise argparse.ArgumentTypeError(f"{value} is below {ONE_TEXT}: a sequence holds [CLS], at least one token "
                                         "and [SEP]")
    return number


def _f1_points(value):
    """A --max-f1-drop value: F1 points, 0 or more (a negative drop would refuse every export)."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of F1 points") from None
    if not number >= 0:  # negative or nan
        raise argparse.ArgumentTypeError(f"{value} is not 0 or more: it is the F1 points the export may lose")
    return number


def _output_arguments(parser):
    parser.add_argument("--output", required=True, help="the folder to write: a new or empty folder, or one biozoo "
                        "wrote (replaced only with --overwrite); never the input")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier biozoo output at --output")


def _check_output(args):
    """Refuse a bad --output before any work (`biozoo._io.check_output`)."""
    from biozoo._io import check_output

    check_output(args.output, args.overwrite, [getattr(args, "model", None), getattr(args, "preset", None),
                                               getattr(args, "data", None)], "--output")


def card_command(args):
    from biozoo.export.card import write_card
    from biozoo.preset_files import read_certificate
    from biozoo.presets import cached_registry_preset

    preset = cached_registry_preset(args.name)
    write_card(args.name, args.output, read_certificate(preset) if preset else None, overwrite=args.overwrite)
    print(json.dumps({"output": os.path.abspath(args.output)}))
    return 0


def export_ids_command(args):
    from biozoo.export.ids_models import export_ids_model

    _check_output(args)
    certificate = export_ids_model(args.export_format, args.output, model=args.model, preset=args.preset,
                                   quantize=args.quantize, data=args.data, split=args.split,
                                   max_f1_drop=args.max_f1_drop, opset=getattr(args, "opset", None),
                                   overwrite=args.overwrite)
    print(json.dumps({"output": os.path.abspath(args.output), "certificate": certificate}))
    return 0


def export_hub_command(args):
    _check_output(args)
    if args.model:
        from biozoo.export.serving import export_task_dir

        result = export_task_dir(args.model, args.output, args.seq_length, overwrite=args.overwrite)
    else:
        from biozoo.export.tfhub import export_hub

        export_hub(args.preset, args.output, seq_length=128 if args.seq_length is None else args.seq_length,
                   overwrite=args.overwrite)
        result = {"output": os.path.abspath(args.output), "encoder": "encoder", "preprocessor": "preprocessor"}
    print(json.dumps(result))
    return 0


def export_hf_command(args):
    _check_output(args)
    if args.model:
        from biozoo.export.hf import export_hf_task
        from biozoo.task_kinds import task_kind
        from biozoo.tasks.finetuned import load_task

        loaded = load_task(args.model)
        if not task_kind(loaded.kind).hf_suffixes:
            raise ValueError(f"{args.model} is {task_kind(loaded.kind).article()} {loaded.kind} model, which no "
                             "transformers class holds; export it as ONNX or LiteRT (`biozoo export onnx --model ...`)")
        export_hf_task(loaded.task, args.output, overwrite=args.overwrite, inputs=[args.model])
    else:
        from biozoo.export.hf import export_hf

        export_hf(args.preset, args.output, overwrite=args.overwrite)
    print(json.dumps({"output": os.path.abspath(args.output)}))
    return 0


def export_garden_command(args):
    from biozoo.export.garden import export_garden

    _check_output(args)
    export_garden(args.preset, args.output, overwrite=args.overwrite)
    print(json.dumps({"output": os.path.abspath(args.output)}))
    return 0
