"""The benchmark report from the cells a grid run leaves: statistics, published values, the
suites' averages, cross-corpus rows, the Markdown and the plot."""

import json
import os

import matplotlib.axes
import numpy as np
import pytest

from biozoo import registry
from biozoo.benchmark.report import cross_corpus_path, write_report
from biozoo.benchmark.suites import load_suite


def _cell(root, task, seed, test_scores, kind="ner", split="test", hyperparameters=None, **metrics):
    directory = root / "cells" / task / f"seed-{seed}"
    directory.mkdir(parents=True)
    (directory / "metrics.json").write_text(json.dumps({"task": kind, split: test_scores, **metrics}))
    return {"task": task, "seed": seed, "kind": kind, "preset": "p", "data": "d", "directory": str(directory),
            "hyperparameters": hyperparameters or {}, "recipe": {"epochs": 5, "learning_rate": 2e-4, "batch_size": 48,
                                              "max_seq_length": 128, "from": "test", "defaults": []},
            "command": f"biozoo finetune {kind} --seed {seed}"}


def _record(root, suite, preset, registry_name, cells, **extra):
    record = {"suite": suite, "preset": preset, "data": "d", "output": str(root), "size": "base",
              "registry_name": registry_name, "epochs": None, "notes": {}, "skipped": {}, "cells": cells, **extra}
    (root / "benchmark.json").write_text(json.dumps(record))


def test_mean_sd_published_difference(tmp_path):
    values = [88.1, 89.7, 87.9]
    cells = [_cell(tmp_path, "ncbi_disease", 42 + i, {"f1": v}) for i, v in enumerate(values)]
    cells.append(_cell(tmp_path, "chemprot", 42, {"f1": 70.0}, kind="re"))
    missing = _cell(tmp_path, "chemprot", 43, {"f1": 0.0}, kind="re")
    os.unlink(os.path.join(missing["directory"], "metrics.json"))
    (tmp_path / "cells" / "chemprot" / "seed-43.error.json").write_text(json.dumps({"error": "OOM"}))
    _record(tmp_path, "biom-table2", "biom_electra_base_discriminator", "biom_electra_base_discriminator",
            cells + [missing], skipped={"squad2": "no data"})
    report = write_report(str(tmp_path))
    ncbi = report["tasks"]["ncbi_disease"]
    assert ncbi["scores"] == values and ncbi["seeds"] == [42, 43, 44]
    assert ncbi["mean"] == pytest.approx(np.mean(values), abs=1e-12)
    assert ncbi["sd"] == pytest.approx(np.std(values, ddof=1), abs=1e-12)
    published = [r["value"] for r in registry.get_entry("biom_electra_base_discriminator")["reported_results"]
                 if r["task"] == "NER NCBI-disease" and r["source"] == "BioM-Transformers, Table 2"]
    assert ncbi["published"]["value"] == published[0]
    assert ncbi["difference"] == pytest.approx(np.mean(values) - published[0])
    assert ncbi["within"] == (abs(np.mean(values) - published[0]) <= 2 * np.std(values, ddof=1))
    chemprot = report["tasks"]["chemprot"]
    assert chemprot["missing_seeds"] == [43] and chemprot["errors"] == {"43": "OOM"}
    assert chemprot["sd"] is None and chemprot["within"] is None  # one run: no spread
    markdown = (tmp_path / "report.md").read_text()
    assert "| NCBI-disease | entity-level F1 | 3 |" in markdown and "OOM" in markdown and "squad2: no data" in markdown
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "report.json").read_text())["tasks"]["ncbi_disease"]["scores"] == values


def test_no_registry_checkpoint_says_so(tmp_path):
    _record(tmp_path, "biom-table2", "/models/minilm", None, [_cell(tmp_path, "ncbi_disease", 42, {"f1": 50.0})])
    report = write_report(str(tmp_path))
    assert report["tasks"]["ncbi_disease"]["published"] is None
    assert "not a registry checkpoint" in (tmp_path / "report.md").read_text()


