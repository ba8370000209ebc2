"""Tiny random transformers checkpoints of the cases, saved as the hub saves them, their inputs and
transformers' outputs on them (torch and transformers are imported lazily)."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np

from biozoo.testing.cases import SPECIAL, VOCAB_SIZE, get_case


def wordpiece_vocab():
    """The 99-token WordPiece vocabulary of the tiny models."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    words = ["the", "gene", "cancer", "protein", "cell", "##s", "##ing", "##ed", "brca", "##1", ".", ",", "(", ")", "-"]
    tokens = list(dict.fromkeys(SPECIAL + words + letters + ["##" + c for c in letters]))
    tokens += [f"[unused{i}]" for i in range(VOCAB_SIZE - len(tokens))]
    return tokens[:VOCAB_SIZE]


def tiny_sentencepiece(directory):
    """An ALBERT-style 40-piece SentencePiece model (fits the tiny models' 99-row embeddings)."""
    import sentencepiece as spm

    os.makedirs(directory, exist_ok=True)
    prefix = os.path.join(directory, "spiece")
    if not os.path.exists(prefix + ".model"):
        text = [" ".join(w for w in wordpiece_vocab() if w.isalpha())] * 50
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(text), model_prefix=prefix, vocab_size=40, model_type="unigram",
            pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"], minloglevel=2,
        )
    return Path(prefix + ".model")


def make_config(name, **overrides):
    """The transformers config of a case (`name` may also be a `Case`)."""
    import transformers

    case = get_case(name)
    kwargs = {"initializer_range": 0.2, **case.config, "vocab_size": VOCAB_SIZE, **overrides}
    return getattr(transformers, case.config_class)(**kwargs)


def make_model(name, model_cls, seed=0, **overrides):
    """A random transformers model of a case, in eval mode, with non-trivial 1-D parameters."""
    import torch
    import transformers

    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(make_config(name, **overrides)).eval()
    # Random, non-trivial LayerNorm/NoNorm parameters and biases (HF initialises them to 1/0).
    with torch.no_grad():
        for _, param in model.named_parameters():
            if param.ndim == 1:
                param.add_(torch.randn_like(param) * 0.1)
    return model


def save_hf_directory(model, directory, fmt="safetensors", tokenizer="wordpiece", spiece_model=None,
                      vocab_file=None):
    """Save `model` as an HF directory: config.json, weights in `fmt`, vocabulary."""
    import torch

    os.makedirs(directory, exist_ok=True)
    model.config.save_pretrained(directory)
    state = model.state_dict()
    if fmt == "safetensors":
        from safetensors.torch import save_file

        # safetensors refuses shared storage: drop tied copies, as save_pretrained does.
        seen, unique = {}, {}
        for key, tensor in state.items():
            ptr = (tensor.data_ptr(), tuple(tensor.shape))
            if ptr in seen:
                continue
            seen[ptr] = key
            unique[key] = tensor.contiguous()
        save_file(unique, os.path.join(directory, "model.safetensors"), metadata={"format": "pt"})
    elif fmt == "bin":
        torch.save(state, os.path.join(directory, "pytorch_model.bin"))
    else:
        raise ValueError(fmt)
    if tokenizer == "sentencepiece":
        shutil.copy(spiece_model, os.path.join(directory, "spiece.model"))
    elif vocab_file is not None:
        shutil.copy(vocab_file, os.path.join(directory, "vocab.txt"))
    else:
        with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(wordpiece_vocab()) + "\n")
        with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
            json.dump({"do_lower_case": True}, f)
    return directory


def save_case(name, model_cls, directory, fmt="safetensors", spiece_model=None, base_only=False, **overrides):
    """(model, HF directory) of a case: `make_model` saved with the case's tokenizer. With
    `base_only` only the encoder (`model.base_model`) is saved, as for a fine-tuned head that
    biozoo does not convert."""
    case = get_case(name)
    model = make_model(case, model_cls, **overrides)
    if case.tokenizer == "sentencepiece" and spiece_model is None:
        spiece_model = tiny_sentencepiece(Path(directory) / "spm")
    saved = model.base_model if base_only else model
    directory = save_hf_directory(saved, Path(directory) / "hf", fmt, case.tokenizer, spiece_model)
    return model, directory


