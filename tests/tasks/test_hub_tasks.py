"""Hub task checkpoints (`*ForTokenClassification`, `*ForSequenceClassification`) of every family
load as biozoo tasks with their labels, and predict what transformers' pipelines predict.

transformers runs in a child process (`hf_pipeline_child.py`), once per module, on random-weight
models saved by transformers (safetensors and .bin) and real sentences from the NCBI-disease
test documents."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from biozoo import testing as H

NER_LABELS = ["O", "B-Disease", "I-Disease", "B-Chemical", "I-Chemical"]
SINGLE_LABELS = ["negative", "neutral", "positive"]
MULTI_LABELS = ["hallmark_a", "hallmark_b", "hallmark_c", "hallmark_d"]
STRATEGIES = ("none", "simple", "first", "average", "max")
FAMILY_CASES = ("bert", "albert", "electra", "distilbert", "mobilebert", "megatron_bert")
HARD_TEXTS = ["Naïve µ-opioid (IL-2\u00adR) in Σ cells, e.g. BRCA1/2; p < 0.05.", "Sjögren's syndrome: 12 × 3 mg/kg i.v."]


def _sentences(pubtator_gz, limit):
    """Title and abstract sentences of real PubMed abstracts (a gzipped PubTator file), as written."""
    texts = []
    for line in gzip.decompress(pubtator_gz.read_bytes()).decode("utf-8").splitlines():
        parts = line.split("|", 2)
        if len(parts) == 3 and parts[1] in ("t", "a"):
            texts += [s.strip() for s in parts[2].replace(". ", ".\n").splitlines() if s.strip()]
    return texts[:limit]


def _save(name, hf_class, directory, fmt, **config):
    case = H.get_case(name)
    _, hf_dir = H.save_case(case, hf_class, directory / f"{name}-{hf_class}-{fmt}-{config.get('problem_type')}", fmt,
                            max_position_embeddings=512, architectures=[hf_class], **config)
    return str(hf_dir)


def _labels(names):
    return {"id2label": dict(enumerate(names)), "label2id": {n: i for i, n in enumerate(names)}}


def run_transformers(requests, directory):
    """The child's answers to `requests` (see hf_pipeline_child.py)."""
    path, out = directory / "requests.json", directory / "answers.json"
    path.write_text(json.dumps(requests), encoding="utf-8")
    child = Path(__file__).with_name("hf_pipeline_child.py")
    result = subprocess.run([sys.executable, str(child), str(path), str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def hub(tmp_path_factory, example_pubtator):
    """Random-weight hub task models of every family, and transformers' answers on them."""
    directory = tmp_path_factory.mktemp("hub_tasks")
    texts = _sentences(example_pubtator, 24) + HARD_TEXTS
    pairs = texts[1:] + texts[:1]
    models = []
    for name in FAMILY_CASES:
        case = H.get_case(name)
        ner, cls = case.tasks["ner"], case.tasks["re"]
        models.append(dict(case=name, kind="ner", fmt="safetensors", strategies=STRATEGIES,
                           dir=_save(name, ner, directory, "safetensors", **_labels(NER_LABELS))))
        models.append(dict(case=name, kind="ner", fmt="bin", strategies=("first",),
                           dir=_save(name, ner, directory, "bin", **_labels(NER_LABELS))))
        # transformers 5's ALBERT tokenizer returns no token_type_ids, so its pipeline reads a pair
        # with segment 0 throughout (biozoo gives the second text segment 1, as ALBERT was trained)
        models.append(dict(case=name, kind="single", fmt="safetensors", pairs=name != "albert",
                           dir=_save(name, cls, directory, "safetensors", problem_type="single_label_classification",
                                     **_labels(SINGLE_LABELS))))
        models.append(dict(case=name, kind="multi", fmt="bin",
                           dir=_save(name, cls, directory, "bin", problem_type="multi_label_classification",
                                     **_labels(MULTI_LABELS))))
    models.append(dict(case="bert", kind="regression", fmt="safetensors",
                       dir=_save("bert", "BertForSequenceClassification", directory, "safetensors",
                                 problem_type="regression", num_labels=1)))
    requests = []
    for m in models:
        request = {"dir": m["dir"], "texts": texts}
        if m["kind"] == "ner":
            request.update(pipeline="token-classification", strategies=list(m["strategies"]))
        else:
            request.update(pipeline="text-classification", pairs=pairs if m.get("pairs") else None)
        requests.append(request)
    answers = run_transformers(requests, directory)
    return texts, pairs, list(zip(models, answers))


def _logits(task, rows, tokenizer):
    """The task's logits for (token ids, segment ids) rows, run as one padded batch, each cut
    back to its own length (token classification) or as is (sequence classification)."""
    width = max(len(ids) for ids, _ in rows)
    x = {"token_ids": np.full((len(rows), width), tokenizer.pad_token_id, np.int32),
         "segment_ids": np.zeros((len(rows), width), np.int32), "padding_mask": np.zeros((len(rows), width), np.int32)}
    for i, (ids, segments) in enumerate(rows):
        x["token_ids"][i, :len(ids)], x["segment_ids"][i, :len(ids)], x["padding_mask"][i, :len(ids)] = ids, segments, 1
    logits = np.asarray(task.predict(x, verbose=0))
    return [row[:len(ids)] if logits.ndim == 3 else row for row, (ids, _) in zip(logits, rows)]


def _models(hub, kind):
    return [(m, a) for m, a in hub[2] if m["kind"] == kind]


@pytest.mark.parametrize("index", range(12))
def test_token_classification_checkpoint_equals_the_pipeline(hub, index):
    import biozoo

    texts, _, _ = hub
    model, answer = _models(hub, "ner")[index]
    what = f"{model['case']} {model['fmt']}"
    ner = biozoo.TokenClassifier.from_preset(model["dir"])
    assert ner.label_names == NER_LABELS, what
    tokenizer = ner.preprocessor.tokenizer
    rows = [[tokenizer.cls_token_id] + ids + [tokenizer.sep_token_id] for ids in tokenizer.ids(texts)]
    assert rows == answer["input_ids"], f"{what}: token ids"
    for text, ours, hf_logits in zip(texts, _logits(ner, [(r, [0] * len(r)) for r in rows], tokenizer), answer["logits"]):
        diff = float(np.abs(ours - np.asarray(hf_logits)).max())
        assert diff <= H.TOLERANCE, f"{what}: logits max |diff| {diff:.2e} on {text!r}"
    found = 0
    for strategy in model["strategies"]:
        ours = ner.annotate(texts, aggregation=strategy)
        for text, result, expected in zip(texts, ours, answer["pipeline"][strategy]):
            got = [(e["start"], e["end"], e["type"], e.get("index")) for e in result["entities"]]
            assert got == [(e["start"], e["end"], e["type"], e.get("index")) for e in expected], \
                f"{what} {strategy}: {text!r}"
            np.testing.assert_allclose([e["score"] for e in result["entities"]], [e["score"] for e in expected],
                                       atol=1e-4, err_msg=f"{what} {strategy}")
            found += len(got)
    assert found > 20, f"{what}: too few entities ({found}) to compare"


@pytest.mark.parametrize("kind,count", [("single", 6), ("multi", 6), ("regression", 1)])
def test_sequence_classification_checkpoint_equals_the_pipeline(hub, kind, count):
    import biozoo

    texts, pairs, _ = hub
    cases = _models(hub, kind)
    assert len(cases) == count
    for model, answer in cases:
        what = f"{model['case']} {model['fmt']} {kind}"
        classifier = biozoo.SequenceClassifier.from_preset(model["dir"])
        expected_labels = {"single": SINGLE_LABELS, "multi": MULTI_LABELS, "regression": ["LABEL_0"]}[kind]
        assert classifier.label_names == expected_labels, what
        assert classifier.multi_label == (kind == "multi"), what
        use_pairs = pairs if model.get("pairs") else None
        encoded = classifier.preprocessor.encode(texts, use_pairs)
        assert [ids.tolist() for ids, _ in encoded] == answer["input_ids"], what
        for ours, hf_logits in zip(_logits(classifier, encoded, classifier.preprocessor.tokenizer), answer["logits"]):
            diff = float(np.abs(ours - np.asarray(hf_logits)).max())
            assert diff <= H.TOLERANCE, f"{what}: logits max |diff| {diff:.2e}"
        results = classifier.classify(texts, use_pairs)
        for got, expected in zip(results, answer["pipeline"]):
            assert [r["label"] for r in got] == [r["label"] for r in expected], what
            np.testing.assert_allclose([r["score"] for r in got], [r["score"] for r in expected], atol=1e-4,
                                       err_msg=what)


def test_a_head_that_disagrees_with_id2label_is_refused_and_nothing_is_cached(tmp_path):
    import biozoo
    from biozoo.errors import CheckpointError

    directory = _save("bert", "BertForTokenClassification", tmp_path, "safetensors", **_labels(NER_LABELS))
    config_path = Path(directory) / "config.json"
    config = json.loads(config_path.read_text())
    config["id2label"] = {"0": "O", "1": "B-Disease", "2": "I-Disease"}  # the head has 5 outputs
    config_path.write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"id2label names 3 labels .* head has 5 outputs"):
        biozoo.TokenClassifier.from_preset(directory)
    assert not [p for p in Path(os.environ["BIOZOO_CACHE"]).rglob("config.json")]


def test_a_qa_checkpoint_asked_for_as_a_token_classifier_names_its_class(tmp_path):
    import biozoo
    from biozoo.errors import CheckpointError

    directory = _save("electra", "ElectraForQuestionAnswering", tmp_path, "safetensors")
    with pytest.raises(CheckpointError, match=r"ElectraForQuestionAnswering .*biozoo\.QuestionAnswerer"):
        biozoo.TokenClassifier.from_preset(directory)
    with pytest.raises(CheckpointError, match=r"ElectraForQuestionAnswering"):
        biozoo.SequenceClassifier.from_preset(directory)
    assert not [p for p in Path(os.environ["BIOZOO_CACHE"]).rglob("config.json")]
    # a new head on its encoder is what label_names ask for
    fresh = biozoo.TokenClassifier.from_preset(directory, label_names=["O", "B-X", "I-X"])
    assert fresh.label_names == ["O", "B-X", "I-X"]


def test_a_checkpoint_without_id2label_gets_transformers_names_and_a_warning(tmp_path):
    import biozoo

    directory = _save("distilbert", "DistilBertForTokenClassification", tmp_path, "safetensors", num_labels=3)
    config_path = Path(directory) / "config.json"
    config = json.loads(config_path.read_text())
    del config["id2label"], config["label2id"]
    config_path.write_text(json.dumps(config))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ner = biozoo.TokenClassifier.from_preset(directory)
    assert ner.label_names == ["LABEL_0", "LABEL_1", "LABEL_2"]
    assert any("names no labels" in str(w.message) for w in caught)


def test_other_labels_ask_for_a_new_head(tmp_path):
    import biozoo

    directory = _save("bert", "BertForTokenClassification", tmp_path, "safetensors", **_labels(NER_LABELS))
    converted = biozoo.TokenClassifier.from_preset(directory)
    same = biozoo.TokenClassifier.from_preset(directory, label_names=NER_LABELS)
    np.testing.assert_array_equal(same.output_dense.kernel.numpy(), converted.output_dense.kernel.numpy())
    other = biozoo.TokenClassifier.from_preset(directory, label_names=["O", "B-Gene", "I-Gene"])
    assert other.output_dense.kernel.shape[-1] == 3
    # a sequence classifier's head is never read as a token classifier's, even with equal labels
    sequence = _save("bert", "BertForSequenceClassification", tmp_path, "safetensors", **_labels(NER_LABELS))
    tagger = biozoo.TokenClassifier.from_preset(sequence, label_names=NER_LABELS)
    classifier = biozoo.SequenceClassifier.from_preset(sequence)
    assert not np.allclose(tagger.output_dense.kernel.numpy(), classifier.output_dense.kernel.numpy())


def test_export_hf_task_round_trip(hub, tmp_path):
    """Tasks with new heads (as `biozoo finetune` writes them) exported as transformers task
    classes: the pipelines predict what biozoo predicts; QA logits are equal."""
    import torch
    import transformers

    import biozoo
    from biozoo.cli import main
    from biozoo.export.hf import export_hf_task

    texts = hub[0][:12]
    tasks = {}
    for name in ("bert", "electra", "distilbert", "mobilebert"):
        _, base = H.save_case(H.get_case(name), H.get_case(name).model_class, tmp_path / name, "safetensors",
                              max_position_embeddings=512)
        tasks[f"{name}-ner"] = biozoo.TokenClassifier.from_preset(str(base), label_names=NER_LABELS)
        tasks[f"{name}-cls"] = biozoo.SequenceClassifier.from_preset(str(base), label_names=SINGLE_LABELS)
        tasks[f"{name}-qa"] = biozoo.QuestionAnswerer.from_preset(str(base))
    requests = []
    for key, task in tasks.items():
        task.preprocessor.sequence_length = 512  # one window, as the pipeline reads a sentence
        export_hf_task(task, tmp_path / "export" / key)
        if not key.endswith("-qa"):
            pipeline = "token-classification" if key.endswith("-ner") else "text-classification"
            requests.append({"dir": str(tmp_path / "export" / key), "texts": texts, "pipeline": pipeline,
                             "strategies": ["first", "simple"]})
    answers = iter(run_transformers(requests, tmp_path))
    for key, task in tasks.items():
        if key.endswith("-ner"):
            expected = next(answers)["pipeline"]
            for strategy in ("first", "simple"):
                got = [[(e["start"], e["end"], e["type"]) for e in r["entities"]]
                       for r in task.annotate(texts, aggregation=strategy)]
                assert got == [[(e["start"], e["end"], e["type"]) for e in row] for row in expected[strategy]], key
        elif key.endswith("-cls"):
            expected = next(answers)["pipeline"]
            for got, row in zip(task.classify(texts), expected):
                assert [r["label"] for r in got] == [r["label"] for r in row], key
                np.testing.assert_allclose([r["score"] for r in got], [r["score"] for r in row], atol=1e-4)
        else:
            model = transformers.AutoModelForQuestionAnswering.from_pretrained(str(tmp_path / "export" / key)).eval()
            ids = np.array([[2, 10, 11, 12, 3, 13, 14, 15, 16, 3]], np.int32)
            x = {"token_ids": ids, "segment_ids": np.array([[0] * 5 + [1] * 5], np.int32),
                 "padding_mask": np.ones_like(ids)}
            with torch.no_grad():
                out = model(input_ids=torch.tensor(ids, dtype=torch.long),
                            **({} if "distilbert" in key else {"token_type_ids": torch.tensor(x["segment_ids"],
                                                                                               dtype=torch.long)}))
            theirs = np.stack([out.start_logits.numpy(), out.end_logits.numpy()], -1)
            assert float(np.abs(np.asarray(task(x)) - theirs).max()) <= H.TOLERANCE, key

    # the CLI: a hub checkpoint handle in, the same transformers class out
    source = next(m for m, _ in _models(hub, "ner"))["dir"]
    assert main(["export", "hf", "--model", source, "--output", str(tmp_path / "cli")]) == 0
    exported = json.loads((tmp_path / "cli" / "config.json").read_text())
    assert exported["architectures"] == ["BertForTokenClassification"]
    assert [exported["id2label"][str(i)] for i in range(len(NER_LABELS))] == NER_LABELS


@pytest.mark.slow
def test_real_minilm_ner_fine_tuned_with_transformers_tags_like_the_pipeline(ncbi_disease, minilm_dir, request):
    """MiniLM-L6 fine-tuned for NCBI-disease by transformers (built once, cached in pytest's
    cache) gives, on the whole NCBI-disease test set, the entities of transformers' pipeline for
    every aggregation strategy. The differences are counted; the target is zero."""
    import biozoo

    checkpoint = request.config.cache.mkdir("minilm-ncbi-ner-v3") / "model"
    if not (checkpoint / "config.json").exists():
        child = Path(__file__).with_name("hf_finetune_ner_child.py")
        result = subprocess.run([sys.executable, str(child), str(minilm_dir), str(ncbi_disease /
                                 "train.tsv"), str(checkpoint), "2000", "60"], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-3000:]
    saved = sorted(p.name for p in checkpoint.iterdir())
    assert "tokenizer.json" in saved and "vocab.txt" not in saved, saved  # as transformers 5 saves it
    texts = H.read_sentences(ncbi_disease / "test.tsv")
    strategies = ["simple", "first", "average", "max"]
    answer, = run_transformers([{"dir": str(checkpoint), "texts": texts, "pipeline": "token-classification",
                                 "strategies": strategies, "forward_once": True, "logits": False}],
                               checkpoint.parent)
    ner = biozoo.TokenClassifier.from_preset(str(checkpoint))
    assert ner.label_names == ["O", "B-Disease", "I-Disease"]
    report = {}
    predicted = ner.token_probabilities(texts)  # once; `annotate` = `group` of these
    for strategy in strategies:
        ours = ner.group(texts, predicted, strategy)
        expected = answer["pipeline"][strategy]
        differences = total = 0
        for result, row in zip(ours, expected):
            got = {(e["start"], e["end"], e["type"]) for e in result["entities"]}
            want = {(e["start"], e["end"], e["type"]) for e in row}
            differences += len(got ^ want)
            total += len(want)
            if got == want:
                np.testing.assert_allclose(sorted(e["score"] for e in result["entities"]),
                                           sorted(e["score"] for e in row), atol=1e-4)
        report[strategy] = (differences, total)
    print("entities differing / pipeline entities:", report)
    assert all(total > 500 for _, total in report.values()), report  # the model tags diseases
    assert all(differences == 0 for differences, _ in report.values()), report


def test_annotate_and_evaluate_take_a_hub_checkpoint_from_the_cli(hub, ncbi_disease, tmp_path, capsys):
    from seqeval.metrics import f1_score
    from seqeval.metrics.sequence_labeling import get_entities

    import biozoo
    from biozoo.cli import main

    model = next(m for m, _ in _models(hub, "ner") if m["case"] == "electra")["dir"]
    texts = hub[0][:8]
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    assert main(["annotate", "--model", model, "--aggregation", "max", "--no-progress", str(tmp_path / "in.txt")]) == 0
    printed = [json.loads(line)["predictions"] for line in capsys.readouterr().out.splitlines()]
    assert printed == H.annotate_by_sentence(biozoo.TokenClassifier.from_preset(model), texts, model, "max")

    data = tmp_path / "NCBI-disease"  # the folder name types its bare B/I tags as Disease
    data.mkdir()
    lines = (ncbi_disease / "test.tsv").read_text(encoding="utf-8").split("\n\n")[:60]
    (data / "test.tsv").write_text("\n\n".join(lines) + "\n", encoding="utf-8")
    assert main(["evaluate", "ner", "--model", model, "--data", str(data)]) == 0
    metrics = json.loads(capsys.readouterr().out.splitlines()[-1])
    sentences = [[line.split("\t") for line in block.splitlines() if line.strip()] for block in lines]
    gold = [[tag if tag == "O" or "-" in tag else f"{tag}-Disease" for _, tag in s] for s in sentences]
    predicted, _ = biozoo.TokenClassifier.from_preset(model).predict_tags([[w for w, _ in s] for s in sentences])
    assert metrics["task"] == "ner" and metrics["model"] == model
    assert abs(metrics["f1"] - 100 * f1_score(gold, predicted)) < 1e-6
    assert metrics["counts"]["gold"] == sum(len(get_entities(g)) for g in gold) > 0
    assert metrics["counts"]["pred"] == sum(len(get_entities(p)) for p in predicted) > 0


def test_a_registry_task_checkpoint_and_its_hf_handle_load_from_a_hub_mirror(tmp_path, monkeypatch, ncbi_disease):
    """The registry's pinned task entry (here bioformer_8l_ncbi_disease) downloads, converts once,
    and its labels are the checkpoint's id2label, which the registry records."""
    import biozoo
    from biozoo import presets, registry
    from biozoo.errors import CheckpointError
    from biozoo.tasks.finetuned import load_task

    entry = registry.get_entry("bioformer_8l_ncbi_disease")
    labels = entry["task"]["label_names"]
    source = _save("bert", entry["task"]["hf_class"], tmp_path, "bin", **_labels(labels))
    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    repo, revision = entry["sources"]["hf"]["repo"], entry["sources"]["hf"]["revision"]
    H.populate_hf_cache(cache, repo, revision, source)
    H.registry_entry_describes(monkeypatch, "bioformer_8l_ncbi_disease", source)

    assert "bioformer_8l_ncbi_disease" in biozoo.list_presets(kind="task")
    ner = biozoo.TokenClassifier.from_preset("bioformer_8l_ncbi_disease")
    assert ner.label_names == labels
    kind, _, task = load_task("bioformer_8l_ncbi_disease")
    assert kind == "ner" and task.label_names == labels
    by_handle = biozoo.TokenClassifier.from_preset(f"hf://{repo}@{revision}")
    np.testing.assert_array_equal(by_handle.output_dense.kernel.numpy(), ner.output_dense.kernel.numpy())
    with pytest.raises(CheckpointError, match="BertForTokenClassification"):
        biozoo.QuestionAnswerer.from_preset("bioformer_8l_ncbi_disease")
    converted = [p for p in (Path(presets.cache_root()) / "presets").iterdir() if p.is_dir()]
    assert len(converted) == 2, converted  # the name and the hf:// handle, each converted once

    # evaluated on NCBI-disease: typed gold (Disease) shares no type with B-bio / I-bio, which is
    # refused; bare B/I gold tags are read as the one-type model's own type
    from biozoo.train.finetune import run_evaluate

    blocks = (ncbi_disease / "test.tsv").read_text(encoding="utf-8").split("\n\n")[:30]
    for name, strip in (("typed", False), ("bare", True)):
        (tmp_path / name).mkdir()
        text = "\n\n".join(blocks) + "\n"
        if strip:
            text = text.replace("-Disease", "")
        (tmp_path / name / "test.tsv").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"\['bio'\].*\['Disease'\]: no type in common"):
        run_evaluate("bioformer_8l_ncbi_disease", str(tmp_path / "typed"))
    metrics = run_evaluate("bioformer_8l_ncbi_disease", str(tmp_path / "bare"))
    assert metrics["counts"]["gold"] > 0 and set(metrics["per_type"]) <= {"bio"}
