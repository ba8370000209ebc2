"""Task checkpoints in the registry (published fine-tunes: NER, classification, QA).

The expected values are copied by hand from the hub pages and model cards the entries cite
(task.evidence); none is read back from the registry. The schema checks at the end prove the
schema rejects malformed task entries, so the validation test cannot pass vacuously.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path

import pytest

import biozoo
from biozoo import registry
from biozoo.cli import main

ROOT = Path(__file__).resolve().parents[1]
REGISTRY_PATH = ROOT / "checkpoints_registry.json"
SCHEMA_PATH = ROOT / "biozoo" / "registry_schema.json"

# name -> (kind, HF class, labels in id order or None, base, hub repo)
TASKS = {
    "bioformer_8l_squad1": ("qa", "BertForQuestionAnswering", None, "bioformer_8l", "bioformers/bioformer-8L-squad1"),
    "bioformer_8l_qnli": ("re", "BertForSequenceClassification", ["entailment", "not_entailment"],
                          "bioformer_8l", "bioformers/bioformer-8L-qnli"),
    "bioformer_8l_mnli": ("re", "BertForSequenceClassification", ["entailment", "neutral", "contradiction"],
                          "bioformer_8l", "bioformers/bioformer-8L-mnli"),
    "bioformer_8l_bc2gm": ("ner", "BertForTokenClassification", ["B-bio", "I-bio", "O"], "bioformer_8l",
                           "bioformers/bioformer-8L-bc2gm"),
    "bioformer_8l_ncbi_disease": ("ner", "BertForTokenClassification", ["B-bio", "I-bio", "O"], "bioformer_8l",
                                  "bioformers/bioformer-8L-ncbi-disease"),
    "bioformer_16l_squad1": ("qa", "BertForQuestionAnswering", None, "bioformer_16l", "bioformers/bioformer-16L-squad1"),
    "bioformer_16l_squad2": ("qa", "BertForQuestionAnswering", None, "bioformer_16l_squad1",
                             "bioformers/bioformer-16L-squad2"),
    "biom_electra_base_squad2": ("qa", "ElectraForQuestionAnswering", None, "biom_electra_base_discriminator",
                                 "sultan/BioM-ELECTRA-Base-SQuAD2"),
    "biom_electra_base_squad2_bioasq8b": ("qa", "ElectraForQuestionAnswering", None, "biom_electra_base_squad2",
                                          "sultan/BioM-ELECTRA-Base-SQuAD2-BioASQ8B"),
    "biom_electra_large_squad2": ("qa", "ElectraForQuestionAnswering", None, "biom_electra_large_discriminator",
                                  "sultan/BioM-ELECTRA-Large-SQuAD2"),
    "biom_electra_large_squad2_bioasq8b": ("qa", "ElectraForQuestionAnswering", None, "biom_electra_large_squad2",
                                           "sultan/BioM-ELECTRA-Large-SQuAD2-BioASQ8B"),
    "biom_albert_xxlarge_squad2": ("qa", "AlbertForQuestionAnswering", None, "biom_albert_xxlarge",
                                   "sultan/BioM-ALBERT-xxlarge-SQuAD2"),
    "biobert_v1_1_squad": ("qa", "BertForQuestionAnswering", None, "biobert_v1_1", "dmis-lab/biobert-base-cased-v1.1-squad"),
}
TASK_NAMES = sorted(TASKS)
AIONER = ["aioner_bioformer", "aioner_pubmedbert"]  # task entries of another kind: Keras .h5 in an archive

# Pinned commits read on the hub pages / HF API snapshots (first 7 hex digits).
PINS = {
    "bioformer_8l_squad1": "6ee3e45", "bioformer_8l_qnli": "6f1e92e", "bioformer_8l_mnli": "3fd8b3e",
    "bioformer_8l_bc2gm": "5b0c1d8", "bioformer_8l_ncbi_disease": "8719004", "bioformer_16l_squad1": "f50d4f9",
    "bioformer_16l_squad2": "322dafd", "biom_electra_base_squad2": "d94a78b",
    "biom_electra_base_squad2_bioasq8b": "c564bf9", "biom_electra_large_squad2_bioasq8b": "1dfc7f8",
    "biobert_v1_1_squad": "aa11b70",
}

# (name, dataset prefix, metric) -> value, from the model cards / eval files.
REPORTED = {
    ("bioformer_8l_squad1", "SQuAD v1.1", "F1"): 85.91,
    ("bioformer_8l_squad1", "SQuAD v1.1", "EM"): 78.55,
    ("bioformer_8l_qnli", "QNLI", "accuracy"): 88.3397,
    ("bioformer_8l_mnli", "MNLI", "accuracy"): 80.3973,
    ("biom_electra_base_squad2", "SQuAD2.0", "F1"): 81.2026,
    ("biom_electra_base_squad2_bioasq8b", "BioASQ8B", "F1"): 80.90,
    ("biom_electra_large_squad2_bioasq8b", "BioASQ8B", "EM"): 74.31,
    ("biom_electra_large_squad2", "SQuAD2.0", "F1"): 87.49,
    ("biom_albert_xxlarge_squad2", "SQuAD2.0", "F1"): 85.7964,
}

# Architecture keys a fine-tune shares with the checkpoint it was fine-tuned from.
ARCH_KEYS = ("model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
             "intermediate_size", "embedding_size", "max_position_embeddings", "type_vocab_size", "hidden_act")


@functools.lru_cache(maxsize=1)
def _registry():
    with open(REGISTRY_PATH, encoding="utf-8") as f:
        return json.load(f)


@functools.lru_cache(maxsize=1)
def _schema():
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        return json.load(f)


def _entry(name):
    return _registry()["checkpoints"][name]


def _validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = _schema()
    return jsonschema.validators.validator_for(schema)(schema)


def _errors(document):
    return [f"{list(e.path)}: {e.message}" for e in _validator().iter_errors(document)]


def _registry_with(name, entry):
    document = copy.deepcopy(_registry())
    document["checkpoints"][name] = entry
    return document


def _resolve(entry, path):
    node = entry
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


# ------------------------------------------------------------------ which entries are tasks

def test_exactly_the_expected_task_entries():
    tasks = {name for name, e in _registry()["checkpoints"].items() if "task" in e and "aioner" not in e["task"]}
    assert tasks == set(TASKS), f"missing: {sorted(set(TASKS) - tasks)}; unexpected: {sorted(tasks - set(TASKS))}"


def test_aioner_entries_name_the_archive_members_labels_and_types():
    """AIONER's models are Keras .h5 files in one archive; the entry says which, and the 19 AIO
    labels (vocab/AIO_label.vocab of github ncbi/AIONER) in id order."""
    labels = ["O", "O-CellLine", "O-Species", "O-Variant", "O-Chemical", "O-Gene", "O-Disease"] + [
        f"{p}-{t}" for t in ("CellLine", "Species", "Variant", "Chemical", "Gene", "Disease") for p in "BI"]
    expected = {"aioner_bioformer": ("AIONER/Bioformer-softmax-AIONER.h5", "bioformer-cased-v1.0", "softmax", False, "bioformer_8l"),
                "aioner_pubmedbert": ("AIONER/PubmedBERT-CRF-AIONER.h5", "BiomedNLP-PubMedBERT-base-uncased-abstract",
                                      "crf", True, "pubmedbert_abstract")}
    found = {name for name, e in _registry()["checkpoints"].items() if "aioner" in e.get("task", {})}
    assert found == set(expected)
    for name, (model_file, base_dir, decoder, lowercase, base) in expected.items():
        entry = registry.get_entry(name)
        spec = entry["task"]["aioner"]
        assert (spec["model_file"], spec["base_dir"], spec["decoder"], spec["lowercase"]) == (model_file, base_dir, decoder, lowercase)
        assert entry["task"]["label_names"] == labels and entry["task"]["base"] == base
        assert entry["sources"]["hf"]["repo"] == "lingbionlp/AIONER-0415" and entry["sources"]["hf"]["weights"] == spec["archive"]
        assert set(spec["entity_types"]) == {"Gene", "Chemical", "Disease", "Species", "Variant", "CellLine"}
        assert entry["config"]["vocab_size"] == entry["tokenizer"]["vocab_size"] + 14  # the marker tokens
        assert entry["tokenizer"]["lowercase"] is lowercase


def test_squad2_checkpoints_are_qa_tasks():
    for name in ("biom_electra_large_squad2", "biom_albert_xxlarge_squad2"):
        assert registry.is_task(name)
        assert registry.get_entry(name)["task"]["kind"] == "qa"
    assert not registry.is_task("biom_electra_large_discriminator") and not registry.is_task("no_such_name")


@pytest.mark.parametrize("name", TASK_NAMES)
def test_task_facts(name):
    kind, hf_class, labels, base, repo = TASKS[name]
    e = _entry(name)
    task = e["task"]
    assert (task["kind"], task["hf_class"], task.get("label_names"), task["base"]) == (kind, hf_class, labels, base)
    assert e["sources"]["hf"]["repo"] == repo
    if name in PINS:
        assert e["sources"]["hf"]["revision"].startswith(PINS[name])


@pytest.mark.parametrize("name", TASK_NAMES)
def test_task_entry_validates_on_its_own(name):
    # the whole registry with only this task entry (plus the backbones) is valid
    document = copy.deepcopy(_registry())
    document["checkpoints"] = {n: e for n, e in document["checkpoints"].items() if "task" not in e or n == name}
    assert not _errors(document)


# ------------------------------------------------------------------ labels, class, head

@pytest.mark.parametrize("name", TASK_NAMES)
def test_labels_match_the_recorded_config(name):
    e = _entry(name)
    task = e["task"]
    id2label = e["config"].get("id2label")
    if task["kind"] == "qa":
        assert "label_names" not in task and id2label is None
        return
    assert len(task["label_names"]) >= 2
    if id2label is not None:  # recorded where config.json was read: same labels, same order
        assert sorted(id2label, key=int) == [str(i) for i in range(len(id2label))]
        assert [id2label[str(i)] for i in range(len(id2label))] == task["label_names"]
    else:  # labels not read in the config are flagged
        assert "task.label_names" in task["inferred"]
    if task["kind"] == "ner":
        assert "O" in task["label_names"]
        assert all(re.fullmatch(r"O|[BI]-.+", label) for label in task["label_names"])


@pytest.mark.parametrize("name", TASK_NAMES)
def test_hf_class_fits_family_and_builds_with_its_head(name):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    e = _entry(name)
    task = e["task"]
    prefix = {"bert": "Bert", "electra": "Electra", "albert": "Albert"}[e["family"]]
    assert task["hf_class"].startswith(prefix)
    config = dict(e["config"])
    num_labels = len(task["label_names"]) if task.get("label_names") else 2  # a QA head has 2 outputs
    if "id2label" not in config:
        config["num_labels"] = num_labels
    cfg = transformers.AutoConfig.for_model(**config)
    with torch.device("meta"):
        model = getattr(transformers, task["hf_class"])(cfg)
    head = [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m.out_features == num_labels][-1]
    assert head.in_features == config["hidden_size"]


def test_published_parameter_count_decides_the_bc2gm_pooler():
    """The hub page of bioformers/bioformer-8L-bc2gm gives 42.5M parameters (model.safetensors)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    e = _entry("bioformer_8l_bc2gm")
    cfg = transformers.AutoConfig.for_model(**e["config"], num_labels=len(e["task"]["label_names"]))
    with torch.device("meta"):
        model = transformers.BertForTokenClassification(cfg)
    without_pooler = sum(p.numel() for p in model.parameters())
    pooler = cfg.hidden_size * cfg.hidden_size + cfg.hidden_size
    total = without_pooler + (pooler if e["pooler"] else 0)
    rival = without_pooler + (0 if e["pooler"] else pooler)
    assert round(total / 1e6, 1) == 42.5
    assert round(rival / 1e6, 1) != 42.5


