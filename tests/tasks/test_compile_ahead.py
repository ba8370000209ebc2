"""On JAX a jitted step compiles once per batch shape, and a step waits for its own compilation.
biozoo compiles every shape a run will see at once, before the first training step and before
the first prediction (`biozoo._xla.compile_all`). Counted with JAX's own compilation events
where the steps run: none after the ahead compilation; without it (the control), steps do
compile; the results are the same either way."""

import contextlib
import json

import keras
import numpy as np
import pytest

from biozoo import testing as H

pytestmark = [pytest.mark.backends,
              pytest.mark.skipif(keras.backend.backend() != "jax", reason="XLA compiles per shape under JAX")]

LABELS = ["O", "B-Disease", "I-Disease"]


@contextlib.contextmanager
def compilations():
    """Every XLA compilation while inside, as a list that grows."""
    import jax
    from jax._src.dispatch import BACKEND_COMPILE_EVENT

    events = []

    def listener(event, duration, **kwargs):
        if event == BACKEND_COMPILE_EVENT:
            events.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


def counting_calls(function, events, counts):
    """`function`, appending to `counts` the compilations each call made."""
    def call(*args):
        before = len(events)
        result = function(*args)
        counts.append(len(events) - before)
        return result

    return call


def fine_tune(ahead, preset, data, output, monkeypatch, *options):
    """`biozoo finetune ner` with or without the ahead compilation: (batch shapes, compilations
    made by each step's call, losses). Checks the compilations metrics.json reports against
    the ones counted here."""
    import biozoo.train.loop as loop
    from biozoo.cli import main

    shapes, per_step = [], []
    original = loop.jax_train_function_compiled_ahead

    def train_function(model, batch_shapes):
        shapes.extend(batch_shapes)
        if ahead:
            original(model, batch_shapes)
        else:
            model.make_train_function()  # Keras' own: a step meeting a new shape compiles it
        model.train_function = counting_calls(model.train_function, events, per_step)

    with monkeypatch.context() as patch, compilations() as events:
        patch.setattr(loop, "jax_train_function_compiled_ahead", train_function)
        assert main(["finetune", "ner", "--preset", str(preset), "--data", str(data), "--output", str(output),
                     "--epochs", "2", "--batch-size", "4", "--max-seq-length", "64", "--micro-batches", "1",
                     "--seed", "3", *options]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert len(per_step) == metrics["train_steps"] > 2
    reported = metrics["xla_compilations"]  # training's (the ahead ones in the first step's call); evaluation's after
    assert max(sum(per_step), len(set(shapes))) <= reported["count"] <= len(events), (reported, events)
    assert 0 < reported["longest_seconds"] <= reported["seconds_summed"] <= sum(events) + 0.01  # rounded to 0.01 s
    return shapes, per_step, json.loads((output / "train_losses.json").read_text())["losses"]


def test_fine_tuning_compiles_every_batch_shape_before_the_first_step(tmp_path, request, tiny_bert_real_vocab,
                                                                      monkeypatch):
    data = H.task_data("ner", request, tmp_path / "data")
    shapes, per_step, losses = fine_tune(True, tiny_bert_real_vocab, data, tmp_path / "ahead", monkeypatch)
    assert len({length for _, length in shapes}) >= 2
    assert per_step[0] >= len(shapes) and not any(per_step[1:]), per_step
    # the control: Keras' own train function compiles in later steps, and trains the same
    _, control_per_step, control_losses = fine_tune(False, tiny_bert_real_vocab, data, tmp_path / "control",
                                                    monkeypatch)
    assert any(control_per_step[1:]), control_per_step
    assert losses == control_losses


def predictions(ahead, task, sentences, monkeypatch):
    """`task.predict_tags`, with a new compiled prediction, with or without the ahead
    compilation: (tags and scores, compilations before the first batch, compilations made by
    each batch's call)."""
    from biozoo.tasks import inference

    task._compiled_predict = None
    per_batch, call = [], inference._JaxPredict.__call__
    with monkeypatch.context() as patch, compilations() as events:
        if not ahead:
            patch.setattr(inference._JaxPredict, "compile_ahead", lambda self, shapes, keys: None)
        patch.setattr(inference._JaxPredict, "__call__",
                      lambda self, x: counting_calls(lambda x: call(self, x), events, per_batch)(x))
        result = task.predict_tags(sentences, batch_size=2)
    return result, len(events) - sum(per_batch), per_batch


def test_prediction_compiles_every_batch_shape_before_the_first_batch(tiny_bert_real_vocab, monkeypatch):
    import biozoo

    task = biozoo.TokenClassifier.from_preset(str(tiny_bert_real_vocab), label_names=LABELS)
    # windows of 5 to 52 tokens: batches of 16, 32, 48 and 64 tokens
    sentences = [["word"] * n for n in (3, 9, 20, 28, 40, 50, 5, 33)]
    result, before, per_batch = predictions(True, task, sentences, monkeypatch)
    assert len(per_batch) == 5 and before >= 4 and not any(per_batch), (before, per_batch)
    control, before, per_batch = predictions(False, task, sentences, monkeypatch)
    assert sum(per_batch) >= 4, per_batch
    (tags, scores), (control_tags, control_scores) = result, control
    assert tags == control_tags and len(tags) == len(sentences)
    for row, control_row in zip(scores, control_scores):
        np.testing.assert_array_equal(row, control_row)


def test_data_parallel_fine_tuning_compiles_ahead_too(tmp_path, request, tiny_bert_real_vocab, monkeypatch):
    import jax

    if jax.device_count() < 2:
        pytest.skip("one JAX device: `make test` runs this with XLA_FLAGS=--xla_force_host_platform_device_count=2")
    data = H.task_data("ner", request, tmp_path / "data")
    shapes, per_step, _ = fine_tune(True, tiny_bert_real_vocab, data, tmp_path / "two", monkeypatch,
                                    "--strategy", "mirrored")
    assert json.loads((tmp_path / "two" / "metrics.json").read_text())["replicas"] == 2
    assert per_step[0] >= len(shapes) >= 2 and not any(per_step[1:]), per_step


def test_on_a_jax_gpu_fine_tuning_pads_every_batch_to_one_length_and_drops_none(tmp_path, request,
                                                                               tiny_bert_real_vocab, monkeypatch):
    """`--static-shapes auto` on a JAX GPU (here the CPU reported as one): every batch padded to
    --max-seq-length, one program compiled, the same steps as dynamic padding (the last partial
    batch filled with padding rows, not dropped as static shapes drop it)."""
    import biozoo.train.finetune as finetune

    data = H.task_data("ner", request, tmp_path / "data")
    batch = ("--batch-size", "3")  # the later option wins over fine_tune's 4
    dynamic_shapes, dynamic_per_step, _ = fine_tune(True, tiny_bert_real_vocab, data, tmp_path / "cpu", monkeypatch,
                                                    *batch)
    monkeypatch.setattr(finetune, "accelerators", lambda: ["gpu:0"])
    shapes, per_step, losses = fine_tune(True, tiny_bert_real_vocab, data, tmp_path / "gpu", monkeypatch, *batch)
    metrics = json.loads((tmp_path / "gpu" / "metrics.json").read_text())
    assert metrics["train_examples"] % 3, "a partial last batch is what tells filling from dropping"
    assert len({length for _, length in dynamic_shapes}) >= 2
    assert set(shapes) == {(3, 64)} and per_step[0] == 1 and not any(per_step[1:]), (shapes, per_step)
    assert len(per_step) == len(dynamic_per_step) and all(np.isfinite(losses))
