"""Inference precisions (float32, bfloat16, int8) and the ONNX / LiteRT exports' accuracy
certificates: the certificate's F1 figures equal seqeval on the predictions, --max-f1-drop
refuses an export whose F1 drops by more, and nothing is written then; the exports' tokenizer
is transformers', and ONNX int8's dependence on the batch is stated.

(Every family's float32 ONNX / LiteRT NER export against transformers' logits is in the family
battery: `biozoo.testing.run_ids_export_test`.)"""

import json
import re

import numpy as np
import pytest

import biozoo
from biozoo.preset_files import TASK_KIND_FILE, task_kind_record

LABELS = ["O", "B-Disease", "I-Disease"]


def sharpen_head(dense, seed=0, scale=3.0):
    """Random, confident head weights so that tags vary from word to word."""
    rng = np.random.default_rng(seed)
    kernel, bias = dense.get_weights()
    dense.set_weights([rng.normal(0, scale, kernel.shape).astype("float32"), np.zeros_like(bias)])


@pytest.fixture(scope="module")
def model_dir(tiny_bert_real_vocab, tmp_path_factory):
    """A fine-tuned-model directory (as `biozoo finetune ner` writes it) of a tiny BERT with a
    real vocabulary and a random, confident head."""
    task = biozoo.TokenClassifier.from_preset(str(tiny_bert_real_vocab), label_names=LABELS)
    task.preprocessor.sequence_length = 64
    sharpen_head(task.output_dense)
    out = tmp_path_factory.mktemp("ner") / "model"
    task.save_to_preset(str(out))
    (out / TASK_KIND_FILE).write_text(json.dumps(task_kind_record("ner", {"entity_type": None})))
    return out


@pytest.fixture(scope="module")
def sentences(ncbi_disease):
    from biozoo.data.ner import read_ner

    return [s.words for s in read_ner(ncbi_disease / "devel.tsv")[:80]]


@pytest.fixture(scope="module")
def float32_gold(model_dir, sentences, tmp_path_factory):
    """A data folder whose dev gold is the float32 model's own tags: float32 scores F1 100, and
    every tag that int8 changes lowers the int8 F1."""
    tags, _ = biozoo.TokenClassifier.from_preset(str(model_dir)).predict_tags(sentences)
    assert sum(t != "O" for row in tags for t in row) > 50, "the head should predict entities"
    data = tmp_path_factory.mktemp("gold")
    (data / "dev.tsv").write_text("".join(
        "".join(f"{w}\t{t}\n" for w, t in zip(words, row)) + "\n" for words, row in zip(sentences, tags)))
    return data, tags


def test_precision_choices_of_the_cli_are_the_tasks():
    from biozoo.cli import build_parser
    from biozoo.tasks.inference import PRECISIONS

    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    offered = {a.choices for name in ("evaluate", "annotate") for a in commands[name]._actions if a.dest == "precision"}
    assert offered == {PRECISIONS}


def test_unknown_precision_is_refused(model_dir):
    with pytest.raises(ValueError, match="float32, bfloat16, int8"):
        biozoo.TokenClassifier.from_preset(str(model_dir), precision="int4")


