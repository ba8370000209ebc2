"""Data folders on gs:// (or any file system TensorFlow reads): copied to a local temporary folder
so the readers, which open local files, see them unchanged."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from biozoo._io import is_remote, remote_files


@contextlib.contextmanager
def local_folder(path):
    """Yield a local folder with the files of `path` (itself when it is local)."""
    if not is_remote(path):
        yield path
        return
    files = remote_files(path)
    path = str(path).rstrip("/")
    if not files.isdir(path):
        raise FileNotFoundError(f"no data folder at {path}")
    target = tempfile.mkdtemp(prefix="biozoo-data-")
    try:
        for name in files.listdir(path):
            source = f"{path}/{name}"
            if not files.isdir(source):
                files.copy(source, os.path.join(target, name))
        yield target
    finally:
        shutil.rmtree(target, ignore_errors=True)
