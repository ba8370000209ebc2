"""The GPU figures of the JAX issues, in one run on one GPU: biozoo on Keras' JAX backend,
transformers (PyTorch) as the anchor on the same GPU in the same run. Made for the lent GPU
machines, which have JAX, torch and transformers but no TensorFlow and no network (carry the
rest as wheels: `tools/device_wheels.sh`).

1. `inference`: token-classification throughput, batch 256 x 128 tokens, at Bioformer-8L's
   and BERT-base's shapes (random weights, converted from a transformers model): biozoo at
   float32, TF32 and bfloat16 weights (`precision="bfloat16"`) against transformers at float32,
   TF32, bf16 autocast and bf16 weights; and biozoo's float32 logits against transformers' (max |diff|).
2. `annotate`: `biozoo annotate`'s pipeline on real PubTator abstracts (`--abstracts`, repeated
   with new PMIDs up to `--documents`), Bioformer-8L's shape with a real WordPiece vocabulary
   (`--vocab`), float32 and bfloat16: abstracts/s end to end (read, annotate, write), each
   stage's seconds (parse, sentence split, tokenize, model, group and place, write), the
   entities bfloat16 finds against float32's, and the hours for 36M PubMed abstracts.
3. `finetune`: NER fine-tuning examples/s at batch 8, 32 and 128 x 128 tokens, bf16 mixed
   precision, biozoo's AdamW with clipping at 1.0 (jitted JAX step), against transformers with
   fused AdamW, clip_grad_norm_ and bf16 autocast; both sides timed alike: the median over 3
   blocks of --train-steps steps (after an untimed one) of block wall / steps, a biozoo block
   being one keras fit() call (so its start-up counts), a transformers block plain steps.
4. `scores` (not in the default parts): `biozoo finetune ner` on JAX, bf16, and transformers with
   bf16 autocast, the same recipe and steps on NCBI-disease from the same MiniLM-L6 weights
   (`--checkpoint`, written here beforehand by `--pack`): dev and test F1 and training time.

    KERAS_BACKEND=jax python benchmarks/gpu_figures.py --abstracts A.PubTator --vocab vocab.txt --report gpu.json
    KERAS_BACKEND=jax python benchmarks/gpu_figures.py --smoke     # tiny shapes on a CPU: that every part runs
    python benchmarks/gpu_figures.py --pack .gpu/minilm-ncbi --pack-source MINILM_DIR   # then --parts scores --checkpoint .gpu/minilm-ncbi

Targets (the issues'): inference bf16 >= 1.0x transformers' best row; annotate >= 2,500
abstracts/s end to end; fine-tuning >= 1.0x at every batch size.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPES = {
    "bioformer_8l": dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8, intermediate_size=2048),
    "bert_base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
}
SMOKE_SHAPE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
LABELS = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
PUBMED_ABSTRACTS = 36_000_000


def log(record, report):
    report.update(record)
    print(json.dumps(record), flush=True)
    if report.get("path"):
        write_report(report)


def write_report(report):
    tmp = report["path"] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({key: value for key, value in report.items() if key != "path"}, f, indent=2)
    os.replace(tmp, report["path"])


def synthetic_vocabulary(size):
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(size - 5)]


def build_hf_model(directory, shape, vocabulary, seed=0, lowercase=False, lean=3.25):
    """A random-weight BertForTokenClassification of `shape`, saved with a WordPiece vocabulary;
    its head leans towards "O" (`lean`, added to the "O" logit) so that at Bioformer-8L's shape,
    with MiniLM's uncased vocabulary, it finds about 20 entities in a BC5CDR abstract, as many as
    the corpus' gold annotations (9,809 in 500 abstracts). Measured on the CPU over the 500: a
    lean of 3.2 finds 21.4 an abstract, 3.3 finds 18.0, 2.65 finds 48.9."""
    import torch
    import transformers

    torch.manual_seed(seed)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    config = transformers.BertConfig(vocab_size=len(vocabulary), max_position_embeddings=512, **shape,
                                     num_labels=len(LABELS), id2label=dict(enumerate(LABELS)),
                                     label2id={label: i for i, label in enumerate(LABELS)})
    model = transformers.BertForTokenClassification(config).eval()
    with torch.no_grad():
        model.classifier.weight.normal_(0, shape["hidden_size"] ** -0.5)  # logits of about unit spread
        model.classifier.bias.copy_(torch.tensor([lean, 0.0, 0.0, 0.0, 0.0]))
    model.save_pretrained(directory)
    # transformers 5 takes the vocabulary as `vocab` (a `vocab_file` argument is ignored, leaving the five special tokens)
    tokenizer = transformers.BertTokenizerFast(vocab=str(directory / "vocab.txt"), do_lower_case=lowercase)
    if len(tokenizer.get_vocab()) != len(vocabulary):
        raise RuntimeError(f"{directory}: the tokenizer holds {len(tokenizer.get_vocab())} tokens, the vocabulary "
                           f"{len(vocabulary)}")
    tokenizer.save_pretrained(directory)
    return directory


def timed_repeats(step, repeats, sync=lambda: None, warmups=2):
    """Median seconds of `step()` over `repeats` runs, after `warmups` untimed ones."""
    for _ in range(warmups):
        step()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def timed_blocks(block, steps, blocks=3, sync=lambda: None):
    """Median over `blocks` timed runs of `block()` (`steps` training steps back to back, waited
    for once at its end) of the block's seconds / `steps`, after one untimed block (compiles)."""
    return timed_repeats(block, blocks, sync, warmups=1) / steps


def timed_pipelined(step, repeats, sync):
    """Seconds per call of `step()` when `repeats` calls are issued back to back and waited for
    once (`sync(results)`), as `annotate` dispatches its batches: the host's share of a call then
    overlaps the device's work on the one before (`timed_repeats` waits after every call)."""
    sync([step() for _ in range(2)])
    start = time.perf_counter()
    sync([step() for _ in range(repeats)])
    return (time.perf_counter() - start) / repeats


def torch_device():
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def torch_sync():
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


# ---- 1. inference ---------------------------------------------------------------------------


def set_flash_attention(choice):
    """Keras' global flash-attention setting for layers built from now on: True, False, or None
    (Keras' default: each call decides)."""
    from keras.src.backend.common import global_state

    global_state.set_global_attribute("flash_attention", choice)


