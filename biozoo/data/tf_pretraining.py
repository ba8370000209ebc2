"""Pretraining data: plain-text corpora -> TFRecords of packed instances -> masked batches.

Corpus format: one sentence per line, a blank line between documents (BERT's
create_pretraining_data input). Every non-blank line is a sentence. Files may be local or
`gs://` (read and written through tf.io.gfile).

Instances are packed as BERT does: the sentences of a document are gathered up to the
target length (`max_seq_length`, or with probability `short_seq_prob` a shorter random one)
and become `[CLS] A [SEP]`, or `[CLS] A [SEP] B [SEP]` with a sentence task:

* ``"nsp"`` (BERT): B follows A (label 0) or, half the time, comes from another document (1);
* ``"sop"`` (ALBERT): B follows A (0) or A and B are swapped (1); a chunk of one sentence
  takes B from another document (1), as ALBERT's data script does.

Each corpus file becomes one TFRecord shard of unmasked instances (`token_ids`,
`segment_ids`, `sentence_label`). Shards are written under a temporary name and renamed, and a
`records.json` manifest lets a later run with the same corpus and settings reuse them.

Masking is dynamic (as ELECTRA's and RoBERTa's): `masked_dataset` masks each instance as it
is read, with a stateless RNG keyed on (seed, position in the stream), so every pass over the
data sees new masks while a run, or a resumed run, sees the same ones for the same seed.
15 % of the non-special tokens are predicted; with whole-word masking whole words are picked
(a WordPiece piece starting with "##", or a SentencePiece piece not starting with "▁",
continues the word before it) until the budget is reached, never more. A chosen piece becomes
[MASK] 80 % of the time, a random non-special token 10 % and stays unchanged 10 %.
[CLS], [SEP], [PAD] and [MASK] are never chosen.

Example:
    >>> tokenizer = biozoo.Tokenizer.from_preset("bioformer_8l")
    >>> files = write_pretraining_records(["pubmed.txt"], tokenizer, "records", 128, "nsp")
    >>> batches = masked_dataset(files, tokenizer, 128, batch_size=32, sentence_task="nsp")
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import uuid

import numpy as np

from biozoo._io import read_json
from biozoo.data import IGNORE_LABEL
from biozoo.errors import DataFormatError
from biozoo.tokenizers.sentencepiece import SentencePieceTokenizer

SENTENCE_TASKS = (None, "nsp", "sop")
FORMAT_VERSION = 1
MANIFEST = "records.json"
SPIECE_WORD_START = "\u2581"  # "▁"


# ---- corpus -----------------------------------------------------------------------------


def read_documents(path):
    """Documents of a corpus file: lists of sentences (lines), split at blank lines.

    Raises ValueError naming the file when it holds no text at all.
    """
    import tensorflow as tf

    documents, current = [], []
    with tf.io.gfile.GFile(os.fspath(path), "rb") as f:
        text = f.read().decode("utf-8")
    for line in text.splitlines():
        line = line.strip()
        if line:
            current.append(line)
        elif current:
            documents.append(current)
            current = []
    if current:
        documents.append(current)
    if not documents:
        raise ValueError(f"{path}: the corpus is empty (no text lines; expected one sentence per line, "
                         "a blank line between documents).")
    return documents


def tokenize_documents(documents, tokenizer, chunk=4096):
    """Token ids of every sentence, documents kept; sentences without tokens are dropped."""
    flat = [sentence for document in documents for sentence in document]
    ids = []
    for start in range(0, len(flat), chunk):
        ids.extend(tokenizer.ids(flat[start:start + chunk]))
    out, position = [], 0
    for document in documents:
        sentences = [s for s in ids[position:position + len(document)] if len(s)]
        position += len(document)
        if sentences:
            out.append(sentences)
    return out


# ---- instances --------------------------------------------------------------------------


def _truncate_pair(a, b, max_tokens, rng):
    """BERT's truncate_seq_pair: trim the longer side, from the front or the back at random."""
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def _concat(segments):
    return [t for segment in segments for t in segment]


def create_instances(documents, cls_id, sep_id, max_seq_length, sentence_task=None, seed=0,
                     short_seq_prob=0.1, dupe_factor=1):
    """Pack tokenized `documents` (lists of sentences of ids) into instances, as BERT's
    create_pretraining_data: a list of dicts with `token_ids`, `segment_ids` and
    `sentence_label` (0 without a sentence task), in a shuffled order."""
    if sentence_task not in SENTENCE_TASKS:
        raise ValueError(f"sentence_task must be one of None, 'nsp', 'sop'; got {sentence_task!r}")
    if max_seq_length < 8:
        raise ValueError(f"max_seq_length must be at least 8, got {max_seq_length}")
    rng = np.random.default_rng(seed)
    instances = []
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            instances.extend(_document_instances(documents, index, cls_id, sep_id, max_seq_length,
                                                 sentence_task, rng, short_seq_prob))
    order = rng.permutation(len(instances))
    return [instances[i] for i in order]


