"""Handles, the conversion cache, offline mode and errors for names (biozoo.presets / from_preset)."""

import hashlib
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from urllib.parse import unquote, urlsplit

import huggingface_hub
import keras_hub
import numpy as np
import pytest

import biozoo
from biozoo import presets, registry
from biozoo import testing as H
from biozoo.errors import NetworkError, OfflineError
from biozoo.preset_files import read_provenance
from biozoo.presets.handles import hf_key
from biozoo.presets.remote import resolve_remote
from biozoo.testing.mirrors import send_json

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tiny_bert_dir(tmp_path):
    return H.save_hf_directory(H.make_model("bert", "BertForPreTraining"), tmp_path / "hf")


@pytest.fixture
def count_conversions(monkeypatch):
    import biozoo.convert.hf as converter

    calls = []
    original = converter.convert_hf_directory

    def counting(*args, **kwargs):
        calls.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(converter, "convert_hf_directory", counting)
    return calls


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    """Offline, with an empty HF cache that tests fill as a local mirror."""
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def assert_same_outputs(a, b, inputs):
    for key in a:
        np.testing.assert_array_equal(np.asarray(a[key]), np.asarray(b[key]))


def test_registry_name_downloads_converts_and_caches(tiny_bert_dir, offline_hub, count_conversions, monkeypatch):
    H.registry_entry_describes(monkeypatch, "bioformer_8l", tiny_bert_dir)
    entry = registry.get_entry("bioformer_8l")
    repo, revision = entry["sources"]["hf"]["repo"], entry["sources"]["hf"]["revision"]
    # The registry points at pytorch_model.bin: the mirror holds exactly that.
    model = H.make_model("bert", "BertForPreTraining")
    H.save_hf_directory(model, tiny_bert_dir.parent / "bin", "bin")
    H.registry_entry_describes(monkeypatch, "bioformer_8l", tiny_bert_dir.parent / "bin")
    H.populate_hf_cache(offline_hub, repo, revision, tiny_bert_dir.parent / "bin")

    first = biozoo.from_preset("bioformer_8l")
    assert len(count_conversions) == 1
    second = biozoo.from_preset("bioformer_8l")
    assert len(count_conversions) == 1  # read from the cache, not converted again
    inputs = H.random_inputs()
    assert_same_outputs(first(inputs), second(inputs), inputs)
    sequence, _ = H.hf_outputs(model, inputs)
    assert H.max_diff(first(inputs)["sequence_output"], sequence, inputs["padding_mask"]) <= 1e-4
    preset = presets.resolve_preset("bioformer_8l")
    assert preset.startswith(os.environ["BIOZOO_CACHE"])
    assert read_provenance(preset)["registry_name"] == "bioformer_8l"
    assert biozoo.Tokenizer.from_preset("bioformer_8l").vocabulary_size() == H.VOCAB_SIZE


def test_registry_casing_applies_when_the_repo_has_no_tokenizer_config(tmp_path, offline_hub, monkeypatch):
    """BioBERT's hub repo has only vocab.txt: HF's default would lower-case; the registry says cased."""
    source = H.save_hf_directory(H.make_model("bert", "BertModel"), tmp_path / "hf", "bin")
    os.remove(source / "tokenizer_config.json")
    H.registry_entry_describes(monkeypatch, "biobert_v1_1", source)
    entry = registry.get_entry("biobert_v1_1")
    H.populate_hf_cache(offline_hub, entry["sources"]["hf"]["repo"], entry["sources"]["hf"]["revision"], source)
    assert biozoo.Tokenizer.from_preset("biobert_v1_1").lowercase is False
    assert entry["tokenizer"]["lowercase"] is False


def test_offline_without_cache_is_a_clear_error(offline_hub):
    with pytest.raises(OfflineError, match="bioformer_16l.*offline"):
        biozoo.from_preset("bioformer_16l")
    assert not os.path.exists(os.path.join(os.environ["BIOZOO_CACHE"], "presets", "bioformer_16l"))


def test_load_weights_false_builds_from_the_registry_without_downloading(offline_hub):
    backbone = biozoo.from_preset("bio_tinybert", load_weights=False)
    assert backbone.count_params() == registry.get_entry("bio_tinybert")["parameters"]
    assert not os.path.exists(os.path.join(os.environ["BIOZOO_CACHE"], "presets"))


def test_unknown_name_lists_the_closest():
    with pytest.raises(registry.UnknownPresetError) as error:
        biozoo.from_preset("bioformer_8")
    assert "bioformer_8l" in str(error.value) and "bioformer_16l" in str(error.value)
    with pytest.raises(registry.UnknownPresetError, match="biomegatron_345m_cased"):
        biozoo.from_preset("megatron")


