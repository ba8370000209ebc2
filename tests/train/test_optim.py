"""Optimisers: layer-wise learning-rate decay gives each layer decay ** (L + 1 - depth) of the
rate (checked on Adam's first step, whose size is the learning rate whatever the gradient),
LAMB trains, global-norm clipping scales as torch's clip_grad_norm_ (of the gradient summed
over replicas), the schedule and its warmup rounding are HF's. The tests marked `backends`
run under JAX and PyTorch too (`make test`): the optimizers are written once in keras.ops;
sparse gradients and the replicas' sum are TensorFlow's."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

backends = pytest.mark.backends


def tensorflow_only():
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("sparse (IndexedSlices) gradients and tf.distribute replicas are TensorFlow's")


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

    before = {v.path: keras.ops.convert_to_numpy(v) for v in task.trainable_variables}
    task.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = batch()
    task.train_on_batch(x, y)
    return {v.path: keras.ops.convert_to_numpy(v) - before[v.path] for v in task.trainable_variables}


def electra_rate_factor(path, decay, layers):
    """ELECTRA's `_get_layer_lrs` (google-research/electra, model/optimization.py): depth 0 for
    the embeddings, i + 1 for encoder layer i, L + 2 for the task head; the rate is lr x decay **
    (L + 2 - depth). biozoo's paths mapped to its keys by hand: token/position/segment embeddings,
    transformer_layer_<i>, and the rest (pooler, logits) as task_specific."""
    import re

    if re.search(r"(?:^|/)(?:token|position|segment)_embedding/|embeddings_", path):
        depth = 0
    elif match := re.search(r"transformer_layer_(\d+)/", path):
        depth = int(match.group(1)) + 1
    else:
        depth = layers + 2
    return decay ** (layers + 2 - depth)


@backends
def test_layerwise_decay_scales_each_layer_as_electra_does():
    from biozoo.optim import make_optimizer

    peak = 1e-3
    # no warmup: the first step uses the peak rate; no weight decay
    plain = first_step_changes(make_optimizer("adamw", peak, 1000, 0.0, 0.0), tiny_task())
    task = tiny_task()  # same seed: same initial weights
    decayed = first_step_changes(make_optimizer("adamw", peak, 1000, 0.0, 0.0, layer_decay=0.5, model=task,
                                                num_layers=3), task)
    # ELECTRA's factors at decay 0.5 and 3 layers: the head 1, the top layer 0.25, the embeddings 0.5 ** 5
    expected = {"token_embedding/embeddings": 0.5 ** 5, "transformer_layer_0/self_attention_layer/query/kernel":
                0.5 ** 4, "transformer_layer_2/feedforward_output_dense/kernel": 0.5 ** 2, "logits/kernel": 1.0}
    seen = set()
    for path, change in decayed.items():
        factor = electra_rate_factor(path, 0.5, 3)
        for suffix, want in expected.items():
            if path.endswith(suffix):
                assert factor == want, path
                seen.add(suffix)
        moved = np.abs(plain[path]) > 1e-9
        if not moved.any():
            continue
        # Adam's update is linear in the learning rate: each layer moves its factor as far
        ratio = np.median(change[moved] / plain[path][moved])  # median: eps matters where |g| is tiny
        assert ratio == pytest.approx(factor, rel=1e-3), path
    assert seen == set(expected)
    # and the rate itself: Adam's first update is lr * g / (|g| + eps), at most lr
    dense = np.abs(plain["transformer_layer_1/feedforward_output_dense/kernel"])
    assert dense.max() / peak == pytest.approx(1.0, rel=1e-2)


@backends
def test_layerwise_weight_decay_scales_each_layer_too():
    """With a zero gradient Adam moves nothing, so one step is the decoupled weight decay alone:
    each matrix shrinks by weight_decay x lr x its ELECTRA factor of itself; biases and
    LayerNorm parameters (NO_DECAY) stay, on every backend."""
    import keras

    from biozoo.optim import make_optimizer

    task = tiny_task()
    peak, weight_decay, decay = 1e-2, 0.1, 0.5
    optimizer = make_optimizer("adamw", peak, 1000, 0.0, weight_decay, layer_decay=decay, model=task, num_layers=3)
    before = {v.path: keras.ops.convert_to_numpy(v) for v in task.trainable_variables}
    optimizer.apply([keras.ops.zeros(v.shape) for v in task.trainable_variables], task.trainable_variables)
    for variable in task.trainable_variables:
        after, start = keras.ops.convert_to_numpy(variable), before[variable.path]
        name = variable.path.rsplit("/", 1)[-1]
        if name in ("bias", "gamma", "beta"):
            np.testing.assert_array_equal(after, start, err_msg=variable.path)
        else:
            factor = 1 - weight_decay * peak * electra_rate_factor(variable.path, decay, 3)
            np.testing.assert_allclose(after, start * factor, rtol=1e-6, atol=1e-9, err_msg=variable.path)


@backends
def test_lamb_trains():
    import keras

    from biozoo.optim import make_optimizer

    task = tiny_task()
    # LAMB moves each matrix by lr x its norm, a small step here: many steps. Biases and LayerNorms
    # take Adam's step of about lr, so the rate stays moderate.
    task.compile(optimizer=make_optimizer("lamb", 2e-2, 200, 0.1, 0.01),
                 loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = batch()
    losses = [float(task.train_on_batch(x, y)) for _ in range(200)]
    assert type(task.optimizer).__name__ == "Lamb"
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])


def albert_lamb(weights, gradients, learning_rates, weight_decay, adapted):
    """google-research/albert lamb_optimizer.py, LAMBOptimizer.apply_gradients, in numpy (float64):
    Adam's moments without bias correction, weight decay added to the update, and the trust ratio
    only for `adapted` variables (ALBERT's exclude_from_layer_adaptation defaults to its
    exclude_from_weight_decay, which also skips the decay)."""
    w, m, v = weights.astype(np.float64), np.zeros(weights.shape), np.zeros(weights.shape)
    for grad, lr in zip(gradients, learning_rates):
        m = 0.9 * m + (1.0 - 0.9) * grad
        v = 0.999 * v + (1.0 - 0.999) * np.square(grad)
        update = m / (np.sqrt(v) + 1e-6)
        ratio = 1.0
        if adapted:
            update += weight_decay * w
            w_norm, g_norm = np.linalg.norm(w), np.linalg.norm(update)
            ratio = (w_norm / g_norm if g_norm > 0 else 1.0) if w_norm > 0 else 1.0
        w = w - ratio * lr * update
    return w


@backends
@pytest.mark.parametrize("layer_decay", [None, 0.5])
def test_lamb_updates_as_albert_lamb(layer_decay):
    """A kernel and a zero-initialised bias over 6 steps of make_optimizer("lamb") (HF's linear
    schedule): each equals ALBERT's LAMB, the bias excluded from the trust ratio (it moves about
    lr a step, not lr x its own tiny norm) and the kernel's decay inside the ratio. With layer-wise
    rates, the update at the variable's rate and no decoupled decay besides."""
    import keras

    from biozoo.optim import make_optimizer

    rng = np.random.default_rng(5)
    peak, steps, weight_decay = 1e-2, 6, 0.01
    kernel0, bias0 = rng.normal(0, 0.02, (8, 4)).astype("float32"), np.zeros(4, "float32")
    gradients = [(rng.normal(0, 1e-3, (8, 4)).astype("float32"), rng.normal(0, 1e-3, 4).astype("float32"))
                 for _ in range(steps)]
    kernel, bias = keras.Variable(kernel0, name="kernel"), keras.Variable(bias0, name="bias")
    options, multiplier = {}, 1.0
    if layer_decay:  # a layer below the head, at a reduced rate
        model = keras.Sequential([keras.layers.Dense(4, name="transformer_layer_0")])
        model.build((None, 8))
        kernel, bias = model.layers[0].kernel, model.layers[0].bias
        kernel.assign(kernel0)
        options = {"layer_decay": layer_decay, "model": model, "num_layers": 1}
        multiplier = electra_rate_factor(kernel.path, layer_decay, 1)
        assert multiplier < 1.0
    optimizer = make_optimizer("lamb", peak, steps, 0.0, weight_decay, **options)
    for kernel_gradient, bias_gradient in gradients:
        optimizer.apply_gradients([(keras.ops.convert_to_tensor(kernel_gradient), kernel),
                                   (keras.ops.convert_to_tensor(bias_gradient), bias)])
    rates = [multiplier * peak * (steps - step) / steps for step in range(steps)]  # get_linear_schedule_with_warmup
    expected_kernel = albert_lamb(kernel0, [g for g, _ in gradients], rates, weight_decay, adapted=True)
    expected_bias = albert_lamb(bias0, [g for _, g in gradients], rates, weight_decay, adapted=False)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(kernel), expected_kernel, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(bias), expected_bias, rtol=1e-5, atol=1e-7)


