"""The Colab notebooks (colab/*.ipynb): up to date with tools/make_notebooks.py, and each runs
headless on the CPU (nbclient) with a tiny preset, small data subsets and a few steps.

The notebooks read their settings from BIOZOO_NB_* environment variables, which the kernel
inherits from this process; the kernel runs this interpreter (a kernelspec written per test).
"""

import hashlib
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from biozoo.testing import bioasq_dev

REPO = Path(__file__).resolve().parents[1]
COLAB = REPO / "colab"
NOTEBOOKS = ("01_ner_chemprot_tpu.ipynb", "02_squad2_bioasq_tpu.ipynb", "03_distill_compact_student.ipynb")


def test_notebooks_match_generator():
    result = subprocess.run([sys.executable, str(REPO / "tools" / "make_notebooks.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_colab_ready(name):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(str(COLAB / name), as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "outputs must be cleared"
    assert "parameters" in code[0].metadata.get("tags", [])
    assert 'os.environ.get("BIOZOO_NB_INSTALL", "1") == "1"' in code[0].source
    assert f"colab.research.google.com/github/biozoo/biozoo/blob/main/colab/{name}" in nb.cells[0].source
    assert name in (COLAB / "README.md").read_text(encoding="utf-8")
    text = "\n".join(c.source for c in code)
    assert "resolve_strategy" in text and "--strategy" in text  # detects the TPU, falls back
    assert "biozoo(\"finetune\"" in text or "biozoo(\"distill\"" in text  # drives the CLI


def _cell(name, index):
    return "".join(json.loads((COLAB / name).read_text(encoding="utf-8"))["cells"][index]["source"])


def _setup_jax_range():
    """setup.py's jax extra's version range, read here on its own (the generator writes it into the notebooks)."""
    return re.search(r'^JAX = "jax([^"]+)"', (REPO / "setup.py").read_text(encoding="utf-8"), re.M)[1]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_metadata_is_the_documented_runtime(name):
    """Colab opens the notebooks on one TPU v5e chip ("V5E1"), the runtime colab/README.md describes (not
    "V28", the 8-core TPU v2)."""
    metadata = json.loads((COLAB / name).read_text(encoding="utf-8"))["metadata"]
    assert metadata["accelerator"] == "TPU" and metadata["colab"]["gpuType"] == "V5E1"
    readme = " ".join((COLAB / "README.md").read_text(encoding="utf-8").split())
    assert 'TPU runtime of one v5e chip (metadata `"gpuType": "V5E1"`)' in readme
    assert "Colab TPU runtime (one v5e chip" in " ".join((COLAB.parent / "README.md").read_text(encoding="utf-8").split())


DEFAULT_SPEC = "biozoo[colab] @ git+https://github.com/biozoo/biozoo.git"


def _install(monkeypatch, name, backend, tpu, jax="0.10.2", spec=DEFAULT_SPEC, tpu_build_fails=False):
    """Run notebook NAME's install cell (cell 3) with pip, the device files and jax's version stubbed; the
    `pip install` argument lists it ran."""
    import glob
    import importlib.metadata

    source = _cell(name, 3)
    assert "pip" in source and "INSTALL" in source  # the install cell
    installs = []

    def run(args, check=False, **kwargs):
        args = [str(a) for a in args]
        failed = tpu_build_fails and any(a.startswith("tensorflow-tpu") for a in args)
        if args[1:4] == ["-m", "pip", "install"]:
            installs.append([a for a in args[4:] if a != "-q"])
        if failed and check:
            raise subprocess.CalledProcessError(1, args)
        return subprocess.CompletedProcess(args, 1 if failed else 0)

    real_version = importlib.metadata.version

    def version(distribution):
        if distribution == "jax":
            if jax is None:
                raise importlib.metadata.PackageNotFoundError(distribution)
            return jax
        return real_version(distribution)

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(glob, "glob", lambda pattern: [pattern.replace("*", "0")] if tpu and "accel" in pattern else [])
    monkeypatch.setattr(importlib.metadata, "version", version)
    exec(source, {"os": os, "INSTALL": True, "BACKEND": backend, "PIP_SPEC": spec})
    return installs


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_install_cell_installs_jaxs_tpu_build_on_a_tpu(monkeypatch, name):
    jax_range = _setup_jax_range()
    installs = _install(monkeypatch, name, "jax", tpu=True)
    assert ["jax[tpu]" + jax_range] in installs
    assert not any(a.startswith("tensorflow") for args in installs for a in args)
    assert ["--no-deps", "keras-hub>=0.32,<0.33", "biozoo @ git+https://github.com/biozoo/biozoo.git"] in installs
    assert not any(a.startswith("jax") for args in _install(monkeypatch, name, "jax", tpu=False) for a in args)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_install_cell_stops_on_a_jax_outside_setup_pys_range(monkeypatch, name):
    jax_range = _setup_jax_range()
    for jax, has in (("0.4.30", "jax 0.4.30"), (None, "no jax")):
        with pytest.raises(RuntimeError, match=re.escape(f"biozoo needs jax{jax_range}") + ".*" + re.escape(has)):
            _install(monkeypatch, name, "jax", tpu=False, jax=jax)
    _install(monkeypatch, name, "torch", tpu=False, jax=None)  # no JAX check off JAX


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_install_cell_puts_tensorflows_tpu_build_alone_on_a_tpu(monkeypatch, name):
    """On a TPU VM the TensorFlow path installs tensorflow-tpu and not PyPI's tensorflow (both own the
    tensorflow/ package): nothing installed with its dependencies declares tensorflow."""
    installs = _install(monkeypatch, name, "tensorflow", tpu=True)
    assert installs[0][0] == "-r" and installs[0][1].endswith("/main/requirements/without-tensorflow.txt")
    assert any(args[0] == "tensorflow-tpu>=2.20,<2.21" for args in installs)
    with_deps = [args for args in installs if "--no-deps" not in args]
    assert not any(a.startswith(("tensorflow>", "tensorflow=", "tensorflow-text", "keras-hub", "biozoo"))
                   for args in with_deps for a in args), installs
    assert ["--no-deps", "tensorflow-text==2.20.1", "keras-hub>=0.32,<0.33",
            "biozoo @ git+https://github.com/biozoo/biozoo.git"] in installs
    fallback = _install(monkeypatch, name, "tensorflow", tpu=True, tpu_build_fails=True)
    assert ["tensorflow>=2.20,<2.21"] in fallback  # no TPU build: PyPI's TensorFlow, the CPU/GPU fallback
    assert _install(monkeypatch, name, "tensorflow", tpu=False) == [[DEFAULT_SPEC]]


@pytest.mark.parametrize("spec, requirements, no_deps", [
    ("biozoo[colab] @ git+https://github.com/biozoo/biozoo.git@v0.1.0",
     "https://raw.githubusercontent.com/biozoo/biozoo/v0.1.0/requirements/without-tensorflow.txt",
     "biozoo @ git+https://github.com/biozoo/biozoo.git@v0.1.0"),
    ("biozoo[colab,jax] @ git+https://github.com/someone/biozoo@abc123#egg=biozoo",
     "https://raw.githubusercontent.com/someone/biozoo/abc123/requirements/without-tensorflow.txt",
     "biozoo @ git+https://github.com/someone/biozoo@abc123#egg=biozoo"),
])
def test_install_cell_reads_the_requirements_of_the_spec_it_installs(monkeypatch, spec, requirements, no_deps):
    installs = _install(monkeypatch, NOTEBOOKS[0], "jax", tpu=False, spec=spec)
    assert installs == [["-r", requirements], ["--no-deps", "keras-hub>=0.32,<0.33", no_deps]]


def _run_data_cell(monkeypatch, tmp_path, name, index, **namespace):
    """Run notebook NAME's data cell with `biozoo data download` stubbed (it writes the files
    data_sources.json names, small stand-ins) and any other download refused; the biozoo commands run."""
    import tarfile
    import urllib.request

    sources = json.loads((REPO / "biozoo" / "benchmark" / "data_sources.json").read_text(encoding="utf-8"))["datasets"]
    qa = {"data": [{"paragraphs": [{"context": "c", "qas": [{"id": f"{'a' * 24}:{i}", "question": "q",
                                                             "answers": []}]} for i in range(2)]}]}
    commands = []

    def biozoo(*args):
        commands.append([str(a) for a in args])
        assert args[:2] == ("data", "download") and args[3] == "--output"
        for file in sources[args[2]]["files"]:
            path = Path(args[4]) / args[2] / file["name"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(qa) if path.suffix == ".json" else
                            ("sentence\tlabel\nA b.\tFalse\n" if args[2].startswith("re/") else "A\tO\nb\tO\n\n"))
        return [{"complete": True}]

    tmp_path.mkdir(parents=True, exist_ok=True)
    archive = tmp_path / "biobert.tar.gz"
    train = {"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "a" * 24 + "_1", "question": "q", "answers": []},
                                                               {"id": "b" * 24 + "_1", "question": "q", "answers": []}]}]}]}
    (tmp_path / "BioASQ-train-factoid-7b.json").write_text(json.dumps(train), encoding="utf-8")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "BioASQ-train-factoid-7b.json", arcname="datasets/QA/BioASQ/BioASQ-train-factoid-7b.json")

    def urlretrieve(url, path):
        assert url.startswith("http://nlp.dmis.korea.edu/"), f"{url}: not through `biozoo data download`"
        Path(path).write_bytes(archive.read_bytes())

    monkeypatch.setattr(urllib.request, "urlretrieve", urlretrieve)
    data = tmp_path / "data"
    exec(_cell(name, index), {"os": os, "json": json, "biozoo": biozoo, "DATA": str(data), **namespace})
    return commands, data


