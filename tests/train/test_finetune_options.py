"""Fine-tuning options of the training-at-scale issue: --seeds (mean and standard deviation),
--recipe biom (the paper's table reaches the run), steps_per_execution (same weights),
bfloat16 mixed precision, and a finished run leaving no checkpoints behind."""

import argparse
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from biozoo.testing import chemprot_subset


@pytest.fixture(scope="module")
def chemprot(tmp_path_factory, shared_data):
    return chemprot_subset(shared_data, tmp_path_factory.mktemp("chemprot") / "data",
                           {"train": 48, "dev": 16, "test": 16})


def quiet(message):
    pass


def hp(**changes):
    from biozoo.train.finetune import Hyperparameters

    return dataclasses.replace(Hyperparameters(epochs=1, batch_size=8, learning_rate=1e-3, max_seq_length=48),
                               **changes)


def test_seeds_report_mean_and_sample_standard_deviation(tmp_path, chemprot, tiny_bert_real_vocab):
    from biozoo.train.finetune import run_seeds

    summary = run_seeds("re", str(tiny_bert_real_vocab), chemprot, tmp_path / "out", hp(seed=7), 3, log=quiet,
                        verbose=0)
    assert summary["seeds"] == [7, 8, 9]
    for seed in (7, 8, 9):
        assert (tmp_path / "out" / f"seed-{seed}" / "metrics.json").exists()
    accuracies = [run["test"]["accuracy"] for run in summary["runs"]]
    assert summary["test"]["accuracy"]["values"] == accuracies
    assert summary["test"]["accuracy"]["mean"] == pytest.approx(np.mean(accuracies), abs=1e-4)
    assert summary["test"]["accuracy"]["std"] == pytest.approx(np.std(accuracies, ddof=1), abs=1e-4)
    losses = [json.loads((tmp_path / "out" / f"seed-{s}" / "train_losses.json").read_text())["losses"]
              for s in (7, 8, 9)]
    assert losses[0] != losses[1]  # different seeds, different runs
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["test"] == summary["test"]


def test_an_interrupted_seeds_run_resumes_with_the_same_command(tmp_path, chemprot, tiny_bert_real_vocab):
    from biozoo._io import write_marker
    from biozoo.errors import CheckpointError, OutputError
    from biozoo.train.finetune import check_seeds_output, run_seeds

    out = tmp_path / "out"

    def killed_at_the_second_seed(message):
        if message.startswith("seed 8 "):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_seeds("re", str(tiny_bert_real_vocab), chemprot, out, hp(seed=7), 2, log=killed_at_the_second_seed,
                  verbose=0)
    first = json.loads((out / "seed-7" / "metrics.json").read_text())
    weights = out / "seed-7" / "model.weights.h5"
    written = weights.stat().st_mtime_ns
    check_seeds_output(out)  # the command line's check before it resumes

    with pytest.raises(CheckpointError, match=r"out holds an unfinished --seeds run with other settings: "
                                              r"learning_rate 0.001 \(now 0.002\): rerun with those settings"):
        run_seeds("re", str(tiny_bert_real_vocab), chemprot, out, hp(seed=7, learning_rate=2e-3), 2, log=quiet,
                  verbose=0)
    said = []
    summary = run_seeds("re", str(tiny_bert_real_vocab), chemprot, out, hp(seed=7, precision="float32"), 2,
                        log=said.append, verbose=0)
    assert summary["seeds"] == [7, 8]
    assert summary["runs"][0] == first and weights.stat().st_mtime_ns == written  # read back, not trained again
    assert any(m.startswith("seed 7 (1 of 2): finished earlier") for m in said)
    assert "seed 8 (2 of 2)" in said
    assert json.loads((out / "metrics.json").read_text())["seeds"] == [7, 8]
    with pytest.raises(OutputError, match="holds an earlier biozoo output; pass --overwrite"):
        check_seeds_output(out)  # finished: replaced only with --overwrite

    summary = run_seeds("re", str(tiny_bert_real_vocab), chemprot, out, hp(seed=7, learning_rate=2e-3), 1,
                        log=quiet, verbose=0, overwrite=True)  # starts again: the earlier seeds go
    assert summary["runs"][0]["hyperparameters"]["learning_rate"] == 2e-3
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["metrics.json", "seed-7",
                                                                                 "seeds.json"]
    other = tmp_path / "an-export"  # a biozoo output of another kind is no --seeds run to resume
    other.mkdir()
    write_marker(other)
    with pytest.raises(OutputError, match="holds an earlier biozoo output"):
        check_seeds_output(other)


