"""The ids-in export formats (`biozoo export onnx|litert`): one table, one row each, read by the
command line (without importing TensorFlow or Keras) and by the exporters.

Example:
    >>> IDS_FORMATS["litert"].quantizations
    (None, 'int8', 'float16')
"""

from __future__ import annotations

import dataclasses

OPSET = 17  # the ONNX opset tf2onnx writes unless told otherwise

# What each quantization writes (None: float32).
QUANTIZATIONS = {None: "float32", "int8": "int8 weights, activations quantized at run time",
                 "float16": "float16 weights"}


@dataclasses.dataclass(frozen=True)
class IdsFormat:
    """One ids-in export format: `name` (the command), `title` (in messages), `file` (the model
    file it writes), `quantizations` (the keys of `QUANTIZATIONS` it offers) and `runtime` (what
    runs the file)."""

    name: str
    title: str
    file: str
    quantizations: tuple
    runtime: str

    def check_quantization(self, quantize):
        if quantize not in self.quantizations:
            raise ValueError(f"{self.name} exports quantize to {', '.join(q for q in self.quantizations if q)}, "
                             f"not {quantize!r}")


IDS_FORMATS = {fmt.name: fmt for fmt in (
    IdsFormat("onnx", "ONNX", "model.onnx", (None, "int8"),
              f"onnxruntime (tf2onnx converts; opset {OPSET} unless --opset)"),
    IdsFormat("litert", "LiteRT", "model.tflite", (None, "int8", "float16"), "the LiteRT interpreter (ai-edge-litert)"),
)}
