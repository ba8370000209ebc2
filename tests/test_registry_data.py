"""Data checks for checkpoints_registry.json (the registry of pretrained checkpoints).

Fast: models are only ever built on the meta device, nothing is downloaded.
The independent references are the JSON schema, HuggingFace transformers (parameter counts),
and facts copied by hand from shared/reference/registry-facts.md and the hub pages
(architecture surprises, published weights-file sizes). None of the expected values below
is read back from the registry itself.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REGISTRY_PATH = ROOT / "checkpoints_registry.json"
PACKAGED_PATH = ROOT / "biozoo" / "checkpoints_registry.json"
SCHEMA_PATH = ROOT / "biozoo" / "registry_schema.json"

REQUIRED_NAMES = {
    "biom_electra_base_discriminator", "biom_electra_base_generator",
    "biom_electra_large_discriminator", "biom_electra_large_generator",
    "biom_bert_large", "biom_albert_xxlarge", "biom_albert_xxlarge_pmc",
    "biom_electra_large_squad2", "biom_albert_xxlarge_squad2",
    "distil_biobert", "compact_biobert", "tiny_biobert",
    "bio_distilbert_cased", "bio_distilbert_uncased", "bio_tinybert", "bio_mobilebert",
    "bioformer_8l", "bioformer_16l", "biobert_v1_1", "biobert_v1_2",
    "pubmedbert_abstract", "pubmedbert_fulltext",
    "biomegatron_345m_uncased", "biomegatron_345m_cased",
    # task checkpoints (published fine-tunes; tests/test_registry_tasks.py checks their task sections)
    "bioformer_8l_squad1", "bioformer_8l_qnli", "bioformer_8l_mnli", "bioformer_8l_bc2gm",
    "bioformer_8l_ncbi_disease", "bioformer_16l_squad1", "bioformer_16l_squad2",
    "biom_electra_base_squad2", "biom_electra_base_squad2_bioasq8b", "biom_electra_large_squad2_bioasq8b",
    "biobert_v1_1_squad",
    # AIONER (PubTator3's NER): Keras .h5 models in one archive of the hub
    "aioner_bioformer", "aioner_pubmedbert",
    # entity linking: SapBERT, names embedded by their [CLS] vector
    "sapbert_pubmedbert_fulltext",
}

FAMILY_TO_MODEL_TYPE = {
    "bert": "bert",
    "albert": "albert",
    "electra": "electra",
    "distilbert": "distilbert",
    "mobilebert": "mobilebert",
    "megatron_bert": "megatron-bert",
}

# Heads a checkpoint of each family can carry.
FINE_TUNED_HEADS = {"qa", "token_classification", "sequence_classification"}
FAMILY_HEADS = {
    "bert": {"mlm", "nsp"} | FINE_TUNED_HEADS,
    "albert": {"mlm", "sop"} | FINE_TUNED_HEADS,
    "electra": {"mlm", "rtd"} | FINE_TUNED_HEADS,
    "distilbert": {"mlm"} | FINE_TUNED_HEADS,
    "mobilebert": {"mlm", "nsp"} | FINE_TUNED_HEADS,
    "megatron_bert": {"mlm", "nsp"} | FINE_TUNED_HEADS,
}


@functools.lru_cache(maxsize=1)
def _registry():
    with open(REGISTRY_PATH, encoding="utf-8") as f:
        return json.load(f)


def _checkpoints():
    return _registry()["checkpoints"]


def _entry(name):
    return _checkpoints()[name]


ALL_NAMES = sorted(REQUIRED_NAMES)


# ------------------------------------------------------------------ file and schema

def test_registry_validates_against_schema():
    jsonschema = pytest.importorskip("jsonschema")
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        schema = json.load(f)
    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    errors = sorted(validator_cls(schema).iter_errors(_registry()), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:20])


def test_registry_is_shipped_as_package_data():
    assert PACKAGED_PATH.is_symlink(), "biozoo/checkpoints_registry.json must be a symlink"
    target = os.readlink(PACKAGED_PATH)
    assert not os.path.isabs(target), f"symlink must be relative, got {target}"
    assert PACKAGED_PATH.resolve() == REGISTRY_PATH.resolve()


def test_exactly_the_required_names():
    names = set(_checkpoints())
    assert names == REQUIRED_NAMES, (
        f"missing: {sorted(REQUIRED_NAMES - names)}; unexpected: {sorted(names - REQUIRED_NAMES)}"
    )


# ------------------------------------------------------------------ per-entry consistency

@pytest.mark.parametrize("name", ALL_NAMES)
def test_model_type_agrees_with_family(name):
    e = _entry(name)
    assert e["config"]["model_type"] == FAMILY_TO_MODEL_TYPE[e["family"]]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_tokenizer_vocab_fits_embedding(name):
    e = _entry(name)
    assert 0 < e["tokenizer"]["vocab_size"] <= e["config"]["vocab_size"]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_electra_and_distilbert_have_no_pooler(name):
    e = _entry(name)
    if e["family"] in ("electra", "distilbert"):
        assert e["pooler"] is False


@pytest.mark.parametrize("name", ALL_NAMES)
def test_heads_are_possible_for_family(name):
    e = _entry(name)
    assert set(e["heads"]) <= FAMILY_HEADS[e["family"]], e["heads"]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_reported_results_name_a_table(name):
    for r in _entry(name)["reported_results"]:
        assert re.search(r"\bTable \d+\b", r["source"]), r
        assert 0 <= r["value"] <= 100, r  # every seed table reports percentages / scores in [0, 100]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_entries_without_results_say_why(name):
    e = _entry(name)
    if not e["reported_results"]:
        assert any("result" in n.lower() for n in e.get("notes", [])), "empty reported_results needs a note"


@pytest.mark.parametrize("name", ALL_NAMES)
def test_revision_pinning_is_consistent(name):
    hf = _entry(name)["sources"]["hf"]
    if hf.get("revision_pinned", False):
        assert re.fullmatch(r"[0-9a-f]{40}", hf["revision"]), hf["revision"]
        assert "revision_unpinned_reason" not in hf and "revision_seen" not in hf
    else:
        assert hf["revision"] == "main", hf["revision"]
        # an unpinned revision says why, machine-readably, and the short ids it saw are not full ones
        assert hf["revision_unpinned_reason"]
        assert all(7 <= len(c) < 40 for c in hf.get("revision_seen", []))
    assert hf["weights"] in hf.get("files", [hf["weights"]])


def test_no_unpinned_checkpoint_but_the_known_one():
    # BioM-ELECTRA-Base-Generator and BioBERT v1.2 were pinned from the 2021 HF API snapshot
    # (github saranscript/huggingface-models, models/*/infos.json); BioTinyBERT has only short ids.
    unpinned = {n for n in ALL_NAMES if not _entry(n)["sources"]["hf"].get("revision_pinned", False)}
    assert unpinned == {"bio_tinybert"}
    # AIONER's archive: pinned at the commit whose page gave its sha256 (f06ef0a, lingbionlp/AIONER-0415)
    assert _entry("aioner_bioformer")["sources"]["hf"]["revision"].startswith("f06ef0a")


@pytest.mark.parametrize("name", ALL_NAMES)
def test_a_file_digest_read_at_a_full_commit_leaves_no_revision_unpinned(name):
    """A digest read on a commit's page names a commit that holds the file: the revision can be pinned."""
    hf = _entry(name)["sources"]["hf"]
    commits = {c for record in hf.get("integrity", {}).values()
               for c in re.findall(r"/commit/([0-9a-f]{40})", record.get("read_from", ""))}
    if commits and not hf.get("revision_pinned", False):
        pytest.fail(f"{name}: revision {hf['revision']} unpinned ({hf['revision_unpinned_reason']}), "
                    f"but its digests were read at commit {', '.join(sorted(commits))}")
    assert _entry("biobert_v1_2")["sources"]["hf"]["revision"].startswith("67c9c25")


