"""tf.distribute training: mirrored replicas on logical CPUs and two local workers agree with
one device; XLA train steps with static shapes for every task; a clear error without a TPU; one
trace of the train step per run."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from biozoo.testing import chemprot_subset, task_data

REPO = Path(__file__).resolve().parents[2]

# One device vs replicas: every step sees the same global batch split into equal per-replica
# halves, and relation classification's loss is a mean over examples, so the curves differ
# only by float summation order.
LOSS_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def tiny_no_dropout(tmp_path_factory, minilm_dir):
    """A tiny random BERT with the real uncased vocabulary and no dropout, so that one device
    and several replicas compute exactly the same function."""
    from biozoo import testing as H

    model = H.make_model("bert", "BertModel", vocab_size=30522, initializer_range=0.02,
                         hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return H.save_hf_directory(model, tmp_path_factory.mktemp("tiny0") / "bert", vocab_file=minilm_dir / "vocab.txt")


def cli(argv, env=None, timeout=900):
    full_env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "biozoo", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=full_env, cwd=REPO)


def finish(process, timeout=900):
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-4000:]
    return json.loads(out.strip().splitlines()[-1]), err


def finetune_argv(preset, data, output, *extra):
    return ["finetune", "re", "--preset", str(preset), "--data", str(data), "--output", str(output),
            "--epochs", "1", "--batch-size", "8", "--learning-rate", "1e-3", "--max-seq-length", "64", *extra]


def losses(output):
    return np.asarray(json.loads((Path(output) / "train_losses.json").read_text())["losses"])


@pytest.fixture(scope="module")
def single_device_run(tmp_path_factory, shared_data, tiny_no_dropout):
    root = tmp_path_factory.mktemp("single")
    data = chemprot_subset(shared_data, root / "data")
    metrics, _ = finish(cli(finetune_argv(tiny_no_dropout, data, root / "out", "--strategy", "cpu")))
    return data, root / "out", metrics


@pytest.mark.slow
def test_mirrored_on_two_logical_cpus_follows_the_single_device_loss_curve(tmp_path, single_device_run,
                                                                          tiny_no_dropout):
    data, single_out, single = single_device_run
    metrics, err = finish(cli(finetune_argv(tiny_no_dropout, data, tmp_path / "out", "--strategy", "mirrored"),
                              env={"BIOZOO_LOGICAL_CPUS": "2"}))
    assert metrics["strategy"] == "mirrored" and metrics["replicas"] == 2
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["replicas"] == 2
    assert single["strategy"] == "cpu" and single["replicas"] == 1
    assert "strategy mirrored, 2 replica(s)" in err
    one, two = losses(single_out), losses(tmp_path / "out")
    assert len(one) == len(two) >= 10
    diff = float(np.max(np.abs(one - two)))
    print(f"mirrored (2 logical CPUs) vs one device: {len(one)} steps, max |loss diff| {diff:.2e}")
    assert diff <= LOSS_TOLERANCE
    assert one[-4:].mean() < one[:4].mean()  # it does train


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
def test_two_local_workers_follow_the_single_device_loss_curve(tmp_path, single_device_run, tiny_no_dropout):
    data, single_out, _ = single_device_run
    workers = [f"localhost:{port}" for port in free_ports(2)]
    processes = []
    for index in range(2):
        config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        processes.append(cli(finetune_argv(tiny_no_dropout, data, tmp_path / "out", "--strategy", "auto"),
                             env={"TF_CONFIG": json.dumps(config)}))
    results = [finish(p) for p in processes]
    for metrics, _ in results:
        assert metrics["strategy"] == "multiworker" and metrics["replicas"] == 2
    chief = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert chief["replicas"] == 2
    one, two = losses(single_out), losses(tmp_path / "out")
    diff = float(np.max(np.abs(one - two)))
    print(f"two workers vs one device: {len(one)} steps, max |loss diff| {diff:.2e}")
    assert len(one) == len(two) and diff <= LOSS_TOLERANCE
    # both workers end with the same model, and it scores like the chief's saved one
    assert results[0][0]["test"] == results[1][0]["test"]


def test_strategy_tpu_without_a_tpu_names_what_it_looked_for(monkeypatch):
    from biozoo.errors import BiozooError
    from biozoo.train import tf_strategy as S

    for name in ("TPU_NAME", "COLAB_TPU_ADDR", "TF_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(S.glob, "glob", lambda pattern: [])
    with pytest.raises(BiozooError) as error:
        S.resolve_strategy("tpu")
    for looked_for in ("--tpu", "TPU_NAME", "COLAB_TPU_ADDR", "/dev/accel"):
        assert looked_for in str(error.value)
    resolved = S.resolve_strategy("auto")  # no TPU, no GPU: the CPU
    assert (resolved.name, resolved.replicas) == ("cpu", 1)


def test_cli_strategy_tpu_fails_with_one_clear_line(tmp_path, tiny_bert_real_vocab):
    env = {k: v for k, v in os.environ.items() if k not in ("TPU_NAME", "COLAB_TPU_ADDR", "TF_CONFIG")}
    result = subprocess.run([sys.executable, "-m", "biozoo", "finetune", "ner", "--preset", str(tiny_bert_real_vocab),
                             "--data", str(tmp_path), "--output", str(tmp_path / "o"), "--strategy", "tpu"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 2
    assert "no TPU found" in result.stderr and "COLAB_TPU_ADDR" in result.stderr
    assert not (tmp_path / "o").exists()


def test_batch_must_split_evenly_over_replicas(tmp_path, tiny_bert_real_vocab):
    from biozoo.train.finetune import Hyperparameters, run_finetune
    from biozoo.train.tf_strategy import ResolvedStrategy

    fake = ResolvedStrategy(strategy=None, name="mirrored", replicas=3)
    with pytest.raises(ValueError, match="not a multiple of the 3 replicas"):
        run_finetune("re", str(tiny_bert_real_vocab), tmp_path, tmp_path / "o", Hyperparameters(batch_size=8),
                     strategy=fake)


# ---- XLA: every task's train step compiles with jit_compile=True and static shapes --------


@pytest.mark.parametrize("kind", ["ner", "re", "qa", "doc"])
def test_train_step_compiles_with_xla_and_static_shapes(kind, tmp_path, request, tiny_bert_real_vocab):
    import tensorflow as tf

    from biozoo.optim import make_optimizer
    from biozoo.tasks.adapters import adapter_for
    from biozoo.train.finetune import Hyperparameters
    from biozoo.train.tf_loop import train

    data = task_data(kind, request, tmp_path / kind)
    hp = Hyperparameters(batch_size=4, max_seq_length=64, learning_rate=1e-3)
    adapter = adapter_for(kind)
    splits = adapter.load(data, only="train")
    task = adapter.build_task(str(tiny_bert_real_vocab), splits, hp)
    batches = adapter.batches(task, splits["train"], hp, training=True).make_static()
    task.compile(optimizer=make_optimizer("adamw", 1e-3, 4), jit_compile=True)
    batch = next(iter(batches.dataset_from(0)))
    shapes = {tuple(t.shape) for t in tf.nest.flatten(batch) if t.shape.rank == 2 and t.dtype == tf.int32}
    assert (4, 64) in shapes  # padded to the maximum length
    step = tf.function(task.train_step, jit_compile=True)
    hlo = step.experimental_get_compiler_ir(batch)(stage="hlo")
    assert "ENTRY" in hlo
    result = train(task, batches.dataset_from, 3, verbose=0)
    assert task.jit_compile is True and len(result["losses"]) == 3 and np.all(np.isfinite(result["losses"]))


# ---- one trace of the train step per run --------------------------------------------------------


def test_the_train_step_is_traced_once_per_run(tmp_path, request, tiny_bert_real_vocab):
    """`tf_loop.train` builds the optimizer before `fit`: Keras would build it inside the step's
    first trace on the default strategy, and tf.function traces a step again when its first
    trace created variables (a tiny BERT's step: 3.5 s a trace; MiniLM's: about 10 s)."""
    from biozoo.optim import make_optimizer
    from biozoo.tasks.adapters import adapter_for
    from biozoo.train.finetune import Hyperparameters
    from biozoo.train.tf_loop import train

    hp = Hyperparameters(batch_size=4, max_seq_length=64, learning_rate=1e-3)
    adapter = adapter_for("ner")
    splits = adapter.load(task_data("ner", request, tmp_path / "ner"), only="train")
    task = adapter.build_task(str(tiny_bert_real_vocab), splits, hp)
    batches = adapter.batches(task, splits["train"], hp, training=True)
    lengths = {int(next(iter(batches.dataset_from(step).take(1)))[0]["token_ids"].shape[1]) for step in range(4)}
    assert len(lengths) > 1, "batches of one length would not tell a retrace for new shapes apart"
    task.compile(optimizer=make_optimizer("adamw", 1e-3, 4))
    traces, step = [], task.train_step
    task.train_step = lambda *args: traces.append(len(traces)) or step(*args)
    result = train(task, batches.dataset_from, 4, verbose=0)
    assert len(result["losses"]) == 4 and np.all(np.isfinite(result["losses"]))
    assert len(traces) == 1, f"the train step was traced {len(traces)} times"