def _bioformer_scores(task, published):
    """Test metrics that make `task`'s scores the published values of Bioformer-8L."""
    spec = task.score
    if task.kind == "qa":
        wanted = {metric: published[(task.published["task"], metric)] for metric in
                  ("strict accuracy", "lenient accuracy", "MRR")}
        return {"bioasq_factoid": {"strict_accuracy": wanted["strict accuracy"],
                                   "lenient_accuracy": wanted["lenient accuracy"], "mrr": wanted["MRR"]}}
    value = published[(task.published["task"], task.published["metric"])]
    if spec == "macro_f1":
        return {"negative_label": "false", "per_label": {f"CPR:{i}": {"f1": value} for i in (3, 4, 5, 6, 9)}}
    if spec == "micro_f1_linkbert.f1":
        return {"micro_f1_linkbert": {"f1": value}}
    return {"f1": value}


def _every_task_supported(monkeypatch):
    """suites.json as if biozoo ran every task (LitCovid is marked unsupported)."""
    import biozoo.benchmark.suites as suites

    document = json.loads(json.dumps(suites._document()))
    for spec in document["suites"]["bioformer-table3"]["tasks"].values():
        spec.pop("unsupported", None)
    monkeypatch.setattr(suites, "_document", lambda: document)


def test_bioformer_average_of_the_published_scores_is_the_published_average(tmp_path, monkeypatch):
    """Table 3's overall average, recomputed by the report from the table's own per-task scores
    (the registry's), equals the average the paper prints: the weighting is the paper's."""
    _every_task_supported(monkeypatch)
    suite = load_suite("bioformer-table3")
    published = {(r["task"], r["metric"]): r["value"] for r in registry.get_entry("bioformer_8l")["reported_results"]
                 if r["source"] == "Bioformer, Table 3"}
    # LitCovid's published value is on the development set, so its cell's dev scores count
    cells = [_cell(tmp_path, name, 42, _bioformer_scores(task, published), task.kind, split=task.split)
             for name, task in suite.tasks.items() if task.in_average]
    _record(tmp_path, "bioformer-table3", "bioformer_8l", "bioformer_8l", cells)
    report = write_report(str(tmp_path))
    average = report["average"]
    assert average["complete"] and len(average["tasks"]) == 16  # 15 data sets, BioASQ in two settings
    expected = published[("Overall average (15 datasets)", "average score")]
    assert average["published"]["value"] == expected
    assert average["mean"] == pytest.approx(expected, abs=0.01)


def test_average_incomplete_names_the_missing_tasks(tmp_path):
    _record(tmp_path, "bioformer-table3", "bioformer_8l", "bioformer_8l",
            [_cell(tmp_path, "ncbi_disease", 42, {"f1": 80.0})])
    average = write_report(str(tmp_path))["average"]
    assert not average["complete"] and average["mean"] is None and "bc2gm" in average["missing_tasks"]


def test_blurb_average_is_the_mean_of_task_type_means(tmp_path):
    suite = load_suite("blurb")
    scores = {name: 60.0 + i for i, name in enumerate(n for n, t in suite.tasks.items() if not t.unsupported)}
    cells = []
    for name, value in scores.items():
        task = suite.tasks[name]
        test = {"micro_f1_linkbert": {"f1": value}} if task.kind == "doc" else {"f1": value}
        cells.append(_cell(tmp_path, name, 42, test, task.kind))
    _record(tmp_path, "blurb", "/models/x", None, cells)
    average = write_report(str(tmp_path))["average"]
    groups = {}
    for name, value in scores.items():
        groups.setdefault(suite.tasks[name].group, []).append(value)
    assert average["mean"] == pytest.approx(np.mean([np.mean(v) for v in groups.values()]))
    assert set(average["not_supported"]) == {"ebm_pico", "biosses", "pubmedqa", "bioasq_yesno"}