def _document_instances(documents, index, cls_id, sep_id, max_seq_length, sentence_task, rng, short_seq_prob):
    document = documents[index]
    max_tokens = max_seq_length - (3 if sentence_task else 2)
    target = max_tokens
    if rng.random() < short_seq_prob:
        target = int(rng.integers(2, max_tokens + 1))
    instances, chunk, length, i = [], [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target:
            a, b, label = _concat(chunk), [], 0
            if sentence_task:
                a_end = int(rng.integers(1, len(chunk))) if len(chunk) >= 2 else 1
                a = _concat(chunk[:a_end])
                if len(chunk) == 1 or (sentence_task == "nsp" and rng.random() < 0.5):
                    label = 1
                    b = _random_segment(documents, index, max(1, target - len(a)), rng)
                    i -= len(chunk) - a_end  # the unused sentences start the next chunk
                elif sentence_task == "sop" and rng.random() < 0.5:
                    label = 1
                    a, b = _concat(chunk[a_end:]), a
                else:
                    b = _concat(chunk[a_end:])
            a, b = list(a), list(b)
            _truncate_pair(a, b, max_tokens, rng)
            tokens = [cls_id] + a + [sep_id]
            segments = [0] * len(tokens)
            if sentence_task:
                tokens += b + [sep_id]
                segments += [1] * (len(b) + 1)
            instances.append({"token_ids": tokens, "segment_ids": segments, "sentence_label": label})
            chunk, length = [], 0
        i += 1
    return instances


def _random_segment(documents, index, target_length, rng):
    other = index
    for _ in range(10):
        other = int(rng.integers(len(documents)))
        if other != index or len(documents) == 1:
            break
    document = documents[other]
    start = int(rng.integers(len(document)))
    out = []
    for sentence in document[start:]:
        out.extend(sentence)
        if len(out) >= target_length:
            break
    return out


# ---- TFRecords --------------------------------------------------------------------------


def _example(instance):
    import tensorflow as tf

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    return tf.train.Example(features=tf.train.Features(feature={
        "token_ids": ints(instance["token_ids"]),
        "segment_ids": ints(instance["segment_ids"]),
        "sentence_label": ints([instance["sentence_label"]]),
    }))


def write_records(instances, path):
    """Write `instances` to the TFRecord file `path` (local or gs://) under a temporary name,
    then rename it into place."""
    import tensorflow as tf

    path = os.fspath(path)
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.partial-{uuid.uuid4().hex[:8]}")
    try:
        with tf.io.TFRecordWriter(tmp) as writer:
            for instance in instances:
                writer.write(_example(instance).SerializeToString())
        tf.io.gfile.rename(tmp, path, overwrite=True)
    except BaseException:
        if tf.io.gfile.exists(tmp):
            tf.io.gfile.remove(tmp)
        raise
    return path


def vocabulary_digest(tokenizer):
    return hashlib.sha256("\n".join(tokenizer.get_vocabulary()).encode("utf-8")).hexdigest()[:16]


def _source(path):
    import tensorflow as tf

    stat = tf.io.gfile.stat(os.fspath(path))
    return {"path": os.fspath(path), "bytes": stat.length, "mtime_ns": stat.mtime_nsec}


def write_pretraining_records(corpus_files, tokenizer, records_dir, max_seq_length=128, sentence_task=None,
                              seed=42, short_seq_prob=0.1, dupe_factor=1, log=None):
    """Tokenize and pack each corpus file into `records_dir/shard-NNNNN.tfrecord`.

    Returns the shard paths. Shards already written there for the same corpus files (size and
    time) and settings are reused; `records.json` holds the settings and instance counts.
    """
    import tensorflow as tf

    if not corpus_files:
        raise ValueError("no corpus files given")
    records_dir = os.fspath(records_dir)
    settings = {
        "format": FORMAT_VERSION,
        "sources": [_source(path) for path in corpus_files],
        "vocabulary": vocabulary_digest(tokenizer),
        "max_seq_length": int(max_seq_length),
        "sentence_task": sentence_task,
        "seed": int(seed),
        "short_seq_prob": float(short_seq_prob),
        "dupe_factor": int(dupe_factor),
    }
    manifest_path = os.path.join(records_dir, MANIFEST)
    names = [f"shard-{i:05d}.tfrecord" for i in range(len(corpus_files))]
    paths = [os.path.join(records_dir, name) for name in names]
    if tf.io.gfile.exists(manifest_path):
        manifest = read_json(manifest_path, "pretraining records manifest", DataFormatError)
        if manifest.get("settings") == settings and all(tf.io.gfile.exists(p) for p in paths):
            if log:
                log(f"reusing {sum(manifest['instances'])} pretraining instances in {records_dir}")
            return paths
    counts = []
    for number, (corpus, path) in enumerate(zip(corpus_files, paths)):
        documents = tokenize_documents(read_documents(corpus), tokenizer)
        if not documents:
            raise ValueError(f"{corpus}: no sentence of the corpus has any token.")
        instances = create_instances(documents, tokenizer.cls_token_id, tokenizer.sep_token_id, max_seq_length,
                                     sentence_task, seed=[seed, number], short_seq_prob=short_seq_prob,
                                     dupe_factor=dupe_factor)
        tf.io.gfile.makedirs(records_dir)
        write_records(instances, path)
        counts.append(len(instances))
        if log:
            log(f"{corpus}: {len(documents)} documents -> {len(instances)} instances")
    text = json.dumps({"settings": settings, "files": names, "instances": counts}, indent=2) + "\n"
    tmp = os.path.join(records_dir, f".{MANIFEST}.partial-{uuid.uuid4().hex[:8]}")
    with tf.io.gfile.GFile(tmp, "w") as f:
        f.write(text)
    tf.io.gfile.rename(tmp, manifest_path, overwrite=True)
    return paths


def count_records(records_dir):
    """Number of instances recorded in `records_dir/records.json`."""
    manifest = read_json(os.path.join(os.fspath(records_dir), MANIFEST), "pretraining records manifest", DataFormatError)
    return sum(manifest["instances"])


def read_records(files):
    """The unmasked instances of TFRecord `files`: {"token_ids", "segment_ids" (int32, variable
    length), "sentence_label" (int32 scalar)}, in file order."""
    import tensorflow as tf

    return tf.data.TFRecordDataset(list(files)).map(_parse, num_parallel_calls=tf.data.AUTOTUNE)


def _parse(record):
    import tensorflow as tf

    parsed = tf.io.parse_single_example(record, {
        "token_ids": tf.io.RaggedFeature(tf.int64),
        "segment_ids": tf.io.RaggedFeature(tf.int64),
        "sentence_label": tf.io.FixedLenFeature([1], tf.int64),
    })
    return {
        "token_ids": tf.cast(parsed["token_ids"], tf.int32),
        "segment_ids": tf.cast(parsed["segment_ids"], tf.int32),
        "sentence_label": tf.cast(parsed["sentence_label"][0], tf.int32),
    }


# ---- masking ----------------------------------------------------------------------------


def continuation_flags(tokenizer):
    """For every id of the vocabulary: does this piece continue the word before it?"""
    vocabulary = tokenizer.get_vocabulary()
    specials = set(_special_ids(tokenizer))
    if isinstance(tokenizer, SentencePieceTokenizer):
        flags = [not piece.startswith(SPIECE_WORD_START) for piece in vocabulary]
    else:
        suffix = getattr(tokenizer, "suffix_indicator", "##")
        flags = [piece.startswith(suffix) for piece in vocabulary]
    for token in getattr(tokenizer, "added_tokens", ()):
        flags[tokenizer.token_to_id(token)] = False
    return np.array([flag and i not in specials for i, flag in enumerate(flags)], dtype=bool)


def _special_ids(tokenizer):
    ids = []
    for name in ("cls_token_id", "sep_token_id", "pad_token_id", "mask_token_id"):
        value = getattr(tokenizer, name, None)
        if value is None:
            raise ValueError(f"{type(tokenizer).__name__} has no {name[:-3]}: it cannot be used for pretraining.")
        ids.append(int(value))
    return ids


class WholeWordMasker:
    """Dynamic BERT masking of one unpadded instance, in TensorFlow ops (usable in tf.data).

    `masker(token_ids, seed)` -> `(masked_ids, positions, labels)`: positions [max_predictions]
    (0-padded) and the original ids there (-100-padded). With `whole_words=False` single
    pieces are chosen (BERT's original token masking).

    Example:
        >>> masker = WholeWordMasker(tokenizer, max_predictions=20)
        >>> masked, positions, labels = masker(tf.constant(ids), tf.constant([42, 0]))
    """

    def __init__(self, tokenizer, max_predictions, mask_rate=0.15, whole_words=True):
        self.max_predictions = int(max_predictions)
        self.mask_rate = float(mask_rate)
        self.whole_words = whole_words
        self.mask_id = int(tokenizer.mask_token_id)
        specials = _special_ids(tokenizer)
        size = len(tokenizer.get_vocabulary())
        self.continuation = continuation_flags(tokenizer) if whole_words else np.zeros(size, bool)
        self.special = np.zeros(size, bool)
        self.special[specials] = True
        self.random_ids = np.flatnonzero(~self.special).astype(np.int32)

    def __call__(self, token_ids, seed):
        import tensorflow as tf

        token_ids = tf.convert_to_tensor(token_ids, tf.int32)
        seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 4)
        index = tf.clip_by_value(token_ids, 0, len(self.special) - 1)
        special = tf.gather(tf.constant(self.special), index)
        continues = tf.gather(tf.constant(self.continuation), index)
        valid = tf.logical_not(special)
        after_special = tf.concat([[True], special[:-1]], 0)
        starts = valid & (tf.logical_not(continues) | after_special)
        word = tf.cumsum(tf.cast(starts, tf.int32)) - 1
        word = tf.where(valid, word, 0)
        num_words = tf.maximum(tf.reduce_sum(tf.cast(starts, tf.int32)), 1)
        num_valid = tf.reduce_sum(tf.cast(valid, tf.int32))
        budget = tf.cast(tf.round(tf.cast(num_valid, tf.float32) * self.mask_rate), tf.int32)
        budget = tf.minimum(self.max_predictions, tf.maximum(1, budget))
        sizes = tf.math.unsorted_segment_sum(tf.cast(valid, tf.int32), word, num_words)
        order = tf.argsort(tf.random.stateless_uniform([num_words], seeds[0]))
        ordered_sizes = tf.gather(sizes, order)

        def pick(state, size):  # greedy, as BERT: skip a word that would overflow the budget
            total, _ = state
            take = total + size <= budget
            return total + tf.where(take, size, 0), take

        _, taken = tf.scan(pick, ordered_sizes, initializer=(tf.constant(0), tf.constant(False)))
        chosen_words = tf.scatter_nd(order[:, None], tf.cast(taken, tf.int32), [num_words])
        chosen = valid & (tf.gather(chosen_words, word) > 0)
        positions = tf.cast(tf.where(chosen)[:, 0], tf.int32)
        count = tf.shape(positions)[0]
        labels = tf.gather(token_ids, positions)
        action = tf.random.stateless_uniform([count], seeds[1])
        randoms = tf.gather(tf.constant(self.random_ids),
                            tf.random.stateless_uniform([count], seeds[2], 0, len(self.random_ids), tf.int32))
        replacement = tf.where(action < 0.8, self.mask_id, tf.where(action < 0.9, randoms, labels))
        masked = tf.tensor_scatter_nd_update(token_ids, positions[:, None], replacement)
        pad = self.max_predictions - count
        positions = tf.pad(positions, [[0, pad]])
        labels = tf.pad(labels, [[0, pad]], constant_values=IGNORE_LABEL)
        return masked, positions, labels


