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
   fused AdamW, clip_grad_norm_ and bf16 autocast.

    KERAS_BACKEND=jax python benchmarks/gpu_figures.py --abstracts A.PubTator --vocab vocab.txt --report gpu.json
    KERAS_BACKEND=jax python benchmarks/gpu_figures.py --smoke     # tiny shapes on a CPU: that every part runs

Targets (the issues'): inference bf16 >= 1.0x transformers' best row; annotate >= 2,500
abstracts/s end to end; fine-tuning >= 1.0x at every batch size.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
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


def build_hf_model(directory, shape, vocabulary, seed=0, lowercase=False):
    """A random-weight BertForTokenClassification of `shape`, saved with a WordPiece vocabulary;
    its head leans towards "O" so that about one word in six is tagged, about as many entities
    per abstract as a real tagger's."""
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
        model.classifier.bias.copy_(torch.tensor([1.9, 0.0, 0.0, 0.0, 0.0]))
    model.save_pretrained(directory)
    transformers.BertTokenizerFast(vocab_file=str(directory / "vocab.txt"), do_lower_case=lowercase).save_pretrained(directory)
    return directory


def timed_repeats(step, repeats, sync=lambda: None):
    """Median seconds of `step()` over `repeats` runs, after two untimed ones."""
    for _ in range(2):
        step()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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
    as one flat file (what a device run can bring back); read it with xprof / TensorBoard."""
    import shutil

    import jax

    with tempfile.TemporaryDirectory() as trace:
        with jax.profiler.trace(trace):
            for _ in range(steps):
                step()
        found = sorted(Path(trace).rglob("*.xplane.pb"))
        if found:
            shutil.copyfile(found[0], f"{directory}.xplane.pb")


def inference(shapes, batch, length, repeats, scratch, report, profile=None):
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
        rows = {}

        hf = transformers.BertForTokenClassification.from_pretrained(model_dir).to(torch_device()).eval()
        inputs = {"input_ids": torch.tensor(ids, dtype=torch.long, device=torch_device()),
                  "attention_mask": torch.ones(ids.shape, dtype=torch.long, device=torch_device())}
        with torch.inference_mode():
            torch.backends.cuda.matmul.allow_tf32 = False
            reference = hf(**inputs).logits.float().cpu().numpy()
            for label, tf32, autocast in (("float32", False, False), ("tf32", True, False), ("bf16_autocast", True, True)):
                torch.backends.cuda.matmul.allow_tf32 = tf32
                with torch.autocast(torch_device(), dtype=torch.bfloat16, enabled=autocast):
                    rows[f"transformers_{label}"] = timed_repeats(lambda: hf(**inputs).logits, repeats, torch_sync)
            hf_bf16 = hf.to(torch.bfloat16)
            rows["transformers_bf16_weights"] = timed_repeats(lambda: hf_bf16(**inputs).logits, repeats, torch_sync)
        torch.backends.cuda.matmul.allow_tf32 = False

        # biozoo's own prediction path (what annotate runs): the jitted stateless call, inputs on
        # the device as transformers' are, timed to the logits on the device as transformers' are
        x_on_device = jax.device_put(x)
        # one conversion per shape: float32 and TF32 are the same jitted call traced under another
        # matmul precision; bf16 a copy in bfloat16, with cuDNN's fused attention (Keras' auto
        # choice) and with XLA's (flash attention disabled), to tell attention's share apart
        task = biozoo.TokenClassifier.from_preset(str(model_dir))
        for label, matmul, precision, flash in (("float32", "highest", "float32", None),
                                                 ("tf32", "tensorfloat32", "float32", None),
                                                 ("bf16_weights", "default", "bfloat16", None),
                                                 ("bf16_weights_xla_attention", "default", "bfloat16", False)):
            set_flash_attention(flash)
            task.precision = precision
            task._compiled_predict = None  # a new copy under this attention setting
            with jax.default_matmul_precision(matmul):
                predict = compiled_predict(task)
                logits = np.asarray(predict(x_on_device), np.float32)
                rows[f"biozoo_{label}"] = timed_repeats(lambda: jax.block_until_ready(predict(x_on_device)), repeats)
                if profile and label == "bf16_weights":
                    profile_steps(lambda: jax.block_until_ready(predict(x_on_device)), Path(profile) / f"{name}-bf16")
            if label == "float32":
                report_diff = float(np.abs(logits - reference).max())
        set_flash_attention(None)
        per_second = {key: round(batch / seconds, 1) for key, seconds in rows.items()}
        best_torch = max(value for key, value in per_second.items() if key.startswith("transformers"))
        log({f"inference_{name}": {"sequences_per_second": per_second, "batch": batch, "length": length,
                                   "float32_max_abs_diff_vs_transformers": report_diff,
                                   "bf16_ratio_to_best_transformers": round(per_second["biozoo_bf16_weights"] / best_torch, 2),
                                   "float32_ratio": round(per_second["biozoo_float32"] / per_second["transformers_float32"], 2)}},
            report)


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


def annotate(shape, abstracts, vocab, count, batch_size, workers, scratch, report):
    from biozoo.annotate import AnnotationRun, load_annotator
    from biozoo.annotate.annotators import Sentences
    from biozoo.documents import read_documents, write_documents

    vocabulary = Path(vocab).read_text(encoding="utf-8").split("\n") if vocab else None
    if vocabulary and not vocabulary[-1]:
        vocabulary = vocabulary[:-1]
    uncased = bool(vocabulary) and not any(piece[:1].isupper() for piece in vocabulary if piece[:1] != "[")
    model_dir = build_hf_model(Path(scratch) / "annotate-model", shape, vocabulary or synthetic_vocabulary(30522),
                               lowercase=uncased)
    originals, documents = repeated_documents(abstracts, count)
    corpus = Path(scratch) / "corpus.pubtator"
    write_documents(documents, str(corpus), "pubtator")
    found = {}
    for precision in ("float32", "bfloat16"):
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
        staged = sum(stages.values())
        host = staged - stages["model"]
        rate = len(documents) / seconds
        log({f"annotate_{precision}": {
            "abstracts": len(documents), "distinct_abstracts": len(originals), "sentences": len(sentences.texts),
            "seconds": round(seconds, 2), "abstracts_per_second": round(rate, 1),
            "pubmed_hours": round(PUBMED_ABSTRACTS / rate / 3600, 2),
            "stage_seconds": {k: round(v, 3) for k, v in stages.items()},
            "stage_share_percent": {k: round(100 * v / staged, 1) for k, v in stages.items()},
            # the most the host's stages allow, one process, however fast the model
            "host_stages_abstracts_per_second": round(len(documents) / host, 1),
            "entities": len(found[precision]), "entities_per_abstract": round(len(found[precision]) / len(documents), 1),
            "entities_placed_by_stages": sum(map(len, placed))}}, report)
        if precision == "bfloat16" and workers:
            log({"annotate_bfloat16_workers": in_workers(annotator, documents, workers, scratch, found[precision])},
                report)
    float32, bfloat16 = set(found["float32"]), set(found["bfloat16"])
    log({"annotate_bfloat16_vs_float32": {"float32_entities": len(float32), "bfloat16_entities": len(bfloat16),
                                          "same": len(float32 & bfloat16), "only_float32": len(float32 - bfloat16),
                                          "only_bfloat16": len(bfloat16 - float32)}}, report)


def in_workers(annotator, documents, workers, scratch, expected, repeat=4):
    """`biozoo annotate --workers`: the corpus `repeat` times over (so that starting the workers,
    timed apart, weighs little), read, annotated and written; the entities must be one process's."""
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
    run = AnnotationRun([annotator], progress=False, chunk_size=256, drop_existing=True, workers=workers)
    start = time.perf_counter()
    first = None

    def stream():
        nonlocal first
        for document in run.annotate(read_documents([str(corpus)])):
            if first is None:
                first = time.perf_counter()
            yield document

    write_documents(stream(), str(output), "pubtator")
    seconds = time.perf_counter() - start
    after_first = len(repeated) - min(256, len(repeated))  # documents after the first chunk
    steady = after_first / (time.perf_counter() - first) if after_first else len(repeated) / seconds
    annotated = list(read_documents([str(output)]))
    first_copy = [(d.id[:-1], a.start, a.end, a.type) for d in annotated[:len(documents)] for a in d.existing_annotations()]
    total = sum(len(d.existing_annotations()) for d in annotated)
    return {"workers": workers, "abstracts": len(repeated), "seconds": round(seconds, 2),
            "abstracts_per_second": round(len(repeated) / seconds, 1),
            "seconds_to_first_chunk": round(first - start, 2),
            "abstracts_per_second_after_first_chunk": round(steady, 1),
            "pubmed_hours": round(PUBMED_ABSTRACTS / steady / 3600, 2),
            "documents_out": len(annotated),
            "entities_equal_one_process": sorted(first_copy) == sorted(expected) and total == repeat * len(expected)}


# ---- 3. fine-tuning -------------------------------------------------------------------------


def finetune(shapes, batches, length, steps, scratch, report):
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

            biozoo_steps(2)  # compiles
            start = time.perf_counter()
            biozoo_steps(steps)
            biozoo_seconds = (time.perf_counter() - start) / steps

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

            torch_seconds = timed_repeats(torch_step, steps, torch_sync)
            rows[batch] = {"biozoo_examples_per_second": round(batch / biozoo_seconds, 1),
                           "transformers_examples_per_second": round(batch / torch_seconds, 1),
                           "ratio": round(torch_seconds / biozoo_seconds, 2)}
            # each batch size as it is measured (a run stopped at its time limit keeps what it had)
            log({f"finetune_{name}": {"length": length, "bf16": True, "clip_norm": 1.0, "by_batch": rows}}, report)
            task = hf = optimizer = None  # the next batch size starts with free GPU memory


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
    parser.add_argument("--smoke", action="store_true", help="tiny shapes and counts: that every part runs")
    parser.add_argument("--report", help="also write every figure to this JSON file")
    args = parser.parse_args()
    import keras

    if keras.backend.backend() != "jax":
        sys.exit("run with KERAS_BACKEND=jax")
    shapes = {"smoke": SMOKE_SHAPE} if args.smoke else SHAPES
    batch, length = (4, 32) if args.smoke else (256, 128)
    repeats = 2 if args.smoke else args.repeats
    from biozoo.data.embedded import embedded_corpus

    abstracts = args.abstracts or str(embedded_corpus("example-pubtator"))
    report = {"path": args.report, "device": device_description()}
    print(json.dumps(report["device"]), flush=True)
    parts = args.parts.split(",")
    with tempfile.TemporaryDirectory(prefix="biozoo-gpu-") as scratch:
        if "inference" in parts:
            inference(shapes, batch, length, repeats, scratch, report, args.profile)
        if "annotate" in parts:
            annotate(SMOKE_SHAPE if args.smoke else SHAPES["bioformer_8l"], abstracts, args.vocab,
                     args.documents or (8 if args.smoke else 5000), args.annotate_batch, args.workers, scratch,
                     report)
        if "finetune" in parts:
            finetune(shapes, (2, 4) if args.smoke else (8, 32, 128), length, 3 if args.smoke else args.train_steps,
                     scratch, report)
    if args.report:
        write_report(report)


if __name__ == "__main__":
    main()
