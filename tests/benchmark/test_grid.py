"""`biozoo benchmark`'s grid on a tiny BERT and slices of the real corpora: each cell equals a
separate `biozoo finetune` run of its command line, the report's statistics equal numpy's, a
killed grid reruns only its missing cells, QA continues from the SQuAD cell, cross-corpus scores
count every gold entity."""

import dataclasses
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from biozoo.benchmark.grid import BenchmarkPlan, plan_cells, run_benchmark
from biozoo.benchmark.suites import load_suite, score_value
from biozoo.cli import main
from biozoo.testing import bioasq_dev
from biozoo.train.finetune import checkpoint_directory


def _write_ner(source, target, counts):
    target.mkdir(parents=True)
    for split, count in counts.items():
        sentences = (source / f"{split}.tsv").read_text(encoding="utf-8").strip().split("\n\n")
        with_entities = [s for s in sentences if "\tB-" in s]
        (target / f"{split}.tsv").write_text("\n\n".join(with_entities[:count]) + "\n", encoding="utf-8")


def _write_chemprot(source, target, per_label):
    target.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        header, *lines = (source / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        chosen = [x for label in ("CPR:3", "CPR:4", "False") for x in
                  [line for line in lines if line.rsplit("\t", 1)[-1] == label][:per_label]]
        (target / f"{split}.tsv").write_text("\n".join([header] + chosen) + "\n", encoding="utf-8")


def _write_qa(bioasq_dev, root):
    """qa/bioasq (train/test by question) and a SQuAD2.0-shaped qa/squad2 from BioASQ snippets."""
    data = json.loads(bioasq_dev.read_text(encoding="utf-8"))
    groups = {}
    for paragraph in (p for a in data["data"] for p in a["paragraphs"]):
        for qa in paragraph["qas"]:
            if len(paragraph["context"]) < 300:
                groups.setdefault(qa["id"][:24], []).append({"context": paragraph["context"], "qas": [qa]})
    groups = [g for _, g in sorted(groups.items()) if len(g) >= 2]

    def squad(paragraphs):
        return json.dumps({"version": "v2.0", "data": [{"title": "t", "paragraphs": paragraphs}]})

    bioasq = root / "qa" / "bioasq"
    bioasq.mkdir(parents=True)
    (bioasq / "train.json").write_text(squad([p for g in groups[:6] for p in g[:3]]), encoding="utf-8")
    (bioasq / "test.json").write_text(squad([p for g in groups[6:9] for p in g[:3]]), encoding="utf-8")
    squad2 = root / "qa" / "squad2"
    squad2.mkdir(parents=True)
    for split, chosen in (("train", groups[9:15]), ("test", groups[15:18])):
        paragraphs = []
        for i, group in enumerate(chosen):
            paragraph = json.loads(json.dumps(group[0]))
            paragraph["qas"][0].update(id=f"{split}{i:022d}", is_impossible=False)
            other = chosen[(i + 1) % len(chosen)][0]["qas"][0]
            paragraphs += [paragraph, {"context": group[0]["context"], "qas": [{
                "id": f"{split}n{i:021d}", "question": other["question"], "answers": [], "is_impossible": True}]}]
        (squad2 / f"{split}.json").write_text(squad(paragraphs), encoding="utf-8")


@pytest.fixture(scope="module")
def bench_data(tmp_path_factory, shared_data, ncbi_disease):
    root = tmp_path_factory.mktemp("bench-data")
    _write_ner(ncbi_disease, root / "ner" / "NCBI-disease",
               {"train": 40, "devel": 12, "test": 16})
    _write_ner(shared_data / "ner" / "BC5CDR-disease", root / "ner" / "BC5CDR-disease",
               {"train": 24, "devel": 8, "test": 8})
    _write_chemprot(shared_data / "re" / "chemprot", root / "re" / "chemprot", 12)
    _write_qa(bioasq_dev(shared_data), root)
    documents = (shared_data / "documents" / "BC5CDR_Test.PubTator").read_text(encoding="utf-8").split("\n\n")
    (root / "documents").mkdir()
    (root / "documents" / "BC5CDR_Test.PubTator").write_text("\n\n".join(documents[:12]) + "\n", encoding="utf-8")
    return root


def _separate_run(command, output):
    """Run a cell's `biozoo finetune` command line with another --output; its metrics."""
    argv = shlex.split(command)[1:]
    argv[argv.index("--output") + 1] = str(output)
    assert main(argv) == 0
    return json.loads((output / "metrics.json").read_text())


def test_cells_equal_separate_finetune_runs(tmp_path, bench_data, tiny_bert_real_vocab, capsys):
    plan = BenchmarkPlan("biom-table2", str(tiny_bert_real_vocab), data=str(bench_data), output=str(tmp_path / "out"),
                         tasks=("ncbi_disease", "chemprot"), seeds=2, epochs=2, cross_corpus=True)
    report = run_benchmark(plan, progress=False, log=lambda m: None)
    suite = load_suite("biom-table2")
    assert set(report["tasks"]) == {"ncbi_disease", "chemprot"}
    for name, task in report["tasks"].items():
        assert task["seeds"] == [42, 43] and not task["missing_seeds"]
        assert task["recipe"]["epochs"] == 2 and task["recipe"]["batch_size"] == (48 if name == "ncbi_disease" else 32)
        assert task["mean"] == pytest.approx(np.mean(task["scores"]), abs=1e-12)
        assert task["sd"] == pytest.approx(np.std(task["scores"], ddof=1), abs=1e-12)
        assert task["published"] is None  # a local tiny model: nothing published
        # the second seed's cell rerun alone (the first seed is finetune's default; one rerun per
        # task keeps the suite inside CI's time budget)
        seed, score = task["seeds"][1], task["scores"][1]
        metrics = _separate_run(task["commands"][str(seed)], tmp_path / f"separate-{name}-{seed}")
        assert score_value(metrics["test"], suite.tasks[name].score) == score, (name, seed)
    capsys.readouterr()

    # cross-corpus: the NCBI-disease model on the BC5CDR documents, Disease only, every gold
    # mention either scored or counted as another type
    cross = report["cross_corpus"]["ncbi_disease"]["BC5CDR-disease"]
    assert cross["level"] == "documents" and cross["seeds"] == [42, 43]
    lines = (bench_data / "documents" / "BC5CDR_Test.PubTator").read_text().splitlines()
    types = [line.split("\t")[4] for line in lines if line.count("\t") >= 4]
    assert cross["gold_outside_types"] == {"Chemical": types.count("Chemical")}
    saved = json.loads((tmp_path / "out" / "cross_corpus" / "ncbi_disease" / "seed-42" / "BC5CDR_disease.json")
                       .read_text())
    assert saved["scores"]["strict"]["counts"]["gold"] == types.count("Disease")
    assert "## Cross-corpus" in (tmp_path / "out" / "report.md").read_text()


def test_killed_grid_reruns_only_missing_cells(tmp_path, bench_data, tiny_bert_real_vocab, monkeypatch):
    import biozoo.train.finetune as finetune

    real, calls = finetune.run_finetune, []

    def counted(kind, preset, data, output, hp, *args, **kwargs):
        calls.append((os.path.basename(os.path.dirname(output)), hp.seed))
        if stop_at and len(calls) == stop_at:
            raise KeyboardInterrupt  # as a kill: the cell's output is never written
        return real(kind, preset, data, output, hp, *args, **kwargs)

    monkeypatch.setattr(finetune, "run_finetune", counted)
    plan = BenchmarkPlan("biom-table2", str(tiny_bert_real_vocab), data=str(bench_data), output=str(tmp_path / "out"),
                         tasks=("ncbi_disease", "chemprot"), seeds=1, epochs=1)
    stop_at = 2
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(plan, progress=False, log=lambda m: None)
    assert calls == [("ncbi_disease", 42), ("chemprot", 42)]
    first = os.stat(tmp_path / "out" / "cells" / "ncbi_disease" / "seed-42" / "metrics.json").st_mtime_ns
    calls.clear()
    stop_at = None
    report = run_benchmark(plan, progress=False, log=lambda m: None)
    assert calls == [("chemprot", 42)]
    assert os.stat(tmp_path / "out" / "cells" / "ncbi_disease" / "seed-42" / "metrics.json").st_mtime_ns == first
    assert all(t["n"] == 1 for t in report["tasks"].values())

    calls.clear()  # more seeds later: only the new cells run
    report = run_benchmark(BenchmarkPlan(**{**plan.__dict__, "seeds": 2, "tasks": ("ncbi_disease",)}),
                           progress=False, log=lambda m: None)
    assert calls == [("ncbi_disease", 43)] and report["tasks"]["ncbi_disease"]["seeds"] == [42, 43]
    assert report["tasks"]["chemprot"]["seeds"] == [42]  # not asked for this time, not dropped
    with pytest.raises(ValueError, match=r"epochs 1(\.0)? \(now 2"):
        run_benchmark(BenchmarkPlan(**{**plan.__dict__, "epochs": 2}), progress=False, log=lambda m: None)


def test_cross_corpus_falls_back_to_sentences(tmp_path, bench_data, tiny_bert_real_vocab, capsys):
    """BC5CDR-disease -> NCBI-disease: DATA has no NCBI-disease documents, so the model is scored
    on NCBI-disease's test sentences, as `biozoo evaluate` scores them."""
    plan = BenchmarkPlan("biom-table2", str(tiny_bert_real_vocab), data=str(bench_data), output=str(tmp_path / "out"),
                         tasks=("bc5cdr_disease",), seeds=1, epochs=1, cross_corpus=True)
    report = run_benchmark(plan, progress=False, log=lambda m: None)
    cross = report["cross_corpus"]["bc5cdr_disease"]["NCBI-disease"]
    assert cross["level"] == "sentences" and cross["source"] == str(bench_data / "ner" / "NCBI-disease")
    capsys.readouterr()
    assert main(["evaluate", "ner", "--model", str(tmp_path / "out" / "cells" / "bc5cdr_disease" / "seed-42"),
                 "--data", str(bench_data / "ner" / "NCBI-disease")]) == 0
    assert cross["scores"] == [json.loads(capsys.readouterr().out.strip().splitlines()[-1])["f1"]]


def test_a_failing_cell_is_reported_and_retried(tmp_path, bench_data, tiny_bert_real_vocab, monkeypatch):
    import biozoo.train.finetune as finetune

    real = finetune.run_finetune

    def failing(kind, preset, data, output, hp, *args, **kwargs):
        if hp.seed == 43:
            raise ValueError("disk full")
        return real(kind, preset, data, output, hp, *args, **kwargs)

    monkeypatch.setattr(finetune, "run_finetune", failing)
    plan = BenchmarkPlan("biom-table2", str(tiny_bert_real_vocab), data=str(bench_data), output=str(tmp_path / "out"),
                         tasks=("ncbi_disease",), seeds=2, epochs=1)
    report = run_benchmark(plan, progress=False, log=lambda m: None)
    task = report["tasks"]["ncbi_disease"]
    assert task["seeds"] == [42] and task["missing_seeds"] == [43] and "disk full" in task["errors"]["43"]
    monkeypatch.setattr(finetune, "run_finetune", real)
    report = run_benchmark(plan, progress=False, log=lambda m: None)
    assert report["tasks"]["ncbi_disease"]["seeds"] == [42, 43]
    assert not (tmp_path / "out" / "cells" / "ncbi_disease" / "seed-43.error.json").exists()


def test_bioasq_continues_from_the_squad2_cell(tmp_path, bench_data, tiny_bert_real_vocab):
    plan = BenchmarkPlan("biom-table2", str(tiny_bert_real_vocab), data=str(bench_data), output=str(tmp_path / "out"),
                         tasks=("bioasq7b_factoid", "squad2"), seeds=1, epochs=1)
    report = run_benchmark(plan, progress=False, log=lambda m: None)
    squad_cell = tmp_path / "out" / "cells" / "squad2" / "seed-42"
    bioasq = json.loads((tmp_path / "out" / "cells" / "bioasq7b_factoid" / "seed-42" / "metrics.json").read_text())
    assert bioasq["preset"] == str(squad_cell)
    assert f"--preset {squad_cell}" in report["tasks"]["bioasq7b_factoid"]["commands"]["42"]
    assert report["tasks"]["squad2"]["recipe"]["learning_rate"] == 1e-4  # SQ. row, not Bio.
    assert report["tasks"]["bioasq7b_factoid"]["recipe"]["learning_rate"] == 2e-5


def test_dry_run_shows_cells_and_skips_with_the_reason(tmp_path, bench_data, capsys):
    out = tmp_path / "out"
    status = main(["benchmark", "biom-table2", "--preset", "biom_electra_large_discriminator", "--data",
                   str(bench_data), "--output", str(out), "--tasks", "bc5cdr_chemical", "ncbi_disease", "--dry-run",
                   "--seeds", "2"])
    printed = capsys.readouterr().out
    assert status == 0 and not out.exists()
    assert f"bc5cdr_chemical: skipped, no data: {bench_data / 'ner' / 'BC5CDR-chem'} does not exist" in printed
    # a checkpoint Table 4 lists gets its own row: BioM-ELECTRA_L, NER 5 epochs, 7e-5, batch 32
    assert printed.count("--epochs 5 --batch-size 32 --learning-rate 7e-05") == 2 and "--seed 43" in printed


@pytest.mark.slow
def test_a_killed_process_resumes(tmp_path, bench_data, tiny_bert_real_vocab):
    """A real kill (SIGKILL) of `biozoo benchmark` after its first cell: the rerun leaves that
    cell as it was and runs the others."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "biozoo", "benchmark", "biom-table2", "--preset", str(tiny_bert_real_vocab),
               "--data", str(bench_data), "--output", str(out), "--tasks", "ncbi_disease", "--seeds", "2",
               "--epochs", "1"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = out / "cells" / "ncbi_disease" / "seed-42" / "metrics.json"
    deadline = time.time() + 300
    while not first.exists() and process.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert first.exists()
    process.send_signal(signal.SIGKILL)
    process.wait()
    stamp = first.stat().st_mtime_ns
    done_before = {p.name for p in (out / "cells" / "ncbi_disease").iterdir() if (p / "metrics.json").exists()}
    assert done_before == {"seed-42"}
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert first.stat().st_mtime_ns == stamp
    report = json.loads((out / "report.json").read_text())
    assert report["tasks"]["ncbi_disease"]["seeds"] == [42, 43]


def _fake_finetune(calls, fail=(), resumable=None):
    """`run_finetune` writing what a real run's metrics.json records (its settings and a score),
    without training: the grid's bookkeeping, tested quickly. `resumable` collects the cells
    that found --checkpoint-every checkpoints to resume."""
    def run(kind, preset, data, output, hp, *args, **kwargs):
        calls.append((os.path.basename(os.path.dirname(output)), hp.seed))
        if resumable is not None and os.path.isdir(checkpoint_directory(output)):
            resumable.append(calls[-1])
        if (os.path.basename(os.path.dirname(output)), hp.seed) in fail:
            raise ValueError("out of memory")
        os.makedirs(output)
        metrics = {"task": kind, "preset": str(preset), "data": data, "hyperparameters": dataclasses.asdict(hp),
                   "test": {"squad_v2": {"f1": 50.0}, "bioasq_factoid": {"mrr": 40.0}, "f1": 60.0}}
        with open(os.path.join(output, "metrics.json"), "w") as f:
            json.dump(metrics, f)
        return metrics
    return run


def test_a_cell_trained_with_other_settings_is_retrained_with_what_continues_it(tmp_path, bench_data,
                                                                                  tiny_bert_real_vocab, monkeypatch):
    """A finished cell whose metrics.json records another learning rate (the recipe corrected
    since) is retrained, and so is the BioASQ cell that continued it; their cross-corpus scores go."""
    import biozoo.train.finetune as finetune

    calls, messages, resumed = [], [], []
    monkeypatch.setattr(finetune, "run_finetune", _fake_finetune(calls, resumable=resumed))
    plan = BenchmarkPlan("biom-table2", str(tiny_bert_real_vocab), data=str(bench_data), output=str(tmp_path / "out"),
                         tasks=("bioasq7b_factoid", "squad2"), seeds=1, epochs=1)
    run_benchmark(plan, progress=False, log=messages.append)
    assert calls == [("squad2", 42), ("bioasq7b_factoid", 42)]
    calls.clear()
    run_benchmark(plan, progress=False, log=messages.append)
    assert calls == []  # finished as planned: nothing reruns

    squad = tmp_path / "out" / "cells" / "squad2" / "seed-42" / "metrics.json"
    metrics = json.loads(squad.read_text())
    metrics["hyperparameters"]["learning_rate"] = 3e-5
    squad.write_text(json.dumps(metrics))
    scored = tmp_path / "out" / "cross_corpus" / "bioasq7b_factoid" / "seed-42" / "x.json"
    scored.parent.mkdir(parents=True)
    scored.write_text("{}")
    # checkpoints a killed --checkpoint-every run of the old BioASQ cell left: discarded with it
    old_checkpoints = checkpoint_directory(tmp_path / "out" / "cells" / "bioasq7b_factoid" / "seed-42")
    os.makedirs(old_checkpoints)
    messages.clear()
    report = run_benchmark(plan, progress=False, log=messages.append)
    assert calls == [("squad2", 42), ("bioasq7b_factoid", 42)]
    assert resumed == [] and not os.path.exists(old_checkpoints)
    assert any("stale" in m and "learning_rate 3e-05 (now 0.0001)" in m for m in messages), messages
    assert json.loads(squad.read_text())["hyperparameters"]["learning_rate"] == 1e-4
    assert not scored.exists()
    assert report["tasks"]["bioasq7b_factoid"]["seeds"] == [42]


def test_the_exit_status_is_this_runs_cells(tmp_path, bench_data, tiny_bert_real_vocab, monkeypatch, capsys):
    """A cell an earlier, larger run left unfinished is reported but does not fail a smaller
    rerun; a run where no asked task can run fails; non-positive --seeds / --epochs are refused;
    a dry run refuses an unknown checkpoint."""
    import biozoo.train.finetune as finetune

    calls = []
    monkeypatch.setattr(finetune, "run_finetune", _fake_finetune(calls, fail={("ncbi_disease", 43)}))
    command = ["benchmark", "biom-table2", "--preset", str(tiny_bert_real_vocab), "--data", str(bench_data),
               "--output", str(tmp_path / "out"), "--epochs", "1"]
    assert main(command + ["--tasks", "ncbi_disease", "--seeds", "2"]) == 1
    assert main(command + ["--tasks", "ncbi_disease", "--seeds", "1"]) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["tasks"]["ncbi_disease"]["missing_seeds"] == [43]  # still reported
    assert main(command + ["--tasks", "bc5cdr_chemical", "--seeds", "1"]) == 1  # no data for it
    assert "no task of bc5cdr_chemical could run" in capsys.readouterr().err
    for flag, value in (("--seeds", "0"), ("--seeds", "-2"), ("--epochs", "-1")):
        with pytest.raises(SystemExit):
            main(command[:-2] + [flag, value])
        assert "give a positive number" in capsys.readouterr().err
    assert main(["benchmark", "biom-table2", "--preset", "no_such_checkpoint", "--data", str(bench_data),
                 "--output", str(tmp_path / "dry"), "--dry-run"]) != 0
    assert "no_such_checkpoint" in capsys.readouterr().err


def test_a_subset_run_continues_the_finished_cell_of_the_task_it_leaves_out(tmp_path, bench_data,
                                                                            tiny_bert_real_vocab, monkeypatch):
    """`--tasks bioasq7b_factoid` after a run of SQuAD2.0 and BioASQ: the BioASQ cells continue the
    finished SQuAD2.0 cells and stay done (nothing retrained); a new seed whose SQuAD2.0 cell does
    not exist is not trained from the pretrained checkpoint: its error names the missing cell."""
    import biozoo.train.finetune as finetune

    calls = []
    monkeypatch.setattr(finetune, "run_finetune", _fake_finetune(calls))
    both = BenchmarkPlan("biom-table2", str(tiny_bert_real_vocab), data=str(bench_data), output=str(tmp_path / "out"),
                         tasks=("squad2", "bioasq7b_factoid"), seeds=1, epochs=1)
    run_benchmark(both, progress=False, log=lambda m: None)
    bioasq = tmp_path / "out" / "cells" / "bioasq7b_factoid" / "seed-42" / "metrics.json"
    stamp = bioasq.stat().st_mtime_ns
    calls.clear()
    subset = dataclasses.replace(both, tasks=("bioasq7b_factoid",))
    report = run_benchmark(subset, progress=False, log=lambda m: None)
    assert calls == [] and bioasq.stat().st_mtime_ns == stamp
    assert report["tasks"]["bioasq7b_factoid"]["seeds"] == [42]
    assert f"--preset {tmp_path / 'out' / 'cells' / 'squad2' / 'seed-42'}" in \
        report["tasks"]["bioasq7b_factoid"]["commands"]["42"]

    report = run_benchmark(dataclasses.replace(subset, seeds=2), progress=False, log=lambda m: None)
    assert calls == []
    task = report["tasks"]["bioasq7b_factoid"]
    assert task["seeds"] == [42] and task["missing_seeds"] == [43]
    missing = str(tmp_path / "out" / "cells" / "squad2" / "seed-43" / "metrics.json")
    assert missing in task["errors"]["43"] and "add squad2 to --tasks" in task["errors"]["43"]


def test_a_finished_cell_whose_parent_cannot_run_is_kept_not_discarded(tmp_path, bench_data, tiny_bert_real_vocab,
                                                                       monkeypatch):
    """A BioASQ cell an earlier biozoo trained from the pretrained checkpoint (stale now: it continues
    the SQuAD2.0 cell), rerun with `--tasks bioasq7b_factoid` and no SQuAD2.0 cell: nothing could
    train it again, so it is kept as it is (reported stale), never deleted."""
    import biozoo.train.finetune as finetune

    calls = []
    monkeypatch.setattr(finetune, "run_finetune", _fake_finetune(calls))
    both = BenchmarkPlan("biom-table2", str(tiny_bert_real_vocab), data=str(bench_data), output=str(tmp_path / "out"),
                         tasks=("squad2", "bioasq7b_factoid"), seeds=1, epochs=1)
    run_benchmark(both, progress=False, log=lambda m: None)
    shutil.rmtree(tmp_path / "out" / "cells" / "squad2")
    bioasq = tmp_path / "out" / "cells" / "bioasq7b_factoid" / "seed-42" / "metrics.json"
    metrics = json.loads(bioasq.read_text())
    bioasq.write_text(json.dumps({**metrics, "preset": str(tiny_bert_real_vocab)}))  # as the old planner trained it
    calls.clear()
    logged = []
    report = run_benchmark(dataclasses.replace(both, tasks=("bioasq7b_factoid",)), progress=False, log=logged.append)
    assert calls == [] and bioasq.is_file() and json.loads(bioasq.read_text())["test"] == metrics["test"]
    assert not (tmp_path / "out" / "cells" / "bioasq7b_factoid" / "seed-42.error.json").exists()
    assert any("kept as it is, not run" in line for line in logged)
    assert "was trained with" in report["tasks"]["bioasq7b_factoid"]["errors"]["42"]  # stale: not this run's score


def test_dry_run_shows_the_cells_a_run_left_as_done(tmp_path, bench_data, tiny_bert_real_vocab, monkeypatch,
                                                    capsys):
    """`--dry-run` plans what the run plans (relative --data and --output, sequence lengths cut to
    the model's 64 positions): after a run, every cell it finished is shown done."""
    import biozoo.train.finetune as finetune

    monkeypatch.setattr(finetune, "run_finetune", _fake_finetune([]))
    monkeypatch.chdir(tmp_path)
    command = ["benchmark", "biom-table2", "--preset", str(tiny_bert_real_vocab), "--data",
               os.path.relpath(bench_data, tmp_path), "--output", "out", "--tasks", "ncbi_disease", "squad2",
               "bioasq7b_factoid", "--seeds", "1", "--epochs", "1"]
    assert main(command) == 0
    capsys.readouterr()
    assert main(command + ["--dry-run"]) == 0
    shown = [line for line in capsys.readouterr().out.splitlines() if " seed 42 (" in line]
    assert len(shown) == 3 and all("(done)" in line for line in shown), shown


def test_litcovid_is_skipped_as_unsupported_with_the_reason(tmp_path, bench_data):
    """LitCovid's 7 topics do not fit the HoC layout's 10 labels: the grid skips the task saying
    so instead of failing every cell."""
    plan = BenchmarkPlan("bioformer-table3", "bioformer_8l", data=str(bench_data), output=str(tmp_path / "out"),
                         tasks=("litcovid",), seeds=1)
    cells, skipped, _ = plan_cells(plan, load_suite("bioformer-table3"), "base")
    assert cells == [] and skipped["litcovid"].startswith("not supported: LitCovid has 7 topic labels")


def test_a_killed_unfinished_cell_keeps_its_checkpoints_to_resume(tmp_path, bench_data, tiny_bert_real_vocab,
                                                                  monkeypatch):
    """Only a retrained (stale) cell loses its --checkpoint-every checkpoints: a cell killed before
    it finished resumes them on the rerun."""
    import biozoo.train.finetune as finetune

    calls, resumed = [], []
    monkeypatch.setattr(finetune, "run_finetune", _fake_finetune(calls, fail={("ncbi_disease", 42)}))
    plan = BenchmarkPlan("biom-table2", str(tiny_bert_real_vocab), data=str(bench_data), output=str(tmp_path / "out"),
                         tasks=("ncbi_disease",), seeds=1, epochs=1, checkpoint_every=5)
    run_benchmark(plan, progress=False, log=lambda m: None)
    checkpoints = checkpoint_directory(tmp_path / "out" / "cells" / "ncbi_disease" / "seed-42")
    os.makedirs(checkpoints)  # what the killed run had written
    monkeypatch.setattr(finetune, "run_finetune", _fake_finetune(calls, resumable=resumed))
    run_benchmark(plan, progress=False, log=lambda m: None)
    assert resumed == [("ncbi_disease", 42)]
