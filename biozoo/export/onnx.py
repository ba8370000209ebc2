"""ONNX models of a task or backbone, taking token ids: tf2onnx converts the traced function,
ONNX Runtime's `quantize_dynamic` makes the int8 model (after its `quant_pre_process` has folded
constants and each Gemm with a constant weight has become a MatMul, the op it quantizes).

Inputs and outputs carry the TF Hub export's names: `input_word_ids`, `input_mask`,
`input_type_ids` (int32 `[batch, seq]`, both dimensions dynamic) -> `logits` (a task; `emissions` for AIONER's CRF) or
`sequence_output`, `pooled_output` (a backbone).

Example (no biozoo needed to use the result):
    >>> session = onnxruntime.InferenceSession("out/model.onnx")
    >>> logits, = session.run(["logits"], {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
"""

from __future__ import annotations

import importlib
import os
import tempfile

import numpy as np

from biozoo import _keras_internals
from biozoo.errors import BiozooError
from biozoo.export.formats import IDS_FORMATS, OPSET

# What `biozoo export onnx` imports, and the extra of setup.py that installs them
ONNX_MODULES = ("tf2onnx", "onnx", "onnxruntime")
ONNX_EXTRA = "onnx"

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


def require_onnx():
    """Raise a BiozooError naming the missing modules and the extra that installs them, before any
    work, when tf2onnx, onnx or onnxruntime cannot be imported."""
    missing = []
    for name in ONNX_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise BiozooError(f"ONNX export needs {', '.join(ONNX_MODULES)}; not installed here: {', '.join(missing)}. "
                          f"Install them with: pip install 'biozoo[{ONNX_EXTRA}]'")


def gemms_as_matmuls(model):
    """Rewrite, in place, each Gemm of the onnx `model` whose weight B is an initializer as
    MatMul(A, B) (+ Add(C)): tf2onnx writes a Dense layer on 2-D input as Gemm, and ONNX Runtime's
    dynamic quantization quantizes MatMul, not Gemm. B is transposed where the Gemm has transB;
    a Gemm with transA, alpha != 1 or a bias C scaled by beta != 1 is left as it is. Returns how many were rewritten."""
    from onnx import helper, numpy_helper

    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    rewritten, nodes = 0, []
    for node in graph.node:
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
        plain = (attributes.get("transA", 0) == 0 and attributes.get("alpha", 1.0) == 1.0
                 and (bias is None or attributes.get("beta", 1.0) == 1.0))  # beta scales C only
        if node.op_type != "Gemm" or node.domain not in ("", "ai.onnx") or not plain or node.input[1] not in initializers:
            nodes.append(node)
            continue
        weight = node.input[1]
        if attributes.get("transB", 0):
            transposed = f"{weight}__transposed"
            if transposed not in initializers:
                array = numpy_helper.to_array(initializers[weight]).T.copy()
                initializers[transposed] = numpy_helper.from_array(array, transposed)
                graph.initializer.append(initializers[transposed])
            weight = transposed
        output = node.output[0]
        product = f"{output}__matmul" if bias else output
        nodes.append(helper.make_node("MatMul", [node.input[0], weight], [product], name=f"{node.name}__matmul"))
        if bias:
            nodes.append(helper.make_node("Add", [product, bias], [output], name=f"{node.name}__bias"))
        rewritten += 1
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input}
    unused = [t for t in graph.initializer if t.name not in used]
    for tensor in unused:  # the un-transposed weights
        graph.initializer.remove(tensor)
    return rewritten


def _quantize_int8(path, tmp):
    """The int8 model of the float ONNX model at `path` (a path in `tmp`): ONNX Runtime's
    `quant_pre_process` folds constants (the attention output projection's weight arrives through
    a Reshape), the Gemms become MatMuls, and `quantize_dynamic` quantizes them."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    folded = os.path.join(tmp, "model.folded.onnx")
    quant_pre_process(path, folded, skip_symbolic_shape=True)
    model = onnx.load(folded)
    gemms_as_matmuls(model)
    onnx.checker.check_model(model)
    matmuls = os.path.join(tmp, "model.matmul.onnx")
    onnx.save(model, matmuls)
    quantized = os.path.join(tmp, "model.int8.onnx")
    quantize_dynamic(matmuls, quantized, weight_type=QuantType.QInt8)
    return quantized


def onnx_model_bytes(model, quantize=None, opset=OPSET):
    """The serialized ONNX model of `biozoo.tasks.tf_inference.ids_function(model)`: float32, or
    with int8 weights and dynamically quantized activations (`quantize="int8"`; batch-dependent:
    `INT8_BATCH_DEPENDENCE`)."""
    import tensorflow as tf

    from biozoo.tasks.tf_inference import ids_function, ids_signature

    IDS_FORMATS["onnx"].check_quantization(quantize)
    require_onnx()
    import tf2onnx

    _keras_internals.patch_tf2onnx()
    _register_erfc()
    function = tf.function(ids_function(model), input_signature=ids_signature())
    with tempfile.TemporaryDirectory(prefix="biozoo-onnx-") as tmp:
        path = os.path.join(tmp, "model.onnx")
        tf2onnx.convert.from_function(function, input_signature=ids_signature(), opset=opset, output_path=path)
        if quantize == "int8":
            path = _quantize_int8(path, tmp)
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
