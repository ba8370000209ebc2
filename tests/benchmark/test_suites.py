"""Benchmark suites as data: recipes against the papers' text, scores, published values."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from biozoo import registry
from biozoo.benchmark.download import data_sources
from biozoo.benchmark.suites import load_suite, model_size, score_value, suite_names

HERE = Path(__file__).resolve().parent
TRANSCRIPTION = json.loads((HERE / "paper_tables.json").read_text(encoding="utf-8"))
WORDS = {"three": 3, "five": 5}


def _normalise(text):
    return re.sub(r"\s+", " ", text).strip()


def _number(written):
    return WORDS.get(written, None) or float(written)


@pytest.mark.parametrize("entry", TRANSCRIPTION["entries"], ids=lambda e: f"{e['suite']}-{e['task']}-{e['size']}")
def test_recipe_numbers_are_the_papers(entry):
    """Every recipe number equals the one the transcription reads in the paper, written there as
    the transcription says."""
    suite = load_suite(entry["suite"])
    recipe = suite.recipe(entry["task"], entry["size"])
    quote = entry.get("external", {}).get("quote") or entry["quote"]  # where the numbers are written
    for key, written in entry["written"].items():
        # the number as a whole token of the quote ("4" does not match inside "2e-4" or "48")
        assert re.search(rf"(?<![\w.-]){re.escape(written)}(?![\w-]|\.\d)", quote), (key, written)
        assert recipe[key] == pytest.approx(_number(written), rel=1e-12), (entry["where"], key)
        assert key not in recipe["defaults"]


@pytest.mark.parametrize("name", sorted(TRANSCRIPTION["files"]))
def test_quotes_are_in_the_papers(name, shared_data):
    text = _normalise((shared_data.parent / TRANSCRIPTION["files"][name]).read_text(encoding="utf-8"))
    quotes = [e["quote"] for e in TRANSCRIPTION["entries"] if e["file"] == name]
    assert quotes
    for quote in quotes:
        assert _normalise(quote) in text, quote


def _row(suite, task):
    """Which row of the paper a task's recipe is: per task (BLURB), per QA data set (BioM), or
    per task kind."""
    if suite.name == "blurb" or task.name in suite.recipes.get("sizes", {}).get("base", {}):
        return task.name
    if suite.name == "biom-table2" and task.kind == "qa":
        return task.name
    return task.kind


def test_every_recipe_number_is_transcribed():
    """No recipe number in suites.json goes unchecked: every number a supported task's recipe
    takes from the paper (not a biozoo default) has a transcription entry for its row."""
    covered = {(e["suite"], _row(load_suite(e["suite"]), load_suite(e["suite"]).tasks[e["task"]]), e["size"], key)
               for e in TRANSCRIPTION["entries"] for key in e["written"]}
    checked = 0
    for name in suite_names():
        suite = load_suite(name)
        sizes = suite.recipes.get("sizes") or suite.recipes["size_rows"]
        for size in sizes:
            for task in suite.tasks.values():
                if task.unsupported:
                    continue
                recipe = suite.recipe(task, size)
                for key in ("epochs", "learning_rate", "batch_size", "max_seq_length"):
                    if key not in recipe["defaults"]:
                        assert (name, _row(suite, task), size, key) in covered, (name, task.name, size, key)
                        checked += 1
    assert checked > 100


def test_paper_left_open_values_are_biozoo_defaults_and_said():
    recipe = load_suite("compact").recipe("bioasq7b_factoid", "tiny")
    assert recipe["defaults"] == ["epochs", "max_seq_length"]
    assert recipe["epochs"] == 3.0 and recipe["max_seq_length"] == 384


def test_biom_checkpoint_in_table_uses_its_own_row():
    suite = load_suite("biom-table2")
    own = suite.recipe("chemprot", "large", preset="biom_albert_xxlarge")
    assert (own["epochs"], own["learning_rate"], own["batch_size"]) == (5, 3e-5, 128)
    assert "BioM-ALBERT" in own["from"]
    assert suite.recipe("chemprot", "tiny")["learning_rate"] == 1e-4  # nearest size: base


def test_model_size_from_hidden_width():
    assert [model_size({"hidden_dim": h}) for h in (312, 384, 768, 1024, 4096)] == \
        ["tiny", "tiny", "base", "large", "large"]


def test_published_values_are_the_registrys():
    suite = load_suite("biom-table2")
    result = suite.published("biom_electra_large_discriminator", suite.tasks["ncbi_disease"])
    entry = [r for r in registry.get_entry("biom_electra_large_discriminator")["reported_results"]
             if r["task"] == "NER NCBI-disease" and r["source"] == "BioM-Transformers, Table 2"]
    assert result == entry[0]
    assert suite.published(None, suite.tasks["ncbi_disease"]) is None


def test_every_published_reference_exists_in_the_registry():
    """A suite task naming a result no checkpoint reports would silently compare with nothing."""
    results = {(r["source"], r["task"], r["metric"]) for name in registry.list_presets()
               for r in registry.get_entry(name)["reported_results"]}
    for name in suite_names():
        suite = load_suite(name)
        wanted = [t.published for t in suite.tasks.values() if t.published]
        if suite.average and suite.average.get("published"):
            wanted.append(suite.average["published"])
        for published in wanted:
            assert any((source, published["task"], published["metric"]) in results
                       for source in suite.results_sources), (name, published)


def test_each_task_is_scored_on_the_split_its_published_values_are_on():
    """Bioformer's Table 3 gives LitCovid on the development set (its note 1, the registry's
    `split`); a task compared with it is scored on dev, every other on test."""
    for name in suite_names():
        suite = load_suite(name)
        for task in suite.tasks.values():
            splits = {r.get("split") or "test" for checkpoint in registry.list_presets()
                      for r in registry.get_entry(checkpoint)["reported_results"]
                      if task.published and r["source"] in suite.results_sources
                      and (r["task"], r["metric"]) == (task.published["task"], task.published["metric"])}
            assert splits <= {task.split}, (name, task.name, splits, task.split)
    assert load_suite("bioformer-table3").tasks["litcovid"].split == "dev"


def test_every_task_data_folder_has_a_source_entry():
    sources = data_sources()
    for name in suite_names():
        for task in load_suite(name).tasks.values():
            assert task.data in sources, (name, task.name, task.data)


def test_macro_f1_equals_sklearn_over_the_tasks_labels():
    """ChemProt's macro F1 averages over its five CPR classes (the task's `labels`), also where
    some class is neither in gold nor predicted (F1 0, sklearn's zero_division=0) or none is."""
    from sklearn.metrics import f1_score

    from biozoo.metrics.relation import micro_prf

    task = load_suite("bioformer-table3").tasks["chemprot"]
    assert task.labels == ("CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9")
    rng = np.random.default_rng(0)
    for seen in (list(task.labels), ["CPR:3", "CPR:4"], []):
        choices = seen + ["false"]
        gold = list(rng.choice(choices, 40))
        pred = [g if rng.random() < 0.6 else rng.choice(choices) for g in gold]
        ours = score_value(micro_prf(gold, pred, "false"), task.score, task.labels)
        expected = 100 * f1_score(gold, pred, labels=list(task.labels), average="macro", zero_division=0)
        assert ours == pytest.approx(expected, abs=1e-9), seen


def test_a_macro_f1_task_without_labels_is_refused(monkeypatch):
    import biozoo.benchmark.suites as suites

    document = json.loads(json.dumps(suites._document()))
    del document["suites"]["compact"]["tasks"]["chemprot"]["labels"]
    monkeypatch.setattr(suites, "_document", lambda: document)
    with pytest.raises(ValueError, match=r"suites\.compact\.tasks\.chemprot .*\"labels\""):
        load_suite("compact")


def test_score_paths_and_means():
    scores = {"bioasq_factoid": {"strict_accuracy": 30.0, "lenient_accuracy": 45.0, "mrr": 36.0}}
    assert score_value(scores, "bioasq_factoid.mrr") == 36.0
    assert score_value(scores, "mean(bioasq_factoid.strict_accuracy, bioasq_factoid.lenient_accuracy, "
                               "bioasq_factoid.mrr)") == pytest.approx(37.0)
    with pytest.raises(KeyError, match="squad_v2"):
        score_value(scores, "squad_v2.f1")


def test_package_data_is_declared():
    setup = (HERE.parents[1] / "setup.py").read_text(encoding="utf-8")
    assert '"biozoo.benchmark": ["suites.json", "data_sources.json"]' in setup


def test_tasks_on_bio_electras_bioasq_chemprot_and_gad_say_how_the_data_differ():
    """qa/bioasq, re/chemprot and re/gad are not the sets the papers measured on: every task on
    them carries its data note, which names the data folder it describes."""
    flagged = 0
    for name in suite_names():
        for task in load_suite(name).tasks.values():
            if task.data in ("qa/bioasq", "re/chemprot", "re/gad"):
                assert task.data_differs and task.data in task.data_differs, (name, task.name)
                flagged += 1
    assert flagged == 11


def test_bioformers_squad1_step_is_berts_squad_recipe_not_the_20_epoch_grid():
    """The paper's QA follows the original BERT procedure: the SQuAD1.1 step trains the BERT paper's
    SQuAD v1.1 recipe (3 epochs, not the grid's 20: about 110k steps at batch 16), at the QA length,
    and its recipe says where from."""
    suite = load_suite("bioformer-table3")
    recipe = suite.recipe("squad1", "base")
    assert (recipe["epochs"], recipe["learning_rate"], recipe["batch_size"], recipe["max_seq_length"]) == \
        (3, 5e-5, 32, 384)
    assert "original BERT" in recipe["from"] and "arXiv:1810.04805" in recipe["from"]
    assert recipe["defaults"] == ["max_seq_length"]
    assert suite.recipe("bioasq7b_factoid_squad1", "base")["epochs"] == 20
    assert "BERT" in suite.tasks["squad1"].note