def test_cross_corpus_rows(tmp_path):
    cells = [_cell(tmp_path, "ncbi_disease", 42 + i, {"f1": v}) for i, v in enumerate([80.0, 82.0])]
    _record(tmp_path, "biom-table2", "/m", None, cells)
    for seed, f1 in ((42, 60.0), (43, 64.0)):
        path = cross_corpus_path(str(tmp_path), "ncbi_disease", seed, "BC5CDR-disease")
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as f:
            json.dump({"seed": seed, "level": "documents", "f1": f1, "documents": "x.PubTator"}, f)
    cross = write_report(str(tmp_path))["cross_corpus"]["ncbi_disease"]["BC5CDR-disease"]
    assert cross["scores"] == [60.0, 64.0] and cross["mean"] == 62.0
    assert cross["sd"] == pytest.approx(np.std([60.0, 64.0], ddof=1))
    assert cross["in_corpus_mean"] == 81.0 and cross["difference"] == -19.0
    assert "| NCBI-disease | BC5CDR-disease | documents | 62.00 |" in (tmp_path / "report.md").read_text()


def test_a_result_for_another_checkpoint_is_shown_not_compared(tmp_path, monkeypatch):
    """Where the registry says a reported result applies to another checkpoint of the same
    model (the `applies_to` of a reported result), the report shows it and makes no verdict."""
    import biozoo.benchmark.suites as suites

    other = {"task": "NER NCBI-disease", "metric": "entity-level F1", "value": 89.0,
             "source": "BioM-Transformers, Table 2", "note": "", "applies_to": "same_model_other_checkpoint"}
    monkeypatch.setattr(suites, "published_results", lambda name: [other])
    _record(tmp_path, "biom-table2", "x", "biom_electra_base_discriminator",
            [_cell(tmp_path, "ncbi_disease", 42 + i, {"f1": v}) for i, v in enumerate([88.0, 89.5])])
    labels = []
    real_scatter = matplotlib.axes.Axes.scatter
    monkeypatch.setattr(matplotlib.axes.Axes, "scatter",
                        lambda self, *a, **k: labels.append(k.get("label")) or real_scatter(self, *a, **k))
    task = write_report(str(tmp_path))["tasks"]["ncbi_disease"]
    assert task["published"]["value"] == 89.0 and task["within"] is None and task["difference"] is None
    assert "89.00 (same_model_other_checkpoint)" in (tmp_path / "report.md").read_text()
    assert labels == ["published for another checkpoint"]  # the plot does not mark it as this checkpoint's


def _bioformer_cells(root, seeds_of=lambda name: (42,)):
    """A finished cell per Bioformer task and seed, each task's published value as its score."""
    suite = load_suite("bioformer-table3")
    published = {(r["task"], r["metric"]): r["value"] for r in registry.get_entry("bioformer_8l")["reported_results"]
                 if r["source"] == "Bioformer, Table 3"}
    return [_cell(root, name, seed, _bioformer_scores(task, published), task.kind, split=task.split)
            for name, task in suite.tasks.items() if task.in_average for seed in seeds_of(name)]


def test_litcovid_is_scored_on_dev_as_the_paper_reports_it(tmp_path):
    """Bioformer's LitCovid value (90.88) is a development-set score: the report takes the
    cell's dev score, not its test score, and compares it with the published value."""
    cells = [_cell(tmp_path, "litcovid", 42 + i, {"micro_f1_linkbert": {"f1": dev}}, "doc", split="dev",
                   test={"micro_f1_linkbert": {"f1": 50.0}}) for i, dev in enumerate([90.5, 91.5])]
    _record(tmp_path, "bioformer-table3", "bioformer_8l", "bioformer_8l", cells)
    task = write_report(str(tmp_path))["tasks"]["litcovid"]
    assert task["split"] == "dev" and task["scores"] == [90.5, 91.5]
    assert task["published"]["value"] == 90.88 and task["difference"] == pytest.approx(91.0 - 90.88)
    assert task["dev_scores"] == [90.5, 91.5]
    assert "BioCreative VII LitCovid on dev" in (tmp_path / "report.md").read_text()


