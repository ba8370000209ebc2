"""Keras preset -> HuggingFace model directory (`transformers.AutoModel.from_pretrained`)."""

from __future__ import annotations

import json
import os
from typing import NamedTuple

import numpy as np
from tokenizers import Tokenizer, decoders, processors

from biozoo import api, presets
from biozoo._io import atomic_directory, atomic_write_text, check_output
from biozoo.errors import BiozooError, CheckpointError
from biozoo.export.card import model_card, plot_parameters_f1
from biozoo.mapping import INVERSE, reverse_lookup
from biozoo.models import family_for_backbone
from biozoo.preset_files import read_certificate, read_provenance, save_safetensors
from biozoo.task_kinds import task_kind
from biozoo.tokenizers import SentencePieceTokenizer
from biozoo.tokenizers.eager import HF_MAX_INPUT_CHARS_PER_WORD


def hf_state_dict(backbone):
    """{HF base-model name: array} through the family's HF table, read backwards."""
    family = family_for_backbone(backbone)
    state = {}
    for variable in backbone.weights:
        found = reverse_lookup(family.hf_table, variable.path)
        if found is None:
            raise CheckpointError(f"no HuggingFace name for '{variable.path}' in the {family.name} mapping.")
        name, transform = found
        state[name] = np.ascontiguousarray(INVERSE[transform](np.asarray(variable.numpy(), np.float32)))
    return family, state


GENERIC_TOKENIZER = "PreTrainedTokenizerFast"  # transformers' class that runs tokenizer.json as written


def transformers_tokenizer_class(tokenizer):
    """The transformers class that loads `tokenizer_files`' output with biozoo's ids: ALBERT's,
    BERT's or, for a word length limit BERT's does not take (it keeps its default whatever the
    files say), the generic class running tokenizer.json."""
    if isinstance(tokenizer, SentencePieceTokenizer):
        return "AlbertTokenizer"
    if tokenizer.max_input_chars_per_word != HF_MAX_INPUT_CHARS_PER_WORD:
        return GENERIC_TOKENIZER
    return "BertTokenizer"


def _bert_tokenizer_json(tokenizer):
    """tokenizer.json of a WordPiece tokenizer: biozoo's engine (HF's pipeline) with BERT's
    [CLS] a [SEP] b [SEP] template and decoder."""
    engine = Tokenizer.from_str(tokenizer.engine().to_str())
    cls, sep = tokenizer.cls_token, tokenizer.sep_token
    engine.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0", pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, tokenizer.token_to_id(cls)), (sep, tokenizer.token_to_id(sep))])
    engine.decoder = decoders.WordPiece(prefix=tokenizer.continuation_prefix)
    return engine.to_str(pretty=True)


