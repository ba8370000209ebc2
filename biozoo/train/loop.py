"""The resumable training loop on JAX and PyTorch (`biozoo.train.tf_loop` is TensorFlow's),
and what both loops share: the per-step loss log with its non-finite-loss stop, and the
finite-weights check at the end.

`batches_from(start_step)` yields the *global* batches (NumPy) from global step `start_step`
on, the same batches for the same seed, so a resumed run sees exactly the batches the killed
run would have seen. A checkpoint (every `checkpoint_every` steps, the last `keep` kept) is one
`.npz` of every model variable (weights and RNG states) and every optimizer variable (step,
moments), named by the number of steps run (the optimizer's own count lags it where a
float16 loss scale skips a step): written under a temporary name and renamed, so a kill during
a save leaves the previous one valid; read back without pickles. A checkpoint is written only
of finite weights.

On PyTorch, Keras' dropout draws from torch's global generator, which Keras' data loading
draws from too when an epoch starts: each step seeds it from the run's seed and the step's
number, so step N draws the same numbers in a resumed run as in an uninterrupted one.

Under a `keras.distribution.DataParallel` scope Keras' JAX trainer splits each global batch
over the devices; on several hosts each process feeds its own rows of it.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import re
import sys

import keras
import numpy as np

from biozoo._keras_internals import jax_train_function_compiled_ahead
from biozoo._xla import compilations
from biozoo.errors import CheckpointError, TrainingError
from biozoo.train.distribution import local_rows, process_count

CHECKPOINT = re.compile(r"^step-(\d+)\.npz$")
# What earlier versions saved of torch's generator (each step now seeds it): read past.
LEGACY_ENTRIES = frozenset({"torch_rng_state"})
ANOTHER_RUN = "a checkpoint of another run, or of a model an earlier biozoo built otherwise (remove it to start again)"


class StepLog:
    """Keras callback: the loss of every step (recovered from Keras' running epoch mean) and a
    checkpoint every `every` steps."""

    def __init__(self, model, manager, every, first_step, log):
        step_seeds = TorchStepSeeds() if keras.backend.backend() == "torch" else None

        class Callback(keras.callbacks.Callback):
            def on_train_batch_begin(cb, batch, logs=None):
                if step_seeds is not None:
                    step_seeds.seed(self.fit_start + batch)

            def on_epoch_begin(cb, epoch, logs=None):
                self.mean, self.count = 0.0, 0
                self.fit_start = self.step  # each fit call runs from the current step

            def on_epoch_end(cb, epoch, logs=None):
                cb.model.stop_training = True  # one fit call per epoch (see train)

            def on_train_batch_end(cb, batch, logs=None):
                # `batch`: the last step of this execution, from 0; Keras reports a whole
                # execution's end even where the epoch ended inside it (steps_per_execution > 1)
                if cb.params.get("steps"):
                    batch = min(batch, cb.params["steps"] - 1)
                step = self.fit_start + batch + 1
                done = step - self.step
                self.step = step
                if logs and "loss" in logs and done > 0:
                    mean = float(logs["loss"])
                    if not math.isfinite(mean):  # the epoch's running mean: finite until a step's loss is not
                        steps = f"step {step}" if done == 1 else f"steps {step - done + 1}-{step}"
                        raise TrainingError(
                            f"{steps} of training: the loss is {mean} (a non-finite loss, or non-finite weights "
                            "after a non-finite gradient at the step before); training stopped, no model was written "
                            "(try a lower --learning-rate, --clip-norm, or --mixed-precision float32)")
                    total = mean * (self.count + done)
                    # steps_per_execution > 1 gives one mean per `done` steps: spread it
                    self.losses.extend([(total - self.mean * self.count) / done] * done)
                    self.mean, self.count = mean, self.count + done
                if manager is not None and every and step // every > (step - done) // every:
                    cb.model  # noqa: B018 - reading it brings JAX's train state back into the variables
                    check_finite_weights(cb.model, step)  # never a checkpoint a rerun would resume into NaN
                    manager.save(checkpoint_number=step)

        self.callback = Callback()
        self.losses = []
        self.step = self.fit_start = first_step
        self.mean, self.count = 0.0, 0


class TorchStepSeeds:
    """Seeds torch's global generator before each step from the seed it had when the run began
    (`set_seed`'s) and the step's number."""

    def __init__(self):
        import torch

        self.torch, self.base = torch, torch.initial_seed()

    def seed(self, step):
        self.torch.manual_seed(int(np.random.SeedSequence([self.base, step]).generate_state(1, np.uint64)[0] >> 1))


def check_finite_weights(model, step):
    """Raise TrainingError naming the first trainable weight that holds NaN or inf after `step`
    (a non-finite gradient at the last step shows in no loss)."""
    for variable in model.trainable_variables:
        if not np.all(np.isfinite(keras.ops.convert_to_numpy(variable.value))):
            raise TrainingError(f"step {step} of training: weight {variable.path} is not finite (a non-finite "
                                "gradient); training stopped, no model was written (try a lower --learning-rate, "
                                "--clip-norm, or --mixed-precision float32)")


class NpzCheckpoints:
    """Checkpoints of `model` (built, with a built optimizer) in `directory`: step-<N>.npz."""

    def __init__(self, model, directory, keep=3):
        self.model, self.directory, self.keep = model, os.fspath(directory), keep

    def _variables(self):
        return list(self.model.variables) + list(self.model.optimizer.variables)

    def steps(self):
        if not os.path.isdir(self.directory):
            return []
        return sorted(int(m.group(1)) for m in map(CHECKPOINT.match, os.listdir(self.directory)) if m)

    def save(self, checkpoint_number):
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, f"step-{checkpoint_number}.npz")
        arrays = {f"v{i}": keras.ops.convert_to_numpy(v.value) for i, v in enumerate(self._variables())}
        with open(path + ".tmp", "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(path + ".tmp", path)
        for old in self.steps()[:-self.keep]:
            os.remove(os.path.join(self.directory, f"step-{old}.npz"))

    def restore_latest(self):
        """Load the newest checkpoint; its step (the steps run before it), or None when there is none."""
        steps = self.steps()
        if not steps:
            return None
        path = os.path.join(self.directory, f"step-{steps[-1]}.npz")
        variables = self._variables()
        with np.load(path, allow_pickle=False) as data:
            count = len(set(data.files) - LEGACY_ENTRIES)
            if count != len(variables):
                raise CheckpointError(f"{path}: {count} arrays, but the model and optimizer have "
                                      f"{len(variables)} variables: {ANOTHER_RUN}")
            for i, variable in enumerate(variables):
                value = data[f"v{i}"]
                if tuple(value.shape) != tuple(variable.shape):
                    raise CheckpointError(f"{path}: array v{i} has shape {value.shape}, variable {variable.path} "
                                          f"{tuple(variable.shape)}: {ANOTHER_RUN}")
                variable.assign(value)
        return steps[-1]


def compiles_ahead(model):
    """Whether `train`'s step can be compiled for every batch shape ahead: Keras' own jitted
    step on JAX (not biozoo's micro-batch step, whose parts have shapes of their own), one host."""
    return (keras.backend.backend() == "jax" and model.jit_compile and not model.run_eagerly
            and getattr(model, "micro_batches", 1) <= 1 and process_count() == 1)


def fit_spans(start, total_steps, steps_per_epoch):
    """(epoch, first step, steps) of each `fit` call from step `start`: one call per epoch, the
    first from mid-epoch when a run resumes there."""
    step = start
    while step < total_steps:
        epoch = step // steps_per_epoch
        count = min(total_steps, (epoch + 1) * steps_per_epoch) - step
        yield epoch, step, count
        step += count


def _take(iterator, count):
    """The first `count` items, as a generator (what Keras' fit reads)."""
    yield from itertools.islice(iterator, count)


def train(model, batches_from, total_steps, checkpoint_dir=None, *, steps_per_epoch=None, checkpoint_every=None,
          keep=3, save=True, verbose=1, log=print, distribution=None, batch_shapes=None):
    """Train the compiled `model` for `total_steps` steps on JAX or PyTorch, resuming from
    `checkpoint_dir`. Built and compiled under `distribution.scope()` when given. Returns
    {"losses": [loss of each step run now], "resumed_from": step or 0, "steps": total_steps}, and on
    JAX "compilations": the XLA compilations made meanwhile (count, seconds summed, longest).
    `batch_shapes(start, end)`: the (rows, length) of the batches of those steps; on JAX the
    step is then compiled for all of them at once, in parallel, before the first runs.

    Example:
        >>> result = train(task, batches.batches_from, 300, "out/checkpoints", checkpoint_every=50)
    """
    scope = distribution.scope() if distribution is not None else contextlib.nullcontext()
    if process_count() > 1:  # each host feeds its rows of every global batch
        global_batches = batches_from

        def batches_from(step):
            return map(local_rows, global_batches(step))

    steps_per_epoch = steps_per_epoch or total_steps
    manager, start = None, 0
    watch = compilations() if keras.backend.backend() == "jax" else contextlib.nullcontext(None)
    with watch as compiled, scope:
        if checkpoint_dir and checkpoint_every:
            first = next(batches_from(0))
            model(first[0], training=False)  # build every layer before the optimizer and the restore
            model.optimizer.build(model.trainable_variables)
            manager = NpzCheckpoints(model, checkpoint_dir, keep)
            restored = manager.restore_latest()
            if restored is not None:
                start = restored
                log(f"resuming from step {start} of {total_steps} ({checkpoint_dir}/step-{restored}.npz)")
        if batch_shapes is not None and compiles_ahead(model):
            jax_train_function_compiled_ahead(model, batch_shapes(start, total_steps))
        recorder = StepLog(model, manager if save else None, checkpoint_every, start, log)
        epochs = math.ceil(total_steps / steps_per_epoch)
        for epoch, step, count in fit_spans(start, total_steps, steps_per_epoch):
            with contextlib.redirect_stdout(sys.stderr):  # Keras' progress bar: stdout carries results
                keras.Model.fit(model, _take(batches_from(step), count), initial_epoch=epoch, epochs=epochs,
                                steps_per_epoch=count, verbose=verbose, callbacks=[recorder.callback], shuffle=False)
    finished = recorder.step
    check_finite_weights(model, finished)
    if save and manager is not None and finished % checkpoint_every:
        manager.save(checkpoint_number=finished)
    result = {"losses": [float(x) for x in np.asarray(recorder.losses)], "resumed_from": start, "steps": total_steps}
    if compiled is not None:  # side by side when compiled ahead: the seconds overlap
        result["compilations"] = {"count": len(compiled), "seconds_summed": round(sum(compiled), 2),
                                  "longest_seconds": round(max(compiled, default=0.0), 2)}
    return result

