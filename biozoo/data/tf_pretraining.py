"""Pretraining data on TensorFlow: the packed instances of `biozoo.data.pretraining` as
TFRecords, masked in tf.data.

Each corpus file becomes one TFRecord shard of unmasked instances (`token_ids`,
`segment_ids`, `sentence_label`); files may be local or `gs://` (through tf.io.gfile). Shards
are written under a temporary name and renamed, and a `records.json` manifest lets a later run
with the same corpus and settings reuse them. `masked_dataset` masks each instance as it is read
(`biozoo.data.pretraining` describes packing and masking), with a stateless RNG keyed on (seed,
position in the stream).

Example:
    >>> tokenizer = biozoo.Tokenizer.from_preset("bioformer_8l")
    >>> files = write_pretraining_records(["pubmed.txt"], tokenizer, "records", 128, "nsp")
    >>> batches = masked_dataset(files, tokenizer, 128, batch_size=32, sentence_task="nsp")
"""

from __future__ import annotations

import json
import os
import uuid

from biozoo._io import read_json
from biozoo.data import IGNORE_LABEL
from biozoo.data.pretraining import WordMasker, max_predictions_for, packed_corpora, packing_settings
from biozoo.errors import DataFormatError

FORMAT_VERSION = 1
MANIFEST = "records.json"


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


def write_pretraining_records(corpus_files, tokenizer, records_dir, max_seq_length=128, sentence_task=None,
                              seed=42, short_seq_prob=0.1, dupe_factor=1, log=None):
    """Tokenize and pack each corpus file into `records_dir/shard-NNNNN.tfrecord`.

    Returns the shard paths. Shards already written there for the same corpus files (size and
    time) and settings are reused; `records.json` holds the settings, instance counts and file
    sizes. It is removed before the first shard is written, so shards a killed run left half
    rewritten are never reused.
    """
    import tensorflow as tf

    records_dir = os.fspath(records_dir)
    settings = packing_settings(corpus_files, tokenizer, max_seq_length, sentence_task, seed, short_seq_prob,
                                dupe_factor, FORMAT_VERSION)
    manifest_path = os.path.join(records_dir, MANIFEST)
    names = [f"shard-{i:05d}.tfrecord" for i in range(len(corpus_files))]
    paths = [os.path.join(records_dir, name) for name in names]
    if tf.io.gfile.exists(manifest_path):
        manifest = read_json(manifest_path, "pretraining records manifest", DataFormatError)
        if manifest.get("settings") == settings and manifest.get("bytes") == _sizes(paths):
            if log:
                log(f"reusing {sum(manifest['instances'])} pretraining instances in {records_dir}")
            return paths
        tf.io.gfile.remove(manifest_path)
    counts = []
    for number, instances in packed_corpora(corpus_files, tokenizer, max_seq_length, sentence_task, seed,
                                            short_seq_prob, dupe_factor, log):
        tf.io.gfile.makedirs(records_dir)
        write_records(instances, paths[number])
        counts.append(len(instances))
    text = json.dumps({"settings": settings, "files": names, "instances": counts, "bytes": _sizes(paths)},
                      indent=2) + "\n"
    tmp = os.path.join(records_dir, f".{MANIFEST}.partial-{uuid.uuid4().hex[:8]}")
    with tf.io.gfile.GFile(tmp, "w") as f:
        f.write(text)
    tf.io.gfile.rename(tmp, manifest_path, overwrite=True)
    return paths


def _sizes(paths):
    import tensorflow as tf

    return [tf.io.gfile.stat(p).length if tf.io.gfile.exists(p) else None for p in paths]


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


class WholeWordMasker(WordMasker):
    """`biozoo.data.pretraining.WordMasker` in TensorFlow ops (usable in tf.data).

    `masker(token_ids, seed)` -> `(masked_ids, positions, labels)`: positions [max_predictions]
    (0-padded) and the original ids there (-100-padded).

    Example:
        >>> masker = WholeWordMasker(tokenizer, max_predictions=20)
        >>> masked, positions, labels = masker(tf.constant(ids), tf.constant([42, 0]))
    """

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
        budget = tf.cast(tf.round(tf.cast(num_valid, tf.float64) * self.mask_rate), tf.int32)  # as NumPy rounds
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
        to_mask, to_random = self.replacement
        replacement = tf.where(action < to_mask, self.mask_id, tf.where(action < to_mask + to_random, randoms, labels))
        masked = tf.tensor_scatter_nd_update(token_ids, positions[:, None], replacement)
        pad = self.max_predictions - count
        positions = tf.pad(positions, [[0, pad]])
        labels = tf.pad(labels, [[0, pad]], constant_values=IGNORE_LABEL)
        return masked, positions, labels



