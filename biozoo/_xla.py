"""XLA programs compiled side by side: a jitted function compiles once per input shape, and a
call waits for its own compilation; lowered in the calling thread (where Keras' thread-local
state is) and compiled in threads, several shapes take about the time of the longest."""

from __future__ import annotations

import concurrent.futures
import os


def compile_all(lowered):
    """Compile each of `lowered` (`jax.jit(f).lower(...)` results) in parallel threads. JAX keeps
    each executable with its lowering, so later calls of the jitted function at those shapes
    run without compiling."""
    lowered = list(lowered)
    if not lowered:
        return
    with concurrent.futures.ThreadPoolExecutor(min(len(lowered), os.cpu_count() or 1)) as pool:
        list(pool.map(lambda program: program.compile(), lowered))
