#!/usr/bin/env python
"""Write the Colab notebooks under colab/ (outputs cleared, deterministic cell ids).

    .venv/bin/python tools/make_notebooks.py           # (re)write colab/*.ipynb
    .venv/bin/python tools/make_notebooks.py --check   # exit 1 if a notebook is out of date

The notebooks drive the `biozoo` command line (run as `python -m biozoo` in a child process,
so a TPU held by one command is released before the next) and read every setting from a
first "parameters" cell of `BIOZOO_NB_*` environment variables with Colab defaults. CI
(tests/test_notebooks.py) runs them headless on the CPU with a tiny preset and small data
by setting those variables; nothing in the notebooks is specific to the test.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import re
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COLAB_DIR = REPO / "colab"
GITHUB = "biozoo/biozoo"
COLAB_URL = "https://colab.research.google.com/github/{repo}/blob/main/colab/{name}"
BADGE = "https://colab.research.google.com/assets/colab-badge.svg"


def md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": textwrap.dedent(text).strip("\n")}


def code(text, tags=()):
    metadata = {"tags": list(tags)} if tags else {}
    return {"cell_type": "code", "metadata": metadata, "source": textwrap.dedent(text).strip("\n"),
            "execution_count": None, "outputs": []}


# ---- cells every notebook shares ----------------------------------------------------------


def header(name, title, body):
    url = COLAB_URL.format(repo=GITHUB, name=name)
    runtime = """
        **Runtime.** *Runtime → Change runtime type → TPU* (a GPU or the CPU also work: the
        notebook detects what it has and falls back). Every setting is in the first code cell
        and can also be given as a `BIOZOO_NB_*` environment variable; the continuous-integration
        test runs this notebook on a CPU with a tiny model and a few training steps that way.
    """
    text = "\n\n".join([f"# {title}", f"[![Open In Colab]({BADGE})]({url})",
                         textwrap.dedent(body).strip(), textwrap.dedent(runtime).strip()])
    return {"cell_type": "markdown", "metadata": {}, "source": text}


PARAMETERS_COMMON = '''
    INSTALL = os.environ.get("BIOZOO_NB_INSTALL", "1") == "1"  # pip-install biozoo (CI: already installed)
    PIP_SPEC = os.environ.get("BIOZOO_NB_PIP_SPEC", "biozoo[colab] @ git+https://github.com/biozoo/biozoo.git")
    STRATEGY = os.environ.get("BIOZOO_NB_STRATEGY", "auto")  # auto: TPU, else GPU(s), else CPU
    TPU = os.environ.get("BIOZOO_NB_TPU", "")  # TensorFlow only: TPU name or grpc://address; "" = detect
    os.environ["KERAS_BACKEND"] = BACKEND  # every `biozoo` command below runs on it
    STEPS_PER_EXECUTION = os.environ.get("BIOZOO_NB_STEPS_PER_EXECUTION", "")  # "" = 50 on a TPU, else 1
    XLA = os.environ.get("BIOZOO_NB_XLA", "auto")  # auto: XLA on TPU/GPU, not on the CPU
'''


def parameters(specific):
    """The first cell: the notebook's settings, then the common ones. The default Keras backend is
    JAX, what Colab's TPU and GPU runtimes run."""
    chosen = ('BACKEND = os.environ.get("BIOZOO_NB_BACKEND", "jax")  # jax: Colab\'s TPU and GPU runtimes; '
              '"tensorflow" for a TPU VM (installs tensorflow-tpu 2.20)\n')
    return code("import os\n\n" + textwrap.dedent(specific).strip("\n") + "\n" + chosen
                + textwrap.dedent(PARAMETERS_COMMON).strip("\n"), tags=["parameters"])


# Colab's metadata key for the runtime the notebooks are written for: one TPU v5e chip ("v5e-1"), what
# colab/README.md and the README describe (one JAX device: one replica). "V28" would be the 8-core TPU v2.
COLAB_TPU = "V5E1"


