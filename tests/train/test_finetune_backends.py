"""`biozoo finetune` on the current Keras backend: `make test` runs this file under TensorFlow,
under JAX (two host CPU devices, TensorFlow not importable) and under PyTorch.

Every task kind trains and writes a task preset that evaluates; on JAX, data parallelism over
two devices follows one device's loss curve, and a run killed with SIGKILL then rerun ends
with the weights of an uninterrupted run."""

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest

from biozoo import testing as H
from biozoo.cli import main

pytestmark = pytest.mark.backends
BACKEND = keras.backend.backend()


def _losses(output):
    return np.asarray(json.loads((output / "train_losses.json").read_text())["losses"])


@pytest.mark.parametrize("kind", ["ner", "re", "qa", "doc"])
def test_every_task_kind_fine_tunes_and_evaluates(kind, tmp_path, request, tiny_bert_real_vocab, capsys):
    data = H.task_data(kind, request, tmp_path / "data")
    out = tmp_path / "out"
    assert main(["finetune", kind, "--preset", str(tiny_bert_real_vocab), "--data", str(data), "--epochs", "1",
                 "--batch-size", "4", "--max-seq-length", "64", "--learning-rate", "1e-3", "--output", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["backend"] == BACKEND and metrics["replicas"] == 1
    losses = _losses(out)
    assert len(losses) == metrics["train_steps"] > 0 and np.all(np.isfinite(losses))
    # the pooler: trained where the head reads it (re, doc); elsewhere kept as it was (TensorFlow gives it no
    # gradient, and JAX's and PyTorch's zero gradients must not let weight decay move it either)
    import biozoo

    def pooler(preset):
        return keras.ops.convert_to_numpy(biozoo.from_preset(str(preset)).get_layer("pooled_dense").kernel)

    moved = np.abs(pooler(out) - pooler(tiny_bert_real_vocab)).max()
    assert (moved > 0) if kind in ("re", "doc") else (moved == 0), moved
    capsys.readouterr()
    split = "train" if kind == "qa" else "test"  # the QA data here is one file
    assert main(["evaluate", kind, "--model", str(out), "--data", str(data), "--split", split]) == 0
    scores = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert scores["task"] == kind and scores["split"] == split


@pytest.fixture(scope="module")
def no_dropout(tmp_path_factory, minilm_dir):
    """A tiny BERT without dropout: one device and two compute the same function."""
    model = H.make_model("bert", "BertModel", vocab_size=30522, initializer_range=0.02, hidden_dropout_prob=0.0,
                         attention_probs_dropout_prob=0.0)
    return H.save_hf_directory(model, tmp_path_factory.mktemp("no-dropout") / "bert",
                               vocab_file=minilm_dir / "vocab.txt")


def _finetune_argv(preset, data, output, *extra):
    return ["finetune", "ner", "--preset", str(preset), "--data", str(data), "--output", str(output), "--epochs", "1",
            "--batch-size", "8", "--max-seq-length", "64", "--learning-rate", "1e-3", *extra]


def _jax_devices():
    import jax

    return jax.device_count()


@pytest.mark.skipif(BACKEND != "jax", reason="data parallelism through keras.distribution runs on JAX "
                    "(TensorFlow's mirrored replicas: tests/train/test_distribute.py)")
def test_data_parallel_on_two_devices_follows_one_device(tmp_path, request, no_dropout):
    if _jax_devices() < 2:
        pytest.skip("one JAX device: `make test` runs this with XLA_FLAGS=--xla_force_host_platform_device_count=2")
    data = H.task_data("ner", request, tmp_path / "data")
    clipped = ("--clip-norm", "0.05")  # the tiny model's gradient norms are above it: clipping acts on every step
    assert main(_finetune_argv(no_dropout, data, tmp_path / "one", "--strategy", "cpu", *clipped)) == 0
    assert main(_finetune_argv(no_dropout, data, tmp_path / "two", "--strategy", "mirrored", *clipped)) == 0
    metrics = json.loads((tmp_path / "two" / "metrics.json").read_text())
    assert metrics["replicas"] == 2 and metrics["strategy"] == "mirrored"
    one, two = _losses(tmp_path / "one"), _losses(tmp_path / "two")
    assert len(one) == len(two) >= 5 and one[-1] < one[0]
    # the whole step's gradient is clipped once, as on one device; the losses are written rounded to 1e-6
    np.testing.assert_allclose(two, one, rtol=0, atol=2e-6)
    assert main(_finetune_argv(no_dropout, data, tmp_path / "unclipped", "--strategy", "cpu", "--clip-norm", "0")) == 0
    assert np.abs(_losses(tmp_path / "unclipped") - one).max() > 1e-4  # so clipping acted in the runs compared


def test_bfloat16_mixed_precision_follows_float32(tmp_path, request, no_dropout):
    """`--mixed-precision bfloat16` (TPU's default) on this backend: float32 weights, bfloat16
    compute, and a loss curve within bfloat16's rounding of float32's (8 significant bits, so
    about 1e-2 after a few layers); the saved preset computes in float32 again."""
    data = H.task_data("ner", request, tmp_path / "data")
    assert main(_finetune_argv(no_dropout, data, tmp_path / "fp32", "--strategy", "cpu",
                               "--mixed-precision", "float32")) == 0
    assert main(_finetune_argv(no_dropout, data, tmp_path / "bf16", "--strategy", "cpu",
                               "--mixed-precision", "bfloat16")) == 0
    assert json.loads((tmp_path / "bf16" / "metrics.json").read_text())["precision"] == "mixed_bfloat16"
    fp32, bf16 = _losses(tmp_path / "fp32"), _losses(tmp_path / "bf16")
    assert len(fp32) == len(bf16) >= 5 and bf16[-1] < bf16[0]
    assert 0 < np.abs(bf16 - fp32).max() < 3e-2  # bf16 computed something of its own, near float32
    import biozoo

    saved = tmp_path / "bf16"
    assert "mixed_bfloat16" not in (saved / "task.json").read_text() + (saved / "config.json").read_text()
    task = biozoo.TokenClassifier.from_preset(str(saved))
    assert {w.dtype for w in task.weights} == {"float32"} and task.dtype_policy.compute_dtype == "float32"
    # a preset written before the policy was recorded as float32 (KerasHub's loader refused it) loads too
    earlier = tmp_path / "earlier"
    shutil.copytree(saved, earlier)
    for name in ("task.json", "config.json", "preprocessor.json"):
        text = (earlier / name).read_text()
        (earlier / name).write_text(text.replace('"name": "float32"', '"name": "mixed_bfloat16"'))
    assert "mixed_bfloat16" in (earlier / "task.json").read_text()
    again = biozoo.TokenClassifier.from_preset(str(earlier))
    sentence = ["Breast", "cancer", "and", "BRCA1", "mutations", "."]
    assert again.predict_tags([sentence]) == task.predict_tags([sentence])


def _child():
    """This Python as the test runs it (`-S` in `make test`'s run without TensorFlow)."""
    return [sys.executable, "-S"] if sys.flags.no_site else [sys.executable]


@pytest.mark.skipif(BACKEND == "tensorflow", reason="TensorFlow's resume: tests/train/test_resume.py")
def test_sigkill_then_rerun_ends_with_the_uninterrupted_weights(tmp_path, request, tiny_bert_real_vocab):
    data = H.task_data("ner", request, tmp_path / "data")
    argv = lambda out: [*_child(), "-m", "biozoo", *_finetune_argv(  # noqa: E731
        tiny_bert_real_vocab, data, out, "--checkpoint-every", "3", "--epochs", "2")]
    env = {**os.environ, "BIOZOO_CACHE": str(tmp_path / "cache")}
    whole = subprocess.run(argv(tmp_path / "whole"), env=env, capture_output=True, text=True, timeout=900)
    assert whole.returncode == 0, whole.stderr[-3000:]
    checkpoints = tmp_path / "killed.checkpoints"
    H.kill_after_first_checkpoint(argv(tmp_path / "killed"), checkpoints, env)
    assert not (tmp_path / "killed").exists()  # nothing written at OUTPUT by the killed run
    rerun = subprocess.run(argv(tmp_path / "killed"), env=env, capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "resuming from step" in rerun.stderr + rerun.stdout
    resumed = json.loads((tmp_path / "killed" / "metrics.json").read_text())["resumed_from_step"]
    assert resumed > 0
    assert not checkpoints.exists()  # removed once the model is written
    import biozoo

    a = biozoo.TokenClassifier.from_preset(str(tmp_path / "whole"))
    b = biozoo.TokenClassifier.from_preset(str(tmp_path / "killed"))
    for x, y in zip(a.weights, b.weights):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(y), keras.ops.convert_to_numpy(x), rtol=0, atol=1e-6,
                                   err_msg=x.path)
    np.testing.assert_allclose(_losses(tmp_path / "killed")[-3:], _losses(tmp_path / "whole")[-3:], atol=1e-6)


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(BACKEND != "jax", reason="several hosts through jax.distributed run on JAX "
                    "(TensorFlow's workers: tests/train/test_distribute.py)")
def test_two_processes_through_jax_distributed_follow_one_device(tmp_path, request, no_dropout):
    """Two processes of one device each, joined by jax.distributed (as two hosts would be), each
    feeding its rows of every global batch: the loss curve of one device, and both end with the
    same model."""
    data = H.task_data("ner", request, tmp_path / "data")
    clipped = ("--clip-norm", "0.05")
    assert main(_finetune_argv(no_dropout, data, tmp_path / "one", "--strategy", "cpu", "--micro-batches", "1",
                               *clipped)) == 0
    port = _free_port()
    workers = []
    for index in range(2):
        env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
               "KERAS_DISTRIBUTION_JOB_ADDRESSES": f"127.0.0.1:{port}", "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
               "KERAS_DISTRIBUTION_PROCESS_ID": str(index)}
        argv = [*_child(), "-m", "biozoo", *_finetune_argv(no_dropout, data, tmp_path / "hosts", "--strategy",
                                                          "multiworker", *clipped)]
        workers.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [worker.communicate(timeout=900) for worker in workers]
    for worker, (out, err) in zip(workers, outputs):
        assert worker.returncode == 0, err[-3000:]
    assert "2 devices of 2 processes" in outputs[0][1] + outputs[0][0]
    metrics = json.loads((tmp_path / "hosts" / "metrics.json").read_text())
    assert metrics["strategy"] == "multiworker" and metrics["replicas"] == 2 and metrics["micro_batches"] == 1
    one, hosts = _losses(tmp_path / "one"), _losses(tmp_path / "hosts")
    assert len(one) == len(hosts) >= 5 and one[-1] < one[0]
    np.testing.assert_allclose(hosts, one, rtol=0, atol=2e-6)
    # both processes scored the same model (each prints its metrics; only process 0 writes OUTPUT)
    scores = [json.loads(out.strip().splitlines()[-1])["test"] for out, _ in outputs]
    assert scores[0] == scores[1] == metrics["test"]


@pytest.mark.skipif(BACKEND == "tensorflow", reason="TensorFlow's multiworker reads TF_CONFIG: tests/train/test_distribute.py")
def test_multiworker_without_a_cluster_says_what_to_set(monkeypatch):
    from biozoo.errors import BiozooError
    from biozoo.train.distribution import resolve_distribution

    for name in ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "KERAS_DISTRIBUTION_NUM_PROCESSES", "KERAS_DISTRIBUTION_PROCESS_ID"):
        monkeypatch.delenv(name, raising=False)
    wanted = "KERAS_DISTRIBUTION_JOB_ADDRESSES" if BACKEND == "jax" else "runs on JAX"
    with pytest.raises(BiozooError, match=wanted):
        resolve_distribution("multiworker")
