"""Tiny random-weight transformers models of every family, saved as HF directories.

The configs are small but exercise every architectural switch (embedding projection,
shared ALBERT groups, MobileBERT bottlenecks and stacked FFNs, pre-LN Megatron), and use
initializer_range 0.2 so that an approximate GELU or a wrong epsilon shows in the outputs.
"""

from __future__ import annotations

import inspect
import re
import json
import os

import numpy as np

VOCAB_SIZE = 99
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def wordpiece_vocab():
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    words = ["the", "gene", "cancer", "protein", "cell", "##s", "##ing", "##ed", "brca", "##1", ".", ",", "(", ")", "-"]
    tokens = list(dict.fromkeys(SPECIAL + words + letters + ["##" + c for c in letters]))
    tokens += [f"[unused{i}]" for i in range(VOCAB_SIZE - len(tokens))]
    return tokens[:VOCAB_SIZE]


# name -> (transformers config class, kwargs, model classes)
CONFIGS = {
    "bert": (
        "BertConfig",
        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
             max_position_embeddings=64, hidden_act="gelu"),
        ["BertModel", "BertForMaskedLM", "BertForPreTraining", "BertForQuestionAnswering"],
    ),
    "bert_gelu_new_eps": (
        "BertConfig",
        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
             max_position_embeddings=64, hidden_act="gelu_new", layer_norm_eps=1e-3, type_vocab_size=3),
        ["BertModel"],
    ),
    "albert": (
        "AlbertConfig",
        dict(embedding_size=16, hidden_size=32, num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2,
             num_attention_heads=4, intermediate_size=37, max_position_embeddings=64, hidden_act="gelu"),
        ["AlbertModel", "AlbertForMaskedLM", "AlbertForPreTraining", "AlbertForQuestionAnswering"],
    ),
    "electra": (
        "ElectraConfig",
        dict(embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
             max_position_embeddings=64, hidden_act="gelu"),
        ["ElectraModel", "ElectraForPreTraining", "ElectraForMaskedLM", "ElectraForQuestionAnswering"],
    ),
    "distilbert": (
        "DistilBertConfig",
        dict(dim=32, n_layers=2, n_heads=4, hidden_dim=37, max_position_embeddings=64, activation="gelu"),
        ["DistilBertModel", "DistilBertForMaskedLM", "DistilBertForQuestionAnswering"],
    ),
    "mobilebert": (
        "MobileBertConfig",
        dict(embedding_size=16, hidden_size=64, intra_bottleneck_size=32, true_hidden_size=32,
             num_attention_heads=4, intermediate_size=48, num_hidden_layers=2, num_feedforward_networks=3,
             max_position_embeddings=64, hidden_act="relu", normalization_type="no_norm",
             classifier_activation=False,
             # NoNorm never renormalises: at 0.2 the states reach ~70 and float32 rounding alone
             # nears 1e-4. ReLU and NoNorm have no GELU or epsilon to expose; the layer_norm
             # variant below keeps 0.2.
             initializer_range=0.1),
        ["MobileBertModel", "MobileBertForMaskedLM", "MobileBertForPreTraining", "MobileBertForQuestionAnswering"],
    ),
    "mobilebert_layer_norm": (
        "MobileBertConfig",
        dict(embedding_size=16, hidden_size=64, intra_bottleneck_size=32, true_hidden_size=32,
             num_attention_heads=4, intermediate_size=48, num_hidden_layers=2, num_feedforward_networks=2,
             max_position_embeddings=64, hidden_act="gelu", normalization_type="layer_norm",
             classifier_activation=True),
        ["MobileBertModel"],
    ),
    "megatron_bert": (
        "MegatronBertConfig",
        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
             max_position_embeddings=64, hidden_act="gelu"),
        ["MegatronBertModel", "MegatronBertForMaskedLM", "MegatronBertForPreTraining",
         "MegatronBertForQuestionAnswering"],
    ),
}

CASES = [(name, cls) for name, (_, _, classes) in CONFIGS.items() for cls in classes]


def make_config(name, **overrides):
    import transformers

    config_cls, kwargs, _ = CONFIGS[name]
    kwargs = {"initializer_range": 0.2, **kwargs, "vocab_size": VOCAB_SIZE, **overrides}
    return getattr(transformers, config_cls)(**kwargs)


def make_model(name, model_cls, seed=0, **overrides):
    import torch
    import transformers

    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(make_config(name, **overrides)).eval()
    # Random, non-trivial LayerNorm/NoNorm parameters and biases (HF initialises them to 1/0).
    with torch.no_grad():
        for param_name, param in model.named_parameters():
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
        import shutil

        shutil.copy(spiece_model, os.path.join(directory, "spiece.model"))
    elif vocab_file is not None:
        import shutil

        shutil.copy(vocab_file, os.path.join(directory, "vocab.txt"))
    else:
        with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(wordpiece_vocab()) + "\n")
        with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
            json.dump({"do_lower_case": True}, f)
    return directory


def random_inputs(batch=3, length=20, seed=0, num_segments=2):
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


def hf_outputs(model, inputs):
    """(sequence_output, pooled_output or None) of the model's base encoder."""
    import torch

    base = model.base_model
    kwargs = {
        "input_ids": torch.tensor(inputs["token_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(inputs["padding_mask"], dtype=torch.long),
    }
    if "token_type_ids" in inspect.signature(base.forward).parameters:
        kwargs["token_type_ids"] = torch.tensor(inputs["segment_ids"], dtype=torch.long)
    with torch.no_grad():
        out = base(**kwargs)
    pooled = getattr(out, "pooler_output", None)
    return out.last_hidden_state.numpy(), None if pooled is None else pooled.numpy()


def max_diff(ours, ref, mask):
    mask = np.asarray(mask).astype(bool)
    return float(np.abs(np.asarray(ours) - np.asarray(ref))[mask].max())


VARIANTS = {"bert_gelu_new_eps": "bert", "mobilebert_layer_norm": "mobilebert"}


def family_of(name):
    return VARIANTS.get(name, name)


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
    import shutil

    commit = revision if re.fullmatch(r"[0-9a-f]{40}", revision) else "0" * 40
    root = os.path.join(hf_cache, "models--" + repo.replace("/", "--"))
    snapshot = os.path.join(root, "snapshots", commit)
    shutil.copytree(source_dir, snapshot, dirs_exist_ok=True)
    os.makedirs(os.path.join(root, "refs"), exist_ok=True)
    with open(os.path.join(root, "refs", revision if revision != commit else "main"), "w") as f:
        f.write(commit)
    return snapshot