def test_list_presets_wildcards():
    assert biozoo.list_presets("bioformer_*", kind="backbone") == ["bioformer_16l", "bioformer_8l"]
    assert "bioformer_8l_ncbi_disease" in biozoo.list_presets("bioformer_*", kind="task")
    assert "biom_albert_xxlarge_pmc" in biozoo.list_presets("*albert*")
    assert len(biozoo.list_presets()) >= 24
    assert biozoo.list_presets("nothing*") == []


def test_hf_handle_with_revision(tiny_bert_dir, offline_hub, count_conversions):
    H.populate_hf_cache(offline_hub, "someone/tiny-bert", "a" * 40, tiny_bert_dir)
    backbone = biozoo.from_preset("hf://someone/tiny-bert@" + "a" * 40)
    biozoo.from_preset("hf://someone/tiny-bert@" + "a" * 40)
    assert len(count_conversions) == 1
    assert backbone.num_layers == 2
    with pytest.raises(ValueError, match="hf://org/repo"):
        biozoo.from_preset("hf://not-a-repo")


def test_an_hf_handle_at_a_pull_request_revision(tiny_bert_dir, offline_hub, count_conversions):
    commit = "b" * 40
    snapshot = H.populate_hf_cache(offline_hub, "someone/tiny-bert", commit, tiny_bert_dir)
    refs = Path(snapshot).parents[1] / "refs" / "refs" / "pr"
    refs.mkdir(parents=True)
    (refs / "2").write_text(commit)  # where huggingface_hub's cache keeps the ref refs/pr/2
    assert presets.parse_handle("hf://someone/tiny-bert@refs/pr/2") == \
        ("hf", {"repo": "someone/tiny-bert", "revision": "refs/pr/2"})
    backbone = biozoo.from_preset("hf://someone/tiny-bert@refs/pr/2")
    assert backbone.num_layers == 2 and len(count_conversions) == 1
    keys = {hf_key("someone/tiny-bert", revision) for revision in ("refs/pr/2", "refs--pr--2", "refs-pr-2", "main")}
    assert len(keys) == 4 and not any("/" in key or key in (".", "..") for key in keys)


def test_a_local_folder_named_like_a_registry_entry_wins_with_one_warning(tmp_path, offline_hub, monkeypatch):
    """As transformers' from_pretrained: an existing folder is loaded, not the hub checkpoint of that name."""
    model = H.make_model("bert", "BertModel", seed=3)
    monkeypatch.chdir(tmp_path)
    H.save_hf_directory(model, tmp_path / "bioformer_8l")
    with pytest.warns(UserWarning, match="not the registry checkpoint 'bioformer_8l'.*hf://bioformers/bioformer-8L@"):
        assert presets.parse_handle("bioformer_8l") == ("hf_dir", {"path": str(tmp_path / "bioformer_8l")})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        backbone = biozoo.from_preset("bioformer_8l")  # offline with an empty HF cache: no download tried
    inputs = H.random_inputs()
    sequence, _ = H.hf_outputs(model, inputs)
    assert H.max_diff(backbone(inputs)["sequence_output"], sequence, inputs["padding_mask"]) <= 1e-4
    assert presets.registry_name_of("bioformer_8l") != "bioformer_8l"


def test_an_hf_handle_finds_its_registry_entry_whatever_the_case(tmp_path, offline_hub):
    """BioBERT's repo has no tokenizer_config.json: its casing comes from the registry entry only."""
    source = H.save_hf_directory(H.make_model("bert", "BertModel"), tmp_path / "hf", "bin")
    os.remove(source / "tokenizer_config.json")
    handle = "hf://DMIS-lab/biobert-base-cased-v1.1"
    assert registry.get_entry("biobert_v1_1")["sources"]["hf"]["repo"] == "dmis-lab/biobert-base-cased-v1.1"
    H.populate_hf_cache(offline_hub, "DMIS-lab/biobert-base-cased-v1.1", "main", source)
    assert presets.resolve(handle).entry["name"] == "biobert_v1_1"
    assert biozoo.Tokenizer.from_preset(handle).lowercase is False


def test_local_hf_directory_is_converted_once_and_again_when_it_changes(tiny_bert_dir, count_conversions):
    biozoo.from_preset(str(tiny_bert_dir))
    biozoo.from_preset(str(tiny_bert_dir))
    assert len(count_conversions) == 1
    H.save_hf_directory(H.make_model("bert", "BertForPreTraining", seed=1), tiny_bert_dir)
    os.utime(tiny_bert_dir / "model.safetensors", ns=(1, 1))
    biozoo.from_preset(str(tiny_bert_dir))
    assert len(count_conversions) == 2


def test_concurrent_loads_convert_once(tiny_bert_dir, count_conversions):
    results, errors = [], []

    def load():
        try:
            results.append(presets.resolve_preset(str(tiny_bert_dir)))
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=load) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(results)) == 1
    assert len(count_conversions) == 1