def test_hub_ids_and_aliases_are_unique():
    seen = {}
    for name, e in _checkpoints().items():
        hf = e["sources"]["hf"]
        for repo in [hf["repo"], *hf.get("aliases", [])]:
            if "aioner" in e.get("task", {}):  # one archive holds both AIONER models
                repo = f"{repo}:{e['task']['aioner']['model_file']}"
            assert repo not in seen, f"{repo} used by {seen[repo]} and {name}"
            seen[repo] = name


# ------------------------------------------------------------------ transformers as the reference

def _build_on_meta(config, cls_name=None, **kwargs):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = transformers.AutoConfig.for_model(**config)
    with torch.device("meta"):
        if cls_name is None:
            return transformers.AutoModel.from_config(cfg, **kwargs)
        return getattr(transformers, cls_name)(cfg)


@functools.lru_cache(maxsize=None)
def _backbone_count(config_json, pooler):
    config = json.loads(config_json)
    kwargs = {}
    if config["model_type"] not in ("electra", "distilbert"):  # these take no add_pooling_layer
        kwargs["add_pooling_layer"] = pooler
    model = _build_on_meta(config, **kwargs)
    return sum(p.numel() for p in model.parameters())


def _count(entry, pooler=None):
    pooler = entry["pooler"] if pooler is None else pooler
    return _backbone_count(json.dumps(entry["config"], sort_keys=True), pooler)


