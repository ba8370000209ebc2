"""Accuracy certificates: what an exported or quantized model gives against biozoo's float32
model, measured when it is made (`accuracy_certificate.json` beside the model).

- `fixed_inputs`: max |diff| of every output on fixed biomedical sentences (valid positions).
- `dev`: the task's metric on a dev split for both (entity F1 for NER, the SQuAD F1 for QA,
  micro F1 and accuracy for RE...), and the F1 drop in points.
- `speed`: sentences/s of both on the fixed sentences in one batch of 64 (warm, median of 5).
- `batch_dependent`: whether a row's outputs change with the other rows of its batch and its
  padding (ONNX Runtime's dynamic int8), and `batching`: the batches each figure was measured on.
"""

from __future__ import annotations

import datetime
import time
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from biozoo.tasks.inference import predicting_with

# The largest max |diff| a float32 copy of a model may show against biozoo's float32 model, per output: the
# parity certificate's against transformers (biozoo.verification) and a float32 export's (biozoo.export.ids_models).
TOLERANCE = {"sequence_output": 1e-4, "pooled_output": 1e-4, "mlm_logits": 1e-3, "rtd_logits": 1e-3,
             "nsp_logits": 1e-4, "sop_logits": 1e-4, "task_logits": 1e-3}

FIXED_SENTENCES = (
    "BRCA1 and BRCA2 mutations confer a high risk of breast and ovarian cancer.",
    "Cisplatin-induced nephrotoxicity was attenuated by co-administration of N-acetylcysteine.",
    "The patient presented with fever, hepatosplenomegaly and pancytopenia.",
    "Mice deficient in Tnf-alpha were resistant to LPS-induced septic shock (n = 12, p < 0.01).",
    "Metformin lowers hepatic glucose production in type 2 diabetes mellitus.",
    "Escherichia coli O157:H7 causes hemorrhagic colitis and hemolytic uremic syndrome.",
    "The V600E variant of BRAF is found in about 50% of melanomas.",
    "HeLa cells were treated with 10 uM doxorubicin for 24 h.",
    "Adverse events included nausea, headache and transient elevation of ALT.",
    "We report a novel missense mutation (c.1521_1523delCTT) in the CFTR gene.",
    "Aspirin inhibits cyclooxygenase-1 and reduces thromboxane A2 synthesis in platelets.",
    "Huntington disease is caused by an expanded CAG repeat in HTT.",
)
ACCURACY_CERTIFICATE_FILE = "accuracy_certificate.json"  # beside an exported model
SPEED_ROWS = 64
DEV_BATCHING = ("the task's prediction batches, as `biozoo evaluate` makes them: up to 64 inputs (QA: 32 windows), "
                "each padded to its longest input or to a length bucket")


def packed_fixed_inputs(tokenizer, sequence_length=128):
    """The fixed sentences as one padded batch: `[CLS] ids [SEP]`, biozoo's input dict."""
    rows = [[tokenizer.cls_token_id] + list(ids)[:sequence_length - 2] + [tokenizer.sep_token_id]
            for ids in tokenizer.ids(list(FIXED_SENTENCES))]
    width = max(map(len, rows))
    token_ids = np.full((len(rows), width), tokenizer.pad_token_id, np.int32)
    mask = np.zeros((len(rows), width), np.int32)
    for r, row in enumerate(rows):
        token_ids[r, :len(row)] = row
        mask[r, :len(row)] = 1
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": mask}


def output_differences(reference, outputs, mask):
    """Max |diff| per output name, over the valid positions of per-token outputs."""
    diffs = {}
    for name, expected in reference.items():
        got = np.asarray(outputs[name], np.float32)
        expected = np.asarray(expected, np.float32)
        if got.shape != expected.shape:
            raise ValueError(f"output {name}: shape {got.shape}, the float32 model gives {expected.shape}")
        delta = np.abs(got - expected)
        if delta.ndim >= 3:
            delta = delta[mask.astype(bool)]
        diffs[name] = float(delta.max()) if delta.size else 0.0
    return diffs


