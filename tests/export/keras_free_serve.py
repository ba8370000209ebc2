"""Call a serving signature of an exported task in a process where keras and biozoo cannot be
imported (tensorflow-text ops loaded from its shared libraries). argv: EXPORT_DIR REQUEST OUT.
REQUEST: {"signature": name, "inputs": {name: [strings]}}; OUT: the outputs as JSON lists."""

import glob
import importlib.util
import json
import os
import sys

import tensorflow as tf

for name in ("keras", "biozoo", "keras_hub", "tf_keras"):
    assert importlib.util.find_spec(name) is None, f"{name} is importable in the keras-free child"
spec = importlib.util.find_spec("tensorflow_text")
for library in sorted(glob.glob(os.path.join(spec.submodule_search_locations[0], "python", "ops", "*.so"))):
    tf.load_op_library(library)

export_dir, request_path, out_path = sys.argv[1:4]
request = json.load(open(request_path, encoding="utf-8"))
loaded = tf.saved_model.load(export_dir)
outputs = loaded.signatures[request["signature"]](**{k: tf.constant(v) for k, v in request["inputs"].items()})


def plain(value):
    value = value.numpy()
    return value.astype(str).tolist() if value.dtype.kind in "SO" else value.tolist()


json.dump({k: plain(v) for k, v in outputs.items()}, open(out_path, "w", encoding="utf-8"))
