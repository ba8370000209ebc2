"""An MLM decoder is converted only where it is tied to the word embedding, as biozoo's
masked-LM heads are: an untied one (tie_word_embeddings false), which transformers' own
*ForMaskedLM uses as stored, is refused naming the tensor, not dropped."""

import os
import re

import numpy as np
import pytest

import biozoo
from biozoo import presets
from biozoo import testing as H
from biozoo.errors import CheckpointError

MASKED_LMS = [("bert", "BertForMaskedLM", "cls.predictions.decoder.weight"),
              ("albert", "AlbertForMaskedLM", "predictions.decoder.weight"),
              ("electra", "ElectraForMaskedLM", "generator_lm_head.weight"),
              ("distilbert", "DistilBertForMaskedLM", "vocab_projector.weight"),
              ("mobilebert", "MobileBertForMaskedLM", "cls.predictions.decoder.weight"),
              ("megatron_bert", "MegatronBertForMaskedLM", "cls.predictions.decoder.weight")]


@pytest.mark.parametrize("name, hf_class, decoder", MASKED_LMS)
def test_an_untied_decoder_is_refused_naming_it(name, hf_class, decoder, tmp_path):
    model, directory = H.save_case(name, hf_class, tmp_path / name, tie_word_embeddings=False)
    weights = dict(model.named_parameters())
    untied = [key for key in weights if key.endswith(decoder)]
    assert untied and not np.array_equal(weights[untied[0]].detach().numpy(),
                                         model.get_input_embeddings().weight.detach().numpy())
    # the weight, or first its bias (untied from the head's bias as well)
    module = re.escape(decoder.rsplit(".", 1)[0])
    with pytest.raises(CheckpointError, match=rf"'{module}\.(weight' differs from '[a-z_.]*word_embeddings\.weight|"
                                              rf"bias' differs from '[a-z_.]*bias)'.*tie_word_embeddings false"):
        presets.resolve_preset(str(directory))


def assert_masked_lm_gives_transformers_logits(model, preset):
    import torch

    inputs = H.case_inputs(model)
    with torch.no_grad():
        logits = model(**H.torch_inputs(model, inputs)).logits.numpy()
    positions = np.tile(np.arange(inputs["token_ids"].shape[1], dtype=np.int32), (len(logits), 1))
    ours = np.asarray(biozoo.MaskedLM.from_preset(preset)({**inputs, "mask_positions": positions}))
    assert H.max_diff(ours, logits, inputs["padding_mask"]) <= H.TOLERANCE


@pytest.mark.parametrize("name, hf_class, decoder", MASKED_LMS[:1])
def test_a_tied_decoder_saved_as_a_copy_converts(name, hf_class, decoder, tmp_path):
    """A .bin (torch.save) keeps the tied decoder as a tensor of its own, equal to the embedding."""
    import torch

    model, directory = H.save_case(name, hf_class, tmp_path / name, fmt="bin")
    saved = torch.load(directory / "pytorch_model.bin", weights_only=True)
    assert any(key.endswith(decoder) for key in saved)  # the premise: the tied copy is in the file
    converted = presets.resolve_preset(str(directory))
    assert_masked_lm_gives_transformers_logits(model, converted)  # the head built from it


def test_a_head_bias_saved_only_as_the_decoders_converts(tmp_path):
    """The MLM head's bias and the decoder's are one tensor in transformers; a save that kept only
    `cls.predictions.decoder.bias` gives the head its bias (it was dropped, and the head unloadable)."""
    from safetensors.numpy import load_file, save_file

    model, directory = H.save_case("bert", "BertForMaskedLM", tmp_path / "bert")
    weights = load_file(directory / "model.safetensors")
    weights["cls.predictions.decoder.bias"] = weights.pop("cls.predictions.bias")
    save_file(weights, directory / "model.safetensors", metadata={"format": "pt"})
    converted = presets.resolve_preset(str(directory))
    assert_masked_lm_gives_transformers_logits(model, converted)
    # the heads are as readable as the rest of the preset (safetensors makes its files private)
    modes = {name: os.stat(os.path.join(converted, name)).st_mode & 0o777 for name in ("heads.safetensors", "config.json")}
    assert modes["heads.safetensors"] == modes["config.json"], modes


def test_a_preset_missing_a_head_tensor_names_the_file_and_tensor(tmp_path):
    import shutil

    from safetensors.numpy import load_file, save_file

    _, directory = H.save_case("bert", "BertForMaskedLM", tmp_path / "bert")
    preset = tmp_path / "preset"
    shutil.copytree(presets.resolve_preset(str(directory)), preset)
    heads = load_file(preset / "heads.safetensors")
    del heads["mlm/output_bias"]
    save_file(heads, preset / "heads.safetensors")
    with pytest.raises(CheckpointError, match=r"heads.safetensors: no 'mlm/output_bias' tensor: the mlm head is "
                                              r"incomplete"):
        biozoo.MaskedLM.from_preset(str(preset))
