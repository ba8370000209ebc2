"""The train step of models that compute their own losses (the pretrainers, the distiller),
mixed in before `keras.Model`, with a loss history kept as a model variable, on every backend.

A subclass calls `init_loss_history(tracked, total_steps, log_every)` at the end of its
constructor (`tracked`: the loss names reported, "loss" first, the one minimised) and defines
`step_losses((x, y), training)` -> {name: scalar}.

The history (`loss_history`, [intervals, tracked losses]) sums each step's losses into the row
of its `log_every`-step interval; being a model variable it is checkpointed and restored with
the model. `loss_curves(steps)` reads it back as means.

* TensorFlow: `train_step` under any tf.distribute strategy. It divides the replica's mean loss
  by the number of replicas (their gradients are summed), applies the mixed-precision loss
  scale, and skips variables without a gradient; replicas add their share of the history.
* JAX and PyTorch: Keras' own train step. Batches are `((x, y),)`, so that `call` sees the
  labels; `call` returns the tracked losses, `compute_loss` the first. Under
  `keras.distribution.DataParallel` the losses are already means over the global batch. On
  PyTorch every trainable variable's gradient is cleared before each step (`zero_grad`).
* Every backend counts the steps in `history_step` (a jitted JAX step cannot read the
  optimizer's counter, and a float16 loss scale's skipped steps leave it behind).
"""

from __future__ import annotations

import keras
import numpy as np

TENSORFLOW = keras.backend.backend() == "tensorflow"


class LossHistoryStep:
    """Mix in before `keras.Model` (see the module docstring).

    Example:
        >>> class Trainer(LossHistoryStep, keras.Model):
        ...     def __init__(self, model):
        ...         super().__init__()
        ...         self.model = model
        ...         self.init_loss_history(("loss",), total_steps=100, log_every=10)
        ...     def step_losses(self, data, training):
        ...         x, y = data
        ...         return {"loss": keras.ops.mean((self.model(x, training=training) - y) ** 2)}
    """

    def init_loss_history(self, tracked, total_steps, log_every):
        self.tracked = tuple(tracked)
        self.trackers = {name: keras.metrics.Mean(name=name) for name in self.tracked}
        self.log_every = max(1, int(log_every))
        self.loss_history = None
        self.history_step = None
        if total_steps:
            self.loss_history = keras.Variable(
                initializer="zeros", shape=(-(-int(total_steps) // self.log_every), len(self.tracked)),
                dtype="float32", trainable=False, aggregation="sum", synchronization="on_read", name="loss_history",
                autocast=False)  # a mixed-precision step's autocast copy would take the sums (PyTorch: lost)
            # the steps run (the optimizer's count lags them where a float16 loss scale skips a step)
            self.history_step = keras.Variable(0, dtype="int32", trainable=False, name="history_step",
                                               aggregation="only_first_replica")

    @property
    def metrics(self):
        return list(self.trackers.values())

    def _tracked_values(self, losses):
        return [keras.ops.cast(losses[name], "float32") for name in self.tracked]

    def _track(self, values):
        for name, value in zip(self.tracked, values):
            self.trackers[name].update_state(value)
        return {name: tracker.result() for name, tracker in self.trackers.items()}

    def _add_to_history(self, step, values, share=1.0):
        rows = self.loss_history.shape[0]
        row = keras.ops.minimum(keras.ops.cast(step, "int32") // self.log_every, rows - 1)
        self.loss_history.assign_add(keras.ops.one_hot(row, rows)[:, None] * (keras.ops.stack(values) * share)[None, :])

    if TENSORFLOW:  # the distributed step, in biozoo.train.tf_loop
        def train_step(self, data):
            from biozoo.train.tf_loop import loss_history_train_step

            return loss_history_train_step(self, data)

        def test_step(self, data):
            return self._track(self._tracked_values(self.step_losses(data, training=False)))
    else:
        def call(self, data, training=False):
            values = self._tracked_values(self.step_losses(data, training=training))
            if training and self.loss_history is not None:
                self._add_to_history(self.history_step.value, values)
                self.history_step.assign_add(1)
            return keras.ops.stack(values)

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
            return y_pred[0]

        def compute_metrics(self, x, y, y_pred, sample_weight=None):
            return self._track([y_pred[i] for i in range(len(self.tracked))])

    if keras.backend.backend() == "torch":
        def zero_grad(self, set_to_none=True):
            """Keras' torch step clears the gradients of the parameters the module registered,
            keyed by variable path: of two backbones with the same layer names (ELECTRA's
            generator and discriminator) one variable of each pair is registered, and the
            other's gradient would add up over the steps. Clear every trainable variable's."""
            super().zero_grad(set_to_none=set_to_none)
            for variable in self.trainable_variables:
                variable.value.grad = None

    def loss_curves(self, done):
        """{tracked loss: [mean over each `log_every`-step interval]} of the `done` steps run so
        far (resumed runs included; the optimizer's own count lags it where a float16 loss scale
        skipped a step)."""
        if self.loss_history is None:
            return {}
        sums = np.asarray(keras.ops.convert_to_numpy(self.loss_history.value))
        curves = {name: [] for name in self.tracked}
        for row in range(min(-(-done // self.log_every), sums.shape[0])):
            count = min(self.log_every, done - row * self.log_every)
            for column, name in enumerate(self.tracked):
                curves[name].append(float(sums[row, column] / count))
        return curves


def freeze_unused_pooler(backbone):
    """Where no loss reads the backbone's pooler, keep it as it is: TensorFlow's step skips a
    variable without a gradient, but JAX's gives it zeros, which weight decay would still move."""
    pooler = getattr(backbone, "pooled_dense", None)
    if pooler is not None:
        pooler.trainable = False


class LabelsInInputs:
    """`data.batches_from(step)`'s `(x, y)` batches as the 1-tuples `((x, y),)` that the loss
    step reads on JAX and PyTorch, so that `call` sees the labels.

    Example:
        >>> run.train(trainer, LabelsInInputs(MaskedBatches(...)), steps)
    """

    def __init__(self, data):
        self.data = data

    def batches_from(self, step):
        return self.wrap(self.data.batches_from(step))

    @staticmethod
    def wrap(batches):
        return ((batch,) for batch in batches)