def profile_steps(step, directory, steps=5):
    """A JAX profiler trace of `steps` calls of `step`, its `.xplane.pb` copied to `directory`
    as one flat file (what a device run can bring back), and its GPU time per call by kernel
    and by XLA op (the top 15 of each line of the trace's GPU plane, in microseconds)."""
    import shutil

    import jax

    with tempfile.TemporaryDirectory() as trace:
        with jax.profiler.trace(trace):
            for _ in range(steps):
                step()
        found = sorted(Path(trace).rglob("*.xplane.pb"))
        if not found:
            return {}
        if directory:
            shutil.copyfile(found[0], f"{directory}.xplane.pb")
        data = jax.profiler.ProfileData.from_file(str(found[0]))
    summary, host = {}, {}
    for plane in data.planes:
        on_gpu = plane.name.startswith("/device:GPU")
        if not on_gpu and not plane.name.startswith("/host:CPU"):
            continue
        for line in plane.lines:
            events = list(line.events)
            totals = {}
            for event in events:
                totals[event.name] = totals.get(event.name, 0.0) + event.duration_ns / 1e3 / steps
            if not totals:
                continue
            top = sorted(totals.items(), key=lambda item: -item[1])
            if on_gpu:
                summary[line.name] = {"total_us": round(sum(totals.values()), 1),
                                      "top_us": {name[:120]: round(us, 1) for name, us in top[:15]},
                                      **gpu_timeline(events, steps)}
            elif top[0][1] > 200:  # host threads busy for more than 0.2 ms a call
                host[f"{line.name[:60]}"] = {name[:120]: round(us, 1) for name, us in top[:10]}
    if host:
        summary["host_threads_us_per_call"] = dict(sorted(host.items(), key=lambda item: -max(item[1].values()))[:6])
    return summary


def gpu_timeline(events, steps):
    """How busy one GPU stream is over the traced calls: the span from its first kernel's start to
    its last one's end, the time some kernel runs (busy), kernels per call, and the five longest
    idle gaps with the kernel that ends each, per call, in microseconds. A span well above the
    busy time with many short gaps means the host launches kernels slower than the GPU runs them."""
    events = sorted(events, key=lambda event: event.start_ns)
    busy, gaps, end = 0.0, [], events[0].start_ns
    for event in events:
        if event.start_ns > end:
            gaps.append((event.start_ns - end, event.name))
        busy += max(0, event.end_ns - max(event.start_ns, end))
        end = max(end, event.end_ns)
    gaps.sort(key=lambda gap: -gap[0])
    return {"span_us_per_call": round((end - events[0].start_ns) / 1e3 / steps, 1),
            "busy_us_per_call": round(busy / 1e3 / steps, 1),
            "kernels_per_call": round(len(events) / steps, 1),
            "idle_gaps_per_call": round(len(gaps) / steps, 1),
            "idle_us_in_gaps_under_20us_per_call": round(sum(g for g, _ in gaps if g < 20e3) / 1e3 / steps, 1),
            "longest_gaps_us": [[round(g / 1e3, 1), name[:80]] for g, name in gaps[:5]]}


def host_dispatch_ms(call, calls=20):
    """Milliseconds the host spends per call handing `calls` calls to the device (not waiting for them)."""
    import jax

    jax.block_until_ready(call())
    start = time.perf_counter()
    results = [call() for _ in range(calls)]
    seconds = time.perf_counter() - start
    jax.block_until_ready(results)
    return round(1e3 * seconds / calls, 3)


