"""Under JAX, in a Python where TensorFlow cannot be imported: `biozoo annotate` (every input and output
format, cascade included), `biozoo evaluate` and the tokenizer give what they give under TensorFlow.

Two random-weight NER checkpoints with MiniLM's real vocabulary (a small and a larger one, for the
cascade) tag the packaged PubMed abstracts and, where ../shared/data is present, the NCBI-disease test
documents and a PMC article in BioC; the same commands run here (TensorFlow) and in the child (JAX).
"""

import json
import subprocess

import numpy as np
import pytest

from biozoo import testing as H
from biozoo.cli import main

pytestmark = pytest.mark.slow

NER_LABELS = {"id2label": {0: "O", 1: "B-Disease", 2: "I-Disease"}, "label2id": {"O": 0, "B-Disease": 1, "I-Disease": 2}}


@pytest.fixture(scope="module")
def models(tmp_path_factory, minilm_dir):
    directory = tmp_path_factory.mktemp("ner")
    out = {}
    for name, layers in (("small", 1), ("large", 2)):
        model = H.make_model("bert", "BertForTokenClassification", seed=layers, vocab_size=30522,
                             num_hidden_layers=layers, initializer_range=0.2, max_position_embeddings=128,
                             architectures=["BertForTokenClassification"], **NER_LABELS)
        out[name] = str(H.save_hf_directory(model, directory / name, vocab_file=minilm_dir / "vocab.txt"))
    return out


@pytest.fixture(scope="module")
def documents(request, example_pubtator):
    inputs = [str(example_pubtator)]
    try:
        shared = request.getfixturevalue("shared_data")
    except pytest.skip.Exception:
        return inputs
    return inputs + [str(shared / "documents" / "NCBIdisease_Test.PubTator"),
                     str(shared / "documents" / "example_pmc.BioC.xml")]


def jax_child(tmp_path, commands):
    """Run the biozoo command lines `commands` in one JAX process where TensorFlow cannot be imported;
    the last line each printed on stdout."""
    command, env = H.without_tensorflow(tmp_path, {"KERAS_BACKEND": "jax", "BIOZOO_CACHE": str(tmp_path / "jax-cache")})
    (tmp_path / "commands.json").write_text(json.dumps(commands))
    code = ("import contextlib, io, json, sys\nfrom biozoo.cli import main\nlast = []\n"
            "for argv in json.load(open(sys.argv[1])):\n"
            "    out = io.StringIO()\n"
            "    with contextlib.redirect_stdout(out):\n"
            "        assert main(argv) == 0, argv\n"
            "    last.append((out.getvalue().splitlines() or [''])[-1])\n"
            "assert 'tensorflow' not in sys.modules, 'TensorFlow was imported'\n"
            "print(json.dumps(last))")
    run = subprocess.run([*command, "-c", code, str(tmp_path / "commands.json")], env=env, capture_output=True,
                         text=True, timeout=1200)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.splitlines()[-1])


def test_the_child_cannot_import_tensorflow(tmp_path):
    command, env = H.without_tensorflow(tmp_path, {"KERAS_BACKEND": "jax"})
    run = subprocess.run([*command, "-c", "import tensorflow"], env=env, capture_output=True, text=True)
    assert run.returncode != 0 and "No module named 'tensorflow'" in run.stderr


@pytest.mark.parametrize("argv", [["export", "onnx", "--model", "{model}", "--output", "{out}"],
                        ["evaluate", "ner", "--model", "{model}", "--data", "ncbi-disease", "--precision", "int8"]])
def test_a_command_that_needs_tensorflow_says_so(argv, models, tmp_path):
    command, env = H.without_tensorflow(tmp_path, {"KERAS_BACKEND": "jax", "BIOZOO_CACHE": str(tmp_path / "c")})
    (tmp_path / "corpus.txt").write_text("the gene brca1 causes breast cancer\nprotein kinase inhibitors\n\n"
                                         "mutations of the tumour suppressor\n", encoding="utf-8")
    argv = [a.format(model=models["small"], out=tmp_path / "out", corpus=tmp_path / "corpus.txt") for a in argv]
    run = subprocess.run([*command, "-m", "biozoo", *argv], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 2, run.stderr[-3000:]
    assert f"biozoo {argv[0]}: error:" in run.stderr and "needs TensorFlow" in run.stderr, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and not (tmp_path / "out").exists()


def test_pretrain_and_distill_run_without_tensorflow(models, tmp_path):
    import biozoo

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the gene brca1 causes breast cancer\nprotein kinase inhibitors\n\n"
                      "mutations of the tumour suppressor\nin familial adenomatous polyposis\n", encoding="utf-8")
    common = ["--corpus", str(corpus), "--steps", "2", "--batch-size", "2", "--max-seq-length", "32"]
    last = jax_child(tmp_path, [
        ["pretrain", "mlm", "--preset", models["small"], "--output", str(tmp_path / "mlm"), *common],
        ["distill", "--teacher", models["large"], "--student-config", '{"num_layers": 1}', "--method", "compact",
         "--output", str(tmp_path / "student"), *common]])
    metrics = json.loads((tmp_path / "mlm" / "metrics.json").read_text())
    assert metrics["backend"] == "jax" and len(metrics["losses"]) == 2 and json.loads(last[0])["losses"] == metrics["losses"]
    distilled = json.loads((tmp_path / "student" / "metrics.json").read_text())
    assert distilled["steps"] == 2 and distilled["layer_map"] == [2]
    assert biozoo.MaskedLM.from_preset(str(tmp_path / "student")).backbone.num_layers == 1


