"""The conversion every source format shares: build the backbone from an HF-style config,
stream the tensors through the format's table, keep the heads, write the preset."""

from __future__ import annotations

import os
import shutil

from tqdm.auto import tqdm

from biozoo._io import check_output, scratch_directory
from biozoo._keras_internals import unallocated_variables
from biozoo.convert.sink import H5WeightsSink
from biozoo.convert.sniff import describe
from biozoo.errors import CheckpointError
from biozoo.mapping import apply_table, mapped_targets
from biozoo.preset_files import write_preset


def convert_tensors(family, config, table, names, tensors, tokenizer, out_dir, source, provenance=None, progress=True,
                    task_heads=None, overwrite=False, task_kind=None, config_source=None):
    """`tensors` (an iterator of (name, array)) -> a preset at `out_dir`, atomically.

    `config` is an HF-style config (the family's config.json keys); it is kept in the
    preset's biozoo.json so that the preset can be exported back to HF later. `task_heads`
    (`{head: (its heads.json entry, the tensor names it needs)}`) records a head that no HF
    config describes (AIONER's, whose preset records `task_kind`); a needed tensor that is missing fails the
    conversion. An earlier
    biozoo output at `out_dir` is replaced only with `overwrite`; any other folder there is
    refused before anything is converted (`biozoo._io.check_output`). `config_source`: where `config`
    came from (a config.json path), named by errors about it; default: `source`'s config.
    """
    check_output(out_dir, overwrite, [source])
    arguments = family.backbone_arguments(config, use_pooler=family.use_pooler(config, mapped_targets(table, names)),
                                          source=config_source or f"{source} (its config)")
    if tokenizer.vocabulary_size() > config["vocab_size"]:
        raise CheckpointError(
            f"{source}: the vocabulary has {tokenizer.vocabulary_size()} entries but the model's embedding "
            f"has {config['vocab_size']} rows; they must agree."
        )

    # Built without allocating its variables: the tensors stream into the weights file.
    with unallocated_variables():
        backbone = family.backbone_cls(**arguments, dtype="float32")
    record = {"family": family.name, "hf_config": config}
    record.update({k: v for k, v in (provenance or {}).items() if k != "label"})
    bar = _progress(len(names), f"converting {provenance.get('label', '') if provenance else ''}".strip(), progress)
    # beside out_dir, so that write_preset moves the file into place with a rename
    scratch = scratch_directory(out_dir, "streamed")
    try:
        sink = H5WeightsSink(os.path.join(scratch, "model.weights.h5"), backbone)
        try:
            heads = apply_table(table, tensors, sink, source, progress=bar)
        finally:
            sink.close()
            if bar is not None:
                bar.close()
        heads_config = {**family.heads_config(config), **classifier_head_config(config, heads, source)}
        for head, (entry, needed) in (task_heads or {}).items():
            missing = sorted(set(needed) - set(heads))
            if missing:
                raise CheckpointError(f"{source}: no {', '.join(missing)} for the {head} head.")
            heads_config[head] = entry
        write_preset(out_dir, backbone, tokenizer, heads, heads_config, record, weights_file=sink.path,
                     overwrite=overwrite, task_kind=task_kind)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out_dir


PROBLEM_TYPES = ("single_label_classification", "multi_label_classification", "regression")


def classifier_head_config(config, heads, source):
    """heads.json's "classifier" entry of a `*ForTokenClassification` / `*ForSequenceClassification`
    checkpoint: its label names (`id2label` in id order), `problem_type` and HF class.

    Raises when `id2label` disagrees with the width of the head. Without `id2label` the labels
    are LABEL_0, LABEL_1, ..., as transformers names them."""
    kernel = heads.get("classifier/output/kernel", heads.get("classifier/dense/kernel"))
    if kernel is None:
        return {}
    width = int(kernel.shape[-1])
    id2label = config.get("id2label") or {}
    problem_type = config.get("problem_type")
    if problem_type not in (None, *PROBLEM_TYPES):
        raise CheckpointError(f"{source}: problem_type {problem_type!r} is none of {', '.join(PROBLEM_TYPES)}.")
    if id2label:
        try:
            by_id = {int(key): str(value) for key, value in id2label.items()}
        except ValueError:
            raise CheckpointError(f"{source}: id2label keys must be label ids (0, 1, ...), got {sorted(id2label)}.") from None
        if sorted(by_id) != list(range(len(by_id))) or len(by_id) != width:
            raise CheckpointError(
                f"{source}: id2label names {len(by_id)} labels (ids {sorted(by_id)}) but the classifier head "
                f"has {width} outputs; the checkpoint's config and its head disagree.")
        names = [by_id[i] for i in range(width)]
    else:
        names = [f"LABEL_{i}" for i in range(width)]
    architectures = config.get("architectures") or [None]
    return {"classifier": {"label_names": names, "problem_type": problem_type, "hf_class": architectures[0]}}


def _progress(total, description, enabled):
    if not enabled:
        return None

    return tqdm(total=total, desc=description, unit="tensor", leave=False)


def vocabulary_is_cased(tokens):
    """A WordPiece vocabulary with capitalised word pieces was built for cased text."""
    words = [t for t in tokens if t.isalpha() and not t.startswith("[")]
    return sum(t[0].isupper() for t in words) > 0.05 * max(1, len(words))


def wordpiece_tokenizer(family, vocab, lowercase=None, strip_accents=None, where=None):
    """The family's WordPiece tokenizer for a vocab.txt path, or for its tokens (a list read
    elsewhere; `where` names their file); casing guessed from them if not given."""
    if isinstance(vocab, (list, tuple)):
        tokens, where = list(vocab), where or "the vocabulary"
    else:
        where = vocab
        if not os.path.exists(vocab):
            raise CheckpointError(f"no vocabulary at {vocab} (pass --vocab).")
        try:
            with open(vocab, encoding="utf-8") as f:
                tokens = [line.rstrip("\n").rstrip("\r") for line in f]  # as the tokenizer reads a vocab.txt
        except UnicodeDecodeError:
            raise CheckpointError(
                f"{vocab}: {describe(vocab)}; the {family.name} family expects a WordPiece "
                "vocab.txt (UTF-8 text, one token a line) as its vocabulary (--vocab).") from None
    if lowercase is None:
        lowercase = not vocabulary_is_cased(tokens)
    try:
        return family.tokenizer_cls(vocabulary=tokens, lowercase=lowercase, strip_accents=strip_accents)
    except ValueError as error:
        raise CheckpointError(f"{where}: {error}") from None