def torch_kernels(step, steps=5):
    """transformers' GPU time per call by kernel (torch.profiler), the top 15, in microseconds."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as recorded:
        for _ in range(steps):
            step()
        torch_sync()
    totals = {}
    for event in recorded.key_averages():
        us = getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0)
        totals[event.key] = totals.get(event.key, 0.0) + us / steps
    top = sorted(totals.items(), key=lambda item: -item[1])
    return {"total_us": round(sum(totals.values()), 1), "top_us": {name[:120]: round(us, 1) for name, us in top[:15]}}


def jax_reference_forward(shape, vocabulary_size, attention):
    """A BERT token classifier written directly in jax.numpy, bfloat16 weights (LayerNorm in
    float32), attention by `jax.nn.dot_product_attention(implementation=attention)`: what XLA
    gives without Keras, to tell Keras' share of a gap from XLA's. Random weights; speed only."""
    import jax
    import jax.numpy as jnp

    hidden, layers = shape["hidden_size"], shape["num_hidden_layers"]
    heads, intermediate = shape["num_attention_heads"], shape["intermediate_size"]
    keys = iter(jax.random.split(jax.random.PRNGKey(0), 16 * layers + 8))

    def weight(*dims):
        return (0.02 * jax.random.normal(next(keys), dims, jnp.float32)).astype(jnp.bfloat16)

    def zeros(n):
        return jnp.zeros((n,), jnp.bfloat16)

    params = {"token": weight(vocabulary_size, hidden), "position": weight(512, hidden),
              "norm": (jnp.ones(hidden), jnp.zeros(hidden)), "classifier": (weight(hidden, len(LABELS)), zeros(len(LABELS))),
              "layers": [{"q": (weight(hidden, hidden), zeros(hidden)), "k": (weight(hidden, hidden), zeros(hidden)),
                          "v": (weight(hidden, hidden), zeros(hidden)), "o": (weight(hidden, hidden), zeros(hidden)),
                          "up": (weight(hidden, intermediate), zeros(intermediate)),
                          "down": (weight(intermediate, hidden), zeros(hidden)),
                          "norm1": (jnp.ones(hidden), jnp.zeros(hidden)), "norm2": (jnp.ones(hidden), jnp.zeros(hidden))}
                         for _ in range(layers)]}

    def dense(x, kernel_bias):
        return x @ kernel_bias[0] + kernel_bias[1]

    def norm(x, scale_bias):
        x = x.astype(jnp.float32)
        mean = x.mean(-1, keepdims=True)
        variance = jnp.square(x - mean).mean(-1, keepdims=True)
        return ((x - mean) * jax.lax.rsqrt(variance + 1e-12) * scale_bias[0] + scale_bias[1]).astype(jnp.bfloat16)

    @jax.jit
    def forward(params, token_ids):
        batch, length = token_ids.shape
        x = norm(params["token"][token_ids] + params["position"][:length], params["norm"])
        for layer in params["layers"]:
            q, k, v = (dense(x, layer[n]).reshape(batch, length, heads, -1) for n in "qkv")
            attended = jax.nn.dot_product_attention(q, k, v, implementation=attention).reshape(batch, length, hidden)
            x = norm(x + dense(attended, layer["o"]), layer["norm1"])
            x = norm(x + dense(jax.nn.gelu(dense(x, layer["up"]), approximate=False), layer["down"]), layer["norm2"])
        return dense(x, params["classifier"]).astype(jnp.float32)

    return lambda token_ids: forward(params, token_ids)


def inference(shapes, batch, length, repeats, scratch, report, profile=None, bf16_only=False):
    import jax
    import torch
    import transformers

    import biozoo
    from biozoo.tasks.inference import compiled_predict

    rng = np.random.default_rng(0)
    for name, shape in shapes.items():
        model_dir = build_hf_model(Path(scratch) / f"infer-{name}", shape, synthetic_vocabulary(30522))
        ids = rng.integers(5, 30522, (batch, length)).astype("int32")
        x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
        rows, kernels, not_run = {}, {}, {}

        hf = transformers.BertForTokenClassification.from_pretrained(model_dir).to(torch_device()).eval()
        attention_implementation = getattr(hf.config, "_attn_implementation", None)
        inputs = {"input_ids": torch.tensor(ids, dtype=torch.long, device=torch_device()),
                  "attention_mask": torch.ones(ids.shape, dtype=torch.long, device=torch_device())}
        with torch.inference_mode():
            torch.backends.cuda.matmul.allow_tf32 = False
            reference = hf(**inputs).logits.float().cpu().numpy()
            torch_rows = () if bf16_only else (("float32", False, False), ("tf32", True, False),
                                               ("bf16_autocast", True, True))
            for label, tf32, autocast in torch_rows:
                torch.backends.cuda.matmul.allow_tf32 = tf32
                with torch.autocast(torch_device(), dtype=torch.bfloat16, enabled=autocast):
                    rows[f"transformers_{label}"] = timed_repeats(lambda: hf(**inputs).logits, repeats, torch_sync)
            hf_bf16 = hf.to(torch.bfloat16)
            rows["transformers_bf16_weights"] = timed_repeats(lambda: hf_bf16(**inputs).logits, repeats, torch_sync)
            rows["transformers_bf16_weights_pipelined"] = timed_pipelined(lambda: hf_bf16(**inputs).logits, repeats,
                                                                          lambda results: torch_sync())
            # torch's profiler holds CUPTI for the rest of the process: JAX's traces come first
            if profile == "torch" and torch.cuda.is_available():
                kernels["transformers_bf16_weights"] = torch_kernels(lambda: hf_bf16(**inputs).logits)
        torch.backends.cuda.matmul.allow_tf32 = False
        hf = hf_bf16 = None

        # biozoo's own prediction path (what annotate runs): the jitted stateless call, timed to the
        # logits on the device as transformers' are. Inputs on the device count as padded (the
        # mask is not read back); the same batch from the host, all ones, attends without a mask.
        x_on_device = jax.device_put(x)
        task = biozoo.TokenClassifier.from_preset(str(model_dir))
        variants = [("bf16_weights", "default", "bfloat16", None, x_on_device),
                    ("bf16_weights_unpadded", "default", "bfloat16", None, x),
                    ("bf16_weights_xla_attention", "default", "bfloat16", False, x_on_device)]
        if not bf16_only:
            variants = [("float32", "highest", "float32", None, x_on_device),
                        ("tf32", "tensorfloat32", "float32", None, x_on_device)] + variants
        report_diff = None
        for label, matmul, precision, flash, given in variants:
            set_flash_attention(flash)
            task.precision = precision
            task._compiled_predict = None  # a new copy under this attention setting
            with jax.default_matmul_precision(matmul):
                predict = compiled_predict(task)
                logits = np.asarray(predict(given), np.float32)
                rows[f"biozoo_{label}"] = timed_repeats(lambda: jax.block_until_ready(predict(given)), repeats)
                if label == "bf16_weights_unpadded":
                    rows[f"biozoo_{label}_pipelined"] = timed_pipelined(lambda: predict(given), repeats,
                                                                        jax.block_until_ready)
                if profile not in (None, "torch") and label == "bf16_weights_unpadded":
                    kernels[f"biozoo_{label}"] = profile_steps(lambda: jax.block_until_ready(predict(given)),
                                                               Path(profile) / f"{name}-{label}" if profile else None)
                    kernels[f"biozoo_{label}_host_ms_per_call"] = host_dispatch_ms(lambda: predict(given))
            if label == "float32":
                report_diff = float(np.abs(logits - reference).max())
        set_flash_attention(None)
        task = None
        ids_on_device = jax.device_put(ids)
        for attention in ("cudnn", None):
            try:
                forward = jax_reference_forward(shape, 30522, attention)
                jax.block_until_ready(forward(ids_on_device))
            except Exception as error:  # noqa: BLE001 - cuDNN's attention is absent on a CPU
                not_run[f"jax_reference_{attention or 'auto'}"] = f"{type(error).__name__}: {str(error)[:200]}"
                continue
            label = f"jax_reference_bf16_{attention or 'xla_auto'}"
            rows[label] = timed_repeats(lambda: jax.block_until_ready(forward(ids_on_device)), repeats)
            rows[f"{label}_pipelined"] = timed_pipelined(lambda: forward(ids_on_device), repeats, jax.block_until_ready)
            if profile not in (None, "torch") and attention == "cudnn":
                kernels[label] = profile_steps(lambda: jax.block_until_ready(forward(ids_on_device)), None)
                kernels[f"{label}_host_ms_per_call"] = host_dispatch_ms(lambda: forward(ids_on_device))
        per_second = {key: round(batch / seconds, 1) for key, seconds in rows.items()}
        best_torch = max(value for key, value in per_second.items()
                         if key.startswith("transformers") and not key.endswith("pipelined"))
        best_biozoo = max(value for key, value in per_second.items()
                          if key.startswith("biozoo_bf16") and not key.endswith("pipelined"))
        record = {"sequences_per_second": per_second, "batch": batch, "length": length,
                  "xla_flags": os.environ.get("XLA_FLAGS", ""), "transformers_attention": attention_implementation,
                  "bf16_ratio_to_best_transformers": round(per_second["biozoo_bf16_weights"] / best_torch, 2),
                  "best_bf16_ratio_to_best_transformers": round(best_biozoo / best_torch, 2),
                  "pipelined_bf16_ratio": round(per_second["biozoo_bf16_weights_unpadded_pipelined"]
                                                / per_second["transformers_bf16_weights_pipelined"], 2)}
        if report_diff is not None:
            record.update({"float32_max_abs_diff_vs_transformers": report_diff,
                           "float32_ratio": round(per_second["biozoo_float32"] / per_second["transformers_float32"], 2)})
        if not_run:
            record["not_run"] = not_run
        if kernels:
            record["gpu_time_per_call"] = kernels
        log({f"inference_{name}" + ("_bf16_only" if bf16_only else ""): record}, report)


# ---- 2. annotate ----------------------------------------------------------------------------


def repeated_documents(path, count):
    """The abstracts of `path`, repeated with new PMIDs until there are `count`."""
    from biozoo.documents import read_documents

    originals = list(read_documents([str(path)]))
    documents = []
    while len(documents) < count:
        for document in originals[:count - len(documents)]:
            twin = copy.deepcopy(document)
            twin.id = f"{document.id}{len(documents) // len(originals):03d}"
            documents.append(twin)
    return originals, documents


def stage_seconds(annotator, corpus, predicted, batch_size, scratch):
    """Each stage of `annotate` timed on its own over `corpus`, the garbage collector paused as
    `biozoo annotate` pauses it for a chunk (with it running, the many small objects of a corpus
    this size make every stage slower than it is in the pipeline)."""
    from biozoo.annotate.annotators import Sentences
    from biozoo.documents import read_documents, write_documents

    enabled = gc.isenabled()
    gc.disable()
    try:
        stages = {}
        start = time.perf_counter()
        parsed = list(read_documents([str(corpus)]))
        stages["parse"] = time.perf_counter() - start
        start = time.perf_counter()
        sentences = Sentences.of(parsed)
        stages["sentence_split"] = time.perf_counter() - start
        task = annotator.task
        start = time.perf_counter()
        spans = task.preprocessor.tokenizer.token_spans(sentences.texts)
        task.preprocessor.piece_windows([[[i] for i, _, _ in row] for row in spans])
        stages["tokenize"] = time.perf_counter() - start
        start = time.perf_counter()
        probabilities = task.token_probabilities(sentences.texts, batch_size)
        stages["model"] = time.perf_counter() - start - stages["tokenize"]
        start = time.perf_counter()
        grouped = task.group(sentences.texts, probabilities)
        placed = sentences.place([g["entities"] for g in grouped], len(parsed))
        stages["group_and_place"] = time.perf_counter() - start
        start = time.perf_counter()
        write_documents(predicted, str(Path(scratch) / "rewrite.pubtator"), "pubtator")
        stages["write"] = time.perf_counter() - start
    finally:
        if enabled:
            gc.enable()
    return stages, sentences, placed, parsed


def annotate(shape, abstracts, vocab, count, batch_size, workers, scratch, report, lean=3.25, worker_repeat=4,
             without_model=False, worker_chunks=(256,)):
    from biozoo.annotate import AnnotationRun, load_annotator
    from biozoo.documents import read_documents, write_documents

    vocabulary = Path(vocab).read_text(encoding="utf-8").split("\n") if vocab else None
    if vocabulary and not vocabulary[-1]:
        vocabulary = vocabulary[:-1]
    uncased = bool(vocabulary) and not any(piece[:1].isupper() for piece in vocabulary if piece[:1] != "[")
    model_dir = build_hf_model(Path(scratch) / "annotate-model", shape, vocabulary or synthetic_vocabulary(30522),
                               lowercase=uncased, lean=lean)
    originals, documents = repeated_documents(abstracts, count)
    for document in documents:  # as PubMed gives abstracts: their text alone, no annotations to read and drop
        document.annotations = []
        for passage in document.passages:
            passage.annotations = []
    corpus = Path(scratch) / "corpus.pubtator"
    write_documents(documents, str(corpus), "pubtator")
    found = {}
    # bfloat16 and its --workers passes first: the figures the goal is about, kept when a time limit
    # stops the part during float32's
    for precision in ("bfloat16", "float32"):
        annotator = load_annotator(str(model_dir), batch_size=batch_size, precision=precision)
        output = Path(scratch) / f"annotated-{precision}.pubtator"

        def end_to_end():
            run = AnnotationRun([annotator], progress=False, chunk_size=1024, drop_existing=True)
            write_documents(run.annotate(read_documents([str(corpus)])), str(output), "pubtator")

        end_to_end()  # the first pass traces each length bucket
        start = time.perf_counter()
        end_to_end()
        seconds = time.perf_counter() - start
        predicted = list(read_documents([str(output)]))
        found[precision] = [(d.id, a.start, a.end, a.type) for d in predicted for a in d.existing_annotations()]
        stages, sentences, placed, parsed = stage_seconds(annotator, corpus, predicted, batch_size, scratch)
        task = annotator.task
        staged = sum(stages.values())
        host = staged - stages["model"]
        rate = len(documents) / seconds
        log({f"annotate_{precision}": {
            "abstracts": len(documents), "distinct_abstracts": len(originals), "sentences": len(sentences.texts),
            "vocabulary_size": len(task.preprocessor.tokenizer.get_vocabulary()),
            "seconds": round(seconds, 2), "abstracts_per_second": round(rate, 1),
            "pubmed_hours": round(PUBMED_ABSTRACTS / rate / 3600, 2),
            "stage_seconds": {k: round(v, 3) for k, v in stages.items()},
            "stage_share_percent": {k: round(100 * v / staged, 1) for k, v in stages.items()},
            # the most the host's stages allow, one process, however fast the model
            "host_stages_abstracts_per_second": round(len(documents) / host, 1),
            "entities": len(found[precision]), "entities_per_abstract": round(len(found[precision]) / len(documents), 1),
            "entities_placed_by_stages": sum(map(len, placed))}}, report)
        if precision == "bfloat16" and workers:
            log({"annotate_worker_start": worker_start(1), "annotate_workers_start": worker_start(workers)}, report)
            for n, chunk_size in enumerate(worker_chunks):  # the first under the key earlier runs used
                key = "annotate_bfloat16_workers" + (f"_chunk{chunk_size}" if n else "")
                log({key: in_workers(annotator, documents, workers, scratch, found[precision], repeat=worker_repeat,
                                     chunk_size=chunk_size)}, report)
            if without_model:
                log({"annotate_workers_without_model": in_workers(annotator, documents, workers, scratch, None,
                                                                  repeat=worker_repeat, model=False,
                                                                  chunk_size=worker_chunks[0])}, report)
    float32, bfloat16 = set(found["float32"]), set(found["bfloat16"])
    log({"annotate_bfloat16_vs_float32": {"float32_entities": len(float32), "bfloat16_entities": len(bfloat16),
                                          "same": len(float32 & bfloat16), "only_float32": len(float32 - bfloat16),
                                          "only_bfloat16": len(bfloat16 - float32)}}, report)


WORKER_START = """
import sys, time
start = time.perf_counter()
for name in filter(None, sys.argv[1].split(",")):  # as biozoo._worker_start.start blocks them
    sys.modules.setdefault(name, None)