@pytest.mark.parametrize("name", ALL_NAMES)
def test_config_rebuilds_with_transformers(name):
    transformers = pytest.importorskip("transformers")
    config = _entry(name)["config"]
    cfg = transformers.AutoConfig.for_model(**config)
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "dim", "n_layers"):
        if key in config:
            assert getattr(cfg, key) == config[key], key


@pytest.mark.parametrize("name", ALL_NAMES)
def test_parameters_equal_transformers_meta_count(name):
    e = _entry(name)
    assert e["parameters"] == _count(e)


# Published weights files (hub "Files" pages, registry-facts.md) and the HF class each was saved from.
# (class or None for a bare backbone, size in bytes, half of the display resolution in bytes, bytes per parameter)
# A size given to the byte has resolution 0. These pin the pooler decisions: the rival pooler choice
# misses every one of them (e.g. 825 vs 893 MB for BioM-ALBERT, 170.2 vs 171 MB for Bioformer-8L).
PUBLISHED_WEIGHTS = {
    "biom_electra_base_discriminator": ("ElectraForPreTraining", 433e6, 0.5e6, 4),
    "biom_electra_base_generator": ("ElectraForMaskedLM", 130e6, 0.5e6, 4),
    "biom_electra_large_generator": ("ElectraForMaskedLM", 199e6, 0.5e6, 4),
    "biom_bert_large": ("ElectraForPreTraining", 1.34e9, 5e6, 4),
    "biom_albert_xxlarge": ("AlbertForPreTraining", 893e6, 0.5e6, 4),
    "biom_electra_large_squad2": ("ElectraForQuestionAnswering", 1.33e9, 5e6, 4),
    "biom_albert_xxlarge_squad2": ("AlbertForQuestionAnswering", 890e6, 0.5e6, 4),
    "distil_biobert": ("BertForMaskedLM", 263e6, 0.5e6, 4),
    "compact_biobert": ("BertForMaskedLM", 263e6, 0.5e6, 4),
    "tiny_biobert": ("BertForMaskedLM", 55_649_156, 0, 4),
    "bio_distilbert_cased": ("DistilBertForMaskedLM", 263e6, 0.5e6, 4),
    "bio_distilbert_uncased": ("DistilBertForMaskedLM", 268e6, 0.5e6, 4),
    "bio_tinybert": ("BertForMaskedLM", 57.6e6, 0.05e6, 4),
    "bio_mobilebert": ("MobileBertForMaskedLM", 146_842_235, 0, 4),
    "bioformer_8l": ("BertForPreTraining", 171e6, 0.5e6, 4),
    "bioformer_16l": ("BertForPreTraining", 167e6, 0.5e6, 4),
    "biobert_v1_1": ("BertForPreTraining", 436e6, 0.5e6, 4),
    "biobert_v1_2": ("BertForPreTraining", 436e6, 0.5e6, 4),
    "pubmedbert_abstract": ("BertForMaskedLM", 440e6, 0.5e6, 4),
    "pubmedbert_fulltext": ("BertForMaskedLM", 440e6, 0.5e6, 4),
    "biomegatron_345m_uncased": (None, 668e6, 0.5e6, 2),  # float16 port, no heads
    "biomegatron_345m_cased": (None, 665e6, 0.5e6, 2),
    "sapbert_pubmedbert_fulltext": (None, 438e6, 0.5e6, 4),  # BertModel with its pooler (hub page: 438 MB)
    # task checkpoints (hub "Files" pages); the head class needs the label count, from config.id2label
    "bioformer_8l_squad1": ("BertForQuestionAnswering", 169e6, 0.5e6, 4),  # no pooler (save_pretrained)
    "bioformer_8l_qnli": ("BertForSequenceClassification", 170e6, 0.5e6, 4),
    "biobert_v1_1_squad": ("BertForQuestionAnswering", 433e6, 0.5e6, 4),  # carries the pretrained pooler
    "biom_electra_large_squad2_bioasq8b": ("ElectraForQuestionAnswering", 1.33e9, 5e6, 4),
}
PICKLE_BYTES_PER_TENSOR = 600  # torch.save overhead allowance (measured ~410-450 B/tensor on the nlpie files)