@backends
@pytest.mark.parametrize("scale", [10.0, 0.01, float("nan")])
@pytest.mark.parametrize("kernel", ["keras.ops", "tensorflow"])
def test_global_norm_clipping_scales_as_torch_clip_grad_norm(scale, kernel):
    """Above the limit, below it (factor 1, no multiplication) and with a NaN gradient (every
    gradient NaN, as torch leaves them): biozoo.optim's (every backend) and biozoo.tf_optim's."""
    torch = pytest.importorskip("torch")
    import keras

    if kernel == "tensorflow":
        tensorflow_only()
        from biozoo.tf_optim import clip_by_global_norm_like_torch
    else:
        from biozoo.optim import clip_by_global_norm_like_torch

    rng = np.random.default_rng(3)
    arrays = [rng.normal(size=(3, 4)).astype(np.float32) * scale, rng.normal(size=(5,)).astype(np.float32)]
    parameters = [torch.nn.Parameter(torch.zeros(a.shape)) for a in arrays]
    for parameter, array in zip(parameters, arrays):
        parameter.grad = torch.tensor(array)
    torch.nn.utils.clip_grad_norm_(parameters, 1.0)
    ours = clip_by_global_norm_like_torch([keras.ops.convert_to_tensor(a) for a in arrays] + [None], 1.0)
    assert ours[-1] is None
    for mine, parameter in zip(ours, parameters):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(mine), parameter.grad.numpy(), rtol=1e-6, atol=0)