def test_bfloat16_and_int8_logits_stay_near_float32(model_dir, sentences):
    """bfloat16: within the battery's bfloat16 bound (12 unit roundoffs, relative). int8: LiteRT
    dynamic-range quantization (int8 weight tensors in the model), near but not equal to
    float32 (it did quantize), and its tags mostly agree."""
    from ai_edge_litert.interpreter import Interpreter

    from biozoo.tasks.tf_inference import litert_flatbuffer
    from biozoo.testing import MIXED_TOLERANCE

    float32 = biozoo.TokenClassifier.from_preset(str(model_dir))
    windows = float32.preprocessor.windows(sentences)
    x = {k: v[:16] for k, v in _batch(float32, windows).items()}
    reference = np.asarray(float32(x, training=False))
    scale = max(1.0, float(np.abs(reference).max()))
    mask = x["padding_mask"].astype(bool)
    found = {}
    for precision in ("bfloat16", "int8"):
        float32.precision = precision
        from biozoo.tasks.inference import compiled_predict

        found[precision] = np.abs(np.asarray(compiled_predict(float32)(x), np.float32) - reference)[mask].max() / scale
    float32.precision = "float32"
    assert found["bfloat16"] <= MIXED_TOLERANCE["mixed_bfloat16"], found
    # int8 measured 5.2e-3 (of max(1, |logits|), TF CPU); 0.1 is a margin (~20x), not a derived bound
    assert 0 < found["int8"] <= 0.1, found
    tensors = Interpreter(model_content=litert_flatbuffer(float32, "int8")).get_tensor_details()
    assert sum(t["dtype"] == np.int8 for t in tensors) >= 12, "int8 weight tensors (2 layers x 6 matmuls)"
    tags, _ = float32.predict_tags(sentences)
    int8 = biozoo.TokenClassifier.from_preset(str(model_dir), precision="int8")
    tags8, _ = int8.predict_tags(sentences)
    agree = np.mean([a == b for x, y in zip(tags, tags8) for a, b in zip(x, y)])
    assert agree > 0.9, agree  # measured 0.9995 (1 of 2,001 tags differs); 0.9 is a margin


def _batch(task, windows):
    from biozoo.data.pipeline import model_input_batches

    batches = model_input_batches(windows.token_ids, task.preprocessor.tokenizer.pad_token_id,
                                  batch_size=len(windows.token_ids), max_length=64)
    return batches.batch(batches.plan[0])


def test_int8_certificate_f1_is_seqeval_and_max_f1_drop_refuses(model_dir, float32_gold, sentences, tmp_path):
    from seqeval.metrics import f1_score

    from biozoo.errors import BiozooError
    from biozoo.export.ids_models import export_ids_model

    data, gold = float32_gold
    certificate = export_ids_model("litert", tmp_path / "int8", model=str(model_dir), quantize="int8",
                                   data=str(data), split="dev")
    dev = certificate["dev"]
    int8_tags, _ = biozoo.TokenClassifier.from_preset(str(model_dir), precision="int8").predict_tags(sentences)
    assert dev["f1_float32"] == pytest.approx(100.0)
    assert dev["f1_export"] == pytest.approx(100 * f1_score(gold, int8_tags), abs=1e-9)
    assert dev["f1_drop"] > 0, "int8 changes some tags of this confident random head"
    assert dev["examples"] == len(sentences)
    written = json.loads((tmp_path / "int8" / "accuracy_certificate.json").read_text())
    assert written["dev"]["f1_drop"] == dev["f1_drop"] and written["quantize"] == "int8"
    assert (tmp_path / "int8" / "model.tflite").stat().st_size > 0
    assert "token ids, not text" in (tmp_path / "int8" / "README.md").read_text()

    refused = tmp_path / "refused"
    with pytest.raises(BiozooError, match=r"drops by .* more than --max-f1-drop"):
        export_ids_model("litert", refused, model=str(model_dir), quantize="int8", data=str(data), split="dev",
                         max_f1_drop=dev["f1_drop"] / 2)
    assert not refused.exists() and not list(tmp_path.glob(".refused*")), "nothing written"
    accepted = export_ids_model("litert", tmp_path / "accepted", model=str(model_dir), quantize="int8",
                                data=str(data), split="dev", max_f1_drop=dev["f1_drop"] + 0.01)
    assert accepted["dev"]["f1_drop"] == dev["f1_drop"]