def test_biozoo_presets_load_with_plain_keras_hub(tiny_bert_dir):
    preset = presets.resolve_preset(str(tiny_bert_dir))
    backbone = keras_hub.models.Backbone.from_preset(preset)
    tokenizer = keras_hub.models.Tokenizer.from_preset(preset)
    assert type(backbone).__name__ == "BertBackbone" and type(backbone).__module__.startswith("biozoo")
    assert type(tokenizer).__module__.startswith("biozoo")
    assert biozoo.from_preset(preset).count_params() == backbone.count_params()


def test_remote_directory_through_tf_gfile(tiny_bert_dir):
    """`gs://` goes through tf.io.gfile; its in-memory `ram://` file system stands in here."""
    import tensorflow as tf

    remote = "ram://bucket/tiny-bert"
    for name in os.listdir(tiny_bert_dir):
        tf.io.gfile.makedirs(remote)
        tf.io.gfile.copy(str(tiny_bert_dir / name), f"{remote}/{name}", overwrite=True)
    backbone = biozoo.from_preset(remote)
    inputs = H.random_inputs()
    local = biozoo.from_preset(str(tiny_bert_dir))
    assert_same_outputs(backbone(inputs), local(inputs), inputs)


def test_remote_folders_whose_names_differ_only_in_slashes_are_cached_apart():
    """`x--y` and `x/y` are two folders of a bucket: each is copied into its own cache entry."""
    import tensorflow as tf

    tags = {"ram://cache-keys/x--y": "dashes", "ram://cache-keys/x/y": "slashes"}
    for url, tag in tags.items():
        tf.io.gfile.makedirs(url)
        with tf.io.gfile.GFile(url + "/config.json", "w") as f:
            f.write(json.dumps({"registered_name": "biozoo>BertBackbone", "tag": tag}))
    directories = {url: Path(resolve_remote(url, convert=None)) for url in tags}
    assert {url: json.loads((d / "config.json").read_text())["tag"] for url, d in directories.items()} == tags
    assert all(d.name.startswith("ram-cache-keys--x--y-") for d in directories.values())  # still readable


@pytest.mark.parametrize("name, model_cls, pooled", [("bert", "BertModel", True), ("electra", "ElectraModel", False)])
def test_load_weights_false_on_an_hf_directory_keeps_its_pooler(name, model_cls, pooled, tmp_path):
    """The architecture of an HF directory, built without its weights, has the pooler exactly
    when the checkpoint has one (its tensor names are read, not its tensors)."""
    from biozoo import testing

    directory = testing.save_hf_directory(testing.make_model(name, model_cls), tmp_path / "hf")
    backbone = biozoo.from_preset(str(directory), load_weights=False)
    assert ("pooled_output" in backbone.output) == pooled
    assert backbone.count_params() == sum(p.numel() for p in testing.make_model(name, model_cls).parameters())


# BioBERT v1.1's config.json at the pinned revision: the 11 keys of a BERT config, no model_type
BIOBERT_V1_1_CONFIG = {
    "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768,
    "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 512,
    "num_attention_heads": 12, "num_hidden_layers": 12, "type_vocab_size": 2, "vocab_size": 28996,
}


def test_a_hub_config_without_model_type_takes_the_registry_family(tmp_path, offline_hub, monkeypatch):
    """biobert_v1_1's repo has an old 11-key config.json (no model_type): a registry name converts
    with the registry's config, completed by the file's."""
    from biozoo.convert.hf import reconcile_config

    real = reconcile_config(BIOBERT_V1_1_CONFIG, registry.get_entry("biobert_v1_1")["config"], "config.json")
    assert real["model_type"] == "bert" and real["hidden_size"] == 768
    source = H.save_hf_directory(H.make_model("bert", "BertModel"), tmp_path / "hf", "bin")
    H.registry_entry_describes(monkeypatch, "biobert_v1_1", source)
    config = json.loads((source / "config.json").read_text())
    old_style = {key: config[key] for key in BIOBERT_V1_1_CONFIG}
    (source / "config.json").write_text(json.dumps(old_style))
    entry = registry.get_entry("biobert_v1_1")
    H.populate_hf_cache(offline_hub, entry["sources"]["hf"]["repo"], entry["sources"]["hf"]["revision"], source)
    backbone = biozoo.from_preset("biobert_v1_1")
    assert type(backbone).__name__ == "BertBackbone" and backbone.hidden_dim == old_style["hidden_size"]


