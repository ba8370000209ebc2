"""ONNX models of a task or backbone, taking token ids: tf2onnx converts the traced function,
ONNX Runtime's `quantize_dynamic` makes the int8 model.

Inputs and outputs carry the TF Hub export's names: `input_word_ids`, `input_mask`,
`input_type_ids` (int32 `[batch, seq]`, both dimensions dynamic) -> `logits` (a task) or
`sequence_output`, `pooled_output` (a backbone).

Example (no biozoo needed to use the result):
    >>> session = onnxruntime.InferenceSession("out/model.onnx")
    >>> logits, = session.run(["logits"], {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from biozoo import _keras_internals
from biozoo.export.formats import IDS_FORMATS, OPSET

# Why the int8 model's outputs for a sentence depend on its batch (LiteRT's int8 quantizes
# each row on its own and does not): the certificate and the export's README say so.
INT8_BATCH_DEPENDENCE = (
    "ONNX Runtime's dynamic int8 quantizes each activation tensor with one scale and zero point for the whole "
    "batch (DynamicQuantizeLinear), so a sentence's outputs change with the other sentences of its batch and "
    "with the padding")

_erfc_registered = False


def _register_erfc():
    """TensorFlow's exact GELU computes 0.5 * x * erfc(-x / sqrt(2)); tf2onnx has no rule for
    Erfc (ONNX has Erf only): erfc(y) = 1 - erf(y)."""
    global _erfc_registered
    from tf2onnx import utils
    from tf2onnx.handler import tf_op

    if _erfc_registered:
        return

    @tf_op("Erfc")
    class Erfc:  # noqa: F841  (registered by the decorator)
        @classmethod
        def version_9(cls, ctx, node, **kwargs):
            node.type = "Erf"
            dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.output[0]))
            one = ctx.make_const(utils.make_name(f"{node.name}_one"), np.array(1, dtype))
            ctx.insert_new_node_on_output("Sub", node.output[0], inputs=[one.output[0], node.output[0]],
                                          name=utils.make_name(f"{node.name}_one_minus"))

    _erfc_registered = True


def onnx_model_bytes(model, quantize=None, opset=OPSET):
    """The serialized ONNX model of `biozoo.tasks.tf_inference.ids_function(model)`: float32, or
    with int8 weights and dynamically quantized activations (`quantize="int8"`; batch-dependent:
    `INT8_BATCH_DEPENDENCE`)."""
    import tensorflow as tf

    from biozoo.tasks.tf_inference import ids_function, ids_signature

    IDS_FORMATS["onnx"].check_quantization(quantize)
    import tf2onnx

    _keras_internals.patch_tf2onnx()
    _register_erfc()
    function = tf.function(ids_function(model), input_signature=ids_signature())
    with tempfile.TemporaryDirectory(prefix="biozoo-onnx-") as tmp:
        path = os.path.join(tmp, "model.onnx")
        tf2onnx.convert.from_function(function, input_signature=ids_signature(), opset=opset, output_path=path)
        if quantize == "int8":
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantized = os.path.join(tmp, "model.int8.onnx")
            quantize_dynamic(path, quantized, weight_type=QuantType.QInt8)
            path = quantized
        with open(path, "rb") as f:
            return f.read()


class OnnxRunner:
    """An ONNX model of `ids_function` on ONNX Runtime's CPU provider: called with biozoo's
    input dict, it returns the outputs by name (numpy)."""

    def __init__(self, model_bytes, threads=None):
        import onnxruntime

        from biozoo.tasks.tf_inference import default_threads

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or default_threads()
        self.session = onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
        self.names = [output.name for output in self.session.get_outputs()]

    def __call__(self, x):
        feed = {"input_word_ids": np.asarray(x["token_ids"], np.int32),
                "input_mask": np.asarray(x["padding_mask"], np.int32),
                "input_type_ids": np.asarray(x["segment_ids"], np.int32)}
        return dict(zip(self.names, self.session.run(self.names, feed)))