def test_onnx_int8_cli_export_has_integer_matmuls_and_a_certificate(model_dir, float32_gold, tmp_path, capsys):
    """`biozoo export onnx --quantize int8`: ONNX Runtime's dynamic quantization (integer
    matmuls in the graph); the certificate's float32 F1 is 100 against the float32 tags, and a
    threshold below the measured drop exits non-zero with nothing written."""
    import onnx

    from biozoo.cli import main

    data, _ = float32_gold
    out = tmp_path / "onnx8"
    command = ["export", "onnx", "--model", str(model_dir), "--output", str(out), "--quantize", "int8",
               "--data", str(data)]
    assert main(command) == 0
    certificate = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["certificate"]
    assert certificate["format"] == "onnx" and certificate["opset"] == 17
    assert certificate["dev"]["f1_float32"] == pytest.approx(100.0)
    ops = {node.op_type for node in onnx.load(str(out / "model.onnx")).graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops, sorted(ops)
    info = json.loads((out / "export.json").read_text())
    assert info["label_names"] == LABELS and info["outputs"] == ["logits"]
    assert sorted(info["inputs"]) == ["input_mask", "input_type_ids", "input_word_ids"]
    assert (out / "tokenizer" / "vocab.txt").exists()
    assert certificate["dev"]["f1_drop"] > 0, "int8 changes some tags of this confident random head"
    refused = tmp_path / "refused"
    command[command.index("--output") + 1] = str(refused)
    assert main(command + ["--max-f1-drop", "0"]) != 0
    assert "more than --max-f1-drop 0.0" in capsys.readouterr().err
    assert not refused.exists()


def test_evaluate_and_annotate_take_a_precision(model_dir, float32_gold, sentences, tmp_path, capsys):
    """`biozoo evaluate ner --precision int8` reports the int8 model's entity F1 (seqeval on its
    tags); `annotate --precision int8` writes the int8 model's entities."""
    from seqeval.metrics import f1_score

    from biozoo.cli import main

    data, gold = float32_gold
    int8 = biozoo.TokenClassifier.from_preset(str(model_dir), precision="int8")
    tags8, _ = int8.predict_tags(sentences)
    assert main(["evaluate", "ner", "--model", str(model_dir), "--data", str(data), "--split", "dev",
                 "--precision", "int8"]) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert metrics["inference_precision"] == "int8"
    assert metrics["f1"] == pytest.approx(100 * f1_score(gold, tags8), abs=1e-9)

    texts = [" ".join(words) for words in sentences[:10]]
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n")
    assert main(["annotate", str(tmp_path / "in.txt"), "--model", str(model_dir), "--precision", "int8",
                 "--output", str(tmp_path / "out.jsonl"), "--no-progress"]) == 0
    from biozoo.documents import read_documents
    from biozoo.testing import annotate_by_sentence

    expected = annotate_by_sentence(int8, texts, str(model_dir))
    got = [sorted((a.start, a.end, a.type) for a in d.predictions) for d in read_documents([tmp_path / "out.jsonl"])]
    assert got == [[(e["start"], e["end"], e["type"]) for e in row] for row in expected]
    assert sum(map(len, got)) > 0


@pytest.mark.slow  # the exported model runs in a child process without Keras
@pytest.mark.parametrize("fmt", ["onnx", "litert"])
def test_backbone_preset_export_gives_transformers_encoder_outputs(fmt, tmp_path):
    """`export {onnx,litert} --preset`: sequence_output and pooled_output of the bare encoder,
    equal to transformers' BertModel (<= 1e-4) where Keras, biozoo and TensorFlow are absent."""
    import torch

    from biozoo import testing
    from biozoo.export.ids_models import FORMATS, export_ids_model

    model, hf_dir = testing.save_case("bert", "BertModel", tmp_path)
    certificate = export_ids_model(fmt, tmp_path / fmt, preset=str(hf_dir))
    assert certificate["task"] == "backbone" and certificate["dev"] is None
    assert max(certificate["fixed_inputs"]["max_abs_diff"].values()) <= testing.TOLERANCE
    inputs = testing.case_inputs(model)
    feed = {"input_word_ids": inputs["token_ids"], "input_mask": inputs["padding_mask"],
            "input_type_ids": inputs["segment_ids"]}
    outputs = testing.run_exported_without_keras(fmt, tmp_path / fmt / FORMATS[fmt], feed, tmp_path)
    with torch.no_grad():
        expected = model(**testing.torch_inputs(model, inputs))
    mask = inputs["padding_mask"]
    assert testing.max_diff(outputs["sequence_output"], expected.last_hidden_state.numpy(), mask) <= testing.TOLERANCE
    assert np.abs(outputs["pooled_output"] - expected.pooler_output.numpy()).max() <= testing.TOLERANCE
    info = json.loads((tmp_path / fmt / "export.json").read_text())
    assert info["outputs"] == ["pooled_output", "sequence_output"] and info["label_names"] == []


def test_max_f1_drop_needs_dev_data(model_dir, tmp_path):
    from biozoo.export.ids_models import export_ids_model

    with pytest.raises(ValueError, match="needs dev data"):
        export_ids_model("onnx", tmp_path / "x", model=str(model_dir), quantize="int8", max_f1_drop=0.5)
    with pytest.raises(ValueError, match="quantize to int8, not 'float16'"):
        export_ids_model("onnx", tmp_path / "x", model=str(model_dir), quantize="float16")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("task_name", ["SequenceClassifier", "QuestionAnswerer"])
def test_every_task_takes_a_precision(task_name, tiny_bert_real_vocab):
    """Classification and QA predict through the same precision switch: their int8 and bfloat16
    outputs stay near float32's (bounds as in the NER test), and int8 is not float32."""
    from biozoo.tasks.inference import compiled_predict
    from biozoo.testing import MIXED_TOLERANCE

    cls = getattr(biozoo, task_name)
    kwargs = {"label_names": ["no", "yes"]} if task_name == "SequenceClassifier" else {}
    task = cls.from_preset(str(tiny_bert_real_vocab), **kwargs)
    ids = task.preprocessor.tokenizer.ids(["BRCA1 mutations cause breast cancer.", "Aspirin inhibits COX-1."])
    width = max(map(len, ids))
    x = {"token_ids": np.array([row + [0] * (width - len(row)) for row in ids], np.int32)}
    x["padding_mask"] = (x["token_ids"] > 0).astype(np.int32)
    x["segment_ids"] = np.zeros_like(x["token_ids"])
    valid = x["padding_mask"].astype(bool) if task_name == "QuestionAnswerer" else slice(None)
    reference = np.asarray(task(x, training=False))[valid]
    scale = max(1.0, float(np.abs(reference).max()))
    found = {}
    for precision in ("bfloat16", "int8"):
        task.precision = precision
        got = np.asarray(compiled_predict(task)(x), np.float32)[valid]
        found[precision] = float(np.abs(got - reference).max()) / scale
    assert found["bfloat16"] <= MIXED_TOLERANCE["mixed_bfloat16"], found
    # int8 measured 2.5e-4 (SequenceClassifier), 1.7e-3 (QuestionAnswerer); 0.1: the NER test's margin
    assert 0 < found["int8"] <= 0.1, found
    if task_name == "QuestionAnswerer":
        answers = task.answer(["What causes breast cancer?"], ["BRCA1 mutations cause breast cancer."])
        assert answers[0]["text"] in "BRCA1 mutations cause breast cancer."



def test_an_empty_dev_split_is_refused(model_dir, tmp_path):
    from biozoo.export.ids_models import export_ids_model

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "dev.tsv").write_text("")
    with pytest.raises(ValueError, match="split 'dev' has no examples"):
        export_ids_model("litert", tmp_path / "x", model=str(model_dir), data=str(tmp_path / "data"))
    assert not (tmp_path / "x").exists()


