"""Presets written before the architecture refactor (commit 54e91a7), and task presets written
before the one-house refactor (5f0f885: a fine-tuned NER model, an AIONER conversion), load
unchanged: the registered class names, configs and weights files of backbones, tokenizers and
task presets are a format users keep on disk."""

import json
import os

import numpy as np
import pytest

import biozoo
from biozoo.cli import main

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "presets_v0")
EXPECTED = np.load(os.path.join(HERE, "outputs.npz"))
INPUTS = dict(zip(sorted(["token_ids", "segment_ids", "padding_mask"]), EXPECTED["inputs"]))
TASKS = {
    "bert_token_classifier": biozoo.TokenClassifier,
    "electra_sequence_classifier": biozoo.SequenceClassifier,
    "albert_question_answerer": biozoo.QuestionAnswerer,
    "bert_question_answerer": biozoo.QuestionAnswerer,
}


@pytest.mark.parametrize("name", ["bert_backbone", "albert_backbone", "electra_backbone"])
def test_backbone_preset_loads(name):
    import keras_hub

    for load in (biozoo.from_preset, keras_hub.models.Backbone.from_preset):
        out = load(os.path.join(HERE, name))(INPUTS)["sequence_output"]
        np.testing.assert_allclose(out, EXPECTED[name], atol=1e-5)


def test_tokenizer_preset_loads():
    import keras_hub

    for load in (biozoo.Tokenizer.from_preset, keras_hub.tokenizers.Tokenizer.from_preset):
        tokenizer = load(os.path.join(HERE, "albert_backbone"))
        assert type(tokenizer).__name__ == "AlbertTokenizer"
        assert tokenizer.ids(["the gene brca1 causes cancer"])[0] == EXPECTED["albert_ids"].tolist()


@pytest.mark.parametrize("name", sorted(TASKS))
def test_task_preset_loads(name):
    task = TASKS[name].from_preset(os.path.join(HERE, name))
    out = task(INPUTS)
    out = np.stack(out, -1) if isinstance(out, (tuple, list)) else np.asarray(out)
    np.testing.assert_allclose(out, EXPECTED[name], atol=1e-5)
    assert task.preprocessor is not None and task.preprocessor.tokenizer is not None


# Task presets written by `biozoo finetune` and by the AIONER conversion before the one-house
# refactor (commit 5f0f885; make_task_presets.py), and what `biozoo annotate` gave with them then.
TASK_PRESETS = {"finetuned_ner": "ner", "aioner_softmax": "aioner"}


def _recorded(name):
    with open(os.path.join(HERE, "task_outputs", f"{name}.jsonl"), encoding="utf-8") as f:
        return json.loads(f.readline())


@pytest.mark.parametrize("name", sorted(TASK_PRESETS))
def test_an_old_task_preset_annotates_as_it_did(name, tmp_path):
    recorded = _recorded(name)
    text = tmp_path / "abstract.txt"
    text.write_text(recorded["passages"][0]["text"] + "\n", encoding="utf-8")
    assert main(["annotate", str(text), "--model", os.path.join(HERE, name), "--output", str(tmp_path / "out.jsonl")]) == 0
    got = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8"))["predictions"]
    assert [(p["start"], p["end"], p["type"], p["text"]) for p in got] == \
        [(p["start"], p["end"], p["type"], p["text"]) for p in recorded["predictions"]]
    np.testing.assert_allclose([p["score"] for p in got], [p["score"] for p in recorded["predictions"]], atol=1e-5)


@pytest.mark.parametrize("name", sorted(TASK_PRESETS))
def test_an_old_task_preset_evaluates_and_exports(name, tmp_path, capsys):
    """`evaluate` and `export` reach an old task preset, AIONER's as much as a fine-tuned one."""
    model = os.path.join(HERE, name)
    assert main(["evaluate", TASK_PRESETS[name], "--model", model, "--data", os.path.join(HERE, "ner_data")]) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    if name == "finetuned_ner":  # the test F1 that `biozoo finetune` recorded when it wrote the preset
        with open(os.path.join(model, "metrics.json"), encoding="utf-8") as f:
            recorded = json.load(f)["test"]
        assert metrics["counts"] == recorded["counts"] and metrics["f1"] == pytest.approx(recorded["f1"])
    else:
        assert metrics["counts"]["gold"] > 0
    assert main(["export", "onnx", "--model", model, "--output", str(tmp_path / "onnx")]) == 0
    certificate = json.loads((tmp_path / "onnx" / "accuracy_certificate.json").read_text())
    assert max(certificate["fixed_inputs"]["max_abs_diff"].values()) <= 1e-4
