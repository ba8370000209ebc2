"""Pretraining data on every backend: plain-text corpora -> packed instances -> masked batches.

Corpus format: one sentence per line, a blank line between documents (BERT's
create_pretraining_data input). Every non-blank line is a sentence. Files may be local, or
`gs://` where TensorFlow is installed.

Instances are packed as BERT does: the sentences of a document are gathered up to the
target length (`max_seq_length`, or with probability `short_seq_prob` a shorter random one)
and become `[CLS] A [SEP]`, or `[CLS] A [SEP] B [SEP]` with a sentence task:

* ``"nsp"`` (BERT): B follows A (label 0) or, half the time, comes from another document (1);
* ``"sop"`` (ALBERT): B follows A (0) or A and B are swapped (1); a chunk of one sentence
  takes B from another document (1), as ALBERT's data script does.

Masking is dynamic (as ELECTRA's and RoBERTa's): each instance is masked as it is read, with
an RNG keyed on (seed, position in the stream), so every pass over the data sees new masks
while a run, or a resumed run, sees the same ones for the same seed. 15 % of the non-special
tokens are predicted; with whole-word masking whole words are picked (a WordPiece piece
starting with "##", or a SentencePiece piece that ALBERT's `_is_start_piece_sp` does not call a
word start, continues the word before it) until the budget is reached, never more. A chosen piece becomes [MASK] 80 % of the time, a
random non-special token 10 % and stays unchanged 10 % (BERT's; `replacement=(0.85, 0.0)`
gives ELECTRA's 85 % [MASK], 15 % unchanged). [CLS], [SEP], [PAD] and [MASK] are never chosen.

Here, for JAX and PyTorch: each corpus file becomes one shard of unmasked instances, two
`.npy` arrays (`shard-NNNNN.tokens.npy`: token and segment ids end to end; `.index.npy`: each
instance's start, end and sentence label), memory-mapped as they are read, never pickled; and
`MaskedBatches` masks them in NumPy. `biozoo.data.tf_pretraining` writes the same instances as
TFRecords and masks them in tf.data. Shards are written under temporary names and renamed, and
a manifest lets a later run with the same corpus and settings reuse them.

Example:
    >>> tokenizer = biozoo.Tokenizer.from_preset("bioformer_8l")
    >>> files = write_instance_shards(["pubmed.txt"], tokenizer, "shards", 128, "nsp")
    >>> batches = MaskedBatches(files, tokenizer, 128, batch_size=32, sentence_task="nsp")
    >>> x, y = next(batches.batches_from(0))
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings

import numpy as np

from biozoo._io import atomic_write_json, decode_utf8, is_remote, read_json, remote_files
from biozoo.data import IGNORE_LABEL
from biozoo.errors import BiozooError, DataFormatError, DataWarning
from biozoo.tokenizers.sentencepiece import SentencePieceTokenizer

SENTENCE_TASKS = (None, "nsp", "sop")
SPIECE_WORD_START = "\u2581"  # "▁"
SHARDS_MANIFEST = "shards.json"
SHARDS_FORMAT = 1
# Packing that cuts more of a corpus than this warns. BERT's packing itself cuts the sentence that
# overflows each instance: some 6 % of a corpus of 10-40-token sentences at 128 tokens.
TRUNCATION_WARNING_SHARE = 0.1


# ---- corpus -----------------------------------------------------------------------------


def read_documents(path):
    """Documents of a corpus file: lists of sentences (lines), split at blank lines.

    Lines end at "\n" only, as BERT's create_pretraining_data.py reads them: a form feed, U+2028 or
    another Unicode line boundary inside a sentence leaves it whole. Raises ValueError naming the
    file when it holds no text at all.
    """
    documents, current = [], []
    path = os.fspath(path)
    opened = remote_files(path).open_file(path, "rb") if is_remote(path) else open(path, "rb")
    with opened as f:
        text = decode_utf8(f.read(), path, DataFormatError)
    for line in text.split("\n"):
        line = line.strip()  # "\r" of CRLF files too
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
    """BERT's truncate_seq_pair: trim the longer side, from the front or the back at random.
    Returns the number of tokens cut."""
    cut = max(0, len(a) + len(b) - max_tokens)
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()
    return cut


def _concat(segments):
    return [t for segment in segments for t in segment]


def create_instances(documents, cls_id, sep_id, max_seq_length, sentence_task=None, seed=0,
                     short_seq_prob=0.1, dupe_factor=1, truncation=None):
    """Pack tokenized `documents` (lists of sentences of ids) into instances, as BERT's
    create_pretraining_data: a list of dicts with `token_ids`, `segment_ids` and
    `sentence_label` (0 without a sentence task), in a shuffled order. `truncation`, a dict,
    gets the tokens chunked into instances ("packed") and those cut to fit them ("cut")."""
    if sentence_task not in SENTENCE_TASKS:
        raise ValueError(f"sentence_task must be one of None, 'nsp', 'sop'; got {sentence_task!r}")
    if max_seq_length < 8:
        raise ValueError(f"max_seq_length must be at least 8, got {max_seq_length}")
    rng = np.random.default_rng(seed)
    instances = []
    truncation = {} if truncation is None else truncation
    truncation.setdefault("packed", 0)
    truncation.setdefault("cut", 0)
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            instances.extend(_document_instances(documents, index, cls_id, sep_id, max_seq_length,
                                                 sentence_task, rng, short_seq_prob, truncation))
    order = rng.permutation(len(instances))
    return [instances[i] for i in order]


def _document_instances(documents, index, cls_id, sep_id, max_seq_length, sentence_task, rng, short_seq_prob,
                        truncation):
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
            truncation["packed"] += len(a) + len(b)
            truncation["cut"] += _truncate_pair(a, b, max_tokens, rng)
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



# ---- what both writers share ----------------------------------------------------------------


# a tokenizer's config entries that do not change the ids it gives
NOT_TOKENIZATION = frozenset({"name", "trainable", "dtype", "config_file", "vocabulary", "proto", "sequence_length"})


def tokenizer_digest(tokenizer):
    """A digest of what the ids depend on: the vocabulary (a SentencePiece model's bytes) and the
    settings (casing, accents, special and added tokens)."""
    model = getattr(tokenizer, "proto", None)
    digest = hashlib.sha256(model if isinstance(model, bytes) else "\n".join(tokenizer.get_vocabulary()).encode())
    settings = {key: value for key, value in tokenizer.get_config().items() if key not in NOT_TOKENIZATION}
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:16]


def corpus_source(path):
    """{path, bytes, mtime_ns} of a corpus file: a later run reuses instances packed from it
    only while these are unchanged."""
    path = os.fspath(path)
    if is_remote(path):
        stat = remote_files(path).gfile.stat(path)
        return {"path": path, "bytes": stat.length, "mtime_ns": stat.mtime_nsec}
    stat = os.stat(path)
    return {"path": path, "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def packing_settings(corpus_files, tokenizer, max_seq_length, sentence_task, seed, short_seq_prob, dupe_factor,
                     file_format):
    """What the packed instances depend on (a manifest records it; equal settings: reuse)."""
    return {
        "format": file_format,
        "sources": [corpus_source(path) for path in corpus_files],
        "tokenizer": tokenizer_digest(tokenizer),
        "max_seq_length": int(max_seq_length),
        "sentence_task": sentence_task,
        "seed": int(seed),
        "short_seq_prob": float(short_seq_prob),
        "dupe_factor": int(dupe_factor),
    }


def packed_corpora(corpus_files, tokenizer, max_seq_length, sentence_task, seed, short_seq_prob, dupe_factor,
                   log=None):
    """(file number, instances) of each corpus file, packed by `create_instances`."""
    if not corpus_files:
        raise ValueError("no corpus files given")
    for number, corpus in enumerate(corpus_files):
        documents = tokenize_documents(read_documents(corpus), tokenizer)
        if not documents:
            raise ValueError(f"{corpus}: no sentence of the corpus has any token.")
        truncation = {}
        instances = create_instances(documents, tokenizer.cls_token_id, tokenizer.sep_token_id, max_seq_length,
                                     sentence_task, seed=[seed, number], short_seq_prob=short_seq_prob,
                                     dupe_factor=dupe_factor, truncation=truncation)
        share = truncation["cut"] / max(1, truncation["packed"])
        if log:
            log(f"{corpus}: {len(documents)} documents -> {len(instances)} instances ({share:.1%} of the tokens cut "
                "to fit)")
        if share > TRUNCATION_WARNING_SHARE:
            message = (f"{corpus}: {share:.1%} of the tokens packed into instances were cut to fit "
                       f"{max_seq_length} tokens (sentences longer than an instance lose the rest); split long "
                       "lines into sentences, one per line")
            if log:
                log(message)
            else:
                warnings.warn(message, DataWarning, stacklevel=2)
        yield number, instances


# ---- shards (JAX, PyTorch) ------------------------------------------------------------------


def _save_array(path, array):
    tmp = f"{path}.partial-{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            np.save(f, array, allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_shard(instances, prefix):
    """Write `instances` as `prefix.tokens.npy` (int32 [2, tokens]: token ids, segment ids) and
    `prefix.index.npy` (int64 [instances, 3]: start, end, sentence label); returns `prefix`."""
    lengths = np.array([len(i["token_ids"]) for i in instances], np.int64)
    ends = np.cumsum(lengths)
    index = np.stack([ends - lengths, ends, [i["sentence_label"] for i in instances]], axis=1).astype(np.int64)
    tokens = np.zeros((2, int(ends[-1]) if len(ends) else 0), np.int32)
    for instance, start, end in zip(instances, index[:, 0], index[:, 1]):
        tokens[0, start:end] = instance["token_ids"]
        tokens[1, start:end] = instance["segment_ids"]
    _save_array(prefix + ".tokens.npy", tokens)
    _save_array(prefix + ".index.npy", index)
    return prefix


def write_instance_shards(corpus_files, tokenizer, directory, max_seq_length=128, sentence_task=None, seed=42,
                          short_seq_prob=0.1, dupe_factor=1, log=None):
    """Tokenize and pack each local corpus file into the shard `directory/shard-NNNNN`.

    Returns the shard prefixes. Shards already written there for the same corpus files (size
    and time) and settings are reused; `shards.json` holds the settings, instance counts and
    file sizes. It is removed before the first shard is written, so shards a killed run left
    half rewritten are never reused.
    """
    directory = os.fspath(directory)
    if is_remote(directory):  # os.makedirs would make a local "gs:" folder
        raise BiozooError(f"--records {directory}: the packed shards of JAX and PyTorch runs are NumPy files in a "
                          "local folder; remote records need TensorFlow (KERAS_BACKEND=tensorflow writes TFRecords "
                          "there). Give a local --records folder.")
    settings = packing_settings(corpus_files, tokenizer, max_seq_length, sentence_task, seed, short_seq_prob,
                                dupe_factor, f"npy-{SHARDS_FORMAT}")
    manifest_path = os.path.join(directory, SHARDS_MANIFEST)
    prefixes = [os.path.join(directory, f"shard-{i:05d}") for i in range(len(corpus_files))]
    files = [p + suffix for p in prefixes for suffix in (".tokens.npy", ".index.npy")]
    if os.path.exists(manifest_path):
        manifest = read_json(manifest_path, "pretraining shards manifest", DataFormatError)
        if manifest.get("settings") == settings and manifest.get("bytes") == _sizes(files):
            if log:
                log(f"reusing {sum(manifest['instances'])} pretraining instances in {directory}")
            return prefixes
        os.remove(manifest_path)
    os.makedirs(directory, exist_ok=True)
    counts = []
    for number, instances in packed_corpora(corpus_files, tokenizer, max_seq_length, sentence_task, seed,
                                            short_seq_prob, dupe_factor, log):
        write_shard(instances, prefixes[number])
        counts.append(len(instances))
    atomic_write_json(manifest_path, {"settings": settings, "files": [os.path.basename(p) for p in prefixes],
                                      "instances": counts, "bytes": _sizes(files)})
    return prefixes


def _sizes(paths):
    """The byte size of each file (None where it is missing): a shard cut short no longer matches."""
    return [os.path.getsize(p) if os.path.exists(p) else None for p in paths]


def count_instances(directory):
    """Number of instances recorded in `directory/shards.json`."""
    manifest = read_json(os.path.join(os.fspath(directory), SHARDS_MANIFEST), "pretraining shards manifest",
                         DataFormatError)
    return sum(manifest["instances"])


def _load_array(path):
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise
    except (ValueError, OSError, EOFError) as error:  # cut short, or not an .npy file
        raise DataFormatError(f"{path}: not a whole NumPy array ({error}): a damaged shard, remove its folder to "
                              "pack the corpus again") from None


class InstanceShards:
    """The unmasked instances of shards (`write_instance_shards`' prefixes), in file order,
    memory-mapped: `shards[i]` -> (token_ids, segment_ids, sentence_label)."""

    def __init__(self, prefixes):
        self.tokens, self.index = [], []
        for prefix in prefixes:
            tokens, index = (_load_array(prefix + suffix) for suffix in (".tokens.npy", ".index.npy"))
            if tokens.ndim != 2 or tokens.shape[0] != 2 or index.ndim != 2 or index.shape[1] != 3 or (
                    len(index) and int(index[-1, 1]) != tokens.shape[1]):
                raise DataFormatError(f"{prefix}: tokens {tokens.shape} and index {index.shape} do not fit together "
                                      "(a damaged shard: remove the folder to pack the corpus again)")
            self.tokens.append(tokens)
            self.index.append(index)
        self.starts = np.cumsum([0] + [len(index) for index in self.index])

    def __len__(self):
        return int(self.starts[-1])

    def __getitem__(self, i):
        shard = int(np.searchsorted(self.starts, i, side="right")) - 1
        start, end, label = (int(v) for v in self.index[shard][i - self.starts[shard]])
        tokens = self.tokens[shard]
        return np.asarray(tokens[0, start:end]), np.asarray(tokens[1, start:end]), label


# ---- masking ----------------------------------------------------------------------------


# ALBERT's create_pretraining_data.py, _is_start_piece_sp: a SentencePiece piece starts a word when it
# starts with "▁" or "<", is one of these punctuation marks, or holds any other character than them
# and the English letters (digits, other scripts). Its punctuation list, as written there (no "'").
ALBERT_PUNCTUATION = frozenset('!"#$%&"()*+,-./:;?@[\\]^_`{|}~')
ALBERT_WORD_CHARACTERS = ALBERT_PUNCTUATION | frozenset("abcdefghijklmnopqrstuvwxyz")


def _starts_sentencepiece_word(piece):
    return (piece.startswith((SPIECE_WORD_START, "<")) or piece in ALBERT_PUNCTUATION
            or not all(character.lower() in ALBERT_WORD_CHARACTERS for character in piece))


def continuation_flags(tokenizer):
    """For every id of the vocabulary: does this piece continue the word before it? WordPiece:
    it starts with "##"; SentencePiece: ALBERT's rule (`_starts_sentencepiece_word`)."""
    vocabulary = tokenizer.get_vocabulary()
    specials = set(special_ids(tokenizer))
    if isinstance(tokenizer, SentencePieceTokenizer):
        flags = [not _starts_sentencepiece_word(piece) for piece in vocabulary]
    else:
        suffix = getattr(tokenizer, "suffix_indicator", "##")
        flags = [piece.startswith(suffix) for piece in vocabulary]
    for token in getattr(tokenizer, "added_tokens", ()):
        flags[tokenizer.token_to_id(token)] = False
    return np.array([flag and i not in specials for i, flag in enumerate(flags)], dtype=bool)


def special_ids(tokenizer):
    ids = []
    for name in ("cls_token_id", "sep_token_id", "pad_token_id", "mask_token_id"):
        value = getattr(tokenizer, name, None)
        if value is None:
            raise ValueError(f"{type(tokenizer).__name__} has no {name[:-3]}: it cannot be used for pretraining.")
        ids.append(int(value))
    return ids



def max_predictions_for(max_seq_length, mask_rate=0.15):
    """BERT's max_predictions_per_seq: 20 for 128 tokens, 77 for 512."""
    return int(math.ceil(max_seq_length * mask_rate))



class WordMasker:
    """Dynamic BERT masking of one unpadded instance (NumPy; `biozoo.data.tf_pretraining`'s
    `WholeWordMasker` does the same in TensorFlow ops).

    `masker.mask(token_ids, rng)` -> `(masked_ids, positions, labels)`: positions
    [max_predictions] (0-padded) and the original ids there (-100-padded). With
    `whole_words=False` single pieces are chosen (BERT's original token masking). A chosen piece
    becomes [MASK] with probability `replacement[0]`, a random token with `replacement[1]`,
    else stays (BERT: 0.8, 0.1).

    Example:
        >>> masker = WordMasker(tokenizer, max_predictions=20)
        >>> masked, positions, labels = masker.mask(ids, np.random.default_rng([42, 0]))
    """

    def __init__(self, tokenizer, max_predictions, mask_rate=0.15, whole_words=True, replacement=(0.8, 0.1)):
        self.max_predictions = int(max_predictions)
        self.replacement = _check_replacement(replacement)
        self.mask_rate = float(mask_rate)
        self.whole_words = whole_words
        self.mask_id = int(tokenizer.mask_token_id)
        specials = special_ids(tokenizer)
        size = len(tokenizer.get_vocabulary())
        self.continuation = continuation_flags(tokenizer) if whole_words else np.zeros(size, bool)
        self.special = np.zeros(size, bool)
        self.special[specials] = True
        self.random_ids = np.flatnonzero(~self.special).astype(np.int32)

    def mask(self, token_ids, rng):
        token_ids = np.asarray(token_ids, np.int32)
        index = np.clip(token_ids, 0, len(self.special) - 1)
        special = self.special[index]
        valid = ~special
        after_special = np.concatenate([[True], special[:-1]])
        starts = valid & (~self.continuation[index] | after_special)
        word = np.where(valid, np.cumsum(starts) - 1, 0)
        num_words = max(int(starts.sum()), 1)
        budget = min(self.max_predictions, max(1, int(np.round(valid.sum() * self.mask_rate))))
        sizes = np.bincount(word[valid], minlength=num_words)
        chosen_words = np.zeros(num_words, bool)
        total = 0
        for w in rng.permutation(num_words):  # greedy, as BERT: skip a word that would overflow the budget
            if total + sizes[w] <= budget:
                total += sizes[w]
                chosen_words[w] = True
        positions = np.flatnonzero(valid & chosen_words[word]).astype(np.int32)
        labels = token_ids[positions]
        action = rng.random(len(positions))
        randoms = self.random_ids[rng.integers(0, len(self.random_ids), len(positions))]
        masked = token_ids.copy()
        to_mask, to_random = self.replacement
        masked[positions] = np.where(action < to_mask, self.mask_id,
                                     np.where(action < to_mask + to_random, randoms, labels))
        pad = self.max_predictions - len(positions)
        return (masked, np.pad(positions, (0, pad)),
                np.pad(labels, (0, pad), constant_values=IGNORE_LABEL).astype(np.int32))


def _check_replacement(replacement):
    to_mask, to_random = (float(p) for p in replacement)
    if not (0 <= to_mask and 0 <= to_random and to_mask + to_random <= 1):
        raise ValueError(f"replacement {replacement}: (P([MASK]), P(random token)) are probabilities summing to "
                         "at most 1")
    return to_mask, to_random


class MaskedBatches:
    """Endless batches of masked instances from shards (`write_instance_shards`), from any
    global step: `batches_from(step)` yields `(x, y)` as NumPy arrays, x = {"token_ids",
    "segment_ids", "padding_mask" [batch, max_seq_length], "mask_positions" [batch,
    max_predictions]}, y = {"mask_labels" (-100 at padding), "sentence_label" [batch]}.

    The stream visits every instance once per pass, in an order drawn from (seed, pass), and
    masks the instance at stream position i with an RNG keyed on (seed, i): the batches from
    step s are the same whether or not the run was resumed at s.

    Example:
        >>> batches = MaskedBatches(files, tokenizer, 128, batch_size=32)
        >>> x, y = next(batches.batches_from(1000))
    """

    def __init__(self, prefixes, tokenizer, max_seq_length, batch_size, sentence_task=None, seed=42,
                 whole_words=True, mask_rate=0.15, replacement=(0.8, 0.1)):
        self.instances = InstanceShards(prefixes)
        if not len(self.instances):
            raise ValueError(f"no pretraining instances in {', '.join(map(str, prefixes))}")
        self.max_seq_length, self.batch_size = int(max_seq_length), int(batch_size)
        for prefix, index in zip(prefixes, self.instances.index):
            lengths = np.asarray(index[:, 1] - index[:, 0])
            if len(lengths) and lengths.max() > self.max_seq_length:
                longest = int(lengths.argmax())
                raise DataFormatError(f"{prefix}: instance {longest} has {int(lengths[longest])} tokens, more than "
                                      f"max_seq_length {self.max_seq_length} (packed for a longer sequence): "
                                      "pack the corpus again at this length, or train at the length it was packed "
                                      "for; cutting it would drop its [SEP]")
        self.sentence_task, self.seed = sentence_task, int(seed)
        self.max_predictions = max_predictions_for(max_seq_length, mask_rate)
        self.masker = WordMasker(tokenizer, self.max_predictions, mask_rate, whole_words, replacement)
        self.pad_id = int(tokenizer.pad_token_id)
        self._order = (None, None)

    def _instance_at(self, position):
        count = len(self.instances)
        passes, offset = divmod(position, count)
        if self._order[0] != passes:
            self._order = (passes, np.random.default_rng([self.seed, passes]).permutation(count))
        return self.instances[int(self._order[1][offset])]

    def example(self, position):
        """The masked example at stream `position`: (x, y) of one row."""
        token_ids, segment_ids, label = self._instance_at(position)
        masked, positions, labels = self.masker.mask(token_ids, np.random.default_rng([self.seed, position]))
        fill = self.max_seq_length - len(masked)
        x = {"token_ids": np.pad(masked, (0, fill), constant_values=self.pad_id),
             "segment_ids": np.pad(segment_ids, (0, fill)).astype(np.int32),
             "padding_mask": np.pad(np.ones(len(masked), np.int32), (0, fill)),
             "mask_positions": positions}
        return x, {"mask_labels": labels, "sentence_label": np.int32(label)}

    def batches_from(self, step):
        position = int(step) * self.batch_size
        while True:
            rows = [self.example(position + row) for row in range(self.batch_size)]
            position += self.batch_size
            yield tuple({key: np.stack([row[part][key] for row in rows]) for key in rows[0][part]} for part in (0, 1))
