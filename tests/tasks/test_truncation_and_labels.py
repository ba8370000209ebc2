"""What encoding cuts to fit is counted and said (HoC abstracts, RE sentences and the markers of
their entity pair), HoC trains at LinkBERT's 512 capped at the model's positions, and the label list is the
train split's: a label only dev or test has is refused, naming its file:line."""

import json

import pytest
import transformers

from biozoo.benchmark.suites import load_suite
from biozoo.cli import main
from biozoo.data.hoc import LABELS
from biozoo.errors import DataFormatError, DataWarning
from biozoo.task_kinds import task_kind
from biozoo.train.finetune import Hyperparameters, run_finetune

QUIET = dict(epochs=1, batch_size=8, learning_rate=1e-3)


@pytest.fixture
def hf_tokenizer(minilm_dir):
    """transformers' tokenizer of the tiny model's vocabulary: the reference lengths."""
    return transformers.BertTokenizerFast(str(minilm_dir / "vocab.txt"), do_lower_case=True)


def pubtator_abstracts(shared_data):
    """(PMID, title, abstract) of the gold NCBI-disease test documents."""
    text = (shared_data / "documents" / "NCBIdisease_Test.PubTator").read_text(encoding="utf-8")
    documents = text.strip().split("\n\n")
    rows = []
    for document in documents:
        lines = document.strip().split("\n")
        rows.append((lines[0].split("|")[0], lines[0].split("|", 2)[2], lines[1].split("|", 2)[2]))
    return rows