def _head_params_and_tensors(config, cls_name):
    if cls_name is None:
        model = _build_on_meta(config, add_pooling_layer=False)
        return 0, len(model.state_dict())
    model = _build_on_meta(config, cls_name)
    base = getattr(model, model.base_model_prefix)
    total = sum(p.numel() for p in model.parameters())
    return total - sum(p.numel() for p in base.parameters()), len(model.state_dict())


@pytest.mark.parametrize("name", sorted(PUBLISHED_WEIGHTS))
def test_pooler_flag_matches_published_weights_size(name):
    e = _entry(name)
    cls_name, size, half, bytes_per_param = PUBLISHED_WEIGHTS[name]
    head, n_tensors = _head_params_and_tensors(e["config"], cls_name)

    def fits(backbone):
        raw = (backbone + head) * bytes_per_param
        return size - half - PICKLE_BYTES_PER_TENSOR * n_tensors <= raw <= size + half

    assert fits(e["parameters"]), f"{name}: {(e['parameters'] + head) * bytes_per_param / 1e6:.3f} MB vs {size / 1e6} MB"
    if e["family"] not in ("electra", "distilbert", "mobilebert"):  # pooler changes nothing for these
        rival = _count(e, pooler=not e["pooler"])
        assert not fits(rival), f"{name}: the size does not decide the pooler flag"


# ------------------------------------------------------------------ surprises from registry-facts.md

def test_known_architecture_facts():
    c = _checkpoints()
    for name in ("biom_albert_xxlarge", "biom_albert_xxlarge_pmc", "biom_albert_xxlarge_squad2"):
        cfg = c[name]["config"]
        assert cfg["hidden_act"] == "gelu" and cfg["initializer_range"] == 0.01, name
        assert cfg["hidden_dropout_prob"] == 0 and cfg["attention_probs_dropout_prob"] == 0, name
        assert (cfg["hidden_size"], cfg["embedding_size"], cfg["num_attention_heads"]) == (4096, 128, 64)
        assert c[name]["tokenizer"]["kind"] == "sentencepiece"

    b16 = c["bioformer_16l"]["config"]
    assert (b16["hidden_size"], b16["num_hidden_layers"], b16["num_attention_heads"]) == (384, 16, 6)
    assert b16["max_position_embeddings"] == 1024 and b16["vocab_size"] == 32768
    b8 = c["bioformer_8l"]["config"]
    assert (b8["hidden_size"], b8["num_hidden_layers"], b8["num_attention_heads"]) == (512, 8, 8)

    for name, padded, real, lower in (("biomegatron_345m_uncased", 30592, 30522, True),
                                      ("biomegatron_345m_cased", 29056, 28996, False)):
        e = c[name]
        assert e["config"]["vocab_size"] == padded and e["tokenizer"]["vocab_size"] == real
        assert e["config"]["hidden_act"] == "gelu_new" and e["tokenizer"]["lowercase"] is lower
        assert e["pooler"] is False and e["heads"] == []

    assert c["tiny_biobert"]["config"]["vocab_size"] == 28996
    assert c["bio_tinybert"]["config"]["vocab_size"] == 30522
    for name in ("tiny_biobert", "bio_tinybert"):
        assert c[name]["config"]["hidden_size"] == 312 and c[name]["family"] == "bert"

    for name, emb, layers in (("biom_electra_base_generator", 768, 12), ("biom_electra_large_generator", 1024, 24)):
        cfg = c[name]["config"]
        assert (cfg["hidden_size"], cfg["num_attention_heads"], cfg["intermediate_size"]) == (256, 4, 1024)
        assert (cfg["embedding_size"], cfg["num_hidden_layers"]) == (emb, layers)

    assert c["biom_bert_large"]["family"] == "electra"
    for name in ("distil_biobert", "compact_biobert"):
        assert c[name]["family"] == "bert"
    for name in ("bio_distilbert_cased", "bio_distilbert_uncased"):
        assert c[name]["family"] == "distilbert"
    assert c["bio_mobilebert"]["family"] == "mobilebert"