def test_document_models_have_a_headline_f1():
    """Certificates compare each kind's F1; for HoC it is LinkBERT's micro F1 (sklearn's)."""
    from sklearn.metrics import f1_score

    from biozoo.metrics.hoc import document_scores
    from biozoo.tasks.adapters.document import DocumentAdapter

    gold, pred = [[1, 0, 1], [0, 1, 0]], [[1, 1, 0], [0, 1, 0]]
    assert DocumentAdapter().headline_f1(document_scores(gold, pred)) == pytest.approx(
        100 * f1_score(gold, pred, average="micro"))


MARKERS = ["@GENE$", "@DISEASE$"]
TEXTS = ["BRCA1 mutations cause breast cancer.", "Café-au-lait spots in NF1 (Ünïcödé) patients",
         "@GENE$ is linked to @DISEASE$ ; @gene$ is not a marker."]


@pytest.fixture(scope="module")
def re_with_markers(tiny_bert_real_vocab, tmp_path_factory):
    """A relation classifier whose tokenizer keeps entity markers whole, as `biozoo finetune re`
    adds them (new ids at the end of the vocabulary, matched in the raw text)."""
    from biozoo.tasks.base import resize_token_embedding
    from biozoo.tasks.sequence_classifier import SequenceClassifierPreprocessor

    tokenizer = biozoo.Tokenizer.from_preset(str(tiny_bert_real_vocab)).with_added_tokens(MARKERS)
    backbone = resize_token_embedding(biozoo.from_preset(str(tiny_bert_real_vocab)), tokenizer.vocabulary_size())
    task = biozoo.SequenceClassifier(backbone=backbone, label_names=["false", "true"],
                                     preprocessor=SequenceClassifierPreprocessor(tokenizer=tokenizer, sequence_length=64))
    out = tmp_path_factory.mktemp("re") / "model"
    task.save_to_preset(str(out))
    (out / TASK_KIND_FILE).write_text(json.dumps(task_kind_record("re", {"negative_label": "false",
                                                                        "added_tokens": MARKERS})))
    return out


