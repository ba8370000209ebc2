"""`biozoo pretrain`: corpora -> packed instances (TFRecords for TensorFlow, NumPy shards for JAX
and PyTorch) -> whole-word-masked batches -> MLM (with NSP or SOP) and ELECTRA training on real
biomedical sentences, from a preset or from a config. Training on JAX and PyTorch:
test_pretrain_backends.py."""

import argparse
import itertools
import json
import os

import numpy as np
import pytest

# Disease names from the NCBI / BC5CDR test sets that MiniLM's uncased WordPiece vocabulary
# splits into two or more pieces (checked in the test).
KNOWN_WORDS = ["adenomatous", "polyposis", "dystrophy", "telangiectasia", "fibrosis", "myotonic", "ataxia",
               "nephrotoxicity", "hepatotoxicity", "cardiomyopathy", "thrombocytopenia"]
ELECTRA_CONFIG = {"family": "electra", "num_layers": 2, "num_heads": 4, "hidden_dim": 64, "embedding_dim": 32,
                  "intermediate_dim": 128, "max_sequence_length": 64}


def write_corpus(path, sentences, per_document=6):
    documents = ["\n".join(sentences[i:i + per_document]) for i in range(0, len(sentences), per_document)]
    path.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    return path


def first_last(values, k=10):
    return float(np.mean(values[:k])), float(np.mean(values[-k:]))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, corpus_sentences):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "pubmed.txt", corpus_sentences[:600])


@pytest.fixture(scope="module")
def tiny_albert(tmp_path_factory, corpus_spiece):
    """A tiny random ALBERT (pretraining heads included) with a SentencePiece model trained on
    NCBI-disease sentences."""
    from biozoo import testing as H

    model = H.make_model("albert", "AlbertForPreTraining", vocab_size=2000, initializer_range=0.02)
    return H.save_hf_directory(model, tmp_path_factory.mktemp("tiny") / "albert", tokenizer="sentencepiece",
                               spiece_model=corpus_spiece)


# ---- corpus and instances ---------------------------------------------------------------


def test_documents_split_at_blank_lines_and_an_empty_corpus_is_named(tmp_path):
    from biozoo.data.pretraining import read_documents

    path = tmp_path / "corpus.txt"
    path.write_bytes(b"BRCA1 mutations.\r\nIn breast cancer.\r\n\r\n\r\nA second document.\n   \nThird one.\n")
    assert read_documents(path) == [["BRCA1 mutations.", "In breast cancer."], ["A second document."], ["Third one."]]
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="empty.txt: the corpus is empty"):
        read_documents(empty)


def test_sentences_end_at_newlines_only_as_bert_reads_them(tmp_path):
    """Form feeds, U+2028, U+0085 and the \x1c-\x1e separators inside a line leave the sentence
    whole: the documents are those of create_pretraining_data.py's loop (google-research/bert),
    transcribed below, which reads lines up to "\n" (tf.gfile readline) and strips them."""
    import io

    from biozoo.data.pretraining import read_documents

    text = ("Page one ends here.\x0cPage two starts.\r\nA\u2028B and C\x85D.\n\nE\x1cF\x1dG\x1eH.\n"
            "\x0c\nLast document.\n")
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("utf-8"))
    documents, reader = [[]], io.StringIO(text, newline="\n")
    while True:  # create_pretraining_data.py, create_training_instances
        line = reader.readline()
        if not line:
            break
        line = line.strip()
        if not line:  # empty lines are used as document delimiters
            documents.append([])
        if line:
            documents[-1].append(line)
    expected = [d for d in documents if d]
    assert len(expected) == 3
    assert read_documents(path) == expected


def test_remote_numpy_shards_are_refused(tmp_path, corpus, tiny_bert_real_vocab, monkeypatch):
    """JAX and PyTorch pack into NumPy shards in a local folder: --records gs://... is refused,
    naming TensorFlow, and no local "gs:" folder is made."""
    import biozoo
    from biozoo.data.pretraining import write_instance_shards
    from biozoo.errors import BiozooError

    monkeypatch.chdir(tmp_path)
    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    with pytest.raises(BiozooError, match="--records gs://bucket/records: .* remote records need TensorFlow"):
        write_instance_shards([corpus], tokenizer, "gs://bucket/records", 32)
    assert not os.path.exists(tmp_path / "gs:")


def test_packing_says_how_much_of_the_corpus_it_cuts(tmp_path, corpus_sentences, tiny_bert_real_vocab):
    """A line longer than an instance loses its tail (BERT's truncate_seq_pair): the log names
    the share cut and suggests splitting long lines; a corpus of sentences, whose packing cuts
    only the sentence overflowing each instance, is not warned about."""
    import biozoo
    from biozoo.data.pretraining import packed_corpora

    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    long_lines = [" ".join(corpus_sentences[i:i + 8]) for i in range(0, 80, 8)]
    lengths = [len(ids) for ids in tokenizer.ids(long_lines)]
    assert min(lengths) > 62
    abstracts = tmp_path / "abstracts.txt"  # one line a document: [CLS] line [SEP], 62 tokens kept
    abstracts.write_text("\n\n".join(long_lines) + "\n", encoding="utf-8")
    sentences = write_corpus(tmp_path / "sentences.txt", [s for s in corpus_sentences[:80] if len(s.split()) < 12])
    for path, expected in ((abstracts, sum(n - 62 for n in lengths) / sum(lengths)), (sentences, None)):
        logged = []
        list(packed_corpora([str(path)], tokenizer, 64, None, 0, 0.0, 1, logged.append))
        warned = [line for line in logged if "were cut" in line]
        if expected is None:
            assert not warned, warned
        else:
            assert warned == [f"{path}: {expected:.1%} of the tokens packed into instances were cut to fit 64 "
                              "tokens (sentences longer than an instance lose the rest); split long lines into "
                              "sentences, one per line"]