@backends
def test_warmup_steps_round_up_as_the_hf_trainer():
    """warmup_ratio x total steps rounded up, as TrainingArguments.get_warmup_steps does
    (63 x 0.1 = 6.3: 7 steps, where round() gave 6)."""
    pytest.importorskip("torch")
    from transformers import TrainingArguments

    from biozoo.optim import make_optimizer

    for total, ratio in [(63, 0.1), (189, 0.1), (24, 0.25), (10, 0.06), (7, 0.0)]:
        arguments = TrainingArguments(output_dir="unused", warmup_steps=ratio, report_to="none")
        assert make_optimizer("adamw", 1e-3, total, ratio)._learning_rate.warmup_steps == \
            arguments.get_warmup_steps(total), (total, ratio)


@backends
@pytest.mark.parametrize("warmup", [7, 1, 0])
def test_schedule_matches_transformers_linear_schedule(warmup):
    """With warmup and without (`--warmup-ratio 0`: the decay starts at the peak, as HF's)."""
    torch = pytest.importorskip("torch")
    from transformers import get_linear_schedule_with_warmup

    from biozoo.optim import LinearWarmupDecay

    total, peak = 50, 3e-5
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=peak)
    reference = get_linear_schedule_with_warmup(optimizer, warmup, total)
    schedule = LinearWarmupDecay(peak, total, warmup)
    for step in range(total + 2):
        assert float(schedule(step)) == pytest.approx(reference.get_last_lr()[0], rel=1e-6, abs=1e-12)
        optimizer.step()
        reference.step()


def slices_with_repeats(rng, rows=12, width=5, occurrences=40, sparse=True):
    """An embedding-style gradient: one slice per token occurrence, frequent rows repeated
    (as tf.gather's gradient gives; None with `sparse=False`), and the same gradient summed
    into a dense array."""
    indices = np.minimum(rng.geometric(0.25, occurrences) - 1, rows - 1)
    values = (rng.normal(size=(occurrences, width)) + 0.5).astype(np.float32)  # aligned: sums grow
    dense = np.zeros((rows, width), np.float32)
    np.add.at(dense, indices, values)
    if not sparse:
        return None, dense
    import tensorflow as tf

    return tf.IndexedSlices(tf.constant(values), tf.constant(indices), tf.constant([rows, width])), dense


def run_torch_adamw(w0, dense_grads, lr, steps, warmup, weight_decay, clip_norm=None):
    torch = pytest.importorskip("torch")
    from transformers import get_linear_schedule_with_warmup

    parameter = torch.nn.Parameter(torch.tensor(w0))
    optimizer = torch.optim.AdamW([parameter], lr=lr, eps=1e-8, weight_decay=weight_decay)
    schedule = get_linear_schedule_with_warmup(optimizer, warmup, steps)
    for grad in dense_grads:
        parameter.grad = torch.tensor(grad)
        if clip_norm:
            torch.nn.utils.clip_grad_norm_([parameter], clip_norm)
        optimizer.step()
        schedule.step()
    return parameter.detach().numpy()


