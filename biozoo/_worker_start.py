"""What a spawned annotate worker process (`biozoo.annotate._workers`) runs first, kept apart from
`biozoo.annotate`, whose import brings Keras: the worker unpickles its process object and its
initializer from this module, so that modules it never uses can be blocked before anything
imports them. Keras imports scikit-learn, pandas and matplotlib when they are installed, and
spaCy's thinc imports PyTorch and CuPy; each is optional to them (an `ImportError` is taken as
"not installed"). Workers are started with "spawn" (the caller already runs JAX or TensorFlow
threads, which a fork would copy mid-flight), in `WORKER_ENVIRONMENT`.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import sys

# a worker's environment: no accelerator, one thread of math each (the workers are the parallelism)
WORKER_ENVIRONMENT = {"JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2",
                      "OMP_NUM_THREADS": "1", "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1",
                      "TOKENIZERS_PARALLELISM": "false"}


def start(blocked, loader, *args):
    """A worker's initializer: `import name` fails at once for each of `blocked`, then `loader`
    ("module:function", imported now) is called with `args`."""
    for name in blocked:
        sys.modules.setdefault(name, None)
    module, function = loader.split(":")
    getattr(importlib.import_module(module), function)(*args)


class WorkerProcess(multiprocessing.get_context("spawn").Process):
    """A spawned process that starts with `WORKER_ENVIRONMENT` (this process's own is changed
    only while it starts)."""

    def start(self):
        with _environment(WORKER_ENVIRONMENT):
            super().start()


class WorkerContext:
    """The "spawn" context, making `WorkerProcess`es."""

    Process = WorkerProcess

    def __getattr__(self, name):
        return getattr(multiprocessing.get_context("spawn"), name)


@contextlib.contextmanager
def _environment(values):
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
