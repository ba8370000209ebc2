"""biozoo reads a tokenizer from tokenizer.json alone, as transformers 5 saves it (no vocab.txt,
no spiece.model), and gives the HF tokenizer's ids on real biomedical sentences and hard cases,
for every family, cased and uncased, with entity markers added by `add_tokens` (which HF matches
in the normalized text: "@gene$" is the marker too where the tokenizer lower-cases), in both
engines (eager, and tensorflow-text's in a graph)."""

import json
import os
import re
import shutil

import pytest
import tensorflow as tf

transformers = pytest.importorskip("transformers")

import biozoo  # noqa: E402
from biozoo import testing as H  # noqa: E402
from biozoo.errors import CheckpointError  # noqa: E402
from biozoo.tokenizers import tf_text_engine, tokenizer_json  # noqa: E402

TRANSFORMERS_5_FILES = ["tokenizer.json", "tokenizer_config.json"]
MARKERS = ["@GENE$", "@DISEASE$", "@CHEMICAL$"]  # entity markers, added with `add_tokens`
EXTRA_SPECIAL = ["<e1>", "</e1>"]  # added with `add_special_tokens`
# Special tokens that NFKD makes: HF's Unigram model produces their pieces, and so does biozoo, from
# tokenizer.json or spiece.model (which holds them as control pieces, never produced by SentencePiece).
FULLWIDTH_SPECIALS = "fullwidth ＜pad＞ x［CLS］ ［MASK］y"
HARD_CASES = [
    "ΟΔΟΣ Σίσυφος: α-β γ-δ Δ9-THC, TGF-β1 and IFN-γ; κ-opioid",
    "İstanbul ß ﬁ µg µM m² ™ café naïve Ångström Schrödinger",
    "soft\u00adhyphen zero\u200bwidth no\u00a0break thin\u2009space x\u0085y",
    "control\x00chars\x01 bell\x07 tab\tdel\x7f esc\x1b end",
    "中文 漢字 text 日本語 한국어 (CJK) 蛋白质abc",
    "TNF‐α – 5 µM ± 2 °C × 10⁻³ ≥ 3 ‰",
    "a" * 150 + " " + "é" * 101 + " " + "x" * 100 + " pneumonoultramicroscopicsilicovolcanoconiosis",
    "@GENE$ binds @CHEMICAL$ in @DISEASE$; @GENE$@GENE$ x@GENE$y <e1>BRCA1</e1>",
    "@gene$ binds @Chemical$ in @disease$s; x@gene$y @GÉNE$ <E1>BRCA1</E1> @ＧＥＮＥ$",
    "IL-2 receptor [SEP] foo[CLS]bar [MASK] [UNK] [PAD]",
    "Na+/K+-ATPase; Ca2+; [3H]-thymidine; 5'-UTR; p53-/-; ``quoted'' text",
    "\ttabs\nand\r\nnewlines   and   spaces  ",
    "",
    FULLWIDTH_SPECIALS,
]
WORDPIECE_FAMILIES = sorted({c.family for c in H.CASES.values() if c.tokenizer == "wordpiece"})
# HF's model_type of each family (biozoo's names use "_")
MODEL_TYPES = {"megatron_bert": "megatron-bert"}
WORDPIECE_CASING = {
    "uncased": {"do_lower_case": True},
    "cased": {"do_lower_case": False},
    "cased_strip_accents": {"do_lower_case": False, "strip_accents": True},
    "uncased_keep_accents": {"do_lower_case": True, "strip_accents": False},
}
ALBERT_CASING = {
    "uncased": {"do_lower_case": True},
    "cased": {"do_lower_case": False},
    "uncased_keep_accents": {"do_lower_case": True, "keep_accents": True},
    "cased_keep_accents": {"do_lower_case": False, "keep_accents": True},
}


def model_type(family):
    return MODEL_TYPES.get(family, family)


def write_config(directory, family, vocab_size=None):
    """A config.json of `family` (with transformers' default vocab_size when None)."""
    config = {"model_type": model_type(family)}
    if vocab_size is not None:
        config["vocab_size"] = vocab_size
    (directory / "config.json").write_text(json.dumps(config))