def test_data_cells_download_through_biozoo_data_download(monkeypatch, tmp_path):
    """The data cells fetch what data_sources.json records (pinned, sha256-checked) with `biozoo data download`:
    no data set from a mutable branch or another commit; only BioBERT's BioASQ training questions directly."""
    datasets = ["NCBI-disease", "BC5CDR-chem"]
    commands, data = _run_data_cell(monkeypatch, tmp_path / "01", NOTEBOOKS[0], 8, NER_DATASETS=datasets)
    assert [c[2] for c in commands] == ["ner/NCBI-disease", "ner/BC5CDR-chem", "re/chemprot"]
    assert sorted(p.name for p in (data / "ner" / "BC5CDR-chem").iterdir()) == ["devel.tsv", "test.tsv", "train.tsv"]
    assert sorted(p.name for p in (data / "re" / "chemprot").iterdir()) == ["dev.tsv", "test.tsv", "train.tsv"]
    assert _run_data_cell(monkeypatch, tmp_path / "01", NOTEBOOKS[0], 8, NER_DATASETS=datasets)[0] == []  # present

    commands, data = _run_data_cell(monkeypatch, tmp_path / "02", NOTEBOOKS[1], 8, PRESET="x", SQUAD2="1")
    assert commands == [["data", "download", "qa/squad2", "--output", commands[0][4], "--trust-unverified"],
                        ["data", "download", "qa/bioasq", "--output", commands[1][4]]]
    assert sorted(p.name for p in (data / "qa" / "squad2").iterdir()) == ["dev.json", "train.json"]
    assert sorted(p.name for p in (data / "qa" / "bioasq").iterdir()) == ["dev.json", "train.json"]
    train = json.loads((data / "qa" / "bioasq" / "train.json").read_text(encoding="utf-8"))
    assert [qa["id"] for qa in train["data"][0]["paragraphs"][0]["qas"]] == ["b" * 24 + "_1"]  # held out: dropped

    commands, data = _run_data_cell(monkeypatch, tmp_path / "03", NOTEBOOKS[2], 8, CORPUS="",
                                    OUTPUT=str(tmp_path / "03" / "runs"))
    assert [c[2] for c in commands] == ["ner/NCBI-disease", "re/chemprot"]
    for name in NOTEBOOKS:
        assert "raw.githubusercontent.com" not in _cell(name, 8)


