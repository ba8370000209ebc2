"""XLA programs compiled side by side: a jitted function compiles once per input shape, and a
call waits for its own compilation; lowered in the calling thread (where Keras' thread-local
state is) and compiled in threads, several shapes take about the time of the longest."""

from __future__ import annotations

import concurrent.futures
import contextlib
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


@contextlib.contextmanager
def compilations():
    """The seconds of each XLA compilation JAX makes while inside (its monitoring events, from
    every thread), as a list that grows.

    Example:
        >>> with compilations() as seconds:
        ...     train()
        >>> len(seconds), sum(seconds)
    """
    import jax

    try:
        from jax._src.dispatch import BACKEND_COMPILE_EVENT
    except ImportError:  # a JAX that moved it: the event's name, as JAX 0.10-0.11 call it
        BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
    seconds = []

    def listener(event, duration, **kwargs):
        if event == BACKEND_COMPILE_EVENT:
            seconds.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield seconds
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
