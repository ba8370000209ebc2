"""Fine-tune the real MiniLM-L6 on the packaged NCBI-disease corpus with the default recipe under
each Keras backend, in the same run: test entity F1 (mean and sample standard deviation over
seeds) and training time, against TensorFlow (the anchor) measured in the same run.

    .venv/bin/python benchmarks/finetune_backends.py                        # tensorflow, jax; 3 seeds, 1 epoch
    .venv/bin/python benchmarks/finetune_backends.py --backends tensorflow,jax,torch --epochs 3

Each backend runs `biozoo finetune ner --seeds N` in its own process (KERAS_BACKEND set there),
JAX with a fresh, empty compilation cache (`--keep-jax-cache`: $BIOZOO_CACHE's, as it is; the
report's `jax_cache_cold` says whether JAX started cold).
Target: JAX's mean test F1 within 1 point of TensorFlow's; its training time printed as a ratio
to TensorFlow's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from _shared import jax_compilation_cache, minilm


def run(backend, epochs, seeds, output, keep_jax_cache=False):
    argv = [sys.executable, "-m", "biozoo", "finetune", "ner", "--preset", minilm(), "--data", "ncbi-disease",
            "--epochs", str(epochs), "--seeds", str(seeds), "--output", output]
    with jax_compilation_cache(keep_jax_cache) as (cache_env, cache):
        env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3", **cache_env}
        result = subprocess.run(argv, env=env, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"{backend}: {result.stderr[-3000:]}")
    with open(os.path.join(output, "metrics.json"), encoding="utf-8") as f:
        summary = json.load(f)
    runs = summary.get("runs", [summary])  # one seed: metrics.json is that run's
    seconds = [r["train_seconds"] for r in runs]
    f1 = [r["test"]["f1"] for r in runs]
    return {"test_f1_mean": round(float(np.mean(f1)), 2),
            "test_f1_std": round(float(np.std(f1, ddof=1)), 2) if len(f1) > 1 else None,
            "test_f1": [round(x, 2) for x in f1], "micro_batches": runs[0].get("micro_batches"),
            "train_seconds": seconds, "train_seconds_mean": round(sum(seconds) / len(seconds), 1),
            "examples_per_second": [r["train_examples_per_second"] for r in runs],
            **(cache if backend == "jax" else {})}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="tensorflow,jax")
    parser.add_argument("--epochs", type=float, default=1)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--keep-jax-cache", action="store_true",
                        help="JAX: use $BIOZOO_CACHE/jax-compilation as it is (default: a fresh, empty one, so "
                             "that JAX compiles cold as TensorFlow does; the report records which)")
    args = parser.parse_args()
    backends = args.backends.split(",")
    report = {"recipe": "biozoo finetune defaults", "epochs": args.epochs, "seeds": args.seeds}
    with tempfile.TemporaryDirectory(prefix="biozoo-backends-") as scratch:
        for backend in backends:
            report[backend] = run(backend, args.epochs, args.seeds, os.path.join(scratch, backend),
                                  args.keep_jax_cache)
            print(json.dumps({backend: report[backend]}), flush=True)
    anchor = report.get("tensorflow")
    if anchor:
        for backend in backends:
            if backend != "tensorflow":
                report[backend]["f1_minus_tensorflow"] = round(report[backend]["test_f1_mean"] - anchor["test_f1_mean"], 2)
                report[backend]["time_ratio_to_tensorflow"] = round(
                    report[backend]["train_seconds_mean"] / anchor["train_seconds_mean"], 2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
