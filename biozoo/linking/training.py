"""`biozoo finetune link`: adapt an encoder to a dictionary, SapBERT's way.

Training examples are synonym pairs: two names of one concept (a concept with one name is
paired with itself; dropout makes the two views differ). A batch holds pairs of several
concepts, and every other concept's names in it are negatives. Hard negatives come from the
current index: at the start of each epoch all names are embedded with the model being
trained, and each concept's pairs are put into a batch together with the pairs of the
concepts nearest to it, so the negatives a batch holds are the ones the model confuses.

Losses (keras.ops; any backend):
- `multi-similarity` (Wang et al. 2019, SapBERT's `ms_loss`: alpha 1, beta 60, base 0.5), on the
  pairs its own mining keeps (a positive below the hardest negative + 0.1, a negative above
  the easiest positive - 0.1);
- `infonce` (NT-Xent, temperature 0.07, SapBERT's `infoNCE` option).

The output is a preset directory any biozoo handle reads (`--link-encoder OUTPUT`), with
`linking.json` (pooling, max length, dictionary, training settings) and `metrics.json`.

Example:
    >>> metrics = finetune_linker(load_dictionary("my.tsv"), "sapbert_pubmedbert_fulltext", "out/linker")
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import sys
import time

import keras
import numpy as np
from keras import ops

from biozoo._io import atomic_directory, atomic_write_json, check_output
from biozoo._keras_internals import set_seed
from biozoo.choices import LINK_LOSSES, LINK_WARMUP_RATIO, LINK_WEIGHT_DECAY
from biozoo.linking.encoder import LINKING_FILE, NameEncoder, pool
from biozoo.linking.index import DenseIndex
from biozoo.optim import LinearWarmupDecay
from biozoo.preset_files import METRICS_FILE, write_preset

LOSSES = LINK_LOSSES


@dataclasses.dataclass(frozen=True)
class LinkTraining:
    """Settings of `finetune_linker` (SapBERT's where they apply: lr 2e-5, max length 25 unless the
    checkpoint declares its own)."""

    epochs: int = 1
    batch_pairs: int = 64  # pairs per batch: 2 x 64 names
    learning_rate: float = 2e-5
    weight_decay: float = LINK_WEIGHT_DECAY
    warmup_ratio: float = LINK_WARMUP_RATIO
    loss: str = "multi-similarity"
    hard_negatives: int = 4  # nearest concepts put in a batch with each concept (0: random batches)
    max_pairs_per_concept: int = 50
    max_length: int | None = None  # default: the checkpoint's own (encoder.max_length_of), else 25
    pooling: str | None = None  # default: the checkpoint's own (encoder.pooling_of), else cls
    seed: int = 42

    def __post_init__(self):
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}, got {self.loss!r}")
        if self.epochs < 1 or self.batch_pairs < 2:
            raise ValueError(f"epochs must be >= 1 and batch_pairs >= 2, got {self.epochs} and {self.batch_pairs}")


# ------------------------------------------------------------------ losses (keras.ops)

def _similarities(labels, embeddings):
    labels = ops.reshape(ops.cast(labels, "int32"), (-1,))
    sim = ops.matmul(embeddings, ops.transpose(embeddings))
    same = ops.cast(ops.equal(labels[:, None], labels[None, :]), sim.dtype)
    eye = ops.eye(ops.shape(labels)[0], dtype=sim.dtype)
    return sim, same - eye, 1.0 - same


def multi_similarity_loss(labels, embeddings, alpha=1.0, beta=60.0, base=0.5, epsilon=0.1):
    """Multi-similarity loss of unit embeddings [n, d] with concept `labels` [n], mined pairs only."""
    sim, positive, negative = _similarities(labels, embeddings)
    big = 1e4
    hardest_negative = ops.max(sim - big * (1.0 - negative), axis=1, keepdims=True)
    easiest_positive = ops.min(sim + big * (1.0 - positive), axis=1, keepdims=True)
    positive = positive * ops.cast(sim - epsilon < hardest_negative, sim.dtype)
    negative = negative * ops.cast(sim + epsilon > easiest_positive, sim.dtype)
    pos_term = ops.log(1.0 + ops.sum(positive * ops.exp(-alpha * (sim - base)), axis=1)) / alpha
    neg_term = ops.log(1.0 + ops.sum(negative * ops.exp(beta * (sim - base)), axis=1)) / beta
    active = ops.cast((ops.sum(positive, axis=1) + ops.sum(negative, axis=1)) > 0, sim.dtype)
    return ops.sum((pos_term + neg_term) * active) / ops.maximum(ops.sum(active), 1.0)


def infonce_loss(labels, embeddings, temperature=0.07):
    """NT-Xent: per positive pair (a, p), -log(e^(s_ap/t) / (e^(s_ap/t) + sum over a's negatives))."""
    sim, positive, negative = _similarities(labels, embeddings)
    logits = sim / temperature
    shift = ops.stop_gradient(ops.max(logits, axis=1, keepdims=True))
    exp = ops.exp(logits - shift)
    negatives = ops.sum(exp * negative, axis=1, keepdims=True)
    per_pair = -(logits - shift) + ops.log(exp + negatives)
    return ops.sum(per_pair * positive) / ops.maximum(ops.sum(positive), 1.0)


LOSS_FUNCTIONS = {"multi-similarity": multi_similarity_loss, "infonce": infonce_loss}


# ------------------------------------------------------------------ batches

def synonym_pairs(dictionary, max_per_concept=50, rng=None):
    """{concept index: [(name, name), ...]}: every ordered pair of two names of a concept (up to
    `max_per_concept`), or the name with itself for a concept with one name."""
    rng = rng or random.Random(0)
    pairs = {}
    for index, concept in enumerate(dictionary.concepts):
        names = concept.all_names()
        if len(names) == 1:
            pairs[index] = [(names[0], names[0])]
            continue
        found = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
        rng.shuffle(found)
        pairs[index] = found[:max_per_concept]
    return pairs


def nearest_concepts(dictionary, vectors, k):
    """Per concept index, the `k` other concepts whose names are nearest to any of its names
    (`vectors`: the embeddings of `dictionary.names()`)."""
    owners = dictionary.names().concepts
    scores, rows = DenseIndex(vectors).search(vectors, 4 * k + 8)
    best = {}
    for row, (row_scores, row_rows) in enumerate(zip(scores, rows)):
        concept = int(owners[row])
        found = best.setdefault(concept, {})
        for score, other in zip(row_scores, row_rows):
            if other >= 0 and int(owners[other]) != concept:
                o = int(owners[other])
                found[o] = max(found.get(o, -np.inf), float(score))
    return {c: [o for o, _ in sorted(found.items(), key=lambda kv: -kv[1])[:k]] for c, found in best.items()}


def epoch_batches(pairs, batch_pairs, neighbours, rng):
    """Batches of (name, name, concept) for one epoch: each concept's pairs, followed by the
    pairs of its nearest concepts not placed yet, cut into batches of `batch_pairs`."""
    order = list(pairs)
    rng.shuffle(order)
    placed, stream = set(), []
    for concept in order:
        for member in [concept, *neighbours.get(concept, [])]:
            if member in placed or member not in pairs:
                continue
            placed.add(member)
            chosen = list(pairs[member])
            rng.shuffle(chosen)
            stream.extend((a, b, member) for a, b in chosen)
    return [stream[i:i + batch_pairs] for i in range(0, len(stream), batch_pairs)]


class PairBatches(keras.utils.PyDataset):
    """An epoch's batches for Keras: x the 2B names' model inputs (padded to the encoder's
    max length: one shape, one trace), y their concept labels."""

    def __init__(self, encoder, batches):
        super().__init__()
        self.encoder, self.batches = encoder, batches

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, i):
        batch = self.batches[i]
        names = [a for a, _, _ in batch] + [b for _, b, _ in batch]
        labels = np.asarray([c for _, _, c in batch] * 2, np.int32)
        return self.encoder.inputs(self.encoder.token_ids(names), self.encoder.max_length), labels


# ------------------------------------------------------------------ training

def embedding_model(encoder):
    """A Keras model: the backbone's inputs -> pooled unit vectors (what the loss reads)."""
    inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
              for name in ("token_ids", "segment_ids", "padding_mask")}
    sequence = encoder.backbone(inputs)["sequence_output"]
    pooled = pool(sequence, inputs["padding_mask"], encoder.pooling)
    return keras.Model(inputs, keras.ops.normalize(pooled, axis=-1, order=2))