def test_a_hub_config_that_disagrees_with_the_registry_names_both(tmp_path, offline_hub):
    from biozoo.errors import CheckpointError

    source = H.save_hf_directory(H.make_model("bert", "BertModel"), tmp_path / "hf", "bin")
    entry = registry.get_entry("biobert_v1_1")  # hidden_size 768 in the registry, 32 in this file
    H.populate_hf_cache(offline_hub, entry["sources"]["hf"]["repo"], entry["sources"]["hf"]["revision"], source)
    with pytest.raises(CheckpointError, match=r"hidden_size 32 in the file, 768 in the registry"):
        biozoo.from_preset("biobert_v1_1")
    with pytest.raises(CheckpointError, match="disagree"):  # nothing was cached as converted
        biozoo.from_preset("biobert_v1_1")



def _mirror_with_integrity(tmp_path, offline_hub, monkeypatch, damage=None):
    """A local hub mirror of biobert_v1_1 whose registry entry records the sha256 and size of
    the good pytorch_model.bin (as the hub's LFS pointer publishes them); `damage` alters the
    mirrored copy."""
    source = H.save_hf_directory(H.make_model("bert", "BertModel"), tmp_path / "hf", "bin")
    H.registry_entry_describes(monkeypatch, "biobert_v1_1", source)
    good = (source / "pytorch_model.bin").read_bytes()
    hf = registry.get_entry("biobert_v1_1")["sources"]["hf"]
    record = {"sha256": hashlib.sha256(good).hexdigest(), "size": len(good), "read_from": "the test's own file"}
    monkeypatch.setitem(registry._load_registry()["checkpoints"]["biobert_v1_1"]["sources"]["hf"], "integrity",
                        {"pytorch_model.bin": record})
    mirrored = tmp_path / "mirrored"
    shutil.copytree(source, mirrored)
    if damage:
        (mirrored / "pytorch_model.bin").write_bytes(damage(good))
    H.populate_hf_cache(offline_hub, hf["repo"], hf["revision"], mirrored)
    return record


def _flip_a_byte(data):
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1:]


@pytest.mark.parametrize("damage, message", [
    (_flip_a_byte, r"pytorch_model.bin has sha256 [0-9a-f]{{64}}, the registry records {digest}"),
    (lambda data: data[: len(data) - 1000], r"pytorch_model.bin is \d+ bytes, the registry records {size}"),
], ids=["corrupted", "truncated"])
def test_a_damaged_download_is_refused_before_conversion(tmp_path, offline_hub, monkeypatch, damage, message):
    from biozoo.errors import CheckpointError

    record = _mirror_with_integrity(tmp_path, offline_hub, monkeypatch, damage)
    with pytest.raises(CheckpointError, match=message.format(digest=record["sha256"], size=record["size"])):
        biozoo.from_preset("biobert_v1_1")
    cached = [p for p in (Path(presets.cache_root()) / "presets").glob("*") if not p.name.endswith(".lock")] \
        if (Path(presets.cache_root()) / "presets").exists() else []
    assert cached == []  # nothing converted, nothing cached


def test_the_right_download_passes_and_is_recorded(tmp_path, offline_hub, monkeypatch):
    from biozoo.preset_files import read_provenance

    record = _mirror_with_integrity(tmp_path, offline_hub, monkeypatch)
    backbone = biozoo.from_preset("biobert_v1_1")
    assert type(backbone).__name__ == "BertBackbone"
    provenance = read_provenance(presets.resolve_preset("biobert_v1_1"))
    assert provenance["source_files_verified"] == {"pytorch_model.bin": record["sha256"]}


def _verified_bin_beside_other_safetensors(tmp_path, offline_hub, monkeypatch):
    """biobert_v1_1's entry describing a pytorch_model.bin (the model returned), in an offline HF
    cache snapshot that also holds a model.safetensors of other weights."""
    verified = H.make_model("bert", "BertModel", seed=0)
    source = H.save_hf_directory(verified, tmp_path / "hf", "bin")
    H.save_hf_directory(H.make_model("bert", "BertModel", seed=1), tmp_path / "other", "safetensors")
    shutil.copy(tmp_path / "other" / "model.safetensors", source / "model.safetensors")
    H.registry_entry_describes(monkeypatch, "biobert_v1_1", source)
    hf = registry.get_entry("biobert_v1_1")["sources"]["hf"]
    assert hf["weights"] == "pytorch_model.bin"
    H.populate_hf_cache(offline_hub, hf["repo"], hf["revision"], source)
    return verified


def test_a_registry_preset_is_converted_from_the_verified_file_only(tmp_path, offline_hub, monkeypatch):
    """The entry declares pytorch_model.bin; a model.safetensors of other weights in the same HF cache
    snapshot (left there by transformers or an hf:// load) is not what is converted."""
    verified = _verified_bin_beside_other_safetensors(tmp_path, offline_hub, monkeypatch)

    preset = presets.resolve_preset("biobert_v1_1")
    assert read_provenance(preset)["weights"] == ["pytorch_model.bin"]
    inputs = H.random_inputs()
    sequence, _ = H.hf_outputs(verified, inputs)
    ours = biozoo.from_preset(preset)(inputs)["sequence_output"]
    assert H.max_diff(ours, sequence, inputs["padding_mask"]) <= 1e-4


