"""Call a serving signature of an exported task in a process where keras and biozoo cannot be
imported (tensorflow-text ops loaded from its shared libraries). argv: EXPORT_DIR REQUEST OUT.
REQUEST: {"signature": name, "inputs": {name: [strings]}}; OUT: the outputs as JSON lists."""

import json
import sys

import tensorflow as tf
from keras_free_ops import load_tensorflow_text_ops

load_tensorflow_text_ops()

export_dir, request_path, out_path = sys.argv[1:4]
request = json.load(open(request_path, encoding="utf-8"))
loaded = tf.saved_model.load(export_dir)
outputs = loaded.signatures[request["signature"]](**{k: tf.constant(v) for k, v in request["inputs"].items()})


def plain(value):
    value = value.numpy()
    return value.astype(str).tolist() if value.dtype.kind in "SO" else value.tolist()


json.dump({k: plain(v) for k, v in outputs.items()}, open(out_path, "w", encoding="utf-8"))
