"""`--strategy` on JAX and PyTorch: Keras' distribution API instead of tf.distribute.

`auto`: every local accelerator (the TPU's cores or the GPUs) through
`keras.distribution.DataParallel`, else one CPU device; `mirrored`: data parallel over every
local device, the CPU's too (`XLA_FLAGS=--xla_force_host_platform_device_count=N` splits a CPU
into N devices under JAX); `tpu`: the TPU's cores, or a clear error; `cpu`: one device;
`multiworker` (and `auto` where `KERAS_DISTRIBUTION_NUM_PROCESSES` is above 1): several hosts
through `jax.distributed` (`keras.distribution.initialize`: the coordinator's address, the
number of processes and this one's index from `KERAS_DISTRIBUTION_JOB_ADDRESSES`,
`KERAS_DISTRIBUTION_NUM_PROCESSES` and `KERAS_DISTRIBUTION_PROCESS_ID`, or found by JAX on a
Cloud TPU pod slice), data parallel over every device of every host, each process feeding its
rows of the global batch. The global batch is split evenly over the devices, as on
TensorFlow. Data-parallel training is Keras' on JAX; on PyTorch biozoo trains on one device.

Example:
    >>> resolved = resolve_distribution("auto")
    >>> with resolved.strategy.scope():
    ...     task = build(); task.compile(...)
"""

from __future__ import annotations

import contextlib
import os

import keras

from biozoo.errors import BiozooError
from biozoo.train import STRATEGIES, ResolvedStrategy


class _OneDevice:
    """What a single device trains under: no distribution."""

    def scope(self):
        return contextlib.nullcontext()


def _devices(kind=None):
    try:
        return keras.distribution.list_devices(kind)
    except (RuntimeError, ValueError):  # no device of that kind
        return []


def accelerators():
    """The local TPU cores, else the GPUs, as Keras names them ("tpu:0", "gpu:1"...)."""
    if keras.backend.backend() != "jax":
        return []
    return _devices("tpu") or _devices("gpu")


def has_gpu():
    """Whether the backend sees a GPU."""
    if keras.backend.backend() == "torch":
        import torch

        return torch.cuda.is_available()
    return bool(_devices("gpu"))


PROCESSES_VARIABLE = "KERAS_DISTRIBUTION_NUM_PROCESSES"
_hosts_joined = False


def join_hosts():
    """Join this process to the multi-host JAX run (`jax.distributed`, through
    `keras.distribution.initialize`), once; before any other JAX computation."""
    global _hosts_joined
    if _hosts_joined:
        return
    try:
        keras.distribution.initialize()
    except Exception as error:  # jax.distributed names what it missed
        raise BiozooError(
            "--strategy multiworker on JAX: jax.distributed could not start (set KERAS_DISTRIBUTION_JOB_ADDRESSES "
            f"to the coordinator's host:port, {PROCESSES_VARIABLE} and KERAS_DISTRIBUTION_PROCESS_ID, or run on a "
            f"Cloud TPU pod slice): {type(error).__name__}: {error}") from error
    _hosts_joined = True


def process_count():
    """The processes (hosts) of this run: several under `--strategy multiworker` on JAX, else 1."""
    if keras.backend.backend() != "jax":
        return 1
    import jax

    return jax.process_count()


def local_rows(batch):
    """This process' rows of a global batch (a tuple of arrays or dicts of arrays): process i of
    P feeds rows i*B/P to (i+1)*B/P, which Keras' JAX trainer assembles into the global batch."""
    import jax

    count, index = jax.process_count(), jax.process_index()
    if count == 1:
        return batch

    def rows(array):
        if array is None:
            return None
        size = len(array)
        if size % count:
            raise BiozooError(f"a global batch of {size} rows does not split over {count} processes")
        return array[index * size // count:(index + 1) * size // count]

    return keras.tree.map_structure(rows, batch)


def resolve_distribution(name="auto", tpu=None):
    """The distribution `--strategy name` names on the current (non-TensorFlow) backend -> ResolvedStrategy."""
    if name not in STRATEGIES:
        raise BiozooError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    backend = keras.backend.backend()
    several_hosts = name == "auto" and int(os.environ.get(PROCESSES_VARIABLE) or 1) > 1
    if name == "multiworker" or several_hosts:
        if backend != "jax":
            raise BiozooError(f"--strategy multiworker runs on JAX (jax.distributed) and TensorFlow (TF_CONFIG), "
                              f"not KERAS_BACKEND={backend}")
        return _several_hosts()
    if tpu:
        raise BiozooError(f"--tpu {tpu}: on KERAS_BACKEND={backend} the TPU is the local one JAX sees "
                          "(run on the TPU VM, without --tpu)")
    if backend != "jax":
        if name == "tpu":
            raise BiozooError(f"--strategy tpu needs KERAS_BACKEND=jax (or tensorflow), not {backend}")
        if name == "mirrored":
            raise BiozooError("--strategy mirrored: data-parallel training runs on JAX and TensorFlow; "
                              f"KERAS_BACKEND={backend} trains on one device")
        device = "cuda" if has_gpu() else "cpu"
        return ResolvedStrategy(_OneDevice(), "gpu" if device == "cuda" else "cpu", 1, f"{backend}, {device}")
    tpus = _devices("tpu")
    if name == "tpu" and not tpus:
        raise BiozooError("--strategy tpu: JAX sees no TPU on this machine "
                          f"(its devices: {', '.join(_devices()) or 'none'})")
    if name == "cpu":
        return ResolvedStrategy(_OneDevice(), "cpu", 1, "jax, one device")
    devices = tpus if name == "tpu" else (accelerators() if name == "auto" else _devices())
    if not devices:  # auto on a machine without accelerators
        return ResolvedStrategy(_OneDevice(), "cpu", 1, "jax, one device")
    label = "tpu" if devices[0].startswith("tpu") else "mirrored"
    if len(devices) == 1:
        return ResolvedStrategy(_OneDevice(), label, 1, f"jax, {devices[0]}")
    return ResolvedStrategy(keras.distribution.DataParallel(devices=devices), label, len(devices),
                            f"jax DataParallel over {', '.join(devices)}")


def _several_hosts():
    import jax

    join_hosts()
    devices = keras.distribution.list_devices()  # every host's
    distribution = keras.distribution.DataParallel(devices=devices, auto_shard_dataset=False)  # biozoo feeds rows
    return ResolvedStrategy(distribution, "multiworker", len(devices),
                            f"jax DataParallel over {len(devices)} devices of {jax.process_count()} processes "
                            f"(this is process {jax.process_index()})")


def is_chief():
    """True on the process that writes outputs (JAX: process 0 of a multi-host run)."""
    if keras.backend.backend() == "jax":
        import jax

        return jax.process_index() == 0
    return True