def tokenizer_files(tokenizer, directory, max_length=None, segment_ids=True):
    """Write the tokenizer the way HF loads it: vocab.txt or spiece.model plus its config (and
    tokenizer.json where only the generic class keeps the tokenizer's settings), with
    `max_length` (the model's positions) as model_max_length, so that `truncation=True` cuts
    there. `segment_ids`: whether the model takes token_type_ids."""
    specials = {key: getattr(tokenizer, key) for key in ("unk_token", "cls_token", "sep_token", "pad_token", "mask_token")}
    # model_input_names: told nothing, transformers' AlbertTokenizer returns no token_type_ids,
    # and a pair runs as one segment, not as ALBERT (and biozoo) reads it
    input_names = ["input_ids", "token_type_ids", "attention_mask"] if segment_ids else ["input_ids", "attention_mask"]
    if isinstance(tokenizer, SentencePieceTokenizer):
        with open(os.path.join(directory, "spiece.model"), "wb") as f:
            f.write(tokenizer.proto)
        config = {"do_lower_case": tokenizer.lowercase, "keep_accents": tokenizer.keep_accents,
                  "model_input_names": input_names, **specials}
    else:
        with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(tokenizer.get_vocabulary()) + "\n")
        config = {"do_lower_case": tokenizer.lowercase, "strip_accents": tokenizer.hf_strip_accents,
                  "tokenize_chinese_chars": tokenizer.tokenize_chinese_chars, **specials}
        if transformers_tokenizer_class(tokenizer) == GENERIC_TOKENIZER:
            atomic_write_text(os.path.join(directory, "tokenizer.json"), _bert_tokenizer_json(tokenizer))
            config.update(tokenizer_class=GENERIC_TOKENIZER, model_input_names=input_names,
                          max_input_chars_per_word=tokenizer.max_input_chars_per_word)
    if max_length:
        config["model_max_length"] = int(max_length)
    if tokenizer.added_tokens:
        added = {t: tokenizer.token_to_id(t) for t in tokenizer.added_tokens}
        with open(os.path.join(directory, "added_tokens.json"), "w", encoding="utf-8") as f:
            json.dump(added, f, indent=2)
        # How each is matched (added_tokens.json alone makes them all normalized, non-special)
        config["added_tokens_decoder"] = {
            str(i): {"content": t, "lstrip": False, "normalized": t in tokenizer.normalized_added_tokens,
                     "rstrip": False, "single_word": False, "special": t not in tokenizer.normalized_added_tokens}
            for t, i in added.items()}
    with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(directory, "special_tokens_map.json"), "w", encoding="utf-8") as f:
        json.dump(specials, f, indent=2)


def export_hf(preset, out_dir, overwrite=False):
    """Write `out_dir`: config.json, model.safetensors (the base model) and the tokenizer (an
    earlier biozoo output there is replaced only with `overwrite`). A task preset is refused:
    its head would be dropped (`export_hf_task` writes it, as `biozoo export hf --model`)."""
    check_output(out_dir, overwrite, [preset])
    check_backbone_preset(preset, "hf")
    backbone = api.from_preset(preset)
    tokenizer = api.Tokenizer.from_preset(preset)
    family, state = hf_state_dict(backbone)
    config = family.config_to_hf(backbone.get_config())
    config["pad_token_id"] = int(tokenizer.pad_token_id)
    return _write(out_dir, state, config, tokenizer, overwrite, [preset],
                  card=lambda tmp: registry_card(preset, tmp, "hf"))


def check_backbone_preset(preset, export):
    """Refuse a task checkpoint as a --preset of `biozoo export EXPORT`, which writes the bare
    encoder: its head would be dropped. The message names the --model command that keeps it."""
    kind = presets.resolve(preset).task_kind
    if kind is not None:
        raise BiozooError(f"{preset} is {task_kind(kind).article()} {kind} model: --preset writes the bare encoder, "
                          f"without its head. Export the task with `biozoo export {export} --model {preset}`.")


def registry_card(preset, out_dir, export, after=""):
    """Write the registry's model card of the `export` (a name of `biozoo.export.card.EXPORTS`)
    as out_dir/README.md when `preset` is (or was converted from) a registry checkpoint; `after`
    is appended (the export's own notes)."""
    directory = presets.resolve_preset(preset)
    name = read_provenance(directory).get("registry_name")
    if not name:
        if after:
            atomic_write_text(os.path.join(out_dir, "README.md"), after)
        return None
    plot = "parameters_f1.png" if plot_parameters_f1(name, os.path.join(out_dir, "parameters_f1.png")) else None
    text = model_card(name, read_certificate(directory), plot, export)
    atomic_write_text(os.path.join(out_dir, "README.md"), text + ("\n" + after if after else ""))
    return name


class HfTaskLayout(NamedTuple):
    """What a transformers task class holds beyond its base model."""

    pooler: bool  # the base model's pooler (only sequence classification builds one: add_pooling_layer)
    labels: bool  # id2label / label2id in its config
    head: tuple  # (the head's name in the family's HF table under heads/, the biozoo task's layer attribute)