def synthetic_documents(count=40, seed=0):
    """Token id = 10000 * (document + 1) + 100 * sentence + position: where each token came
    from can be read back from it."""
    rng = np.random.default_rng(seed)
    return [[[10000 * (d + 1) + 100 * s + p for p in range(int(rng.integers(3, 12)))]
             for s in range(int(rng.integers(1, 9)))] for d in range(count)]


@pytest.mark.parametrize("task", [None, "nsp", "sop"])
def test_instances_pack_a_document_up_to_the_length_and_pair_segments(task):
    from biozoo.data.pretraining import create_instances

    cls, sep, length = 1, 2, 32
    instances = create_instances(synthetic_documents(), cls, sep, length, task, seed=3)
    labels = []
    for instance in instances:
        ids, segments = instance["token_ids"], instance["segment_ids"]
        assert len(ids) == len(segments) <= length and ids[0] == cls and ids[-1] == sep
        if not task:
            assert ids.count(sep) == 1 and set(segments) == {0}
            assert len({t // 10000 for t in ids[1:-1]}) == 1  # one document per instance
            continue
        first_sep = ids.index(sep)
        a, b = ids[1:first_sep], ids[first_sep + 1:-1]
        assert a and b and segments == [0] * (first_sep + 1) + [1] * (len(b) + 1)
        labels.append(instance["sentence_label"])
        same_document = {t // 10000 for t in a} == {t // 10000 for t in b}
        if instance["sentence_label"] == 0:  # B continues A
            assert same_document and max(a) < min(b)
        elif task == "sop" and same_document:  # swapped
            assert min(a) > max(b)
        else:  # a random other document
            assert not same_document
    if task:
        assert 0.3 < np.mean(labels) < 0.7, np.mean(labels)
    # packing: most instances are close to the full length
    assert np.mean([len(i["token_ids"]) for i in instances]) > 0.6 * length


def test_records_are_written_atomically_read_back_and_reused(tmp_path, corpus, tiny_bert_real_vocab):
    import biozoo
    from biozoo.data.tf_pretraining import count_records, read_records, write_pretraining_records

    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    records = tmp_path / "records"
    files = write_pretraining_records([corpus], tokenizer, records, 64, "nsp", seed=1)
    assert sorted(os.listdir(records)) == ["records.json", "shard-00000.tfrecord"]  # no partial files
    stamp = os.stat(files[0]).st_mtime_ns
    assert write_pretraining_records([corpus], tokenizer, records, 64, "nsp", seed=1) == files
    assert os.stat(files[0]).st_mtime_ns == stamp  # reused
    instances = list(read_records(files).as_numpy_iterator())
    assert len(instances) == count_records(records) > 100
    for instance in instances[:50]:
        ids = list(instance["token_ids"])
        assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id and len(ids) <= 64
        assert ids.count(tokenizer.sep_token_id) == 2 and instance["sentence_label"] in (0, 1)
    write_pretraining_records([corpus], tokenizer, records, 48, "nsp", seed=1)  # other settings: rewritten
    assert os.stat(files[0]).st_mtime_ns != stamp
    assert max(len(i["token_ids"]) for i in read_records(files).as_numpy_iterator()) <= 48


def test_shards_hold_the_records_instances_are_written_atomically_and_reused(tmp_path, corpus, tiny_bert_real_vocab):
    import biozoo
    from biozoo.data.pretraining import InstanceShards, count_instances, write_instance_shards
    from biozoo.data.tf_pretraining import read_records, write_pretraining_records

    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    shards = tmp_path / "shards"
    prefixes = write_instance_shards([corpus], tokenizer, shards, 64, "nsp", seed=1)
    assert sorted(os.listdir(shards)) == ["shard-00000.index.npy", "shard-00000.tokens.npy", "shards.json"]
    stamp = os.stat(prefixes[0] + ".tokens.npy").st_mtime_ns
    assert write_instance_shards([corpus], tokenizer, shards, 64, "nsp", seed=1) == prefixes
    assert os.stat(prefixes[0] + ".tokens.npy").st_mtime_ns == stamp  # reused
    records = list(read_records(write_pretraining_records([corpus], tokenizer, tmp_path / "records", 64, "nsp",
                                                          seed=1)).as_numpy_iterator())
    instances = InstanceShards(prefixes)
    assert len(instances) == count_instances(shards) == len(records) > 100
    for i, record in enumerate(records):  # the same packing as TensorFlow's records
        token_ids, segment_ids, label = instances[i]
        assert np.array_equal(token_ids, record["token_ids"]) and np.array_equal(segment_ids, record["segment_ids"])
        assert label == record["sentence_label"]
    write_instance_shards([corpus], tokenizer, shards, 48, "nsp", seed=1)  # other settings: rewritten
    assert os.stat(prefixes[0] + ".tokens.npy").st_mtime_ns != stamp
    np.save(prefixes[0] + ".index.npy", np.zeros((3, 3), np.int64))
    with pytest.raises(Exception, match="shard-00000: tokens .* do not fit together"):
        InstanceShards(prefixes)


def test_shards_of_another_tokenization_of_the_same_vocabulary_are_not_reused(tmp_path, corpus,
                                                                              tiny_bert_real_vocab):
    """Cased and uncased WordPiece share the vocabulary but not the ids: a cased run packs again."""
    import biozoo
    from biozoo.data.pretraining import InstanceShards, write_instance_shards

    uncased = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    cased = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab, lowercase=False)
    assert cased.get_vocabulary() == uncased.get_vocabulary() and cased("Gene") != uncased("Gene")
    write_instance_shards([corpus], uncased, tmp_path / "shards", 64, seed=1)
    prefixes = write_instance_shards([corpus], cased, tmp_path / "shards", 64, seed=1)
    fresh = write_instance_shards([corpus], cased, tmp_path / "fresh", 64, seed=1)
    assert [list(i[0]) for i in InstanceShards(prefixes)] == [list(i[0]) for i in InstanceShards(fresh)]


def _packer(pipeline):
    """(module, write function, instances read back) of a packing pipeline."""
    import biozoo.data.pretraining as shards
    import biozoo.data.tf_pretraining as records

    if pipeline == "tfrecords":
        return records, records.write_pretraining_records, lambda files: [
            list(r["token_ids"]) for r in records.read_records(files).as_numpy_iterator()]
    return shards, shards.write_instance_shards, lambda prefixes: [
        list(i[0]) for i in shards.InstanceShards(prefixes)]


@pytest.mark.parametrize("pipeline", ["tfrecords", "shards"])
def test_shards_a_killed_run_half_rewrote_are_not_reused(pipeline, tmp_path, corpus, tiny_bert_real_vocab,
                                                          monkeypatch):
    """Packed at length 64, then a run at 48 rewrites the first of two shards and is killed: a
    rerun at 64 must pack again, not reuse a first shard of 48-token instances."""
    import shutil

    import biozoo

    module, write, read = _packer(pipeline)
    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    second = tmp_path / "second.txt"
    shutil.copy(corpus, second)
    corpora = [corpus, second]
    expected = read(write(corpora, tokenizer, tmp_path / "fresh", 64, "nsp", seed=1))
    folder = tmp_path / "packed"
    write(corpora, tokenizer, folder, 64, "nsp", seed=1)
    real = module.packed_corpora

    def killed_after_one_shard(*args, **kwargs):
        for number, instances in real(*args, **kwargs):
            yield number, instances
            raise KeyboardInterrupt

    monkeypatch.setattr(module, "packed_corpora", killed_after_one_shard)
    with pytest.raises(KeyboardInterrupt):
        write(corpora, tokenizer, folder, 48, "nsp", seed=1)
    monkeypatch.setattr(module, "packed_corpora", real)
    assert read(write(corpora, tokenizer, folder, 64, "nsp", seed=1)) == expected


@pytest.mark.parametrize("pipeline", ["tfrecords", "shards"])
def test_a_shard_cut_short_is_packed_again_or_named(pipeline, tmp_path, corpus, tiny_bert_real_vocab):
    import biozoo
    from biozoo.data.pretraining import InstanceShards
    from biozoo.errors import DataFormatError

    _, write, read = _packer(pipeline)
    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    folder = tmp_path / "packed"
    paths = write([corpus], tokenizer, folder, 64, "nsp", seed=1)
    expected = read(paths)
    damaged = paths[0] if pipeline == "tfrecords" else paths[0] + ".tokens.npy"
    data = open(damaged, "rb").read()
    open(damaged, "wb").write(data[: len(data) // 2])
    if pipeline == "shards":  # read directly, a cut .npy is named
        with pytest.raises(DataFormatError, match=r"shard-00000\.tokens\.npy: not a whole NumPy array"):
            InstanceShards(paths)
    assert read(write([corpus], tokenizer, folder, 64, "nsp", seed=1)) == expected  # sizes differ: packed again


def test_instances_longer_than_the_training_length_are_refused(tmp_path, corpus, tiny_bert_real_vocab):
    """Shards packed for 64 tokens, trained at 48: cutting would drop an instance's [SEP]."""
    import biozoo
    from biozoo.data.pretraining import MaskedBatches, write_instance_shards
    from biozoo.errors import DataFormatError

    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    prefixes = write_instance_shards([corpus], tokenizer, tmp_path / "shards", 64, "nsp", seed=1)
    with pytest.raises(DataFormatError, match=r"shard-00000: instance \d+ has (49|[5-6]\d) tokens, more than "
                                              r"max_seq_length 48"):
        MaskedBatches(prefixes, tokenizer, 48, batch_size=4, sentence_task="nsp")
    assert MaskedBatches(prefixes, tokenizer, 64, batch_size=4, sentence_task="nsp").max_seq_length == 64


def test_records_longer_than_the_training_length_fail_the_stream(tmp_path, corpus, tiny_bert_real_vocab):
    import tensorflow as tf

    import biozoo
    from biozoo.data.tf_pretraining import masked_dataset, write_pretraining_records

    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    files = write_pretraining_records([corpus], tokenizer, tmp_path / "records", 64, "nsp", seed=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="an instance is longer than max_seq_length 48"):
        for _ in masked_dataset(files, tokenizer, 48, 16, "nsp", shuffle_buffer=10).take(40):
            pass
    assert len(list(masked_dataset(files, tokenizer, 64, 16, "nsp", shuffle_buffer=10).take(3))) == 3


def test_a_corpus_that_is_not_utf8_is_named_with_its_line(tmp_path):
    from biozoo.data.pretraining import read_documents
    from biozoo.errors import DataFormatError

    path = tmp_path / "corpus.txt"
    path.write_bytes(b"BRCA1 mutations.\n\nTNF-\xe1 levels rose.\n")
    with pytest.raises(DataFormatError, match=r"corpus\.txt:3: not UTF-8 \(byte 0xE1\)"):
        read_documents(path)


def masked_stream(pipeline, tmp_path, corpus, tokenizer, max_seq_length, batch_size, sentence_task=None, seed=42,
                  whole_words=True, **options):
    """`start -> batches` of the TFRecords pipeline (tf.data) or the shards one (NumPy)."""
    if pipeline == "tfrecords":
        from biozoo.data.tf_pretraining import masked_dataset, write_pretraining_records

        files = write_pretraining_records([corpus], tokenizer, tmp_path / f"records-{max_seq_length}",
                                          max_seq_length, sentence_task)
        return lambda start: iter(masked_dataset(files, tokenizer, max_seq_length, batch_size, sentence_task, seed,
                                                 start, whole_words=whole_words, **options))
    from biozoo.data.pretraining import MaskedBatches, write_instance_shards

    prefixes = write_instance_shards([corpus], tokenizer, tmp_path / f"shards-{max_seq_length}", max_seq_length,
                                     sentence_task)
    data = MaskedBatches(prefixes, tokenizer, max_seq_length, batch_size, sentence_task, seed, whole_words=whole_words)
    return data.batches_from


PIPELINES = ["tfrecords", "shards"]


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_the_stream_from_a_step_is_the_stream_skipped_to_it(pipeline, tmp_path, corpus, tiny_bert_real_vocab):
    """What a resumed run relies on: batches depend only on the seed and the step."""
    import biozoo
    from biozoo.data.pretraining import count_instances
    from biozoo.data.tf_pretraining import count_records

    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    streams = {seed: masked_stream(pipeline, tmp_path, corpus, tokenizer, 48, 8, "sop", seed) for seed in (3, 4)}
    epoch = count_records(tmp_path / "records-48") // 8 if pipeline == "tfrecords" else \
        count_instances(tmp_path / "shards-48") // 8

    def batches(start, count, seed=3):
        return [(np.asarray(x["token_ids"]), np.asarray(x["mask_positions"]), np.asarray(y["sentence_label"]))
                for x, y in itertools.islice(streams[seed](start), count)]

    from_zero = batches(0, epoch + 10)
    for ours, theirs in zip(batches(epoch, 10), from_zero[epoch:]):  # into the second pass over the data
        assert all(np.array_equal(a, b) for a, b in zip(ours, theirs))
    assert len(from_zero) == epoch + 10
    assert not np.array_equal(batches(0, 1, seed=4)[0][0], from_zero[0][0])


# ---- masking ----------------------------------------------------------------------------


def chosen_and_original(x, y):
    """(chosen positions per row, original ids) of a masked batch."""
    ids = np.array(x["token_ids"])
    positions, labels = np.asarray(x["mask_positions"]), np.asarray(y["mask_labels"])
    chosen = []
    for row in range(len(ids)):
        keep = labels[row] != -100
        ids[row, positions[row][keep]] = labels[row][keep]
        chosen.append(set(positions[row][keep].tolist()))
    return chosen, ids


def word_spans(pieces, continues, specials=("[CLS]", "[SEP]", "[PAD]", "[MASK]")):
    """[(start, end)] of the words of a row: a piece that continues joins the word before it
    (not a special token: truncation can leave a word's tail right after [CLS])."""
    spans = []
    for i, piece in enumerate(pieces):
        if continues(piece) and spans and spans[-1][1] == i and pieces[i - 1] not in specials and piece not in specials:
            spans[-1] = (spans[-1][0], i + 1)
        else:
            spans.append((i, i + 1))
    return spans


def masked_batches(pipeline, tmp_path, sentences, tokenizer, whole_words, batches=25):
    corpus = write_corpus(tmp_path / "corpus.txt", sentences, per_document=4)
    options = {"shuffle_buffer": 100} if pipeline == "tfrecords" else {}
    stream = masked_stream(pipeline, tmp_path / str(whole_words), corpus, tokenizer, 64, 32, seed=5,
                           whole_words=whole_words, **options)
    return list(itertools.islice(stream(0), batches))


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_whole_word_masking_masks_every_piece_of_known_words(pipeline, tmp_path, shared_data, tiny_bert_real_vocab):
    import biozoo
    from biozoo.testing import read_sentences

    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    words = {}
    for word in KNOWN_WORDS:
        words[word] = tokenizer.ids([word])[0]
        assert len(words[word]) >= 2, (word, [tokenizer.id_to_token(i) for i in words[word]])
    sentences = [s for corpus in ("NCBI-disease", "BC5CDR-chem", "BC5CDR-disease")
                 for s in read_sentences(shared_data / "ner" / corpus / "test.tsv")
                 if set(s.lower().split()) & set(KNOWN_WORDS)]
    assert len(sentences) > 200
    specials = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id, tokenizer.mask_token_id}

    def known_word_outcomes(batches):
        """For each occurrence of a known word: how many of its pieces were chosen / its size."""
        outcomes = []
        for x, y in batches:
            chosen, original = chosen_and_original(x, y)
            for row, ids in enumerate(original):
                ids = list(ids)
                for pieces in words.values():
                    for start in range(len(ids) - len(pieces) + 1):
                        end = start + len(pieces)
                        if ids[start:end] == pieces and (end == len(ids) or not tokenizer.id_to_token(
                                int(ids[end])).startswith("##")):
                            outcomes.append((len(chosen[row] & set(range(start, end))), len(pieces)))
        return outcomes

    batches = masked_batches(pipeline, tmp_path, sentences, tokenizer, whole_words=True)
    outcomes = known_word_outcomes(batches)
    masked = [o for o in outcomes if o[0]]
    assert len(outcomes) > 500 and len(masked) > 30
    assert all(count == size for count, size in masked)  # a chosen word is chosen whole
    # every other word too, and never a special token; about 15 % of the pieces are chosen
    chosen_total = valid_total = 0
    for x, y in batches:
        chosen, original = chosen_and_original(x, y)
        mask = np.asarray(x["padding_mask"])
        for row, ids in enumerate(original):
            ids = [int(i) for i in ids[mask[row] > 0]]
            assert not {ids[p] for p in chosen[row]} & specials
            for start, end in word_spans([tokenizer.id_to_token(i) for i in ids], lambda p: p.startswith("##")):
                assert len(chosen[row] & set(range(start, end))) in (0, end - start)
            chosen_total += len(chosen[row])
            valid_total += sum(i not in specials for i in ids)
    assert 0.12 < chosen_total / valid_total <= 0.15, chosen_total / valid_total
    # 80 % [MASK], 10 % random, 10 % unchanged
    masked_ids = np.concatenate([np.asarray(x["token_ids"])[np.arange(32)[:, None], np.asarray(x["mask_positions"])][
        np.asarray(y["mask_labels"]) != -100] for x, y in batches])
    labels = np.concatenate([np.asarray(y["mask_labels"])[np.asarray(y["mask_labels"]) != -100] for _, y in batches])
    assert 0.75 < np.mean(masked_ids == tokenizer.mask_token_id) < 0.85
    assert 0.06 < np.mean(masked_ids == labels) < 0.14

    # the same check catches token-level masking, which splits words
    token_outcomes = known_word_outcomes(masked_batches(pipeline, tmp_path, sentences, tokenizer, whole_words=False))
    assert any(0 < count < size for count, size in token_outcomes)


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_whole_word_masking_of_sentencepiece_words(pipeline, tiny_albert):
    import tensorflow as tf

    import biozoo
    from biozoo.data.pretraining import WordMasker
    from biozoo.data.tf_pretraining import WholeWordMasker

    def mask_with(masker):
        if pipeline == "tfrecords":
            return lambda ids, seed: [t.numpy() for t in masker(tf.constant(ids), tf.constant([7, seed], tf.int64))]
        return lambda ids, seed: masker.mask(ids, np.random.default_rng([7, seed]))


    tokenizer = biozoo.Tokenizer.from_preset(tiny_albert)
    text = ("germline mutations of the adenomatous polyposis coli gene cause familial adenomatous polyposis "
            "and hereditary nonpolyposis colorectal cancer in myotonic dystrophy families")
    ids = [tokenizer.cls_token_id] + tokenizer.ids([text])[0] + [tokenizer.sep_token_id]
    pieces = [tokenizer.id_to_token(i) for i in ids]
    spans = word_spans(pieces[1:-1], lambda p: not p.startswith("\u2581"))
    spans = [(s + 1, e + 1) for s, e in spans]
    assert len(spans) == len(text.split()) and any(e - s >= 2 for s, e in spans), pieces
    kind = WholeWordMasker if pipeline == "tfrecords" else WordMasker
    masker = mask_with(kind(tokenizer, max_predictions=10))
    split_words = mask_with(kind(tokenizer, max_predictions=10, whole_words=False))
    broken = 0
    for seed in range(40):
        _, positions, labels = masker(ids, seed)
        chosen = set(positions[labels != -100].tolist())
        assert chosen and not chosen & {0, len(ids) - 1}
        for start, end in spans:
            assert len(chosen & set(range(start, end))) in (0, end - start), (seed, pieces[start:end])
        _, positions, labels = split_words(ids, seed)
        chosen = set(positions[labels != -100].tolist())
        broken += any(0 < len(chosen & set(range(s, e))) < e - s for s, e in spans)
    assert broken > 0


def albert_is_start_piece_sp(piece):
    """google-research/albert create_pretraining_data.py, _is_start_piece_sp (Python 3: its two
    encoded currency symbols never equal a str piece)."""
    special_pieces = set(list('!"#$%&\"()*+,-./:;?@[\\]^_`{|}~'))
    english_chars = set(list("abcdefghijklmnopqrstuvwxyz"))
    return bool(piece.startswith("\u2581") or piece.startswith("<") or piece in special_pieces
                or not all([str(i).lower() in english_chars.union(special_pieces) for i in piece]))


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_sentencepiece_words_start_as_albert_says(pipeline, tiny_albert):
    """Whole-word masking groups SentencePiece pieces as ALBERT's create_pretraining_data.py:
    punctuation, digits and other scripts start a word even without "\u2581"."""
    import tensorflow as tf

    import biozoo
    from biozoo.data.pretraining import WordMasker, continuation_flags, special_ids
    from biozoo.data.tf_pretraining import WholeWordMasker

    tokenizer = biozoo.Tokenizer.from_preset(tiny_albert)
    vocabulary, specials = tokenizer.get_vocabulary(), set(special_ids(tokenizer))
    expected = [i not in specials and not albert_is_start_piece_sp(piece) for i, piece in enumerate(vocabulary)]
    assert continuation_flags(tokenizer).tolist() == expected
    ids = [tokenizer.cls_token_id] + tokenizer.ids(["mutations (apc), in 19 families."])[0] + [tokenizer.sep_token_id]
    pieces = [tokenizer.id_to_token(i) for i in ids]
    assert any(not p.startswith("\u2581") and albert_is_start_piece_sp(p) for p in pieces[1:-1]), pieces
    spans = [(s + 1, e + 1) for s, e in word_spans(pieces[1:-1], lambda p: not albert_is_start_piece_sp(p))]
    masker = (WholeWordMasker if pipeline == "tfrecords" else WordMasker)(tokenizer, max_predictions=3)
    for seed in range(30):
        if pipeline == "tfrecords":
            _, positions, labels = [t.numpy() for t in masker(tf.constant(ids), tf.constant([7, seed], tf.int64))]
        else:
            _, positions, labels = masker.mask(ids, np.random.default_rng([7, seed]))
        chosen = set(positions[labels != -100].tolist())
        assert chosen == {i for s, e in spans if chosen & set(range(s, e)) for i in range(s, e)}, (seed, pieces)


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_the_masking_budget_is_berts(pipeline, tiny_albert):
    """BERT's create_pretraining_data.py masks min(max_predictions, max(1, round(n x 0.15))) of n
    candidates, rounded in Python (float64): both maskers agree with it at every length,
    including those a float32 product rounds the other way (190, 350, 390, 670, ...)."""
    import tensorflow as tf

    import biozoo
    from biozoo.data.pretraining import WordMasker
    from biozoo.data.tf_pretraining import WholeWordMasker

    tokenizer = biozoo.Tokenizer.from_preset(tiny_albert)
    word = tokenizer.ids(["cancer"])[0][0]
    kind = WholeWordMasker if pipeline == "tfrecords" else WordMasker
    masker = kind(tokenizer, max_predictions=120, whole_words=False)
    for n in [1, 2, 3, 4, 7, 10, 17, 30, 100, 190, 350, 390, 670, 710, 750]:
        ids = [tokenizer.cls_token_id] + [word] * n + [tokenizer.sep_token_id]
        if pipeline == "tfrecords":
            _, _, labels = [t.numpy() for t in masker(tf.constant(ids), tf.constant([7, n], tf.int64))]
        else:
            _, _, labels = masker.mask(ids, np.random.default_rng([7, n]))
        assert (labels != -100).sum() == min(120, max(1, round(n * 0.15))), n


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_electra_masks_85_percent_and_never_puts_a_random_token(pipeline, tiny_bert_real_vocab):
    """ELECTRA's pretrain_helpers.mask: a chosen piece is [MASK] 85 % of the time and otherwise
    stays; the generator, not the masker, makes the replacements."""
    import tensorflow as tf

    import biozoo
    from biozoo.data.pretraining import WordMasker
    from biozoo.data.tf_pretraining import WholeWordMasker
    from biozoo.train import PRETRAIN_METHODS

    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    ids = [tokenizer.cls_token_id] + tokenizer.ids(["the tumour suppressor gene was mutated in " * 12])[0][:100] + \
        [tokenizer.sep_token_id]
    kind = WholeWordMasker if pipeline == "tfrecords" else WordMasker
    masker = kind(tokenizer, max_predictions=20, whole_words=False,
                  replacement=PRETRAIN_METHODS["electra"]["replacement"])
    outcomes = []
    for seed in range(150):
        if pipeline == "tfrecords":
            masked, positions, labels = [t.numpy() for t in masker(tf.constant(ids), tf.constant([3, seed], tf.int64))]
        else:
            masked, positions, labels = masker.mask(ids, np.random.default_rng([3, seed]))
        chosen = labels != -100
        outcomes += list(np.where(masked[positions[chosen]] == tokenizer.mask_token_id, "mask",
                                  np.where(masked[positions[chosen]] == labels[chosen], "kept", "random")))
    share = {what: outcomes.count(what) / len(outcomes) for what in ("mask", "kept", "random")}
    assert len(outcomes) == 150 * 15 and share["random"] == 0 and 0.82 < share["mask"] < 0.88, share


def test_pretraining_masks_as_its_method_does(tmp_path, corpus, tiny_bert_real_vocab, monkeypatch):
    import biozoo.data.tf_pretraining as records
    from biozoo.train.pretrain import run_pretrain

    real, used = records.masked_dataset, []
    monkeypatch.setattr(records, "masked_dataset",
                        lambda *args, **kwargs: used.append(kwargs["replacement"]) or real(*args, **kwargs))
    config = tmp_path / "electra.json"
    config.write_text(json.dumps(ELECTRA_CONFIG))
    for method in ("electra", "mlm"):
        run_pretrain(method, [corpus], tmp_path / method, config=config, tokenizer=tiny_bert_real_vocab,
                     max_seq_length=32, batch_size=4, steps=1, verbose=0, log=lambda message: None)
    assert used == [(0.85, 0.0), (0.8, 0.1)]


# ---- training ---------------------------------------------------------------------------


@pytest.mark.slow
def test_mlm_loss_falls_with_nsp_and_the_output_loads(tmp_path, corpus, tiny_bert_real_vocab):
    import biozoo
    from biozoo.train.pretrain import run_pretrain

    output = tmp_path / "out"
    metrics = run_pretrain("mlm", [corpus], output, preset=tiny_bert_real_vocab, sentence_task="nsp",
                           max_seq_length=64, batch_size=16, steps=80, learning_rate=1e-3, verbose=0,
                           log=lambda message: None)
    mlm_first, mlm_last = first_last(metrics["mlm_losses"])
    print("mlm loss", mlm_first, "->", mlm_last, "| sentence loss", first_last(metrics["sentence_losses"]))
    assert len(metrics["losses"]) == 80 and metrics["instances"] > 300
    assert mlm_first > 10.0 and mlm_first - mlm_last > 0.8
    assert metrics["loss_first"] == metrics["losses"][0] and metrics["loss_last"] == metrics["losses"][-1]
    # loss = mlm + sentence in float32 (<= half an ulp, ~1e-6 at 16) and each curve is written
    # rounded to 5 decimals (<= 5e-6 each, three of them); log_every is 1 here (80 steps)
    np.testing.assert_allclose(metrics["losses"], np.add(metrics["mlm_losses"], metrics["sentence_losses"]),
                               rtol=0, atol=2e-5)
    assert json.loads((output / "metrics.json").read_text()) == json.loads(json.dumps(metrics))
    assert not os.path.exists(str(output) + ".records")
    backbone = biozoo.from_preset(str(output))
    task = biozoo.MaskedLM.from_preset(str(output))
    assert np.array_equal(backbone.token_embedding.embeddings.numpy(), task.backbone.token_embedding.embeddings.numpy())
    assert biozoo.Tokenizer.from_preset(str(output)).ids(["breast cancer"]) == \
        biozoo.Tokenizer.from_preset(tiny_bert_real_vocab).ids(["breast cancer"])
    assert json.loads((output / "heads.json").read_text()).keys() == {"mlm", "nsp"}


@pytest.mark.slow
def test_electra_discriminator_loss_falls_from_a_config(tmp_path, corpus, tiny_bert_real_vocab):
    import biozoo
    from biozoo.train.pretrain import run_pretrain

    config = tmp_path / "electra.json"
    config.write_text(json.dumps(ELECTRA_CONFIG))
    output = tmp_path / "out"
    metrics = run_pretrain("electra", [corpus], output, config=config, tokenizer=tiny_bert_real_vocab,
                           max_seq_length=48, batch_size=16, steps=50, learning_rate=1e-3, verbose=0,
                           log=lambda message: None)
    d_first, d_last = first_last(metrics["discriminator_losses"])
    g_first, g_last = first_last(metrics["generator_losses"])
    print("discriminator loss", d_first, "->", d_last, "| generator loss", g_first, "->", g_last)
    assert metrics["discriminator_losses"][0] > 0.6 and d_first - d_last > 0.15 and g_first - g_last > 0.3
    assert np.allclose(metrics["losses"], np.add(metrics["generator_losses"],
                                                 50 * np.asarray(metrics["discriminator_losses"])), rtol=1e-4)
    assert metrics["generator"] == {"num_layers": 2, "num_heads": 1, "hidden_dim": 16, "embedding_dim": 32,
                                    "intermediate_dim": 32}
    discriminator = biozoo.ReplacedTokenDetector.from_preset(str(output))
    generator = biozoo.MaskedLM.from_preset(str(output / "generator"))
    assert biozoo.from_preset(str(output)).hidden_dim == 64 and generator.backbone.hidden_dim == 16
    for name in ("token_embedding", "segment_embedding", "embeddings_layer_norm"):
        for ours, theirs in zip(getattr(discriminator.backbone, name).weights, getattr(generator.backbone, name).weights):
            assert np.array_equal(ours.numpy(), theirs.numpy()), name


@pytest.mark.slow
def test_continued_albert_pretraining_with_sop(tmp_path, corpus, tiny_albert):
    """As BioM-ALBERT-xxlarge-PMC continued BioM-ALBERT-xxlarge: start from the preset's
    weights and its MLM and sentence-order heads."""
    import biozoo
    from biozoo.preset_files import read_heads
    from biozoo.presets import resolve_preset
    from biozoo.train.pretrain import build_pretrainer, run_pretrain

    tokenizer = biozoo.Tokenizer.from_preset(tiny_albert)
    trainer = build_pretrainer("mlm", tokenizer, preset=tiny_albert, sentence_task="sop")
    heads, _ = read_heads(resolve_preset(tiny_albert))
    assert np.array_equal(trainer.sentence_head.kernel.numpy(), heads["sop/dense/kernel"])
    assert np.array_equal(trainer.task.mlm_head.output_bias.numpy(), heads["mlm/output_bias"])

    output = tmp_path / "out"
    metrics = run_pretrain("mlm", [corpus], output, preset=tiny_albert, sentence_task="sop", max_seq_length=64,
                           batch_size=16, steps=60, learning_rate=2e-3, verbose=0, log=lambda message: None)
    first, last = first_last(metrics["mlm_losses"])
    print("albert mlm loss", first, "->", last)
    assert first - last > 0.5
    assert type(biozoo.from_preset(str(output))).__name__ == "AlbertBackbone"
    assert read_heads(str(output))[0].keys() >= {"sop/dense/kernel", "mlm/dense/kernel"}


def test_electra_generator_shares_the_discriminator_embeddings(tiny_bert_real_vocab):
    import keras
    import tensorflow as tf

    import biozoo
    from biozoo.train.pretrain import build_pretrainer

    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    trainer = build_pretrainer("electra", tokenizer, config=ELECTRA_CONFIG, generator_fraction=0.5)
    shared = trainer.discriminator.backbone.token_embedding.embeddings
    variables = trainer.trainable_variables
    assert len({id(v) for v in variables}) == len(variables)
    assert any(v is shared for v in variables)
    assert not any(v is trainer.generator.token_embedding.embeddings for v in variables)
    assert trainer.generator.hidden_dim == 32 and trainer.generator.num_heads == 2
    ids = np.array([[tokenizer.cls_token_id] + tokenizer.ids(["breast cancer genes"])[0] + [tokenizer.sep_token_id]])
    x = {"token_ids": tf.constant(ids, tf.int32), "segment_ids": tf.zeros_like(ids, tf.int32),
         "padding_mask": tf.ones_like(ids, tf.int32), "mask_positions": tf.constant([[1, 2]], tf.int32)}
    with tf.GradientTape() as tape:
        loss = keras.ops.sum(trainer.generator_logits(x) ** 2)
    assert float(tf.reduce_sum(tf.abs(tf.convert_to_tensor(tape.gradient(loss, shared))))) > 0
    before = trainer.generator_logits(x).numpy()
    shared.assign(shared.numpy() * 2.0)
    assert not np.allclose(before, trainer.generator_logits(x).numpy())


def test_clear_errors(tmp_path, corpus, tiny_bert_real_vocab):
    import biozoo
    from biozoo.train.pretrain import build_pretrainer, run_pretrain

    tokenizer = biozoo.Tokenizer.from_preset(tiny_bert_real_vocab)
    with pytest.raises(ValueError, match="needs a tokenizer"):
        run_pretrain("mlm", [corpus], tmp_path / "o", config=ELECTRA_CONFIG)
    with pytest.raises(ValueError, match="ELECTRA has no sentence task"):
        build_pretrainer("electra", tokenizer, config=ELECTRA_CONFIG, sentence_task="nsp")
    with pytest.raises(ValueError, match="ELECTRA pretraining needs"):
        build_pretrainer("electra", tokenizer, config={"family": "distilbert", "num_layers": 1, "num_heads": 2,
                                                       "hidden_dim": 16, "intermediate_dim": 32})
    with pytest.raises(ValueError, match="family"):
        build_pretrainer("mlm", tokenizer, config={"num_layers": 1})
    with pytest.raises(ValueError, match="backbone config for bert"):
        build_pretrainer("mlm", tokenizer, config={"family": "bert", "layers": 1})
    with pytest.raises(ValueError, match="embedding only 99 rows"):
        build_pretrainer("mlm", tokenizer, config={"family": "bert", "vocabulary_size": 99, "num_layers": 1,
                                                   "num_heads": 2, "hidden_dim": 16, "intermediate_dim": 32})
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="empty.txt: the corpus is empty"):
        run_pretrain("mlm", [empty], tmp_path / "o", preset=tiny_bert_real_vocab, max_seq_length=32, steps=1)
    with pytest.raises(ValueError, match="exceeds the model's 64 positions"):
        run_pretrain("mlm", [corpus], tmp_path / "o", preset=tiny_bert_real_vocab, max_seq_length=128, steps=1)
    assert not os.path.exists(tmp_path / "o")


def test_command_line_arguments():
    from biozoo._commands.train import add_pretrain_arguments
    from biozoo.train import PRETRAIN_METHODS

    parser = argparse.ArgumentParser()
    parser.add_argument("method", choices=PRETRAIN_METHODS)
    add_pretrain_arguments(parser)
    args = parser.parse_args(["mlm", "--corpus", "a.txt", "b.txt", "--preset", "biom_albert_xxlarge", "--sop",
                              "--output", "out", "--steps", "5"])
    assert args.corpus == ["a.txt", "b.txt"] and args.sentence_task == "sop" and args.steps == 5
    assert args.masking == "wwm" and args.rtd_weight == 50.0 and args.generator_fraction == 0.25
    with pytest.raises(SystemExit):
        parser.parse_args(["mlm", "--corpus", "a.txt", "--output", "o", "--nsp", "--sop"])


def test_command_line_defaults_are_the_hyperparameters_defaults():
    from biozoo._commands.train import add_pretrain_arguments, pretrain_hyperparameters
    from biozoo.train.pretrain import PretrainHyperparameters

    parser = argparse.ArgumentParser()
    parser.add_argument("method")
    add_pretrain_arguments(parser)
    args = parser.parse_args(["mlm", "--corpus", "a.txt", "--preset", "p", "--output", "o"])
    assert pretrain_hyperparameters(args) == PretrainHyperparameters()


def test_pretraining_clips_the_gradient_at_global_norm_1_by_default(tmp_path, corpus, tiny_bert_real_vocab,
                                                                     monkeypatch):
    """BERT's and ELECTRA's optimization.py clip at global norm 1.0: the optimizer pretraining
    compiles clips so by default, at --clip-norm otherwise (0: off), and a rerun resumes only
    with the same clipping."""
    import biozoo.train.pretrain as P
    from biozoo._commands.train import add_pretrain_arguments, pretrain_hyperparameters
    from biozoo.train.run import resume_settings

    class Compiled(Exception):
        pass

    def compiled_optimizer(*args):
        optimizers.append(real(*args))
        raise Compiled

    real, optimizers = P.adamw, []
    monkeypatch.setattr(P, "adamw", compiled_optimizer)
    parser = argparse.ArgumentParser()
    parser.add_argument("method")
    add_pretrain_arguments(parser)
    for flags in ([], ["--clip-norm", "0.5"], ["--clip-norm", "0"]):
        args = parser.parse_args(["mlm", "--corpus", str(corpus), "--preset", str(tiny_bert_real_vocab),
                                  "--output", str(tmp_path / "o"), "--max-seq-length", "32", *flags])
        hp = pretrain_hyperparameters(args)
        with pytest.raises(Compiled):
            P.run_pretrain("mlm", [corpus], tmp_path / "o", hp, preset=tiny_bert_real_vocab, log=lambda message: None)
        assert resume_settings(hp)["clip_norm"] == hp.clip_norm
    assert [optimizer.global_clipnorm for optimizer in optimizers] == [1.0, 0.5, None]
    with pytest.raises(ValueError, match="--clip-norm"):
        P.run_pretrain("mlm", [corpus], tmp_path / "o", preset=tiny_bert_real_vocab, clip_norm=-1.0)


def test_a_run_resumes_by_its_configs_content_not_its_path(tmp_path, corpus, tiny_bert_real_vocab, monkeypatch):
    """A --config edited between runs (same shapes, another dropout) is another run: its
    checkpoints are not resumed; the same config under another name is the same run."""
    import biozoo.train.pretrain as P
    from biozoo.train.run import TrainingRun

    class Started(Exception):
        pass

    def train(run, *args, settings=None, **kwargs):
        recorded.append(settings)
        raise Started

    recorded = []
    monkeypatch.setattr(TrainingRun, "train", train)
    first, renamed = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(ELECTRA_CONFIG))
    renamed.write_text(json.dumps(ELECTRA_CONFIG))
    for config in (first, renamed, {**ELECTRA_CONFIG, "dropout": 0.3}):
        with pytest.raises(Started):
            P.run_pretrain("mlm", [corpus], tmp_path / "o", config=config, tokenizer=tiny_bert_real_vocab,
                           max_seq_length=32, batch_size=4, steps=2, log=lambda message: None)
    assert recorded[0] == recorded[1] != recorded[2]
    assert recorded[0]["config"] == ELECTRA_CONFIG and recorded[2]["config"]["dropout"] == 0.3
