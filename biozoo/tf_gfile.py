"""Remote files (gs:// and the other file systems TensorFlow reads) through tf.io.gfile: the one place
biozoo reads and writes them. It needs TensorFlow; `biozoo._io.remote_files` hands it out, or says so.

Example:
    >>> copy_tree("gs://bucket/model", "/tmp/model")
"""

from __future__ import annotations

import os

import tensorflow as tf

gfile = tf.io.gfile  # GFile, glob, walk, remove... as TensorFlow has them


def exists(path):
    return tf.io.gfile.exists(path)


def isdir(path):
    return tf.io.gfile.isdir(path)


def listdir(path):
    return [name.rstrip("/") for name in tf.io.gfile.listdir(path)]


def read_text(path):
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"{path} does not exist.")
    with tf.io.gfile.GFile(path) as f:
        return f.read()


def open_file(path, mode="rb"):
    return tf.io.gfile.GFile(path, mode)


def copy(source, target, overwrite=True):
    tf.io.gfile.copy(source, target, overwrite=overwrite)


def copy_tree(url, target):
    """Copy the files of a remote directory (and its subfolders) into the local folder `target`."""
    os.makedirs(target, exist_ok=True)
    for name in listdir(url):
        source = url.rstrip("/") + "/" + name
        if isdir(source):
            copy_tree(source, os.path.join(target, name))
        else:
            copy(source, os.path.join(target, name))


def rmtree(path):
    if tf.io.gfile.exists(path):
        tf.io.gfile.rmtree(path)


def makedirs(path):
    tf.io.gfile.makedirs(path)


def glob(pattern):
    return tf.io.gfile.glob(pattern)
