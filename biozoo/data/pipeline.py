"""Batches of tokenized features, planned in NumPy: dynamic padding on CPU/GPU, or static shapes
(pad to the maximum length, drop the remainder) for TPUs; as tf.data pipelines through
`biozoo.data.tf_pipeline`.

Prediction batches group examples of similar length (length buckets), so little padding is
computed. Training batches are random samples, as HF's are: length-bucketed training batches
carry each bucket's own label mix (ChemProt: 43 % negatives among its shortest sentences,
94 % among its longest), and that measurably hurt fine-tuning (test micro-F1 4.3 against
20.2 for random batches, same seed and steps). The padding of a random batch is saved in the
train step instead (`micro_batches` in biozoo.tasks.base).

Features are lists of 1-D integer arrays (one per example: token ids, labels...) or scalars.
Batches are planned in NumPy (shuffled per epoch), so the number of steps is known in advance
and Keras shows a progress bar with a total.
"""

from __future__ import annotations

import math

import numpy as np

# Padded lengths: few distinct shapes, so XLA compiles each step only a handful of times.
BOUNDARIES = (16, 32, 48, 64, 96, 128, 192, 256, 384, 512)


def padded_length(length, max_length, static):
    if static:
        return max_length
    for boundary in BOUNDARIES:
        if length <= boundary:
            return min(boundary, max_length)
    return max_length


def plan_batches(lengths, batch_size, max_length, shuffle=False, seed=0, static=False, drop_remainder=False):
    """Lists of example indices, one per batch. Shuffled (training): consecutive runs of a
    random order; otherwise (prediction) examples of similar length share a batch."""
    lengths = np.asarray(lengths)
    order = np.arange(len(lengths))
    if shuffle:
        np.random.default_rng(seed).shuffle(order)
    if static or shuffle:
        groups = [order]
    else:
        keys = np.array([padded_length(n, max_length, False) for n in lengths[order]])
        groups = [order[keys == key] for key in np.unique(keys)]
    batches = []
    for group in groups:
        for start in range(0, len(group), batch_size):
            batch = group[start:start + batch_size]
            if drop_remainder and len(batch) < batch_size:
                continue
            batches.append(batch)
    return batches


