"""Presets written before the architecture refactor (commit 54e91a7) load unchanged: the
registered class names, configs and weights files of backbones, tokenizers and task presets
are a format users keep on disk."""

import os

import numpy as np
import pytest

import biozoo

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