def max_predictions_for(max_seq_length, mask_rate=0.15):
    """BERT's max_predictions_per_seq: 20 for 128 tokens, 77 for 512."""
    return int(math.ceil(max_seq_length * mask_rate))


def masked_dataset(files, tokenizer, max_seq_length, batch_size, sentence_task=None, seed=42, start_step=0,
                   whole_words=True, mask_rate=0.15, shuffle_buffer=10000):
    """Endless batches of masked instances from TFRecord `files`, from global step `start_step`.

    Each batch is `(x, y)`: x = {"token_ids", "segment_ids", "padding_mask" [batch,
    max_seq_length], "mask_positions" [batch, max_predictions]}, y = {"mask_labels" (-100 at
    padding), "sentence_label" [batch]}. Shuffling and masks depend only on `seed`, so the
    batches from step s are the same whether or not the run was resumed at s.
    """
    import tensorflow as tf

    files = sorted(os.fspath(f) for f in files)
    max_predictions = max_predictions_for(max_seq_length, mask_rate)
    masker = WholeWordMasker(tokenizer, max_predictions, mask_rate, whole_words)
    pad_id = int(tokenizer.pad_token_id)
    dataset = tf.data.Dataset.from_tensor_slices(files).repeat()
    dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=min(4, len(files)), block_length=16,
                                 num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.enumerate().skip(int(start_step) * batch_size)

    def prepare(index, record):
        example = _parse(record)
        masked, positions, labels = masker(example["token_ids"][:max_seq_length], tf.stack([tf.constant(seed, tf.int64), index]))
        length = tf.minimum(tf.shape(masked)[0], max_seq_length)
        fill = max_seq_length - length
        x = {
            "token_ids": tf.pad(masked[:length], [[0, fill]], constant_values=pad_id),
            "segment_ids": tf.pad(example["segment_ids"][:length], [[0, fill]]),
            "padding_mask": tf.pad(tf.ones([length], tf.int32), [[0, fill]]),
            "mask_positions": positions,
        }
        for key in x:
            x[key] = tf.ensure_shape(x[key], [max_seq_length if key != "mask_positions" else max_predictions])
        y = {"mask_labels": tf.ensure_shape(labels, [max_predictions]), "sentence_label": example["sentence_label"]}
        return x, y

    dataset = dataset.map(prepare, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