def test_a_preset_cached_from_another_weights_file_is_converted_again(tmp_path, offline_hub, monkeypatch):
    """What earlier biozoo left: a registry preset converted from a model.safetensors the snapshot
    held, not the pytorch_model.bin the entry verifies. It is converted again, with a warning, and
    verify's transformers side reads the same .bin."""
    from biozoo.verification import verify

    verified = _verified_bin_beside_other_safetensors(tmp_path, offline_hub, monkeypatch)
    preset = Path(presets.resolve_preset("biobert_v1_1"))
    provenance = json.loads((preset / "biozoo.json").read_text())
    (preset / "biozoo.json").write_text(json.dumps({**provenance, "weights": ["model.safetensors"]}))

    with pytest.warns(UserWarning, match=r"was converted from model.safetensors, not pytorch_model.bin.*converted again"):
        again = presets.resolve_preset("biobert_v1_1")
    assert read_provenance(again)["weights"] == ["pytorch_model.bin"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        presets.resolve_preset("biobert_v1_1")  # converted once: no warning now
    certificate = verify("biobert_v1_1", write=False)
    # transformers read the .bin too (the tiny vocabulary is lower case, the entry cased: tokens are not compared)
    assert certificate["max_abs_diff"]["sequence_output"] <= 1e-4
    inputs = H.random_inputs()
    sequence, _ = H.hf_outputs(verified, inputs)
    assert H.max_diff(biozoo.from_preset(again)(inputs)["sequence_output"], sequence, inputs["padding_mask"]) <= 1e-4


def test_an_outdated_cache_entry_is_kept_until_its_rebuild_is_complete(tmp_path, monkeypatch):
    """Offline, or with the source gone, an outdated entry that cannot be built again is still used
    (with a warning), not deleted first; a rebuild that works replaces it."""
    from biozoo.preset_files import PROVENANCE_FILE

    monkeypatch.setenv("BIOZOO_CACHE", str(tmp_path / "cache"))

    def build(version):
        def write(target):
            os.makedirs(target)
            Path(target, "config.json").write_text(json.dumps({"version": version}))
            Path(target, PROVENANCE_FILE).write_text("{}")
        return write

    def unreachable(target):
        raise OSError("the hub cannot be reached")

    def outdated(directory):
        return "is old" if json.loads(Path(directory, "config.json").read_text())["version"] < 2 else None

    entry = Path(presets.cached("k", build(1)))
    with pytest.warns(UserWarning, match=r"is old; converting it again failed \(the hub cannot be reached\): the earlier"):
        assert Path(presets.cached("k", unreachable, outdated=outdated)) == entry
    assert json.loads((entry / "config.json").read_text()) == {"version": 1}
    with pytest.warns(UserWarning, match=r"is old: converted again"):
        presets.cached("k", build(2), outdated=outdated)
    assert json.loads((entry / "config.json").read_text()) == {"version": 2}
    assert sorted(p.name for p in entry.parent.iterdir()) == ["k", "k.lock"]  # nothing left aside


def test_check_cache_finds_a_changed_preset_file(tmp_path, tiny_bert_dir, capsys):
    from biozoo.cli import main

    preset = Path(presets.resolve_preset(str(tiny_bert_dir)))
    recorded = json.loads((preset / "biozoo.json").read_text())["files_sha256"]
    assert recorded["model.weights.h5"] == hashlib.sha256((preset / "model.weights.h5").read_bytes()).hexdigest()
    assert main(["check-cache"]) == 0
    assert capsys.readouterr().out.startswith("ok")
    weights = preset / "model.weights.h5"
    weights.write_bytes(_flip_a_byte(weights.read_bytes()))
    assert main(["check-cache"]) == 1
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("changed")]
    assert len(line) == 1 and line[0].endswith(": model.weights.h5")
    assert main(["verify-cache", "--remove"]) == 0  # the old spelling, kept for scripts
    assert not preset.exists()
    assert biozoo.from_preset(str(tiny_bert_dir)) is not None  # converted again


def _later_mtime(path):
    """Move `path`'s modification time a second on: what a write does, whatever the clock's granularity."""
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10 ** 9))


def test_a_cached_file_changed_at_the_same_size_is_converted_again(tmp_path, tiny_bert_dir):
    preset = Path(presets.resolve_preset(str(tiny_bert_dir)))
    weights = preset / "model.weights.h5"
    written = weights.read_bytes()
    assert read_provenance(preset)["files_mtime_ns"]["model.weights.h5"] == weights.stat().st_mtime_ns
    weights.write_bytes(_flip_a_byte(written))
    _later_mtime(weights)
    with pytest.warns(UserWarning, match=r"is damaged \(model.weights.h5 differ from what was written\): converting"):
        assert Path(presets.resolve_preset(str(tiny_bert_dir))) == preset
    assert hashlib.sha256(weights.read_bytes()).hexdigest() == read_provenance(preset)["files_sha256"][
        "model.weights.h5"] != hashlib.sha256(_flip_a_byte(written)).hexdigest()  # converted again