def save_with_transformers(source, target, family, **kwargs):
    """The HF tokenizer of `source` (vocab.txt / spiece.model) with entity markers added, saved
    by `save_pretrained` into `target` with a config.json of `family`. Returns the tokenizer."""
    write_config(source, family)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source), **kwargs)
    tokenizer.add_tokens(MARKERS)
    tokenizer.add_special_tokens({"additional_special_tokens": EXTRA_SPECIAL})
    tokenizer.save_pretrained(str(target))
    assert sorted(os.listdir(target)) == TRANSFORMERS_5_FILES  # the premise: no vocab.txt / spiece.model
    write_config(target, family, len(tokenizer))
    return tokenizer


def hf_ids(tokenizer, texts):
    return tokenizer(texts, add_special_tokens=False)["input_ids"]


def graph_ids(tokenizer, texts):
    return tf_text_engine.ids_function(tokenizer)(tf.constant(texts)).to_list()


def assert_same_ids(got, expected, texts, tied=False):
    """Equal ids for every text. With `tied`, under 1% of the texts may hold the same ids in
    another order: tensorflow-text's SentencePiece and HF's Unigram break ties between
    segmentations of equal score ("0" + "00" or "00" + "0" for "000") differently, as after
    an unknown character."""
    mismatches = [(t, g, e) for t, g, e in zip(texts, got, expected) if g != e]
    if tied:
        assert len(mismatches) < len(texts) / 100
        mismatches = [(t, g, e) for t, g, e in mismatches if sorted(g) != sorted(e)]
    assert not mismatches, f"{len(mismatches)} of {len(texts)} differ; first: %r\nours %s\nHF   %s" % mismatches[0]


@pytest.fixture(scope="module")
def sentences(corpus_sentences, shared_data):
    """~1,500 corpus sentences, GAD's sentences with @GENE$ / @DISEASE$ markers, hard cases."""
    lines = (shared_data / "re" / "gad" / "test.tsv").read_text(encoding="utf-8").splitlines()
    column = lines[0].split("\t").index("sentence")
    gad = [line.split("\t")[column] for line in lines[1:400]]
    assert sum("@GENE$" in s for s in gad) > 300
    return corpus_sentences + gad + HARD_CASES


@pytest.fixture(scope="module")
def cased_vocab(tmp_path_factory, ncbi_disease):
    """A cased, accent-keeping WordPiece vocab.txt trained on NCBI-disease with HF tokenizers."""
    from tokenizers import BertWordPieceTokenizer

    directory = tmp_path_factory.mktemp("vocab")
    trainer = BertWordPieceTokenizer(lowercase=False, strip_accents=False)
    text = H.read_sentences(ncbi_disease / "train.tsv") + HARD_CASES
    trainer.train_from_iterator(text, vocab_size=4000, min_frequency=2)
    trainer.save_model(str(directory))
    return directory / "vocab.txt"


@pytest.mark.parametrize("family", WORDPIECE_FAMILIES)
@pytest.mark.parametrize("casing", sorted(WORDPIECE_CASING))
def test_wordpiece_from_tokenizer_json(family, casing, cased_vocab, sentences, tmp_path):
    source, target = tmp_path / "source", tmp_path / "hf"
    source.mkdir()
    shutil.copy(cased_vocab, source / "vocab.txt")
    reference = save_with_transformers(source, target, family, **WORDPIECE_CASING[casing])
    ours = biozoo.Tokenizer.from_preset(str(target))
    assert ours.vocabulary_size() == len(reference)
    expected = hf_ids(reference, sentences)
    assert_same_ids(ours.ids(sentences), expected, sentences)
    assert_same_ids(graph_ids(ours, sentences), expected, sentences)


@pytest.mark.parametrize("json_lowercase, config", [(True, {"do_lower_case": False}), (False, {}),
                                                   (False, {"do_lower_case": True, "strip_accents": False})],
                         ids=["json-uncased-config-cased", "json-cased-config-silent", "json-cased-config-uncased"])