# ------------------------------------------------------------------ base, data, results, inferred

@pytest.mark.parametrize("name", TASK_NAMES)
def test_base_is_a_registry_checkpoint_of_the_same_architecture(name):
    e = _entry(name)
    base = e["task"]["base"]
    if "/" in base:  # a hub id: allowed only when the base is not in the registry
        assert registry.find_by_hf_repo(base) is None
        return
    seen = {name}
    while "task" in _entry(base) and base not in seen:  # the chain of fine-tunes ends in a backbone
        seen.add(base)
        base = _entry(base)["task"]["base"]
    assert base not in seen and "task" not in _entry(base), f"{name}: base chain loops or has no backbone"
    b = _entry(base)
    assert e["family"] == b["family"]
    assert {k: e["config"].get(k) for k in ARCH_KEYS} == {k: b["config"].get(k) for k in ARCH_KEYS}
    assert e["tokenizer"]["vocab_size"] == b["tokenizer"]["vocab_size"]
    assert e["tokenizer"]["lowercase"] == b["tokenizer"]["lowercase"]
    assert e["parameters"] <= b["parameters"]  # same encoder; a QA/NER file may lack the base's pooler


@pytest.mark.parametrize("name", TASK_NAMES)
def test_inferred_fields_exist_and_are_explained(name):
    e = _entry(name)
    inferred = e["task"]["inferred"]
    for path in inferred:
        assert _resolve(e, path) is not None, f"{name}: task.inferred names a missing field {path!r}"
        assert any(n.startswith(f"[inferred] {path}:") for n in e.get("notes", [])), f"{name}: no note for {path}"
    explained = {m.group(1) for n in e.get("notes", []) if (m := re.match(r"\[inferred\] ([a-z_0-9.]+):", n))}
    assert explained <= set(inferred), f"{name}: notes explain {sorted(explained - set(inferred))} not in task.inferred"


