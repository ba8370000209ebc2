"""Remove a CUDA build of torch, triton and the nvidia-* libraries from biozoo's venv.

An earlier `make demo` let sentence-transformers pull an unpinned torch, so pip took the
default CUDA build with triton; with triton installed, importing TensorFlow and then
`torch._dynamo` (as transformers' models do) segfaults. biozoo needs no torch to run and the
tests pin the CPU wheel, so whatever else is there goes. Run with the venv's interpreter:
`.venv/bin/python tools/repair_venv.py`; it changes nothing in a clean venv.
"""

import subprocess
import sys
from importlib import metadata


def unwanted_distributions():
    """triton and the nvidia-* libraries, and with them the CUDA torch and sentence-transformers
    that brought them; a venv without them keeps its torch (the CPU wheel)."""
    installed = {(dist.metadata["Name"] or "").lower() for dist in metadata.distributions()}
    cuda = {name for name in installed if name == "triton" or name.startswith("nvidia-")}
    if not cuda:
        return []
    return sorted(cuda | (installed & {"torch", "sentence-transformers"}))


def main():
    names = unwanted_distributions()
    if not names:
        return 0
    print(f"repair_venv: removing {len(names)} packages left by a CUDA torch: {' '.join(names)}")
    return subprocess.call([sys.executable, "-m", "pip", "uninstall", "--quiet", "-y", *names])


if __name__ == "__main__":
    sys.exit(main())
