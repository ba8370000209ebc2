"""Fine-tune the real MiniLM-L6 checkpoint with biozoo and with HF transformers (PyTorch) in
the same run, on the same data and recipe, and compare test scores and training speed.

Recipe (both sides): 3 epochs, learning rate 5e-5, batch 32, max length 128, 10 % linear
warmup (rounded up) then linear decay, AdamW (weight decay 0.01, none on biases and
LayerNorms), gradient clipping at global norm 1.0 (`--clip-norm`; biozoo's default and the
HF Trainer's), first-sub-token labels for NER. Both sides draw random batches; transformers pads each batch
to its longest example (DataCollatorForTokenClassification / DataCollatorWithPadding, as its
examples do), biozoo runs each batch as 4 length-sorted micro-batches with one update (the
whole batch's update, less padding). Scores are computed the same way for both: entity-level
F1 over every word of the test sentences (conlleval rules), ChemProt micro-F1 over the CPR
classes.

    .venv/bin/python benchmarks/finetune_vs_hf.py                 # NCBI-disease and ChemProt
    .venv/bin/python benchmarks/finetune_vs_hf.py --tasks ner --epochs 1
    .venv/bin/python benchmarks/finetune_vs_hf.py --tasks re --max-train 4000 --seeds 42,43,44
    .venv/bin/python benchmarks/finetune_vs_hf.py --step-times 40      # only the per-step rows
    .venv/bin/python benchmarks/finetune_vs_hf.py --tasks ner --epochs 1 --backends tensorflow,jax,torch

`--backends`: biozoo runs once per Keras backend (each `biozoo finetune` in its own process,
KERAS_BACKEND set there), against the same transformers run; the report gives each backend's
F1 and throughput ratio to transformers, and each backend's training time as a ratio to
TensorFlow's (the anchor, measured in the same run).

`--step-times N` times N training steps on the same NCBI-disease and ChemProt batches for
both sides, with and without clipping, steps interleaved so that the machine's drift falls on
all four alike: the median time of a step, what clipping adds to it, and the ratio of the two
sides' step times with clipping on (examples per second, since the batches are the same).

Targets: F1 within 1.0 point of transformers or better; throughput ratio >= 1.5 with both
sides clipping; clipping adds <= 5 % to biozoo's step; JAX at least as fast as TensorFlow.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _shared import jax_compilation_cache, minilm, shared_data

import biozoo  # noqa: F401  (first: where triton is installed it must load before TensorFlow)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def mean(values):
    return round(sum(values) / max(len(values), 1), 4)


# ---- transformers side --------------------------------------------------------------------


def torch_optimizer(model, lr, steps, warmup_ratio, weight_decay):
    import math

    import torch
    from transformers import get_linear_schedule_with_warmup

    no_decay = ("bias", "LayerNorm.weight", "LayerNorm.bias")
    groups = [
        {"params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)], "weight_decay": weight_decay},
        {"params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=lr, eps=1e-8)
    return optimizer, get_linear_schedule_with_warmup(optimizer, math.ceil(steps * warmup_ratio), steps)


def hf_train(model, batches_fn, epochs, lr, warmup_ratio, weight_decay, seed, clip_norm, device="cpu", bf16=False):
    """Train `model` (on `device`, under bf16 autocast with `bf16`); the seconds of the loop."""
    import torch

    torch.manual_seed(seed)
    steps = epochs * len(batches_fn(0))
    optimizer, schedule = torch_optimizer(model, lr, steps, warmup_ratio, weight_decay)
    model.train()
    losses = []
    start = time.time()
    for epoch in range(epochs):
        for batch in batches_fn(epoch):
            with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
                loss = model(**{key: value.to(device) for key, value in batch.items()}).loss
            loss.backward()
            if clip_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            losses.append(loss.detach())  # read after the loop: no wait for the device at each step
    losses = [loss.item() for loss in losses]
    seconds = time.time() - start
    print(json.dumps({"transformers_train_loss_first": mean(losses[:10]),
                      "transformers_train_loss_last": mean(losses[-10:])}), flush=True)
    return seconds


def hf_ner(train, evaluated, labels, hp, checkpoint=None, device="cpu", bf16=False):
    """transformers' token classifier fine-tuned on `train` from `checkpoint` (default: the real
    MiniLM-L6): the training seconds, and the predicted tags of each list of sentences in
    `evaluated` (one list, or a tuple of lists)."""
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer, DataCollatorForTokenClassification

    checkpoint = checkpoint or minilm()
    index = {label: i for i, label in enumerate(labels)}
    torch.manual_seed(hp["seed"])  # the new head
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model = AutoModelForTokenClassification.from_pretrained(checkpoint, num_labels=len(labels)).to(device)
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

    seconds = hf_train(model, batches, hp["epochs"], hp["lr"], hp["warmup"], hp["wd"], hp["seed"], hp["clip"],
                       device, bf16)
    model.eval()
    predictions = []
    for sentences in (evaluated if isinstance(evaluated, tuple) else (evaluated,)):
        predicted = []
        encoded = encode(sentences, with_labels=False)
        with torch.inference_mode(), torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            for k in range(0, len(encoded), 64):
                chunk = encoded[k:k + 64]
                batch = {key: value.to(device) for key, value in collator([item for item, _ in chunk]).items()}
                logits = model(**batch).logits.argmax(-1).cpu().numpy()
                for row, ((_, word_ids), sentence) in enumerate(zip(chunk, sentences[k:k + 64])):
                    tags, previous = ["O"] * len(sentence.words), None  # truncated words: "O"
                    for position, w in enumerate(word_ids):
                        if w is not None and w != previous:
                            tags[w] = labels[logits[row, position]]
                        previous = w
                    predicted.append(tags)
        predictions.append(predicted)
    return seconds, predictions if isinstance(evaluated, tuple) else predictions[0]


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

    seconds = hf_train(model, batches, hp["epochs"], hp["lr"], hp["warmup"], hp["wd"], hp["seed"], hp["clip"])
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


def biozoo_run(kind, data_dir, hp, backend, keep_jax_cache=False):
    """`biozoo finetune` with the recipe under KERAS_BACKEND=`backend`, in its own process: its
    metrics.json, output folder and JAX compilation cache record (a fresh, empty cache unless
    `keep_jax_cache`: see _shared.jax_compilation_cache; {} for the other backends)."""
    output = tempfile.mkdtemp(prefix=f"biozoo-bench-{kind}-{backend}-")
    argv = [sys.executable, "-m", "biozoo", "finetune", kind, "--preset", minilm(), "--data", str(data_dir),
            "--output", output, "--overwrite", "--epochs", str(hp["epochs"]), "--batch-size", str(hp["batch"]),
            "--learning-rate", str(hp["lr"]), "--max-seq-length", str(hp["max_len"]), "--seed", str(hp["seed"]),
            "--warmup-ratio", str(hp["warmup"]), "--weight-decay", str(hp["wd"])]
    if hp["clip"]:
        argv += ["--clip-norm", str(hp["clip"])]
    with jax_compilation_cache(keep_jax_cache) as (cache_env, cache):
        env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3", **cache_env}
        result = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=ROOT)
    if result.returncode:
        raise SystemExit(f"biozoo on {backend}: {result.stderr[-3000:]}")
    with open(os.path.join(output, "metrics.json"), encoding="utf-8") as f:
        return json.load(f), output, (cache if backend == "jax" else {})


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


def summary(runs, units, unit_name, backends):
    """Mean (and sample standard deviation, for several seeds) of each side's test scores, the
    difference of the means to transformers', and training throughput over all runs; each
    backend's training time as a ratio to TensorFlow's where both ran."""
    import statistics

    sides = [f"biozoo_{backend}" for backend in backends] + ["transformers"]
    out = {"seeds": [r["seed"] for r in runs]}
    for side in sides:
        f1 = [r[side]["f1"] for r in runs]
        out[f"{side}_test_f1"] = round(statistics.mean(f1), 2)
        if len(runs) > 1:
            out[f"{side}_test_f1_sd"] = round(statistics.stdev(f1), 2)
        out[f"{side}_test_precision_recall"] = [round(statistics.mean(r[side]["precision"] for r in runs), 2),
                                                 round(statistics.mean(r[side]["recall"] for r in runs), 2)]
        seconds = sum(r[side]["seconds"] for r in runs)
        out[f"{side}_train_seconds"] = round(seconds, 1)
        out[f"{side}_{unit_name}_per_second"] = round(units * len(runs) / seconds, 2)
    for side in sides[:-1]:
        if any("jax_cache_cold" in r[side] for r in runs):  # one flag per seed: did JAX start from an empty cache
            out[f"{side}_jax_cache_cold"] = [r[side].get("jax_cache_cold") for r in runs]
        out[f"{side}_f1_difference"] = round(out[f"{side}_test_f1"] - out["transformers_test_f1"], 2)
        out[f"{side}_throughput_ratio"] = round(out["transformers_train_seconds"] / out[f"{side}_train_seconds"], 2)
        if side != "biozoo_tensorflow" and "biozoo_tensorflow" in sides:
            out[f"{side}_time_ratio_to_tensorflow"] = round(
                out[f"{side}_train_seconds"] / out["biozoo_tensorflow_train_seconds"], 2)
    if len(runs) > 1:
        out["per_seed_f1"] = [[r["seed"]] + [round(r[side]["f1"], 2) for side in sides] for r in runs]
    return out


# ---- per-step times ------------------------------------------------------------------------


def step_times(kind, folder, steps, hp, warmup_steps=3):
    """Median seconds of a training step, clipping off and on, for biozoo (`biozoo finetune`'s
    step: 4 length-sorted micro-batches on a CPU) and transformers (forward, backward,
    clip_grad_norm_, AdamW and schedule step), all on the same random batches."""
    import statistics

    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification

    from biozoo.optim import make_optimizer
    from biozoo.tasks.adapters import adapter_for
    from biozoo.train.finetune import Hyperparameters, micro_batches
    from biozoo.train.run import set_seed

    params = Hyperparameters(batch_size=hp["batch"], max_seq_length=hp["max_len"], learning_rate=hp["lr"],
                             seed=hp["seed"])
    adapter = adapter_for(kind)
    examples = adapter.load(folder, only="train")["train"]
    examples = random.Random(hp["seed"]).sample(examples, hp["batch"] * (steps + warmup_steps))
    total = steps + warmup_steps
    tasks = {}
    for clip in (False, True):
        set_seed(hp["seed"])
        task = adapter.build_task(minilm(), {"train": examples}, params)
        task.compile(optimizer=make_optimizer("adamw", hp["lr"], total, hp["warmup"], hp["wd"],
                                              clip_norm=hp["clip"] if clip else None), jit_compile=False)
        task.micro_batches = micro_batches(params, task, hp["batch"], False)
        task.make_train_function()
        tasks[clip] = task
    batches = list(adapter.batches(tasks[False], examples, params, training=True).dataset_from(0).take(total))
    torch.manual_seed(hp["seed"])
    vocabulary = tasks[False].backbone.get_config()["vocabulary_size"]
    if kind == "ner":
        hf = AutoModelForTokenClassification.from_pretrained(minilm(), num_labels=len(tasks[False].label_names))
    else:
        hf = AutoModelForSequenceClassification.from_pretrained(minilm(), num_labels=len(tasks[False].label_names))
        hf.resize_token_embeddings(vocabulary)  # the entity markers
    optimizer, schedule = torch_optimizer(hf, hp["lr"], 2 * total, hp["warmup"], hp["wd"])
    hf.train()

    def biozoo_step(clip, x, y):
        logs = tasks[clip].train_function(iter([(x, y)]))
        float(np.asarray(logs["loss"]))

    def torch_step(clip, x, y):
        # padded to the batch's longest example, as transformers' collators pad
        width = int(np.asarray(x["padding_mask"]).sum(1).max())
        x = {key: value[:, :width] for key, value in x.items()}
        y = y[:, :width] if kind == "ner" else y
        loss = hf(input_ids=torch.tensor(x["token_ids"].numpy(), dtype=torch.long),
                  attention_mask=torch.tensor(x["padding_mask"].numpy(), dtype=torch.long),
                  token_type_ids=torch.tensor(x["segment_ids"].numpy(), dtype=torch.long),
                  labels=torch.tensor(y.numpy(), dtype=torch.long)).loss
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(hf.parameters(), hp["clip"])
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        loss.item()

    times = {(side, clip): [] for side in ("biozoo", "transformers") for clip in (False, True)}
    for index, (x, y) in enumerate(batches):
        for side, step in (("biozoo", biozoo_step), ("transformers", torch_step)):
            for clip in ((False, True) if index % 2 else (True, False)):
                start = time.perf_counter()
                step(clip, x, y)
                if index >= warmup_steps:  # the first steps trace biozoo's train function
                    times[side, clip].append(time.perf_counter() - start)
    out = {"steps": steps, "batch": hp["batch"], "micro_batches": tasks[False].micro_batches}
    for side in ("biozoo", "transformers"):
        off, on = (statistics.median(times[side, clip]) for clip in (False, True))
        out[side] = {"step_ms": round(1000 * off, 1), "step_ms_clipping": round(1000 * on, 1),
                     "clipping_cost_percent": round(100 * (on - off) / off, 1)}
    out["throughput_ratio_clipping"] = round(out["transformers"]["step_ms_clipping"] / out["biozoo"]["step_ms_clipping"], 2)
    out["throughput_ratio"] = round(out["transformers"]["step_ms"] / out["biozoo"]["step_ms"], 2)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="ner,re", help="comma list of ner, re")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-train", type=int, default=0,
                        help="re: train on a random subset of this size (drawn once, with the first seed)")
    parser.add_argument("--clip-norm", type=float, default=1.0,
                        help="both sides clip the gradient at this global norm (0: neither)")
    parser.add_argument("--step-times", type=int, default=0,
                        help="time this many steps per task, clipping on and off, instead of whole runs")
    parser.add_argument("--backends", default="tensorflow",
                        help="comma list of Keras backends biozoo runs on (tensorflow, jax, torch), each "
                        "against the same transformers run; --step-times runs on TensorFlow")
    parser.add_argument("--seeds", default="42",
                        help="comma list of seeds; both sides run once per seed, and several seeds report "
                        "the mean and sample standard deviation of each side's F1")
    parser.add_argument("--keep-jax-cache", action="store_true",
                        help="JAX: use $BIOZOO_CACHE/jax-compilation as it is (default: each biozoo run gets a "
                        "fresh, empty one, so that its time does not depend on earlier runs; the report records "
                        "whether each JAX run started cold)")
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    backends = args.backends.split(",")
    hp = {"epochs": args.epochs, "lr": 5e-5, "batch": 32, "max_len": 128, "warmup": 0.1, "wd": 0.01,
          "clip": args.clip_norm or None}
    data = shared_data()
    report = {"recipe": hp, "jax_compilation_cache": "kept ($BIOZOO_CACHE/jax-compilation or "
              "JAX_COMPILATION_CACHE_DIR)" if args.keep_jax_cache else "fresh and empty for each biozoo run"}
    import torch

    report["torch_threads"] = torch.get_num_threads()
    if args.step_times:
        folders = {"ner": data / "ner" / "NCBI-disease", "re": data / "re" / "chemprot"}
        for kind in args.tasks.split(","):
            report[f"{kind}_step_times"] = step_times(kind, folders[kind], args.step_times,
                                                      dict(hp, seed=seeds[0], clip=args.clip_norm or 1.0))
            print(json.dumps({kind: report[f"{kind}_step_times"]}), flush=True)
        print(json.dumps(report, indent=2))
        return

    def scores(values, seconds, cache=None):
        return {"f1": values["f1"], "precision": values["precision"], "recall": values["recall"], "seconds": seconds,
                **({"jax_cache_cold": cache["jax_cache_cold"]} if cache else {})}

    if "ner" in args.tasks:
        from biozoo.data.ner import find_split, read_ner
        from biozoo.metrics.ner import entity_scores

        folder = data / "ner" / "NCBI-disease"
        train, test = read_ner(find_split(folder, "train")), read_ner(find_split(folder, "test"))
        labels = ["O", "B-Disease", "I-Disease"]
        runs = []
        for seed in seeds:
            seeded = dict(hp, seed=seed)
            run = {"seed": seed}
            for backend in backends:
                metrics, _, cache = biozoo_run("ner", folder, seeded, backend, args.keep_jax_cache)
                run[f"biozoo_{backend}"] = scores(metrics["test"], metrics["train_seconds"], cache)
            hf_seconds, hf_tags = hf_ner(train, test, labels, seeded)
            run["transformers"] = scores(entity_scores([s.tags for s in test], hf_tags), hf_seconds)
            runs.append(run)
            print(json.dumps({"ner_seed": seed, **{f"{side}_f1": round(run[side]["f1"], 2) for side in run
                                                   if side != "seed"}}), flush=True)
        report["ner_ncbi_disease"] = summary(runs, hp["epochs"] * len(train), "sentences", backends)
        print(json.dumps(report["ner_ncbi_disease"]), flush=True)

    if "re" in args.tasks:
        from biozoo.data.relation import read_relation
        from biozoo.metrics.relation import micro_prf
        from biozoo.presets import resolve

        folder = data / "re" / "chemprot"
        if args.max_train:
            folder = subset_relation_data(folder, args.max_train, seeds[0])
        train, test = read_relation(folder / "train.tsv"), read_relation(folder / "test.tsv")
        labels = sorted({e.label for e in train + test})
        runs = []
        for seed in seeds:
            seeded = dict(hp, seed=seed)
            run = {"seed": seed}
            for backend in backends:
                metrics, output, cache = biozoo_run("re", folder, seeded, backend, args.keep_jax_cache)
                run[f"biozoo_{backend}"] = scores(metrics["test"], metrics["train_seconds"], cache)
            markers = resolve(output).task_options["added_tokens"]  # the entity markers biozoo added
            hf_seconds, hf_labels = hf_re(train, test, labels, markers, seeded)
            run["transformers"] = scores(micro_prf([e.label for e in test], hf_labels, "False"), hf_seconds)
            runs.append(run)
            print(json.dumps({"re_seed": seed, **{f"{side}_micro_f1": round(run[side]["f1"], 2) for side in run
                                                  if side != "seed"}}), flush=True)
        report["re_chemprot"] = {"train_examples": len(train),
                                 **summary(runs, hp["epochs"] * len(train), "examples", backends)}
        print(json.dumps(report["re_chemprot"]), flush=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