def test_casing_when_tokenizer_json_and_its_config_disagree(json_lowercase, config, cased_vocab, sentences, tmp_path):
    """transformers' BERT tokenizer builds its normalizer from tokenizer_config.json's
    do_lower_case (default True) and strip_accents, not from tokenizer.json's: the reference is
    AutoTokenizer on the edited folder."""
    source, target = tmp_path / "source", tmp_path / "hf"
    source.mkdir()
    shutil.copy(cased_vocab, source / "vocab.txt")
    save_with_transformers(source, target, "bert", do_lower_case=json_lowercase)
    data = json.loads((target / "tokenizer.json").read_text(encoding="utf-8"))
    data["normalizer"].update(lowercase=json_lowercase, strip_accents=None)
    (target / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    settings = json.loads((target / "tokenizer_config.json").read_text(encoding="utf-8"))
    for key in ("do_lower_case", "strip_accents"):
        settings.pop(key, None)
    (target / "tokenizer_config.json").write_text(json.dumps({**settings, **config}), encoding="utf-8")
    reference = transformers.AutoTokenizer.from_pretrained(str(target))
    ours = biozoo.Tokenizer.from_preset(str(target))
    expected = config.get("do_lower_case", True)
    assert expected != json_lowercase and ours.lowercase is expected  # the premise: the two files disagree
    assert_same_ids(ours.ids(sentences), hf_ids(reference, sentences), sentences)


@pytest.mark.parametrize("change", [
    lambda d: d["model"].update(max_input_chars_per_word=200),
    lambda d: d["normalizer"].update(handle_chinese_chars=False, clean_text=False),
    lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}]}),
    lambda d: d.update(pre_tokenizer={"type": "Whitespace"}),
    lambda d: d["model"].update(continuing_subword_prefix="@@"),
], ids=["max_input_chars_per_word", "chinese_chars_and_clean_text", "normalizer", "pre_tokenizer", "prefix"])
@pytest.mark.parametrize("tokenizer_class", [None, "BertTokenizer"])
def test_bert_tokenizer_builds_its_pipeline_itself(change, tokenizer_class, cased_vocab, sentences, tmp_path):
    """transformers' BERT tokenizer (tokenizer_config.json names it, or no class and a BERT
    model_type) takes the vocabulary and added tokens from tokenizer.json but builds its
    normalizer, pre-tokenizer and WordPiece model (limit: 100 characters a word) itself, whatever
    the file says: biozoo reads such a folder as it does, and neither refuses nor follows the file's
    other settings. The reference is AutoTokenizer on the edited folder."""
    source, target = tmp_path / "source", tmp_path / "hf"
    source.mkdir()
    shutil.copy(cased_vocab, source / "vocab.txt")
    save_with_transformers(source, target, "bert")
    data = json.loads((target / "tokenizer.json").read_text(encoding="utf-8"))
    change(data)
    (target / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    settings = json.loads((target / "tokenizer_config.json").read_text(encoding="utf-8"))
    settings.pop("tokenizer_class", None)
    if tokenizer_class:
        settings["tokenizer_class"] = tokenizer_class
    (target / "tokenizer_config.json").write_text(json.dumps(settings), encoding="utf-8")
    reference = transformers.AutoTokenizer.from_pretrained(str(target))
    assert type(reference).__name__ == "BertTokenizer"  # the premise
    ours = biozoo.Tokenizer.from_preset(str(target))
    expected = hf_ids(reference, sentences)
    assert_same_ids(ours.ids(sentences), expected, sentences)
    assert_same_ids(graph_ids(ours, sentences), expected, sentences)


CJK_TEXTS = ["中文abc漢字", "蛋白质abc p53基因 突变", "BRCA1基因 (乳腺癌) gene", "中 文"]


@pytest.mark.parametrize("files", ["vocab.txt", "tokenizer.json", "generic_tokenizer.json"])
def test_cjk_characters_not_tokenized_alone(files, cased_vocab, tmp_path):
    """tokenize_chinese_chars: false (tokenizer_config.json, read by BERT's tokenizer) or
    handle_chinese_chars: false (tokenizer.json's, read by the generic class) leaves CJK
    characters inside their words, in both engines and in `split_words` (its words of CJK text,
    tokenized one by one, give the whole text's ids). The reference is AutoTokenizer on the folder."""
    source, target = tmp_path / "source", tmp_path / "hf"
    source.mkdir()
    shutil.copy(cased_vocab, source / "vocab.txt")
    if files == "vocab.txt":
        write_config(source, "bert", 4000)
        (source / "tokenizer_config.json").write_text(json.dumps({"tokenize_chinese_chars": False}))
        target = source
    else:
        save_with_transformers(source, target, "bert")
        settings = json.loads((target / "tokenizer_config.json").read_text(encoding="utf-8"))
        if files == "generic_tokenizer.json":
            data = json.loads((target / "tokenizer.json").read_text(encoding="utf-8"))
            data["normalizer"].update(handle_chinese_chars=False)
            (target / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
            settings["tokenizer_class"] = "PreTrainedTokenizerFast"
        else:
            settings["tokenize_chinese_chars"] = False
        (target / "tokenizer_config.json").write_text(json.dumps(settings), encoding="utf-8")
    reference = transformers.AutoTokenizer.from_pretrained(str(target))
    ours = biozoo.Tokenizer.from_preset(str(target))
    texts = CJK_TEXTS + HARD_CASES
    expected = hf_ids(reference, texts)
    assert expected[0] == [reference.unk_token_id]  # the premise: "中文abc漢字" is one word
    assert_same_ids(ours.ids(texts), expected, texts)
    assert_same_ids(graph_ids(ours, texts), expected, texts)
    by_word = [[i for ids in ours.ids([w for w, _, _ in ours.split_words(t)]) for i in ids] for t in CJK_TEXTS]
    assert_same_ids(by_word, expected[:len(CJK_TEXTS)], CJK_TEXTS)


@pytest.mark.parametrize("casing", sorted(ALBERT_CASING))
def test_albert_from_tokenizer_json(casing, corpus_spiece, sentences, tmp_path):
    """The SentencePiece model rebuilt from tokenizer.json gives HF's ids (cased: but for ties,
    where the lower-cased model meets unknown capitals), and those of the original spiece.model
    (`FULLWIDTH_SPECIALS` included)."""
    source, target = tmp_path / "source", tmp_path / "hf"
    source.mkdir()
    shutil.copy(corpus_spiece, source / "spiece.model")
    reference = save_with_transformers(source, target, "albert", **ALBERT_CASING[casing])
    ours = biozoo.Tokenizer.from_preset(str(target))
    assert ours.vocabulary_size() == len(reference)
    tied = not ALBERT_CASING[casing]["do_lower_case"]
    expected = hf_ids(reference, sentences)
    assert_same_ids(ours.ids(sentences), expected, sentences, tied)
    assert_same_ids(graph_ids(ours, sentences), expected, sentences, tied)

    (source / "tokenizer_config.json").write_text(json.dumps(ALBERT_CASING[casing]))
    write_config(source, "albert", 2000)
    original = biozoo.Tokenizer.from_preset(str(source))
    original = original.with_added_tokens(MARKERS, normalized=True).with_added_tokens(EXTRA_SPECIAL)
    assert FULLWIDTH_SPECIALS in sentences
    assert_same_ids(ours.ids(sentences), original.ids(sentences), sentences)


def test_vocab_txt_and_tokenizer_json_agree(minilm_dir, sentences, tmp_path):
    """An older checkpoint with vocab.txt and tokenizer.json (MiniLM's) gives the ids its
    vocab.txt alone gives, and HF's."""
    both, vocab_only = tmp_path / "both", tmp_path / "vocab_only"
    for directory, names in [(both, ["vocab.txt", "tokenizer.json"]), (vocab_only, ["vocab.txt"])]:
        directory.mkdir()
        for name in names + ["tokenizer_config.json", "config.json"]:
            shutil.copy(minilm_dir / name, directory / name)
    from_json, from_vocab = (biozoo.Tokenizer.from_preset(str(d)) for d in (both, vocab_only))
    assert from_json.get_vocabulary() == from_vocab.get_vocabulary()
    configs = [{k: v for k, v in t.get_config().items() if k != "name"} for t in (from_json, from_vocab)]
    assert configs[0] == configs[1]
    got = from_json.ids(sentences)
    assert_same_ids(got, from_vocab.ids(sentences), sentences)
    assert_same_ids(got, hf_ids(transformers.AutoTokenizer.from_pretrained(str(minilm_dir)), sentences), sentences)


@pytest.mark.parametrize("name", sorted({c.family for c in H.CASES.values()}))
def test_model_directory_with_tokenizer_json_only_converts(name, tmp_path):
    """`biozoo.from_preset` of a model directory whose tokenizer transformers 5 saved."""
    case = H.get_case(name)
    model, hf_dir = H.save_case(case, case.model_class, tmp_path)
    reference = transformers.AutoTokenizer.from_pretrained(str(hf_dir))
    for file in ("vocab.txt", "spiece.model", "tokenizer_config.json"):
        if (hf_dir / file).exists():
            os.remove(hf_dir / file)
    reference.save_pretrained(str(hf_dir))
    assert not {"vocab.txt", "spiece.model"} & set(os.listdir(hf_dir))

    backbone = biozoo.from_preset(str(hf_dir))
    inputs = H.case_inputs(model)
    sequence, _ = H.hf_outputs(model, inputs)
    assert H.max_diff(backbone(inputs)["sequence_output"], sequence, inputs["padding_mask"]) <= H.TOLERANCE
    texts = ["The BRCA1 gene, cancer cells (proteins).", "the genes brcaing CELLS"] + HARD_CASES
    ours = biozoo.Tokenizer.from_preset(str(hf_dir))
    assert_same_ids(ours.ids(texts), hf_ids(reference, texts), texts)


def test_unsupported_model_type_names_the_file_and_type(tmp_path):
    from tokenizers import Tokenizer, models

    Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "ab": 2}, merges=[("a", "b")])).save(str(tmp_path / "tokenizer.json"))
    write_config(tmp_path, "bert", 3)
    with pytest.raises(CheckpointError, match=r"tokenizer\.json: the tokenizer model is 'BPE'"):
        biozoo.Tokenizer.from_preset(str(tmp_path))