def test_recipe_biom_sets_the_papers_values_and_explicit_options_win(monkeypatch, tmp_path):
    from biozoo._commands import tasks
    from biozoo.train import finetune, recipes

    seen = {}
    monkeypatch.setattr(finetune, "run_finetune", lambda kind, preset, data, output, hp, *a, **k: seen.setdefault(
        "hp", hp) and {})
    parser = argparse.ArgumentParser()
    tasks.register(parser.add_subparsers())
    data = tmp_path / "NCBI-disease"
    base = ["finetune", "ner", "--preset", "biom_electra_large_discriminator", "--data", str(data), "--output",
            str(tmp_path / "o"), "--recipe", "biom", "--strategy", "cpu"]
    tasks.finetune_command(parser.parse_args(base))
    assert (seen["hp"].epochs, seen["hp"].learning_rate, seen["hp"].batch_size) == (5, 7e-5, 32)
    seen.clear()
    tasks.finetune_command(parser.parse_args(base + ["--learning-rate", "1e-5"]))
    assert (seen["hp"].epochs, seen["hp"].learning_rate) == (5, 1e-5)
    assert (seen["hp"].warmup_ratio, seen["hp"].weight_decay) == (0.1, 0.01)  # the table has neither

    # a recipe's warmup and weight decay reach the run (the options' defaults used to replace them); options win
    real_recipe = recipes.biom_recipe
    monkeypatch.setattr(recipes, "biom_recipe", lambda *a, **k: {**real_recipe(*a, **k), "warmup_ratio": 0.06,
                                                                  "weight_decay": 0.1})
    seen.clear()
    tasks.finetune_command(parser.parse_args(base))
    assert (seen["hp"].warmup_ratio, seen["hp"].weight_decay) == (0.06, 0.1)
    seen.clear()
    tasks.finetune_command(parser.parse_args(base + ["--warmup-ratio", "0", "--weight-decay", "0.02"]))
    assert (seen["hp"].warmup_ratio, seen["hp"].weight_decay) == (0.0, 0.02)


def test_steps_per_execution_trains_the_same_weights(tmp_path, chemprot, tiny_bert_real_vocab):
    import h5py

    from biozoo.train.finetune import run_finetune

    for k in (1, 4):
        run_finetune("re", str(tiny_bert_real_vocab), chemprot, tmp_path / f"k{k}", hp(steps_per_execution=k),
                     log=quiet, verbose=0)
    worst = 0.0
    with h5py.File(tmp_path / "k1" / "model.weights.h5") as a, h5py.File(tmp_path / "k4" / "model.weights.h5") as b:
        names = []
        a.visit(lambda name: names.append(name) if isinstance(a[name], h5py.Dataset) else None)
        assert names
        for name in names:
            worst = max(worst, float(np.max(np.abs(a[name][()] - b[name][()]), initial=0.0)))
    assert worst <= 1e-5


def test_bfloat16_mixed_precision_trains_on_cpu(tmp_path, chemprot, tiny_bert_real_vocab):
    import keras

    from biozoo.train.finetune import run_finetune

    metrics = run_finetune("re", str(tiny_bert_real_vocab), chemprot, tmp_path / "bf16", hp(precision="bfloat16"),
                           log=quiet, verbose=0)
    assert metrics["precision"] == "mixed_bfloat16"
    assert np.isfinite(metrics["train_loss_last"])
    assert keras.config.dtype_policy().name == "float32"  # the global policy is restored


