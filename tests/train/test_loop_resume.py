"""The training loop's checkpoints and resume, on a few-weight model, on the current Keras
backend (`make test` runs this file under TensorFlow, JAX and PyTorch): a rerun after a kill
ends with the uninterrupted run's weights where a float16 loss scale skipped steps and where
the kill came at an epoch's end with dropout on; a checkpoint never holds non-finite weights;
checkpoints of a run with other settings are refused, naming what differs."""

import json

import keras
import numpy as np
import pytest

from biozoo.errors import CheckpointError, TrainingError
from biozoo.optim import make_optimizer
from biozoo.train.run import TrainingRun, check_resume_settings

pytestmark = pytest.mark.backends
TOTAL, ROWS = 8, 4


class Batches:
    """Step k's batch: rows [4k, 4k + 4) of x, y (cycling), from any start step."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def batches_from(self, step):
        while True:
            i = step % (len(self.x) // ROWS)
            yield self.x[i * ROWS:(i + 1) * ROWS], self.y[i * ROWS:(i + 1) * ROWS]
            step += 1

    def dataset_from(self, step):
        import tensorflow as tf

        spec = (tf.TensorSpec((ROWS, self.x.shape[1]), "float32"), tf.TensorSpec((ROWS, self.y.shape[1]), "float32"))
        return tf.data.Dataset.from_generator(lambda: self.batches_from(step), output_signature=spec)


def data(features=4, scale=1.0):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(TOTAL * ROWS, features)).astype("float32")
    return Batches(x, (x @ rng.normal(size=(features, 1)) * scale).astype("float32"))


def weights(model):
    return np.concatenate([np.ravel(keras.ops.convert_to_numpy(v)) for v in model.weights])


def run(tmp_path, model, batches, steps, every=None, steps_per_epoch=None, settings=None):
    """Train `steps` steps into tmp_path/out's checkpoints (a run that stops there is one killed
    after its last checkpoint); the loop's result."""
    training = TrainingRun(str(tmp_path / "out"), batch_size=ROWS, checkpoint_dir=str(tmp_path / "out.checkpoints"))
    return training.train(model, batches, steps, steps_per_epoch=steps_per_epoch, checkpoint_every=every, verbose=0,
                          log=lambda message: None, settings=settings)


def linear(units=1):
    """One dense layer on 4 inputs, the same start every time."""
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(units)])
    model.compile(optimizer=make_optimizer("adamw", 1e-2, TOTAL, 0.0, 0.0), loss="mse")
    return model


@pytest.fixture
def float16_policy():
    keras.config.set_dtype_policy("mixed_float16")
    yield
    keras.config.set_dtype_policy("float32")


def test_resume_after_float16_skipped_steps_ends_with_the_uninterrupted_weights(tmp_path, float16_policy):
    """Targets 30 times the inputs overflow float16 gradients at the starting loss scale (2 ** 15),
    so the loss-scale optimizer skips steps and its step count falls behind the steps run: the
    rerun must resume from the steps run (4), not from the optimizer's count."""
    batches = data(scale=30.0)

    def build():
        keras.utils.set_random_seed(1)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1, dtype="float32")])
        model.compile(optimizer=make_optimizer("adamw", 1e-2, TOTAL, 0.0, 0.0), loss="mse")
        return model

    whole = build()
    assert len(run(tmp_path / "whole", whole, batches, TOTAL)["losses"]) == TOTAL
    skipped = TOTAL - int(keras.ops.convert_to_numpy(whole.optimizer.iterations))
    assert skipped >= 2, "the control: float16 must skip steps here"
    run(tmp_path, build(), batches, 4, every=2)  # killed after step 4's checkpoint
    resumed = build()
    result = run(tmp_path, resumed, batches, TOTAL, every=2)
    assert result["resumed_from"] == 4 and len(result["losses"]) == TOTAL - 4
    np.testing.assert_allclose(weights(resumed), weights(whole), rtol=0, atol=1e-6)


@pytest.mark.parametrize("every", [4, 3], ids=["at-the-epoch-end", "mid-epoch"])
def test_resume_with_dropout_ends_with_the_uninterrupted_weights(tmp_path, every):
    """Four steps an epoch, killed after the checkpoint at step 4 (the epoch's end: on PyTorch
    Keras' data loading draws from torch's generator as the next epoch starts) or step 3."""
    batches = data(features=16)

    def build(seed=1):
        """The same weights at every `seed`; dropout's generator seeded by it."""
        keras.utils.set_random_seed(seed)
        glorot = keras.initializers.GlorotUniform
        model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, kernel_initializer=glorot(0)),
                                  keras.layers.Dropout(0.5), keras.layers.Dense(1, kernel_initializer=glorot(1))])
        model.compile(optimizer=make_optimizer("adamw", 1e-2, TOTAL, 0.0, 0.0), loss="mse")
        return model

    whole = build()
    run(tmp_path / "whole", whole, batches, TOTAL, steps_per_epoch=4)
    run(tmp_path, build(), batches, every, every=every, steps_per_epoch=4)
    resumed = build()
    assert run(tmp_path, resumed, batches, TOTAL, every=every, steps_per_epoch=4)["resumed_from"] == every
    np.testing.assert_allclose(weights(resumed), weights(whole), rtol=0, atol=1e-6)
    # the control: the same start with dropout's generator at another seed ends elsewhere
    start = weights(build())
    other = build(seed=2)  # last: on PyTorch the seed is torch's, which the run reads when it starts
    np.testing.assert_array_equal(weights(other), start)
    run(tmp_path / "other", other, batches, TOTAL, steps_per_epoch=4)
    assert np.abs(weights(other) - weights(whole)).max() > 1e-3


