"""For the keras-free child processes: check that Keras and biozoo cannot be imported, then
register tensorflow-text's ops from its shared libraries (its Python package imports Keras)."""

import glob
import importlib.util
import os


def load_tensorflow_text_ops():
    import tensorflow as tf

    for name in ("keras", "biozoo", "keras_hub", "tf_keras"):
        assert importlib.util.find_spec(name) is None, f"{name} is importable in the keras-free child"
    spec = importlib.util.find_spec("tensorflow_text")
    for library in sorted(glob.glob(os.path.join(spec.submodule_search_locations[0], "python", "ops", "*.so"))):
        tf.load_op_library(library)