import biozoo.annotate._workers as workers
imported = time.perf_counter()
workers.english_tokenizer()
print(round(imported - start, 3), round(time.perf_counter() - imported, 3))
"""


def worker_start(workers):
    """What starting `workers` annotate workers at once costs, as the pool starts them (spawned,
    `WORKER_ENVIRONMENT`): each one's seconds to import the worker module and to load spaCy's
    tokenizer, and the imports that cost the first one most (`-X importtime`, cumulative ms)."""
    from biozoo._worker_start import WORKER_ENVIRONMENT
    from biozoo.annotate._workers import blocked_in_workers

    environment = {**os.environ, **WORKER_ENVIRONMENT}
    blocked = ",".join(blocked_in_workers())
    # files, not pipes: a pipe read only after the process before it ended would stall this one
    files = [(tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")) for _ in range(workers)]
    start = time.perf_counter()
    processes = [subprocess.Popen([sys.executable, "-X", "importtime", "-c", WORKER_START, blocked], env=environment,
                                  stdout=out, stderr=err, text=True) for out, err in files]
    for process in processes:
        process.wait(timeout=300)
    wall = time.perf_counter() - start
    outputs = []
    for out, err in files:
        out.seek(0), err.seek(0)
        outputs.append((out.read(), err.read()))
        out.close(), err.close()
    costs = []
    for line in outputs[0][1].splitlines():
        parts = line.split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2].rstrip()
            costs.append((int(parts[1]) // 1000, name.strip()))
    timings = [tuple(map(float, out.split())) if out.strip() else None for out, _ in outputs]
    return {"workers": workers, "wall_seconds": round(wall, 2),
            "import_seconds": [t[0] if t else None for t in timings],
            "spacy_seconds": [t[1] if t else None for t in timings],
            "first_worker_costliest_imports_ms": sorted(costs, reverse=True)[:40],
            "errors": [err[-500:] for out, err in outputs if not out.strip()][:1]}


def in_workers(annotator, documents, workers, scratch, expected, repeat=4, model=True, chunk_size=256):
    """`biozoo annotate --workers`: the corpus `repeat` times over (so that starting the workers,
    timed apart, weighs little), read, annotated and written; the entities must be one process's.
    With `model=False` the model is replaced by zeros (no entity found): what the host stages
    and the calling process allow, however fast the model."""
    import biozoo.tasks.token_classifier as token_classifier
    from biozoo.annotate import AnnotationRun
    from biozoo.documents import read_documents, write_documents

    corpus = Path(scratch) / "corpus-workers.pubtator"
    repeated = []
    for k in range(repeat):
        for document in documents:
            twin = copy.deepcopy(document)
            twin.id = f"{document.id}{k}"
            repeated.append(twin)
    write_documents(repeated, str(corpus), "pubtator")
    output = Path(scratch) / "annotated-workers.pubtator"
    run = AnnotationRun([annotator], progress=False, chunk_size=chunk_size, drop_existing=True, workers=workers)
    compiled = token_classifier.compiled_predict
    if not model:
        token_classifier.compiled_predict = lambda task: lambda x: np.zeros(x["token_ids"].shape + (len(LABELS),), np.float32)
    task, dispatch = annotator.task, annotator.task.dispatch_window_batches
    model_calls = []  # per chunk: (when dispatched, seconds dispatching, seconds reading the logits back, batches)

    def timed_dispatch(batches):
        started = time.perf_counter()
        collect = dispatch(batches)
        call = [started, time.perf_counter() - started, None, len(batches)]
        model_calls.append(call)

        def timed_collect(per_window=True):
            began = time.perf_counter()
            logits = collect(per_window)
            call[2] = time.perf_counter() - began
            return logits

        return timed_collect

    task.dispatch_window_batches = timed_dispatch
    start, cpu, thread_cpu = time.perf_counter(), time.process_time(), time.thread_time()
    chunk_times = []  # when the first document of each chunk came out

    def stream():
        for n, document in enumerate(run.annotate(read_documents([str(corpus)]))):
            if n % chunk_size == 0:
                chunk_times.append(time.perf_counter())
            yield document

    try:
        write_documents(stream(), str(output), "pubtator")
    finally:
        token_classifier.compiled_predict = compiled
        del task.dispatch_window_batches
    seconds, cpu, thread_cpu = time.perf_counter() - start, time.process_time() - cpu, time.thread_time() - thread_cpu
    # steady state: between the chunks a quarter and three quarters of the way through (the
    # pipeline holds up to `workers` chunks on each side of the model, filled at the start and
    # drained at the end)
    low, high = len(chunk_times) // 4, (3 * len(chunk_times)) // 4
    steady = ((high - low) * chunk_size / (chunk_times[high] - chunk_times[low]) if high > low
              else len(repeated) / seconds)
    annotated = list(read_documents([str(output)]))
    result = {"workers": workers, "model": model, "abstracts": len(repeated), "seconds": round(seconds, 2),
              "abstracts_per_second": round(len(repeated) / seconds, 1),
              "seconds_to_first_model_call": round(model_calls[0][0] - start, 2) if model_calls else None,
              "seconds_to_first_chunk": round(chunk_times[0] - start, 2),
              "abstracts_per_second_steady": round(steady, 1),
              "steady_chunks": [low, high, len(chunk_times)],
              "pubmed_hours": round(PUBMED_ABSTRACTS / steady / 3600, 2),
              # the calling process' CPU seconds (all its threads): reading, batching, the model's
              # dispatch, writing, and the traffic to the workers
              "calling_process_cpu_seconds": round(cpu, 2),
              "calling_process_cap_abstracts_per_second": round(len(repeated) / cpu, 1),
              # its Python thread alone (JAX's runtime threads aside), and the seconds that thread
              # waited for the workers' batches, the model and finished chunks: which side is slower
              "calling_thread_cpu_seconds": round(thread_cpu, 2),
              "calling_thread_waited_seconds": {wait: round(t, 2) for wait, t in run.waited.items()},
              # the model's part of the calling process: dispatching the batches, and waiting for
              # and reading back the logits (the accelerator's time not hidden behind the host's)
              "model_dispatch_seconds": round(sum(call[1] for call in model_calls), 2),
              "model_collect_seconds": round(sum(call[2] or 0 for call in model_calls), 2),
              "model_calls": sum(call[3] for call in model_calls), "chunk_size": chunk_size,
              "model_seconds_from_first_call": round(model_calls[-1][0] - model_calls[0][0], 2) if model_calls else None,
              "documents_out": len(annotated)}
    if model:
        first_copy = [(d.id[:-1], a.start, a.end, a.type) for d in annotated[:len(documents)]
                      for a in d.existing_annotations()]
        total = sum(len(d.existing_annotations()) for d in annotated)
        result["entities_equal_one_process"] = sorted(first_copy) == sorted(expected) and total == repeat * len(expected)
    return result


# ---- 3. fine-tuning -------------------------------------------------------------------------


FINETUNE_STATISTIC = ("seconds per step: median over {blocks} timed blocks of {steps} steps back to back (after one "
                      "untimed block), each block's wall / {steps}, waited for once at its end; biozoo's block is one "
                      "keras fit() call of {steps} steps (its start-up included), transformers' {steps} plain steps")


def finetune(shapes, batches, length, steps, scratch, report, blocks=3):
    import jax
    import keras
    import torch
    import transformers

    import biozoo
    from biozoo.optim import make_optimizer

    rng = np.random.default_rng(0)
    for name, shape in shapes.items():
        model_dir = build_hf_model(Path(scratch) / f"train-{name}", shape, synthetic_vocabulary(30522))
        rows = {}
        for batch in batches:
            ids = rng.integers(5, 30522, (batch, length)).astype("int32")
            labels = rng.integers(0, len(LABELS), (batch, length)).astype("int32")
            x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}

            keras.config.set_dtype_policy("mixed_bfloat16")
            try:
                task = biozoo.TokenClassifier.from_preset(str(model_dir))
                task.compile(optimizer=make_optimizer("adamw", 5e-5, 10 * steps, 0.1, 0.01, clip_norm=1.0),
                             jit_compile=True)
            finally:
                keras.config.set_dtype_policy("float32")

            def biozoo_steps(count):
                # keras.Model.fit: the numpy batches as they are (KerasHub's fit would preprocess them)
                keras.Model.fit(task, ((x, labels) for _ in range(count)), steps_per_epoch=count, epochs=1, verbose=0)
                jax.block_until_ready([variable.value for variable in task.trainable_variables])

            # both sides timed alike (FINETUNE_STATISTIC): blocks of `steps` steps, the first untimed (compiles)
            biozoo_seconds = timed_blocks(lambda: biozoo_steps(steps), steps, blocks)

            hf = transformers.BertForTokenClassification.from_pretrained(model_dir).to(torch_device()).train()
            optimizer = torch.optim.AdamW(hf.parameters(), lr=5e-5, weight_decay=0.01,
                                          fused=torch.cuda.is_available())
            inputs = {"input_ids": torch.tensor(ids, dtype=torch.long, device=torch_device()),
                      "attention_mask": torch.ones(ids.shape, dtype=torch.long, device=torch_device()),
                      "labels": torch.tensor(labels, dtype=torch.long, device=torch_device())}
            torch.backends.cuda.matmul.allow_tf32 = True

            def torch_step():
                with torch.autocast(torch_device(), dtype=torch.bfloat16):
                    loss = hf(**inputs).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(hf.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)

            def torch_steps():
                for _ in range(steps):
                    torch_step()

            torch_seconds = timed_blocks(torch_steps, steps, blocks, torch_sync)
            rows[batch] = {"biozoo_examples_per_second": round(batch / biozoo_seconds, 1),
                           "transformers_examples_per_second": round(batch / torch_seconds, 1),
                           "ratio": round(torch_seconds / biozoo_seconds, 2)}
            # each batch size as it is measured (a run stopped at its time limit keeps what it had)
            log({f"finetune_{name}": {"length": length, "bf16": True, "clip_norm": 1.0,
                                      "statistic": FINETUNE_STATISTIC.format(blocks=blocks, steps=steps),
                                      "xla_flags": os.environ.get("XLA_FLAGS", ""), "by_batch": rows}}, report)
            task = hf = optimizer = None  # the next batch size starts with free GPU memory


# ---- 4. the same fine-tuning's scores --------------------------------------------------------


NCBI_LABELS = ["O", "B-Disease", "I-Disease"]


def ncbi_splits(limit=None):
    """The packaged NCBI-disease corpus: {"train", "dev", "test"} sentences (the first `limit` of each)."""
    from biozoo.data.embedded import embedded_corpus
    from biozoo.data.ner import find_split, read_ner

    folder = embedded_corpus("ncbi-disease")
    return {split: read_ner(find_split(folder, split), entity_type="Disease")[:limit] for split in ("train", "dev", "test")}


def pack_checkpoint(source, output):
    """A BERT checkpoint (`source`, e.g. the real MiniLM-L6) small enough to carry to the device
    machine with the wheels (64 MiB in all): its vocabulary cut to the WordPiece tokens that
    NCBI-disease's sentences use (each sentence then tokenizes to the same pieces, checked here),
    every matrix in int8 with one float32 scale per row, the rest float32. `unpack_checkpoint`
    rebuilds it as a transformers BertModel folder; both sides of `finetune_scores` start from
    those same weights."""
    import transformers
    from safetensors.numpy import load_file

    source, output = Path(source), Path(output)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(source)
    sentences = [s.words for split in ncbi_splits().values() for s in split]
    used = {0, 100, 101, 102, 103} | {i for words in sentences
                                      for i in tokenizer(words, is_split_into_words=True)["input_ids"]}
    vocabulary = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    kept = sorted(used)
    output.mkdir(parents=True, exist_ok=True)
    (output / "vocab.txt").write_text("".join(vocabulary[i][0] + "\n" for i in kept), encoding="utf-8")
    cut = transformers.BertTokenizerFast(vocab=str(output / "vocab.txt"), do_lower_case=tokenizer.do_lower_case)
    new_id = {old: new for new, old in enumerate(kept)}
    for words in sentences:
        if cut(words, is_split_into_words=True)["input_ids"] != [new_id[i] for i in tokenizer(
                words, is_split_into_words=True)["input_ids"]]:
            raise RuntimeError(f"{output}: the cut vocabulary tokenizes {' '.join(words)[:80]!r} differently")
    arrays = {}
    for name, value in load_file(str(source / "model.safetensors")).items():
        if name.endswith("position_ids"):
            continue
        if name == "embeddings.word_embeddings.weight":
            value = value[kept]
        if value.ndim == 2 and value.size >= 4096:
            scale = np.maximum(np.abs(value).max(axis=1, keepdims=True), 1e-12) / 127
            arrays[name] = np.round(value / scale).astype(np.int8)
            arrays[name + ".scale"] = scale.astype(np.float32)
        else:
            arrays[name] = value.astype(np.float32)
    np.savez_compressed(output / "weights.npz", **arrays)
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    config.update(vocab_size=len(kept), do_lower_case=tokenizer.do_lower_case)
    (output / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return output


def unpack_checkpoint(packed, output):
    """`pack_checkpoint`'s folder as a transformers BertModel folder with its tokenizer."""
    import torch
    import transformers

    packed, output = Path(packed), Path(output)
    config = json.loads((packed / "config.json").read_text(encoding="utf-8"))
    lowercase = config.pop("do_lower_case")
    stored = np.load(packed / "weights.npz", allow_pickle=False)
    state = {name: torch.from_numpy(stored[name].astype(np.float32) * stored[name + ".scale"]
                                    if name + ".scale" in stored else stored[name])
             for name in stored.files if not name.endswith(".scale")}
    model = transformers.BertModel(transformers.BertConfig(**config), add_pooling_layer=any(
        name.startswith("pooler.") for name in state))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [name for name in missing if not name.endswith("position_ids")]:
        raise RuntimeError(f"{packed}: weights missing {missing}, unexpected {unexpected}")
    model.save_pretrained(output)
    transformers.BertTokenizerFast(vocab=str(packed / "vocab.txt"), do_lower_case=lowercase).save_pretrained(output)
    return output