def _rate(predict, x, rows):
    predict(x)  # warm: traced, allocated
    times = []
    for _ in range(5):
        start = time.perf_counter()
        predict(x)
        times.append(time.perf_counter() - start)
    return rows / float(np.median(times))


def make_certificate(model, tokenizer, runner, what, evaluation=None, batch_dependence=None):
    """The certificate of `runner` (x -> outputs by name) against `model`'s float32 outputs.

    what: {"format", "quantize", "source", "task"}; evaluation: None, or (adapter, task, examples,
    data description) to score both on a dev split (`model` is the task's network);
    batch_dependence: None, or why the runner's outputs for a row depend on the rest of its batch.
    """
    import tensorflow as tf

    from biozoo.tasks.tf_inference import ids_function, ids_signature, output_names

    backbone = getattr(model, "backbone", model)
    x = packed_fixed_inputs(tokenizer, min(128, getattr(backbone, "max_sequence_length", None) or 128))
    serve = tf.function(ids_function(model), input_signature=ids_signature())

    def float32(inputs):
        return {k: v.numpy() for k, v in serve(inputs["token_ids"], inputs["padding_mask"], inputs["segment_ids"]).items()}

    reference = float32(x)
    certificate = {
        **what,
        "reference": "biozoo float32 (Keras on TensorFlow)",
        "fixed_inputs": {"sentences": list(FIXED_SENTENCES),
                         "max_abs_diff": output_differences(reference, runner(x), x["padding_mask"])},
    }
    repeat = -(-SPEED_ROWS // len(FIXED_SENTENCES))
    batch = {k: np.concatenate([v] * repeat)[:SPEED_ROWS] for k, v in x.items()}
    reference_rate, export_rate = _rate(float32, batch, SPEED_ROWS), _rate(runner, batch, SPEED_ROWS)
    certificate["speed"] = {
        "unit": f"sentences/s, one batch of {SPEED_ROWS} fixed sentences ({batch['token_ids'].shape[1]} tokens), "
                "warm, median of 5",
        "float32": round(reference_rate, 2), "export": round(export_rate, 2),
        "ratio": round(export_rate / reference_rate, 3),
    }
    certificate["dev"] = None if evaluation is None else dev_scores(runner, *evaluation, output=output_names(model)[0])
    certificate["batch_dependent"] = batch_dependence is not None
    certificate["batching"] = {
        **({"why": batch_dependence} if batch_dependence else {}),
        "fixed_inputs": f"one batch of the {len(FIXED_SENTENCES)} fixed sentences, padded to the longest "
                        f"({x['token_ids'].shape[1]} tokens)",
        "dev": None if evaluation is None else DEV_BATCHING,
        "speed": f"one batch of {SPEED_ROWS} fixed sentences ({batch['token_ids'].shape[1]} tokens)",
    }
    certificate["versions"] = versions(what["format"])
    certificate["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return certificate


def dev_scores(runner, adapter, task, examples, data, output="logits"):
    """The task metric of the float32 task and of `runner` (its `output`) on `examples`; a CRF
    task decodes both with its own `crf_decode`, the code and parameters its export ships."""
    reference = adapter.evaluate(task, examples)
    with predicting_with(task, lambda x: runner(x)[output]):
        exported = adapter.evaluate(task, examples)
    f1, f1_export = adapter.headline_f1(reference), adapter.headline_f1(exported)
    return {**data, "metric": adapter.headline_metric, "float32": reference, "export": exported,
            "f1_float32": f1, "f1_export": f1_export, "f1_drop": round(f1 - f1_export, 6)}


def versions(fmt):
    packages = ["biozoo", "tensorflow", "keras"] + (["tf2onnx", "onnx", "onnxruntime"] if fmt == "onnx"
                                                    else ["ai-edge-litert"])
    found = {}
    for package in packages:
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = None
    return found
