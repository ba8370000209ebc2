"""AIONER's released models -> biozoo task presets.

`pretrained_models.zip` (hub repo lingbionlp/AIONER-0415) holds the two AIONER models as Keras
`save_weights` files (`AIONER/Bioformer-softmax-AIONER.h5`, `AIONER/PubmedBERT-CRF-AIONER.h5`)
and the base models they start from (config.json, vocab.txt). An .h5 is read with h5py, tensor
by tensor (no code in it is run): a transformers `TFBertModel` (embedding grown by the 14 marker
tokens), `dense2` (Dense 128, relu) and the `softmax` Dense or the `crf_layer`. The encoder
streams through the BERT family's TF1 table once transformers' TF names are spelled as TF1's;
the head goes to `heads.safetensors` under `aioner/`.

Example:
    >>> convert_aioner("pretrained_models/AIONER/Bioformer-softmax-AIONER.h5",
    ...                "pretrained_models/bioformer-cased-v1.0", "out/", label_names, "softmax", lowercase=False)
"""

from __future__ import annotations

import os
import re
import tempfile

import h5py
import numpy as np

from biozoo._io import read_json
from biozoo.convert.archives import extract_archive
from biozoo.convert.core import convert_tensors, wordpiece_tokenizer
from biozoo.errors import CheckpointError
from biozoo.mapping import Rule, Table
from biozoo.models import get_family
from biozoo.models.bert.convert_tf1 import TF1_TABLE

# transformers' TF BERT names (tf_bert_model/bert/encoder/layer_._0/.../kernel:0) -> TF1's
TF_TRANSFORMERS_RENAMES = (
    (r":\d+$", ""),
    (r"^(?:[^/]+/)*?tf_bert_model(?:_\d+)?/", ""),
    (r"layer_\._(\d+)", r"layer_\1"),
    (r"/word_embeddings/weight$", "/word_embeddings"),
    (r"/(position|token_type)_embeddings/embeddings$", r"/\1_embeddings"),
)
# the Keras head layers of model_ner.py, whatever scopes Keras put around their variables
HEAD_RENAMES = (
    (r"^(?:[^/]+/)*?dense2/(?:[^/]+/)*?(kernel|bias)$", r"aioner/dense2/\1"),
    (r"^(?:[^/]+/)*?softmax/(?:[^/]+/)*?(kernel|bias)$", r"aioner/output/\1"),
    (r"^(?:[^/]+/)*?crf_layer/(?:[^/]+/)*?(kernel|bias)$", r"aioner/output/\1"),
    (r"^(?:[^/]+/)*?crf_layer/(?:[^/]+/)*?(chain_kernel|left_boundary|right_boundary)$", r"aioner/crf/\1"),
)
# deflate's best ratio is about 1032:1: a dataset cannot hold more bytes than this times what the
# file stores of it (unwritten chunks store nothing)
MAX_COMPRESSION = 1100
HEAD_RULES = [Rule(f"aioner/{name}", f"heads/aioner/{name}") for name in (
    "dense2/kernel", "dense2/bias", "output/kernel", "output/bias",
    "crf/chain_kernel", "crf/left_boundary", "crf/right_boundary")]
# represent_ner.py adds these, in this order, after the vocabulary
MARKER_TOKENS = ("<Chemical>", "</Chemical>", "<Disease>", "</Disease>", "<CellLine>", "</CellLine>",
                 "<Gene>", "</Gene>", "<Species>", "</Species>", "<Variant>", "</Variant>", "<ALL>", "</ALL>")


def aioner_table():
    return Table(rules=[*TF1_TABLE.rules, *HEAD_RULES], ignore=TF1_TABLE.ignore,
                 renames=TF_TRANSFORMERS_RENAMES + HEAD_RENAMES)


def read_keras_h5(path):
    """`{name: array}` of a Keras (2) weights file, names as Keras saved them, read with h5py."""
    try:
        handle = h5py.File(path, "r")
    except OSError as error:
        raise CheckpointError(f"{path}: not a readable HDF5 (Keras .h5) file ({error}).") from None
    tensors = {}
    with handle:
        has_weights = handle.get("model_weights", getlink=True) is not None
        root = _own_group(path, handle, "model_weights") if has_weights else handle
        layers = [_text(n) for n in root.attrs.get("layer_names", [])]
        if not layers:
            raise CheckpointError(f"{path}: no 'layer_names' attribute; not a Keras weights file.")
        for layer in layers:
            group = _own_group(path, root, layer)
            for name in (_text(n) for n in group.attrs.get("weight_names", [])):
                if name in tensors:
                    raise CheckpointError(f"{path}: weight '{name}' appears twice (layers share a name).")
                tensors[name] = np.asarray(_own_dataset(path, group, name), dtype=np.float32)
    return tensors


def _own_node(path, group, name):
    """`group[name]`, every step of the path a hard link: a soft link, or a link to another file, is
    refused at a group as at a dataset (its numbers would not be this file's)."""
    node, parts = group, name.split("/")
    where = group.name.rstrip("/")
    for i, part in enumerate(parts):
        link = node.get(part, getlink=True)
        if link is None:
            raise CheckpointError(f"{path}: no '{where}/{name}'.")
        if not isinstance(link, h5py.HardLink):
            raise CheckpointError(f"{path}: '{where}/{'/'.join(parts[:i + 1])}' is a link; refused.")
        node = node[part]
    return node


def _own_group(path, group, name):
    node = _own_node(path, group, name)
    if not isinstance(node, h5py.Group):
        raise CheckpointError(f"{path}: '{node.name}' is not a group.")
    return node