def test_an_unreadable_tokenizer_json_beside_a_vocab_txt_falls_back_with_a_warning(tmp_path):
    from tokenizers import Tokenizer, models

    Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "ab": 2}, merges=[("a", "b")])).save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "vocab.txt").write_text("\n".join(H.wordpiece_vocab()) + "\n")
    write_config(tmp_path, "bert", H.VOCAB_SIZE)
    with pytest.warns(UserWarning, match=r"'BPE'.*the vocabulary file beside it is used instead"):
        tokenizer = biozoo.Tokenizer.from_preset(str(tmp_path))
    assert tokenizer.get_vocabulary() == H.wordpiece_vocab()


# ---- tokenizer.json variants and refusals, on the parsed file ---------------------------------


@pytest.fixture(scope="module")
def bert_json(tmp_path_factory):
    """(tokenizer.json of a tiny uncased BERT with markers as transformers 5 saves it, its path)."""
    source, target = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("target")
    (source / "vocab.txt").write_text("\n".join(H.wordpiece_vocab()) + "\n")
    save_with_transformers(source, target, "bert")
    return json.loads((target / "tokenizer.json").read_text()), target / "tokenizer.json"


@pytest.fixture(scope="module")
def albert_json(tmp_path_factory, tiny_spiece):
    source, target = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("target")
    shutil.copy(tiny_spiece, source / "spiece.model")
    save_with_transformers(source, target, "albert")
    return json.loads((target / "tokenizer.json").read_text()), target / "tokenizer.json"


