"""QA training data: windows overlap at any --max-seq-length (a stride they cannot overlap with is
refused, as transformers' tokenizer refuses it), answers that no window holds are counted, and a
training question without answers must be `is_impossible` (BERT's run_squad refuses it)."""

import json

import pytest

import biozoo
from biozoo.data.qa import QAExample, read_squad
from biozoo.errors import DataFormatError, DataWarning
from biozoo.tasks.adapters.qa import QuestionAnsweringAdapter
from biozoo.tasks.question_answerer import QuestionAnswererPreprocessor
from biozoo.testing import bioasq_dev
from biozoo.train.finetune import Hyperparameters, run_finetune

transformers = pytest.importorskip("transformers")

# its answer crosses the border of two windows that only touched at 128 / 128 (trained as no-answer)
CROSSING = "551c23bc6b348bb82c00000b:12"


@pytest.fixture(scope="module")
def reference(tiny_bert_real_vocab):
    return transformers.AutoTokenizer.from_pretrained(str(tiny_bert_real_vocab))


@pytest.fixture(scope="module")
def tokenizer(tiny_bert_real_vocab):
    return biozoo.Tokenizer.from_preset(str(tiny_bert_real_vocab))


def run_qa_windows(reference, question, context, answer, max_length, stride):
    """Token ids and (start, end) labels per window, as transformers' run_qa.py
    (`prepare_train_features`) makes them; `stride`: the tokens two windows share. One fix: the
    start scan stops at the context's last token (run_qa's walks on into the final [SEP], whose
    offsets are (0, 0), when an answer starts at a window's last token: start > end)."""
    enc = reference(question, context, truncation="only_second", max_length=max_length, stride=stride,
                    return_overflowing_tokens=True, return_offsets_mapping=True)
    start_char, end_char = answer[0], answer[0] + len(answer[1])
    labels = []
    for i, offsets in enumerate(enc["offset_mapping"]):
        sequence_ids = enc.sequence_ids(i)
        first, last = sequence_ids.index(1), len(sequence_ids) - 2  # the context's first and last token
        if not (offsets[first][0] <= start_char and offsets[last][1] >= end_char):
            labels.append((0, 0))  # the answer is not wholly in this window: [CLS]
            continue
        end = last
        while first <= end and offsets[first][0] <= start_char:
            first += 1
        while offsets[last][1] >= end_char:
            last -= 1
        labels.append((first - 1, last + 1))
    return enc["input_ids"], labels


def hf_refusal(reference, question, context, max_length, stride):
    """How transformers' (fast) tokenizer refuses `stride` for these windows: "always" (a stride
    above max_length - 2, whatever the context), "windows" (not below the context tokens of a
    window, for a context it must cut), or None."""
    try:
        reference(question, context, truncation="only_second", max_length=max_length, stride=stride,
                  return_overflowing_tokens=True)
    except ValueError as error:
        assert "stride" in str(error)
        return "always"
    except BaseException as error:  # a Rust panic (pyo3's PanicException is a BaseException)
        if type(error).__name__ != "PanicException":
            raise
        return "windows"
    return None


