"""Data folders on gs:// (or any tf.io.gfile filesystem): copied to a local temporary folder
so the readers, which open local files, see them unchanged."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile


def is_remote(path):
    return "://" in str(path)


@contextlib.contextmanager
def local_folder(path):
    """Yield a local folder with the files of `path` (itself when it is local)."""
    if not is_remote(path):
        yield path
        return
    import tensorflow as tf

    path = str(path).rstrip("/")
    if not tf.io.gfile.isdir(path):
        raise FileNotFoundError(f"no data folder at {path}")
    target = tempfile.mkdtemp(prefix="biozoo-data-")
    try:
        for name in tf.io.gfile.listdir(path):
            source = f"{path}/{name.rstrip('/')}"
            if not tf.io.gfile.isdir(source):
                tf.io.gfile.copy(source, os.path.join(target, name.rstrip("/")), overwrite=True)
        yield target
    finally:
        shutil.rmtree(target, ignore_errors=True)