def test_a_published_value_on_another_split_is_not_compared(tmp_path, monkeypatch):
    import biozoo.benchmark.suites as suites

    dev_value = {"task": "NER NCBI-disease", "metric": "entity-level F1", "value": 89.0, "split": "dev",
                 "source": "BioM-Transformers, Table 2", "applies_to": "this_checkpoint"}
    monkeypatch.setattr(suites, "published_results", lambda name: [dev_value])
    _record(tmp_path, "biom-table2", "x", "biom_electra_base_discriminator",
            [_cell(tmp_path, "ncbi_disease", 42 + i, {"f1": v}) for i, v in enumerate([88.0, 89.5])])
    task = write_report(str(tmp_path))["tasks"]["ncbi_disease"]
    assert task["difference"] is None and task["within"] is None and "dev split" in task["within_rule"]


def test_a_finished_cell_without_the_split_or_the_score_is_named_not_a_crash(tmp_path):
    """A cell trained where the test split could not be scored (metrics.json's not_scored), or
    whose scores lack the task's score, is an error of that seed naming its metrics.json."""
    cells = [_cell(tmp_path, "ncbi_disease", 42, {"f1": 80.0}),
             _cell(tmp_path, "ncbi_disease", 43, {"f1": 70.0}, split="dev",
                   not_scored={"test": "test.tsv holds no sentence"}),
             _cell(tmp_path, "ncbi_disease", 44, {"precision": 70.0})]
    _record(tmp_path, "biom-table2", "/m", None, cells)
    task = write_report(str(tmp_path))["tasks"]["ncbi_disease"]
    assert task["seeds"] == [42] and task["scores"] == [80.0] and task["missing_seeds"] == [43, 44]
    metrics_43 = str(tmp_path / "cells" / "ncbi_disease" / "seed-43" / "metrics.json")
    assert metrics_43 in task["errors"]["43"] and "test.tsv holds no sentence" in task["errors"]["43"]
    assert "seed-44" in task["errors"]["44"] and "'f1'" in task["errors"]["44"]


def test_a_cell_trained_with_other_settings_is_not_reported_as_this_one(tmp_path):
    """metrics.json records the run's hyperparameters: a cell the record plans with another
    learning rate (a recipe corrected since) is reported as to be retrained, not scored."""
    cell = _cell(tmp_path, "ncbi_disease", 42, {"f1": 80.0}, hyperparameters={"learning_rate": 2e-4, "seed": 42})
    metrics_path = tmp_path / "cells" / "ncbi_disease" / "seed-42" / "metrics.json"
    metrics = json.loads(metrics_path.read_text())
    metrics["hyperparameters"] = {"learning_rate": 5e-5, "seed": 42, "epochs": 3.0}
    metrics_path.write_text(json.dumps(metrics))
    _record(tmp_path, "biom-table2", "/m", None, [cell])
    task = write_report(str(tmp_path))["tasks"]["ncbi_disease"]
    assert task["scores"] == [] and task["missing_seeds"] == [42]
    assert "learning_rate 5e-05 (now 0.0002)" in task["errors"]["42"]


def test_the_average_is_over_the_seeds_every_task_finished(tmp_path, monkeypatch):
    """Seed 43 finished on every task but BC2GM: the average is over seed 42 alone and says so;
    with no seed every task finished, it is not computed and says why."""
    _every_task_supported(monkeypatch)
    _record(tmp_path, "bioformer-table3", "bioformer_8l", "bioformer_8l",
            _bioformer_cells(tmp_path, lambda name: (42,) if name == "bc2gm" else (42, 43)))
    average = write_report(str(tmp_path))["average"]
    assert average["seeds"] == [42] and average["seeds_left_out"] == [43] and not average["complete"]
    assert "seeds [43] left out" in (tmp_path / "report.md").read_text()

    other = tmp_path / "other"
    other.mkdir()
    _record(other, "bioformer-table3", "bioformer_8l", "bioformer_8l",
            _bioformer_cells(other, lambda name: (43,) if name == "bc2gm" else (42,)))
    average = write_report(str(other))["average"]
    assert average["mean"] is None and not average["complete"] and not average["missing_tasks"]
    assert "no seed finished on every task" in (other / "report.md").read_text()