def test_exported_tokenizer_is_transformers_and_the_readme_runs(re_with_markers, tiny_bert_real_vocab, tmp_path,
                                                                  monkeypatch):
    """OUT/tokenizer loads with transformers' AutoTokenizer alone and gives the ids of the
    checkpoint's own HF tokenizer with the markers added (and biozoo's); export.json records its
    normalization; the README's code, run as written, gives biozoo's float32 logits."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import AddedToken

    from biozoo.export.ids_models import export_ids_model
    from biozoo.testing import TOLERANCE

    out = tmp_path / "onnx"
    certificate = export_ids_model("onnx", out, model=str(re_with_markers))
    reference = transformers.AutoTokenizer.from_pretrained(str(tiny_bert_real_vocab))
    reference.add_tokens([AddedToken(t, normalized=False) for t in MARKERS])
    expected = reference(TEXTS)["input_ids"]
    marker = reference.convert_tokens_to_ids("@GENE$")
    assert expected[2].count(marker) == 1 and marker >= 30522, "the premise: one marker kept whole, an added id"
    theirs = transformers.AutoTokenizer.from_pretrained(str(out / "tokenizer"))
    assert theirs(TEXTS)["input_ids"] == expected
    ours = biozoo.Tokenizer.from_preset(str(re_with_markers))
    assert [[ours.cls_token_id, *ids, ours.sep_token_id] for ids in ours.ids(TEXTS)] == expected

    assert reference.backend_tokenizer.normalizer.normalize_str("Café") == "cafe"  # MiniLM: uncased, no accents
    info = json.loads((out / "export.json").read_text())
    assert info["tokenizer"] == {"files": "tokenizer/", "model": "WordPiece", "transformers_class": "BertTokenizer",
                                 "lowercase": True, "strip_accents": True, "added_tokens": MARKERS}
    assert certificate["batch_dependent"] is False and info["batch_dependent"] is False

    readme = (out / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.S)[1]
    assert "AutoTokenizer.from_pretrained" in code
    monkeypatch.chdir(out)
    namespace = {"texts": TEXTS}
    exec(code, namespace)
    task = biozoo.SequenceClassifier.from_preset(str(re_with_markers))
    x = {"token_ids": namespace["ids"], "padding_mask": namespace["mask"], "segment_ids": namespace["types"]}
    assert np.abs(namespace["outputs"][0] - np.asarray(task(x, training=False))).max() <= TOLERANCE


def test_exported_sentencepiece_tokenizer_is_transformers(tiny_spiece, tmp_path, monkeypatch):
    """A SentencePiece tokenizer (ALBERT's normalization) with added markers, written as the
    ONNX / LiteRT exports write it: AutoTokenizer loads it with the ids of transformers' own
    ALBERT tokenizer of that model, and the README's tokenization code runs on it (transformers'
    ALBERT tokenizer returns token_type_ids only where the export asks for them)."""
    import shutil

    transformers = pytest.importorskip("transformers")
    from tokenizers import AddedToken

    from biozoo.export.ids_models import README_TOKENIZATION, tokenizer_settings, write_tokenizer

    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(tiny_spiece, source / "spiece.model")
    (source / "config.json").write_text('{"model_type": "albert"}')
    (source / "tokenizer_config.json").write_text('{"do_lower_case": true, "keep_accents": false}')
    reference = transformers.AutoTokenizer.from_pretrained(str(source))
    reference.add_tokens([AddedToken(t, normalized=False) for t in MARKERS])
    ours = biozoo.tokenizers.SentencePieceTokenizer(proto=str(tiny_spiece), lowercase=True).with_added_tokens(MARKERS)
    write_tokenizer(ours, tmp_path / "tokenizer", 512)
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "tokenizer"))
    assert theirs(TEXTS)["input_ids"] == reference(TEXTS)["input_ids"]
    assert tokenizer_settings(ours) == {"files": "tokenizer/", "model": "SentencePiece",
                                        "transformers_class": "AlbertTokenizer", "lowercase": True,
                                        "keep_accents": False, "added_tokens": MARKERS}

    monkeypatch.chdir(tmp_path)
    namespace = {"texts": TEXTS}
    exec(README_TOKENIZATION, namespace)
    expected = reference(TEXTS, padding=True, return_tensors="np")
    np.testing.assert_array_equal(namespace["ids"], expected["input_ids"])
    np.testing.assert_array_equal(namespace["mask"], expected["attention_mask"])
    np.testing.assert_array_equal(namespace["types"], np.zeros_like(expected["input_ids"]))


def test_onnx_int8_certificate_says_its_outputs_depend_on_the_batch(model_dir, tmp_path):
    """ONNX Runtime's int8 quantizes each activation tensor for the whole batch: a sentence's
    logits differ alone and beside longer ones, and the certificate, export.json and README say
    so with the batches the figures were measured on. LiteRT's int8 quantizes row by row: the
    same logits either way, and no such statement."""
    import onnxruntime
    import transformers
    from ai_edge_litert.interpreter import Interpreter

    from biozoo.export.ids_models import export_ids_model

    def onnx_logits(path, ids, mask, types):
        session = onnxruntime.InferenceSession(str(path))
        return session.run(["logits"], {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})[0]

    def litert_logits(path, ids, mask, types):
        run = Interpreter(model_path=str(path)).get_signature_runner()
        return run(input_word_ids=ids, input_mask=mask, input_type_ids=types)["logits"]

    sentences = [TEXTS[0], "Mutations in the CFTR gene cause cystic fibrosis, a disease of the lungs and pancreas "
                 "that shortens life expectancy considerably."]
    for fmt, logits, dependent in (("onnx", onnx_logits, True), ("litert", litert_logits, False)):
        out = tmp_path / fmt
        certificate = export_ids_model(fmt, out, model=str(model_dir), quantize="int8")
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(out / "tokenizer"))

        def run(texts):
            batch = tokenizer(texts, padding=True, return_tensors="np")
            inputs = (batch[k].astype(np.int32) for k in ("input_ids", "attention_mask", "token_type_ids"))
            return logits(out / "model.onnx" if fmt == "onnx" else out / "model.tflite", *inputs)

        alone = run(sentences[:1])[0]
        beside_a_longer_one = run(sentences)[0, :len(alone)]
        difference = float(np.abs(alone - beside_a_longer_one).max())
        assert (difference > 1e-3) == dependent, (fmt, difference)  # measured: onnx 0.35, litert 0
        assert certificate["batch_dependent"] is dependent
        assert json.loads((out / "export.json").read_text())["batch_dependent"] is dependent
        readme = (out / "README.md").read_text()
        assert ("Outputs depend on the batch" in readme) == dependent
        batching = certificate["batching"]
        assert "padded to the longest" in batching["fixed_inputs"] and batching["dev"] is None
        if dependent:
            assert "DynamicQuantizeLinear" in batching["why"] and batching["fixed_inputs"] in readme


def test_float_export_states_its_tolerance_and_longest_sequence(model_dir, tmp_path):
    """A float32 export's certificate states each output's tolerance (verification's float32
    table) and that it is within it; the certificate, export.json and README state the longest
    sequence, which is the longest the ONNX model runs (onnxruntime refuses one token more)."""
    import onnxruntime

    from biozoo.export.ids_models import export_ids_model
    from biozoo.verification import TOLERANCE

    out = tmp_path / "onnx"
    certificate = export_ids_model("onnx", out, model=str(model_dir))
    assert certificate["tolerance"] == {"logits": TOLERANCE["task_logits"]}
    assert certificate["within_tolerance"] is True
    assert certificate["fixed_inputs"]["max_abs_diff"]["logits"] <= TOLERANCE["task_logits"]
    longest = biozoo.TokenClassifier.from_preset(str(model_dir)).backbone.max_sequence_length
    info = json.loads((out / "export.json").read_text())
    written = json.loads((out / "accuracy_certificate.json").read_text())
    assert certificate["max_sequence_length"] == info["max_sequence_length"] == written["max_sequence_length"] == longest
    readme = (out / "README.md").read_text()
    assert f"`seq` is at most **{longest}** tokens" in readme and "Tolerance (float32 exports are refused" in readme
    assert json.loads((out / "tokenizer" / "tokenizer_config.json").read_text())["model_max_length"] == longest
    session = onnxruntime.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])

    def run(length):
        ids = np.full((1, length), 1000, np.int32)
        return session.run(["logits"], {"input_word_ids": ids, "input_mask": np.ones_like(ids),
                                        "input_type_ids": np.zeros_like(ids)})[0]

    assert run(longest).shape == (1, longest, len(LABELS))
    with pytest.raises(Exception):  # noqa: B017  (onnxruntime's errors have no common public class)
        run(longest + 1)


def test_float_export_beyond_its_tolerance_is_refused(model_dir, tmp_path, monkeypatch):
    """A float32 export whose outputs differ from biozoo's float32 model by more than the
    tolerance (a runtime adding 0.5 to every logit stands in for a conversion bug) is refused,
    naming the output, the max diff and the tolerance, and nothing is written."""
    from biozoo.errors import BiozooError
    from biozoo.export import ids_models

    real = ids_models._convert

    def off_by_half(fmt, target, quantize, opset):
        blob, runner = real(fmt, target, quantize, opset)
        return blob, lambda x: {k: v + 0.5 for k, v in runner(x).items()}

    monkeypatch.setattr(ids_models, "_convert", off_by_half)
    out = tmp_path / "broken"
    with pytest.raises(BiozooError, match=r"output logits differs .* by up to 0\.5 .* more than its tolerance 0\.001"):
        ids_models.export_ids_model("litert", out, model=str(model_dir))
    assert not out.exists() and not list(tmp_path.glob(".broken*")), "nothing written"