def rewrite(data, path, change):
    """`path` rewritten as `data` after `change(copy)`; returns the path."""
    copy = json.loads(json.dumps(data))
    change(copy)
    path.write_text(json.dumps(copy))
    return path


def test_wordpiece_arguments(bert_json):
    data, path = bert_json
    arguments = tokenizer_json.wordpiece_arguments(path, {"pad_token": "[PAD]", "mask_token": "[MASK]"})
    assert arguments["vocabulary"] == H.wordpiece_vocab()
    assert arguments["added_tokens"] == MARKERS + EXTRA_SPECIAL
    assert arguments["normalized_added_tokens"] == MARKERS  # add_tokens' (special tokens: raw)
    assert (arguments["lowercase"], arguments["strip_accents"]) == (True, None)
    assert (arguments["cls_token"], arguments["sep_token"], arguments["unk_token"]) == ("[CLS]", "[SEP]", "[UNK]")


def bert_processing(data):
    data["post_processor"] = {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]}


@pytest.mark.parametrize("change", [
    lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [d["normalizer"]]}),
    lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [d["pre_tokenizer"]]}),
    lambda d: d["model"].pop("type"),  # older files (DistilBERT's) leave the model type out
    bert_processing,  # tokenizers' own BertWordPieceTokenizer
], ids=["normalizer_sequence", "pre_tokenizer_sequence", "untyped_model", "bert_processing"])
def test_equivalent_wordpiece_forms(bert_json, tmp_path, change):
    data, path = bert_json
    expected = tokenizer_json.wordpiece_arguments(path)
    assert tokenizer_json.wordpiece_arguments(rewrite(data, tmp_path / "tokenizer.json", change)) == expected