def test_a_fraction_of_an_epoch_rounds_the_steps_up_as_the_hf_trainer(tmp_path, chemprot, tiny_bert_real_vocab):
    """transformers' Trainer: max_steps = ceil(num_train_epochs x num_update_steps_per_epoch), an
    epoch being len(dataloader) = ceil(examples / batch 8) = 6 steps here; 1.05 epochs -> 7 (6.3
    rounded would drop the seventh batch's examples)."""
    from biozoo.train.finetune import run_finetune

    metrics = run_finetune("re", str(tiny_bert_real_vocab), chemprot, tmp_path / "out", hp(epochs=1.05), log=quiet,
                           verbose=0)
    per_epoch = math.ceil(metrics["train_examples"] / 8)
    assert per_epoch == 6 and metrics["train_steps"] == math.ceil(1.05 * per_epoch) == 7


def test_rerun_after_success_trains_anew_and_checkpoints_are_gone(tmp_path, chemprot, tiny_bert_real_vocab):
    from biozoo.train.finetune import checkpoint_directory, run_finetune

    output = tmp_path / "out"
    first = run_finetune("re", str(tiny_bert_real_vocab), chemprot, output, hp(checkpoint_every=2), log=quiet,
                         verbose=0)
    assert first["resumed_from_step"] == 0
    assert first["train_steps"] >= 4
    assert not Path(checkpoint_directory(output)).exists() and (output / "metrics.json").exists()
    second = run_finetune("re", str(tiny_bert_real_vocab), chemprot, output, hp(checkpoint_every=2), log=quiet,
                          verbose=0, overwrite=True)  # a finished model is replaced only when asked (issue 32)
    assert second["resumed_from_step"] == 0 and second["test"] == first["test"]


def test_seeding_again_keeps_sentencepiece_tokenizers_working(tmp_path, tiny_spiece):
    """`--seeds` seeds once per run in one process; TensorFlow's tf.random.set_seed clears the
    kernel cache in eager mode, which destroyed tf-text's SentencePiece resources."""
    import biozoo
    from biozoo import testing as H
    from biozoo.train.run import set_seed

    source = H.save_hf_directory(H.make_model("albert", "AlbertModel"), tmp_path / "albert",
                                 tokenizer="sentencepiece", spiece_model=tiny_spiece)
    tokenizer = biozoo.Tokenizer.from_preset(str(source))
    before = [list(ids) for ids in tokenizer.ids(["cancer cells and tumour growth"])]
    set_seed(3)
    assert [list(ids) for ids in tokenizer.ids(["cancer cells and tumour growth"])] == before


def test_static_shapes_auto_pads_to_one_length_on_a_jax_gpu_and_statically_on_tpus(monkeypatch):
    import keras

    from biozoo.train import finetune

    def padding(option, strategy, jit, backend, devices):
        with monkeypatch.context() as patch:
            patch.setattr(keras.backend, "backend", lambda: backend)
            patch.setattr(finetune, "accelerators", lambda: devices)
            return finetune.training_padding(option, strategy, jit)

    assert padding("auto", "tpu", True, "jax", ["tpu:0"]) == "static"
    assert padding("auto", "tpu", True, "tensorflow", []) == "static"
    assert padding("auto", "mirrored", True, "jax", ["gpu:0"]) == "one length"
    assert padding("auto", "mirrored", False, "jax", ["gpu:0"]) == "dynamic"  # no jitted step: no compilations
    assert padding("auto", "mirrored", True, "jax", []) == "dynamic"  # CPUs
    assert padding("auto", "mirrored", True, "torch", []) == "dynamic"
    assert padding("auto", "mirrored", True, "tensorflow", []) == "dynamic"
    assert padding("on", "mirrored", False, "torch", []) == "static"
    assert padding("off", "tpu", True, "jax", ["tpu:0"]) == "dynamic"
