"""Every family, every published HF class, safetensors and pytorch_model.bin:
from_preset(dir) equals transformers to max |diff| <= 1e-4 (sequence and pooled output)."""

import hf_models as H
import numpy as np
import pytest

import biozoo

TOLERANCE = 1e-4


@pytest.mark.parametrize("fmt", ["safetensors", "bin"])
@pytest.mark.parametrize("name, model_cls", H.CASES)
def test_from_preset_matches_transformers(name, model_cls, fmt, tmp_path, tiny_spiece):
    model = H.make_model(name, model_cls)
    tokenizer = "sentencepiece" if name.startswith("albert") else "wordpiece"
    directory = H.save_hf_directory(model, tmp_path / "hf", fmt, tokenizer, tiny_spiece)

    backbone = biozoo.from_preset(str(directory))
    inputs = H.random_inputs(num_segments=getattr(model.config, "type_vocab_size", 2))
    outputs = backbone(inputs)
    sequence, pooled = H.hf_outputs(model, inputs)

    assert H.max_diff(outputs["sequence_output"], sequence, inputs["padding_mask"]) <= TOLERANCE
    if pooled is not None:
        assert "pooled_output" in outputs
        assert np.abs(outputs["pooled_output"].numpy() - pooled).max() <= TOLERANCE
    if H.family_of(name) in ("electra", "distilbert"):
        assert set(outputs) == {"sequence_output"}  # no invented pooler


HEAD_SOURCES = {
    # model class -> heads the converted preset must keep
    "BertForMaskedLM": {"mlm"},
    "BertForPreTraining": {"mlm", "nsp"},
    "BertForQuestionAnswering": {"qa"},
    "AlbertForMaskedLM": {"mlm"},
    "AlbertForPreTraining": {"mlm", "sop"},
    "AlbertForQuestionAnswering": {"qa"},
    "ElectraForPreTraining": {"rtd"},
    "ElectraForMaskedLM": {"mlm"},
    "ElectraForQuestionAnswering": {"qa"},
    "DistilBertForMaskedLM": {"mlm"},
    "DistilBertForQuestionAnswering": {"qa"},
    "MobileBertForMaskedLM": {"mlm"},
    "MobileBertForPreTraining": {"mlm", "nsp"},
    "MobileBertForQuestionAnswering": {"qa"},
    "MegatronBertForMaskedLM": {"mlm"},
    "MegatronBertForPreTraining": {"mlm", "nsp"},
    "MegatronBertForQuestionAnswering": {"qa"},
}


@pytest.mark.parametrize("name, model_cls", [c for c in H.CASES if c[1] in HEAD_SOURCES])
def test_heads_are_kept_in_the_preset(name, model_cls, tmp_path, tiny_spiece):
    """The heads are converted with the same layout rules, checked against the torch tensors."""
    from biozoo import presets
    from biozoo.preset_files import read_heads

    model = H.make_model(name, model_cls)
    tokenizer = "sentencepiece" if name.startswith("albert") else "wordpiece"
    directory = H.save_hf_directory(model, tmp_path / "hf", "safetensors", tokenizer, tiny_spiece)
    preset = presets.resolve_preset(str(directory))
    heads, config = read_heads(preset)
    assert {key.split("/")[0] for key in heads} == HEAD_SOURCES[model_cls]
    assert set(config) == HEAD_SOURCES[model_cls]
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    for head in HEAD_SOURCES[model_cls]:
        for source, target in H.HEAD_TENSORS[head].items():
            key = next((k for k in state if k.endswith(source)), None)
            if key is None:
                continue  # e.g. no transform.LayerNorm for ELECTRA's discriminator head
            if target.endswith("!"):
                target, expected = target[:-1], state[key]
            else:
                expected = state[key].T if target.endswith("kernel") else state[key]
            np.testing.assert_array_equal(heads[f"{head}/{target}"], expected)
