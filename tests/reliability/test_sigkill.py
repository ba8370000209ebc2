"""kill -9 during `convert`, `annotate` and `finetune`, then the same command again: the output is
complete, and nothing the killed run wrote is left beside it (`.partial-*`, `.streamed-*`
temporary files and folders; the checkpoints of a finished fine-tuning)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from reliability_kit import leftovers, pubtator_document, write_ner_data

from biozoo import testing as H

REPO = Path(__file__).resolve().parents[2]


def _env(tmp_path):
    return {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2",
            "BIOZOO_CACHE": str(tmp_path / "cache")}


def _kill_when(command, tmp_path, ready, timeout=300):
    """Start `command`, SIGKILL it as soon as `ready()` holds; True when it was killed then."""
    victim = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(tmp_path),
                              cwd=REPO)
    deadline = time.time() + timeout
    while not ready() and victim.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    return victim.returncode == -signal.SIGKILL


def _rerun(command, tmp_path):
    result = subprocess.run(command, capture_output=True, text=True, env=_env(tmp_path), cwd=REPO, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def biozoo(*argv):
    return [sys.executable, "-m", "biozoo", *[str(a) for a in argv]]


@pytest.mark.slow
def test_convert_killed_then_rerun(tmp_path):
    import h5py

    # large enough (about 50 MB of weights) that the conversion is caught writing
    model = H.make_model("bert", "BertModel", vocab_size=30522, hidden_size=256, num_hidden_layers=6,
                         intermediate_size=1024, max_position_embeddings=512)
    source = H.save_hf_directory(model, tmp_path / "hf")
    out = tmp_path / "preset"
    command = biozoo("convert", "--from", "hf", source, "--output", out)
    killed = _kill_when(command, tmp_path, lambda: leftovers(tmp_path) != [])
    assert killed, "the conversion ended before it could be killed"
    assert not out.exists() and leftovers(tmp_path)  # the killed run's temporary files
    _rerun(command, tmp_path)
    assert leftovers(tmp_path) == []
    reference = tmp_path / "reference"
    _rerun(biozoo("convert", "--from", "hf", source, "--output", reference), tmp_path)

    def arrays(path):
        found = {}
        with h5py.File(path / "model.weights.h5", "r") as f:
            f.visititems(lambda name, obj: found.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
        return found

    a, b = arrays(out), arrays(reference)
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)


@pytest.mark.slow
def test_annotate_killed_then_rerun(kit, tmp_path):
    source = tmp_path / "abstracts.pubtator"
    source.write_text("".join(pubtator_document(10000 + i, words=120) for i in range(1500)), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    command = biozoo("annotate", source, "--model", kit.ner_model, "--output", out, "--no-progress",
                     "--chunk-size", "32")
    assert _kill_when(command, tmp_path, lambda: any(p.name.startswith(".out.jsonl.partial-")
                                                      and p.stat().st_size > 0 for p in tmp_path.iterdir()))
    assert not out.exists() and leftovers(tmp_path)
    _rerun(command, tmp_path)
    assert leftovers(tmp_path) == []
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == [str(10000 + i) for i in range(1500)]


@pytest.mark.slow
def test_finetune_killed_then_rerun(kit, tmp_path):
    data = write_ner_data(tmp_path / "NCBI-disease", sizes={"train": 400, "devel": 8, "test": 8})
    out = tmp_path / "model"
    checkpoints = Path(str(out) + ".checkpoints")
    command = biozoo("finetune", "ner", "--preset", kit.preset, "--data", data, "--output", out, "--epochs", "2",
                     "--batch-size", "8", "--max-seq-length", "16", "--checkpoint-every", "5", "--strategy", "cpu")
    assert _kill_when(command, tmp_path, lambda: (checkpoints / "checkpoint").exists())
    assert not out.exists()
    result = _rerun(command, tmp_path)
    assert "resuming from step" in result.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["resumed_from_step"] > 0 and metrics["train_steps"] == 100
    assert not checkpoints.exists() and leftovers(tmp_path) == []
