"""Process set-up that must happen before TensorFlow is imported."""

import glob
import importlib.abc
import importlib.util
import os
import sys

GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/nvidia[0-9]*", "/dev/dxg")


def has_gpu_device_node():
    return any(glob.glob(pattern) for pattern in GPU_DEVICE_NODES)


def quiet_tensorflow_logs():
    """TensorFlow's info lines are hidden; its error lines too, but only on a machine with no
    GPU device node, where the one error TensorFlow prints is 'failed call to cuInit' from
    its CUDA stub. Where a GPU is present its errors still show. A user's own
    TF_CPP_MIN_LOG_LEVEL wins."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2" if has_gpu_device_node() else "3")


def load_triton_before_tensorflow():
    """Where triton is installed, TensorFlow followed by triton (which transformers' models
    load through torch._dynamo) aborts the process: both register the same LLVM options.
    Loaded in the other order they coexist, so biozoo loads triton first when it can."""
    if "tensorflow" in sys.modules or "triton" in sys.modules:
        return
    if importlib.util.find_spec("triton") is not None:
        import triton  # noqa: F401


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports `then` right after the module `name` is imported (wrapping its loader)."""

    def __init__(self, name, then):
        self.name, self.then, self.loader = name, then, None

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # find the real spec, and hook only once
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        self.loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        # Imported on behalf of a biozoo module still being initialized: that import chain imports
        # `then` itself when it needs it (importing it now would be circular).
        if not any(getattr(getattr(m, "__spec__", None), "_initializing", False)
                   for n, m in list(sys.modules.items()) if n.startswith("biozoo.")):
            importlib.import_module(self.then)


def register_classes_with_keras_hub(module):
    """Import `module` (which registers biozoo's Keras classes) once KerasHub is imported: now if
    it already is, else right after it, so that `import biozoo` alone stays light."""
    if "keras_hub" in sys.modules:
        importlib.import_module(module)
    elif not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport("keras_hub", module))