def finetune_linker(dictionary, preset, output, settings=LinkTraining(), log=print, progress=True, overwrite=False):
    """Train `preset`'s encoder on `dictionary`'s synonyms; write OUTPUT (a preset with
    linking.json and metrics.json) in one rename; return the metrics. An earlier biozoo output
    at OUTPUT is replaced only with `overwrite` (checked before training)."""
    check_output(output, overwrite, [preset])
    set_seed(settings.seed)
    rng = random.Random(settings.seed)
    encoder = NameEncoder.from_preset(preset, pooling=settings.pooling, max_length=settings.max_length)
    pairs = synonym_pairs(dictionary, settings.max_pairs_per_concept, rng)
    n_pairs = sum(len(p) for p in pairs.values())
    steps_per_epoch = -(-n_pairs // settings.batch_pairs)
    total = steps_per_epoch * settings.epochs
    log(f"finetune link: {len(dictionary)} concepts, {len(dictionary.names())} names, {n_pairs} pairs; "
        f"{settings.epochs} epoch(s) of {steps_per_epoch} steps, {settings.loss} loss, "
        f"{settings.hard_negatives} hard-negative concepts per concept, pooling {encoder.pooling}")
    for layer in encoder.backbone.layers:  # the pooler is not part of a name's vector: not trained
        if layer.name == "pooled_dense":
            layer.trainable = False
    model = embedding_model(encoder)
    schedule = LinearWarmupDecay(settings.learning_rate, total, int(settings.warmup_ratio * total))
    model.compile(optimizer=keras.optimizers.AdamW(schedule, weight_decay=settings.weight_decay),
                  loss=LOSS_FUNCTIONS[settings.loss], jit_compile=False)
    losses, started = [], time.perf_counter()
    for epoch in range(settings.epochs):
        neighbours = {}
        if settings.hard_negatives:
            vectors = encoder.encode(dictionary.names().names, progress=progress)
            neighbours = nearest_concepts(dictionary, vectors, settings.hard_negatives)
        batches = epoch_batches(pairs, settings.batch_pairs, neighbours, rng)
        with contextlib.redirect_stdout(sys.stderr):  # Keras' progress bar: stdout carries results
            history = model.fit(PairBatches(encoder, batches), epochs=1, verbose=1 if progress else 0, shuffle=False)
        losses.append(float(history.history["loss"][-1]))
        log(f"epoch {epoch + 1}: loss {losses[-1]:.4f}")
    metrics = {"task": "link", "dictionary": dictionary.label, "concepts": len(dictionary),
               "names": len(dictionary.names()), "pairs": n_pairs, "steps": total, "epoch_losses": losses,
               "train_seconds": round(time.perf_counter() - started, 1), "settings": dataclasses.asdict(settings)}
    linking = {"pooling": encoder.pooling, "max_length": encoder.max_length, "base": os.fspath(preset),
               "dictionary": dictionary.label, "loss": settings.loss}
    with atomic_directory(output, overwrite, [preset]) as staging:
        write_preset(staging, encoder.backbone, encoder.tokenizer,
                     provenance={"format": "biozoo-link", "base": os.fspath(preset), "linking": linking})
        atomic_write_json(os.path.join(staging, LINKING_FILE), linking)
        atomic_write_json(os.path.join(staging, METRICS_FILE), metrics)
    return metrics