def test_a_cached_file_touched_or_unrecorded_is_read_once_then_trusted(tmp_path, tiny_bert_dir, monkeypatch):
    """A file whose modification time differs from the one recorded (touched, or an entry written
    before times were recorded) is compared with its digest once; its time is then recorded."""
    import biozoo.presets.cache as cache

    preset = Path(presets.resolve_preset(str(tiny_bert_dir)))
    record = read_provenance(preset)
    record.pop("files_mtime_ns", None)  # as an entry written before times were recorded
    (preset / "biozoo.json").write_text(json.dumps(record))
    _later_mtime(preset / "config.json")
    read = []
    monkeypatch.setattr(cache, "sha256_file", lambda path: read.append(os.path.basename(path)) or
                        hashlib.sha256(Path(path).read_bytes()).hexdigest())
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert Path(presets.resolve_preset(str(tiny_bert_dir))) == preset
    assert sorted(read) == sorted(os.path.basename(name) for name in record["files_sha256"])  # each once
    times = read_provenance(preset)["files_mtime_ns"]
    assert times == {name: (preset / name).stat().st_mtime_ns for name in record["files_sha256"]}


def test_a_cache_that_cannot_record_times_reads_each_file_once_per_process(tmp_path, tiny_bert_dir, monkeypatch):
    """A read-only cache (a shared or image-baked one) whose entries predate recorded times: the
    digests are checked once in a process, not at every load (the record cannot be rewritten)."""
    import biozoo.presets.cache as cache

    preset = Path(presets.resolve_preset(str(tiny_bert_dir)))
    record = read_provenance(preset)
    record.pop("files_mtime_ns", None)
    (preset / "biozoo.json").write_text(json.dumps(record))
    monkeypatch.setattr(cache, "_record_times", lambda preset_dir, verified: None)  # nothing can be recorded
    monkeypatch.setattr(cache, "_verified_in_process", {})
    read = []
    monkeypatch.setattr(cache, "sha256_file", lambda path: read.append(os.path.basename(path)) or
                        hashlib.sha256(Path(path).read_bytes()).hexdigest())
    for _ in range(3):
        assert Path(presets.resolve_preset(str(tiny_bert_dir))) == preset
    assert sorted(read) == sorted(os.path.basename(name) for name in record["files_sha256"])  # once, not 3 times
    _later_mtime(preset / "config.json")  # changed since: read again
    assert Path(presets.resolve_preset(str(tiny_bert_dir))) == preset
    assert read.count("config.json") == 2


def _tokenizer_files_only(source, destination):
    """What an earlier tokenizer-only load leaves in the HF cache: `source`'s files but its weights."""
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    return destination


def test_offline_a_cached_snapshot_without_weights_is_not_enough(tmp_path, tiny_bert_dir, offline_hub):
    H.populate_hf_cache(offline_hub, "someorg/tiny-bert", "main",
                        _tokenizer_files_only(tiny_bert_dir, tmp_path / "tokenizer-only"))
    assert biozoo.Tokenizer.from_preset("hf://someorg/tiny-bert").vocabulary_size() == H.VOCAB_SIZE
    with pytest.raises(OfflineError, match=r"hf://someorg/tiny-bert@main .*offline mode is on"):
        biozoo.from_preset("hf://someorg/tiny-bert")


def test_hub_unreachable_a_cached_snapshot_without_weights_is_not_enough(tmp_path, tiny_bert_dir, monkeypatch):
    """The registry names the weights file, so the hub is asked only whether it answers: it does
    not, and a HuggingFace cache holding only the tokenizer files leaves that failure to tell."""
    H.registry_entry_describes(monkeypatch, "bioformer_8l", tiny_bert_dir)
    entry = registry.get_entry("bioformer_8l")
    repo, revision = entry["sources"]["hf"]["repo"], entry["sources"]["hf"]["revision"]
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("BIOZOO_HUB_TIMEOUT", "1")
    H.populate_hf_cache(tmp_path / "hf-cache", repo, revision,
                        _tokenizer_files_only(tiny_bert_dir, tmp_path / "tokenizer-only"))
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    unreachable = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()  # nothing listens there: connection refused
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", unreachable)
    try:
        with pytest.raises(NetworkError, match=rf"hf://{repo}@{revision}: cannot reach {unreachable}"):
            biozoo.from_preset("bioformer_8l")
    finally:
        huggingface_hub.close_session()  # the next test's client gets its own timeout


MOVING = "someone/moving-bert"


