"""The benchmark report: per task every seed's score, mean and sample SD, the published value
for the checkpoint, the difference and whether it lies within the spread; the suite's
average; cross-corpus scores. Written as OUTPUT/report.json, report.md and report.png from the
cells a grid run left (`biozoo.benchmark.grid`), so it can be rewritten at any time.

Example:
    >>> report = write_report("runs/bench")
    >>> report["tasks"]["ncbi_disease"]["mean"]
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np

from biozoo._io import atomic_binary_file, atomic_write_json, atomic_write_text, read_json
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
    return read_json(path, "benchmark file", error_class=ValueError)


def settings_differ(metrics, cell):
    """How the run that wrote `metrics` differs from what the grid's `cell` (a record of it)
    plans ("learning_rate 5e-05 (now 0.0002), ..."), or None."""
    trained = metrics.get("hyperparameters") or {}
    differs = [f"{key} {trained.get(key)!r} (now {value!r})" for key, value in cell["hyperparameters"].items()
               if trained.get(key) != value]
    differs += [f"{key} {metrics.get(key)!r} (now {cell[key]!r})" for key in ("preset", "data")
                if key in cell and key in metrics and not _same_path(metrics[key], cell[key])]
    return ", ".join(differs) or None


def _same_path(recorded, planned):
    """Equal, or the same cell of a benchmark folder moved since (cells/<task>/seed-<n>)."""
    if recorded == planned:
        return True
    tails = [os.path.normpath(str(p)).split(os.sep)[-3:] for p in (recorded, planned)]
    return tails[0][0] == "cells" and tails[0] == tails[1]


def _cell_scores(metrics, task, path):
    """(score, score for the suite's average) of a finished cell on the split `task` is scored
    on; ValueError naming `path` and what it lacks."""
    if task.split not in metrics:
        held = ", ".join(split for split in ("dev", "test") if split in metrics) or "none"
        why = "; ".join(f"{k}: {v}" for k, v in metrics.get("not_scored", {}).items())
        raise ValueError(f"{path} holds no {task.split} scores (splits scored: {held})" + (f"; {why}" if why else ""))
    try:
        return (score_value(metrics[task.split], task.score, task.labels),
                score_value(metrics[task.split], task.average_score or task.score, task.labels))
    except KeyError as error:
        raise ValueError(f"{path}: the {task.split} {error.args[0]}") from None
    except (AttributeError, TypeError, ValueError, ArithmeticError) as error:  # a malformed metrics.json: that cell's error
        raise ValueError(f"{path}: the {task.split} scores give no {task.score}: {type(error).__name__}: "
                         f"{error}") from None


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
                 "split": task.split, "note": task.note, "data_differs": task.data_differs,
                 "recipe": cells[0]["recipe"], "commands": {}, "scores": [], "seeds": [], "missing_seeds": [],
                 "errors": {}, "dev_scores": []}
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
            try:
                metrics = _read(metrics_path)
                stale = settings_differ(metrics, cell)
                if stale:
                    raise ValueError(f"{metrics_path} was trained with {stale}: rerun the benchmark command to "
                                     "retrain it")
                score, average_score = _cell_scores(metrics, task, metrics_path)
                dev_score = _cell_scores(metrics, dataclasses.replace(task, split="dev"), metrics_path)[0] \
                    if "dev" in metrics else None
            except ValueError as error:  # finished but not scored: reported, never a crash of the report
                entry["missing_seeds"].append(cell["seed"])
                entry["errors"][str(cell["seed"])] = str(error)
                continue
            entry["seeds"].append(cell["seed"])
            entry["scores"].append(score)
            if dev_score is not None:
                entry["dev_scores"].append(dev_score)
            average_scores.append(average_score)
        entry["n"] = len(entry["scores"])
        entry["mean"], entry["sd"] = mean_sd(entry["scores"]) if entry["scores"] else (None, None)
        entry["average_scores"] = average_scores
        published = suite.published(registry_name, task)
        entry["published"] = published
        _compare(entry, published, task.data_differs)
        report["tasks"][name] = entry
        for target in task.cross_corpus:
            row = _cross_corpus_row(output, name, entry, target)
            if row["seeds"] or row["errors"] or record.get("cross_corpus"):
                report["cross_corpus"].setdefault(name, {})[target.title] = row
    report["average"] = _average(suite, report, registry_name)
    return report


def _cross_corpus_row(output, name, entry, target):
    """A task's scores on another corpus, per finished seed; a seed whose target failed is in
    `errors`, one with neither a score nor an error (its data not in DATA, or not reached) in
    `not_scored`."""
    found, errors, not_scored = [], {}, []
    for seed in entry["seeds"]:
        path = cross_corpus_path(output, name, seed, target.title)
        error_path = path[: -len(".json")] + ".error.json"
        if os.path.isfile(path):
            found.append(_read(path))
        elif os.path.isfile(error_path):
            errors[str(seed)] = _read(error_path)["error"]
        else:
            not_scored.append(seed)
    row = {"level": None, "seeds": [r["seed"] for r in found], "scores": [r["f1"] for r in found], "mean": None,
           "sd": None, "in_corpus_mean": None, "difference": None, "source": None, "gold_outside_types": None,
           "errors": errors, "not_scored": not_scored}
    if found:
        mean, sd = mean_sd(row["scores"])
        in_corpus = float(np.mean([entry["scores"][entry["seeds"].index(r["seed"])] for r in found]))
        row.update(level=found[0]["level"], mean=mean, sd=sd, in_corpus_mean=in_corpus, difference=mean - in_corpus,
                   source=found[0].get("documents") or found[0].get("data"),
                   gold_outside_types=found[0].get("scores", {}).get("gold_outside_types"))
    return row


def _compare(entry, published, data_differs=None):
    entry["difference"] = entry["within"] = entry["within_rule"] = None
    if published is None or entry["mean"] is None:
        return
    applies_to = published.get("applies_to", "this_checkpoint")
    if applies_to != "this_checkpoint":  # a result the paper reports for another checkpoint
        entry["within_rule"] = f"not compared: the published value applies to {applies_to}"
        return
    if data_differs:  # the paper measured on another set: shown beside, no verdict
        entry["within_rule"] = f"not compared: the data differ from the paper's ({data_differs})"
        return
    published_split = published.get("split")
    if published_split and published_split != entry["split"]:
        entry["within_rule"] = (f"not compared: the published value is on the {published_split} split, these "
                                f"scores on {entry['split']}")
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
    other_data = [n for n in counted if suite.tasks[n].data_differs]
    if other_data:  # averaged over sets the paper did not measure on: shown, not compared
        result["not_compared"] = f"the data of {', '.join(other_data)} differ from the paper's"
    if missing:
        result.update(mean=None, sd=None, per_seed=None)
        return result
    common = sorted(set.intersection(*(set(report["tasks"][n]["seeds"]) for n in counted)))
    left_out = sorted(set(report["seeds"]) - set(common))
    if left_out:  # a seed some task lacks: the average is over the seeds every task finished
        result["complete"] = False
        result["seeds_left_out"] = left_out
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
    if published is not None and result["mean"] is not None and not other_data:
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
             f"- seeds: {', '.join(map(str, report['seeds']))}; scores on each task's test split"
             f"{_other_splits(report)}; SD is the sample standard deviation (n - 1)",
             f"- within: {report['spread_rule']}"]
    for name, note in report["notes"].items():
        lines.append(f"- note ({name}): {note}")
    for t in report["tasks"].values():
        if t.get("note"):
            lines.append(f"- note ({t['title']}): {t['note']}")
        if t.get("data_differs"):
            lines.append(f"- data ({t['title']}): not the paper's set, its published value is shown but not "
                         f"compared: {t['data_differs']}")
    recipes = {t["recipe"]["from"] for t in report["tasks"].values()}
    lines += [f"- recipes: {'; '.join(sorted(recipes))}"]
    lines += ["", "| task | score | n | mean | SD | per seed | published | difference | within | recipe |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for name, t in report["tasks"].items():
        published = t["published"]
        recipe = t["recipe"]
        recipe_text = (f"{recipe['epochs']:g} ep, lr {recipe['learning_rate']:g}, batch {recipe['batch_size']}, "
                       f"len {recipe['max_seq_length']}")
        within = ("not compared" if (t["within_rule"] or "").startswith("not compared") else
                  "-" if t["within"] is None else "yes" if t["within"] else "no")
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
                         f"{average['seeds']}; published {_number(published['value']) if published else 'none'}"
                         + (f" (not compared: {average['not_compared']})" if average.get("not_compared") else ""))
        elif average["missing_tasks"]:
            lines.append(f"not computed: no scores for {', '.join(average['missing_tasks'])}")
        else:
            lines.append("not computed: no seed finished on every task it averages")
        if average.get("seeds_left_out"):
            lines.append(f"\nseeds {average['seeds_left_out']} left out: not every task finished them")
        if average.get("not_supported"):
            lines.append(f"\nleft out (biozoo cannot run them): {', '.join(average['not_supported'])}")
    if report["cross_corpus"]:
        lines += ["", "## Cross-corpus", "", "In-corpus: the task's own test score above (sentence level).", "",
                  "| model trained on | scored on | level | mean F1 | SD | in-corpus mean | difference |",
                  "|---|---|---|---|---|---|---|"]
        unscored = []
        for name, targets in report["cross_corpus"].items():
            for title, c in targets.items():
                lines.append(f"| {report['tasks'][name]['title']} | {title} | {c['level'] or '-'} | "
                             f"{_number(c['mean'])} | {_number(c['sd'])} | {_number(c['in_corpus_mean'])} | "
                             f"{_number(c['difference'])} |")
                failed = "; ".join(f"seed {s}: {e}" for s, e in c["errors"].items())
                if failed:
                    unscored.append(f"- {report['tasks'][name]['title']} on {title} failed: {failed}")
                if c["not_scored"]:
                    unscored.append(f"- {report['tasks'][name]['title']} on {title}: seeds {c['not_scored']} not "
                                    "scored (its data is not under DATA, or the run did not reach it)")
        lines += [""] + unscored if unscored else []
    if report["skipped"]:
        lines += ["", "## Not run", ""] + [f"- {name}: {why}" for name, why in report["skipped"].items()]
    lines += ["", "Each cell is one `biozoo finetune` run; report.json holds its command line."]
    return "\n".join(lines) + "\n"


def _other_splits(report):
    other = [f"{t['title']} on {t['split']}" for t in report["tasks"].values() if t["split"] != "test"]
    return f" ({', '.join(other)}, as the paper reports it)" if other else ""


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
    published = {"own": [], "other checkpoint": [], "other data": []}  # what each published value is
    for i, n in enumerate(names):
        value = report["tasks"][n]["published"]
        if value:
            kind = ("other checkpoint" if value.get("applies_to", "this_checkpoint") != "this_checkpoint" else
                    "other data" if report["tasks"][n].get("data_differs") else "own")
            published[kind].append((i, value["value"]))
    for kind, marker, color, label in (("own", "x", "red", "published"),
                                       ("other checkpoint", "+", "grey", "published for another checkpoint"),
                                       ("other data", "1", "grey", "published on other data (not compared)")):
        if published[kind]:
            ax.scatter([p[0] for p in published[kind]], [p[1] for p in published[kind]], marker=marker, color=color,
                       zorder=3, label=label)
    ax.set_xticks(x)
    ax.set_xticklabels([report["tasks"][n]["title"] for n in names], rotation=30, ha="right")
    ax.set_ylabel("score (test)" if not _other_splits(report) else "score (test; dev where the paper reports dev)")
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