def test_failed_and_unscored_cross_corpus_targets_are_reported(tmp_path):
    cells = [_cell(tmp_path, "ncbi_disease", 42 + i, {"f1": v}) for i, v in enumerate([80.0, 82.0])]
    _record(tmp_path, "biom-table2", "/m", None, cells, cross_corpus=True)
    path = cross_corpus_path(str(tmp_path), "ncbi_disease", 42, "BC5CDR-disease")
    os.makedirs(os.path.dirname(path))
    with open(path[: -len(".json")] + ".error.json", "w") as f:
        json.dump({"error": "DataFormatError: BC5CDR_Test.PubTator line 7"}, f)
    row = write_report(str(tmp_path))["cross_corpus"]["ncbi_disease"]["BC5CDR-disease"]
    assert row["errors"] == {"42": "DataFormatError: BC5CDR_Test.PubTator line 7"} and row["not_scored"] == [43]
    assert row["scores"] == [] and row["mean"] is None
    markdown = (tmp_path / "report.md").read_text()
    assert "BC5CDR_Test.PubTator line 7" in markdown and "seeds [43] not scored" in markdown


def test_a_chemprot_cell_with_no_positive_relation_is_scored_and_a_malformed_one_is_named(tmp_path):
    """Macro F1 over the five CPR classes: a seed where none occurs scores 0 (as sklearn's
    f1_score(labels=..., average="macro", zero_division=0)); a seed whose per-label scores are
    malformed is that seed's error, naming its metrics.json, and the report is still written."""
    from sklearn.metrics import f1_score

    from biozoo.metrics.relation import micro_prf

    gold, pred = ["false", "false", "CPR:4"], ["false", "false", "false"]
    labels = ["CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9"]
    cells = [_cell(tmp_path, "chemprot", 42, micro_prf(["false"], ["false"], "false"), "re"),
             _cell(tmp_path, "chemprot", 43, micro_prf(gold, pred, "false"), "re"),
             _cell(tmp_path, "chemprot", 44, {"per_label": {"CPR:3": "broken"}}, "re")]
    _record(tmp_path, "bioformer-table3", "bioformer_8l", "bioformer_8l", cells)
    task = write_report(str(tmp_path))["tasks"]["chemprot"]
    assert task["seeds"] == [42, 43]
    assert task["scores"] == pytest.approx([0.0, 100 * f1_score(gold, pred, labels=labels, average="macro",
                                                                zero_division=0)])
    assert str(tmp_path / "cells" / "chemprot" / "seed-44" / "metrics.json") in task["errors"]["44"]


def test_a_task_on_other_data_than_the_papers_is_shown_not_compared(tmp_path):
    """BioASQ scored on bio_electra's dev.json, not the official 7b batches: the report shows the
    published MRR and the task's data note, and makes no difference or within verdict; nor for
    the suite average that counts such tasks."""
    task = load_suite("biom-table2").tasks["bioasq7b_factoid"]
    assert "dev.json" in task.data_differs
    _record(tmp_path, "biom-table2", "biom_electra_base_discriminator", "biom_electra_base_discriminator",
            [_cell(tmp_path, "bioasq7b_factoid", 42 + i, {"bioasq_factoid": {"mrr": v}}, "qa")
             for i, v in enumerate([40.0, 44.0])])
    entry = write_report(str(tmp_path))["tasks"]["bioasq7b_factoid"]
    published = [r for r in registry.get_entry("biom_electra_base_discriminator")["reported_results"]
                 if r["task"] == "QA BioASQ7B factoid" and r["source"] == "BioM-Transformers, Table 2"]
    assert entry["published"]["value"] == published[0]["value"] and entry["mean"] == 42.0
    assert entry["difference"] is None and entry["within"] is None
    assert entry["within_rule"].startswith("not compared: the data differ")
    markdown = (tmp_path / "report.md").read_text()
    assert "- data (BioASQ7B factoid): not the paper's set" in markdown and task.data_differs in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| BioASQ7B factoid |"))
    assert "| not compared |" in row

    other = tmp_path / "bioformer"
    other.mkdir()
    _record(other, "bioformer-table3", "bioformer_8l", "bioformer_8l", _bioformer_cells(other))
    average = write_report(str(other))["average"]
    assert average["mean"] is not None and "difference" not in average
    assert "chemprot" in average["not_compared"] and "bioasq7b_factoid" in average["not_compared"]
