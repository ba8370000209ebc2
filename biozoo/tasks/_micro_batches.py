"""Length-sorted micro-batches on JAX and PyTorch (TensorFlow's are
`biozoo.tasks.tf_graph.micro_batch_train_step`): one random training batch run as k parts,
rows sorted by length, each part cut to its own padded length, their gradients summed into
one update, the update of the whole batch, computed with less padding.

Each part's loss is its mean over its valid examples (or tokens) times its share of the
batch's valid count, so the parts' losses and gradients add up to the whole batch's. On JAX a
part's widths come from `biozoo.data.pipeline.BOUNDARIES`, so the jitted part step compiles
once per width; the optimizer (and its clipping) runs once per batch on the summed gradient.
Under a `keras.distribution` every part is split over the devices, as the batch would be.

Example:
    >>> task.micro_batches = 4
    >>> task.fit(batches_of_numpy, epochs=1)  # same updates as micro_batches = 1
"""

from __future__ import annotations

import keras
import numpy as np

from biozoo import _keras_internals
from biozoo.data import IGNORE_LABEL
from biozoo.data.pipeline import padded_length
from biozoo.tasks.inference import fused_layer_norms


def _valid_per_row(y, sample_weight):
    """Per row, the examples (tokens) that count: weighted, or not labelled IGNORE_LABEL."""
    counted = sample_weight > 0 if sample_weight is not None else y != IGNORE_LABEL
    counted = counted.reshape(len(counted), -1)
    return counted.sum(axis=1)


