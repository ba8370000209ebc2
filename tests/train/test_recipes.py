"""The BioM-Transformers recipe table (Appendix Table 4) and its lookup."""

import json
from pathlib import Path

import pytest

from biozoo import registry
from biozoo.train import recipes
from biozoo.train.recipes import RecipeError, biom_recipe


def test_ner_biom_electra_large_matches_table_4():
    r = biom_recipe("biom_electra_large_discriminator", "ner", "NCBI-disease")
    assert (r["epochs"], r["learning_rate"], r["batch_size"]) == (5, 7e-5, 32)
    assert r["model"] == "BioM-ELECTRA-Large" and r["table_task"] == "NER"
    assert r["dataset"] == "NCBI-disease" and r["dataset_in_paper"]
    assert "Table 4" in r["source"]


def test_re_biom_albert_xxlarge_matches_table_4():
    for preset in ("biom_albert_xxlarge", "biom_albert_xxlarge_pmc"):
        r = biom_recipe(preset, "re", "chemprot")
        assert (r["epochs"], r["learning_rate"], r["batch_size"]) == (5, 3e-5, 128)


def test_qa_rows_per_dataset():
    squad = biom_recipe("biom_electra_large_discriminator", "qa", "squad2")
    bioasq = biom_recipe("biom_electra_large_discriminator", "qa", "/data/qa/bioasq")  # a data directory
    assert (squad["epochs"], squad["learning_rate"], squad["batch_size"]) == (3, 5e-5, 32)
    assert (bioasq["epochs"], bioasq["learning_rate"], bioasq["batch_size"]) == (4, 2e-5, 24)
    assert (squad["table_task"], bioasq["table_task"]) == ("SQ.", "Bio.")
    # A SQuAD2.0 fine-tune continues on BioASQ by default.
    r = biom_recipe("biom_albert_xxlarge_squad2", "qa")
    assert (r["dataset"], r["epochs"], r["learning_rate"], r["batch_size"]) == ("bioasq", 3, 1e-5, 128)


def test_ner_row_applies_to_other_datasets_but_says_so():
    r = biom_recipe("biom_electra_base_discriminator", "ner", "jnlpba")
    assert (r["epochs"], r["learning_rate"], r["batch_size"]) == (5, 2e-4, 48)
    assert r["dataset_in_paper"] is False


def test_every_named_preset_is_registered_and_values_are_well_formed():
    doc = recipes.biom_document()
    named = [p for m in doc["models"].values() for p in m.get("presets", []) + m.get("squad2_presets", [])]
    assert named and len(named) == len(set(named))
    for name in named:
        assert registry.is_registered(name), name
    for model, info in doc["models"].items():
        assert set(info["tasks"]) <= set(doc["task_kinds"]), model
        for kind, entry in info["tasks"].items():
            rows = entry.values() if doc["task_kinds"][kind]["per_dataset"] else [entry]
            for row in rows:
                assert isinstance(row["epochs"], int) and 1 <= row["epochs"] <= 5
                assert isinstance(row["batch_size"], int) and row["batch_size"] in (16, 24, 32, 48, 64, 128)
                assert 1e-5 <= row["learning_rate"] <= 2e-4


def test_package_data_is_declared():
    setup = (Path(__file__).resolve().parents[2] / "setup.py").read_text(encoding="utf-8")
    assert "biom_recipes.json" in setup


def test_hub_id_resolution():
    expected = biom_recipe("biom_electra_large_discriminator", "re")
    for handle in ("sultan/BioM-ELECTRA-Large-Discriminator", "hf://sultan/BioM-ELECTRA-Large-Discriminator",
                   "hf://sultan/BioM-ELECTRA-Large-Discriminator@main", "sultan/bioM-electra-large-discriminator"):
        r = biom_recipe(handle, "re")
        assert r["preset"] == "biom_electra_large_discriminator"
        assert r == expected
    # An alias id (PubMedBERT's pre-2023 name) resolves too.
    r = biom_recipe("microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract", "qa", "bioasq")
    assert (r["preset"], r["epochs"], r["learning_rate"], r["batch_size"]) == ("pubmedbert_abstract", 3, 1e-5, 128)


def test_local_directory_resolution(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "biozoo.json").write_text(json.dumps({"registry_name": "biom_bert_large", "hf_repo": "x/y"}))
    r = biom_recipe(str(tmp_path), "qa", "squad2")
    assert (r["preset"], r["epochs"], r["learning_rate"], r["batch_size"]) == ("biom_bert_large", 5, 5e-5, 48)
    hf_dir = tmp_path / "hf"
    hf_dir.mkdir()
    (hf_dir / "config.json").write_text(json.dumps({"_name_or_path": "sultan/BioM-ELECTRA-Base-Discriminator"}))
    assert biom_recipe(str(hf_dir), "ner")["preset"] == "biom_electra_base_discriminator"


def test_unknown_preset_lists_covered_models():
    with pytest.raises(RecipeError) as info:
        biom_recipe("biobert_v1_1", "ner")
    message = str(info.value)
    assert "biobert_v1_1" in message
    for name in ("biom_electra_large_discriminator", "biom_albert_xxlarge", "biom_bert_large", "BioM-ELECTRA-Base"):
        assert name in message
    with pytest.raises(KeyError, match="It covers"):  # RecipeError is a KeyError
        biom_recipe("someone/unknown-model", "ner")


def test_missing_kind_names_available_kinds():
    with pytest.raises(RecipeError, match=r"no 'ner' row for PubMedBERT .*task kinds available for it: qa"):
        biom_recipe("pubmedbert_fulltext", "ner")
    with pytest.raises(RecipeError, match=r"task kinds available for it: ner, qa, re"):
        biom_recipe("biom_electra_base_discriminator", "doc")


def test_missing_dataset_names_available_datasets():
    with pytest.raises(RecipeError, match=r"pass dataset= one of: squad2, bioasq"):
        biom_recipe("biom_electra_large_discriminator", "qa")
    with pytest.raises(RecipeError, match=r"datasets available for it: squad2"):
        biom_recipe("biom_bert_large", "qa", "bioasq")  # Table 4 has no Bio. row for BioM-BERT_L


def test_squad2_preset_is_qa_only():
    with pytest.raises(RecipeError, match=r"already fine-tuned on SQuAD2.0.*biom_electra_large_discriminator"):
        biom_recipe("biom_electra_large_squad2", "ner")


def test_finetune_output_resolves_to_its_starting_preset(tmp_path):
    """A SQuAD2.0 run's output (metrics.json names the preset it started from) continuing on BioASQ."""
    squad = tmp_path / "squad2-run"
    squad.mkdir()
    (squad / "metrics.json").write_text(json.dumps({"task": "qa", "preset": "biom_electra_base_discriminator"}))
    bioasq = tmp_path / "bioasq-run"
    bioasq.mkdir()
    (bioasq / "metrics.json").write_text(json.dumps({"task": "qa", "preset": str(squad)}))
    for directory in (squad, bioasq):
        r = biom_recipe(str(directory), "qa", "bioasq")
        assert (r["preset"], r["epochs"], r["learning_rate"], r["batch_size"]) == (
            "biom_electra_base_discriminator", 4, 2e-5, 24)
