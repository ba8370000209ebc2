"""The benchmark report: per task every seed's score, mean and sample SD, the published value
for the checkpoint, the difference and whether it lies within the spread; the suite's
average; cross-corpus scores. Written as OUTPUT/report.json, report.md and report.png from the
cells a grid run left (`biozoo.benchmark.grid`), so it can be rewritten at any time.

Example:
    >>> report = write_report("runs/bench")
    >>> report["tasks"]["ncbi_disease"]["mean"]
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from biozoo._io import atomic_binary_file, atomic_write_json, atomic_write_text
from biozoo.benchmark.suites import load_suite, score_value
from biozoo.preset_files import METRICS_FILE

__all__ = ["build_report", "write_report", "mean_sd"]



def cross_corpus_path(output, task, seed, title):
    """Where a cell's cross-corpus score on the corpus `title` is written under OUTPUT."""
    slug = "".join(c if c.isalnum() else "_" for c in title).strip("_")
    return os.path.join(output, "cross_corpus", task, f"seed-{seed}", f"{slug}.json")

def mean_sd(values):
    """(mean, sample SD with n - 1) as the papers report them; the SD is None for one value."""
    values = np.asarray(values, dtype=np.float64)
    return float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else None


def _read(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def build_report(output):
    """The report of the benchmark run in `output` (a dict, as report.json holds it)."""

    record = _read(os.path.join(output, "benchmark.json"))
    suite = load_suite(record["suite"])
    registry_name = record.get("registry_name")
    seeds = sorted({c["seed"] for c in record["cells"]})
    report = {
        "suite": suite.name, "title": suite.title, "paper": suite.paper, "preset": record["preset"],
        "registry_name": registry_name, "size": record["size"], "data": record["data"], "seeds": seeds,
        "epochs_override": record.get("epochs"), "notes": record.get("notes", {}), "skipped": record.get("skipped", {}),
        "spread_rule": suite.spread,
        "published_note": (f"published values: the registry's results for {registry_name} under "
                           f"{', '.join(suite.results_sources) or 'no source'}" if registry_name else
                           f"{record['preset']} is not a registry checkpoint: there are no published values to "
                           "compare with"),
        "tasks": {}, "cross_corpus": {},
    }
    cells_by_task = {}
    for cell in record["cells"]:
        # where OUTPUT is now: a moved or copied benchmark folder still finds its cells
        cell = {**cell, "directory": os.path.join(output, "cells", cell["task"], f"seed-{cell['seed']}")}
        cells_by_task.setdefault(cell["task"], []).append(cell)
    for name, cells in cells_by_task.items():
        task = suite.tasks[name]
        entry = {"title": task.title, "kind": task.kind, "score": task.score, "score_name": task.score_name,
                 "split": "test", "recipe": cells[0]["recipe"], "commands": {}, "scores": [], "seeds": [],
                 "missing_seeds": [], "errors": {}, "dev_scores": []}
        average_scores = []
        for cell in sorted(cells, key=lambda c: c["seed"]):
            metrics_path = os.path.join(cell["directory"], METRICS_FILE)
            entry["commands"][str(cell["seed"])] = cell["command"]
            if not os.path.isfile(metrics_path):
                entry["missing_seeds"].append(cell["seed"])
                error_path = cell["directory"] + ".error.json"
                if os.path.isfile(error_path):
                    entry["errors"][str(cell["seed"])] = _read(error_path)["error"]
                continue
            metrics = _read(metrics_path)
            entry["seeds"].append(cell["seed"])
            entry["scores"].append(score_value(metrics["test"], task.score))
            if "dev" in metrics:
                entry["dev_scores"].append(score_value(metrics["dev"], task.score))
            average_scores.append(score_value(metrics["test"], task.average_score or task.score))
        entry["n"] = len(entry["scores"])
        entry["mean"], entry["sd"] = mean_sd(entry["scores"]) if entry["scores"] else (None, None)
        entry["average_scores"] = average_scores
        published = suite.published(registry_name, task)
        entry["published"] = published
        _compare(entry, published)
        report["tasks"][name] = entry
        for target in task.cross_corpus:
            found = []
            for seed in entry["seeds"]:
                path = cross_corpus_path(output, name, seed, target.title)
                if os.path.isfile(path):
                    found.append(_read(path))
            if not found:
                continue
            values = [r["f1"] for r in found]
            mean, sd = mean_sd(values)
            in_corpus = [entry["scores"][entry["seeds"].index(r["seed"])] for r in found]
            report["cross_corpus"].setdefault(name, {})[target.title] = {
                "level": found[0]["level"], "seeds": [r["seed"] for r in found], "scores": values, "mean": mean,
                "sd": sd, "in_corpus_mean": float(np.mean(in_corpus)),
                "difference": mean - float(np.mean(in_corpus)),
                "source": found[0].get("documents") or found[0].get("data"),
                "gold_outside_types": found[0].get("scores", {}).get("gold_outside_types"),
            }
    report["average"] = _average(suite, report, registry_name)
    return report


def _compare(entry, published):
    entry["difference"] = entry["within"] = entry["within_rule"] = None
    if published is None or entry["mean"] is None:
        return
    applies_to = published.get("applies_to", "this_checkpoint")
    if applies_to != "this_checkpoint":  # a result the paper reports for another checkpoint
        entry["within_rule"] = f"not compared: the published value applies to {applies_to}"
        return
    difference = entry["mean"] - published["value"]
    entry["difference"] = difference
    spread = published.get("sd")
    if spread is not None:
        entry["within_rule"] = f"|difference| <= the published SD ({spread:g})"
        entry["within"] = abs(difference) <= spread
    elif entry["sd"] is None:
        entry["within_rule"] = "one run: no spread to compare with"
    else:
        entry["within_rule"] = f"|difference| <= 2 x the measured SD ({2 * entry['sd']:.2f})"
        entry["within"] = abs(difference) <= 2 * entry["sd"]


def _average(suite, report, registry_name):
    """The suite's average per seed (over the tasks it counts, weighted as the paper does, or
    by task type), its mean and SD; None when the suite defines none."""
    if not suite.average:
        return None
    counted = [n for n, t in suite.tasks.items() if t.in_average and not t.unsupported]
    missing = [n for n in counted if n not in report["tasks"] or not report["tasks"][n]["scores"]]
    unsupported = [n for n, t in suite.tasks.items() if t.unsupported]
    result = {"title": suite.average["title"], "source": suite.average.get("source"), "tasks": counted,
              "complete": not missing and not unsupported, "missing_tasks": missing}
    if unsupported:  # averaged over what biozoo runs: a partial score, said so
        result["not_supported"] = unsupported
        result["title"] += " (partial: without the task types biozoo cannot run)"
    published = suite.published(registry_name, suite.average.get("published"))
    result["published"] = published
    if missing:
        result.update(mean=None, sd=None, per_seed=None)
        return result
    common = sorted(set.intersection(*(set(report["tasks"][n]["seeds"]) for n in counted)))
    per_seed = []
    for seed in common:
        values = {n: report["tasks"][n]["average_scores"][report["tasks"][n]["seeds"].index(seed)] for n in counted}
        if suite.average.get("by_group"):
            groups = {}
            for n, v in values.items():
                groups.setdefault(suite.tasks[n].group, []).append(v)
            per_seed.append(float(np.mean([np.mean(g) for g in groups.values()])))
        else:
            weights = {n: suite.average.get("weights", {}).get(n, 1.0) for n in counted}
            per_seed.append(sum(values[n] * weights[n] for n in counted) / sum(weights.values()))
    result["seeds"], result["per_seed"] = common, per_seed
    result["mean"], result["sd"] = mean_sd(per_seed) if per_seed else (None, None)
    if published is not None and result["mean"] is not None:
        result["difference"] = result["mean"] - published["value"]
    return result


def _number(value, digits=2):
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _published_text(published):
    if not published:
        return "none"
    applies_to = published.get("applies_to", "this_checkpoint")
    return _number(published["value"]) + ("" if applies_to == "this_checkpoint" else f" ({applies_to})")


def render_markdown(report):
    lines = [f"# {report['title']}: measured against published", "",
             f"- preset: `{report['preset']}` (size {report['size']}: hidden < 512 tiny, < 1024 base, else large)",
             f"- {report['published_note']}",
             f"- seeds: {', '.join(map(str, report['seeds']))}; scores on each task's test split; SD is the sample "
             "standard deviation (n - 1)",
             f"- within: {report['spread_rule']}"]
    for name, note in report["notes"].items():
        lines.append(f"- note ({name}): {note}")
    recipes = {t["recipe"]["from"] for t in report["tasks"].values()}
    lines += [f"- recipes: {'; '.join(sorted(recipes))}"]
    lines += ["", "| task | score | n | mean | SD | per seed | published | difference | within | recipe |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for name, t in report["tasks"].items():
        published = t["published"]
        recipe = t["recipe"]
        recipe_text = (f"{recipe['epochs']:g} ep, lr {recipe['learning_rate']:g}, batch {recipe['batch_size']}, "
                       f"len {recipe['max_seq_length']}")
        within = "-" if t["within"] is None else ("yes" if t["within"] else "no")
        lines.append(
            f"| {t['title']} | {t['score_name']} | {t['n']} | {_number(t['mean'])} | {_number(t['sd'])} | "
            f"{', '.join(_number(s) for s in t['scores']) or '-'} | "
            f"{_published_text(published)} | {_number(t['difference'])} | {within} | "
            f"{recipe_text} |")
    for name, t in report["tasks"].items():
        if t["missing_seeds"]:
            errors = "; ".join(f"seed {s}: {e}" for s, e in t["errors"].items())
            lines.append(f"\n{t['title']}: seeds {t['missing_seeds']} not finished. {errors}")
    average = report.get("average")
    if average:
        lines += ["", f"## {average['title']}", ""]
        if average["mean"] is not None:
            published = average.get("published")
            lines.append(f"mean {_number(average['mean'])}, SD {_number(average['sd'])} over seeds "
                         f"{average['seeds']}; published {_number(published['value']) if published else 'none'}")
        else:
            lines.append(f"not computed: no scores for {', '.join(average['missing_tasks'])}")
        if average.get("not_supported"):
            lines.append(f"\nleft out (biozoo cannot run them): {', '.join(average['not_supported'])}")
    if report["cross_corpus"]:
        lines += ["", "## Cross-corpus", "", "In-corpus: the task's own test score above (sentence level).", "",
                  "| model trained on | scored on | level | mean F1 | SD | in-corpus mean | difference |",
                  "|---|---|---|---|---|---|---|"]
        for name, targets in report["cross_corpus"].items():
            for title, c in targets.items():
                lines.append(f"| {report['tasks'][name]['title']} | {title} | {c['level']} | {_number(c['mean'])} | "
                             f"{_number(c['sd'])} | {_number(c['in_corpus_mean'])} | {_number(c['difference'])} |")
    if report["skipped"]:
        lines += ["", "## Not run", ""] + [f"- {name}: {why}" for name, why in report["skipped"].items()]
    lines += ["", "Each cell is one `biozoo finetune` run; report.json holds its command line."]
    return "\n".join(lines) + "\n"


def plot(report, path):
    """Measured mean +- SD against the published value, per task (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, t in report["tasks"].items() if t["scores"]]
    fig, ax = plt.subplots(figsize=(max(4, 1.3 * len(names) + 1), 4))
    x = np.arange(len(names))
    means = [report["tasks"][n]["mean"] for n in names]
    sds = [report["tasks"][n]["sd"] or 0.0 for n in names]  # one run: no bar
    ax.errorbar(x, means, yerr=sds, fmt="o", capsize=4, label="measured mean +- SD")
    published = [(i, report["tasks"][n]["published"]["value"]) for i, n in enumerate(names)
                 if report["tasks"][n]["published"]]
    if published:
        ax.scatter([p[0] for p in published], [p[1] for p in published], marker="x", color="red", zorder=3,
                   label="published")
    ax.set_xticks(x)
    ax.set_xticklabels([report["tasks"][n]["title"] for n in names], rotation=30, ha="right")
    ax.set_ylabel("score (test)")
    ax.set_title(f"{report['title']}: {os.path.basename(str(report['preset']).rstrip('/'))}")
    ax.legend()
    fig.tight_layout()

    with atomic_binary_file(path) as f:
        fig.savefig(f, format="png", dpi=100)
    plt.close(fig)


def write_report(output):
    """Write report.json, report.md and report.png into `output`; return the report."""
    report = build_report(output)
    atomic_write_json(os.path.join(output, "report.json"), report)
    atomic_write_text(os.path.join(output, "report.md"), render_markdown(report))
    plot(report, os.path.join(output, "report.png"))
    return report
