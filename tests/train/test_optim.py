"""Optimisers: layer-wise learning-rate decay gives each layer decay ** (L + 1 - depth) of the
rate (checked on Adam's first step, whose size is the learning rate whatever the gradient),
LAMB trains, global-norm clipping bounds the update, the schedule is HF's."""

import numpy as np
import pytest


def tiny_task():
    import keras

    from biozoo.models.bert.backbone import BertBackbone
    from biozoo.tasks.sequence_classifier import SequenceClassifier

    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=60, num_layers=3, num_heads=2, hidden_dim=16, intermediate_dim=32,
                            max_sequence_length=16, dropout=0.0)
    return SequenceClassifier(backbone=backbone, label_names=["a", "b", "c"], dropout=0.0)


def batch():
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(1, 60, (8, 12)).astype("int32"), "segment_ids": np.zeros((8, 12), "int32"),
         "padding_mask": np.ones((8, 12), "int32")}
    return x, rng.integers(0, 3, 8)


def first_step_changes(optimizer, task):
    """{variable path: change} after one training step."""
    import keras

    before = {v.path: v.numpy().copy() for v in task.trainable_variables}
    task.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = batch()
    task.train_on_batch(x, y)
    return {v.path: v.numpy() - before[v.path] for v in task.trainable_variables}


def test_layerwise_decay_scales_each_layer_as_electra_does():
    from biozoo.train.optim import layer_depth, make_optimizer

    peak = 1e-3
    # no warmup: the first step uses the peak rate; no weight decay
    plain = first_step_changes(make_optimizer("adamw", peak, 1000, 0.0, 0.0), tiny_task())
    task = tiny_task()  # same seed: same initial weights
    decayed = first_step_changes(make_optimizer("adamw", peak, 1000, 0.0, 0.0, layer_decay=0.5, model=task,
                                                num_layers=3), task)
    expected_depths = {"token_embedding/embeddings": 0, "transformer_layer_0/self_attention_layer/query/kernel": 1,
                       "transformer_layer_2/feedforward_output_dense/kernel": 3, "logits/kernel": 4}
    seen = set()
    for path, change in decayed.items():
        depth = layer_depth(path, 3)
        for suffix, want in expected_depths.items():
            if path.endswith(suffix):
                assert depth == want, path
                seen.add(suffix)
        moved = np.abs(plain[path]) > 1e-9
        if not moved.any():
            continue
        # Adam's update is linear in the learning rate: each layer moves decay ** (L + 1 - depth) as far
        ratio = np.median(change[moved] / plain[path][moved])  # median: eps matters where |g| is tiny
        assert ratio == pytest.approx(0.5 ** (4 - depth), rel=1e-3), path
    assert seen == set(expected_depths)
    # and the rate itself: Adam's first update is lr * g / (|g| + eps), at most lr
    dense = np.abs(plain["transformer_layer_1/feedforward_output_dense/kernel"])
    assert dense.max() / peak == pytest.approx(1.0, rel=1e-2)


def test_lamb_trains():
    import keras

    from biozoo.train.optim import make_optimizer

    task = tiny_task()
    # LAMB moves each matrix by lr x its norm: the rates are larger than Adam's
    task.compile(optimizer=make_optimizer("lamb", 1e-1, 40, 0.1, 0.01),
                 loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = batch()
    losses = [float(task.train_on_batch(x, y)) for _ in range(40)]
    assert type(task.optimizer).__name__ == "Lamb"
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])


def test_global_norm_clipping_bounds_the_gradient():
    import keras

    from biozoo.train.optim import make_optimizer

    optimizer = make_optimizer("adamw", 1e-3, 10, clip_norm=1.0)
    grads = [keras.ops.ones((3, 4)) * 10.0, keras.ops.ones((5,)) * 10.0]
    clipped = optimizer._clip_gradients(grads)
    norm = float(np.sqrt(sum(float(np.sum(np.square(g))) for g in clipped)))
    assert norm == pytest.approx(1.0, rel=1e-5)


def test_schedule_matches_transformers_linear_schedule():
    torch = pytest.importorskip("torch")
    from transformers import get_linear_schedule_with_warmup

    from biozoo.train.optim import LinearWarmupDecay

    total, warmup, peak = 50, 7, 3e-5
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=peak)
    reference = get_linear_schedule_with_warmup(optimizer, warmup, total)
    schedule = LinearWarmupDecay(peak, total, warmup)
    for step in range(total + 2):
        assert float(schedule(step)) == pytest.approx(reference.get_last_lr()[0], rel=1e-6, abs=1e-12)
        optimizer.step()
        reference.step()
