"""Length-sorted micro-batches give the whole batch's update.

A batch of mixed lengths (with filler rows, and for NER with ignored sub-tokens, so every
micro-batch holds a different number of valid labels) is trained one step with plain SGD at
rate 1, so the change of every weight is its gradient: run as one batch or as 2, 4 or 7
micro-batches, the gradients and the reported loss agree. Under every backend (TensorFlow
splits each replica's batch in its graph; JAX and PyTorch split the global batch on the host),
and on JAX over two devices."""

import numpy as np
import pytest

pytestmark = pytest.mark.backends

LENGTHS = [3, 17, 9, 24, 5, 12, 2, 20, 7, 0, 0, 0]  # 0: filler rows (all padding)


def tiny_backbone():
    import keras

    from biozoo.models.bert.backbone import BertBackbone

    keras.utils.set_random_seed(0)
    return BertBackbone(vocabulary_size=60, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
                        max_sequence_length=32, dropout=0.0)


def batch(kind):
    rng = np.random.default_rng(0)
    width = 32  # wider than the longest row, as a padded batch is
    token_ids = np.zeros((len(LENGTHS), width), "int32")
    mask = np.zeros_like(token_ids)
    for row, n in enumerate(LENGTHS):
        token_ids[row, :n] = rng.integers(1, 60, n)
        mask[row, :n] = 1
    x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": mask}
    if kind == "ner":
        y = np.where(mask == 1, rng.integers(0, 3, mask.shape), -100)
        y[rng.random(mask.shape) < 0.3] = -100  # non-first sub-tokens
        return x, y.astype("int32")
    return x, np.array([rng.integers(0, 3) if n else -100 for n in LENGTHS], "int32")


def task_for(kind):
    from biozoo.tasks.sequence_classifier import SequenceClassifier
    from biozoo.tasks.token_classifier import TokenClassifier

    if kind == "ner":
        return TokenClassifier(backbone=tiny_backbone(), label_names=["O", "B-X", "I-X"], dropout=0.0)
    return SequenceClassifier(backbone=tiny_backbone(), label_names=["a", "b", "c"], dropout=0.0)


def one_step(kind, micro_batches, distribution=None):
    import contextlib

    import keras

    with distribution.scope() if distribution else contextlib.nullcontext():
        task = task_for(kind)
        task.micro_batches = micro_batches
        task.compile(optimizer=keras.optimizers.SGD(learning_rate=1.0), jit_compile=keras.backend.backend() == "jax")
        before = [keras.ops.convert_to_numpy(w) for w in task.trainable_weights]
        x, y = batch(kind)
        loss = float(task.train_on_batch(x, y, return_dict=True)["loss"])
    return loss, [b - keras.ops.convert_to_numpy(w) for b, w in zip(before, task.trainable_weights)]


def count_host_splits(monkeypatch):
    """Count the batches JAX and PyTorch split on the host (so a test sees the parts really ran)."""
    from biozoo.tasks import _micro_batches

    calls, split = [], _micro_batches.split_batch
    monkeypatch.setattr(_micro_batches, "split_batch", lambda *a, **k: calls.append(1) or split(*a, **k))
    return calls


@pytest.mark.parametrize("kind", ["ner", "re"])
def test_micro_batches_give_the_whole_batch_gradient(kind, monkeypatch):
    import keras

    splits = count_host_splits(monkeypatch)
    x, y = batch(kind)
    order = np.argsort(-x["padding_mask"].sum(1), kind="stable")
    valid_per_part = [int((y[part] != -100).sum()) for part in np.split(order, 4)]
    assert len(set(valid_per_part)) > 1  # unequal parts: a plain mean of their losses would be wrong

    loss, gradients = one_step(kind, 1)
    assert max(float(np.abs(g).max()) for g in gradients) > 1e-3
    for parts in (2, 4, 7):  # 7 does not divide the 12 rows: every row still counts
        micro_loss, micro_gradients = one_step(kind, parts)
        assert micro_loss == pytest.approx(loss, rel=1e-6)
        for g, micro in zip(gradients, micro_gradients):
            np.testing.assert_allclose(micro, g, rtol=0, atol=1e-6)
    assert len(splits) == (0 if keras.backend.backend() == "tensorflow" else 3)