def run_keras(optimizer, w0, grads):
    import keras

    variable = keras.Variable(w0, name="embeddings")
    for grad in grads:
        if isinstance(grad, np.ndarray):
            grad = keras.ops.convert_to_tensor(grad)
        optimizer.apply_gradients([(grad, variable)])
    return keras.ops.convert_to_numpy(variable)


@backends
@pytest.mark.parametrize("kind", ["sparse_repeats", "tiny_gradients"])
def test_adamw_updates_exactly_as_torch_adamw(kind):
    """Embedding gradients with repeated rows (TensorFlow's sparse slices), and gradients near
    epsilon (every backend): biozoo's AdamW equals torch.optim.AdamW (with HF's schedule) over
    10 steps; Keras' own AdamW does not."""
    import keras

    from biozoo.optim import LinearWarmupDecay, make_optimizer

    rng = np.random.default_rng(1)
    w0 = rng.normal(size=(12, 5)).astype(np.float32)
    steps, lr, warmup, decay = 10, 1e-2, 2, 0.01
    if kind == "sparse_repeats":
        tensorflow_only()
        pairs = [slices_with_repeats(rng) for _ in range(steps)]
        grads, dense = [p[0] for p in pairs], [p[1] for p in pairs]
    else:  # magnitudes 1e-10 .. 1e-2 per row: where epsilon is added decides the step
        scale = (10.0 ** np.linspace(-10, -2, 12))[:, None].astype(np.float32)
        dense = [(rng.normal(size=(12, 5)) * scale).astype(np.float32) for _ in range(steps)]
        grads = dense
    reference = run_torch_adamw(w0, dense, lr, steps, warmup, decay)
    ours = run_keras(make_optimizer("adamw", lr, steps, warmup / steps, decay), w0, grads)
    stock = run_keras(keras.optimizers.AdamW(LinearWarmupDecay(lr, steps, warmup), weight_decay=decay, epsilon=1e-8),
                      w0, grads)
    difference = np.abs(ours - reference).max()
    assert difference < 1e-6
    assert np.abs(stock - reference).max() > 100 * max(difference, 1e-7)


@backends
@pytest.mark.parametrize("gradients", ["sparse", "dense"])
def test_clipped_adamw_updates_exactly_as_torch(gradients):
    """clip_grad_norm_ then AdamW, 10 steps of repeated embedding slices (TensorFlow's sparse
    gradients, or their dense sums on every backend) whose norms (about 8 to 25) straddle the
    limit 12: biozoo equals torch; unclipped it does not."""
    from biozoo.optim import make_optimizer

    if gradients == "sparse":
        tensorflow_only()
    rng = np.random.default_rng(4)
    w0 = rng.normal(size=(12, 5)).astype(np.float32)
    pairs = [slices_with_repeats(rng, occurrences=[10, 40][i % 2], sparse=gradients == "sparse") for i in range(10)]
    norms = [float(np.linalg.norm(dense)) for _, dense in pairs]
    assert min(norms) < 12 < max(norms), norms
    reference = run_torch_adamw(w0, [p[1] for p in pairs], 1e-2, 10, 2, 0.01, clip_norm=12.0)
    grads = [p[0] if gradients == "sparse" else p[1] for p in pairs]
    ours = run_keras(make_optimizer("adamw", 1e-2, 10, 0.2, 0.01, clip_norm=12.0), w0, grads)
    unclipped = run_keras(make_optimizer("adamw", 1e-2, 10, 0.2, 0.01), w0, grads)
    difference = np.abs(ours - reference).max()
    assert difference < 1e-6
    assert np.abs(unclipped - reference).max() > 100 * max(difference, 1e-7)