@pytest.mark.parametrize("mode", ["models", "cascade"])
def test_annotate_under_jax_equals_tensorflow(mode, models, documents, tmp_path):
    chosen = ["--model", models["small"], "--model", models["large"]] if mode == "models" else \
        ["--cascade", f"{models['small']},{models['large']}", "--escalate-below", "0.6"]
    runs = {fmt: [*documents, *chosen, "--no-progress", "--drop-existing", "--output-format", fmt]
            for fmt in ("pubtator", "bioc-xml")}
    runs["jsonl"] = [*documents, *chosen, "--no-progress", "--output-format", "jsonl"]
    suffix = {"jsonl": "jsonl", "pubtator": "PubTator", "bioc-xml": "xml"}
    for fmt, args in runs.items():
        assert main(["annotate", *args, "--output", str(tmp_path / f"tf.{suffix[fmt]}")]) == 0
    jax_child(tmp_path, [["annotate", *args, "--output", str(tmp_path / f"jax.{suffix[fmt]}")]
                         for fmt, args in runs.items()])
    tf_docs = [json.loads(line) for line in (tmp_path / "tf.jsonl").read_text().splitlines()]
    jax_docs = [json.loads(line) for line in (tmp_path / "jax.jsonl").read_text().splitlines()]
    assert [d["id"] for d in jax_docs] == [d["id"] for d in tf_docs]
    entities = 0
    for a, b in zip(tf_docs, jax_docs):
        key = lambda p: (p["start"], p["end"], p["type"], p.get("model"))  # noqa: E731
        assert [key(p) for p in b["predictions"]] == [key(p) for p in a["predictions"]], a["id"]
        scores = np.array([[p["score"] for p in a["predictions"]], [p["score"] for p in b["predictions"]]])
        assert np.abs(scores[0] - scores[1]).max(initial=0) <= 1e-5, a["id"]
        entities += len(a["predictions"])
    assert entities > 20  # the check sees entities
    assert (tmp_path / "jax.PubTator").read_bytes() == (tmp_path / "tf.PubTator").read_bytes()  # no scores there
    assert (tmp_path / "jax.xml").stat().st_size > 0


def test_evaluate_and_tokenizer_under_jax_equal_tensorflow(models, ncbi_disease, tmp_path, capsys):
    data = tmp_path / "NCBI-disease"
    data.mkdir()
    blocks = (ncbi_disease / "test.tsv").read_text(encoding="utf-8").split("\n\n")[:150]
    (data / "test.tsv").write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    argv = ["evaluate", "ner", "--model", models["large"], "--data", str(data)]
    assert main(argv) == 0
    here = json.loads(capsys.readouterr().out.splitlines()[-1])
    there = json.loads(jax_child(tmp_path, [argv])[0])
    assert there["counts"] == here["counts"] and there["counts"]["pred"] > 0
    assert abs(there["f1"] - here["f1"]) < 1e-9

    texts = [" ".join(line.split("\t")[0] for line in block.splitlines()) for block in blocks[:50]]
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    command, env = H.without_tensorflow(tmp_path, {"KERAS_BACKEND": "jax", "BIOZOO_CACHE": str(tmp_path / "c")})
    code = ("import json, sys\nimport biozoo\ntok = biozoo.Tokenizer.from_preset(sys.argv[1])\n"
            "texts = json.load(open(sys.argv[2]))\nprint(json.dumps([tok.ids(texts), tok.token_spans(texts)]))\n"
            "assert 'tensorflow' not in sys.modules")
    run = subprocess.run([*command, "-c", code, models["large"], str(tmp_path / "texts.json")], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    import tensorflow as tf

    import biozoo
    from biozoo.tokenizers import tf_text_engine

    ids, spans = json.loads(run.stdout.splitlines()[-1])
    tokenizer = biozoo.Tokenizer.from_preset(models["large"])
    assert ids == tf_text_engine.ids_function(tokenizer)(tf.constant(texts)).to_list()
    assert spans == [[list(t) for t in row] for row in tokenizer.token_spans(texts)]
