"""What a new user compares: `biozoo finetune ner` with its defaults against the HF Trainer
with its defaults, on the real MiniLM-L6, several seeds each side.

Each corpus (NCBI-disease, BC5CDR-chemical) is cut to a random subset of training sentences
(drawn once, seed 0); dev and test are whole. Both sides run as child processes:

* biozoo: `biozoo finetune ner --preset MINILM --data SUBSET --output OUT --seed S`, nothing
  else (3 epochs, batch 8, lr 5e-5, 10 % warmup then linear decay, weight decay 0.01 except
  biases and LayerNorms, gradient clipping at global norm 1.0, max length 128).
* transformers: `Trainer(model, TrainingArguments(output_dir, seed=S), ...)` with
  AutoModelForTokenClassification and DataCollatorForTokenClassification, labels on each
  word's first sub-token as the token-classification example does (Trainer defaults: 3 epochs,
  batch 8, lr 5e-5, no warmup, linear decay, weight decay 0, max_grad_norm 1.0; no
  truncation below the model's 512 positions). Only evaluation settings that change no
  prediction are set: evaluation batch 64, no checkpoints, no reporting.

Both are scored by the same entity-level F1 (conlleval rules) over every word of every test
sentence. Training time is wall time of the training loop alone (biozoo's `train_seconds`,
the Trainer's `train_runtime`); `speed_ratio` is the Trainer's mean training seconds over
biozoo's (> 1: biozoo trains faster).

    .venv/bin/python benchmarks/defaults_vs_hf_trainer.py                       # 2,000 sentences, seeds 1-3
    .venv/bin/python benchmarks/defaults_vs_hf_trainer.py --corpora NCBI-disease --train-sentences 64 --seeds 1

Target: biozoo's mean test F1 within 1 point of the Trainer's, or better.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _shared import minilm, shared_data

CORPORA = ("NCBI-disease", "BC5CDR-chem")


def read_blocks(path):
    """The sentences of a token<TAB>tag file as lists of lines (blank-line separated)."""
    blocks, current = [], []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def subset_corpus(folder, sentences, target):
    """`target` holding a random `sentences`-sentence train split (seed 0) and the whole dev and
    test splits of `folder`."""
    from biozoo.data.ner import find_split

    target.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        blocks = read_blocks(find_split(folder, split))
        if split == "train" and sentences < len(blocks):
            blocks = random.Random(0).sample(blocks, sentences)
        text = "\n\n".join("\n".join(block) for block in blocks) + "\n"
        (target / f"{split}.tsv").write_text(text, encoding="utf-8")
    return target


def run_child(argv):
    process = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if process.returncode:
        sys.exit(f"{' '.join(argv[:4])} ... failed:\n{process.stderr[-4000:]}")
    return json.loads(process.stdout.strip().splitlines()[-1])


def biozoo_side(data, seed, work):
    output = Path(work) / f"biozoo-{data.name}-{seed}"
    metrics = run_child([sys.executable, "-m", "biozoo", "finetune", "ner", "--preset", minilm(), "--data", str(data),
                         "--output", str(output), "--seed", str(seed)])
    return {"f1": metrics["test"]["f1"], "train_seconds": metrics["train_seconds"]}


def transformers_side(data, seed, work):
    return run_child([sys.executable, __file__, "--hf-child", str(data), "--seed", str(seed), "--work", str(work)])


def hf_child(data, seed, work):
    """Runs in its own process: the HF Trainer with its defaults; prints one JSON line."""
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        DataCollatorForTokenClassification,
        Trainer,
        TrainingArguments,
    )

    from biozoo.data.ner import read_ner
    from biozoo.metrics.ner import entity_scores

    train, test = read_ner(Path(data) / "train.tsv"), read_ner(Path(data) / "test.tsv")
    dev = read_ner(Path(data) / "dev.tsv")
    tags = {t for split in (train, dev, test) for s in split for t in s.tags}
    labels = ["O"] + sorted(tags - {"O"}, key=lambda t: (t[2:], t[:1]))
    index = {label: i for i, label in enumerate(labels)}
    tokenizer = AutoTokenizer.from_pretrained(minilm())

    def encode(sentences):
        items, word_ids = [], []
        for sentence in sentences:
            encoded = tokenizer(sentence.words, is_split_into_words=True, truncation=True)
            ids, previous, row = encoded.word_ids(), None, []
            for w in ids:
                row.append(-100 if w is None or w == previous else index[sentence.tags[w]])
                previous = w
            items.append({**{k: encoded[k] for k in ("input_ids", "attention_mask", "token_type_ids")}, "labels": row})
            word_ids.append(ids)
        return items, word_ids

    train_items, _ = encode(train)
    test_items, test_word_ids = encode(test)
    arguments = TrainingArguments(output_dir=os.path.join(work, f"hf-{Path(data).name}-{seed}"), seed=seed,
                                  per_device_eval_batch_size=64, save_strategy="no", report_to="none",
                                  disable_tqdm=True, logging_strategy="no")
    trainer = Trainer(model_init=lambda: AutoModelForTokenClassification.from_pretrained(minilm(), num_labels=len(labels)),
                      args=arguments, train_dataset=train_items, data_collator=DataCollatorForTokenClassification(tokenizer))
    result = trainer.train()
    logits = trainer.predict(test_items).predictions
    predicted = []
    for row, (ids, sentence) in enumerate(zip(test_word_ids, test)):
        sentence_tags, previous = ["O"] * len(sentence.words), None
        for position, w in enumerate(ids):
            if w is not None and w != previous:
                sentence_tags[w] = labels[int(logits[row, position].argmax())]
            previous = w
        predicted.append(sentence_tags)
    scores = entity_scores([s.tags for s in test], predicted)
    print(json.dumps({"f1": scores["f1"], "train_seconds": round(result.metrics["train_runtime"], 1)}))


def summarise(runs):
    out = {}
    for side in ("biozoo", "transformers"):
        f1 = [r[side]["f1"] for r in runs]
        out[side] = {"f1_mean": round(statistics.mean(f1), 2),
                     "f1_sd": round(statistics.stdev(f1), 2) if len(f1) > 1 else 0.0,
                     "f1": [round(x, 2) for x in f1],
                     "train_seconds_mean": round(statistics.mean(r[side]["train_seconds"] for r in runs), 1)}
    out["f1_difference"] = round(out["biozoo"]["f1_mean"] - out["transformers"]["f1_mean"], 2)
    # transformers' seconds / biozoo's: a speed ratio (> 1: biozoo trains faster). Called `train_time_ratio` before
    # 2026-11-29, where the other benchmarks' "time ratio" is a ratio of times (the inverse).
    out["speed_ratio"] = round(out["transformers"]["train_seconds_mean"] / out["biozoo"]["train_seconds_mean"], 2)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", default=",".join(CORPORA), help=f"comma list of {', '.join(CORPORA)}")
    parser.add_argument("--train-sentences", type=int, default=2000)
    parser.add_argument("--seeds", default="1,2,3", help="comma list; both sides run once per seed")
    parser.add_argument("--hf-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--work", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hf_child:
        return hf_child(args.hf_child, args.seed, args.work)
    seeds = [int(s) for s in args.seeds.split(",")]
    data = shared_data()
    work = Path(tempfile.mkdtemp(prefix="biozoo-defaults-"))
    report = {"train_sentences": args.train_sentences, "seeds": seeds}
    for corpus in args.corpora.split(","):
        subset = subset_corpus(data / "ner" / corpus, args.train_sentences, work / corpus)
        runs = []
        for seed in seeds:
            start = time.time()
            run = {"seed": seed, "biozoo": biozoo_side(subset, seed, work),
                   "transformers": transformers_side(subset, seed, work)}
            runs.append(run)
            print(json.dumps({"corpus": corpus, **run, "wall_seconds": round(time.time() - start)}), flush=True)
        report[corpus] = summarise(runs)
        print(json.dumps({corpus: report[corpus]}), flush=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
