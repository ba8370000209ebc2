"""Fine-tuning numerics equal transformers': the same start (weights, added marker rows,
classifier head), the same batches and the same recipe (AdamW, no decay on biases and
LayerNorms, linear warmup and decay), dropout off on both sides, give the same loss at every
step.

Two controls show that the tolerance can fail: stock Keras AdamW (which squares each
embedding-gradient slice on its own and adds epsilon before bias correction) and a learning
rate 10 % off on the transformers side both land far outside it.

Backend-neutral: `make test` runs it under TensorFlow, JAX and PyTorch."""

import itertools
import random

import keras
import numpy as np
import pytest

pytestmark = pytest.mark.backends

LABELS = ["CPR:3", "CPR:4", "False"]
WORDS = ["binding", "of", "to", "inhibits", "expression", "the", "cells", "protein", "activity", "levels",
         "increased", "reduced", "in", "patients", "with", "cancer", "receptor", "gene", "and", "by"]


def synthetic_relations(n=48, seed=0):
    """Sentences with ChemProt's masks; the label's cue word sits between the two entities."""
    from biozoo.data.relation import RelationExample

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        label = LABELS[i % 3]
        cue = {"CPR:3": "increased", "CPR:4": "inhibits", "False": "and"}[label]
        words = list(rng.choice(WORDS, rng.integers(4, 20)))
        words[rng.integers(0, len(words)):0] = ["BC6ENTC", cue, "BC6ENTG"]
        if rng.random() < 0.5:
            words.append("BC6OTHER")
        out.append(RelationExample(id=str(i), text=" ".join(words), label=label))
    return out


def train_both(model_dir, examples, steps, lr, batch_size=8, max_seq_length=32, keras_optimizer=None,
               micro_batches=1, clip_norm=None, hf_norms=None, hf_variants=()):
    """Per-step training losses (biozoo, transformers) from one start on the same batches.

    `clip_norm`: both clip at this global norm (transformers through clip_grad_norm_, appending the
    norm it saw to `hf_norms`). `hf_variants`: more transformers models from the same start take the
    same steps, each with its own learning-rate factor or clipping norm ({"lr_factor": 1.1},
    {"clip_norm": None}); their losses follow, in order."""
    import keras
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from biozoo import presets
    from biozoo.optim import make_optimizer
    from biozoo.tasks.adapters.relation import RelationAdapter
    from biozoo.train.finetune import Hyperparameters
    from biozoo.train.run import set_seed

    labels = sorted({e.label for e in examples})
    hp = Hyperparameters(batch_size=batch_size, max_seq_length=max_seq_length, learning_rate=lr,
                         weight_decay=0.01, warmup_ratio=0.25)
    set_seed(0)
    torch.manual_seed(0)
    adapter = RelationAdapter()
    task = adapter.build_task(presets.resolve_preset(str(model_dir)), {"train": examples}, hp)
    assert task.label_names == labels and adapter.added_tokens

    hf = AutoModelForSequenceClassification.from_pretrained(
        model_dir, num_labels=len(labels), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.add_tokens(adapter.added_tokens)
    hf.resize_token_embeddings(len(tokenizer))
    # One start for both: transformers' new marker rows (sampled near the mean) and its head.
    embedding = task.backbone.get_layer("token_embedding").embeddings
    rows = hf.get_input_embeddings().weight.detach().numpy()
    assert embedding.shape == rows.shape
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(embedding)[: -len(adapter.added_tokens)],
                                  rows[: -len(adapter.added_tokens)])
    embedding.assign(rows)
    task.output_dense.kernel.assign(hf.classifier.weight.detach().numpy().T)
    task.output_dense.bias.assign(hf.classifier.bias.detach().numpy())
    for layer in task._flatten_layers():
        if isinstance(layer, keras.layers.Dropout):
            layer.rate = 0.0

    batches = adapter.batches(task, examples, hp, training=True)
    task.micro_batches = micro_batches
    task.compile(optimizer=(keras_optimizer or make_optimizer)("adamw", lr, steps, hp.warmup_ratio, hp.weight_decay,
                                                               clip_norm=clip_norm),
                 jit_compile=keras.backend.backend() == "jax")  # JAX unjitted runs op by op: slow

    steps_batches = list(itertools.islice(batches.batches_from(0), steps))
    ours = []
    for x, y in steps_batches:
        ours.append(float(task.train_on_batch(x, y, return_dict=True)["loss"]))
        task.reset_metrics()
    arms = [{"clip_norm": clip_norm, "lr_factor": 1.0}] + [
        {"clip_norm": variant.get("clip_norm", clip_norm), "lr_factor": variant.get("lr_factor", 1.0)}
        for variant in hf_variants]
    recipe = {"lr": lr, "steps": steps, "warmup_steps": round(hp.warmup_ratio * steps),
              "weight_decay": hp.weight_decay, "arms": arms}
    theirs, norms = transformers_losses(hf, steps_batches, recipe)
    if hf_norms is not None:
        hf_norms.extend(norms)
    return (np.array(ours), *map(np.array, theirs))


