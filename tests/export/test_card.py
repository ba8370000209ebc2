"""`biozoo card`: the hub's model-card format, checked against the registry; the HF and TF Hub
exports of a registry checkpoint carry it."""

import json
import re

import pytest
import yaml

from biozoo import registry
from biozoo import testing as H
from biozoo.cli import main


def _front_matter(text):
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match, text[:200]
    return yaml.safe_load(match[1])


def _table_rows(text, heading):
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| task")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


@pytest.mark.parametrize("name", ["bioformer_8l", "bio_distilbert_cased", "biom_electra_large_squad2",
                                  "biomegatron_345m_uncased", "bioformer_8l_mnli"])
def test_card_matches_the_registry(name, tmp_path, capsys):
    assert main(["card", name, "--output", str(tmp_path / "README.md")]) == 0
    text = (tmp_path / "README.md").read_text(encoding="utf-8")
    entry = registry.get_entry(name)
    meta = _front_matter(text)
    # the hub's licence field only where the HF repo itself tags one; else "other" with a link
    expected = {"bioformer_8l": "apache-2.0", "bio_distilbert_cased": "mit", "biom_electra_large_squad2": "other",
                "biomegatron_345m_uncased": "cc-by-4.0", "bioformer_8l_mnli": "other"}[name]
    assert meta["license"] == expected
    if expected == "other":
        assert meta["license_link"] == entry["license"]["url"]
    assert "biozoo" in meta["tags"] and meta["language"] == ["en"]
    base = registry.get_entry(entry["task"]["base"]) if entry.get("task") else entry
    assert meta["base_model"] == base["sources"]["hf"]["repo"]
    rows = _table_rows(text, "Reported results")
    assert len(rows) == len(entry["reported_results"])
    for row, result in zip(rows, entry["reported_results"]):
        task, metric, value, _, source, applies = row
        assert (task, metric, source) == (result["task"], result["metric"], result["source"])
        assert float(value) == result["value"]
        assert applies == ("this checkpoint" if result["applies_to"] == "this_checkpoint" else result["other_checkpoint"])
    assert f'biozoo.from_preset("{name}")' in text and entry["sources"]["hf"]["revision"] in text


def test_plot_of_the_family(tmp_path):
    main(["card", "bioformer_8l", "--output", str(tmp_path / "README.md")])
    assert (tmp_path / "README_parameters_f1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![parameters against reported F1](README_parameters_f1.png)" in (tmp_path / "README.md").read_text()


def _plot_of(card):
    return card.parent / re.search(r"!\[parameters against reported F1\]\((.+?)\)", card.read_text())[1]


def test_cards_in_one_folder_keep_their_own_plots(tmp_path, capsys):
    """Two families' cards in one folder: each links its own plot, and the second leaves the
    first's alone; a plot that exists is replaced only with --overwrite, as the card is."""
    first, second = tmp_path / "bioformer.md", tmp_path / "albert.md"
    assert main(["card", "bioformer_8l", "--output", str(first)]) == 0
    first_plot = _plot_of(first).read_bytes()
    assert main(["card", "biom_albert_xxlarge", "--output", str(second)]) == 0
    assert _plot_of(first) != _plot_of(second)
    assert _plot_of(first).read_bytes() == first_plot and _plot_of(second).read_bytes() != first_plot

    first.unlink()  # the card is gone, its plot is not: writing the card again must not replace the plot silently
    capsys.readouterr()
    assert main(["card", "bioformer_8l", "--output", str(first)]) != 0
    assert f"{tmp_path / 'bioformer_parameters_f1.png'} exists" in capsys.readouterr().err
    assert not first.exists()
    assert main(["card", "bioformer_8l", "--output", str(first), "--overwrite"]) == 0
    assert _plot_of(first).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_exports_of_a_registry_checkpoint_carry_the_card(tmp_path, monkeypatch, capsys):
    H.offline_registry_mirror(monkeypatch, tmp_path, "pubmedbert_abstract")
    hf = registry.get_entry("pubmedbert_abstract")["sources"]["hf"]
    assert main(["export", "hf", "--preset", "pubmedbert_abstract", "--output", str(tmp_path / "hf_out")]) == 0
    card = (tmp_path / "hf_out" / "README.md").read_text(encoding="utf-8")
    assert _front_matter(card)["license"] == "mit" and "# PubMedBERT" in card.replace("# BiomedBERT", "# PubMedBERT")
    # what the export is, not the preset: transformers' bare encoder (the masked-LM head is not written)
    assert "mlm" in registry.get_entry("pubmedbert_abstract")["heads"]  # the premise: the preset's card says fill-mask
    assert _front_matter(main_card(tmp_path))["pipeline_tag"] == "fill-mask"
    meta = _front_matter(card)
    assert (meta["library_name"], meta["pipeline_tag"]) == ("transformers", "feature-extraction")
    assert json.loads((tmp_path / "hf_out" / "config.json").read_text())["architectures"] == ["BertModel"]
    assert main(["export", "hub", "--preset", "pubmedbert_abstract", "--output", str(tmp_path / "hub"),
                 "--seq-length", "64"]) == 0
    hub_readme = (tmp_path / "hub" / "README.md").read_text(encoding="utf-8")
    assert _front_matter(hub_readme)["base_model"] == hf["repo"] and "pooled_output" in hub_readme
    # a SavedModel: no library the hub names loads it (not KerasHub)
    meta = _front_matter(hub_readme)
    assert "library_name" not in meta and meta["pipeline_tag"] == "feature-extraction" and "tensorflow" in meta["tags"]


def main_card(tmp_path):
    assert main(["card", "pubmedbert_abstract", "--output", str(tmp_path / "card.md")]) == 0
    return (tmp_path / "card.md").read_text(encoding="utf-8")
