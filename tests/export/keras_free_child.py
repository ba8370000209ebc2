"""Run in a process where keras and biozoo cannot be imported: load the exported TF Hub
SavedModels with TensorFlow and tensorflow-text's op libraries only, and dump what they give.

(tensorflow_text's Python package imports Keras on import, so the ops are loaded from its
shared libraries, as a Keras-free TensorFlow Serving image has them.)

argv: EXPORT_DIR REQUEST_JSON OUT_NPZ
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf
from keras_free_ops import load_tensorflow_text_ops

load_tensorflow_text_ops()

export_dir, request_path, out_path = sys.argv[1:4]
request = json.load(open(request_path, encoding="utf-8"))
preprocessor = tf.saved_model.load(os.path.join(export_dir, "preprocessor"))
encoder = tf.saved_model.load(os.path.join(export_dir, "encoder"))
out = {}
singles = tf.constant(request["singles"])
out["tokenize"] = np.array(json.dumps(preprocessor.tokenize(singles).to_list()))
packed = preprocessor(singles)
for key, value in packed.items():
    out[f"single/{key}"] = value.numpy()
first, second = (preprocessor.tokenize(tf.constant(side)) for side in zip(*request["pairs"]))
packed_pairs = preprocessor.bert_pack_inputs([first, second], seq_length=request["pair_seq_length"])
for key, value in packed_pairs.items():
    out[f"pair/{key}"] = value.numpy()
encoded = encoder(packed, training=False)
out["sequence_output"] = encoded["sequence_output"].numpy()
out["pooled_output"] = encoded["pooled_output"].numpy()
out["num_encoder_outputs"] = np.array(len(encoded["encoder_outputs"]))
out["metadata"] = np.array(encoder.get_metadata().numpy().decode())
out["modules"] = np.array(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {"keras", "biozoo", "tensorflow_text"})))
np.savez(out_path, **out)
