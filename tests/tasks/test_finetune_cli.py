"""`biozoo finetune` -> `evaluate` -> `annotate`: a saved task preset reloaded in a new
process gives the same predictions; metrics.json and stdout carry the same numbers."""

import json
import subprocess
import sys

import pytest

from biozoo import testing as H
from biozoo.cli import main


def subset(source, target, counts):
    """The first sentences of each split of a token<TAB>tag corpus."""
    target.mkdir(parents=True, exist_ok=True)
    for split, count in counts.items():
        blocks = (source / f"{split}.tsv").read_text(encoding="utf-8").split("\n\n")[:count]
        (target / f"{split}.tsv").write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return target


def run_cli(*argv):
    result = subprocess.run([sys.executable, "-m", "biozoo", *argv], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def ner_model(tmp_path_factory, ncbi_disease, tiny_bert_real_vocab):
    root = tmp_path_factory.mktemp("ner")
    data = subset(ncbi_disease, root / "data", {"train": 120, "devel": 40, "test": 60})
    output = root / "model"
    stdout = run_cli("finetune", "ner", "--preset", str(tiny_bert_real_vocab), "--data", str(data),
                     "--output", str(output), "--epochs", "1", "--batch-size", "16", "--learning-rate", "1e-3",
                     "--max-seq-length", "24")
    return data, output, json.loads(stdout)  # stdout is the metrics alone: Keras' progress bar goes to stderr


def test_finetune_writes_a_task_preset_and_metrics(ner_model):
    data, output, printed = ner_model
    assert json.loads((output / "metrics.json").read_text()) == printed
    for name in ("task.json", "task.weights.h5", "config.json", "model.weights.h5", "tokenizer.json",
                 "preprocessor.json"):
        assert (output / name).exists(), name
    assert printed["test"]["counts"]["gold"] > 0 and printed["dev"]["sentences"] == 40
    assert set(printed["test"]) >= {"precision", "recall", "f1", "per_type", "counts"}


def test_evaluate_in_a_new_process_reproduces_the_test_metrics(ner_model):
    data, output, printed = ner_model
    evaluated = json.loads(run_cli("evaluate", "ner", "--model", str(output), "--data", str(data)).strip())
    for key in ("precision", "recall", "f1", "counts"):
        assert evaluated[key] == printed["test"][key]


def test_annotate_in_a_new_process_matches_in_process(ner_model, tmp_path):
    from biozoo.tasks import load_task

    data, output, _ = ner_model
    texts = ["BRCA1 mutations cause breast and ovarian cancer.",
             "Patients with cystic fibrosis (CF) and Duchenne muscular dystrophy were excluded.", ""]
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    lines = run_cli("annotate", "--model", str(output), "--no-progress", str(tmp_path / "in.txt")).strip().splitlines()
    _, _, task = load_task(str(output))
    assert [json.loads(line)["predictions"] for line in lines] == H.annotate_by_sentence(task, texts, str(output))



def test_evaluate_refuses_the_wrong_kind(ner_model, capsys):
    data, output, _ = ner_model
    assert main(["evaluate", "re", "--model", str(output), "--data", str(data)]) == 2
    assert "ner model" in capsys.readouterr().err


def test_export_hub_of_the_finetuned_model_serves_annotate(ner_model, tmp_path, capsys):
    import tensorflow as tf

    from biozoo.tasks import load_task

    _, output, _ = ner_model
    assert main(["export", "tfhub", "--model", str(output), "--output", str(tmp_path / "served")]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["task"] == "ner"
    _, _, task = load_task(output)
    texts = ["Familial breast cancer and ovarian cancer.", "Ataxia telangiectasia patients.", "No disease here."]
    served = tf.saved_model.load(str(tmp_path / "served")).signatures["serving_default"](text=tf.constant(texts))
    for i, result in enumerate(task.annotate(texts)):
        n = int(served["num_entities"][i])
        got = [(int(s), int(e), t.decode()) for s, e, t in zip(served["entity_start"][i][:n], served["entity_end"][i][:n],
                                                              served["entity_type"][i][:n])]
        assert got == [(e["start"], e["end"], e["type"]) for e in result["entities"]]
