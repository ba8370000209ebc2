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


def test_evaluate_reads_bare_tags_in_an_unnamed_folder_as_the_one_type_model_s(ner_model, tmp_path, capsys):
    # the model was fine-tuned on typed Disease tags (no entity_type recorded); its test split with
    # the types stripped, in a folder that names no corpus, scores as the typed one did
    data, output, printed = ner_model
    bare = tmp_path / "blurb_copy"
    bare.mkdir()
    (bare / "test.tsv").write_text((data / "test.tsv").read_text(encoding="utf-8").replace("-Disease", ""),
                                   encoding="utf-8")
    assert main(["evaluate", "ner", "--model", str(output), "--data", str(bare), "--no-progress"]) == 0
    evaluated = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for key in ("precision", "recall", "f1", "counts"):
        assert evaluated[key] == printed["test"][key]


def test_bare_tags_for_scoring_take_the_folder_s_type_else_the_one_type_model_s(tmp_path):
    from types import SimpleNamespace

    from biozoo.errors import DataFormatError
    from biozoo.tasks.adapters.ner import NerAdapter

    def tags(folder, label_names, **options):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "test.tsv").write_text("aspirin\tB\ncancer\tO\n", encoding="utf-8")
        task = SimpleNamespace(label_names=label_names)
        return NerAdapter(**options).load_for(task, tmp_path / folder, only="test")["test"][0].tags

    one_type = ["O", "B-Chemical", "I-Chemical"]
    assert tags("mystery", one_type) == ["B-Chemical", "O"]
    assert tags("NCBI-disease", one_type) == ["B-Disease", "O"]  # the folder names the corpus's type
    assert tags("mystery", one_type, entity_type="Drug") == ["B-Drug", "O"]  # the recorded option first
    for label_names in (["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"], ["O", "B", "I"]):
        with pytest.raises(DataFormatError, match=r"test\.tsv:1: .*name the folder after its corpus"):
            tags("mystery", label_names)


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


def test_a_relation_label_the_model_never_learned_is_named_with_its_line(tmp_path):
    from types import SimpleNamespace

    from biozoo.data.relation import read_relation
    from biozoo.errors import DataFormatError
    from biozoo.tasks.adapters.relation import RelationAdapter

    (tmp_path / "test.tsv").write_text("index\tsentence\tlabel\n"
                                       "0\t@CHEMICAL$ binds @GENE$.\tCPR:4\n"
                                       "1\t@CHEMICAL$ and @GENE$.\tCPR:9\n"
                                       "2\t@CHEMICAL$ or @GENE$.\tfalse\n", encoding="utf-8")
    examples = read_relation(tmp_path / "test.tsv")
    task = SimpleNamespace(label_names=["false", "CPR:4"])
    with pytest.raises(DataFormatError, match=r"'CPR:9' \(.*test\.tsv:3\); it predicts false, CPR:4"):
        RelationAdapter().evaluate(task, examples)
