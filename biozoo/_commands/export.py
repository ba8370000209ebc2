"""`biozoo export {hub,hf,garden}`: TF Hub SavedModels, HuggingFace directories, Model Garden
encoder checkpoints."""

import json
import os


def register(subparsers):
    parser = subparsers.add_parser(
        "export", help="export a preset or a fine-tuned model (TF Hub SavedModel, HuggingFace, Model Garden)",
        description="Export a backbone preset (registry name, hf://, local directory, gs://) or a model "
        "written by `biozoo finetune`. Nothing partial is left at --output.",
    )
    kinds = parser.add_subparsers(dest="export_kind", metavar="KIND")
    kinds.required = True

    hub = kinds.add_parser(
        "hub", help="TF Hub-style SavedModels (encoder + preprocessor, or a serving task model)",
        description="--preset P writes OUT/encoder and OUT/preprocessor (Model Garden's TF Hub "
        "conventions: input_word_ids/input_mask/input_type_ids -> sequence_output, pooled_output, "
        "default, encoder_outputs; preprocessor.tokenize and bert_pack_inputs). --model DIR (from "
        "`biozoo finetune`) writes one SavedModel whose serving signatures take raw strings. Both load "
        "with tf.saved_model.load and tensorflow-text, without biozoo or Keras.",
    )
    source = hub.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", help="a backbone preset handle")
    source.add_argument("--model", help="a fine-tuned model directory (biozoo finetune --output)")
    hub.add_argument("--output", required=True)
    hub.add_argument("--seq-length", type=int, default=None,
                     help="packed sequence length (default: 128 for --preset, the trained length for --model)")
    hub.set_defaults(func=export_hub_command)

    hf = kinds.add_parser("hf", help="a HuggingFace directory (config.json, model.safetensors, tokenizer)",
                          description="--preset P: transformers.AutoModel.from_pretrained(OUT) loads it with equal "
                          "outputs. --model DIR (from `biozoo finetune`, or a task checkpoint handle): the matching "
                          "*ForTokenClassification / *ForSequenceClassification / *ForQuestionAnswering class with "
                          "id2label, which transformers' pipelines run with the task's predictions.")
    source = hf.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", help="a backbone preset handle")
    source.add_argument("--model", help="a fine-tuned model directory or task checkpoint")
    hf.add_argument("--output", required=True)
    hf.set_defaults(func=export_hf_command)

    garden = kinds.add_parser(
        "garden", help="a TF Model Garden encoder checkpoint (BertEncoderV2 / AlbertEncoder; extra 'garden')",
        description="Writes OUT/encoder-1.* (tf.train.Checkpoint(encoder=...)) and OUT/garden_encoder.json "
        "(the encoder class and its constructor arguments). Needs tf-models-official: pip install 'biozoo[garden]'.",
    )
    garden.add_argument("--preset", required=True)
    garden.add_argument("--output", required=True)
    garden.set_defaults(func=export_garden_command)
    return parser


def export_hub_command(args):
    if args.model:
        from biozoo.export.serving import export_task_dir

        result = export_task_dir(args.model, args.output, args.seq_length)
    else:
        from biozoo.export.tfhub import export_hub

        export_hub(args.preset, args.output, seq_length=args.seq_length or 128)
        result = {"output": os.path.abspath(args.output), "encoder": "encoder", "preprocessor": "preprocessor"}
    print(json.dumps(result))
    return 0


def export_hf_command(args):
    if args.model:
        from biozoo.export.hf import export_hf_task
        from biozoo.tasks.finetuned import load_task

        export_hf_task(load_task(args.model).task, args.output)
    else:
        from biozoo.export.hf import export_hf

        export_hf(args.preset, args.output)
    print(json.dumps({"output": os.path.abspath(args.output)}))
    return 0


def export_garden_command(args):
    from biozoo.export.garden import export_garden

    export_garden(args.preset, args.output)
    print(json.dumps({"output": os.path.abspath(args.output)}))
    return 0