@pytest.mark.parametrize("micro_batches", [1, 3])
def test_jax_training_steps_trace_each_layer_norm_in_its_fused_form(micro_batches, monkeypatch):
    """Under JAX a training step (whole, or in micro-batches) traces every plain LayerNorm of the
    model in the form XLA fuses, as prediction does; under other backends none."""
    import keras

    from biozoo.tasks import inference

    traced, fused = [], inference._fused_layer_norm
    monkeypatch.setattr(inference, "_fused_layer_norm", lambda layer, x: traced.append(layer) or fused(layer, x))
    task = task_for("ner")
    task.micro_batches = micro_batches
    task.compile(optimizer=keras.optimizers.SGD(learning_rate=1.0), jit_compile=keras.backend.backend() == "jax")
    x, y = batch("ner")
    assert np.isfinite(float(task.train_on_batch(x, y, return_dict=True)["loss"]))
    layer_norms = {id(layer) for layer in task._flatten_layers() if type(layer) is keras.layers.LayerNormalization}
    assert len(layer_norms) == 5  # the embeddings' and two per transformer layer
    assert {id(layer) for layer in traced} == (layer_norms if keras.backend.backend() == "jax" else set())


@pytest.mark.parametrize("kind", ["ner", "re"])
def test_micro_batches_over_two_jax_devices(kind, monkeypatch):
    """Under keras.distribution.DataParallel over two devices each micro-batch is split over
    them: the update equals one device's on the whole batch."""
    import keras

    if keras.backend.backend() != "jax" or len(keras.distribution.list_devices()) < 2:
        pytest.skip("needs JAX with two devices (XLA_FLAGS=--xla_force_host_platform_device_count=2)")
    splits = count_host_splits(monkeypatch)
    loss, gradients = one_step(kind, 1)
    distribution = keras.distribution.DataParallel(devices=keras.distribution.list_devices()[:2])
    for parts in (1, 2, 4):
        micro_loss, micro_gradients = one_step(kind, parts, distribution)
        assert micro_loss == pytest.approx(loss, rel=1e-6)
        for g, micro in zip(gradients, micro_gradients):
            np.testing.assert_allclose(micro, g, rtol=0, atol=1e-6)
    assert len(splits) == 2


def test_split_batch_keeps_every_row_once_and_bounds_the_widths():
    """Off TensorFlow the parts are cut on the host: every row in exactly one part, longest
    first, each part as wide as the padded length above its longest row (few compiled shapes),
    the shares of valid labels summing to 1; with 2 replicas every part has an even row count."""
    from biozoo.data.pipeline import BOUNDARIES
    from biozoo.tasks._micro_batches import split_batch

    x, y = batch("ner")
    x["row"] = np.arange(len(LENGTHS))[:, None]  # a feature that names each row
    task = task_for("ner")
    lengths = x["padding_mask"].sum(1)
    for parts, replicas in ((4, 1), (7, 1), (4, 2), (3, 2)):
        task.micro_batches = parts
        split = split_batch(task, x, y, None, replicas=replicas)
        seen = []
        for part_x, part_y, _, share in split:
            rows = part_x["row"][:, 0]
            seen.extend(rows)
            width = part_x["token_ids"].shape[1]
            assert width == min(b for b in BOUNDARIES if b >= max(lengths[rows].max(), 1))
            assert part_y.shape == (len(rows), width) and len(rows) % replicas == 0
            assert share == pytest.approx((y[rows] != -100).sum() / (y != -100).sum())
        assert sorted(seen) == list(range(len(LENGTHS)))
        assert [lengths[i] for i in seen] == sorted(lengths, reverse=True)
        assert sum(s for *_, s in split) == pytest.approx(1.0)


def test_micro_batches_follow_the_model_and_shapes():
    """finetune uses 4 micro-batches only where shapes may change per step and the loss ignores
    padding, and always a count that divides each replica's batch."""
    from biozoo.tasks.question_answerer import QuestionAnswerer
    from biozoo.train.finetune import Hyperparameters, micro_batches

    auto, six = Hyperparameters(), Hyperparameters(micro_batches=6)
    ner = task_for("ner")
    assert micro_batches(auto, ner, 32, fixed_shapes=False) == 4
    assert micro_batches(auto, ner, 32, fixed_shapes=True) == 1  # XLA / static shapes: one shape per step
    assert micro_batches(six, ner, 16, fixed_shapes=False) == 2
    assert micro_batches(auto, ner, 6, fixed_shapes=False) == 2
    assert not QuestionAnswerer.padding_invariant_loss  # span logits cover the padding, as in BERT's run_squad
    with pytest.raises(ValueError, match="micro-batches"):
        micro_batches(Hyperparameters(micro_batches=0), ner, 32, fixed_shapes=False)