def _literal(node, names):
    """The value of a setup.py expression made of literals, lists, dicts, *spreads and names of earlier
    literal assignments (setup.py is read, not run: it needs setuptools and the README)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.List):
        values = []
        for element in node.elts:
            values += _literal(element.value, names) if isinstance(element, ast.Starred) else [_literal(element, names)]
        return values
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_literal(k, names): _literal(v, names) for k, v in zip(node.keys, node.values)}
    raise ValueError(ast.dump(node))


def setup_py():
    """setup.py's module-level literal assignments (INSTALL_REQUIRES, EXTRAS, JAX, ...)."""
    names = {}
    for node in ast.parse((REPO / "setup.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                names[node.targets[0].id] = _literal(node.value, names)
            except (ValueError, KeyError, TypeError):
                pass
    return names


def requirement(name, requirements):
    """The requirement string for distribution `name` in `requirements` (setup.py's spelling)."""
    found = [r for r in requirements if re.match(r"[A-Za-z0-9._-]+", r)[0].lower().replace("_", "-") == name]
    if len(found) != 1:
        raise KeyError(f"setup.py: {len(found)} requirements for {name}")
    return found[0]


def specifier(text):
    """The version specifier of a requirement string ("jax>=0.10,<0.12" -> ">=0.10,<0.12")."""
    return re.sub(r"^[A-Za-z0-9._-]+(\[[^\]]*\])?", "", text.split(";")[0]).strip()


def install_cell():
    """The install cell, with setup.py's versions of what it installs written in."""
    setup = setup_py()
    required = setup["INSTALL_REQUIRES"]
    versions = {
        "@JAX_RANGE@": specifier(requirement("jax", setup["EXTRAS"]["jax"])),
        "@KERAS_HUB@": requirement("keras-hub", required),
        "@TENSORFLOW@": requirement("tensorflow", required),
        "@TENSORFLOW_TEXT@": requirement("tensorflow-text", required),
        "@LITERT@": requirement("ai-edge-litert", required),
    }
    versions["@TENSORFLOW_TPU@"] = "tensorflow-tpu" + specifier(versions["@TENSORFLOW@"])
    text = INSTALL_TEMPLATE
    for key, value in versions.items():
        text = text.replace(key, value)
    assert not re.search(r"@[A-Z_]+@", text), "a placeholder without a value"
    return code(text)


INSTALL_TEMPLATE = """
    import glob
    import re
    import subprocess
    import sys

    # setup.py's versions of what this cell installs (written in by tools/make_notebooks.py)
    JAX_RANGE = "@JAX_RANGE@"  # setup.py's "jax" extra
    KERAS_HUB = "@KERAS_HUB@"
    TENSORFLOW = "@TENSORFLOW@"
    TENSORFLOW_TPU = "@TENSORFLOW_TPU@"  # TensorFlow's TPU build, at biozoo's TensorFlow version
    TENSORFLOW_TEXT = "@TENSORFLOW_TEXT@"
    LITERT = "@LITERT@"
    ON_TPU = bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"))  # a TPU VM runtime

    # biozoo without its extras (with --no-deps they add nothing), and requirements/without-tensorflow.txt
    # of the same source: the @ref of a GitHub git URL (main without one), or a local checkout's file.
    BIOZOO = re.sub(r"\\[[^\\]]*\\](?=\\s*(@|$))", "", PIP_SPEC.strip(), count=1)
    GIT = re.search(r"git\\+https://github\\.com/([\\w.-]+/[\\w.-]+?)(?:\\.git)?(?:@([^#\\s]+))?(?=[#\\s]|$)", PIP_SPEC)
    REQUIREMENTS = os.path.join(BIOZOO, "requirements", "without-tensorflow.txt")
    if GIT or not os.path.isfile(REQUIREMENTS):
        REPOSITORY, REF = (GIT[1], GIT[2] or "main") if GIT else ("biozoo/biozoo", "main")
        REQUIREMENTS = f"https://raw.githubusercontent.com/{REPOSITORY}/{REF}/requirements/without-tensorflow.txt"


    def pip(*args, check=True):
        return subprocess.run([sys.executable, "-m", "pip", "install", "-q", *args], check=check).returncode


    if INSTALL and BACKEND != "tensorflow":
        # Colab's runtimes ship JAX (with its TPU or CUDA build) and torch: biozoo runs there without
        # TensorFlow (README: "A machine without TensorFlow"). KerasHub and biozoo go in without their
        # dependencies, which would pull TensorFlow.
        pip("-r", REQUIREMENTS)
        if ON_TPU and BACKEND == "jax":  # JAX's TPU build (with libtpu) at the versions biozoo supports
            pip("jax[tpu]" + JAX_RANGE)
        pip("--no-deps", KERAS_HUB, BIOZOO)
    elif INSTALL and ON_TPU:
        # A TPU VM runtime: TensorFlow reaches the TPU through its TPU build (libtpu), which provides the
        # same `tensorflow` package as PyPI's tensorflow, so that one must not be installed beside it:
        # biozoo's dependencies without TensorFlow, the TPU build, then what declares PyPI's tensorflow
        # (tensorflow-text, KerasHub, biozoo) without its dependencies.
        pip("-r", REQUIREMENTS)
        if pip(TENSORFLOW_TPU, "-f", "https://storage.googleapis.com/libtpu-tf-releases/index.html", check=False):
            print("could not install TensorFlow's TPU build: installing TensorFlow instead (the TPU will not be "
                  "found: GPU/CPU fallback)")
            pip(TENSORFLOW)
        pip(LITERT)
        pip("--no-deps", TENSORFLOW_TEXT, KERAS_HUB, BIOZOO)
    elif INSTALL:
        pip(PIP_SPEC)
    if BACKEND == "jax":  # stop here, not in the strategy probe, on a JAX biozoo does not support
        from importlib.metadata import PackageNotFoundError, version
        from packaging.specifiers import SpecifierSet
        try:
            JAX_VERSION = version("jax")
        except PackageNotFoundError:
            JAX_VERSION = None
        if JAX_VERSION is None or not SpecifierSet(JAX_RANGE).contains(JAX_VERSION, prereleases=True):
            raise RuntimeError(
                f"biozoo needs jax{JAX_RANGE} (setup.py's jax extra); this runtime has "
                + (f"jax {JAX_VERSION}" if JAX_VERSION else "no jax")
                + f'. Install it (pip install "jax[tpu]{JAX_RANGE}" on a TPU, "jax[cuda13]{JAX_RANGE}" on a '
                f'GPU, "jax{JAX_RANGE}" on the CPU), restart the runtime and run again; or set '
                'BIOZOO_NB_BACKEND to "torch" or "tensorflow"')
        print("jax", JAX_VERSION)
    subprocess.run([sys.executable, "-m", "biozoo", "--version"], check=True)
"""

INSTALL = install_cell()

HELPERS = code('''
    import json
    import shlex
    import subprocess
    import sys

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


    def biozoo(*args):
        """Run `biozoo ARGS` (the command line) in a child process, echo its output, and return the
        JSON objects it printed (finetune/evaluate print their metrics JSON last)."""
        args = [str(a) for a in args]
        print("$ biozoo " + " ".join(shlex.quote(a) for a in args), flush=True)
        process = subprocess.Popen([sys.executable, "-m", "biozoo", *args], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, bufsize=1)
        printed = []
        for line in process.stdout:
            print(line, end="", flush=True)
            if line.startswith("{"):
                try:
                    printed.append(json.loads(line))
                except ValueError:
                    pass
        if process.wait():
            raise RuntimeError(f"`biozoo {args[0]}` failed (exit status {process.returncode}); see its output above")
        return printed


    def device_options(speed=True):
        """--strategy / --tpu (every training command), and with `speed` the `biozoo finetune`
        options --xla / --steps-per-execution."""
        options = ["--strategy", STRATEGY] + (["--tpu", TPU] if TPU and BACKEND == "tensorflow" else [])
        if speed:
            options += ["--xla", XLA]
            steps = STEPS_PER_EXECUTION or ("50" if DEVICE["strategy"] == "tpu" else "")
            if steps:
                options += ["--steps-per-execution", steps]
        return options


    def show_json(path, keys=None):
        """Print (some keys of) a JSON file such as OUTPUT/metrics.json."""
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        print(json.dumps({k: data[k] for k in keys if k in data} if keys else data, indent=2))
        return data
''')

DETECT = code('''
    # Which accelerator is there? The probe runs in a child process (biozoo's Python API:
    # biozoo.train.run.resolve_strategy, what `--strategy auto` uses: tf.distribute on TensorFlow,
    # keras.distribution on JAX), so the TPU is free again for the training commands below.
    PROBE = """
    import json, sys
    import keras
    from biozoo.train.run import resolve_strategy
    resolved = resolve_strategy(sys.argv[1], (sys.argv[2] or None) if keras.backend.backend() == "tensorflow" else None)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf
        devices = [d.device_type + ":" + d.name for d in tf.config.list_logical_devices()]
    else:
        devices = keras.distribution.list_devices()
    print(json.dumps({"strategy": resolved.name, "replicas": resolved.replicas, "detail": resolved.detail,
                      "backend": keras.backend.backend(), "devices": devices}))
    """
    probe = subprocess.run([sys.executable, "-c", PROBE, STRATEGY, TPU], capture_output=True, text=True)
    if probe.returncode:
        print(probe.stderr[-3000:])
        raise RuntimeError("could not resolve the distribution strategy")
    DEVICE = json.loads(probe.stdout.strip().splitlines()[-1])
    print(f"Keras backend {DEVICE['backend']}; devices:", ", ".join(DEVICE["devices"]))
    if DEVICE["strategy"] == "tpu":
        print(f"TPU found: {DEVICE['replicas']} cores ({DEVICE['detail']})")
    elif DEVICE["strategy"] == "mirrored" and any("gpu" in d.lower() for d in DEVICE["devices"]):
        print(f"no TPU; training on {DEVICE['replicas']} GPU(s)")
    else:
        print(f"no TPU or GPU; training on the CPU ({DEVICE['strategy']}, {DEVICE['replicas']} replica(s)): "
              "use small EPOCHS / a small preset")
''')


def hyperparameter_options():
    return code('''
        def training_options(max_seq_length=None):
            """--recipe and the hyperparameters that were set (explicit values override the recipe)."""
            options = ["--recipe", RECIPE] if RECIPE else []
            for flag, value in (("--epochs", EPOCHS), ("--batch-size", BATCH_SIZE),
                                ("--learning-rate", LEARNING_RATE), ("--max-seq-length", max_seq_length or MAX_SEQ_LENGTH)):
                if value:
                    options += [flag, value]
            return options + device_options()
    ''')


DATA_DOWNLOAD = """
    import shutil
    import tempfile


    def data_download(folder, *options):
        \"\"\"`biozoo data download FOLDER` into a scratch folder; the data set's folder there. biozoo's data
        sources (biozoo/benchmark/data_sources.json) pin each file to a commit and check it against its
        recorded sha256.\"\"\"
        scratch = tempfile.mkdtemp(prefix="biozoo-data-")
        biozoo("data", "download", folder, "--output", scratch, *options)
        return os.path.join(scratch, folder)


    def put(fetched, folder):
        \"\"\"Move a fetched data set to DATA/FOLDER whole: a failed download leaves no half folder there,
        which a later run would take as downloaded.\"\"\"
        os.makedirs(os.path.dirname(os.path.join(DATA, folder)), exist_ok=True)
        shutil.move(fetched, os.path.join(DATA, folder))
"""


def data_cell(text):
    """A data cell: the download helpers, then `text`."""
    return code(textwrap.dedent(DATA_DOWNLOAD).strip("\n") + "\n\n\n" + textwrap.dedent(text).strip("\n"))


# ---- 01: NER + ChemProt --------------------------------------------------------------------


def notebook_01():
    name = "01_ner_chemprot_tpu.ipynb"
    cells = [
        header(name, "Fine-tune BioM-ELECTRA for NER (NCBI-disease, BC5CDR) and ChemProt on a TPU", """
            This notebook fine-tunes a biomedical encoder from the biozoo registry for named-entity
            recognition (NCBI-disease, BC5CDR-chemical, BC5CDR-disease; entity-level F1) and for
            ChemProt relation extraction (micro-F1 over the five CPR classes), with the
            hyperparameters of the BioM-Transformers paper (`--recipe biom`: Appendix Table 4, e.g.
            BioM-ELECTRA-Large NER 5 epochs, learning rate 7e-5, batch 32). It then evaluates a
            model with `biozoo evaluate` and tags raw text with `biozoo annotate`.

            Everything runs through the `biozoo` command line; `biozoo finetune --help` lists all
            options.
        """),
        parameters('''
            PRESET = os.environ.get("BIOZOO_NB_PRESET", "biom_electra_large_discriminator")  # registry name, hf://..., or a directory
            DATA = os.environ.get("BIOZOO_NB_DATA", "/content/data")  # downloaded below when missing
            OUTPUT = os.environ.get("BIOZOO_NB_OUTPUT", "/content/runs")
            NER_DATASETS = [d for d in os.environ.get("BIOZOO_NB_NER_DATASETS", "NCBI-disease,BC5CDR-chem,BC5CDR-disease").split(",") if d]
            RECIPE = os.environ.get("BIOZOO_NB_RECIPE", "biom")  # "biom": BioM-Transformers Table 4; "" = the values below
            EPOCHS = os.environ.get("BIOZOO_NB_EPOCHS", "")  # "" = the recipe's; a fraction (0.05) trains part of an epoch
            BATCH_SIZE = os.environ.get("BIOZOO_NB_BATCH_SIZE", "")  # "" = the recipe's (global batch over all TPU cores)
            LEARNING_RATE = os.environ.get("BIOZOO_NB_LEARNING_RATE", "")  # "" = the recipe's
            MAX_SEQ_LENGTH = os.environ.get("BIOZOO_NB_MAX_SEQ_LENGTH", "128")  # the paper does not state one
        '''),
        md("## Install biozoo"),
        INSTALL,
        HELPERS,
        md("## Detect the accelerator"),
        DETECT,
        md("""
            ## Data

            NER: the MTL-Bioinformatics-2016 release of NCBI-disease and BC5CDR (`token<TAB>tag`,
            IOB2, CC BY 4.0). ChemProt: the BioCreative VI corpus as preprocessed for ELECTRA
            fine-tuning by SciCrunch/bio_electra (header `sentence<TAB>label`, research use). Each comes
            from `biozoo data download` (biozoo's data sources: every file at a pinned commit, checked
            against its recorded sha256) and is skipped when its folder under `DATA` already exists.
        """),
        data_cell('''
            for folder in [f"ner/{d}" for d in NER_DATASETS] + ["re/chemprot"]:
                if not os.path.exists(f"{DATA}/{folder}"):
                    put(data_download(folder), folder)
                print(folder, sorted(os.listdir(f"{DATA}/{folder}")))
        '''),
        md("## Fine-tune NER"),
        hyperparameter_options(),
        code('''
            NER = {}
            for dataset in NER_DATASETS:
                NER[dataset] = biozoo("finetune", "ner", "--preset", PRESET, "--data", f"{DATA}/ner/{dataset}",
                                      "--output", f"{OUTPUT}/ner-{dataset}", *training_options())[-1]
            for dataset, metrics in NER.items():
                print(f"{dataset:16s} dev F1 {metrics['dev']['f1']:6.2f}   test F1 {metrics['test']['f1']:6.2f}")
        '''),
        md("The fine-tuned model directory holds the task preset and `metrics.json`:"),
        code('''
            FIRST = NER_DATASETS[0]
            print(sorted(os.listdir(f"{OUTPUT}/ner-{FIRST}")))
            show_json(f"{OUTPUT}/ner-{FIRST}/metrics.json", ["task", "preset", "strategy", "replicas", "precision",
                                                             "train_examples", "train_seconds", "hyperparameters", "test"]);
        '''),
        md("## Evaluate and annotate"),
        code('''
            EVALUATED = biozoo("evaluate", "ner", "--model", f"{OUTPUT}/ner-{FIRST}", "--data", f"{DATA}/ner/{FIRST}",
                               "--split", "test")[-1]
            print(f"test entity-level F1: {EVALUATED['f1']:.2f}")

            with open(f"{OUTPUT}/abstract.txt", "w", encoding="utf-8") as handle:
                handle.write("Germline mutations in BRCA1 predispose to breast and ovarian cancer.\\n"
                             "Cisplatin-induced nephrotoxicity was reduced by co-treatment with magnesium.\\n")
            for document in biozoo("annotate", "--model", f"{OUTPUT}/ner-{FIRST}", "--no-progress", f"{OUTPUT}/abstract.txt"):
                print(document["passages"][0]["text"])
                for entity in document["predictions"]:
                    print(f"   {entity['type']:10s} {entity['text']!r} [{entity['start']}:{entity['end']}]")
        '''),
        md("## Fine-tune ChemProt relation extraction"),
        code('''
            CHEMPROT = biozoo("finetune", "re", "--preset", PRESET, "--data", f"{DATA}/re/chemprot",
                              "--output", f"{OUTPUT}/chemprot", *training_options())[-1]
            print(f"ChemProt micro-F1 (5 CPR classes): dev {CHEMPROT['dev']['f1']:.2f}  test {CHEMPROT['test']['f1']:.2f}")
        '''),
        md("## Summary"),
        code('''
            SUMMARY = {
                "preset": PRESET,
                "strategy": DEVICE["strategy"],
                "ner": {d: {"dev_f1": m["dev"]["f1"], "test_f1": m["test"]["f1"]} for d, m in NER.items()},
                "ner_evaluate_test_f1": EVALUATED["f1"],
                "chemprot": {"dev_micro_f1": CHEMPROT["dev"]["f1"], "test_micro_f1": CHEMPROT["test"]["f1"]},
            }
            print(json.dumps(SUMMARY, indent=2))
        '''),
    ]
    return name, cells


# ---- 02: SQuAD2 then BioASQ ----------------------------------------------------------------


def notebook_02():
    name = "02_squad2_bioasq_tpu.ipynb"
    cells = [
        header(name, "SQuAD2.0, then BioASQ factoid question answering, on a TPU", """
            Biomedical factoid QA is fine-tuned from a checkpoint that already reads SQuAD2.0, as in
            the BioM-Transformers paper (Section 4.1). By default this notebook starts from
            `biom_electra_large_squad2` (BioM-ELECTRA-Large fine-tuned on SQuAD2.0) and fine-tunes it
            on BioASQ 7b factoid questions with the paper's BioASQ hyperparameters (`--recipe biom`:
            4 epochs, learning rate 2e-5, batch 24). With a preset that has not seen SQuAD2.0 (or with
            `SQUAD2 = "1"`), it first fine-tunes on SQuAD2.0 and continues from that model.

            The BioASQ scores are the official factoid measures: strict accuracy, lenient accuracy and
            mean reciprocal rank over the top-5 answers aggregated across each question's snippets.
        """),
        parameters('''
            PRESET = os.environ.get("BIOZOO_NB_PRESET", "biom_electra_large_squad2")  # a SQuAD2.0 checkpoint (or any encoder)
            SQUAD2 = os.environ.get("BIOZOO_NB_SQUAD2", "auto")  # "1": fine-tune on SQuAD2.0 first; auto: only if PRESET is not a *_squad2 fine-tune
            DATA = os.environ.get("BIOZOO_NB_DATA", "/content/data")  # DATA/qa/squad2 and DATA/qa/bioasq; downloaded when missing
            OUTPUT = os.environ.get("BIOZOO_NB_OUTPUT", "/content/runs")
            RECIPE = os.environ.get("BIOZOO_NB_RECIPE", "biom")  # "biom": BioM-Transformers Table 4; "" = the values below
            EPOCHS = os.environ.get("BIOZOO_NB_EPOCHS", "")  # "" = the recipe's; a fraction (0.05) trains part of an epoch
            BATCH_SIZE = os.environ.get("BIOZOO_NB_BATCH_SIZE", "")
            LEARNING_RATE = os.environ.get("BIOZOO_NB_LEARNING_RATE", "")
            MAX_SEQ_LENGTH = os.environ.get("BIOZOO_NB_MAX_SEQ_LENGTH", "384")  # windows over long snippets (doc stride)
        '''),
        md("## Install biozoo"),
        INSTALL,
        HELPERS,
        md("## Detect the accelerator"),
        DETECT,
        md("""
            ## Data

            * SQuAD2.0 train/dev from the SQuAD site (only when the SQuAD2.0 stage runs), through
              `biozoo data download qa/squad2 --trust-unverified` (no checksum is recorded for them).
            * BioASQ 7b factoid, in SQuAD v1.1 format: evaluation questions (one paragraph per snippet,
              ids `<question id>:<n>`) from SciCrunch/bio_electra through `biozoo data download
              qa/bioasq` (pinned commit, sha256 checked); training questions from the BioBERT data
              release (`BioASQ-train-factoid-7b.json`), without those whose id also appears in the
              evaluation file.

            A data set is skipped when its folder under `DATA` already exists.

            `biozoo finetune qa` reads `train.json` and `dev.json` (and `test.json` if present) from a folder.
        """),
        data_cell('''
            import tarfile
            import urllib.request

            RUN_SQUAD2 = SQUAD2 == "1" or (SQUAD2 == "auto" and not PRESET.rstrip("/").lower().endswith("squad2"))
            BIOBERT_DATA = "http://nlp.dmis.korea.edu/projects/biobert-2020-checkpoints/datasets.tar.gz"

            if RUN_SQUAD2 and not os.path.exists(f"{DATA}/qa/squad2"):
                # the SQuAD site records no checksum: --trust-unverified takes the files and prints their sha256
                squad2 = data_download("qa/squad2", "--trust-unverified")
                os.replace(f"{squad2}/test.json", f"{squad2}/dev.json")  # SQuAD's dev set: biozoo's layout names it test.json
                put(squad2, "qa/squad2")
            if not os.path.exists(f"{DATA}/qa/bioasq"):
                bioasq = data_download("qa/bioasq")  # bio_electra's files; its train.json is replaced below
                os.replace(f"{bioasq}/test.json", f"{bioasq}/dev.json")  # the evaluation questions (biozoo: test.json)
                print("downloading", BIOBERT_DATA)
                urllib.request.urlretrieve(BIOBERT_DATA, "/tmp/biobert-datasets.tar.gz")
                with tarfile.open("/tmp/biobert-datasets.tar.gz") as archive:
                    member = next(m for m in archive.getmembers() if m.name.endswith("BioASQ-train-factoid-7b.json"))
                    train = json.load(archive.extractfile(member))
                with open(f"{bioasq}/dev.json", encoding="utf-8") as handle:
                    held_out = {qa["id"][:24] for article in json.load(handle)["data"]
                                for paragraph in article["paragraphs"] for qa in paragraph["qas"]}
                for article in train["data"]:
                    for paragraph in article["paragraphs"]:
                        paragraph["qas"] = [qa for qa in paragraph["qas"] if qa["id"][:24] not in held_out]
                with open(f"{bioasq}/train.json", "w", encoding="utf-8") as handle:
                    json.dump(train, handle)
                put(bioasq, "qa/bioasq")
            for folder in (["qa/squad2"] if RUN_SQUAD2 else []) + ["qa/bioasq"]:
                print(folder, sorted(os.listdir(os.path.join(DATA, folder))))
        '''),
        hyperparameter_options(),
        md("## Stage 1: SQuAD2.0 (skipped when the preset is already a SQuAD2.0 fine-tune)"),
        code('''
            START = PRESET
            SQUAD = None
            if RUN_SQUAD2:
                SQUAD = biozoo("finetune", "qa", "--preset", PRESET, "--data", f"{DATA}/qa/squad2",
                               "--output", f"{OUTPUT}/squad2", *training_options())[-1]
                print("SQuAD2.0 dev:", json.dumps({k: SQUAD["dev"]["squad_v2"].get(k) for k in ("exact", "f1", "HasAns_f1", "NoAns_f1")}))
                START = f"{OUTPUT}/squad2"
            print("BioASQ starts from", START)
        '''),
        md("## Stage 2: BioASQ factoid"),
        code('''
            BIOASQ = biozoo("finetune", "qa", "--preset", START, "--data", f"{DATA}/qa/bioasq",
                            "--output", f"{OUTPUT}/bioasq", *training_options())[-1]
            metrics = show_json(f"{OUTPUT}/bioasq/metrics.json", ["task", "preset", "strategy", "replicas", "hyperparameters", "dev"])
        '''),
        md("## BioASQ factoid scores"),
        code('''
            factoid = metrics["dev"]["bioasq_factoid"]
            SUMMARY = {
                "preset": PRESET,
                "strategy": DEVICE["strategy"],
                "squad2_dev": None if SQUAD is None else {k: SQUAD["dev"]["squad_v2"].get(k) for k in ("exact", "f1")},
                "bioasq_factoid": {k: factoid[k] for k in ("strict_accuracy", "lenient_accuracy", "mrr", "questions")},
            }
            print(json.dumps(SUMMARY, indent=2))
        '''),
    ]
    return name, cells


# ---- 03: distillation ----------------------------------------------------------------------


def notebook_03():
    name = "03_distill_compact_student.ipynb"
    cells = [
        header(name, "Distil a compact biomedical student model", """
            Knowledge distillation (`biozoo distill --method distilbert`: the DistilBERT objective,
            masked-LM distillation from the teacher's output distribution plus the student's own
            masked-LM loss and a hidden-state cosine loss) trains a smaller student, described by a
            config, on unlabelled biomedical text. The student is then fine-tuned on NCBI-disease NER
            with `biozoo finetune` to show what it retains.

            The corpus here is small (the sentences of the NER and ChemProt training sets) so the
            notebook finishes in minutes; the published compact models (e.g. CompactBioBERT) were
            distilled on PubMed for far longer: raise `STEPS` and point `CORPUS` at a larger text file
            (one sentence or document per line).
        """),
        parameters('''
            TEACHER = os.environ.get("BIOZOO_NB_TEACHER", "biobert_v1_1")  # registry name, hf://..., or a directory
            STUDENT_LAYERS = int(os.environ.get("BIOZOO_NB_STUDENT_LAYERS", "6"))  # the teacher's other sizes are kept
            CORPUS = os.environ.get("BIOZOO_NB_CORPUS", "")  # a text file, one sentence per line; "" = built from DATA
            DATA = os.environ.get("BIOZOO_NB_DATA", "/content/data")  # NER/ChemProt data, downloaded when missing
            OUTPUT = os.environ.get("BIOZOO_NB_OUTPUT", "/content/runs")
            STEPS = os.environ.get("BIOZOO_NB_STEPS", "2000")  # distillation steps
            DISTILL_BATCH_SIZE = os.environ.get("BIOZOO_NB_DISTILL_BATCH_SIZE", "64")
            EPOCHS = os.environ.get("BIOZOO_NB_EPOCHS", "3")  # NER fine-tuning of the student
            BATCH_SIZE = os.environ.get("BIOZOO_NB_BATCH_SIZE", "32")
            LEARNING_RATE = os.environ.get("BIOZOO_NB_LEARNING_RATE", "5e-5")
            MAX_SEQ_LENGTH = os.environ.get("BIOZOO_NB_MAX_SEQ_LENGTH", "128")
        '''),
        md("## Install biozoo"),
        INSTALL,
        HELPERS,
        md("## Detect the accelerator"),
        DETECT,
        md("## Data: an unlabelled corpus and NCBI-disease"),
        data_cell('''
            for folder in ("ner/NCBI-disease", "re/chemprot"):
                if not os.path.exists(f"{DATA}/{folder}"):
                    put(data_download(folder), folder)

            if not CORPUS:  # one sentence per line from the training sets
                sentences, words = [], []
                with open(f"{DATA}/ner/NCBI-disease/train.tsv", encoding="utf-8") as handle:
                    for line in handle:
                        if line.strip():
                            words.append(line.split("\\t")[0])
                        elif words:
                            sentences.append(" ".join(words))
                            words = []
                if os.path.exists(f"{DATA}/re/chemprot/train.tsv"):
                    with open(f"{DATA}/re/chemprot/train.tsv", encoding="utf-8") as handle:
                        sentences += sorted({line.split("\\t")[0] for line in list(handle)[1:]})
                CORPUS = f"{OUTPUT}/corpus.txt"
                os.makedirs(OUTPUT, exist_ok=True)
                with open(CORPUS, "w", encoding="utf-8") as handle:  # blank lines between documents
                    for start in range(0, len(sentences), 10):  # pseudo-documents of 10 consecutive sentences
                        handle.write("\\n".join(sentences[start:start + 10]) + "\\n\\n")
            print(CORPUS, sum(1 for _ in open(CORPUS, encoding="utf-8")), "lines")
        '''),
        md("""
            ## Distil

            The student is the teacher's architecture with `STUDENT_LAYERS` layers
            (`--student-config '{"num_layers": 6}'`: changes to the teacher's backbone config). Its
            embeddings, MLM head and layers start from the teacher's (as DistilBioBERT's script, student
            layer l from the first teacher layer of each of L_student blocks: 1, 3, 5, ... for half the depth).
        """),
        code('''
            STUDENT_CONFIG = json.dumps({"num_layers": STUDENT_LAYERS})
            biozoo("distill", "--teacher", TEACHER, "--student-config", STUDENT_CONFIG,
                   "--method", "distilbert", "--corpus", CORPUS, "--output", f"{OUTPUT}/student",
                   "--steps", STEPS, "--batch-size", DISTILL_BATCH_SIZE,
                   "--max-seq-length", MAX_SEQ_LENGTH, *device_options(speed=False))
            print(sorted(os.listdir(f"{OUTPUT}/student")))  # a Keras preset: backbone, tokenizer, MLM task
            DISTILLED = show_json(f"{OUTPUT}/student/metrics.json", ["method", "teacher", "student_config", "layer_map",
                                                                     "parameters", "steps", "loss", "agreement"])
        '''),
        md("## Fine-tune the student on NCBI-disease"),
        code('''
            STUDENT_NER = biozoo("finetune", "ner", "--preset", f"{OUTPUT}/student", "--data", f"{DATA}/ner/NCBI-disease",
                                 "--output", f"{OUTPUT}/student-ner", "--epochs", EPOCHS, "--batch-size", BATCH_SIZE,
                                 "--learning-rate", LEARNING_RATE, "--max-seq-length", MAX_SEQ_LENGTH,
                                 *device_options())[-1]
            show_json(f"{OUTPUT}/student-ner/metrics.json", ["task", "preset", "strategy", "train_seconds", "dev", "test"]);
        '''),
        md("## Summary"),
        code('''
            SUMMARY = {
                "teacher": TEACHER,
                "student_layers": STUDENT_LAYERS,
                "strategy": DEVICE["strategy"],
                "parameters": DISTILLED.get("parameters"),
                "distill_loss": DISTILLED["loss"]["loss"],  # total training loss, first and last steps
                "agreement_with_teacher": DISTILLED.get("agreement"),  # top-1 on masked tokens
                "student_ner": {"dev_f1": STUDENT_NER["dev"]["f1"], "test_f1": STUDENT_NER["test"]["f1"]},
            }
            print(json.dumps(SUMMARY, indent=2))
        '''),
    ]
    return name, cells


NOTEBOOKS = (notebook_01, notebook_02, notebook_03)


def build(cells, stem, accelerator="TPU"):
    cells = copy.deepcopy(cells)  # the shared cells are used by every notebook
    for index, cell in enumerate(cells):
        cell["id"] = f"{stem[:2]}-{index:02d}"
        source = cell["source"]
        lines = source.splitlines(keepends=True)
        cell["source"] = lines
    return {
        "cells": cells,
        "metadata": {
            "accelerator": accelerator,
            "colab": {"provenance": [], "gpuType": COLAB_TPU, "toc_visible": True},
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def render(notebook):
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def generate():
    """{path: text} of every notebook."""
    out = {}
    for make in NOTEBOOKS:
        name, cells = make()
        out[COLAB_DIR / name] = render(build(cells, name))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a notebook differs from the generator's")
    args = parser.parse_args(argv)
    stale = []
    for path, text in generate().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print("wrote", path.relative_to(REPO))
    if stale:
        print("out of date (run tools/make_notebooks.py):", ", ".join(str(p.relative_to(REPO)) for p in stale))
        return 1
    try:
        import nbformat

        for path in generate():
            if path.exists():
                nbformat.validate(nbformat.read(str(path), as_version=4))
    except ImportError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
