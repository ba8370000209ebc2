"""Relation extraction and document classification: entity markers stay whole, metrics
equal sklearn's, and the fine-tuned model reloads with its added tokens."""

import json

import numpy as np
import pytest

import biozoo
from biozoo.data.hoc import LABELS
from biozoo.data.relation import read_relation
from biozoo.tasks.adapters import load_with_adapter
from biozoo.train.finetune import Hyperparameters, run_evaluate, run_finetune


def head(source, target, n):
    lines = source.read_text(encoding="utf-8").splitlines()
    target.write_text("\n".join(lines[: n + 1]) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def chemprot_small(tmp_path_factory, shared_data):
    root = tmp_path_factory.mktemp("chemprot")
    for split, n in (("train", 200), ("dev", 60), ("test", 80)):  # train has every label of dev and test
        head(shared_data / "re" / "chemprot" / f"{split}.tsv", root / f"{split}.tsv", n)
    return root


@pytest.fixture(scope="module")
def re_model(tmp_path_factory, chemprot_small, tiny_bert_real_vocab):
    output = tmp_path_factory.mktemp("re") / "model"
    hp = Hyperparameters(epochs=1, batch_size=16, learning_rate=1e-3, max_seq_length=64)
    metrics = run_finetune("re", str(tiny_bert_real_vocab), chemprot_small, output, hp, log=lambda m: None)
    return output, metrics


def test_entity_markers_become_single_tokens(re_model, tiny_bert_real_vocab):
    output, _ = re_model
    _, _, task = load_with_adapter(str(output))
    tokenizer = task.preprocessor.tokenizer
    assert set(tokenizer.added_tokens) == {"BC6ENTC", "BC6ENTG", "BC6OTHER"}
    base = biozoo.Tokenizer.from_preset(str(tiny_bert_real_vocab))
    assert len(base(["BC6ENTC"])[0]) > 1  # the vocabulary alone splits it
    ids = [int(i) for i in tokenizer(["binding of BC6ENTC to BC6ENTG"])[0]]
    assert tokenizer.token_to_id("BC6ENTC") in ids and tokenizer.token_to_id("BC6ENTG") in ids
    assert tokenizer.vocabulary_size() == base.vocabulary_size() + 3
    assert task.backbone.vocabulary_size == tokenizer.vocabulary_size()


def test_relation_metrics_equal_sklearn(re_model, chemprot_small):
    from sklearn.metrics import precision_recall_fscore_support

    output, metrics = re_model
    _, _, task = load_with_adapter(str(output))
    examples = read_relation(chemprot_small / "test.tsv")
    predicted = task.predict_labels([e.text for e in examples])
    labels = task.label_names
    positive = [i for i, name in enumerate(labels) if name != "False"]
    index = {name: i for i, name in enumerate(labels)}
    p, r, f, _ = precision_recall_fscore_support(
        [index[e.label] for e in examples], [index[x] for x in predicted], labels=positive, average="micro",
        zero_division=0)
    assert metrics["test"]["f1"] == pytest.approx(100 * f, abs=1e-9)
    assert metrics["test"]["precision"] == pytest.approx(100 * p, abs=1e-9)
    assert metrics["test"]["negative_label"] == "False"
    evaluated = run_evaluate(str(output), chemprot_small, "test")
    assert evaluated["f1"] == metrics["test"]["f1"]


def write_hoc(path, rows):
    lines = ["labels\tsentence\tindex"]
    for pmid, sentences in rows:
        for k, (text, labels) in enumerate(sentences):
            field = ",".join(f"{j}_{int(j in labels)}" for j in range(len(LABELS)))
            lines.append(f"{field}\t{text}\t{pmid}_{k}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_document_classification_hoc(tmp_path, tiny_bert_real_vocab):
    rng = np.random.default_rng(0)
    words = ["tumour", "growth", "apoptosis", "angiogenesis", "invasion", "immune", "genome", "cells"]

    def abstracts(n, start):
        rows = []
        for a in range(n):
            sentences = []
            for _ in range(3):
                labels = set(int(x) for x in rng.choice(10, size=rng.integers(0, 3), replace=False))
                text = " ".join(rng.choice(words, 8)) + " ."
                sentences.append((text, labels))
            rows.append((str(start + a), sentences))
        return rows

    splits = {split: abstracts(n, start) for split, n, start in (("train", 40, 1000), ("dev", 12, 2000),
                                                                  ("test", 12, 3000))}
    for split, rows in splits.items():
        write_hoc(tmp_path / f"{split}.tsv", rows)
    hp = Hyperparameters(epochs=1, batch_size=8, learning_rate=1e-3, max_seq_length=64)
    metrics = run_finetune("doc", str(tiny_bert_real_vocab), tmp_path, tmp_path / "model", hp, log=lambda m: None)
    assert metrics["test"]["abstracts"] == 12
    assert set(metrics["test"]) >= {"micro_f1_linkbert", "f1_blue"}
    _, _, task = load_with_adapter(str(tmp_path / "model"))
    assert task.multi_label and len(task.thresholds) == 10
    json.dumps(metrics)
    from sklearn.metrics import f1_score, precision_score

    # the reloaded model on the test abstracts (sentences joined with spaces, labels OR-ed)
    texts = [" ".join(text for text, _ in sentences) for _, sentences in splits["test"]]
    gold = np.array([[int(any(j in labels for _, labels in sentences)) for j in range(len(LABELS))]
                     for _, sentences in splits["test"]])
    predicted = task.predict_labels(texts)
    pred = np.array([[int(name in p) for name in LABELS] for p in predicted])
    reported = metrics["test"]["micro_f1_linkbert"]
    assert reported["f1"] == pytest.approx(100 * f1_score(gold, pred, average="micro", zero_division=0), abs=1e-9)
    assert reported["precision"] == pytest.approx(
        100 * precision_score(gold, pred, average="micro", zero_division=0), abs=1e-9)


def test_pairs_are_cut_and_packed_as_the_pipelines_tokenizer_does(tmp_path):
    """Text pairs over the budget are cut as HF's fast tokenizers' `longest_first` cuts them (odd
    budgets included: the odd token goes to the longer text, on a tie to the second), and an
    empty second text is no pair, as transformers' text-classification pipeline encodes each
    `{"text", "text_pair"}` (one tokenizer call per example)."""
    import transformers

    from biozoo.tasks import SequenceClassifierPreprocessor
    from biozoo.tokenizers import WordPieceTokenizer

    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + letters
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    hf = transformers.BertTokenizerFast(str(tmp_path / "vocab.txt"), do_lower_case=True)
    ours = WordPieceTokenizer(vocabulary=vocab, lowercase=True)
    words = [" ".join(letters[:n]) for n in range(0, 21, 2)] + [" ".join(letters[:n]) for n in (1, 7, 19)]
    pairs = [(a, b) for a in words for b in words]
    odd_budgets_cut = 0
    for length in (9, 10, 16, 17):
        preprocessor = SequenceClassifierPreprocessor(ours, sequence_length=length)
        got = preprocessor.encode([a for a, _ in pairs], [b for _, b in pairs])
        for (a, b), (ids, segments) in zip(pairs, got):
            expected = hf(text=a, text_pair=b, truncation="longest_first", max_length=length)
            assert (ids.tolist(), segments.tolist()) == (expected["input_ids"], expected["token_type_ids"]), (length, a, b)
            odd_budgets_cut += (length - 3) % 2 == 1 and len(a.split()) + len(b.split()) > length - 3 and b != ""
    assert odd_budgets_cut > 50  # the case the old one-token-at-a-time rule got wrong
    assert [ids.tolist() for ids, _ in SequenceClassifierPreprocessor(ours, sequence_length=8).encode(["a b"], [""])] \
        == [hf(text="a b", text_pair="")["input_ids"]] == [[2, 5, 6, 3]]
    with pytest.raises(ValueError, match="2 texts and 1 pairs"):
        SequenceClassifierPreprocessor(ours, sequence_length=8).encode(["a", "b"], ["c"])


def test_a_classifier_saved_before_the_head_followed_transformers_loads_as_it_was(tmp_path):
    """Before 2026-11-29 a backbone without a pooler got dropout, a gelu dense and dropout whatever
    the family; a saved config without `head_activation` still builds that head (same logits),
    and the HF export, whose classes read a tanh pooler, refuses it naming the layer."""
    import keras

    from biozoo import testing as H
    from biozoo.errors import CheckpointError
    from biozoo.export.hf import export_hf_task

    case = H.get_case("megatron_bert")
    pooled = H.make_model(case, "MegatronBertModel")
    model = type(pooled)(pooled.config, add_pooling_layer=False).eval()
    model.load_state_dict({k: v for k, v in pooled.state_dict().items() if not k.startswith("pooler")})
    hf_dir = H.save_hf_directory(model, tmp_path / "hf", "safetensors", case.tokenizer)
    new = biozoo.SequenceClassifier.from_preset(str(hf_dir), label_names=["a", "b"])
    assert (new.head_activation, new.dropout_before_dense) == ("tanh", False)
    old = biozoo.SequenceClassifier(new.backbone, label_names=["a", "b"], preprocessor=new.preprocessor,
                                    head_activation="gelu", dropout_before_dense=True)
    config = old.get_config()
    del config["head_activation"], config["dropout_before_dense"]
    restored = biozoo.SequenceClassifier.from_config(config)
    restored.set_weights(old.get_weights())
    assert restored.cls_dense.activation is keras.activations.gelu
    assert sum(isinstance(layer, keras.layers.Dropout) for layer in restored.layers) == 2
    inputs = H.case_inputs(model)
    np.testing.assert_allclose(np.asarray(restored(inputs)), np.asarray(old(inputs)), atol=1e-6)
    with pytest.raises(CheckpointError, match="gelu dense layer on the first token"):
        export_hf_task(restored, tmp_path / "export")
