"""`--strategy` on JAX and PyTorch: Keras' distribution API instead of tf.distribute.

`auto`: every local accelerator (the TPU's cores or the GPUs) through
`keras.distribution.DataParallel`, else one CPU device; `mirrored`: data parallel over every
local device, the CPU's too (`XLA_FLAGS=--xla_force_host_platform_device_count=N` splits a CPU
into N devices under JAX); `tpu`: the TPU's cores, or a clear error; `cpu`: one device. The
global batch is split evenly over the devices, as on TensorFlow. Data-parallel training is
Keras' on JAX; on PyTorch biozoo trains on one device.

Example:
    >>> resolved = resolve_distribution("auto")
    >>> with resolved.strategy.scope():
    ...     task = build(); task.compile(...)
"""

from __future__ import annotations

import contextlib

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


def resolve_distribution(name="auto", tpu=None):
    """The distribution `--strategy name` names on the current (non-TensorFlow) backend -> ResolvedStrategy."""
    if name not in STRATEGIES:
        raise BiozooError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    backend = keras.backend.backend()
    if name == "multiworker":
        raise BiozooError(f"--strategy multiworker runs on TensorFlow (TF_CONFIG); under KERAS_BACKEND={backend} "
                          "use the local devices (--strategy auto or mirrored)")
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


def is_chief():
    """True on the process that writes outputs (JAX: process 0 of a multi-host run)."""
    if keras.backend.backend() == "jax":
        import jax

        return jax.process_index() == 0
    return True
