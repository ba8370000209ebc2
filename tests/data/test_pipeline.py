"""Batch plans: prediction batches are length buckets; training batches are random samples
(buckets would give each batch its bucket's label mix), and every example is used once per
epoch in both."""

import numpy as np

from biozoo.data.pipeline import BOUNDARIES, plan_batches


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
