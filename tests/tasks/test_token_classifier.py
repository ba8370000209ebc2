"""NER: windows keep every word, predictions map back to words and character offsets."""

import json

import numpy as np
import pytest
from seqeval.metrics.sequence_labeling import get_entities

import biozoo
from biozoo.data import IGNORE_LABEL
from biozoo.data.ner import find_split, read_ner
from biozoo.metrics.ner import entity_scores

LABELS = ["O", "B-Disease", "I-Disease"]


@pytest.fixture(scope="module")
def ncbi_test(ncbi_disease):
    return read_ner(find_split(ncbi_disease, "test"))


@pytest.fixture(scope="module")
def ner16(tiny_bert_real_vocab):
    task = biozoo.TokenClassifier.from_preset(str(tiny_bert_real_vocab), label_names=LABELS)
    task.preprocessor.sequence_length = 16
    return task


def test_windows_cover_every_word_once(ner16, ncbi_test):
    index = {label: i for i, label in enumerate(LABELS)}
    sentences = [s.words for s in ncbi_test]
    gold = [[index[t] for t in s.tags] for s in ncbi_test]
    windows = ner16.preprocessor.windows(sentences, gold)
    assert max(len(t) for t in windows.token_ids) <= 16
    assert len(windows.token_ids) > len(sentences)  # many sentences needed several windows
    # Reading each word's label back from its owning window gives the gold sequence exactly.
    for s, tags in enumerate(gold):
        recovered = []
        for w, window in enumerate(windows.owner[s]):
            assert windows.sentence[window] == s
            position = windows.word_positions[window][w]
            assert position > 0
            recovered.append(int(windows.labels[window][position]))
        assert recovered == tags
    labelled = sum(int((lab != IGNORE_LABEL).sum()) for lab in windows.labels)
    assert labelled >= sum(len(t) for t in gold)  # overlap words are labelled in several windows


def test_every_gold_entity_is_scored_at_length_16(ner16, ncbi_test):
    predicted, scores = ner16.predict_tags([s.words for s in ncbi_test])
    assert [len(p) for p in predicted] == [len(s.words) for s in ncbi_test]
    result = entity_scores([s.tags for s in ncbi_test], predicted)
    gold_entities = sum(len(get_entities(s.tags)) for s in ncbi_test)
    assert result["counts"]["gold"] == gold_entities == 960
    assert all(0.0 <= x <= 1.0 for row in scores for x in row)


def test_a_word_longer_than_the_window_is_cut_to_it(ner16):
    """A one-word sentence of more pieces than a window holds: the word's first pieces, then
    [SEP] (a window never runs past the model's length)."""
    pre = ner16.preprocessor
    cls_id, sep_id = pre.tokenizer.cls_token_id, pre.tokenizer.sep_token_id
    long_word = list(range(1000, 1020))
    windows = pre.piece_windows([[long_word], [[7], [8]], []], [[1], [1, 2], []])
    assert [w.tolist() for w in windows.token_ids] == [[cls_id, *long_word[:14], sep_id], [cls_id, 7, 8, sep_id],
                                                       [cls_id, sep_id]]
    assert [w.tolist() for w in windows.labels] == [[IGNORE_LABEL, 1] + [IGNORE_LABEL] * 14,
                                                    [IGNORE_LABEL, 1, 2, IGNORE_LABEL], [IGNORE_LABEL] * 2]
    assert windows.owner == [[0], [1, 1], []]


def test_word_positions_point_at_each_words_first_piece(ner16):
    """In a window that holds the whole sentence, each word's position is its first piece's, for
    words of one piece (as `token_windows` gives tokens) and of several."""
    pre = ner16.preprocessor
    cls_id, sep_id = pre.tokenizer.cls_token_id, pre.tokenizer.sep_token_id
    windows = pre.piece_windows([[[7], [8], [9]], [[7, 8], [9], [10, 11, 12], [13]]], [[1, 2, 0], [1, 2, 0, 1]])
    assert [w.tolist() for w in windows.token_ids] == [[cls_id, 7, 8, 9, sep_id],
                                                       [cls_id, 7, 8, 9, 10, 11, 12, 13, sep_id]]
    assert [p.tolist() for p in windows.word_positions] == [[1, 2, 3], [1, 3, 4, 7]]
    assert [w.tolist() for w in windows.labels] == [[IGNORE_LABEL, 1, 2, 0, IGNORE_LABEL],
                                                    [IGNORE_LABEL, 1, IGNORE_LABEL, 2, 0, IGNORE_LABEL, IGNORE_LABEL,
                                                     1, IGNORE_LABEL]]
    assert all(w.dtype == np.int32 for w in windows.token_ids + windows.word_positions)


def test_word_that_tokenizes_to_nothing_still_gets_a_label(ner16):
    tags, _ = ner16.predict_tags([["BRCA1", "\u200b", "cancer"]])
    assert len(tags[0]) == 3


