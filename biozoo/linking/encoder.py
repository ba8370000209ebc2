"""Names -> unit vectors, with any biozoo backbone: SapBERT's way (the last layer's [CLS]
vector) or a masked mean of the tokens (sentence-transformers models such as MiniLM).

The pooling is read from the checkpoint where it says: a registry entry's `embedding`
section, a `biozoo finetune link` output's `linking.json`, or a sentence-transformers folder's
`1_Pooling/config.json`; else [CLS]. Names are cut at `max_length` tokens: the registry
entry's or linking.json's `max_length` where it says, else SapBERT's 25.
Inference runs through Keras' `predict_on_batch` on batches of names of similar length.

Example:
    >>> encoder = NameEncoder.from_preset("sapbert_pubmedbert_fulltext")
    >>> vectors = encoder.encode(["covid-19", "Coronavirus infection"])  # float32, rows of norm 1
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import keras
import numpy as np
from tqdm.auto import tqdm

from biozoo import api, presets, registry
from biozoo.preset_files import read_provenance

POOLINGS = ("cls", "mean")
LINKING_FILE = "linking.json"  # what `biozoo finetune link` writes beside its preset
DEFAULT_MAX_LENGTH = 25  # SapBERT's max_length of a name, in tokens


def pooling_of(handle):
    """The pooling a checkpoint declares (None when it declares none)."""
    handle = os.fspath(handle)
    if presets.names_registry_entry(handle):
        return (registry.get_entry(handle).get("embedding") or {}).get("pooling")
    linking = os.path.join(handle, LINKING_FILE)
    if os.path.isfile(linking):
        with open(linking, encoding="utf-8") as f:
            return json.load(f).get("pooling")
    sentence_pooling = os.path.join(handle, "1_Pooling", "config.json")
    if os.path.isfile(sentence_pooling):
        with open(sentence_pooling, encoding="utf-8") as f:
            config = json.load(f)
        if config.get("pooling_mode_mean_tokens"):
            return "mean"
        if config.get("pooling_mode_cls_token"):
            return "cls"
    return None


def max_length_of(handle):
    """The name length in tokens a checkpoint declares (its registry entry's `embedding`, or the
    `linking.json` of a `biozoo finetune link` output); None when it declares none."""
    handle = os.fspath(handle)
    if presets.names_registry_entry(handle):
        where = f"the registry entry {handle}"
        value = (registry.get_entry(handle).get("embedding") or {}).get("max_length")
    else:
        where = os.path.join(handle, LINKING_FILE)
        if not os.path.isfile(where):
            return None
        with open(where, encoding="utf-8") as f:
            value = json.load(f).get("max_length")
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 3):
        raise ValueError(f"{where}: max_length must be a whole number of tokens of at least 3, got {value!r}")
    return value


class NameEncoder:
    """A backbone and its tokenizer that embed names: `encode(names)` gives float32 vectors of
    norm 1 (cosine similarity is their dot product). `identity` names the weights, pooling and
    length (cache keys of embedded dictionaries use it).

    Example:
        >>> encoder = NameEncoder.from_preset("sapbert_pubmedbert_fulltext")
        >>> vectors = encoder.encode(["heart attack", "myocardial infarction"])
        >>> float(vectors[0] @ vectors[1])  # their cosine similarity
    """

    def __init__(self, backbone, tokenizer, pooling="cls", max_length=DEFAULT_MAX_LENGTH, identity=None):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        if max_length < 3:
            raise ValueError(f"max_length must leave room for [CLS], a token and [SEP], got {max_length}")
        self.backbone, self.tokenizer = backbone, tokenizer
        self.pooling, self.max_length = pooling, int(max_length)
        self.identity = identity or f"unnamed-{id(backbone)}"

    @classmethod
    def from_preset(cls, handle, pooling=None, max_length=None):
        """The encoder of any biozoo handle (registry name, hf://, local HF or Keras directory);
        `pooling` and `max_length` default to what the checkpoint declares, else cls and 25."""
        preset_dir = presets.resolve_preset(handle)
        pooling = pooling or pooling_of(handle) or pooling_of(preset_dir) or "cls"
        max_length = max_length or max_length_of(handle) or max_length_of(preset_dir) or DEFAULT_MAX_LENGTH
        weights = read_provenance(preset_dir).get("files_sha256") or {"path": os.path.abspath(preset_dir)}
        identity = hashlib.sha256(json.dumps([weights, pooling, max_length], sort_keys=True).encode()).hexdigest()[:16]
        backbone = api.from_preset(preset_dir)
        tokenizer = api.Tokenizer.from_preset(preset_dir)
        return cls(backbone, tokenizer, pooling, max_length, identity=f"{os.path.basename(os.fspath(handle).rstrip('/'))}-{identity}")

    @property
    def dimension(self):
        return int(self.backbone.get_layer("sequence_output").output.shape[-1]) if not hasattr(
            self.backbone, "hidden_dim") else int(self.backbone.hidden_dim)

    def token_ids(self, names):
        """`[CLS] pieces [SEP]` per name, cut to `max_length` ids."""
        pieces = self.tokenizer.ids(list(names)) if len(names) else []
        cls_id, sep_id = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        unk = self.tokenizer.unk_token_id
        return [np.asarray([cls_id, *(p or [unk])[: self.max_length - 2], sep_id], np.int32) for p in pieces]

    def encode(self, names, batch_size=256, progress=False):
        """float32 [len(names), hidden], each row of norm 1."""
        names = list(names)
        out = np.zeros((len(names), self.dimension), np.float32)
        if not names:
            return out
        ids = self.token_ids(names)
        order = np.argsort([len(t) for t in ids], kind="stable")
        bar = _bar(len(names), progress)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            out[rows] = self._embed([ids[i] for i in rows])
            if bar is not None:
                bar.update(len(rows))
        if bar is not None:
            bar.close()
        return out

    def inputs(self, ids, length=None):
        """Padded model inputs for token id arrays (to the longest, or to `length`)."""
        length = length or max(len(t) for t in ids)
        token_ids = np.full((len(ids), length), self.tokenizer.pad_token_id, np.int32)
        mask = np.zeros((len(ids), length), np.int32)
        for row, t in enumerate(ids):
            token_ids[row, :len(t)] = t
            mask[row, :len(t)] = 1
        return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": mask}

    def _embed(self, ids):
        # few distinct shapes, few traces: lengths to a multiple of 8, rows to a power of two
        length = min(-(-max(len(t) for t in ids) // 8) * 8, self.max_length)
        rows = 1 << (len(ids) - 1).bit_length()
        x = self.inputs(list(ids) + [ids[0]] * (rows - len(ids)), length)
        sequence = np.asarray(self.backbone.predict_on_batch(x)["sequence_output"], np.float32)[:len(ids)]
        return normalize(pool(sequence, x["padding_mask"][:len(ids)], self.pooling))


def pool(sequence, mask, pooling):
    """[batch, seq, hidden] -> [batch, hidden]: the first token, or the masked mean (NumPy or keras.ops)."""
    if pooling == "cls":
        return sequence[:, 0]
    if isinstance(sequence, np.ndarray):  # in NumPy: keras.ops would move it to the backend's device (a GPU)
        mask = mask[..., None].astype(sequence.dtype)
        return (sequence * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)
    mask = keras.ops.cast(keras.ops.expand_dims(mask, -1), sequence.dtype)
    return keras.ops.sum(sequence * mask, axis=1) / keras.ops.maximum(keras.ops.sum(mask, axis=1), 1.0)


def normalize(vectors):
    vectors = np.asarray(vectors, np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def _bar(total, progress):
    if not progress:
        return None

    return tqdm(total=total, unit="name", desc="embedding", file=sys.stderr, dynamic_ncols=True)
