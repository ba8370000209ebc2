"""HF -> biozoo preset -> HF: transformers loads the export and gives the original outputs;
its tokenizer gives biozoo's ids. Every case of biozoo.testing.CASES."""

import json
import shutil

import numpy as np
import pytest

import biozoo
from biozoo import testing as H
from biozoo.export.hf import export_hf


@pytest.mark.parametrize("name, model_cls", H.cases(kind="hf_export"))
def test_hf_round_trip(name, model_cls, tmp_path, tiny_spiece):
    transformers = pytest.importorskip("transformers")
    model, source = H.save_case(name, model_cls, tmp_path, "bin", tiny_spiece)
    export_hf(str(source), tmp_path / "exported")
    reloaded = transformers.AutoModel.from_pretrained(str(tmp_path / "exported")).eval()
    assert type(reloaded).__name__ == model_cls
    inputs = H.case_inputs(model)
    expected, expected_pooled = H.hf_outputs(model, inputs)
    got, got_pooled = H.hf_outputs(reloaded, inputs)
    assert H.max_diff(got, expected, inputs["padding_mask"]) <= 1e-4
    if expected_pooled is not None and model.base_model.pooler is not None and hasattr(model.base_model.pooler, "dense"):
        assert np.abs(got_pooled - expected_pooled).max() <= 1e-4
    texts = ["the brca1 gene (cancer) cells.", "protein-cell"]
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "exported"))
    ours = biozoo.Tokenizer.from_preset(str(source))
    assert [theirs(t, add_special_tokens=False)["input_ids"] for t in texts] == ours.ids(texts)
    # truncation=True cuts at the model's positions, as transformers' tokenizer of a checkpoint does
    positions = model.config.max_position_embeddings
    long_text = " ".join(["protein"] * (2 * positions))
    assert len(theirs(long_text, truncation=True)["input_ids"]) == positions


NORMALIZED = ["COVID19", "@GENE$"]  # HF's add_tokens: matched in the normalized text
RAW = ["<e1>", "RawTok"]  # AddedToken(normalized=False): matched in the raw text only
CASE_VARIANTS = ["covid19 COVID19 Covid19 @gene$ @GENE$ <E1> <e1> rawtok RawTok xRawToky", "x@gene$y the gene"]