def _own_dataset(path, group, name):
    """`group[name]`, refusing links, data stored outside the file (external or virtual datasets)
    and a shape declaring more bytes than `MAX_COMPRESSION` times what the file stores of it:
    a weights file must hold its own numbers."""
    node = _own_node(path, group, name)
    if not isinstance(node, h5py.Dataset) or node.external or node.is_virtual:
        raise CheckpointError(f"{path}: '{node.name}' is not a dataset stored in the file; refused.")
    stored = node.id.get_storage_size()
    if node.nbytes > MAX_COMPRESSION * stored:
        raise CheckpointError(f"{path}: dataset '{node.name}' declares shape {node.shape} ({node.nbytes} bytes), "
                              f"the file stores {stored} bytes of it; refused.")
    return node


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def find_in_archive(root, relative):
    """`relative` (e.g. "AIONER/Bioformer-softmax-AIONER.h5") under `root`, at any depth (the
    archive has a top folder)."""
    relative = relative.strip("/")
    for directory, folders, files in os.walk(root):
        folders.sort()
        candidate = os.path.join(directory, relative)
        if os.path.exists(candidate):
            return candidate
    raise CheckpointError(f"the AIONER archive has no {relative} (looked under {root}).")


def convert_aioner(h5_path, base_dir, out_dir, label_names, decoder, lowercase, max_length=256, name="aioner",
                   provenance=None, progress=True):
    """An AIONER .h5 (with its base model's config.json and vocab.txt) -> a task preset at `out_dir`.
    `decoder` ("softmax", "crf" or None) is read from the .h5's layers; one given must agree."""
    family = get_family("bert")
    tensors = read_keras_h5(h5_path)
    embedding = next((a for n, a in tensors.items() if re.search(r"word_embeddings/weight(:\d+)?$", n)), None)
    if embedding is None:
        raise CheckpointError(f"{h5_path}: no word_embeddings tensor; not an AIONER (TFBertModel) .h5.")
    config = dict(read_json(os.path.join(base_dir, "config.json"), "base model config", allow_nan=False))
    tokenizer = wordpiece_tokenizer(family, os.path.join(base_dir, "vocab.txt"), lowercase=lowercase)
    base_size = tokenizer.vocabulary_size()
    if embedding.shape[0] != base_size + len(MARKER_TOKENS):
        raise CheckpointError(
            f"{h5_path}: the word embedding has {embedding.shape[0]} rows; AIONER's are the vocabulary "
            f"({base_size} in {base_dir}/vocab.txt) plus {len(MARKER_TOKENS)} marker tokens.")
    tokenizer = tokenizer.with_added_tokens(MARKER_TOKENS)
    config.update({"model_type": "bert", "vocab_size": int(embedding.shape[0])})
    decoder = _decoder_of(h5_path, tensors, decoder)
    output = [a for n, a in tensors.items() if n.endswith(("softmax/kernel:0", "crf_layer/kernel:0"))]
    if len(output) != 1 or output[0].shape[-1] != len(label_names):
        found = output[0].shape[-1] if output else "no"
        raise CheckpointError(f"{h5_path}: the output layer has {found} labels, the label vocabulary {len(label_names)}.")
    needed = ["dense2/kernel", "dense2/bias", "output/kernel", "output/bias"]
    if decoder == "crf":
        needed += ["crf/chain_kernel", "crf/left_boundary", "crf/right_boundary"]
    entry = {"label_names": list(label_names), "decoder": decoder, "lowercase": lowercase, "max_length": max_length,
             "name": name}
    record = {"format": "aioner-h5", "source": os.fspath(h5_path), "label": os.path.basename(h5_path)}
    record.update(provenance or {})
    names = sorted(tensors)
    stream = ((n, tensors[n]) for n in names)
    return convert_tensors(family, config, aioner_table(), names, stream, tokenizer, out_dir, h5_path, record, progress,
                           task_heads={"aioner": (entry, [f"aioner/{n}" for n in needed])}, task_kind="aioner")


def _decoder_of(path, tensors, decoder=None):
    """The decoder the .h5 holds (a `crf_layer` -> "crf", a `softmax` layer -> "softmax"); `decoder`,
    when given, must be that one."""
    layers = {layer for name in tensors for layer in ("crf_layer", "softmax") if re.search(rf"(^|/){layer}/", name)}
    if len(layers) != 1:
        raise CheckpointError(f"{path}: AIONER's output layer is one of crf_layer or softmax; found "
                              f"{' and '.join(sorted(layers)) or 'neither'}.")
    (layer,) = layers
    found = "crf" if layer == "crf_layer" else "softmax"
    if decoder is not None and decoder != found:
        raise CheckpointError(f"{path}: the model's output layer is {layer} (a {found} decoder), not the {decoder} "
                              "decoder asked for; converting it so would drop or invent its CRF.")
    return found


def _member_of(name, relatives):
    """Whether archive member `name` is one of `relatives` (files or folders) at any depth, or inside one."""
    name = "/" + name.replace("\\", "/").strip("/")
    return any(name.endswith(r) or f"{r}/" in name for r in ("/" + x.strip("/") for x in relatives))


def convert_aioner_archive(archive, out_dir, task, name, provenance=None, progress=True):
    """The model a registry entry's `task` names inside AIONER's `pretrained_models.zip`."""
    spec = task["aioner"]
    with tempfile.TemporaryDirectory(prefix="biozoo-aioner-") as scratch:
        wanted = (spec["model_file"], spec["base_dir"])
        root = extract_archive(archive, scratch, wanted=lambda name: _member_of(name, wanted))
        return convert_aioner(find_in_archive(root, spec["model_file"]), find_in_archive(root, spec["base_dir"]),
                              out_dir, task["label_names"], spec["decoder"], spec["lowercase"], spec["max_length"],
                              name, provenance, progress)