def transformers_losses(model, batches, recipe):
    """transformers' losses at every step of each arm of `recipe` (a copy of `model` each, with its
    own clip norm and learning-rate factor), and the first arm's gradient norms.

    `make test` runs this file under TensorFlow, JAX and PyTorch, and this side is the same torch
    computation in each: a later pass of one run reads what an earlier one computed from identical
    inputs, from the folder BIOZOO_TEST_REFERENCES (the Makefile empties it when `make test` starts),
    under a digest of the model's config and start weights, every batch, the recipe and the torch
    and transformers versions. Without the variable, always computed."""
    import copy
    import hashlib
    import json
    import os
    import tempfile
    from pathlib import Path

    import torch
    import transformers
    from transformers import get_linear_schedule_with_warmup

    digest = hashlib.sha256(json.dumps([recipe, torch.__version__, transformers.__version__]).encode()
                            + model.config.to_json_string().encode())  # dropout, loss and labels live there
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode() + tensor.detach().numpy().tobytes())
    for x, y in batches:
        for array in [*(x[key] for key in sorted(x)), y]:
            array = np.asarray(array)
            digest.update(f"{array.dtype}{array.shape}".encode() + array.tobytes())
    folder = os.environ.get("BIOZOO_TEST_REFERENCES")
    stored = Path(folder) / f"{digest.hexdigest()}.json" if folder else None
    if stored is not None and stored.exists():
        saved = json.loads(stored.read_text(encoding="utf-8"))
        return saved["losses"], saved["norms"]

    no_decay = ("bias", "LayerNorm.weight", "LayerNorm.bias")
    models = [model] + [copy.deepcopy(model) for _ in recipe["arms"][1:]]  # all from the same start
    losses, norms = [], []
    for index, (arm, arm_model) in enumerate(zip(recipe["arms"], models)):
        named = list(arm_model.named_parameters())
        optimizer = torch.optim.AdamW(
            [{"params": [p for n, p in named if not any(k in n for k in no_decay)],
              "weight_decay": recipe["weight_decay"]},
             {"params": [p for n, p in named if any(k in n for k in no_decay)], "weight_decay": 0.0}],
            lr=recipe["lr"] * arm["lr_factor"], eps=1e-8)
        schedule = get_linear_schedule_with_warmup(optimizer, recipe["warmup_steps"], recipe["steps"])
        arm_model.train()
        losses.append([])
        for x, y in batches:
            loss = arm_model(input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
                             attention_mask=torch.tensor(x["padding_mask"], dtype=torch.long),
                             token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long),
                             labels=torch.tensor(y, dtype=torch.long)).loss
            loss.backward()
            if arm["clip_norm"]:
                norm = torch.nn.utils.clip_grad_norm_(arm_model.parameters(), arm["clip_norm"])
                if index == 0:
                    norms.append(float(norm))
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            losses[-1].append(loss.item())
    if stored is not None:
        stored.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=stored.parent, suffix=".tmp", delete=False) as out:
            json.dump({"losses": losses, "norms": norms}, out)
        os.replace(out.name, stored)
    return losses, norms


def stock_keras_adamw(name, lr, steps, warmup_ratio, weight_decay, clip_norm=None):
    """Keras' own AdamW with our schedule, settings and weight-decay exclusions."""
    import keras

    from biozoo.optim import NO_DECAY, LinearWarmupDecay

    stock = keras.optimizers.AdamW(learning_rate=LinearWarmupDecay(lr, steps, round(warmup_ratio * steps)),
                                   weight_decay=weight_decay, beta_1=0.9, beta_2=0.999, epsilon=1e-8,
                                   global_clipnorm=clip_norm)
    stock.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return stock