def random_inputs(batch=3, length=20, seed=0, num_segments=2):
    """Backbone inputs: rows 1 and 2 end in padding (6 and length - 7 positions)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCAB_SIZE, (batch, length)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, length - 6:] = 0
    mask[2, 7:] = 0
    ids[mask == 0] = 0
    segments = np.zeros_like(ids)
    segments[:, length // 2:] = num_segments - 1
    segments[mask == 0] = 0
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


def case_inputs(model, **kwargs):
    """`random_inputs` using every token type the model's config has."""
    return random_inputs(num_segments=getattr(model.config, "type_vocab_size", 2), **kwargs)


def torch_inputs(model, inputs):
    """The transformers keyword arguments for `inputs` (no token types for DistilBERT)."""
    import torch

    out = {"input_ids": torch.tensor(inputs["token_ids"], dtype=torch.long),
           "attention_mask": torch.tensor(inputs["padding_mask"], dtype=torch.long)}
    if "token_type_ids" in inspect.signature(model.forward).parameters:
        out["token_type_ids"] = torch.tensor(inputs["segment_ids"], dtype=torch.long)
    return out


def hf_outputs(model, inputs):
    """(sequence_output, pooled_output or None) of the model's base encoder."""
    import torch

    base = model.base_model
    with torch.no_grad():
        out = base(**torch_inputs(base, inputs))
    pooled = getattr(out, "pooler_output", None)
    return out.last_hidden_state.numpy(), None if pooled is None else pooled.numpy()


def hf_features(model, inputs):
    """(hidden states, attention maps) of the model's base encoder, as `output_hidden_states`
    and `output_attentions` give them: the embeddings' output, then every layer's."""
    import torch

    previous = model.config._attn_implementation
    model.set_attn_implementation("eager")  # SDPA returns no attention maps
    try:
        base = model.base_model
        with torch.no_grad():
            out = base(**torch_inputs(base, inputs), output_hidden_states=True, output_attentions=True)
    finally:
        model.set_attn_implementation(previous)
    return [h.numpy() for h in out.hidden_states], [a.numpy() for a in out.attentions]


def max_diff(ours, ref, mask):
    """max |ours - ref| over the positions where `mask` is set."""
    mask = np.asarray(mask).astype(bool)
    return float(np.abs(np.asarray(ours, np.float32) - np.asarray(ref, np.float32))[mask].max())


# head -> {suffix of the HF tensor name: name inside the head}; torch Linear weights are
# [out, in] and kept as Keras kernels [in, out], except names marked "!" (stored as is).
HEAD_TENSORS = {
    "mlm": {
        "predictions.transform.dense.weight": "dense/kernel",
        "predictions.transform.dense.bias": "dense/bias",
        "predictions.transform.LayerNorm.weight": "layer_norm/gamma",
        "predictions.bias": "output_bias",
        "generator_predictions.dense.weight": "dense/kernel",
        "generator_lm_head.bias": "output_bias",
        "vocab_transform.weight": "dense/kernel",
        "vocab_projector.bias": "output_bias",
        # already [in, out]: logits = h @ concat([embedding.T, this])
        "cls.predictions.dense.weight": "extra_output_kernel!",
    },
    "nsp": {"seq_relationship.weight": "dense/kernel", "seq_relationship.bias": "dense/bias"},
    "sop": {"sop_classifier.classifier.weight": "dense/kernel", "sop_classifier.classifier.bias": "dense/bias"},
    "rtd": {
        "discriminator_predictions.dense.weight": "dense/kernel",
        "discriminator_predictions.dense_prediction.weight": "output/kernel",
        "discriminator_predictions.dense_prediction.bias": "output/bias",
    },
    "qa": {"qa_outputs.weight": "dense/kernel", "qa_outputs.bias": "dense/bias"},
}


def populate_hf_cache(hf_cache, repo, revision, source_dir):
    """Lay out `source_dir`'s files as huggingface_hub's cache holds a downloaded snapshot of
    `repo` at `revision`, so that offline `snapshot_download` finds them (a local mirror)."""
    commit = revision if re.fullmatch(r"[0-9a-f]{40}", revision) else "0" * 40
    root = os.path.join(hf_cache, "models--" + repo.replace("/", "--"))
    snapshot = os.path.join(root, "snapshots", commit)
    shutil.copytree(source_dir, snapshot, dirs_exist_ok=True)
    os.makedirs(os.path.join(root, "refs"), exist_ok=True)
    with open(os.path.join(root, "refs", revision if revision != commit else "main"), "w") as f:
        f.write(commit)
    return snapshot
