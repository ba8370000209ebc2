"""Errors that say what happened, and no silent loss in training data and results: a damaged cache
entry is converted again (or named with its remedy), a failed download caches nothing, IOB1 tags
are converted with a warning, a missing or empty split is said in metrics.json, a non-finite
loss stops training without writing a model."""

import json
import os
import warnings

import pytest
from reliability_kit import leftovers, write_ner_data

from biozoo.cli import main


def _cached_weights(kit):
    import biozoo
    from biozoo import presets

    backbone = biozoo.from_preset(str(kit.tiny_hf))
    directory = presets.resolve_preset(str(kit.tiny_hf))
    assert directory.startswith(presets.cache_root())
    return backbone, os.path.join(directory, "model.weights.h5")


def _same_weights(a, b):
    import numpy as np

    return all(np.array_equal(x, y) for x, y in zip(a.get_weights(), b.get_weights()))


def test_a_truncated_cached_weights_file_is_converted_again(kit):
    import biozoo

    reference, weights = _cached_weights(kit)
    with open(weights, "r+b") as f:
        f.truncate(os.path.getsize(weights) // 2)
    with pytest.warns(UserWarning, match=r"the cached preset .* is damaged \(model.weights.h5 differ"):
        again = biozoo.from_preset(str(kit.tiny_hf))
    assert _same_weights(again, reference)


def test_a_corrupt_cached_weights_file_names_itself_and_the_remedy(kit):
    import biozoo
    from biozoo.errors import CacheError

    _, weights = _cached_weights(kit)
    kept = os.stat(weights)
    with open(weights, "r+b") as f:  # same size, the HDF5 signature gone
        f.write(b"\x00" * 8)
    # the time kept too (as bit rot): the load's check of sizes and times cannot see it, loading fails
    # (a file whose time changed is read against its digest and converted again: tests/test_presets.py)
    os.utime(weights, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    with pytest.raises(CacheError, match=r"model.weights.h5: the cached preset cannot be loaded .*it differs from what "
                                         r"was written.*biozoo check-cache --remove"):
        biozoo.from_preset(str(kit.tiny_hf))
    assert main(["check-cache", "--remove"]) == 0
    biozoo.from_preset(str(kit.tiny_hf))  # converted anew


def test_a_failed_download_caches_nothing(hub, tmp_path):
    from biozoo import presets

    hub.use(hub.unreachable)
    assert main(["convert", "--from", "hf", "hf://org/repo", "--output", str(tmp_path / "out")]) == 2
    cached = [os.path.join(d, f) for d, _, files in os.walk(presets.cache_root()) for f in files]
    assert all(name.endswith(".lock") for name in cached), cached
    assert not (tmp_path / "out").exists()


def test_a_slow_hub_is_given_up_quickly(hub, tmp_path, capsys):
    assert main(["convert", "--from", "hf", "hf://org/slow", "--output", str(tmp_path / "out")]) == 2
    assert "did not answer within 1 s (BIOZOO_HUB_TIMEOUT)" in capsys.readouterr().err
    asked = [path for path in hub.requests if "org/slow" in path]
    assert len(asked) == 1, hub.requests  # BIOZOO_HUB_TIMEOUT=1 and no retries (the hub waits 30 s)


def test_iob1_tags_are_converted_with_a_warning(tmp_path):
    from seqeval.metrics.sequence_labeling import get_entities

    from biozoo.data.ner import read_ner
    from biozoo.errors import DataWarning

    text = "BRCA1\tI-Gene\nand\tO\nBRCA2\tI-Gene\nTP53\tB-Gene\np53\tI-Gene\ngenes\tO\n\nCF\tI-Disease\n"
    path = tmp_path / "train.tsv"
    path.write_text(text, encoding="utf-8")
    gold = [line.split("\t")[1] for line in text.split("\n") if line]
    with pytest.warns(DataWarning, match=r"train.tsv: IOB1 tags \(entities begin with I-, first at line 1; none with "
                                         r"B- after O\): converted to IOB2, 3 I- tag\(s\)"):
        sentences = read_ner(path)
    tags = [t for s in sentences for t in s.tags]
    assert tags == ["B-Gene", "O", "B-Gene", "B-Gene", "I-Gene", "O", "B-Disease"]
    assert get_entities(tags) == get_entities(gold)  # conlleval's reading of IOB1: the same entities


def test_an_iob2_file_keeps_its_tags(tmp_path):
    from biozoo.data.ner import read_ner

    path = tmp_path / "NCBI-disease" / "train.tsv"
    path.parent.mkdir()
    path.write_text("a\tB-Disease\nb\tI-Disease\n\nc\tO\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [s.tags for s in read_ner(path)] == [["B-Disease", "I-Disease"], ["O"]]


def _finetune(kit, data, output, *extra):
    return main(["finetune", "ner", "--preset", str(kit.preset), "--data", str(data), "--output", str(output),
                 "--epochs", "1", "--batch-size", "8", "--max-seq-length", "16", *extra])


def test_a_missing_test_split_and_an_empty_dev_file_are_said_and_recorded(kit, tmp_path, capsys):
    data = write_ner_data(tmp_path / "NCBI-disease", splits=("train",))
    (data / "devel.tsv").write_text("\n", encoding="utf-8")
    assert _finetune(kit, data, tmp_path / "model") == 0
    captured = capsys.readouterr()
    metrics = json.loads((tmp_path / "model" / "metrics.json").read_text())
    assert "test" not in metrics and "dev" not in metrics
    assert metrics["not_scored"]["test"].startswith(f"no 'test' split in {data}: looked for test.tsv, test.tsv.gz, test.txt, test.txt.gz")
    assert metrics["not_scored"]["dev"] == f"{data / 'devel.tsv'} holds no examples"
    assert "warning: no 'test' split" in captured.err and "devel.tsv holds no examples" in captured.err
    assert json.loads(captured.out.splitlines()[-1])["not_scored"] == metrics["not_scored"]


def test_a_non_finite_loss_stops_training_and_writes_nothing(kit, tmp_path, capsys):
    output = tmp_path / "model"
    assert _finetune(kit, kit.ner_data, output, "--learning-rate", "1e30", "--clip-norm", "0", "--epochs", "3",
                     "--checkpoint-every", "1") == 2
    err = capsys.readouterr().err
    assert "of training: the loss is nan" in err or "of training: the loss is inf" in err or \
        "is not finite (a non-finite gradient)" in err, err[-2000:]
    assert "no model was written" in err
    assert not output.exists() and leftovers(tmp_path) == []


def test_non_finite_weights_after_the_last_step_are_caught():
    import keras
    import numpy as np

    from biozoo.errors import TrainingError
    from biozoo.train.tf_loop import check_finite_weights

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, name="head")])
    check_finite_weights(model, 3)
    kernel = model.layers[0].kernel
    kernel.assign(np.array([[1.0, np.nan], [0.0, 1.0]], np.float32))
    with pytest.raises(TrainingError, match=r"step 3 of training: weight .*kernel is not finite"):
        check_finite_weights(model, 3)