def test_known_casing_and_sources():
    c = _checkpoints()
    for name in ("biobert_v1_1", "biobert_v1_2", "distil_biobert", "compact_biobert", "tiny_biobert",
                 "bio_distilbert_cased", "bioformer_8l", "bioformer_16l", "biomegatron_345m_cased"):
        assert c[name]["tokenizer"]["lowercase"] is False, name
    for name in ("biom_electra_base_discriminator", "biom_electra_large_discriminator", "biom_electra_large_squad2",
                 "bio_distilbert_uncased", "bio_tinybert", "bio_mobilebert", "pubmedbert_abstract",
                 "pubmedbert_fulltext", "biomegatron_345m_uncased"):
        assert c[name]["tokenizer"]["lowercase"] is True, name

    assert c["pubmedbert_abstract"]["sources"]["hf"]["repo"] == "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract"
    assert "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext" in c["pubmedbert_fulltext"]["sources"]["hf"]["aliases"]
    assert "bioformers/bioformer-cased-v1.0" in c["bioformer_8l"]["sources"]["hf"]["aliases"]
    assert c["biobert_v1_1"]["sources"]["hf"]["repo"] == "dmis-lab/biobert-base-cased-v1.1"
    assert c["biomegatron_345m_uncased"]["sources"]["hf"]["repo"] == "EMBO/BioMegatron345mUncased"
    for name in ("biomegatron_345m_uncased", "biomegatron_345m_cased"):
        assert any(a["url"].endswith("MegatronBERT.pt") for a in c[name]["sources"]["megatron"])


def test_integrity_records_name_listed_files_of_the_same_repo():
    """Each recorded digest is of a file the entry lists, read on a page of the entry's own repo."""
    recorded = 0
    for name, entry in json.loads(REGISTRY_PATH.read_text(encoding="utf-8"))["checkpoints"].items():
        hf = entry["sources"]["hf"]
        for file, record in hf.get("integrity", {}).items():
            assert file in hf["files"], (name, file)
            assert record["read_from"].startswith(f"https://huggingface.co/{hf['repo']}/"), (name, file)
            recorded += 1
    assert recorded >= 20


# Files the hub shows on main that the pinned revision does not have (commit lists at the pins:
# bioformer-8L's and -16L's model.safetensors came with SFconvertbot's PR #1 in August 2023,
# after the February 2023 pins; bio-distilbert-cased's pin predates its README).
NOT_AT_THE_PIN = {"bioformer_8l": "model.safetensors", "bioformer_16l": "model.safetensors",
                  "bio_distilbert_cased": "README.md"}


@pytest.mark.parametrize("name", sorted(NOT_AT_THE_PIN))
def test_files_are_those_of_the_pinned_revision(name):
    hf = json.loads(REGISTRY_PATH.read_text(encoding="utf-8"))["checkpoints"][name]["sources"]["hf"]
    assert NOT_AT_THE_PIN[name] not in hf["files"]


def test_files_lists_exclude_gitattributes_as_the_registry_comment_says():
    """The registry's `$comment` says sources.hf.files excludes .gitattributes (every hub repo has one)."""
    registry = json.loads(REGISTRY_PATH.read_text(encoding="utf-8"))
    assert "excluding .gitattributes" in registry["$comment"]
    listing = [name for name, entry in registry["checkpoints"].items()
               if ".gitattributes" in entry["sources"]["hf"].get("files", [])]
    assert listing == []


def test_the_weights_file_is_one_the_pin_has():
    for name, entry in json.loads(REGISTRY_PATH.read_text(encoding="utf-8"))["checkpoints"].items():
        hf = entry["sources"]["hf"]
        assert hf["weights"] in hf["files"], name


# arXiv ids the issue names (BioMegatron, the compact models, Bioformer) and those of BioBERT
# and PubMedBERT; an ACL Anthology paper's DOI is 10.18653/v1/<its anthology id>.
CITATION_IDS = {
    "biomegatron_345m_cased": {"arxiv": "2010.06060"}, "tiny_biobert": {"arxiv": "2209.03182"},
    "bioformer_16l": {"arxiv": "2302.01588"}, "biobert_v1_2": {"arxiv": "1901.08746"},
    "pubmedbert_fulltext": {"arxiv": "2007.15779"}, "biom_albert_xxlarge": {"doi": "10.18653/v1/2021.bionlp-1.24"},
}


@pytest.mark.parametrize("name", sorted(CITATION_IDS))
def test_citations_carry_arxiv_ids_and_dois(name):
    citation = json.loads(REGISTRY_PATH.read_text(encoding="utf-8"))["checkpoints"][name]["citation"]
    for key, value in CITATION_IDS[name].items():
        assert citation[key] == value