@pytest.mark.parametrize("name", TASK_NAMES)
def test_reported_scores_and_data(name):
    task = _entry(name)["task"]
    assert task["data"] and all(d["name"] for d in task["data"])
    for r in task["reported"]:
        assert 0 <= r["value"] <= 100 and r["source"] and r["split"]
    for (n, dataset, metric), value in REPORTED.items():
        if n == name:
            found = [r["value"] for r in task["reported"] if r["dataset"].startswith(dataset) and r["metric"] == metric]
            assert found == [value], (dataset, metric, found)
    if not task["reported"]:
        assert any("result" in n.lower() for n in _entry(name)["notes"]), "an empty task.reported needs a note"


# ------------------------------------------------------------------ list_presets(kind=...)

def test_list_presets_kind_filter():
    all_names = sorted(_registry()["checkpoints"])
    assert biozoo.list_presets() == all_names  # the default is unchanged: every name
    assert registry.list_presets(kind="task") == sorted(TASK_NAMES + AIONER)
    backbones = registry.list_presets(kind="backbone")
    assert set(backbones) == set(all_names) - set(TASKS) - set(AIONER) and "bioformer_8l" in backbones
    assert registry.list_presets("bioformer_*", kind="backbone") == ["bioformer_16l", "bioformer_8l"]
    assert registry.list_presets(kind="ner") == ["bioformer_8l_bc2gm", "bioformer_8l_ncbi_disease"]
    assert registry.list_presets(kind="aioner") == ["aioner_bioformer", "aioner_pubmedbert"]
    # a task kind by its alias (the registry's word before the task-kind table)
    assert registry.list_presets(kind="classification") == registry.list_presets(kind="re") == [
        "bioformer_8l_mnli", "bioformer_8l_qnli"]
    assert registry.list_presets("biom_*", kind="qa") == [
        "biom_albert_xxlarge_squad2", "biom_electra_base_squad2", "biom_electra_base_squad2_bioasq8b",
        "biom_electra_large_squad2", "biom_electra_large_squad2_bioasq8b"]
    with pytest.raises(ValueError, match="kind"):
        registry.list_presets(kind="tasks")