def finetune_scores(packed, scratch, report, epochs=3, batch=32, seed=1, limit=None, static=False):
    """Issue 35's "equal dev F1 after the same steps": NER fine-tuning of the packed MiniLM-L6 on
    NCBI-disease, the default recipe (lr 5e-5, 10 % warmup then linear decay, weight decay 0.01
    except biases and LayerNorms, clipping at 1.0, max length 128), bf16 on both sides:
    `biozoo finetune ner --mixed-precision bfloat16` on JAX (its own process), and transformers
    with torch's AdamW, `clip_grad_norm_` and bf16 autocast, first-sub-token labels
    (`finetune_vs_hf.hf_ner`, the CPU benchmark's reference side, here on the GPU). Both scored
    with the same conlleval-equal entity F1 on dev and test; training seconds side by side."""
    import torch
    from finetune_vs_hf import hf_ner

    from biozoo.metrics.ner import entity_scores

    model_dir = unpack_checkpoint(packed, Path(scratch) / "f1-model")
    splits = ncbi_splits(limit)
    data = Path(scratch) / "NCBI-disease"
    data.mkdir(exist_ok=True)
    for split, name in (("train", "train.tsv"), ("dev", "devel.tsv"), ("test", "test.tsv")):
        (data / name).write_text("".join("".join(f"{w}\t{t}\n" for w, t in zip(s.words, s.tags)) + "\n"
                                         for s in splits[split]), encoding="utf-8")
    output = Path(scratch) / "f1-biozoo"
    recipe = {"epochs": epochs, "lr": 5e-5, "batch": batch, "max_len": 128, "warmup": 0.1, "wd": 0.01, "clip": 1.0,
              "seed": seed}  # finetune_vs_hf's names; the same values go to biozoo's options
    argv = [sys.executable, "-m", "biozoo", "finetune", "ner", "--preset", str(model_dir), "--data", str(data),
            "--output", str(output), "--overwrite", "--mixed-precision",
            "bfloat16" if torch.cuda.is_available() else "float32"]
    for option, key in (("--epochs", "epochs"), ("--learning-rate", "lr"), ("--batch-size", "batch"),
                        ("--max-seq-length", "max_len"), ("--warmup-ratio", "warmup"), ("--weight-decay", "wd"),
                        ("--clip-norm", "clip"), ("--seed", "seed")):
        argv += [option, str(recipe[key])]
    if static:  # one padded length, one compiled program (and the last partial batch dropped)
        argv += ["--static-shapes", "on"]
    start = time.perf_counter()
    done = subprocess.run(argv, env={**os.environ, "KERAS_BACKEND": "jax"})  # its log in this one's
    if done.returncode:
        raise RuntimeError(f"biozoo finetune exited {done.returncode} (its output is above)")
    metrics = json.loads((output / "metrics.json").read_text(encoding="utf-8"))
    biozoo_side = {"dev_f1": metrics["dev"]["f1"], "test_f1": metrics["test"]["f1"],
                   "train_seconds": metrics["train_seconds"], "process_seconds": round(time.perf_counter() - start, 1),
                   "train_examples_per_second": metrics["train_examples_per_second"],
                   "precision": metrics["precision"], "micro_batches": metrics["micro_batches"],
                   "steps": metrics["train_steps"], "static_shapes": static,
                   "xla_compilations": metrics.get("xla_compilations")}

    transformers_seconds, predicted = hf_ner(splits["train"], (splits["dev"], splits["test"]), NCBI_LABELS, recipe,
                                             str(model_dir), torch_device(), torch.cuda.is_available())
    scores = {f"{split}_f1": entity_scores([s.tags for s in splits[split]], tags)["f1"]
              for split, tags in zip(("dev", "test"), predicted)}
    train = splits["train"]
    steps = epochs * -(-len(train) // batch)
    log({"finetune_scores_ncbi_disease": {
        "checkpoint": "MiniLM-L6 (int8 rows, vocabulary cut to NCBI-disease's pieces; the same start for both)",
        "train_sentences": len(train), "epochs": epochs, "batch": batch, "seed": seed, "steps": steps,
        "biozoo_jax": biozoo_side,
        "transformers": {**scores, "train_seconds": round(transformers_seconds, 1),
                         "train_examples_per_second": round(epochs * len(train) / transformers_seconds, 1)},
        "dev_f1_difference": round(biozoo_side["dev_f1"] - scores["dev_f1"], 2),
        "test_f1_difference": round(biozoo_side["test_f1"] - scores["test_f1"], 2),
        # transformers' seconds / biozoo's, a speed ratio (> 1: biozoo faster); `train_time_ratio` in reports before
        # 2026-11-29 (results/gpu_h100_2026-11-2*.json), the same quotient
        "speed_ratio": round(transformers_seconds / biozoo_side["train_seconds"], 2)}}, report)


def device_description():
    import jax
    import torch

    return {"jax_devices": [str(d) for d in jax.devices()], "jax": jax.__version__, "torch": torch.__version__,
            "torch_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="inference,annotate,finetune")
    parser.add_argument("--abstracts", help="a PubTator file of real abstracts (default: the packaged example)")
    parser.add_argument("--vocab", help="a WordPiece vocab.txt for the annotate model (default: a synthetic one)")
    parser.add_argument("--documents", type=int,
                        help="annotate: abstracts, repeated from --abstracts (default 5000; 8 with --smoke)")
    parser.add_argument("--annotate-batch", type=int, default=256)
    parser.add_argument("--workers", type=int, default=max(0, min(16, (os.cpu_count() or 1) - 2)),
                        help="annotate: also run bfloat16 with this many host worker processes (0: not)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--train-steps", type=int, default=30)
    parser.add_argument("--profile", help="inference: a folder for a JAX profiler trace of each shape's bf16 calls")
    parser.add_argument("--kernels", choices=("jax", "torch"),
                        help="inference: GPU time per call by kernel and XLA op, of biozoo's bf16 and the JAX "
                             "reference (jax), or of transformers' bf16 (torch; its profiler keeps CUPTI)")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="inference, finetune: the model shapes")
    parser.add_argument("--bf16-only", action="store_true",
                        help="inference: only the bfloat16 rows (a second pass under other XLA_FLAGS)")
    parser.add_argument("--batches", default="8,32,128", help="finetune: the batch sizes")
    parser.add_argument("--smoke", action="store_true", help="tiny shapes and counts: that every part runs")
    parser.add_argument("--report", help="also write every figure to this JSON file")
    parser.add_argument("--checkpoint", help="scores: a folder that --pack wrote")
    parser.add_argument("--scores-sentences", type=int, help="scores: the first N sentences of each split (default all)")
    parser.add_argument("--scores-static", action="store_true",
                        help="scores: biozoo with --static-shapes on (every batch padded to 128: one compiled step)")
    parser.add_argument("--worker-repeat", type=int, default=4,
                        help="annotate: the --workers pass reads the abstracts this many times over")
    parser.add_argument("--worker-chunks", default="256",
                        help="annotate: the --workers pass with each of these chunk sizes (documents per chunk)")
    parser.add_argument("--without-model", action="store_true",
                        help="annotate: also a --workers pass with the model replaced by zeros")
    parser.add_argument("--pack", metavar="FOLDER", help="write the `scores` checkpoint from --pack-source and stop")
    parser.add_argument("--pack-source", help="--pack: a BERT checkpoint folder (the real MiniLM-L6)")
    args = parser.parse_args()
    if args.pack:
        print(pack_checkpoint(args.pack_source, args.pack))
        return
    if "scores" in args.parts.split(","):
        # JAX takes 75 % of the GPU's memory when it starts, in this process too (it names the
        # devices): `biozoo finetune`'s own JAX process would find a quarter left
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import keras

    if keras.backend.backend() != "jax":
        sys.exit("run with KERAS_BACKEND=jax")
    shapes = {"smoke": SMOKE_SHAPE} if args.smoke else {name: SHAPES[name] for name in args.shapes.split(",")}
    batch, length = (4, 32) if args.smoke else (256, 128)
    repeats = 2 if args.smoke else args.repeats
    from biozoo.data.embedded import embedded_corpus

    abstracts = args.abstracts or str(embedded_corpus("example-pubtator"))
    report = {"path": args.report, "device": device_description()}
    print(json.dumps(report["device"]), flush=True)
    parts = args.parts.split(",")
    with tempfile.TemporaryDirectory(prefix="biozoo-gpu-") as scratch:
        if "inference" in parts:
            profile = args.profile if args.profile else {"jax": "", "torch": "torch"}.get(args.kernels)
            inference(shapes, batch, length, repeats, scratch, report, profile, args.bf16_only)
        if "annotate" in parts:
            annotate(SMOKE_SHAPE if args.smoke else SHAPES["bioformer_8l"], abstracts, args.vocab,
                     args.documents or (8 if args.smoke else 5000), args.annotate_batch, args.workers, scratch,
                     report, lean=1.0 if args.smoke else 3.25,  # the tiny smoke model's logits spread less
                     worker_repeat=args.worker_repeat, without_model=args.without_model,
                     worker_chunks=tuple(int(n) for n in args.worker_chunks.split(",")))
        if "finetune" in parts:
            finetune(shapes, (2, 4) if args.smoke else tuple(int(b) for b in args.batches.split(",")), length,
                     3 if args.smoke else args.train_steps, scratch, report)
        if "scores" in parts:
            finetune_scores(args.checkpoint, scratch, report, epochs=1 if args.smoke else 3,
                            limit=args.scores_sentences or (24 if args.smoke else None), static=args.scores_static)
    if args.report:
        write_report(report)


if __name__ == "__main__":
    main()