def masked_dataset(files, tokenizer, max_seq_length, batch_size, sentence_task=None, seed=42, start_step=0,
                   whole_words=True, mask_rate=0.15, shuffle_buffer=10000, replacement=(0.8, 0.1)):
    """Endless batches of masked instances from TFRecord `files`, from global step `start_step`.

    Each batch is `(x, y)`: x = {"token_ids", "segment_ids", "padding_mask" [batch,
    max_seq_length], "mask_positions" [batch, max_predictions]}, y = {"mask_labels" (-100 at
    padding), "sentence_label" [batch]}. Shuffling and masks depend only on `seed`, so the
    batches from step s are the same whether or not the run was resumed at s. An instance longer
    than `max_seq_length` (records packed for a longer sequence) fails the stream, naming `files`.
    """
    import tensorflow as tf

    files = sorted(os.fspath(f) for f in files)
    max_predictions = max_predictions_for(max_seq_length, mask_rate)
    masker = WholeWordMasker(tokenizer, max_predictions, mask_rate, whole_words, replacement)
    pad_id = int(tokenizer.pad_token_id)
    dataset = tf.data.Dataset.from_tensor_slices(files).repeat()
    dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=min(4, len(files)), block_length=16,
                                 num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.enumerate().skip(int(start_step) * batch_size)

    def prepare(index, record):
        example = _parse(record)
        with tf.control_dependencies([tf.debugging.assert_less_equal(
                tf.shape(example["token_ids"])[0], max_seq_length,
                message=f"{', '.join(files)}: an instance is longer than max_seq_length {max_seq_length} (packed "
                        "for a longer sequence): pack the corpus again at this length")]):
            token_ids = tf.identity(example["token_ids"])
        masked, positions, labels = masker(token_ids, tf.stack([tf.constant(seed, tf.int64), index]))
        length = tf.shape(masked)[0]
        fill = max_seq_length - length
        x = {
            "token_ids": tf.pad(masked, [[0, fill]], constant_values=pad_id),
            "segment_ids": tf.pad(example["segment_ids"], [[0, fill]]),
            "padding_mask": tf.pad(tf.ones([length], tf.int32), [[0, fill]]),
            "mask_positions": positions,
        }
        for key in x:
            x[key] = tf.ensure_shape(x[key], [max_seq_length if key != "mask_positions" else max_predictions])
        y = {"mask_labels": tf.ensure_shape(labels, [max_predictions]), "sentence_label": example["sentence_label"]}
        return x, y

    dataset = dataset.map(prepare, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def masked_eval_dataset(token_lists, tokenizer, max_seq_length, batch_size, seed, whole_words=True):
    """Fixed masked batches `(x, {"mask_labels"})` of `token_ids` lists ([CLS] ... [SEP]
    instances), all [batch_size, max_seq_length], as a tf.data.Dataset."""
    import tensorflow as tf

    masker = WholeWordMasker(tokenizer, max_predictions_for(max_seq_length), whole_words=whole_words)
    pad_id = int(tokenizer.pad_token_id)
    ragged = tf.ragged.constant([list(t)[:max_seq_length] for t in token_lists], dtype=tf.int32)

    def prepare(index, ids):
        masked, positions, labels = masker(ids, tf.stack([tf.constant(seed, tf.int64), index]))
        fill = max_seq_length - tf.shape(masked)[0]
        x = {
            "token_ids": tf.pad(masked, [[0, fill]], constant_values=pad_id),
            "segment_ids": tf.zeros([max_seq_length], tf.int32),
            "padding_mask": tf.pad(tf.ones_like(masked), [[0, fill]]),
            "mask_positions": positions,
        }
        return x, {"mask_labels": labels}

    def fill(x, y):  # the last batch gets empty rows (no tokens, no masks): one static shape
        rows = batch_size - tf.shape(y["mask_labels"])[0]
        x = {k: tf.pad(v, [[0, rows], [0, 0]], constant_values=pad_id if k == "token_ids" else 0)
             for k, v in x.items()}
        return x, {"mask_labels": tf.pad(y["mask_labels"], [[0, rows], [0, 0]], constant_values=IGNORE_LABEL)}

    dataset = tf.data.Dataset.from_tensor_slices(ragged).enumerate().map(prepare)
    return dataset.batch(batch_size).map(fill).cache()