def test_annotate_maps_entities_to_character_offsets(ner16, monkeypatch):
    from biozoo.tokenizers.words import split_words

    text = "Mutations in BRCA1 (breast cancer 1) cause\u00a0hereditary breast\u2013ovarian cancer; see ΟΔΟΣ."
    words = split_words(text)
    assert all(text[start:end] == word for word, start, end in words)
    assert [w for w, _, _ in words][:6] == ["Mutations", "in", "BRCA1", "(", "breast", "cancer"]
    tags = ["O"] * len(words)
    tags[4:6] = ["B-Disease", "I-Disease"]  # breast cancer
    tags[9:14] = ["B-Disease"] + ["I-Disease"] * 4  # hereditary breast – ovarian cancer
    tags[15] = "I-Disease"  # a stray I- starts an entity, as conlleval reads it
    # every token of a word predicts the word's tag (probability 0.9)
    spans = ner16.preprocessor.tokenizer.token_spans([text])[0]
    word_of = [next(k for k, (_, a, b) in enumerate(words) if a <= start < b) for _, start, _ in spans]
    probs = np.full((len(spans), len(ner16.label_names)), 0.1 / (len(ner16.label_names) - 1), np.float32)
    probs[np.arange(len(spans)), [ner16.label_names.index(tags[w]) for w in word_of]] = 0.9
    monkeypatch.setattr(ner16, "_unit_probabilities", lambda windows, counts, batch_size: [probs])
    entities = ner16.annotate([text])[0]["entities"]
    assert [e["text"] for e in entities] == ["breast cancer", "hereditary breast\u2013ovarian cancer", "see"]
    assert all(abs(e["score"] - 0.9) < 1e-6 for e in entities)
    monkeypatch.undo()
    for entity in entities:
        assert text[entity["start"]:entity["end"]] == entity["text"]
    real = ner16.annotate([text])[0]  # the model's own predictions map back the same way
    assert all(text[e["start"]:e["end"]] == e["text"] for e in real["entities"])
    json.dumps(real)


def test_loss_ignores_unlabelled_positions(ner16):
    """Keras' ignore_class averages over labelled tokens only, as HF's ignore_index=-100."""
    import keras

    loss = ner16.loss
    logits = np.random.default_rng(0).normal(size=(2, 5, 3)).astype("float32")
    skip = IGNORE_LABEL
    labels = np.array([[skip, 1, skip, 2, skip], [skip, 0, skip, skip, skip]])
    keep = labels != IGNORE_LABEL
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.mean([log_probs[b, t, labels[b, t]] for b, t in zip(*np.nonzero(keep))])
    assert abs(float(loss(labels, logits)) - expected) < 1e-5
    assert isinstance(loss, keras.losses.SparseCategoricalCrossentropy)


def test_ragged_words_in_a_graph_give_the_windows_inputs_and_labels(ner16, ncbi_test):
    """`preprocessor(ragged words, word labels)` (tf.data, `predict` on words) gives the window
    that `windows` gives a sentence that fits one, multi-piece and empty words included (a longer
    sentence is cut at `sequence_length`); `predict` on words gives the model's output on them."""
    import tensorflow as tf

    pre = ner16.preprocessor
    sentences = [s.words[:10] for s in ncbi_test[:40]] + [["BRCA1", "\u200b", "mutations"]]
    sentences = [words for words, pieces in zip(sentences, pre.word_pieces(sentences))
                 if sum(map(len, pieces)) <= 14][-12:]
    assert len(sentences) == 12 and sentences[-1][0] == "BRCA1"
    assert any(len(p) > 1 for words in pre.word_pieces(sentences) for p in words)  # the premise
    tags = [[i % 3 for i in range(len(words))] for words in sentences]
    windows = pre.windows(sentences, tags)
    assert len(windows.token_ids) == len(sentences)

    def padded(rows, value):
        return np.stack([np.pad(row, (0, 16 - len(row)), constant_values=value) for row in rows])

    x, y = tf.function(pre)(tf.ragged.constant(sentences), tf.ragged.constant(tags))
    np.testing.assert_array_equal(x["token_ids"], padded(windows.token_ids, 0))
    np.testing.assert_array_equal(y, padded(windows.labels, IGNORE_LABEL))
    logits = ner16.predict(tf.ragged.constant(sentences), verbose=0)
    np.testing.assert_allclose(logits, ner16.predict(x, verbose=0), atol=1e-6)


def test_prediction_shows_a_bar_of_its_batches_only_when_asked(ner16, ncbi_test, capsys):
    from biozoo.tasks.inference import showing_progress

    sentences = [s.words for s in ncbi_test[:40]]
    windows = len(ner16.preprocessor.windows(sentences).token_ids)
    batches = -(-windows // 8)
    ner16.predict_tags(sentences, batch_size=8)
    assert capsys.readouterr().err == ""
    with showing_progress("scoring test"):
        ner16.predict_tags(sentences, batch_size=8)
    shown = capsys.readouterr().err
    assert "scoring test:" in shown and f"0/{batches} " in shown and batches > 1  # the bar of every batch


@pytest.mark.parametrize("change", ["set_weights", "load_weights"])
def test_a_bfloat16_model_predicts_with_the_weights_it_was_given_last(tiny_bert_real_vocab, tmp_path, change):
    """The bfloat16 copy is made from the weights when first used: new weights make a new copy
    (it predicted with the old ones)."""
    text = ["Mutations in BRCA1 cause hereditary breast cancer and cystic fibrosis."]
    task = biozoo.TokenClassifier.from_preset(str(tiny_bert_real_vocab), label_names=LABELS, precision="bfloat16")
    before = task.token_probabilities(text)[0][1]
    other = biozoo.TokenClassifier.from_preset(str(tiny_bert_real_vocab), label_names=LABELS, precision="bfloat16")
    wanted = other.token_probabilities(text)[0][1]
    assert not np.allclose(before, wanted, atol=1e-2)  # the two new heads differ
    if change == "set_weights":
        task.set_weights(other.get_weights())
    else:
        other.save_weights(tmp_path / "other.weights.h5")
        task.load_weights(tmp_path / "other.weights.h5")
    np.testing.assert_array_equal(task.token_probabilities(text)[0][1], wanted)
