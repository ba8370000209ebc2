"""Opening data files: plain text, or gzip-compressed when the name ends in `.gz`."""

from __future__ import annotations

import gzip
import os


def open_text(path, encoding="utf-8"):
    """A text file object for `path`, decompressed on the fly for a `.gz` file."""
    if os.fspath(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding=encoding)
    return open(path, encoding=encoding)
