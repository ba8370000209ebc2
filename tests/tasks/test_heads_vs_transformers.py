"""Converted heads give transformers' logits: MLM (every family), ELECTRA replaced-token
detection, and the SQuAD-style QA span head."""

import hf_models as H
import numpy as np
import pytest

import biozoo

MLM_CASES = [
    ("bert", "BertForMaskedLM"), ("bert", "BertForPreTraining"), ("albert", "AlbertForMaskedLM"),
    ("electra", "ElectraForMaskedLM"), ("distilbert", "DistilBertForMaskedLM"),
    ("mobilebert", "MobileBertForMaskedLM"), ("mobilebert_layer_norm", "MobileBertForMaskedLM"),
    ("megatron_bert", "MegatronBertForMaskedLM"),
]


def save(name, cls, tmp_path, tiny_spiece, **overrides):
    model = H.make_model(name, cls, **overrides)
    tokenizer = "sentencepiece" if name.startswith("albert") else "wordpiece"
    return model, H.save_hf_directory(model, tmp_path / "hf", "safetensors", tokenizer, tiny_spiece)


def torch_inputs(inputs, with_types=True):
    import torch

    out = {"input_ids": torch.tensor(inputs["token_ids"]).long(),
           "attention_mask": torch.tensor(inputs["padding_mask"]).long()}
    if with_types:
        out["token_type_ids"] = torch.tensor(inputs["segment_ids"]).long()
    return out


@pytest.mark.parametrize("name, cls", MLM_CASES)
def test_masked_lm_logits(name, cls, tmp_path, tiny_spiece):
    import torch

    model, directory = save(name, cls, tmp_path, tiny_spiece)
    mlm = biozoo.MaskedLM.from_preset(str(directory))
    inputs = H.random_inputs()
    positions = np.array([[1, 3, 5], [0, 2, 9], [4, 5, 6]], np.int32)
    ours = mlm({**inputs, "mask_positions": positions}).numpy()
    with torch.no_grad():
        out = model(**torch_inputs(inputs, name != "distilbert"))
        logits = (out.prediction_logits if hasattr(out, "prediction_logits") else out.logits).numpy()
    expected = np.take_along_axis(logits, positions[..., None], axis=1)
    assert np.abs(ours - expected).max() <= 1e-4 * max(1.0, np.abs(expected).max())


def test_replaced_token_detection_logits(tmp_path, tiny_spiece):
    import torch

    model, directory = save("electra", "ElectraForPreTraining", tmp_path, tiny_spiece)
    rtd = biozoo.ReplacedTokenDetector.from_preset(str(directory))
    inputs = H.random_inputs()
    with torch.no_grad():
        expected = model(**torch_inputs(inputs)).logits.numpy()
    assert H.max_diff(rtd(inputs), expected, inputs["padding_mask"]) <= 1e-4


@pytest.mark.parametrize("name, cls", [("electra", "ElectraForQuestionAnswering"),
                                       ("albert", "AlbertForQuestionAnswering")])
def test_converted_qa_head_is_used(name, cls, tmp_path, tiny_spiece):
    import torch

    model, directory = save(name, cls, tmp_path, tiny_spiece)
    qa = biozoo.QuestionAnswerer.from_preset(str(directory))
    inputs = H.random_inputs()
    with torch.no_grad():
        out = model(**torch_inputs(inputs))
    logits = qa(inputs).numpy()
    assert H.max_diff(logits[..., 0], out.start_logits.numpy(), inputs["padding_mask"]) <= 1e-4
    assert H.max_diff(logits[..., 1], out.end_logits.numpy(), inputs["padding_mask"]) <= 1e-4