# ---- tiny data -----------------------------------------------------------------------------


def _sentences(path):
    blocks = [b for b in Path(path).read_text(encoding="utf-8").split("\n\n") if b.strip()]
    return [b.strip("\n") for b in blocks if not b.startswith("-DOCSTART-")]


def _write_ner(source, target, sizes):
    target.mkdir(parents=True)
    for split, count in sizes.items():
        sentences = _sentences(source / f"{split}.tsv")
        # sentences with entities first, so the tiny splits are not all "O"
        sentences.sort(key=lambda s: "\tB-" not in s)
        (target / f"{split}.tsv").write_text("\n\n".join(sentences[:count]) + "\n", encoding="utf-8")


def _write_chemprot(source, target, per_label):
    target.mkdir(parents=True)
    rows = {}
    for split in ("train", "dev", "test"):
        lines = (source / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        rows[split] = (lines[0], lines[1:])
    labels = ("CPR:3", "CPR:4", "False")  # only labels every split has, so evaluation sees no new label
    for split, count in (("train", per_label), ("dev", per_label // 2), ("test", per_label // 2)):
        header, lines = rows[split]
        chosen = [line for label in labels for line in [x for x in lines if x.rsplit("\t", 1)[-1] == label][:count]]
        (target / f"{split}.tsv").write_text("\n".join([header] + chosen) + "\n", encoding="utf-8")


def _bioasq_groups(bioasq_dev):
    data = json.loads(Path(bioasq_dev).read_text(encoding="utf-8"))
    groups = {}
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if len(paragraph["context"]) < 400:  # short snippets keep the windows few
                    groups.setdefault(qa["id"][:24], []).append({"context": paragraph["context"], "qas": [qa]})
    return [g for _, g in sorted(groups.items()) if len(g) >= 2]


def SQUAD_ID(text):
    return hashlib.sha1(text.encode()).hexdigest()[:24]


def _squad(paragraphs):
    return {"version": "v2.0", "data": [{"title": "biozoo-test", "paragraphs": paragraphs}]}


def _write_qa(bioasq_dev, root):
    groups = _bioasq_groups(bioasq_dev)
    random.Random(0).shuffle(groups)
    bioasq = root / "qa" / "bioasq"
    bioasq.mkdir(parents=True)
    (bioasq / "train.json").write_text(json.dumps(_squad([p for g in groups[:8] for p in g[:4]])), encoding="utf-8")
    (bioasq / "dev.json").write_text(json.dumps(_squad([p for g in groups[8:12] for p in g[:3]])), encoding="utf-8")
    # SQuAD2.0-format stand-in: answerable snippets plus unanswerable ones (a question asked
    # of another question's snippet).
    # Ids as SQuAD's own: 24 hex digits.
    squad = root / "qa" / "squad2"
    squad.mkdir(parents=True)
    for split, chosen in (("train", groups[12:20]), ("dev", groups[20:24])):
        paragraphs = []
        for i, group in enumerate(chosen):
            paragraph = json.loads(json.dumps(group[0]))
            paragraph["qas"][0].update(id=SQUAD_ID(f"{split}-{i}"), is_impossible=False)
            paragraphs.append(paragraph)
            other = chosen[(i + 1) % len(chosen)][0]["qas"][0]
            paragraphs.append({"context": group[0]["context"], "qas": [{
                "id": SQUAD_ID(f"{split}-noans-{i}"), "question": other["question"], "answers": [],
                "is_impossible": True}]})
        (squad / f"{split}.json").write_text(json.dumps(_squad(paragraphs)), encoding="utf-8")


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory, shared_data, ncbi_disease):
    root = tmp_path_factory.mktemp("nb-data")
    _write_ner(ncbi_disease, root / "ner" / "NCBI-disease", {"train": 48, "devel": 16, "test": 16})
    _write_chemprot(shared_data / "re" / "chemprot", root / "re" / "chemprot", 16)
    _write_qa(bioasq_dev(shared_data), root)
    return root


# ---- running a notebook ----------------------------------------------------------------------


def _kernelspec(tmp_path, monkeypatch):
    """A kernelspec that starts this interpreter's ipykernel; JUPYTER_PATH points at it."""
    spec = tmp_path / "jupyter" / "kernels" / "biozoo-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "biozoo test", "language": "python"}), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return "biozoo-test"


def run_notebook(name, tmp_path, monkeypatch, env):
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    kernel = _kernelspec(tmp_path, monkeypatch)
    common = {"BIOZOO_NB_INSTALL": "0", "BIOZOO_NB_STRATEGY": "auto", "BIOZOO_NB_OUTPUT": str(tmp_path / "runs"),
              "BIOZOO_NB_RECIPE": "", "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
    for key, value in {**common, **env}.items():
        monkeypatch.setenv(key, value)
    # The kernel's child processes run `python -m biozoo`: make this checkout importable.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    nb = nbformat.read(str(COLAB / name), as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name=kernel,
                                     resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as error:
        ansi = re.compile(r"\x1b\[[0-9;]*m")
        pytest.fail(f"{name} failed:\n{ansi.sub('', str(error))[-3000:]}\n--- output ---\n{_outputs(nb)[-5000:]}")
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    text = "".join(o.get("text", "") for o in last.outputs if o.output_type == "stream")
    return json.loads(text), nb


def _outputs(nb):
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


NOTEBOOK_01 = {"BIOZOO_NB_NER_DATASETS": "NCBI-disease", "BIOZOO_NB_EPOCHS": "1", "BIOZOO_NB_BATCH_SIZE": "16",
               "BIOZOO_NB_LEARNING_RATE": "1e-3", "BIOZOO_NB_MAX_SEQ_LENGTH": "64"}


@pytest.mark.slow
def test_notebook_01_ner_chemprot_on_jax_over_two_devices(tmp_path, monkeypatch, tiny_data, tiny_bert_real_vocab):
    """The notebook as Colab's TPU runtime runs it (JAX, data parallel over the local devices), on
    the CPU split into two JAX devices."""
    summary, nb = run_notebook("01_ner_chemprot_tpu.ipynb", tmp_path, monkeypatch, {
        **NOTEBOOK_01, "BIOZOO_NB_PRESET": str(tiny_bert_real_vocab), "BIOZOO_NB_DATA": str(tiny_data),
        "BIOZOO_NB_BACKEND": "jax", "BIOZOO_NB_STRATEGY": "mirrored",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
    assert summary["strategy"] == "mirrored"
    for run in ("ner-NCBI-disease", "chemprot"):
        metrics = json.loads((tmp_path / "runs" / run / "metrics.json").read_text())
        assert metrics["backend"] == "jax" and metrics["replicas"] == 2, metrics
    assert 0 <= summary["ner"]["NCBI-disease"]["test_f1"] <= 100
    assert summary["ner_evaluate_test_f1"] == pytest.approx(summary["ner"]["NCBI-disease"]["test_f1"], abs=1e-6)
    assert "Keras backend jax; devices: cpu:0, cpu:1" in _outputs(nb)


@pytest.mark.slow
def test_notebook_01_ner_chemprot(tmp_path, monkeypatch, tiny_data, tiny_bert_real_vocab):
    """The TensorFlow path (a TPU VM that still runs TensorFlow 2.18), on the CPU."""
    summary, nb = run_notebook("01_ner_chemprot_tpu.ipynb", tmp_path, monkeypatch, {
        **NOTEBOOK_01, "BIOZOO_NB_PRESET": str(tiny_bert_real_vocab), "BIOZOO_NB_DATA": str(tiny_data),
        "BIOZOO_NB_BACKEND": "tensorflow"})
    assert summary["strategy"] == "cpu"
    for key in ("dev_f1", "test_f1"):
        assert 0 <= summary["ner"]["NCBI-disease"][key] <= 100
        assert 0 <= summary["chemprot"][key.replace("_f1", "_micro_f1")] <= 100
    assert summary["ner_evaluate_test_f1"] == pytest.approx(summary["ner"]["NCBI-disease"]["test_f1"], abs=1e-6)
    out = _outputs(nb)
    assert "no TPU or GPU; training on the CPU" in out
    assert "$ biozoo annotate" in out and "Germline mutations in BRCA1" in out
    assert (tmp_path / "runs" / "ner-NCBI-disease" / "metrics.json").is_file()


@pytest.mark.slow
def test_notebook_02_squad2_bioasq(tmp_path, monkeypatch, tiny_data, tiny_bert_real_vocab):
    summary, nb = run_notebook("02_squad2_bioasq_tpu.ipynb", tmp_path, monkeypatch, {
        "BIOZOO_NB_PRESET": str(tiny_bert_real_vocab), "BIOZOO_NB_SQUAD2": "1", "BIOZOO_NB_DATA": str(tiny_data),
        "BIOZOO_NB_EPOCHS": "1", "BIOZOO_NB_BATCH_SIZE": "16", "BIOZOO_NB_LEARNING_RATE": "1e-3",
        "BIOZOO_NB_MAX_SEQ_LENGTH": "64"})
    factoid = summary["bioasq_factoid"]
    assert factoid["questions"] == 4
    for key in ("strict_accuracy", "lenient_accuracy", "mrr"):
        assert 0 <= factoid[key] <= 100
    assert factoid["strict_accuracy"] <= factoid["lenient_accuracy"]
    assert set(summary["squad2_dev"]) == {"exact", "f1"}
    metrics = json.loads((tmp_path / "runs" / "bioasq" / "metrics.json").read_text())
    assert metrics["preset"] == str(tmp_path / "runs" / "squad2")  # BioASQ continued from the SQuAD2.0 model
    # the summary's numbers are the runs' metrics.json (SQuAD2.0's as the finetune command printed them)
    assert factoid == {k: metrics["dev"]["bioasq_factoid"][k]
                       for k in ("strict_accuracy", "lenient_accuracy", "mrr", "questions")}
    squad2 = json.loads((tmp_path / "runs" / "squad2" / "metrics.json").read_text())
    assert summary["squad2_dev"] == {k: squad2["dev"]["squad_v2"][k] for k in ("exact", "f1")}
    assert "BioASQ starts from" in _outputs(nb)


@pytest.fixture(scope="module")
def tiny_mlm_teacher(tmp_path_factory, minilm_dir):
    """The tiny random BERT with an MLM head (a distillation teacher) and MiniLM's real vocabulary."""
    from biozoo import testing as H

    model = H.make_model("bert", "BertForMaskedLM", vocab_size=30522, initializer_range=0.02)
    return H.save_hf_directory(model, tmp_path_factory.mktemp("teacher") / "bert", vocab_file=minilm_dir / "vocab.txt")


@pytest.mark.slow
def test_notebook_03_distill(tmp_path, monkeypatch, tiny_data, tiny_mlm_teacher):
    summary, nb = run_notebook("03_distill_compact_student.ipynb", tmp_path, monkeypatch, {
        "BIOZOO_NB_TEACHER": str(tiny_mlm_teacher), "BIOZOO_NB_STUDENT_LAYERS": "1",
        "BIOZOO_NB_DATA": str(tiny_data), "BIOZOO_NB_STEPS": "4", "BIOZOO_NB_DISTILL_BATCH_SIZE": "8",
        "BIOZOO_NB_EPOCHS": "1", "BIOZOO_NB_BATCH_SIZE": "16", "BIOZOO_NB_LEARNING_RATE": "1e-3",
        "BIOZOO_NB_MAX_SEQ_LENGTH": "64"})
    assert summary["student_layers"] == 1
    for key in ("dev_f1", "test_f1"):
        assert 0 <= summary["student_ner"][key] <= 100
    assert summary["parameters"]["student"] < summary["parameters"]["teacher"]
    assert set(summary["distill_loss"]) >= {"first", "last"}
    distilled = json.loads((tmp_path / "runs" / "student" / "metrics.json").read_text())
    assert distilled["method"] == "distilbert" and distilled["student_config"] == {"num_layers": 1}
    assert distilled["steps"] == 4
    # the summary's numbers are the runs' metrics.json (the student's NER as the finetune command printed it)
    assert summary["parameters"] == distilled["parameters"]
    assert summary["distill_loss"] == distilled["loss"]["loss"]
    assert summary["agreement_with_teacher"] == distilled["agreement"]
    student_ner = json.loads((tmp_path / "runs" / "student-ner" / "metrics.json").read_text())
    assert summary["student_ner"] == {"dev_f1": student_ner["dev"]["f1"], "test_f1": student_ner["test"]["f1"]}
    assert "$ biozoo distill" in _outputs(nb)