@pytest.fixture(scope="module")
def tiny_results(tiny_bert_real_vocab):
    pytest.importorskip("torch")
    examples = synthetic_relations()
    clip_norms = []
    # the tiny model's gradient norms are 0.15 to 1.7: clipping at 0.1 is active on every step
    ours, theirs, theirs_unclipped = train_both(tiny_bert_real_vocab, examples, steps=24, lr=1e-2, micro_batches=4,
                                                clip_norm=0.1, hf_norms=clip_norms, hf_variants=[{"clip_norm": None}])
    plain, plain_theirs, theirs_lr_off = train_both(tiny_bert_real_vocab, examples, steps=24, lr=1e-2,
                                                    hf_variants=[{"lr_factor": 1.1}])
    return {
        "clip": (ours, theirs),
        "clip_norms": clip_norms,
        "clipped_here_only": (ours, theirs_unclipped),
        "ours": (plain, plain_theirs),
        "lr_off": (plain, theirs_lr_off),
        "micro": train_both(tiny_bert_real_vocab, examples, steps=24, lr=1e-2, micro_batches=4),
        "stock": train_both(tiny_bert_real_vocab, examples, steps=24, lr=1e-2, keras_optimizer=stock_keras_adamw),
    }


@pytest.mark.parametrize("run", ["ours", "micro", "clip"])
def test_fine_tuning_losses_equal_transformers_step_by_step(tiny_results, run):
    """One batch per step, or each batch as 4 length-sorted micro-batches (biozoo finetune's
    default on CPUs), or that with the gradient clipped at global norm 0.1 (clip_grad_norm_ on
    the transformers side): transformers' steps on the whole padded batch, loss for loss."""
    ours, theirs = tiny_results[run]
    assert len(ours) == 24
    # it learns the cue words (clipped at 0.1, more slowly)
    assert theirs[-4:].mean() < theirs[0] - (0.05 if run == "clip" else 0.1)
    print(f"{run}: max |loss difference| {np.abs(ours - theirs).max():.2e}")
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=5e-5)


def test_clipping_is_active_on_most_steps_of_the_clipped_comparison(tiny_results):
    norms = np.asarray(tiny_results["clip_norms"])
    assert len(norms) == 24 and (norms > 0.1).mean() >= 0.75, norms


@pytest.mark.parametrize("control", ["lr_off", "stock", "clipped_here_only"])
def test_the_step_by_step_comparison_can_fail(tiny_results, control):
    """A learning rate 10 % off on the transformers side, stock Keras AdamW, and clipping on biozoo's
    side only (transformers unclipped) all land far outside the tolerance."""
    if control == "stock" and keras.backend.backend() != "tensorflow":
        pytest.skip("stock AdamW parts from torch's through TensorFlow's sparse embedding gradients; JAX's and "
                    "PyTorch's are dense")
    ours, theirs = tiny_results["ours"]
    a, b = tiny_results[control]
    assert np.abs(a - b).max() > 1e-3 > 10 * np.abs(ours - theirs).max()


@pytest.fixture(scope="module")
def chemprot_runs(minilm_dir, shared_data):
    """The real checkpoint on 640 real ChemProt training sentences (six classes, 40 steps of
    batch 16 run as 4 micro-batches, at most 64 tokens, warmup then decay at lr 5e-5), clipped at global norm 1.0
    as `biozoo finetune` and the HF Trainer do by default; the control: a second transformers model from the
    same start takes the same steps unclipped (clipping on one side only)."""
    pytest.importorskip("torch")
    from biozoo.data.relation import read_relation

    rows = read_relation(shared_data / "re" / "chemprot" / "train.tsv")
    random.Random(42).shuffle(rows)
    norms = []
    # 64 tokens (about 45 % of these sentences are cut) and 40 steps keep the suite inside CI's
    # time budget; the numerics compared are the same at any length.
    ours, theirs, theirs_unclipped = train_both(minilm_dir, rows[:640], steps=40, lr=5e-5, batch_size=16,
                                                max_seq_length=64, micro_batches=4, clip_norm=1.0, hf_norms=norms,
                                                hf_variants=[{"clip_norm": None}])
    return {"clip": (ours, theirs), "norms": norms, "clipped_here_only": (ours, theirs_unclipped)}


@pytest.mark.slow
def test_real_minilm_on_chemprot_sentences_follows_transformers(chemprot_runs):
    """Loss curves agree to 1e-4 at every step, with clipping active on most steps; with
    clipping on one side only they do not."""
    ours, theirs = chemprot_runs["clip"]
    norms = np.asarray(chemprot_runs["norms"])
    assert theirs[-10:].mean() < theirs[:10].mean() - 0.3  # it learns
    assert (norms > 1.0).mean() >= 0.5, norms
    a, b = chemprot_runs["clipped_here_only"]
    print(f"clipped on both sides: max |loss difference| {np.abs(ours - theirs).max():.2e}; clipped on biozoo's "
          f"side only: {np.abs(a - b).max():.2e}; norms above 1.0 on {(norms > 1).mean():.0%} of steps")
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-4)
    assert np.abs(a - b).max() > 1e-3
