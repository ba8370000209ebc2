"""The loss history of the models that compute their own losses (pretrainers, distiller) files
each step's loss under the step run, on every backend (`make test` runs this file under
TensorFlow, JAX and PyTorch): where a float16 loss scale skips steps, the optimizer's own count
falls behind and must not be the row."""

import keras
import numpy as np
import pytest

from biozoo.optim import make_optimizer
from biozoo.train.loss_history import LabelsInInputs, LossHistoryStep

pytestmark = pytest.mark.backends
STEPS = 8


class Regression(LossHistoryStep, keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(8)
        self.out = keras.layers.Dense(1, dtype="float32")
        self.init_loss_history(("loss",), total_steps=STEPS, log_every=1)

    def step_losses(self, data, training):
        x, y = data
        return {"loss": keras.ops.mean(keras.ops.square(self.out(self.hidden(x)) - y))}


@pytest.fixture
def float16_policy():
    keras.config.set_dtype_policy("mixed_float16")
    yield
    keras.config.set_dtype_policy("float32")


def test_each_step_is_filed_under_the_step_run_when_float16_skips_steps(float16_policy):
    """Targets 30 times the inputs overflow float16 gradients at the starting loss scale; with
    one step a row, row k holds step k's loss as Keras' running mean gives it."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(STEPS * 4, 4)).astype("float32")
    y = (x @ rng.normal(size=(4, 1)) * 30).astype("float32")
    batches = [(x[i * 4:(i + 1) * 4], y[i * 4:(i + 1) * 4]) for i in range(STEPS)]
    means = []

    class RunningMean(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            means.append(float(logs["loss"]))

    keras.utils.set_random_seed(1)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        strategy = tf.distribute.MirroredStrategy(["/cpu:0"])  # train_step in a replica context, as biozoo runs it
        with strategy.scope():
            model = Regression()
            model.step_losses(batches[0], training=False)  # builds the layers (TensorFlow's step calls no `call`)
            model.built = True
            model.compile(optimizer=make_optimizer("adamw", 1e-2, STEPS, 0.0, 0.0))
        data = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
    else:
        model = Regression()
        model.compile(optimizer=make_optimizer("adamw", 1e-2, STEPS, 0.0, 0.0))
        data = LabelsInInputs.wrap(batches)
    model.fit(data, epochs=1, steps_per_epoch=STEPS, verbose=0, callbacks=[RunningMean()], shuffle=False)
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) <= STEPS - 2  # the premise: skipped steps
    steps = [means[0]] + [(k + 1) * means[k] - k * means[k - 1] for k in range(1, STEPS)]
    np.testing.assert_allclose(model.loss_curves(STEPS)["loss"], steps, rtol=1e-4)