def plan_exact_batches(lengths, batch_size, max_tokens):
    """Prediction batches without bucketing: examples sorted by length, each batch at most
    `batch_size` rows and `max_tokens` padded tokens (rows x its longest), padded to its own
    longest example. For eager or graph prediction on CPUs, where shapes cost no compilation."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    batches, current = [], []
    for index in order:
        longest = max(int(lengths[index]), 1)
        if current and (len(current) >= batch_size or (len(current) + 1) * longest > max_tokens):
            batches.append(np.asarray(current))
            current = []
        current.append(index)
    if current:
        batches.append(np.asarray(current))
    return batches


def pad_batch(arrays, length, value):
    out = np.full((len(arrays), length), value, dtype=np.int32)
    for row, array in enumerate(arrays):
        n = min(len(array), length)
        out[row, :n] = array[:n]
    return out


class FeatureBatches:
    """Batches of `features` as `(x, y)` NumPy dicts, re-planned (and reshuffled) each epoch.

    `sequences`: names of per-token features and their padding values; `scalars`: names of
    per-example features. `x_keys`/`y_key` pick what the model sees. `shuffle` (training):
    random batches; otherwise length buckets. With `fill_batches`, a short batch (the last
    one, or a bucket's last) is filled up with padding rows (padding values everywhere, so no
    loss and no prediction), keeping one batch size and so fewer compiled shapes. `truncated`:
    what encoding cut from the examples to fit (for metrics.json), where the caller counted it.

    Example:
        >>> batches = FeatureBatches({"token_ids": ids, "labels": labels}, {"token_ids": 0},
        ...                          x_keys=("token_ids",), y_key="labels", scalars=("labels",), shuffle=True)
        >>> task.fit(batches.dataset(), epochs=1)
    """

    def __init__(self, features, sequences, x_keys, y_key=None, scalars=(), length_key="token_ids", w_key=None,
                 batch_size=32, max_length=512, shuffle=False, seed=0, static=False, drop_remainder=False,
                 fill_batches=True, scalar_pad=0, exact_lengths=False, max_tokens=4096, truncated=None):
        self.features = features
        self.truncated = truncated
        self.sequences = dict(sequences)
        self.scalars = tuple(scalars)
        self.x_keys, self.y_key, self.w_key = tuple(x_keys), y_key, w_key
        self.lengths = np.array([len(t) for t in features[length_key]])
        self.batch_size, self.max_length = batch_size, max_length
        self.shuffle, self.seed, self.static = shuffle, seed, static
        self.drop_remainder = drop_remainder or static
        self.fill_batches, self.scalar_pad = fill_batches, scalar_pad
        self.epoch = 0
        self.exact_lengths = exact_lengths and not (shuffle or static)
        if self.exact_lengths:
            self.fill_batches = False
            self.plan = plan_exact_batches(self.lengths, batch_size, max_tokens)
        else:
            self.plan = plan_batches(self.lengths, batch_size, max_length, shuffle, seed, self.static,
                                     self.drop_remainder)

    def __len__(self):
        return len(self.plan)

    def batch_shape(self, indices):
        """(rows, padded length) of the batch of examples `indices`."""
        longest = int(self.lengths[indices].max())
        length = min(longest, self.max_length) if self.exact_lengths else padded_length(longest, self.max_length,
                                                                                          self.static)
        return (self.batch_size if self.fill_batches else len(indices)), length

    def planned_shapes(self):
        """The distinct (rows, padded length) of this epoch's plan: what prediction compiles."""
        return {self.batch_shape(indices) for indices in self.plan}

    def batch_shapes(self, start_step, end_step):
        """The distinct (rows, padded length) of the batches from global step `start_step` to
        `end_step` (excluded): the shapes a jitted train step is compiled for."""
        shapes, step = set(), start_step
        if not self.plan:
            return shapes
        epoch, offset = divmod(int(start_step), len(self.plan))
        while step < end_step:
            plan = self.plan_for_epoch(epoch)[offset:offset + end_step - step]
            shapes.update(self.batch_shape(indices) for indices in plan)
            step, epoch, offset = step + len(plan), epoch + 1, 0
        return shapes

    def batch(self, indices):
        rows, length = self.batch_shape(indices)
        out = {}
        for key, pad in self.sequences.items():
            out[key] = pad_batch([self.features[key][i] for i in indices], length, pad)
            if rows > len(indices):
                out[key] = np.concatenate([out[key], np.full((rows - len(indices), length), pad, np.int32)])
        for key in self.scalars:
            values = [self.features[key][i] for i in indices]
            # filler rows: `scalar_pad`, or zeros shaped like the values (their weight is 0)
            pad = np.zeros_like(values[0]) if self.scalar_pad is None else self.scalar_pad
            if key == self.w_key:
                pad = 0.0
            out[key] = np.asarray(values + [pad] * (rows - len(indices)))
        x = {k: out[k] for k in self.x_keys}
        if not self.y_key:
            return x
        if self.w_key:
            return x, out[self.y_key], out[self.w_key].astype(np.float32)
        return x, out[self.y_key]

    def make_static(self, drop_remainder=True):
        """Pad every batch to the maximum length: one shape, as TPUs and XLA want. The last partial
        batch is dropped, or with `drop_remainder=False` filled with padding rows (`fill_batches`)."""
        self.static, self.drop_remainder = True, drop_remainder
        if not drop_remainder:
            self.fill_batches = True
        self.plan = plan_batches(self.lengths, self.batch_size, self.max_length, self.shuffle, self.seed, True,
                                 drop_remainder)
        if not self.plan:
            raise ValueError(f"static shapes drop partial batches, and the {len(self.lengths)} examples do not "
                             f"fill one batch of {self.batch_size}")
        return self

    def plan_for_epoch(self, epoch):
        """The batches of epoch `epoch` (0-based): reshuffled per epoch with seed + epoch."""
        if not self.shuffle or epoch == 0:
            return self.plan
        return plan_batches(self.lengths, self.batch_size, self.max_length, True,
                            self.seed + epoch, self.static, self.drop_remainder)

    def __iter__(self):
        plan = self.plan_for_epoch(self.epoch)
        self.epoch += 1
        for indices in plan:
            yield self.batch(indices)

    def batches_from(self, step):
        """Every batch from global step `step` on, epoch after epoch, without end."""
        if not self.plan:
            raise ValueError("no examples to batch")
        epoch, offset = divmod(int(step), len(self.plan))
        while True:
            for indices in self.plan_for_epoch(epoch)[offset:]:
                yield self.batch(indices)
            epoch, offset = epoch + 1, 0

    def dataset_from(self, step=0):
        """A tf.data.Dataset of the batches from global step `step` on (endless): what the resumable
        training loop streams (`biozoo.data.tf_pipeline`)."""
        from biozoo.data.tf_pipeline import dataset_from

        return dataset_from(self, step)

    def dataset(self, repeat=False):
        """A tf.data.Dataset of these batches with a known number of steps per epoch (`biozoo.data.tf_pipeline`)."""
        from biozoo.data.tf_pipeline import dataset

        return dataset(self, repeat)


def steps(count, batch_size):
    return math.ceil(count / batch_size)


MODEL_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def model_input_batches(token_ids, pad_token_id, segment_ids=None, extra=None, extra_padding=None, **options):
    """`FeatureBatches` whose x is the backbone's three inputs: padding masks (and, when not
    given, zero segment ids) are built here; `extra` adds features (labels, weights, indices)
    and `extra_padding` their padding values. `options` go to `FeatureBatches`.

    Example:
        >>> batches = model_input_batches(ids, tokenizer.pad_token_id, extra={"labels": labels},
        ...                               extra_padding={"labels": IGNORE_LABEL}, y_key="labels")
    """
    token_ids = list(token_ids)
    longest = max(map(len, token_ids), default=0)
    zeros, ones = np.zeros(longest, np.int32), np.ones(longest, np.int32)
    zeros.flags.writeable = ones.flags.writeable = False  # rows below are views of these (`pad_batch` copies them)
    features = {
        "token_ids": token_ids,
        "segment_ids": list(segment_ids) if segment_ids is not None else [zeros[:len(t)] for t in token_ids],
        "padding_mask": [ones[:len(t)] for t in token_ids],
        **(extra or {}),
    }
    padding = {"token_ids": pad_token_id, "segment_ids": 0, "padding_mask": 0, **(extra_padding or {})}
    return FeatureBatches(features, padding, x_keys=MODEL_INPUTS, **options)
