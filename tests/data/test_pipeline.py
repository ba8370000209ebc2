"""Batch plans: prediction batches are length buckets; training batches are random samples
(buckets would give each batch its bucket's label mix), and every example is used once per
epoch in both."""

import itertools

import numpy as np

from biozoo.data.pipeline import BOUNDARIES, FeatureBatches, plan_batches


def bucket_of(length):
    return next(b for b in BOUNDARIES if length <= b)


LENGTHS = np.random.default_rng(0).integers(3, 128, 1000)


def test_prediction_batches_are_length_buckets():
    batches = plan_batches(LENGTHS, 32, 128)
    assert sorted(np.concatenate(batches)) == list(range(len(LENGTHS)))
    assert all(len({bucket_of(n) for n in LENGTHS[b]}) == 1 for b in batches)


def test_training_batches_are_random_samples_of_every_example():
    epochs = [plan_batches(LENGTHS, 32, 128, shuffle=True, seed=seed) for seed in (0, 1)]
    for batches in epochs:
        assert sorted(np.concatenate(batches)) == list(range(len(LENGTHS)))
        assert all(len(b) == 32 for b in batches[:-1])
    mixed = [len({bucket_of(n) for n in LENGTHS[b]}) for b in epochs[0]]
    assert np.mean(mixed) > 3  # lengths mixed as in the whole set, not one bucket per batch
    assert not np.array_equal(np.concatenate(epochs[0]), np.concatenate(epochs[1]))
    again = plan_batches(LENGTHS, 32, 128, shuffle=True, seed=0)  # a seed gives the same plan (resume)
    assert all(np.array_equal(a, b) for a, b in zip(again, epochs[0]))


def test_batch_shapes_are_those_of_the_batches_a_run_gets():
    """What a jitted step is compiled for ahead: the shapes of the batches themselves, from a
    mid-epoch start across epochs (reshuffled), with short batches filled or not."""
    rng = np.random.default_rng(4)
    ids = [np.ones(n, np.int32) for n in [*rng.integers(1, 30, 33), 40, 70, 100, 130]]
    for fill in (True, False):
        batches = FeatureBatches({"token_ids": ids}, {"token_ids": 0}, x_keys=("token_ids",), batch_size=8,
                                 max_length=128, shuffle=True, seed=2, fill_batches=fill)
        for start, end in ((0, 5), (3, 11), (7, 8)):
            seen = {x["token_ids"].shape for x in itertools.islice(batches.batches_from(start), end - start)}
            assert batches.batch_shapes(start, end) == seen
    assert len({length for _, length in batches.batch_shapes(0, 40)}) >= 3  # several lengths, here and above


def test_static_batches_have_one_shape_and_drop_the_last_partial_batch_or_fill_it():
    ids = [np.arange(1, n + 1, dtype=np.int32) for n in LENGTHS[:100]]  # 100 examples: 3 batches of 32 and 4
    for drop, steps in ((True, 3), (False, 4)):
        batches = FeatureBatches({"token_ids": ids}, {"token_ids": 0}, x_keys=("token_ids",), batch_size=32,
                                 max_length=128, shuffle=True, seed=1).make_static(drop_remainder=drop)
        for epoch in (0, 1):
            plan = batches.plan_for_epoch(epoch)
            assert len(plan) == steps
            used = sorted(np.concatenate(plan))
            assert used == list(range(100)) if not drop else len(used) == 96 == len(set(used))
        xs = list(itertools.islice(batches.batches_from(0), steps))
        assert {x["token_ids"].shape for x in xs} == {(32, 128)} == batches.batch_shapes(0, 2 * steps)
        real_rows = sum(int((x["token_ids"] != 0).any(axis=1).sum()) for x in xs)
        assert real_rows == (96 if drop else 100)  # the filled rows are padding only
