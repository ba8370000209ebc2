"""Every family's backbone and every task give the same outputs under TensorFlow, JAX and PyTorch, and a
preset written under one backend loads under the others.

Random-weight checkpoints of every family (bare encoder, token / sequence classification, QA, MLM and
replaced-token heads) and AIONER's softmax and CRF fixture models are converted here, under TensorFlow;
a child process per backend (JAX where TensorFlow cannot be imported, PyTorch) loads the same presets
and computes outputs on the same inputs, and annotates the same texts. Outputs agree to 1e-5 (float32)
and annotations exactly (scores to 1e-5). The JAX child writes a task preset of its own, which loads
here and computes what it computed there.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import biozoo
from biozoo import testing as H

pytestmark = pytest.mark.slow

TOLERANCE = 1e-5
CHILD = Path(__file__).with_name("backend_child.py")
AIONER = Path(__file__).resolve().parents[1] / "fixtures" / "aioner"
TEXTS = ["BRCA1 mutations cause breast cancer in women.", "Cystic fibrosis (CF) is caused by CFTR variants.",
         "Naïve µ-opioid (IL-2\u00adR) in Σ cells; p < 0.05.", "What causes cystic fibrosis?",
         "Which gene is mutated?", "What is BRCA1?"]
NER_LABELS = {"id2label": {0: "O", 1: "B-Disease", 2: "I-Disease"}, "label2id": {"O": 0, "B-Disease": 1, "I-Disease": 2}}
CLS_LABELS = {"id2label": {0: "no", 1: "yes"}, "label2id": {"no": 0, "yes": 1}}


def _items(directory, tiny_spiece):
    """Request items: (name, kind, HF directory) of every family case and task head."""
    items = []
    for name in H.cases(kind="backbone"):
        case = H.get_case(name)
        _, hf_dir = H.save_case(case, case.model_class, directory / "hf", "safetensors", tiny_spiece)
        items.append((f"{name}/backbone", "backbone", hf_dir))
    for name, kind, hf_class in H.cases(kind="task"):
        config = {"ner": NER_LABELS, "re": CLS_LABELS}.get(kind, {})
        _, hf_dir = H.save_case(H.get_case(name), hf_class, directory / "hf" / kind, "safetensors", tiny_spiece,
                                max_position_embeddings=64, architectures=[hf_class], **config)
        items.append((f"{name}/{kind}/{hf_class}", kind, hf_dir))
    return items


def _aioner_presets(directory):
    from biozoo.convert.aioner import convert_aioner

    labels = (AIONER / "AIO_label.vocab").read_text().split()
    root = AIONER / "pretrained_models"
    models = {"softmax": ("AIONER/Bioformer-softmax-AIONER.h5", "bioformer-cased-v1.0", False),
              "crf": ("AIONER/PubmedBERT-CRF-AIONER.h5", "BiomedNLP-PubMedBERT-base-uncased-abstract", True)}
    out = []
    for decoder, (model_file, base, lowercase) in models.items():
        target = directory / f"aioner-{decoder}"
        convert_aioner(root / model_file, root / base, target, labels, decoder, lowercase, progress=False)
        out.append((f"aioner/{decoder}", f"aioner_{decoder}", target))
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory, tiny_spiece):
    """The presets (converted here, under TensorFlow), their inputs, and TensorFlow's outputs."""
    sys.path.insert(0, str(CHILD.parent))
    import backend_child

    directory = tmp_path_factory.mktemp("backends")
    request = {"texts": TEXTS, "items": []}
    for name, kind, hf_dir in _items(directory, tiny_spiece):
        inputs_path = directory / f"inputs-{len(request['items'])}.npz"
        np.savez(inputs_path, **H.random_inputs(seed=len(request["items"])))
        request["items"].append({"name": name, "kind": kind, "preset": str(hf_dir), "inputs": str(inputs_path)})
    for name, kind, preset in _aioner_presets(directory):
        request["items"].append({"name": name, "kind": kind, "preset": str(preset)})
    bert = next(i for i in request["items"] if i["name"] == "bert/backbone")
    request["write"] = {"backbone": bert["preset"], "inputs": bert["inputs"]}
    (directory / "request.json").write_text(json.dumps(request))
    out = directory / "tensorflow"
    out.mkdir()
    backend_child.main(directory / "request.json", out)
    return directory


_RUNS = {}


def _run_child(backend, directory):
    """(outputs, results) of the child under `backend`, run once per session."""
    if (backend, directory) not in _RUNS:
        _RUNS[backend, directory] = _child(backend, directory)
    return _RUNS[backend, directory]


def _child(backend, directory):
    out = directory / backend
    out.mkdir(exist_ok=True)
    if backend == "jax":
        argv, env = H.without_tensorflow(directory, {"KERAS_BACKEND": "jax"})
    else:
        import os
        import sys

        argv, env = [sys.executable], {**os.environ, "KERAS_BACKEND": backend}
    env["BIOZOO_CACHE"] = str(directory / f"cache-{backend}")
    run = subprocess.run([*argv, str(CHILD), str(directory / "request.json"), str(out)], env=env,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, f"{backend} child failed:\n{run.stderr[-4000:]}"
    return dict(np.load(out / "outputs.npz")), json.loads((out / "results.json").read_text())


def _same_annotations(got, expected, where):
    if isinstance(expected, dict):
        assert set(got) == set(expected), where
        for key in expected:
            _same_annotations(got[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert len(got) == len(expected), f"{where}: {len(got)} items, TensorFlow {len(expected)}"
        for i, (a, b) in enumerate(zip(got, expected)):
            _same_annotations(a, b, f"{where}[{i}]")
    elif isinstance(expected, float):
        assert got == expected or abs(got - expected) <= TOLERANCE, f"{where}: {got} against TensorFlow's {expected}"
    else:
        assert got == expected, f"{where}: {got!r} against TensorFlow's {expected!r}"


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_every_model_and_task_equals_tensorflow(backend, reference):
    expected = dict(np.load(reference / "tensorflow" / "outputs.npz"))
    expected_results = json.loads((reference / "tensorflow" / "results.json").read_text())
    got, results = _run_child(backend, reference)
    assert results["backend"] == backend
    if backend == "jax":
        assert results["tensorflow_loaded"] is False  # and it could not have been: see without_tensorflow
    assert set(got) == set(expected)
    worst = {}
    for key, value in expected.items():
        if key.startswith("written_here/"):
            continue
        diff = float(np.abs(got[key].astype(np.float64) - value).max())
        worst[key] = diff
        assert diff <= TOLERANCE, f"{backend} {key}: max |diff| to TensorFlow {diff:.2e}"
    print(f"{backend}: {len(worst)} outputs, max |diff| to TensorFlow {max(worst.values()):.2e}")
    names = [i["name"] for i in json.loads((reference / "request.json").read_text())["items"]]
    for name in names:
        _same_annotations(results[name], expected_results[name], f"{backend} {name}")
    assert any(results[n] and any(r.get("entities") for r in results[n]) for n in names if n.startswith("aioner"))


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_preset_written_under_another_backend_loads_here(backend, reference):
    got, _ = _run_child(backend, reference)
    written = reference / backend / "written_here"
    task = biozoo.TokenClassifier.from_preset(str(written))
    inputs = dict(np.load(json.loads((reference / "request.json").read_text())["write"]["inputs"]))
    here = H.to_numpy(task(inputs))
    diff = float(np.abs(here - got["written_here/logits"]).max())
    assert diff <= TOLERANCE, f"a TokenClassifier written under {backend}: max |diff| here {diff:.2e}"
