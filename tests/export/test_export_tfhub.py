"""TF Hub SavedModels: exported by biozoo, loaded in a process that cannot import biozoo or
Keras; ids equal to the HF tokenizer's (single sentences and pairs), outputs equal to
transformers."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from biozoo import testing as H
from biozoo.export.tfhub import export_hub

CHILD = Path(__file__).with_name("keras_free_child.py")
SEQ_LENGTH = 64


def run_keras_free(export_dir, request, tmp_path, keras_free_site_dir):
    request_path = tmp_path / "request.json"
    request_path.write_text(json.dumps(request), encoding="utf-8")
    out_path = tmp_path / "out.npz"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(keras_free_site_dir(tmp_path))
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    result = subprocess.run(
        [sys.executable, "-S", str(CHILD), str(export_dir), str(request_path), str(out_path)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return dict(np.load(out_path))


def type_ids(batch, hf_tokenizer):
    """HF's token_type_ids; where the tokenizer returns none (transformers 5's ALBERT), the
    BERT rule it documents: 0 through the first [SEP], 1 after, 0 on padding."""
    if "token_type_ids" in batch:
        return batch["token_type_ids"]
    ids, mask = np.asarray(batch["input_ids"]), np.asarray(batch["attention_mask"])
    after_first_sep = np.cumsum(ids == hf_tokenizer.sep_token_id, axis=1) - (ids == hf_tokenizer.sep_token_id)
    return ((after_first_sep >= 1) & (mask == 1)).astype(int)


def check_export(export_dir, hf_dir, sentences, tmp_path, expect_pooler, keras_free_site_dir):
    import torch
    import transformers

    pairs = [(sentences[i], sentences[-1 - i]) for i in range(len(sentences) // 2)]
    # pairs that must be trimmed, with an odd budget (SEQ_LENGTH - 2 less [CLS] and two [SEP]):
    # HF's longest-first gives the odd token to the longer text, on a tie the second (round
    # robin gives it to the first)
    long, longer = " ".join(sentences[3:5]), " ".join(sentences[:3])
    pairs += [(longer, long), (long, longer), (longer, longer)]
    pair_length = SEQ_LENGTH - 2
    request = {"singles": sentences, "pairs": pairs, "pair_seq_length": pair_length}
    got = run_keras_free(export_dir, request, tmp_path, keras_free_site_dir)
    assert json.loads(str(got["modules"])) == []

    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(hf_dir))
    expected_ids = [hf_tokenizer(s, add_special_tokens=False)["input_ids"] for s in sentences]
    assert json.loads(str(got["tokenize"])) == expected_ids

    singles = hf_tokenizer(sentences, truncation=True, max_length=SEQ_LENGTH, padding="max_length")
    np.testing.assert_array_equal(got["single/input_word_ids"], singles["input_ids"])
    np.testing.assert_array_equal(got["single/input_mask"], singles["attention_mask"])
    np.testing.assert_array_equal(got["single/input_type_ids"], type_ids(singles, hf_tokenizer))
    pair_batch = hf_tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation="longest_first",
                              max_length=pair_length, padding="max_length")
    budget = pair_length - 3
    assert budget % 2 == 1 and min(len(hf_tokenizer(text, add_special_tokens=False)["input_ids"])
                                   for text in (long, longer)) > budget // 2 + 1, "no pair cut to halves"
    np.testing.assert_array_equal(got["pair/input_word_ids"], pair_batch["input_ids"])
    np.testing.assert_array_equal(got["pair/input_type_ids"], type_ids(pair_batch, hf_tokenizer))

    model = transformers.AutoModel.from_pretrained(str(hf_dir)).eval()
    with torch.no_grad():
        reference = model(input_ids=torch.tensor(singles["input_ids"]),
                          attention_mask=torch.tensor(singles["attention_mask"]))
    mask = np.asarray(singles["attention_mask"]).astype(bool)
    diff = np.abs(got["sequence_output"] - reference.last_hidden_state.numpy())[mask].max()
    print(f"hub export max |diff| sequence_output: {diff:.2e}")
    assert diff <= 1e-4
    metadata = json.loads(str(got["metadata"]))
    if expect_pooler:
        assert metadata["pooled_output"] == "pooler"
        assert np.abs(got["pooled_output"] - reference.pooler_output.numpy()).max() <= 1e-4
    else:
        assert metadata["pooled_output"] == "cls_hidden_state"
        np.testing.assert_allclose(got["pooled_output"], got["sequence_output"][:, 0], atol=1e-6)
    assert int(got["num_encoder_outputs"]) == model.config.num_hidden_layers


@pytest.mark.slow
def test_minilm_hub_export_without_biozoo_or_keras(minilm_dir, corpus_sentences, tmp_path, keras_free_site_dir):
    pytest.importorskip("transformers")
    sentences = corpus_sentences[:40] + ["naïve T-cells (CD4+) at 5 µM Σ-receptor", "IL-2\u00adreceptor\u200bα"]
    export_hub(str(minilm_dir), tmp_path / "export", seq_length=SEQ_LENGTH)
    assert (tmp_path / "export" / "README.md").exists()
    check_export(tmp_path / "export", minilm_dir, sentences, tmp_path, expect_pooler=True,
                 keras_free_site_dir=keras_free_site_dir)


@pytest.mark.slow
@pytest.mark.parametrize("family, model_cls", [("albert", "AlbertModel"), ("electra", "ElectraModel")])
def test_tiny_hub_export(family, model_cls, corpus_spiece, corpus_sentences, tiny_bert_real_vocab, minilm_dir, tmp_path,
                         keras_free_site_dir):
    """With tokens added as HF's add_tokens adds them (matched in the normalized text: "covid19" is
    "COVID19" here) and raw ones, which the exported graph matches as HF does."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import AddedToken

    added = ["COVID19", "@GENE$", AddedToken("<e1>", normalized=False), AddedToken("RawTok", normalized=False)]
    if family == "albert":
        model = H.make_model("albert", "AlbertModel", vocab_size=2000 + len(added))
        hf_dir = H.save_hf_directory(model, tmp_path / "hf", tokenizer="sentencepiece", spiece_model=corpus_spiece)
    else:
        model = H.make_model("electra", "ElectraModel", vocab_size=30522 + len(added))
        hf_dir = H.save_hf_directory(model, tmp_path / "hf", vocab_file=minilm_dir / "vocab.txt")
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(hf_dir))
    assert hf_tokenizer.add_tokens(added) == len(added)
    hf_tokenizer.save_pretrained(str(hf_dir))
    variants = ["covid19 COVID19 @gene$ x@GENE$y <E1> <e1> rawtok RawTok", "Naïve ``T-cells'' Ⅱ"]
    export_hub(str(hf_dir), tmp_path / "export", seq_length=SEQ_LENGTH)
    check_export(tmp_path / "export", hf_dir, corpus_sentences[:40] + variants, tmp_path,
                 expect_pooler=family == "albert", keras_free_site_dir=keras_free_site_dir)