TWO_REPLICAS = """
import json, sys
import biozoo
from biozoo.train.tf_strategy import configure_logical_cpus
configure_logical_cpus()  # BIOZOO_LOGICAL_CPUS=2
import keras, numpy as np, tensorflow as tf
from biozoo import optim

steps = np.asarray(json.loads(sys.argv[1]), np.float32)  # [step, replica, ...]


class ClipsEachReplica(optim.AdamW):  # Keras' order: clip, then sum over the replicas
    def _clips_after_sum(self):
        return False


strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
results = {}
for name in ("biozoo", "each_replica"):
    with strategy.scope():
        variable = keras.Variable(np.zeros(steps.shape[2:], np.float32), name="w")
        # a constant rate: through this hand-written strategy.run, Keras 3.15 applies a
        # LearningRateSchedule's rate twice over two replicas (stock Adam too; fit does not)
        cls = optim.AdamW if name == "biozoo" else ClipsEachReplica
        optimizer = cls(learning_rate=0.1, weight_decay=0.0, epsilon=1e-8, global_clipnorm=1.0)
        optimizer.build([variable])

    @tf.function
    def apply(gradients):
        strategy.run(lambda g: optimizer.apply_gradients([(g, variable)]), args=(gradients,))

    for parts in steps:
        apply(strategy.experimental_distribute_values_from_function(
            lambda context, parts=parts: tf.constant(parts[context.replica_id_in_sync_group])))
    results[name] = variable.numpy().tolist()
print(json.dumps(results))
"""


def test_clipping_measures_the_gradient_summed_over_replicas():
    """Two mirrored replicas each holding part of a step's gradient: the first step's sum has
    norm 0.57, the second's 1.13, each replica's part 0.8 at most. biozoo clips the second sum
    to 1.0, as torch's clip_grad_norm_ after backward() on one device does; clipping each
    replica's part by its own norm (Keras' order) clips nothing and ends elsewhere."""
    steps = np.array([[[0.4, 0.0], [0.0, 0.4]], [[0.8, 0.0], [0.0, 0.8]]], np.float32)
    out = subprocess.run([sys.executable, "-c", TWO_REPLICAS, json.dumps(steps.tolist())], capture_output=True,
                         text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "BIOZOO_LOGICAL_CPUS": "2"},
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    results = {k: np.asarray(v) for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}
    torch = pytest.importorskip("torch")
    parameter = torch.nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.AdamW([parameter], lr=0.1, eps=1e-8, weight_decay=0.0)
    for summed in steps.sum(1):
        parameter.grad = torch.tensor(summed)
        torch.nn.utils.clip_grad_norm_([parameter], 1.0)
        optimizer.step()
    reference = parameter.detach().numpy()
    difference = np.abs(results["biozoo"] - reference).max()
    assert difference < 1e-6
    assert np.abs(results["each_replica"] - reference).max() > 100 * max(difference, 1e-7)


@pytest.mark.parametrize("name, options", [("adamw", {"clip_norm": 0.5}), ("lamb", {}),
                                           ("adamw", {"layer_decay": 0.8})])
def test_sparse_gradients_update_as_their_dense_sum(name, options):
    """A gradient of repeated slices moves the variable as its dense sum does, for every
    optimiser biozoo builds (clipping measures the summed gradient's norm)."""
    import keras

    from biozoo.optim import make_optimizer

    rng = np.random.default_rng(2)
    pairs = [slices_with_repeats(rng) for _ in range(5)]
    w0 = rng.normal(size=(12, 5)).astype(np.float32)

    def optimizer():
        if "layer_decay" in options:
            model = keras.Sequential([keras.layers.Embedding(12, 5, name="token_embedding")])
            model.build((None, 3))
            return make_optimizer(name, 1e-2, 5, 0.0, 0.01, layer_decay=options["layer_decay"], model=model,
                                  num_layers=2)
        return make_optimizer(name, 1e-2, 5, 0.0, 0.01, **options)

    sparse = run_keras(optimizer(), w0, [p[0] for p in pairs])
    dense = run_keras(optimizer(), w0, [p[1] for p in pairs])
    np.testing.assert_allclose(sparse, dense, rtol=0, atol=1e-6)
    assert np.abs(sparse - w0).max() > 1e-3  # it moved


def test_tasks_compile_with_biozoo_adamw_by_default():
    """`task.compile()` without an optimizer: biozoo's AdamW at 5e-5 (not Keras' Adam at 1e-3,
    whose embedding updates are wrong for repeated tokens), no decay on biases and LayerNorms."""
    from biozoo.optim import AdamW

    task = tiny_task()
    task.compile()
    assert type(task.optimizer) is AdamW
    assert float(task.optimizer.learning_rate) == pytest.approx(5e-5)
    decayed = {v.path.split("/")[-1] for v in task.trainable_variables if task.optimizer._use_weight_decay(v)}
    assert decayed == {"kernel", "embeddings"}