def test_licences_are_spdx_with_where_they_come_from():
    entries = json.loads(REGISTRY_PATH.read_text(encoding="utf-8"))["checkpoints"]
    for name, entry in entries.items():
        licence = entry["license"]
        if licence["from"] == "code_repository":  # the weights carry no licence of their own
            assert licence["url"].startswith("https://github.com/") and "inferred" in licence["note"], name
        elif licence["from"] == "hf_tag":
            assert licence["url"].startswith(f"https://huggingface.co/{entry['sources']['hf']['repo']}"), name
        else:
            assert licence["spdx"] is None, name
    assert entries["biom_electra_large_discriminator"]["license"]["from"] == "code_repository"
    assert entries["biobert_v1_1"]["license"]["from"] == "code_repository"
    assert entries["bioformer_8l"]["license"] == {"spdx": "Apache-2.0", "url": "https://huggingface.co/bioformers/bioformer-8L",
                                                  "from": "hf_tag", "note": "the HF repo's licence tag"}
    assert entries["bioformer_8l_mnli"]["license"]["spdx"] is None


def _results(name):
    return json.loads(REGISTRY_PATH.read_text(encoding="utf-8"))["checkpoints"][name]["reported_results"]


def test_results_measured_on_another_checkpoint_say_so():
    """The audit's misattributions: BioM Table 2's BioMegatron row (a 50K-vocabulary model), the
    one BioDistilBERT column copied to both checkpoints, and the SQuAD2 fine-tunes' five-run
    means (the checkpoints' own eval_results.txt are their task results)."""
    for name in ("biomegatron_345m_cased", "biomegatron_345m_uncased"):
        table2 = [r for r in _results(name) if r["source"] == "BioM-Transformers, Table 2"]
        assert table2 and all(r["applies_to"] == "same_model_other_checkpoint" and "50K" in r["other_checkpoint"]
                              for r in table2)
    for name in ("bio_distilbert_cased", "bio_distilbert_uncased"):
        assert {r["applies_to"] for r in _results(name)} == {"same_model_other_checkpoint"}
    for name in ("biom_electra_large_squad2", "biom_albert_xxlarge_squad2"):
        (table2,) = [r for r in _results(name) if r["task"] == "QA SQuAD2.0"]
        assert table2["applies_to"] == "same_model_other_checkpoint" and "five" in table2["other_checkpoint"]
    own = json.loads(REGISTRY_PATH.read_text(encoding="utf-8"))["checkpoints"]["biom_electra_large_squad2"]["task"]
    assert {(r["metric"], r["value"]) for r in own["reported"]} == {("F1", 87.49), ("EM", 84.33)}
    assert {r["applies_to"] for r in _results("biom_electra_large_discriminator")} == {"this_checkpoint"}


# Values the facts mark inferred [I] (reference/registry-facts.md): the generators' heads and
# intermediate sizes, casing where no tokenizer_config says it, tiny-biobert's vocabulary,
# bio-mobilebert's bottleneck flags, bio-distilbert-cased's distilbert-base-cased fields.
INFERRED = {"biom_electra_base_generator": {"config.num_attention_heads", "config.intermediate_size"},
            "biom_electra_large_discriminator": {"tokenizer.lowercase"}, "biobert_v1_1": {"tokenizer.lowercase"},
            "tiny_biobert": {"config.vocab_size"}, "bio_mobilebert": {"config.use_bottleneck"},
            "bio_distilbert_cased": {"config.activation"}, "biom_albert_xxlarge_pmc": {"pooler"}}


def test_inferred_values_are_flagged_per_field():
    entries = json.loads(REGISTRY_PATH.read_text(encoding="utf-8"))["checkpoints"]
    for name, paths in INFERRED.items():
        assert paths <= set(entries[name]["inferred"]), name
    for name, entry in entries.items():
        for path in entry.get("inferred", []):
            value = entry
            for part in path.split("."):
                value = value[part]  # a flag names a field the entry has


def test_stale_notes_are_gone():
    entries = json.loads(REGISTRY_PATH.read_text(encoding="utf-8"))["checkpoints"]
    notes = {name: " ".join(entry.get("notes", [])) for name, entry in entries.items()}
    assert entries["bio_mobilebert"]["pooler"] is True and "pooler=false" not in notes["bio_mobilebert"]
    assert "may also hold example files" not in notes["biom_albert_xxlarge"]
    assert "file size itself was not seen" not in notes["biom_albert_xxlarge_pmc"]
