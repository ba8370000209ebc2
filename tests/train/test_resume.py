"""Preemption safety: a fine-tuning run killed with SIGKILL mid-epoch and re-run with the same
command resumes from its last checkpoint and ends with the weights of an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from biozoo.testing import chemprot_subset

REPO = Path(__file__).resolve().parents[2]


def command(preset, data, output):
    return [sys.executable, "-m", "biozoo", "finetune", "re", "--preset", str(preset), "--data", str(data),
            "--output", str(output), "--epochs", "2", "--batch-size", "8", "--learning-rate", "1e-3",
            "--max-seq-length", "64", "--checkpoint-every", "5", "--deterministic", "--strategy", "cpu"]


def h5_arrays(path):
    arrays = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: arrays.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
    return arrays


def latest_checkpoint_step(checkpoints):
    state = checkpoints / "checkpoint"
    if not state.exists():
        return 0
    for line in state.read_text().splitlines():
        if line.startswith("model_checkpoint_path:"):
            return int(line.split("ckpt-")[-1].strip().strip('"'))
    return 0


@pytest.mark.slow
def test_sigkill_mid_epoch_then_resume_gives_the_uninterrupted_weights(tmp_path, shared_data, tiny_bert_real_vocab):
    data = chemprot_subset(shared_data, tmp_path / "data", {"train": 96, "dev": 16, "test": 16})
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}

    reference = subprocess.run(command(tiny_bert_real_vocab, data, tmp_path / "reference"), capture_output=True, text=True,
                               env=env, cwd=REPO, timeout=900)
    assert reference.returncode == 0, reference.stderr[-3000:]

    steps_per_epoch = json.loads((tmp_path / "reference" / "metrics.json").read_text())["train_steps"] // 2
    output = tmp_path / "resumed"
    victim = subprocess.Popen(command(tiny_bert_real_vocab, data, output), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env, cwd=REPO)
    deadline = time.time() + 600
    def mid_second_epoch(step):  # the second epoch is reshuffled: resuming must replay its order
        return step > steps_per_epoch and step % steps_per_epoch

    while not mid_second_epoch(latest_checkpoint_step(Path(str(output) + ".checkpoints"))) and victim.poll() is None \
            and time.time() < deadline:
        time.sleep(0.05)
    killed_at = latest_checkpoint_step(Path(str(output) + ".checkpoints"))
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert victim.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert not (output / "metrics.json").exists()
    assert mid_second_epoch(killed_at)

    resumed = subprocess.run(command(tiny_bert_real_vocab, data, output), capture_output=True, text=True, env=env, cwd=REPO,
                             timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming from step" in resumed.stderr
    assert not Path(str(output) + ".checkpoints").exists()  # removed once the preset is written
    worst, where = 0.0, None
    for name in ("model.weights.h5", "task.weights.h5"):
        a, b = h5_arrays(tmp_path / "reference" / name), h5_arrays(output / name)
        assert a.keys() == b.keys() and a
        for key in a:
            diff = float(np.max(np.abs(a[key].astype(np.float64) - b[key]))) if a[key].size else 0.0
            if diff > worst:
                worst, where = diff, f"{name}:{key}"
    print(f"killed after the checkpoint of step {killed_at}; resumed; max |weight diff| {worst:.2e} ({where})")
    assert worst <= 1e-5
