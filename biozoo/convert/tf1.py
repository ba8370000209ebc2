"""TF1 checkpoints (google-research BERT, ALBERT and ELECTRA naming) -> Keras presets.

Read tensor by tensor with `tf.train.load_checkpoint` (local paths or `gs://`); optimizer
slots (`adam_m`, `adam_v`, LAMB), `global_step` and ELECTRA's generator temperature are
skipped. BERT and ALBERT take their sizes from `bert_config.json` / `albert_config.json`;
ELECTRA releases ship none, so sizes are read off the tensors. TensorFlow is imported by the
functions that read a checkpoint: it is optional under JAX and PyTorch.
"""

from __future__ import annotations

import os

from biozoo._io import check_output, read_json
from biozoo.convert.core import convert_tensors, wordpiece_tokenizer
from biozoo.convert.sniff import describe, is_sentencepiece
from biozoo.errors import CheckpointError
from biozoo.models import FAMILIES, get_family
from biozoo.tokenizers import SentencePieceTokenizer

EXPECTED_TF1 = "a TF1 checkpoint: a prefix PREFIX with PREFIX.index and PREFIX.data-*-of-* beside it, or their directory"


def checkpoint_prefix(path):
    """The checkpoint prefix that `path` (a prefix, one of its files, or a directory) names.
    Raises CheckpointError naming the path and what was expected."""
    import tensorflow as tf

    path = str(path).rstrip("/") or "/"
    if tf.io.gfile.isdir(path):
        state = tf.train.latest_checkpoint(path)
        if state:
            return state
        prefixes = sorted(name[: -len(".index")] for name in tf.io.gfile.listdir(path) if name.endswith(".index"))
        if len(prefixes) != 1:
            found = f"{len(prefixes)} checkpoints ({', '.join(prefixes)}); pass one prefix" if prefixes else \
                "no .index file"
            raise CheckpointError(f"{path}: a directory with {found}; expected {EXPECTED_TF1}.")
        path = f"{path}/{prefixes[0]}"
    for suffix in (".index", ".meta"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    if ".data-" in path.rsplit("/", 1)[-1]:
        path = path[: path.rindex(".data-")]
    if not tf.io.gfile.exists(path + ".index"):
        found = describe(path)
        hint = ""
        if "GluonNLP" in found or "npz" in found.lower():
            hint = " (use --from gluon)"
        elif "PyTorch" in found or "pickle" in found or "safetensors" in found:
            hint = " (use --from hf or --from megatron)"
        raise CheckpointError(f"{path}: {found}{hint}, and no {path}.index; expected {EXPECTED_TF1}.")
    if not tf.io.gfile.glob(path + ".data-*-of-*"):
        raise CheckpointError(
            f"{path}.index: no data file beside it (expected {path}.data-00000-of-00001 or other shards).")
    return path


def open_tf1(path):
    """({name: shape}, reader) for a checkpoint prefix, one of its files, or its directory."""
    import tensorflow as tf

    prefix = checkpoint_prefix(path)
    try:
        reader = tf.train.load_checkpoint(prefix)
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError) as error:
        raise CheckpointError(f"{prefix}: not a readable TF1 checkpoint ({str(error).splitlines()[0]}).") from None
    shapes = {name: tuple(shape) for name, shape in reader.get_variable_to_shape_map().items()}
    return shapes, reader


def guess_family(shapes):
    """The name of the family whose `tf1_scope` the checkpoint's variable names start with."""
    names = [n[len("module/"):] if n.startswith("module/") else n for n in shapes]
    for family in FAMILIES.values():
        if family.tf1_scope and any(n.startswith(family.tf1_scope) for n in names):
            return family.name
    raise CheckpointError("cannot tell the family from the variable names; pass --family.")


def _checkpoint_dir(path):
    import tensorflow as tf

    return path if tf.io.gfile.isdir(path) else os.path.dirname(path)


def _read_config(family, path, config_path):
    import tensorflow as tf

    candidates = [config_path] if config_path else [
        os.path.join(_checkpoint_dir(path), name) for name in family.tf1_config_files
    ]
    for candidate in candidates:
        if candidate and tf.io.gfile.exists(candidate):
            return read_json(candidate, "model config", allow_nan=False), candidate
    if config_path:
        raise CheckpointError(f"{config_path}: no such config file.")
    return None, None


def _tokenizer(family, path, vocab, config, lowercase):
    import tensorflow as tf

    directory = _checkpoint_dir(path)
    if issubclass(family.tokenizer_cls, SentencePieceTokenizer):
        if vocab is None:
            models = [f for f in tf.io.gfile.listdir(directory) if f.endswith(".model")]
            if not models:
                raise CheckpointError(f"{directory}: no SentencePiece .model file; pass --vocab.")
            vocab = os.path.join(directory, models[0])
        if not tf.io.gfile.exists(vocab) or not is_sentencepiece(vocab):
            raise CheckpointError(
                f"{vocab}: {describe(vocab)}; the {family.name} family expects a SentencePiece .model file "
                "as its vocabulary (--vocab).")
        with tf.io.gfile.GFile(vocab, "rb") as f:
            proto = f.read()
        return family.tokenizer_cls(proto=proto, lowercase=True if lowercase is None else lowercase)
    vocab = vocab or os.path.join(directory, "vocab.txt")
    if not os.path.exists(vocab) and tf.io.gfile.exists(vocab):  # gs://
        with tf.io.gfile.GFile(vocab, "r") as f:
            tokens = [line.rstrip("\n").rstrip("\r") for line in f]
        return wordpiece_tokenizer(family, tokens, lowercase, where=vocab)
    return wordpiece_tokenizer(family, vocab, lowercase)


def convert_tf1(path, out_dir, family=None, config=None, vocab=None, num_heads=None, part="discriminator",
                lowercase=None, provenance=None, progress=True, overwrite=False):
    """Convert a TF1 checkpoint to a Keras preset at `out_dir`; returns `out_dir`. An earlier
    biozoo output there is replaced only with `overwrite`."""
    check_output(out_dir, overwrite, [path, os.path.dirname(path) if not os.path.isdir(path) else None])
    shapes, reader = open_tf1(path)
    family_name = family or guess_family(shapes)
    fam = get_family(family_name)
    table = fam.source_tables.get("tf1_generator" if part == "generator" else "tf1")
    if table is None:
        raise CheckpointError(f"no TF1 mapping for the {family_name} family{' generator' if part == 'generator' else ''}.")
    hf_config, config_file = _read_config(fam, path, config)
    config_source = config_file or f"{path} (the config inferred from its tensors' shapes)"
    if fam.tf1_config is not None:
        inferred = fam.tf1_config(shapes, part, num_heads)
        hf_config = {**inferred, **(hf_config or {})} if hf_config else inferred
    elif hf_config is None:
        raise CheckpointError(
            f"{path}: no {' or '.join(fam.tf1_config_files)} beside the checkpoint; pass --config."
        )
    hf_config = {**hf_config, "model_type": fam.model_types[0]}
    if num_heads:
        hf_config["num_attention_heads"] = num_heads
    tokenizer = _tokenizer(fam, path, vocab, hf_config, lowercase)
    names = sorted(n for n in shapes if table.lookup(n) != "ignore")  # optimizer slots (3x the weights) unread
    tensors = ((name, reader.get_tensor(name)) for name in names)
    record = {"format": "tf1", "source": path, "part": part, "label": os.path.basename(path.rstrip("/"))}
    record.update(provenance or {})
    return convert_tensors(fam, hf_config, table, names, tensors, tokenizer, out_dir, path, record, progress,
                           overwrite=overwrite, config_source=config_source)
