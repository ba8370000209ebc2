"""Choosing a tf.distribute strategy: `--strategy auto|tpu|mirrored|multiworker|cpu`.

`auto`: MultiWorkerMirroredStrategy when TF_CONFIG is set, else a TPU if one resolves
(`--tpu`, TPU_NAME, COLAB_TPU_ADDR, a local TPU VM), else MirroredStrategy over every
visible GPU, else the default (single-CPU) strategy. `BIOZOO_LOGICAL_CPUS=N` splits the CPU
into N logical devices, so that `mirrored` runs N replicas on any machine.
"""

from __future__ import annotations

import glob
import json
import os

import tensorflow as tf

from biozoo.errors import BiozooError
from biozoo.train import STRATEGIES, ResolvedStrategy


def configure_logical_cpus():
    """Apply BIOZOO_LOGICAL_CPUS=N before TensorFlow initialises its devices."""
    count = os.environ.get("BIOZOO_LOGICAL_CPUS")
    if not count:
        return None
    try:
        count = int(count)
    except ValueError:
        raise BiozooError(f"BIOZOO_LOGICAL_CPUS must be a whole number, got {count!r}") from None
    cpu = tf.config.list_physical_devices("CPU")[0]
    wanted = [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
    current = tf.config.get_logical_device_configuration(cpu)
    if current is not None and len(current) == count:
        return count
    try:
        tf.config.set_logical_device_configuration(cpu, wanted)
    except RuntimeError:
        have = len(tf.config.list_logical_devices("CPU"))
        if have != count:
            raise BiozooError(
                f"BIOZOO_LOGICAL_CPUS={count}: TensorFlow already started with {have} CPU device(s); "
                "set the variable before TensorFlow initialises (before the first TF op)."
            ) from None
    return count


def _tpu_candidates(tpu):
    """(what, resolver argument) pairs tried in order when looking for a TPU."""
    if tpu:
        return [(f"--tpu {tpu}", tpu)]
    candidates = []
    if os.environ.get("TPU_NAME"):
        candidates.append((f"TPU_NAME={os.environ['TPU_NAME']}", os.environ["TPU_NAME"]))
    if os.environ.get("COLAB_TPU_ADDR"):
        candidates.append((f"COLAB_TPU_ADDR={os.environ['COLAB_TPU_ADDR']}", f"grpc://{os.environ['COLAB_TPU_ADDR']}"))
    if glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"):
        candidates.append(("a local TPU VM (/dev/accel*)", "local"))
    return candidates


TPU_LOOKED_FOR = "--tpu NAME|grpc://ADDR|local, TPU_NAME, COLAB_TPU_ADDR, a local TPU VM (/dev/accel*, /dev/vfio)"


def _connect_tpu(tpu):
    errors = []
    for what, argument in _tpu_candidates(tpu):
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=argument)
            if argument != "local":
                tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
            return tf.distribute.TPUStrategy(resolver), what
        except Exception as error:  # the resolver raises many kinds; report them all
            errors.append(f"{what}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
    return None, errors


def resolve_strategy(name="auto", tpu=None):
    """Build the strategy `name` names (see the module docstring) -> ResolvedStrategy."""
    if name not in STRATEGIES:
        raise BiozooError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    configure_logical_cpus()
    if name == "auto":
        if os.environ.get("TF_CONFIG"):
            name = "multiworker"
        elif tpu or _tpu_candidates(None):
            strategy, found = _connect_tpu(tpu)
            if strategy is not None:
                return ResolvedStrategy(strategy, "tpu", strategy.num_replicas_in_sync, found)
            name = "mirrored" if tf.config.list_logical_devices("GPU") else "cpu"
        else:
            name = "mirrored" if tf.config.list_logical_devices("GPU") else "cpu"
    if name == "tpu":
        strategy, found = _connect_tpu(tpu)
        if strategy is None:
            tried = "; ".join(found) if found else "none of them is set or present"
            raise BiozooError(f"--strategy tpu: no TPU found. Looked for {TPU_LOOKED_FOR}: {tried}.")
        return ResolvedStrategy(strategy, "tpu", strategy.num_replicas_in_sync, found)
    if name == "multiworker":
        if not os.environ.get("TF_CONFIG"):
            raise BiozooError("--strategy multiworker needs TF_CONFIG (cluster and task of this worker).")
        try:
            config = json.loads(os.environ["TF_CONFIG"])
        except ValueError as error:
            raise BiozooError(f"TF_CONFIG is not valid JSON: {error}") from None
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        task = config.get("task", {})
        return ResolvedStrategy(strategy, "multiworker", strategy.num_replicas_in_sync,
                                f"worker {task.get('index', 0)} of {len(config.get('cluster', {}).get('worker', []))}")
    if name == "mirrored":
        devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
        names = [d.name for d in devices]
        strategy = tf.distribute.MirroredStrategy(devices=names)
        return ResolvedStrategy(strategy, "mirrored", strategy.num_replicas_in_sync, ", ".join(names))
    if tf.config.list_logical_devices("GPU"):  # asked for the CPU on a GPU machine
        return ResolvedStrategy(tf.distribute.OneDeviceStrategy("/cpu:0"), "cpu", 1, "/cpu:0")
    return ResolvedStrategy(tf.distribute.get_strategy(), "cpu", 1, "default strategy")


def is_chief(strategy):
    """True on the worker that writes outputs (the only one outside multi-worker training)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not getattr(resolver, "task_type", None):
        return True
    return resolver.task_type in ("chief", None) or (resolver.task_type == "worker" and resolver.task_id == 0)


def resolved_strategy(strategy=None):
    """`strategy` as a `ResolvedStrategy`: one already resolved as it is, a tf.distribute
    strategy named after its class, None the current strategy (named "default")."""
    if isinstance(strategy, ResolvedStrategy):
        return strategy
    tf_strategy = strategy or tf.distribute.get_strategy()
    name = "default" if strategy is None else type(tf_strategy).__name__
    return ResolvedStrategy(tf_strategy, name, tf_strategy.num_replicas_in_sync)


def has_gpu():
    """Whether TensorFlow sees a GPU."""
    return bool(tf.config.list_logical_devices("GPU"))


def enable_determinism():
    """TensorFlow's deterministic ops (`--deterministic`: a resumed run ends with the uninterrupted weights)."""
    tf.config.experimental.enable_op_determinism()