# the transformers task classes, by the `hf_class_suffix` of the biozoo task exported as one
HF_TASK_LAYOUTS = {
    "ForTokenClassification": HfTaskLayout(pooler=False, labels=True, head=("classifier/dense", "output_dense")),
    "ForSequenceClassification": HfTaskLayout(pooler=True, labels=True, head=("classifier/dense", "output_dense")),
    "ForQuestionAnswering": HfTaskLayout(pooler=False, labels=False, head=("qa/dense", "span_dense")),
}


def export_hf_task(task, out_dir, overwrite=False, inputs=()):
    """Write a biozoo task (a model from `biozoo finetune`, or any TokenClassifier /
    SequenceClassifier / QuestionAnswerer) as the matching transformers class, e.g.
    `BertForTokenClassification` with `id2label`: `AutoModelFor...from_pretrained(out_dir)` and
    transformers' pipelines then predict what the task predicts. An earlier biozoo output at
    `out_dir` is replaced only with `overwrite`; `inputs` (the task's folder) are never written."""
    check_output(out_dir, overwrite, inputs)

    family, state = hf_state_dict(task.backbone)
    config = family.config_to_hf(task.backbone.get_config())
    suffix = getattr(task, "hf_class_suffix", None)
    if suffix is None:
        raise CheckpointError(f"{type(task).__name__} has no transformers task class; export its backbone with --preset.")
    layout = HF_TASK_LAYOUTS[suffix]
    base = config["architectures"][0][:-len("Model")]
    config["architectures"] = [base + suffix]
    prefix = family.hf_table.strip_prefixes[0]
    hidden = getattr(task, "cls_dense", None)
    pooler = None  # a classifier's new pooler, on a backbone without one, as transformers builds it
    if layout.pooler and hidden is not None and reverse_lookup(family.hf_table, "heads/classifier/hidden/kernel") is None:
        if task.head_activation != "tanh" or task.dropout_before_dense:
            raise CheckpointError(f"{config['architectures'][0]} reads the pooled output; this classifier has a "
                                  f"{task.head_activation} dense layer on the first token instead (saved before biozoo's "
                                  "head followed transformers'): fine-tune it again to export it")
        pooler, hidden = hidden, None
    state = {(prefix + name): value for name, value in state.items() if layout.pooler or not name.startswith("pooler")}
    if pooler is not None:
        for variable, value in zip(("kernel", "bias"), pooler.get_weights()):
            name, transform = reverse_lookup(family.hf_table, f"pooled_dense/{variable}")
            state[prefix + name] = np.ascontiguousarray(INVERSE[transform](np.asarray(value, np.float32)))
    head, attribute = layout.head
    heads = {head: getattr(task, attribute)}
    if hidden is not None:
        heads = {"classifier/hidden": hidden, "classifier/output": task.output_dense}
        if reverse_lookup(family.hf_table, "heads/classifier/output/kernel") is None:
            heads["classifier/dense"] = heads.pop("classifier/output")
    for head, layer in heads.items():
        for variable, value in zip(("kernel", "bias"), layer.get_weights()):
            name, transform = reverse_lookup(family.hf_table, f"heads/{head}/{variable}")
            state[name] = np.ascontiguousarray(INVERSE[transform](np.asarray(value, np.float32)))
    if layout.labels:
        config["id2label"] = {str(i): name for i, name in enumerate(task.label_names)}
        config["label2id"] = {name: i for i, name in enumerate(task.label_names)}
    if getattr(task, "problem_type", None) is not None:  # sequence classification's
        config["problem_type"] = task.problem_type
    tokenizer = task.preprocessor.tokenizer
    config["pad_token_id"] = int(tokenizer.pad_token_id)
    return _write(out_dir, state, config, tokenizer, overwrite, inputs)


def _write(out_dir, state, config, tokenizer, overwrite=False, inputs=(), card=None):
    with atomic_directory(out_dir, overwrite, inputs) as tmp:
        save_safetensors(state, os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
        with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2)
        tokenizer_files(tokenizer, tmp, config.get("max_position_embeddings"), segment_ids="type_vocab_size" in config)
        if card is not None:
            card(tmp)
    return out_dir