# ------------------------------------------------------------------ the CLI

def _run(capsys, *argv):
    status = main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_cli_list_kind_task(capsys):
    status, out, _ = _run(capsys, "list", "--kind", "task")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["NAME", "TASK", "LABELS"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert sorted(rows) == sorted(TASK_NAMES + AIONER)
    assert rows["aioner_bioformer"][1:3] == ["aioner", "19"]
    assert rows["bioformer_8l_mnli"][1:3] == ["re", "3"]
    assert rows["bioformer_8l_bc2gm"][1:3] == ["ner", "3"]
    assert rows["biom_electra_large_squad2"][1:3] == ["qa", "-"]


def test_cli_list_kind_backbone_and_json(capsys):
    status, out, _ = _run(capsys, "list", "--kind", "backbone")
    assert status == 0
    names = {line.split()[0] for line in out.splitlines()[1:]}
    assert names == set(_registry()["checkpoints"]) - set(TASKS) - set(AIONER)
    status, out, _ = _run(capsys, "list", "bioformer_*", "--kind", "ner", "--json")
    assert [e["name"] for e in json.loads(out)] == ["bioformer_8l_bc2gm", "bioformer_8l_ncbi_disease"]
    status, _, err = _run(capsys, "list", "biobert*", "--kind", "ner")
    assert status == 1 and "--kind ner" in err


def test_cli_info_shows_the_task_section(capsys):
    status, out, _ = _run(capsys, "info", "bioformer_8l_mnli")
    assert status == 0
    assert "task          re (BertForSequenceClassification), fine-tuned from bioformer_8l" in out
    assert "labels        3: entailment, neutral, contradiction" in out
    assert "problem type  single_label_classification" in out
    assert "80.3973" in out and "inferred      pooler, tokenizer" in out
    status, out, _ = _run(capsys, "info", "bioformer_8l")
    assert status == 0 and "task " not in out


def test_cli_info_shows_every_registry_entry(capsys):
    """Every name `biozoo list` gives has an `info`, AIONER's (a task without a transformers class) too."""
    for name in _registry()["checkpoints"]:
        status, out, err = _run(capsys, "info", name)
        assert status == 0 and out.startswith(f"{name}: "), (name, err)
    status, out, _ = _run(capsys, "info", "aioner_bioformer")
    assert ("task          aioner (model_file AIONER/Bioformer-softmax-AIONER.h5, decoder softmax), fine-tuned from "
            "bioformer_8l") in out


# ------------------------------------------------------------------ the schema is strict about tasks

def _bad(name, mutate):
    entry = copy.deepcopy(_entry(name))
    mutate(entry)
    return _errors(_registry_with(name, entry))


def test_schema_accepts_the_registry():
    assert not _errors(_registry())


@pytest.mark.parametrize("mutate", [
    pytest.param(lambda e: e["task"].pop("label_names"), id="ner-without-labels"),
    pytest.param(lambda e: e["task"].update(kind="qa"), id="token-class-as-qa"),
    pytest.param(lambda e: e["task"].update(kind="sentiment"), id="unknown-kind"),
    pytest.param(lambda e: e["task"].pop("inferred"), id="no-inferred-list"),
    pytest.param(lambda e: e["task"].update(inferred=["Task Labels"]), id="inferred-not-a-path"),
    pytest.param(lambda e: e["task"].update(extra=1), id="unknown-task-field"),
    pytest.param(lambda e: e.update(heads=["qa"]), id="heads-disagree-with-kind"),
    pytest.param(lambda e: e["task"].update(problem_type="single_label_classification"), id="ner-with-problem-type"),
    pytest.param(lambda e: e["config"].update(id2label={"0": "O"}), id="id2label-one-label"),
])
def test_schema_rejects_bad_ner_entries(mutate):
    assert _bad("bioformer_8l_bc2gm", mutate)


@pytest.mark.parametrize("mutate", [
    pytest.param(lambda e: e["task"].update(label_names=["yes", "no"]), id="qa-with-labels"),
    pytest.param(lambda e: e.pop("task"), id="qa-head-without-task"),
    pytest.param(lambda e: e["task"]["reported"][0].pop("split"), id="result-without-split"),
    pytest.param(lambda e: e["task"]["reported"][0].update(value=187.49), id="result-over-100"),
    pytest.param(lambda e: e["sources"]["hf"].update(revision="97c0a7b"), id="pinned-short-commit"),
    pytest.param(lambda e: e["sources"]["hf"].update(revision="main", revision_pinned=False),
                 id="unpinned-without-reason"),
])
def test_schema_rejects_bad_qa_entries(mutate):
    assert _bad("biom_electra_large_squad2", mutate)


def test_schema_accepts_an_unpinned_revision_with_its_reason():
    def unpin(e):
        e["sources"]["hf"].update(revision="main", revision_pinned=False, revision_seen=["97c0a7b"],
                                  revision_unpinned_reason="only_short_commit_ids_seen")
    assert not _bad("biom_electra_large_squad2", unpin)