def legacy_albert(data):
    """As transformers 4 wrote ALBERT's tokenizer.json: spaces collapsed, Metaspace alone."""
    data["normalizer"]["normalizers"].append(
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})
    data["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}


def test_legacy_albert_form(albert_json, tmp_path):
    data, path = albert_json
    expected = tokenizer_json.sentencepiece_arguments(path, {"pad_token": "<pad>", "mask_token": "[MASK]"})
    assert expected["lowercase"] is True and expected["keep_accents"] is False
    assert expected["added_tokens"] == MARKERS + EXTRA_SPECIAL
    legacy = rewrite(data, tmp_path / "tokenizer.json", legacy_albert)
    assert tokenizer_json.sentencepiece_arguments(legacy, {"pad_token": "<pad>", "mask_token": "[MASK]"}) == expected


def shift_marker(data):
    next(t for t in data["added_tokens"] if t["content"] == "@GENE$")["id"] = 98  # the id of a vocabulary token


def vocabulary_gap(data):
    data["model"]["vocab"]["the"] = 500


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}]}),
     "normalizer NFD \\+ Lowercase is not supported"),
    (lambda d: d["normalizer"].update(clean_text=False), "clean_text=false"),
    (lambda d: d.update(pre_tokenizer={"type": "Whitespace"}), "pre-tokenizer Whitespace is not supported"),
    (lambda d: d["model"].update(continuing_subword_prefix="@@"), "continuing_subword_prefix '@@'"),
    (vocabulary_gap, "ids are not 0..98"),
    (shift_marker, "added token '@GENE\\$' has id 98, but biozoo would give it id 99"),
], ids=["normalizer", "clean_text", "pre_tokenizer", "prefix", "vocabulary_gap", "added_token_id"])
def test_wordpiece_refusals_name_the_file_and_part(bert_json, tmp_path, change, message):
    data, _ = bert_json
    path = rewrite(data, tmp_path / "tokenizer.json", change)
    with pytest.raises(CheckpointError, match=f"{re.escape(str(path))}: .*{message}"):
        tokenizer_json.wordpiece_arguments(path)


@pytest.mark.parametrize("change, message", [
    (lambda d: d["normalizer"]["normalizers"].insert(0, {"type": "NFC"}), "normalizer NFC \\+ Replace"),
    (lambda d: d["pre_tokenizer"]["pretokenizers"][1].update(prepend_scheme="first"),
     "pre-tokenizer WhitespaceSplit \\+ Metaspace is not supported"),
    (lambda d: d["model"].update(byte_fallback=True), "byte_fallback"),
], ids=["normalizer", "prepend_scheme", "byte_fallback"])
def test_albert_refusals_name_the_file_and_part(albert_json, tmp_path, change, message):
    data, _ = albert_json
    path = rewrite(data, tmp_path / "tokenizer.json", change)
    with pytest.raises(CheckpointError, match=f"{re.escape(str(path))}: .*{message}"):
        tokenizer_json.sentencepiece_arguments(path)