def test_default_windows_overlap_and_label_as_run_qa(shared_data, reference, tokenizer):
    """At --max-seq-length 128 the default stride is min(128, budget // 2): the windows and labels
    of every BioASQ dev question are run_qa's with the tokenizer's stride = budget - that step, and
    every answer lies in a window (at 128 / 128 windows only touched and CROSSING's answer in none)."""
    examples = read_squad(bioasq_dev(shared_data))
    pre = QuestionAnswererPreprocessor(tokenizer, sequence_length=128)
    answers = [(e.answers[0]["answer_start"], e.answers[0]["text"]) for e in examples]
    features = pre.features([e.question for e in examples], [e.context for e in examples], answers)
    windowed = 0
    for e, (example, answer) in enumerate(zip(examples, answers)):
        budget = 128 - len(reference(example.question, add_special_tokens=False)["input_ids"]) - 3
        ids, labels = run_qa_windows(reference, example.question, example.context, answer, 128,
                                     budget - min(128, budget // 2))
        ours = [w for w in range(len(features.example)) if features.example[w] == e]
        assert [features.token_ids[w].tolist() for w in ours] == ids, example.qid
        assert [(features.start_positions[w], features.end_positions[w]) for w in ours] == labels, example.qid
        windowed += len(ours) > 1
        assert any(label != (0, 0) for label in labels) == (e not in features.answers_in_no_window), example.qid
    assert windowed >= 90 and features.answers_in_no_window == []
    crossing = [e for e, example in enumerate(examples) if example.qid == CROSSING][0]
    assert any(features.start_positions[w] > 0 for w in range(len(features.example)) if features.example[w] == crossing)


def test_a_stride_the_windows_cannot_overlap_with_is_refused_as_by_hf(reference, tokenizer):
    """A doc_stride is refused where the transformers tokenizer refuses the same stride, naming the
    numbers it is compared with; a stride at or above a window's budget passes for a context of one
    window, as there."""
    question, long, short = "What inhibits COX?", "Aspirin inhibits COX in many cells. " * 20, "Aspirin inhibits COX."
    budget = 48 - len(reference(question, add_special_tokens=False)["input_ids"]) - 3
    expected = {"always": "exceeds sequence_length 48 - 2", "windows": f"must be less than the {budget} context"}
    seen = set()
    for stride in (budget - 1, budget, 46, 47, 60):
        for context in (long, short):
            pre = QuestionAnswererPreprocessor(tokenizer, sequence_length=48, doc_stride=stride)
            refusal = hf_refusal(reference, question, context, 48, stride)
            seen.add((refusal, context == long))
            if refusal:
                with pytest.raises(ValueError, match=f"doc_stride={stride} {expected[refusal]}"):
                    pre.features([question], [context], [(0, "Aspirin")])
            else:
                assert pre.features([question], [context], [(0, "Aspirin")]).answers_in_no_window == []
    assert seen == {(None, True), (None, False), ("windows", True), ("always", True), ("always", False)}


def test_a_saved_stride_that_cannot_overlap_warns_at_inference_and_steps_as_the_default(reference, tokenizer):
    """A model saved before None was the default holds doc_stride 128 at any length: at inference
    it is not refused but warns, and its windows are those of doc_stride=None (which overlap)."""
    question, context = "What inhibits COX?", "Aspirin inhibits COX in many cells. " * 20
    step = (48 - len(reference(question, add_special_tokens=False)["input_ids"]) - 3) // 2
    old = QuestionAnswererPreprocessor(tokenizer, sequence_length=48, doc_stride=128)
    with pytest.raises(ValueError, match="doc_stride=128 exceeds sequence_length 48 - 2"):
        old.features([question], [context], [(0, "Aspirin")])
    with pytest.warns(DataWarning, match=f"doc_stride=128 exceeds sequence_length 48 - 2.* step {step} tokens instead"):
        got = old.features([question], [context])
    expected = QuestionAnswererPreprocessor(tokenizer, sequence_length=48).features([question], [context])
    assert len(got.token_ids) == len(expected.token_ids) > 2
    assert all((a == b).all() for a, b in zip(got.token_ids, expected.token_ids))
    assert got.spans == expected.spans


def test_finetuning_a_model_saved_with_a_stride_too_long_for_the_new_length_takes_the_default(tmp_path,
                                                                                               tiny_bert_real_vocab):
    """`biozoo finetune` has no --doc-stride: a QA preset saved with 128 (the old default) is
    trained further at 64 with the default step, and says so, instead of being refused."""
    task = biozoo.QuestionAnswerer.from_preset(str(tiny_bert_real_vocab))
    task.preprocessor.doc_stride = 128
    task.save_to_preset(str(tmp_path / "old"))
    with pytest.warns(DataWarning, match="doc_stride 128 leaves no overlap between windows at --max-seq-length 64"):
        rebuilt = QuestionAnsweringAdapter().build_task(str(tmp_path / "old"), {}, Hyperparameters(max_seq_length=64))
    assert rebuilt.preprocessor.doc_stride is None and rebuilt.preprocessor.sequence_length == 64
    kept = QuestionAnsweringAdapter().build_task(str(tmp_path / "old"), {}, Hyperparameters(max_seq_length=384))
    assert kept.preprocessor.doc_stride == 128


def squad_file(path, qas_per_paragraph, version="1.1"):
    paragraphs = [{"context": context, "qas": qas} for context, qas in qas_per_paragraph]
    path.write_text(json.dumps({"version": version, "data": [{"title": "t", "paragraphs": paragraphs}]}))
    return path


CONTEXT = "Aspirin inhibits COX in platelets. " + "It was first made by Bayer from willow bark extracts. " * 6


def test_finetune_counts_the_answers_no_window_holds(tmp_path, tiny_bert_real_vocab, reference):
    """An answer longer than a window's context tokens lies in no window (all of run_qa's labels
    are [CLS]): the training log names its question and metrics.json counts it."""
    long = CONTEXT[35:]  # about 60 tokens: more than a window of 32 holds
    qas = [(CONTEXT, [{"id": "short", "question": "What inhibits COX?", "answers": [{"text": "Aspirin", "answer_start": 0}]}]),
           (CONTEXT, [{"id": "long", "question": "What was made?", "answers": [{"text": long, "answer_start": 35}]}])]
    squad_file(tmp_path / "train.json", qas)
    for qid, question, (start, text) in (("short", "What inhibits COX?", (0, "Aspirin")), ("long", "What was made?", (35, long))):
        budget = 32 - len(reference(question, add_special_tokens=False)["input_ids"]) - 3
        _, labels = run_qa_windows(reference, question, CONTEXT, (start, text), 32, budget - budget // 2)
        assert (qid == "long") == all(label == (0, 0) for label in labels)
    logged = []
    hp = Hyperparameters(epochs=1, batch_size=4, learning_rate=1e-3, max_seq_length=32)
    metrics = run_finetune("qa", str(tiny_bert_real_vocab), tmp_path, tmp_path / "model", hp, log=logged.append)
    assert metrics["train_answers_in_no_window"] == 1
    assert metrics["train_windows"] > 2
    assert any("1 of 2 training answers lie in no window" in m and "first: long" in m for m in logged), logged


def test_a_v11_training_question_without_answers_is_refused(tmp_path):
    """SQuAD v1.1 (no is_impossible): a training question without answers is an error naming the
    file, the question's place and id (BERT's run_squad: "each question should have exactly 1
    answer"); a dev split without answers is read (scored, not trained on)."""
    answered = {"id": "q1", "question": "What inhibits COX?", "answers": [{"text": "Aspirin", "answer_start": 0}]}
    for missing in ({"id": "q2", "question": "Who made it?", "answers": []}, {"id": "q2", "question": "Who made it?"}):
        path = squad_file(tmp_path / "train.json", [(CONTEXT, [answered]), (CONTEXT, [missing])])
        with pytest.raises(DataFormatError) as info:
            QuestionAnsweringAdapter().load(tmp_path)
        assert str(info.value).startswith(f"{path}: data[0].paragraphs[1].qas[0] (id q2): a training question "
                                          "without answers")
    squad_file(tmp_path / "train.json", [(CONTEXT, [answered])])
    squad_file(tmp_path / "dev.json", [(CONTEXT, [{"id": "d1", "question": "Who made it?", "answers": []}])])
    assert [e.qid for e in QuestionAnsweringAdapter().load(tmp_path)["dev"]] == ["d1"]


def test_v20_trains_only_is_impossible_questions_as_no_answer(tmp_path, tiny_bert_real_vocab):
    """SQuAD v2.0: an is_impossible question is trained as [CLS]; an answerable one without answers
    is refused, in the file and in examples given to `batches` directly."""
    answered = {"id": "a", "question": "What inhibits COX?", "answers": [{"text": "Aspirin", "answer_start": 0}],
                "is_impossible": False}
    impossible = {"id": "n", "question": "Who won?", "answers": [], "is_impossible": True}
    squad_file(tmp_path / "train.json", [(CONTEXT[:35], [answered, impossible])], "v2.0")
    adapter = QuestionAnsweringAdapter()
    train = adapter.load(tmp_path)["train"]
    qa = biozoo.QuestionAnswerer.from_preset(str(tiny_bert_real_vocab))
    hp = Hyperparameters(batch_size=2, max_seq_length=32)
    positions = [tuple(p.tolist()) for p in adapter.batches(qa, train, hp).features["positions"]]
    assert len(positions) == 2 and positions[0] != (0, 0) and positions[1] == (0, 0)  # one window each
    broken = dict(impossible, id="b", is_impossible=False)
    path = squad_file(tmp_path / "train.json", [(CONTEXT[:35], [answered, broken])], "v2.0")
    with pytest.raises(DataFormatError, match=rf"^{path}: data\[0\]\.paragraphs\[0\]\.qas\[1\] \(id b\): a training"):
        adapter.load(tmp_path)
    with pytest.raises(DataFormatError, match="training question b has no answers and is not is_impossible"):
        adapter.batches(qa, [QAExample("b", "Who won?", CONTEXT[:35])], hp, training=True)