class _MovingHub(http.server.BaseHTTPRequestHandler):
    """The hub's metadata API for one repository whose branch `main` moves: repo info at a revision
    (its commit) and the file tree of a commit. The files themselves are in the HuggingFace cache
    (huggingface_hub's own download reads them there, at the commit the hub names)."""

    branches = {}  # branch -> commit
    trees = {}  # commit -> {file: size}
    requests = []

    def do_GET(self):
        path = urlsplit(self.path).path
        type(self).requests.append(path)
        prefix = f"/api/models/{MOVING}/"
        rest = unquote(path[len(prefix):]) if path.startswith(prefix) else ""
        revision = rest[len("revision/"):] if rest.startswith("revision/") else None
        if revision in self.branches or revision in self.trees:
            commit = self.branches.get(revision, revision)
            body = {"id": MOVING, "sha": commit, "siblings": [{"rfilename": f} for f in self.trees[commit]]}
        elif rest.startswith("tree/") and rest[len("tree/"):] in self.trees:
            body = [{"type": "file", "path": f, "size": size, "oid": "0" * 40}
                    for f, size in self.trees[rest[len("tree/"):]].items()]
        else:
            self.send_error(404)
            return
        send_json(self, body)

    def log_message(self, *args):
        pass


@pytest.fixture
def moving_hub(tmp_path, monkeypatch):
    """A local hub on 127.0.0.1 (online, an empty HuggingFace cache); `publish(commit, source)`
    moves `main` to `commit`, whose files `source` holds."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _MovingHub)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{httpd.server_address[1]}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("BIOZOO_OFFLINE", raising=False)
    _MovingHub.branches, _MovingHub.trees, _MovingHub.requests = {}, {}, []

    def publish(commit, source):
        H.populate_hf_cache(tmp_path / "hf-cache", MOVING, commit, source)
        _MovingHub.trees[commit] = {f.name: f.stat().st_size for f in Path(source).iterdir()}
        _MovingHub.branches["main"] = commit

    _MovingHub.publish = publish
    yield _MovingHub
    httpd.shutdown()
    huggingface_hub.close_session()  # the next test's client gets its own timeout


def test_an_unpinned_revision_is_converted_again_when_the_hub_moves_it(tmp_path, moving_hub, count_conversions):
    """hf://org/repo (main): each load asks the hub once which commit main is; a conversion of
    another commit is made again; a pinned commit is never asked about."""
    first, second = (H.make_model("bert", "BertModel", seed=seed) for seed in (0, 1))
    a, b = "a" * 40, "b" * 40
    moving_hub.publish(a, H.save_hf_directory(first, tmp_path / "a"))
    preset = presets.resolve(f"hf://{MOVING}")
    assert (preset.provenance["revision"], preset.provenance["commit"]) == ("main", a)
    moving_hub.requests.clear()
    assert presets.resolve(f"hf://{MOVING}").directory == preset.directory
    assert moving_hub.requests == [f"/api/models/{MOVING}/revision/main"] and len(count_conversions) == 1

    moving_hub.publish(b, H.save_hf_directory(second, tmp_path / "b"))
    with pytest.warns(UserWarning, match=rf"converted from commit {a} of hf://{MOVING}@main, which is now commit "
                                         rf"{b}: converted again"):
        moved = presets.resolve(f"hf://{MOVING}")
    assert moved.directory == preset.directory and moved.provenance["commit"] == b and len(count_conversions) == 2
    inputs = H.random_inputs()
    sequence, _ = H.hf_outputs(second, inputs)  # transformers on the new commit's model
    assert H.max_diff(biozoo.from_preset(moved.directory)(inputs)["sequence_output"], sequence,
                      inputs["padding_mask"]) <= 1e-4

    pinned = presets.resolve(f"hf://{MOVING}@{b}")
    moving_hub.requests.clear()
    assert presets.resolve(f"hf://{MOVING}@{b}").directory == pinned.directory
    assert moving_hub.requests == []  # a commit sha never moves: nothing asked


def test_offline_an_unpinned_conversion_is_used_with_a_warning_naming_its_commit(tmp_path, moving_hub, monkeypatch):
    a = "a" * 40
    moving_hub.publish(a, H.save_hf_directory(H.make_model("bert", "BertModel"), tmp_path / "a"))
    directory = presets.resolve_preset(f"hf://{MOVING}")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    moving_hub.requests.clear()
    with pytest.warns(UserWarning, match=rf"{directory} was converted from commit {a} of hf://{MOVING}@main; offline "
                                         r"mode is on \(HF_HUB_OFFLINE=1\), so whether main has moved on"):
        assert presets.resolve_preset(f"hf://{MOVING}") == directory
    assert moving_hub.requests == []


def test_verify_refuses_a_conversion_of_another_commit_than_the_snapshot(tmp_path, offline_hub):
    """Offline, main moved in the HuggingFace cache after the conversion: comparing the two would
    measure the difference between two commits, not the conversion."""
    from biozoo.errors import CheckpointError
    from biozoo.verification import verify

    a, b = "a" * 40, "b" * 40
    H.populate_hf_cache(offline_hub, MOVING, a, H.save_hf_directory(H.make_model("bert", "BertModel"), tmp_path / "a"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        directory = presets.resolve_preset(f"hf://{MOVING}")
    assert read_provenance(directory)["commit"] == a
    H.populate_hf_cache(offline_hub, MOVING, b,
                        H.save_hf_directory(H.make_model("bert", "BertModel", seed=1), tmp_path / "b"))
    snapshot = huggingface_hub.snapshot_download(MOVING, local_files_only=True, cache_dir=offline_hub)
    assert os.path.basename(snapshot) == b  # huggingface_hub's own lookup: main is now b
    with pytest.raises(CheckpointError, match=rf"{directory} was made from commit {a} of hf://{MOVING}@main, but "
                                              rf"the snapshot to compare it with, .*{b}, is commit {b}"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            verify(f"hf://{MOVING}", write=False)


def test_check_cache_reports_an_unreadable_provenance_record_and_removes_it(tiny_bert_dir, capsys):
    from biozoo.cli import main

    preset = Path(presets.resolve_preset(str(tiny_bert_dir)))
    (preset / "biozoo.json").write_text("{not json")
    assert main(["check-cache"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if line.startswith("changed")] == [
        f"changed    presets/{preset.relative_to(Path(os.environ['BIOZOO_CACHE']) / 'presets')}: biozoo.json"]
    assert main(["check-cache", "--remove"]) == 0
    assert not preset.exists()


def test_check_cache_remove_keeps_an_entry_rebuilt_since_the_scan(tiny_bert_dir, capsys, monkeypatch):
    """Another process converts the damaged entry again between the scan and the removal: the
    removal checks it again under the entry's lock and keeps it."""
    import biozoo.presets.cache as cache
    from biozoo.cli import main

    preset = Path(presets.resolve_preset(str(tiny_bert_dir)))
    with open(preset / "model.weights.h5", "ab") as f:
        f.write(b"junk")
    scan = cache.check_cache

    def scan_then_rebuilt_elsewhere(*args, **kwargs):
        found = scan(*args, **kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            presets.resolve_preset(str(tiny_bert_dir))  # the damaged entry converted again
        return found

    monkeypatch.setattr(cache, "check_cache", scan_then_rebuilt_elsewhere)
    monkeypatch.setattr(presets, "check_cache", scan_then_rebuilt_elsewhere)
    assert main(["check-cache", "--remove"]) == 0
    assert "(repaired meanwhile)" in capsys.readouterr().out
    assert preset.exists() and [r["status"] for r in scan()] == ["ok"]


def test_check_cache_checks_tokenizer_only_presets_too(tiny_bert_dir, capsys):
    from biozoo.cli import main

    tokenizer = Path(presets.resolve_tokenizer_preset(str(tiny_bert_dir)))
    name = tokenizer.relative_to(Path(os.environ["BIOZOO_CACHE"]))
    assert name.parts[0] == "tokenizers"
    assert main(["check-cache"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"ok         {name}"]
    vocabulary = next(p for p in tokenizer.rglob("*") if p.is_file() and p.name.startswith("vocab"))
    vocabulary.write_bytes(_flip_a_byte(vocabulary.read_bytes()))
    assert main(["check-cache"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"changed    {name}: {vocabulary.relative_to(tokenizer).as_posix()}"]


def test_an_entry_a_killed_rebuild_moved_aside_is_restored(tmp_path):
    """SIGKILL while an outdated entry is being converted again: the next load puts the earlier
    entry back (not converted again, nothing left beside it)."""
    child = """
import json, os, signal
from pathlib import Path
from biozoo import presets
def write(target):
    os.makedirs(target)
    Path(target, "config.json").write_text(json.dumps({"version": 1}))
    Path(target, "biozoo.json").write_text("{}")
presets.cached("k", write)
presets.cached("k", lambda target: os.kill(os.getpid(), signal.SIGKILL), outdated=lambda directory: "is old")
"""
    run = subprocess.run([sys.executable, "-c", child], env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == -signal.SIGKILL
    section = Path(os.environ["BIOZOO_CACHE"]) / "presets"
    assert not (section / "k").exists() and len(list(section.glob(".*"))) == 1  # only the copy moved aside

    def never(target):
        raise AssertionError("converted again")

    with pytest.warns(UserWarning, match=r"was being converted again by a process that was killed: the earlier"):
        entry = Path(presets.cached("k", never))
    assert json.loads((entry / "config.json").read_text()) == {"version": 1}
    assert sorted(p.name for p in section.iterdir()) == ["k", "k.lock"]