def test_no_checkpoint_holds_non_finite_weights(tmp_path):
    """A loss of 0 whose gradient is not finite (sqrt at 0): step 1's loss is finite, its weights
    are not. The run stops naming the weight, and step 1's checkpoint is not written, so a rerun
    with a lower learning rate (the error's advice) is not resumed into NaN."""
    ones = Batches(np.ones((ROWS * TOTAL, 4), "float32"), np.zeros((ROWS * TOTAL, 1), "float32"))

    def build():
        keras.utils.set_random_seed(1)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, kernel_initializer="zeros")])
        model.compile(optimizer=make_optimizer("adamw", 1e-2, TOTAL, 0.0, 0.0),
                      loss=lambda y, p: keras.ops.sqrt(keras.ops.mean(keras.ops.square(y - p))))
        return model

    with pytest.raises(TrainingError, match=r"step 1 of training: weight .*kernel is not finite"):
        run(tmp_path, build(), ones, TOTAL, every=1)
    assert not list((tmp_path / "out.checkpoints").glob("step-*.npz"))


def test_checkpoints_of_a_run_with_other_settings_are_refused(tmp_path):
    batches = data()

    first = {"learning_rate": 0.01, "epochs": 3.0, "data": "/data/ncbi"}
    run(tmp_path, linear(), batches, 4, every=2, settings=first)
    recorded = tmp_path / "out.checkpoints" / "settings.json"
    assert json.loads(recorded.read_text()) == first
    with pytest.raises(CheckpointError, match=r"out.checkpoints holds the checkpoints of a run with other settings: "
                       r"learning_rate 0.01 \(now 1e-05\): rerun with those settings to resume it, or remove"):
        run(tmp_path, linear(), batches, TOTAL, every=2, settings={**first, "learning_rate": 1e-5})
    assert run(tmp_path, linear(), batches, TOTAL, every=2, settings=first)["resumed_from"] == 4


def test_settings_alone_are_no_run_to_resume(tmp_path):
    """A run killed before its first checkpoint leaves only its settings: a rerun with others
    starts afresh and records its own."""
    folder = tmp_path / "out.checkpoints"
    check_resume_settings(str(folder), {"learning_rate": 0.01})
    check_resume_settings(str(folder), {"learning_rate": 1e-5})
    assert json.loads((folder / "settings.json").read_text()) == {"learning_rate": 1e-5}


def test_a_checkpoint_of_another_model_is_refused_naming_its_file(tmp_path):
    """A rerun whose head has 5 units, not 3 (another label set): on every backend one
    CheckpointError naming the checkpoint, the variable and its shapes."""
    x = np.ones((ROWS * TOTAL, 4), "float32")
    run(tmp_path, linear(3), Batches(x, np.zeros((len(x), 3), "float32")), 2, every=1)
    with pytest.raises(CheckpointError, match=r"out\.checkpoints.*\(4, 3\).*\(4, 5\).*another run, or of a model an "
                       r"earlier biozoo built otherwise \(remove it to start again\)"):
        run(tmp_path, linear(5), Batches(x, np.zeros((len(x), 5), "float32")), 4, every=1)


@pytest.mark.skipif(keras.backend.backend() == "tensorflow", reason="TensorFlow's checkpoints are tf.train checkpoints")
def test_a_checkpoint_with_an_earlier_versions_generator_state_resumes(tmp_path):
    """Earlier versions saved torch's generator as `torch_rng_state` beside the variables."""
    batches = data()

    whole = linear()
    run(tmp_path / "whole", whole, batches, TOTAL)
    run(tmp_path, linear(), batches, 4, every=2)
    path = tmp_path / "out.checkpoints" / "step-4.npz"
    with np.load(path) as saved:
        arrays = dict(saved)
    np.savez(path, **arrays, torch_rng_state=np.zeros(8, np.uint8))
    resumed = linear()
    assert run(tmp_path, resumed, batches, TOTAL, every=2)["resumed_from"] == 4
    np.testing.assert_allclose(weights(resumed), weights(whole), rtol=0, atol=1e-6)


@pytest.mark.skipif(keras.backend.backend() == "torch", reason="Keras' PyTorch trainer runs one step an execution")
def test_executions_of_several_steps_count_the_steps_run_where_an_epoch_ends_inside_one(tmp_path):
    """Epochs of 5 steps run 3 at a time: Keras reports the second execution's end as step 6, and
    only 5 ran. The losses, checkpoints and a resume count the steps run: one loss each, the
    checkpoint after 5 steps named 5, and a rerun killed after it ends with the whole run's weights."""
    batches = data()

    def build(steps_per_execution):
        model = linear()
        model.compile(optimizer=make_optimizer("adamw", 1e-2, TOTAL, 0.0, 0.0), loss="mse",
                      steps_per_execution=steps_per_execution)
        return model

    one = build(1)
    each = run(tmp_path / "one", one, batches, TOTAL, steps_per_epoch=5)["losses"]
    whole = build(3)
    losses = run(tmp_path / "whole", whole, batches, TOTAL, steps_per_epoch=5)["losses"]
    assert len(losses) == TOTAL
    for start, end in ((0, 3), (3, 5), (5, 8)):  # an execution's steps share its mean loss
        np.testing.assert_allclose(losses[start:end], [np.mean(each[start:end])] * (end - start), rtol=1e-5)
    np.testing.assert_allclose(weights(whole), weights(one), rtol=0, atol=1e-6)
    run(tmp_path, build(3), batches, 5, every=2, steps_per_epoch=5)  # killed after the checkpoint at step 5
    resumed = build(3)
    assert run(tmp_path, resumed, batches, TOTAL, every=2, steps_per_epoch=5)["resumed_from"] == 5
    np.testing.assert_allclose(weights(resumed), weights(whole), rtol=0, atol=1e-6)
