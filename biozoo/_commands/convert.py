"""`biozoo convert`: a checkpoint in a published format -> a Keras preset directory."""

import json


def register(subparsers):
    parser = subparsers.add_parser(
        "convert",
        help="convert a checkpoint into a Keras preset directory",
        description="Convert a checkpoint into a Keras preset that biozoo.from_preset(DIR) and "
        "keras_hub.models.Backbone.from_preset(DIR) load. Missing, unexpected and misshapen "
        "tensors are reported by name; nothing partial is left at --output.",
    )
    parser.add_argument("--from", dest="source_format", required=True, choices=["hf"],
                        help="source format: hf = HuggingFace model directory (safetensors or "
                        "pytorch_model.bin), an hf://org/repo[@revision] handle or a registry name")
    parser.add_argument("input", help="the checkpoint: a directory, hf:// handle or registry name")
    parser.add_argument("--output", required=True, help="the preset directory to write")
    parser.add_argument("--name", help="registry name whose tokenizer casing applies (HF sources "
                        "without tokenizer_config.json)")
    parser.set_defaults(func=convert_command)
    return parser


def convert_command(args):
    import os

    from biozoo import hub, registry
    from biozoo._io import atomic_directory
    from biozoo.convert.hf import convert_hf_directory

    kind, info = hub.parse_handle(args.input)
    casing = registry.get_entry(args.name)["tokenizer"] if args.name else None
    if kind == "hf_dir":
        convert_hf_directory(info["path"], args.output, casing=casing,
                             provenance={"registry_name": args.name} if args.name else None)
    elif kind == "keras_dir":
        raise ValueError(f"{args.input} is already a Keras preset.")
    else:
        import shutil

        preset = hub.resolve_preset(args.input)
        with atomic_directory(args.output) as tmp:
            shutil.copytree(preset, tmp, dirs_exist_ok=True)
    print(json.dumps({"output": os.path.abspath(args.output)}))
    return 0