@pytest.mark.parametrize("kind", ["wordpiece", "sentencepiece"])
def test_exported_added_tokens_are_matched_as_they_were_added(kind, tmp_path, tiny_spiece):
    """Added tokens keep how they are matched through the export: transformers' tokenizer of the
    export, and one built by transformers with the same `add_tokens`, give biozoo's ids."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import AddedToken

    from biozoo.export.hf import tokenizer_files

    source = tmp_path / "source"
    source.mkdir()
    model_type = "bert" if kind == "wordpiece" else "albert"
    (source / "config.json").write_text('{"model_type": "%s"}' % model_type)
    (source / "tokenizer_config.json").write_text('{"do_lower_case": true}')
    if kind == "wordpiece":
        (source / "vocab.txt").write_text("\n".join(H.wordpiece_vocab()) + "\n")
        ours = biozoo.tokenizers.WordPieceTokenizer(vocabulary=str(source / "vocab.txt"), lowercase=True)
    else:
        shutil.copy(tiny_spiece, source / "spiece.model")
        ours = biozoo.tokenizers.SentencePieceTokenizer(proto=str(tiny_spiece), lowercase=True)
    reference = transformers.AutoTokenizer.from_pretrained(str(source))
    reference.add_tokens(NORMALIZED)
    reference.add_tokens([AddedToken(t, normalized=False) for t in RAW])
    ours = ours.with_added_tokens(NORMALIZED, normalized=True).with_added_tokens(RAW)
    expected = reference(CASE_VARIANTS, add_special_tokens=False)["input_ids"]
    assert ours.ids(CASE_VARIANTS) == expected
    assert expected[0].count(reference.convert_tokens_to_ids("COVID19")) == 3  # the premise: normalized matching
    assert expected[0].count(reference.convert_tokens_to_ids("<e1>")) == 1

    exported = tmp_path / "exported"
    exported.mkdir()
    tokenizer_files(ours, exported)
    (exported / "config.json").write_text(json.dumps({"model_type": model_type, "vocab_size": len(reference)}))
    theirs = transformers.AutoTokenizer.from_pretrained(str(exported))
    assert theirs(CASE_VARIANTS, add_special_tokens=False)["input_ids"] == expected
    assert biozoo.Tokenizer.from_preset(str(exported)).ids(CASE_VARIANTS) == expected  # and back

    # added_tokens.json alone (as older transformers saved it): transformers matches every added
    # token in the normalized text, and so does biozoo reading it
    config = json.loads((exported / "tokenizer_config.json").read_text())
    del config["added_tokens_decoder"]
    (exported / "tokenizer_config.json").write_text(json.dumps(config))
    legacy = transformers.AutoTokenizer.from_pretrained(str(exported))(CASE_VARIANTS, add_special_tokens=False)
    assert legacy["input_ids"] != expected  # the premise: "<E1>" is now "<e1>"
    assert biozoo.Tokenizer.from_preset(str(exported)).ids(CASE_VARIANTS) == legacy["input_ids"]


def test_exported_tokenizer_keeps_cjk_characters_in_their_words(tmp_path):
    """A WordPiece tokenizer without tokenize_chinese_chars exports it: transformers' tokenizer of
    the export gives biozoo's ids, CJK characters inside their words."""
    transformers = pytest.importorskip("transformers")
    from biozoo.export.hf import tokenizer_files

    vocab = H.wordpiece_vocab() + ["中", "##文", "文", "基因", "##基因"]
    ours = biozoo.tokenizers.WordPieceTokenizer(vocabulary=vocab, lowercase=True, tokenize_chinese_chars=False)
    texts = ["中文 the 基因", "gene基因 中文基因", "文中"]
    tokenizer_files(ours, tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": len(vocab)}))
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    expected = theirs(texts, add_special_tokens=False)["input_ids"]
    assert expected[1] == [vocab.index(t) for t in ("gene", "##基因", "中", "##文", "##基因")]  # the premise
    assert ours.ids(texts) == expected


def test_exported_albert_classifier_reads_a_pair_as_biozoo_does(tmp_path, tiny_spiece):
    """transformers' ALBERT tokenizer returns token_type_ids for the export (the second text in
    segment 1), so its text-classification pipeline scores a pair as biozoo does."""
    transformers = pytest.importorskip("transformers")
    from biozoo.export.hf import export_hf_task

    _, source = H.save_case("albert", "AlbertModel", tmp_path, "safetensors", tiny_spiece)
    task = biozoo.SequenceClassifier.from_preset(str(source), label_names=["a", "b", "c"])
    kernel, bias = task.output_dense.get_weights()
    task.output_dense.set_weights([np.random.default_rng(1).normal(0, 3, kernel.shape).astype("float32"), bias])
    export_hf_task(task, tmp_path / "exported")
    pipeline = transformers.pipeline("text-classification", model=str(tmp_path / "exported"), top_k=None, device="cpu")
    pairs = [("the gene cancer", "cell protein the"), ("protein-cell", "the brca1 gene (cancer) cells.")]
    for text, pair in pairs:
        expected = pipeline({"text": text, "text_pair": pair})
        got = task.classify([text], pairs=[pair])[0]
        assert [r["label"] for r in got] == [r["label"] for r in expected]
        np.testing.assert_allclose([r["score"] for r in got], [r["score"] for r in expected], atol=1e-4)
    encoded = pipeline.tokenizer(*pairs[0])
    assert encoded["token_type_ids"] == task.preprocessor.encode([pairs[0][0]], [pairs[0][1]])[0][1].tolist()


@pytest.mark.parametrize("name", ["bert", "distilbert"])
def test_exported_word_length_limit_is_transformers(name, tmp_path):
    """A WordPiece limit on a word's characters other than transformers' default (the tokenizer.json
    of a checkpoint whose tokenizer_config.json names the generic class may set one) survives the
    export: transformers' BertTokenizer keeps its default whatever its files say, so the export
    names the generic class, which runs tokenizer.json as written. Its ids equal the source's HF
    tokenizer with that limit, and biozoo's."""
    transformers = pytest.importorskip("transformers")
    import torch

    _, source = H.save_case(name, H.get_case(name).model_class, tmp_path, "safetensors")
    engine = transformers.AutoTokenizer.from_pretrained(str(source)).backend_tokenizer
    engine.model.max_input_chars_per_word = 6
    engine.save(str(source / "tokenizer.json"))
    (source / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast",
                                                              "unk_token": "[UNK]", "pad_token": "[PAD]",
                                                              "model_input_names": ["input_ids", "token_type_ids", "attention_mask"]}))
    reference = transformers.AutoTokenizer.from_pretrained(str(source))
    assert reference.backend_tokenizer.model.max_input_chars_per_word == 6
    ours = biozoo.Tokenizer.from_preset(str(source))
    assert ours.max_input_chars_per_word == 6

    export_hf(str(source), tmp_path / "exported")
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "exported"))
    assert theirs.backend_tokenizer.model.max_input_chars_per_word == 6
    texts = ["the proteins cancers", "protein (brca1) cancer-cells genes", "Café proteinic"]
    expected = reference(texts)["input_ids"]
    assert expected[0].count(reference.unk_token_id) == 2  # the premise: "proteins", "cancers" are too long
    assert theirs(texts)["input_ids"] == expected
    assert [[ours.cls_token_id, *ids, ours.sep_token_id] for ids in ours.ids(texts)] == expected
    pair, expected_pair = theirs(texts[0], texts[1]), reference(texts[0], texts[1])
    assert pair["input_ids"] == expected_pair["input_ids"]
    if name != "distilbert":  # which has no token types (transformers 4's DistilBertTokenizer gives none)
        assert pair["token_type_ids"] == expected_pair["token_type_ids"]
    model = transformers.AutoModel.from_pretrained(str(tmp_path / "exported")).eval()
    with torch.no_grad():
        model(**theirs(texts, padding=True, return_tensors="pt"))
    assert biozoo.Tokenizer.from_preset(str(tmp_path / "exported")).ids(texts) == ours.ids(texts)
