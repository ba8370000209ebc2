"""Process set-up that must happen before TensorFlow is imported."""

import glob
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
