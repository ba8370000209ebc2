"""The training loop shared by fine-tuning, pretraining and distillation: Keras `fit` under a
tf.distribute strategy, with preemption-safe checkpoints and resume (the train step of the
models that compute their own losses is `biozoo.train.loss_history`'s).

`stream(start_step)` returns a tf.data.Dataset of *global* batches from global step
`start_step` on, the same batches for the same seed, so a resumed run sees exactly the batches
the killed run would have seen. The data position is therefore the step count: with the model,
the optimizer (moments, step) and the RNG state (every SeedGenerator, e.g. dropout's), it is
everything a checkpoint needs.

Checkpoints go to `checkpoint_dir` every `checkpoint_every` steps through a
tf.train.CheckpointManager keeping the last `keep`. TensorFlow writes the data and index files
under temporary names, then renames them and rewrites the `checkpoint` state file atomically,
so a kill during a save leaves the previous checkpoint valid.
"""

from __future__ import annotations

import contextlib
import math
import sys

import keras
import numpy as np

from biozoo import _keras_internals
from biozoo.errors import CheckpointError
from biozoo.train.loop import ANOTHER_RUN, StepLog, check_finite_weights, fit_spans


def distribute(strategy, stream, start_step):
    """`stream(start_step)` split over the strategy's replicas.

    Replica r of the run gets rows [r * b, (r + 1) * b) of every global batch (b = global
    batch / replicas), so one step sees the same examples whatever the number of replicas.
    """
    import tensorflow as tf

    replicas = strategy.num_replicas_in_sync
    if replicas == 1:
        return stream(start_step)

    def dataset_fn(context):
        local = replicas // context.num_input_pipelines
        first = context.input_pipeline_id * local

        def split(*batch):
            def chunks(tensor):
                size = tf.shape(tensor)[0]
                tf.debugging.assert_equal(size % replicas, 0, message=(
                    f"the global batch must be a multiple of the {replicas} replicas"))
                shaped = tf.reshape(tensor, tf.concat([[replicas, size // replicas], tf.shape(tensor)[1:]], 0))
                return shaped[first:first + local]

            parts = tf.nest.map_structure(chunks, batch if len(batch) > 1 else batch[0])
            return tf.data.Dataset.from_tensor_slices(parts)

        return stream(start_step).flat_map(split)

    return strategy.distribute_datasets_from_function(dataset_fn)


def _build_before_fit(model, stream, strategy):
    """Build the model's optimizer and metrics from one local batch before `fit`.

    Keras' fit builds a model created under a strategy from its first *distributed* batch,
    averaged with strategy.reduce; MultiWorkerMirroredStrategy cannot reduce a nested batch
    (its collectives take single tensors), so the build is done here and fit's is skipped.
    """
    batch = next(iter(stream(0).take(1)))
    with strategy.scope():
        model._symbolic_build(data_batch=batch)
    model._maybe_symbolic_build = lambda *args, **kwargs: None


def _average_multi_worker_logs():
    """Keras averages the step's logs over MultiWorkerMirroredStrategy replicas with
    strategy.reduce("MEAN", v, axis=0), which fails on scalar logs such as the loss; average
    them over replicas (axis=None) instead. Other strategies are left to Keras."""
    import tensorflow as tf

    def replacement(original, is_collective_multi_worker, map_structure):
        def reduce_per_replica(values, strategy, reduction="auto"):
            if reduction in ("auto", "mean") and isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) \
                    and is_collective_multi_worker(strategy):
                return map_structure(lambda value: strategy.reduce("MEAN", value, axis=None), values)
            return original(values, strategy, reduction)

        return reduce_per_replica

    _keras_internals.patch_reduce_per_replica(replacement)


def checkpoint_for(model):
    """A tf.train.Checkpoint of everything training changes: every model variable (weights and
    RNG states) and every optimizer variable (step, moments). Keras 3 models are not tracked
    by tf.train.Checkpoint themselves, so the variables are listed."""
    import tensorflow as tf

    return tf.train.Checkpoint(model_variables=list(model.variables),
                               optimizer_variables=list(model.optimizer.variables))


def restore(checkpoint, path):
    """Restore `checkpoint` from `path`; a checkpoint of another model or run is a CheckpointError
    that names it (TensorFlow's own error names only the variable)."""
    try:
        checkpoint.restore(path).assert_existing_objects_matched()
    except (ValueError, AssertionError) as error:
        raise CheckpointError(f"{path}: {error}: {ANOTHER_RUN}") from error


def train(model, stream, total_steps, checkpoint_dir=None, *, steps_per_epoch=None, checkpoint_every=None,
          keep=3, save=True, verbose=1, log=print, strategy=None):
    """Train the compiled `model` for `total_steps` steps, resuming from `checkpoint_dir`.

    `model` must have been built and compiled inside `strategy.scope()`. Only the worker with
    `save` writes checkpoints (every worker restores). Returns
    {"losses": [loss of each step run now], "resumed_from": step or 0, "steps": total_steps}.

    Example:
        >>> result = train(task, batches.dataset_from, 300, "out/checkpoints", checkpoint_every=50)
    """
    import tensorflow as tf

    strategy = strategy or tf.distribute.get_strategy()
    steps_per_epoch = steps_per_epoch or total_steps
    manager = None
    start = 0
    if not model.optimizer.built:
        # Built here, not in the step's first trace (where Keras builds it on the default strategy): a
        # tf.function whose first trace creates variables is traced twice (3.5 s more for a tiny BERT).
        with strategy.scope():
            model.optimizer.build(model.trainable_variables)
    if checkpoint_dir and checkpoint_every:
        checkpoint = checkpoint_for(model)
        manager = tf.train.CheckpointManager(checkpoint, checkpoint_dir, max_to_keep=keep)
        if manager.latest_checkpoint:
            restore(checkpoint, manager.latest_checkpoint)
            start = int(manager.latest_checkpoint.rsplit("-", 1)[1])  # saved under the number of steps run
            log(f"resuming from step {start} of {total_steps} ({manager.latest_checkpoint})")
    if strategy.num_replicas_in_sync > 1:
        _build_before_fit(model, stream, strategy)
        _average_multi_worker_logs()
    recorder = StepLog(model, manager if save else None, checkpoint_every, start, log)
    epochs = math.ceil(total_steps / steps_per_epoch)
    for epoch, step, count in fit_spans(start, total_steps, steps_per_epoch):
        data = distribute(strategy, lambda first, count=count: stream(first).take(count), step)
        # keras.Model.fit, not KerasHub's PipelineModel.fit: batches are already preprocessed,
        # and PipelineModel would try to rebuild a distributed dataset as a tf.data one.
        # epochs=`epochs` for the progress header ("Epoch 2/3"); the callback stops after this one
        with contextlib.redirect_stdout(sys.stderr):  # Keras' progress bar: stdout carries results
            keras.Model.fit(model, data, initial_epoch=epoch, epochs=epochs, steps_per_epoch=count, verbose=verbose,
                            callbacks=[recorder.callback], shuffle=False)
    # the steps run: the optimizer's own count lags it where a float16 loss scale skipped a step
    finished = recorder.step
    check_finite_weights(model, finished)
    if save and manager is not None and finished % checkpoint_every:
        manager.save(checkpoint_number=finished)
    return {"losses": [float(x) for x in np.asarray(recorder.losses)], "resumed_from": start, "steps": total_steps}


def loss_history_train_step(model, data):
    """`biozoo.train.loss_history.LossHistoryStep.train_step` on TensorFlow: the replica's step
    under any tf.distribute strategy."""
    import tensorflow as tf

    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    with tf.GradientTape() as tape:
        losses = model.step_losses(data, training=True)
        # `loss` is this replica's mean and gradients are summed over replicas: divide. (Inside
        # the tape.) `scale_loss` applies the mixed-precision loss scale, which `apply` undoes.
        scaled = model.optimizer.scale_loss(losses["loss"] / replicas)
    values = model._tracked_values(losses)
    if model.loss_history is not None:  # the replicas' copies add up: each adds its share
        model._add_to_history(model.history_step.value, values, 1.0 / replicas)
        model.history_step.assign_add(1)
    variables = model.trainable_variables
    gradients = tape.gradient(scaled, variables)
    pairs = [(g, v) for g, v in zip(gradients, variables) if g is not None]
    model.optimizer.apply([g for g, _ in pairs], [v for _, v in pairs])
    return model._track(values)
