"""Child Pythons that lack part of what is installed: no TensorFlow (a JAX machine), or no Keras,
biozoo and TensorFlow (what an exported model must serve without)."""

from __future__ import annotations

import os
import signal
import site
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

# Run by `run_ids_export_test` in a Python where keras, biozoo and TensorFlow cannot be imported.
_RUNTIME_CHILD = """
import importlib.util, sys
import numpy as np
for name in ("keras", "keras_hub", "tf_keras", "biozoo", "tensorflow"):
    assert importlib.util.find_spec(name) is None, name + " is importable in the child"
fmt, model_path, inputs_path, out_path = sys.argv[1:5]
feed = dict(np.load(inputs_path))
if fmt == "onnx":
    import onnxruntime
    session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    out = dict(zip(names, session.run(names, feed)))
else:
    from ai_edge_litert.interpreter import Interpreter
    out = Interpreter(model_path=model_path).get_signature_runner()(**feed)
np.savez(out_path, **out)
"""


# What a machine without TensorFlow lacks (biozoo's editable install goes too: the repository is put on
# PYTHONPATH instead, its .pth file being skipped by `python -S`).
TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tf_keras", "tensorboard", "__editable__", "biozoo")


def site_without(site_dir, excluded):
    """A site directory holding everything installed but the distributions whose names start with
    one of `excluded` (symbolic links), for a child run with `python -S` and this directory on
    PYTHONPATH: a machine where they are not installed."""
    site_dir = Path(site_dir)
    site_dir.mkdir(parents=True, exist_ok=True)
    packages = [p for p in site.getsitepackages() if p.endswith("site-packages")][0]
    for name in os.listdir(packages):
        low = name.lower()
        if low.startswith(tuple(excluded)) or low.endswith(".pth"):
            continue
        if not (site_dir / name).exists():
            os.symlink(os.path.join(packages, name), site_dir / name)
    return site_dir


def without_tensorflow(directory, env=None):
    """(argv prefix, environment) of a Python child that runs biozoo from this repository where
    TensorFlow and tensorflow-text cannot be imported."""
    site_dir = site_without(Path(directory) / "site-without-tensorflow", TENSORFLOW_DISTRIBUTIONS)
    repository = Path(__file__).resolve().parents[2]
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    environment.update({"PYTHONPATH": f"{site_dir}{os.pathsep}{repository}", **(env or {})})
    return [sys.executable, "-S"], environment


def without_keras_site(directory):
    """A site directory holding everything installed except keras, biozoo, TensorFlow and their
    kin (symbolic links), for a child run with `python -S` and this directory on PYTHONPATH."""
    return site_without(Path(directory) / "site", ("keras", "tf_keras", "biozoo", "__editable__", "tensorflow"))


def run_exported_without_keras(fmt, model_path, feed, directory):
    """The outputs of an ONNX (onnxruntime) or LiteRT (ai-edge-litert) model file on `feed`,
    computed in a child process where keras, biozoo and TensorFlow cannot be imported."""
    directory = Path(directory)
    np.savez(directory / "feed.npz", **feed)
    env = {**os.environ, "PYTHONPATH": str(without_keras_site(directory))}
    result = subprocess.run([sys.executable, "-S", "-c", _RUNTIME_CHILD, fmt, str(model_path),
                             str(directory / "feed.npz"), str(directory / "outputs.npz")],
                            env=env, cwd=directory, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{fmt} child failed:\n{result.stderr[-3000:]}"
    return dict(np.load(directory / "outputs.npz"))


def kill_after_first_checkpoint(argv, checkpoints, env, timeout=600):
    """Start the command `argv`, SIGKILL it once `checkpoints` (a folder) holds a `.npz`
    checkpoint, and wait for it: what a preempted training run leaves behind."""
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    checkpoints = Path(checkpoints)
    deadline = time.time() + timeout
    while not (checkpoints.is_dir() and any(p.suffix == ".npz" for p in checkpoints.iterdir())):
        assert process.poll() is None and time.time() < deadline, "no checkpoint before the run ended"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
