"""Checkpoint file variants: sharded safetensors and .bin, fp16/bf16 weights, legacy names."""

import json

import pytest

import biozoo
from biozoo import testing as H


def save_sharded(model, directory, dtype, fmt):
    """Save `model` in two shards with an index, weights cast to `dtype`."""
    import torch

    H.save_hf_directory(model, directory)  # config + vocabulary
    (directory / "model.safetensors").unlink()
    state = {k: v.to(dtype).contiguous() for k, v in model.state_dict().items()}
    keys = sorted(state)
    shards = {f"part-00001-of-00002.{fmt}": keys[::2], f"part-00002-of-00002.{fmt}": keys[1::2]}
    weight_map = {}
    for filename, names in shards.items():
        part = {k: state[k] for k in names}
        if fmt == "safetensors":
            from safetensors.torch import save_file

            save_file({k: v.clone() for k, v in part.items()}, directory / filename)
        else:
            torch.save(part, directory / filename)
        weight_map.update({k: filename for k in names})
    index = "model.safetensors.index.json" if fmt == "safetensors" else "pytorch_model.bin.index.json"
    (directory / index).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


@pytest.mark.parametrize("fmt", ["safetensors", "bin"])
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_sharded_half_precision_checkpoints(fmt, dtype_name, tmp_path):
    torch = pytest.importorskip("torch")
    dtype = getattr(torch, dtype_name)
    model = H.make_model("megatron_bert", "MegatronBertForMaskedLM")
    save_sharded(model, tmp_path, dtype, fmt)
    reference = model.to(dtype).float()  # the weights exactly as stored, computed in float32
    backbone = biozoo.from_preset(str(tmp_path))
    assert all(w.dtype == "float32" for w in backbone.weights)
    inputs = H.random_inputs()
    sequence, _ = H.hf_outputs(reference, inputs)
    assert H.max_diff(backbone(inputs)["sequence_output"], sequence, inputs["padding_mask"]) <= 1e-4


def test_legacy_layernorm_gamma_beta_names(tmp_path):
    """Old TF-converted BERT .bin files store LayerNorm.gamma / LayerNorm.beta."""
    torch = pytest.importorskip("torch")
    model = H.make_model("bert", "BertModel")
    H.save_hf_directory(model, tmp_path, "bin")
    state = torch.load(tmp_path / "pytorch_model.bin", weights_only=True)
    legacy = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
              for k, v in state.items()}
    assert any(k.endswith("gamma") for k in legacy)
    torch.save(legacy, tmp_path / "pytorch_model.bin")
    inputs = H.random_inputs()
    sequence, _ = H.hf_outputs(model, inputs)
    assert H.max_diff(biozoo.from_preset(str(tmp_path))(inputs)["sequence_output"], sequence, inputs["padding_mask"]) <= 1e-4