def split_batch(task, x, y, sample_weight, replicas=1):
    """The parts of one batch (NumPy): [(x, y, sample_weight, share)], longest rows first, each
    part a multiple of `replicas` rows and cut to the padded length of its longest row; `share`
    is the part's valid examples over the batch's."""
    x = {key: np.asarray(value) for key, value in x.items()}
    y = None if y is None else np.asarray(y)
    sample_weight = None if sample_weight is None else np.asarray(sample_weight)
    lengths = x["padding_mask"].astype(bool).sum(axis=1)
    width = x["padding_mask"].shape[1]
    order = np.argsort(-lengths, kind="stable")
    rows, k = len(lengths), task.micro_batches
    valid = _valid_per_row(y, sample_weight).astype(np.float64) if y is not None else np.ones(rows)
    total = valid.sum()
    bounds = [i * rows // k // replicas * replicas for i in range(k)] + [rows]
    parts = []
    for start, end in zip(bounds, bounds[1:]):
        if end <= start:
            continue
        index = order[start:end]
        cut = padded_length(max(int(lengths[index].max()), 1), width, False)
        part_x = {key: value[index][:, :cut] for key, value in x.items()}
        part_y = None if y is None else y[index]
        if part_y is not None and task.token_level_labels:
            part_y = part_y[:, :cut]
        part_w = None if sample_weight is None else sample_weight[index]
        share = np.float32(valid[index].sum() / total if total else 0.0)
        parts.append((part_x, part_y, part_w, share))
    return parts


def torch_train_step(task, data):
    """PyTorch: one update from the batch's parts, their gradients accumulated by backward()."""
    import torch

    x, y, sample_weight = _keras_internals.unpack_x_y_sample_weight(data)
    numpy = [None if t is None else keras.tree.map_structure(keras.ops.convert_to_numpy, t)
             for t in (x, y, sample_weight)]
    task.zero_grad()
    total_loss = 0.0
    for part_x, part_y, part_w, share in split_batch(task, *numpy):
        part_x, part_y, part_w = (None if t is None else keras.tree.map_structure(keras.ops.convert_to_tensor, t)
                                  for t in (part_x, part_y, part_w))
        y_pred = task(part_x, training=True)
        loss = task._base_compute_loss(part_x, part_y, y_pred, part_w, training=True) * float(share)
        task.optimizer.scale_loss(loss).backward()
        total_loss = total_loss + loss.detach()
        task.compute_metrics(part_x, part_y, y_pred, sample_weight=part_w)
    _keras_internals.loss_tracker(task).update_state(total_loss, sample_weight=numpy[0]["token_ids"].shape[0])
    weights = task.trainable_weights[:]
    with torch.no_grad():
        task.optimizer.apply([w.value.grad for w in weights], weights)
    return task.get_metrics_result()


def _metrics_updated(task, metrics_variables, update):
    """Run `update()` on `task`'s metrics held at `metrics_variables` (JAX, stateless): its
    result and the metrics' new values."""
    mapping = list(zip(task.metrics_variables, metrics_variables))
    with keras.StatelessScope(state_mapping=mapping) as scope:
        result = update()
    new = [scope.get_current_value(v) for v in task.metrics_variables]
    return result, [v.value if n is None else n for v, n in zip(task.metrics_variables, new)]


def jax_train_function(task):
    """JAX: Keras' `train_function(state, iterator)` for `task` with micro-batches (what
    `make_train_function` sets)."""
    import jax

    jit = jax.jit if task.jit_compile and not task.run_eagerly else (lambda f: f)

    def part_loss(trainable, non_trainable, metrics_variables, optimizer_variables, x, y, sample_weight, share):
        with fused_layer_norms(task):
            loss, aux = task.compute_loss_and_updates(trainable, non_trainable, metrics_variables, x, y, sample_weight,
                                                      training=True, optimizer_variables=optimizer_variables)
        return loss * share, aux

    gradient = jax.value_and_grad(part_loss, has_aux=True)

    @jit
    def part_step(trainable, non_trainable, metrics_variables, optimizer_variables, gradients, loss, x, y,
                  sample_weight, share):
        (_, (unscaled, y_pred, non_trainable, metrics_variables)), part_gradients = gradient(
            trainable, non_trainable, metrics_variables, optimizer_variables, x, y, sample_weight, share)
        _, metrics_variables = _metrics_updated(task, metrics_variables,
                                                lambda: task.compute_metrics(x, y, y_pred, sample_weight))
        gradients = jax.tree.map(lambda a, b: a + b, gradients, part_gradients)
        return gradients, loss + unscaled * share, non_trainable, metrics_variables

    @jit
    def apply(trainable, optimizer_variables, metrics_variables, gradients, loss, rows):
        trainable, optimizer_variables = task.optimizer.stateless_apply(optimizer_variables, gradients, trainable)

        def record():
            _keras_internals.loss_tracker(task).update_state(loss, sample_weight=rows)
            return task.get_metrics_result()

        logs, metrics_variables = _metrics_updated(task, metrics_variables, record)
        return logs, trainable, optimizer_variables, metrics_variables

    zeros = jit(lambda trainable: jax.tree.map(jax.numpy.zeros_like, trainable))

    def place(part, distribution):
        if distribution is None:
            return part
        return keras.tree.map_structure(
            lambda t: None if t is None else keras.distribution.distribute_tensor(
                t, distribution.get_data_layout(t.shape)), part)

    def one_step(state, data):
        trainable, non_trainable, optimizer_variables, metrics_variables = state
        distribution = keras.distribution.distribution()
        replicas = 1 if distribution is None else int(np.prod(distribution.device_mesh.shape))
        x, y, sample_weight = _keras_internals.unpack_x_y_sample_weight(data)
        numpy = [None if t is None else keras.tree.map_structure(np.asarray, t) for t in (x, y, sample_weight)]
        gradients, loss = zeros(trainable), np.float32(0)
        for part_x, part_y, part_w, share in split_batch(task, *numpy, replicas=replicas):
            part_x, part_y, part_w = place((part_x, part_y, part_w), distribution)
            gradients, loss, non_trainable, metrics_variables = part_step(
                trainable, non_trainable, metrics_variables, optimizer_variables, gradients, loss, part_x, part_y,
                part_w, share)
        rows = np.float32(numpy[0]["token_ids"].shape[0])
        logs, trainable, optimizer_variables, metrics_variables = apply(
            trainable, optimizer_variables, metrics_variables, gradients, loss, rows)
        return logs, (trainable, non_trainable, optimizer_variables, metrics_variables)

    def train_function(state, iterator):
        logs, state = one_step(state, next(iterator))
        for _ in range(task.steps_per_execution - 1):
            try:
                data = next(iterator)
            except StopIteration:
                break
            logs, state = one_step(state, data)
        return logs, state

    return train_function
