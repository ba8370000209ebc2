"""Data folders on gs:// (or any file system TensorFlow reads): copied to a local temporary folder
of the same name so the readers, which open local files, see them unchanged; their errors name
the remote path."""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import tempfile

from biozoo._io import is_remote, remote_files


@contextlib.contextmanager
def local_folder(path):
    """Yield a local folder with the files of `path` (itself when it is local).

    The copy has the remote folder's name (an NER folder's name types its bare tags), and an
    error raised inside the `with` block (ValueError, OSError, biozoo's errors) names `path`
    in place of the copy, which is removed when the block ends."""
    if not is_remote(path):
        yield path
        return
    files = remote_files(path)
    path = str(path).rstrip("/")
    if not files.isdir(path):
        raise FileNotFoundError(f"no data folder at {path}")
    scratch = tempfile.mkdtemp(prefix="biozoo-data-")
    target = os.path.join(scratch, posixpath.basename(path) or "data")
    try:
        os.mkdir(target)
        for name in files.listdir(path):
            source = f"{path}/{name}"
            if not files.isdir(source):
                files.copy(source, os.path.join(target, name))
        try:
            yield target
        except (ValueError, OSError) as error:  # DataFormatError is a ValueError
            _name_remote(error, target, path)
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _name_remote(error, local, remote):
    """`error`'s message (and file name) with the local copy's path `local` written as `remote`."""
    error.args = tuple(arg.replace(local, remote) if isinstance(arg, str) else arg for arg in error.args)
    if isinstance(error, OSError) and isinstance(error.filename, str):
        error.filename = error.filename.replace(local, remote)