def write_hoc_split(path, abstracts):
    """BLURB HoC rows, one per sentence (title, then abstract): {PMID: (first line, text)}."""
    lines, first = ["labels\tsentence\tindex"], {}
    for n, (pmid, sentences) in enumerate(abstracts):
        first[pmid] = (len(lines) + 1, " ".join(sentences))
        for k, sentence in enumerate(sentences):
            field = ",".join(f"{j}_{int(j == n % len(LABELS))}" for j in range(len(LABELS)))
            lines.append(f"{field}\t{sentence}\t{pmid}_{k}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return first


def expected_cut(hf_tokenizer, texts, length):
    full = [len(hf_tokenizer(text)["input_ids"]) for text in texts]
    return {"examples": sum(n > length for n in full), "tokens_cut": sum(max(0, n - length) for n in full)}


def test_hoc_trains_at_512_capped_and_counts_the_abstracts_cut(tmp_path, shared_data, tiny_bert_real_vocab,
                                                              hf_tokenizer):
    blurb_hoc = load_suite("blurb").recipes["sizes"]["base"]["hoc"]["max_seq_length"]
    assert task_kind("doc").sequence_length == blurb_hoc == 512
    documents = pubtator_abstracts(shared_data)
    # a title alone fits 64 tokens; a title and its abstract does not
    abstracts = [(pmid, [title] if i % 3 == 0 else [title, abstract]) for i, (pmid, title, abstract) in
                 enumerate(documents[:24])]
    data = tmp_path / "hoc"
    data.mkdir()
    first = {split: write_hoc_split(data / f"{split}.tsv", abstracts[start:end])
             for split, start, end in (("train", 0, 12), ("dev", 12, 18), ("test", 18, 24))}
    output = tmp_path / "model"
    with pytest.warns(DataWarning) as caught:
        assert main(["finetune", "doc", "--preset", str(tiny_bert_real_vocab), "--data", str(data), "--output",
                     str(output), "--epochs", "1", "--batch-size", "8", "--learning-rate", "1e-3"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    positions = 64  # the tiny model's
    assert metrics["hyperparameters"]["max_seq_length"] == positions
    reported = {"train": metrics["train_truncated"], "dev": metrics["dev"]["truncated"],
                "test": metrics["test"]["truncated"]}
    messages = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    for split, abstracts_of in first.items():
        texts = [text for _, text in abstracts_of.values()]
        assert reported[split] == expected_cut(hf_tokenizer, texts, positions), split
        assert 0 < reported[split]["examples"] < len(texts), split
        cut_first = next(line for line, text in abstracts_of.values()
                         if len(hf_tokenizer(text)["input_ids"]) > positions)
        where = f"{data / f'{split}.tsv'}:{cut_first}: {reported[split]['examples']} of {len(texts)} examples"
        assert any(m.startswith(where) for m in messages), (where, messages)


@pytest.fixture(scope="module")
def chemprot_head(tmp_path_factory, shared_data):
    root = tmp_path_factory.mktemp("chemprot")
    for split, n in (("train", 200), ("dev", 40), ("test", 60)):  # train has every label of dev and test
        lines = (shared_data / "re" / "chemprot" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        (root / f"{split}.tsv").write_text("\n".join(lines[: n + 1]) + "\n", encoding="utf-8")
    return root


def test_relation_sentences_cut_and_markers_lost_are_counted(tmp_path, chemprot_head, tiny_bert_real_vocab,
                                                             hf_tokenizer):
    length = 32
    markers = ["BC6ENTC", "BC6ENTG", "BC6OTHER"]
    hf_tokenizer.add_tokens([transformers.AddedToken(m, normalized=False) for m in markers])
    pair_ids = set(hf_tokenizer.convert_tokens_to_ids(["BC6ENTC", "BC6ENTG"]))  # BC6OTHER: outside the pair
    with pytest.warns(DataWarning) as caught:
        metrics = run_finetune("re", str(tiny_bert_real_vocab), chemprot_head, tmp_path / "model",
                               Hyperparameters(**QUIET, max_seq_length=length), log=lambda m: None)
    messages = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    reported = {"train": metrics["train_truncated"], "dev": metrics["dev"]["truncated"],
                "test": metrics["test"]["truncated"]}
    for split in reported:
        rows = (chemprot_head / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[1:]
        ids = [hf_tokenizer(row.split("\t")[0], add_special_tokens=False)["input_ids"] for row in rows]
        budget = length - 2
        lost = [line for line, row in enumerate(ids, start=2) if pair_ids & set(row[budget:])]
        cut = [line for line, row in enumerate(ids, start=2) if len(row) > budget]
        assert reported[split] == {"examples": len(cut), "tokens_cut": sum(max(0, len(r) - budget) for r in ids),
                                   "lost_marker": len(lost)}, split
        assert lost, split
        path = chemprot_head / f"{split}.tsv"
        where = (f"{path}:{cut[0]}: {len(cut)} of {len(rows)} examples are longer than {length} tokens",
                 f"{len(lost)} lost an entity pair's marker, the first at {path}:{lost[0]}")
        assert any(m.startswith(where[0]) and where[1] in m for m in messages), (where, messages)


def test_a_relation_label_only_test_has_is_refused(tmp_path, chemprot_head, tiny_bert_real_vocab):
    data = tmp_path / "re"
    data.mkdir()
    for split in ("train", "dev", "test"):
        (data / f"{split}.tsv").write_text((chemprot_head / f"{split}.tsv").read_text(encoding="utf-8"))
    test = (data / "test.tsv").read_text(encoding="utf-8").splitlines()
    test[7] = test[7].rsplit("\t", 1)[0] + "\tCPR:10"
    (data / "test.tsv").write_text("\n".join(test) + "\n", encoding="utf-8")
    train_labels = sorted({row.rsplit("\t", 1)[1] for row in
                           (data / "train.tsv").read_text(encoding="utf-8").splitlines()[1:]})
    with pytest.raises(DataFormatError) as error:
        run_finetune("re", str(tiny_bert_real_vocab), data, tmp_path / "model",
                     Hyperparameters(**QUIET, max_seq_length=32), log=lambda m: None)
    message = str(error.value)
    assert message.startswith(f"{data / 'test.tsv'}:8: label 'CPR:10': not in the train split")
    assert ", ".join(map(repr, train_labels)) in message
    assert not (tmp_path / "model").exists()


def test_an_ner_tag_only_dev_has_is_refused(tmp_path, tiny_bert_real_vocab):
    data = tmp_path / "ner"
    data.mkdir()
    sentence = "Aspirin\tO\ncauses\tO\nbreast\tB-Disease\ncancer\tI-Disease\n.\tO\n"
    (data / "train.tsv").write_text(sentence * 3, encoding="utf-8")
    (data / "test.tsv").write_text(sentence, encoding="utf-8")
    (data / "dev.tsv").write_text(sentence + "\n" + sentence.replace("Aspirin\tO", "Aspirin\tB-Chemical"),
                                  encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"dev\.tsv:7: label 'B-Chemical': not in the train split .*train"
                       r"\.tsv, whose labels are 'B-Disease', 'I-Disease', 'O'"):
        run_finetune("ner", str(tiny_bert_real_vocab), data, tmp_path / "model",
                     Hyperparameters(**QUIET, max_seq_length=32), log=lambda m: None)
