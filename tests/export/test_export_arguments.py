"""Export arguments refused before any work, with an error that names the option: a --seq-length
too short for what the export packs, --split without --data, a task model as a --preset of an export that
writes the bare encoder, a negative --max-f1-drop, an ONNX export without its packages."""

import json
import os
import re
import subprocess
import sys

import pytest

import biozoo
from biozoo import testing as H
from biozoo.cli import build_parser, main
from biozoo.errors import BiozooError
from biozoo.preset_files import TASK_KIND_FILE, task_kind_record


def _save(task, directory, kind, options):
    task.save_to_preset(str(directory))
    (directory / TASK_KIND_FILE).write_text(json.dumps(task_kind_record(kind, options)))
    return directory


@pytest.fixture(scope="module")
def ner_dir(tiny_bert_real_vocab, tmp_path_factory):
    task = biozoo.TokenClassifier.from_preset(str(tiny_bert_real_vocab), label_names=["O", "B-Disease", "I-Disease"])
    return _save(task, tmp_path_factory.mktemp("ner") / "model", "ner", {"entity_type": None})


@pytest.fixture(scope="module")
def re_dir(tiny_bert_real_vocab, tmp_path_factory):
    task = biozoo.SequenceClassifier.from_preset(str(tiny_bert_real_vocab), label_names=["false", "true"])
    return _save(task, tmp_path_factory.mktemp("re") / "model", "re", {"negative_label": "false", "added_tokens": []})


@pytest.mark.parametrize("value", ["2", "0", "-1", "x"])
def test_seq_length_below_one_token_is_refused(value, ner_dir, tiny_bert_real_vocab, tmp_path, capsys):
    """[CLS] token [SEP] needs 3 positions: fewer (and 0, which is not "unset") exit 2 naming
    --seq-length, for a backbone preset and a task model alike, and write nothing."""
    for source in (["--preset", str(tiny_bert_real_vocab)], ["--model", str(ner_dir)]):
        with pytest.raises(SystemExit) as exit_:
            main(["export", "tfhub", *source, "--output", str(tmp_path / "out"), "--seq-length", value])
        assert exit_.value.code == 2
        assert "argument --seq-length" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    args = build_parser().parse_args(["export", "tfhub", "--model", str(ner_dir), "--output", "x", "--seq-length", "3"])
    assert args.seq_length == 3


def test_seq_length_holds_both_texts_of_a_classifier(re_dir, ner_dir, tmp_path, capsys):
    """A classifier's classify_pairs packs [CLS] a [SEP] b [SEP]: under 5 positions one text
    would be cut away whole, so it is refused; an NER model packs one text and takes 3."""
    out = tmp_path / "out"
    assert main(["export", "tfhub", "--model", str(re_dir), "--output", str(out), "--seq-length", "4"]) == 2
    err = capsys.readouterr().err
    assert "--seq-length 4 is too short" in err and "at least 5" in err
    assert not out.exists()
    from biozoo.export.serving import check_seq_length, export_task_hub

    with pytest.raises(ValueError, match="--seq-length 4 is too short .* at least 5"):  # from Python too
        export_task_hub(biozoo.SequenceClassifier.from_preset(str(re_dir)), out, seq_length=4)
    assert not out.exists()
    check_seq_length("classification", 5)
    check_seq_length("ner", 3)


@pytest.mark.parametrize("fmt", ["onnx", "litert"])
def test_split_without_data_is_refused(fmt, ner_dir, tmp_path, capsys):
    """--split names a split of --data: alone it is refused (as --max-f1-drop alone is), not ignored."""
    out = tmp_path / "out"
    assert main(["export", fmt, "--model", str(ner_dir), "--output", str(out), "--split", "no-such-split"]) == 2
    err = capsys.readouterr().err
    assert "--split" in err and "--data" in err
    assert not out.exists()
    from biozoo.export.ids_models import export_ids_model

    with pytest.raises(ValueError, match=r"split 'test' \(--split\) needs dev data \(--data\)"):
        export_ids_model(fmt, out, model=str(ner_dir), split="test")
    assert not out.exists()


def test_hf_export_of_a_task_preset_is_refused(ner_dir, tmp_path, monkeypatch, capsys):
    """`export hf --preset` writes a bare encoder: a task (a `biozoo finetune` folder, a
    registry task checkpoint) would lose its head, so it is refused, pointing to --model, which
    writes the task's transformers class."""
    tagger = H.make_model("bert", "BertForTokenClassification", num_labels=3)
    tagger.config.architectures = ["BertForTokenClassification"]
    tagger.config.id2label = dict(enumerate(["O", "B-Disease", "I-Disease"]))
    tagger.config.label2id = {label: i for i, label in tagger.config.id2label.items()}
    H.offline_registry_mirror(monkeypatch, tmp_path, "bioformer_8l_ncbi_disease", tagger)
    for index, preset in enumerate((str(ner_dir), "bioformer_8l_ncbi_disease")):
        out = tmp_path / f"out{index}"
        assert main(["export", "hf", "--preset", preset, "--output", str(out)]) != 0
        err = capsys.readouterr().err
        assert "is an ner model" in err and f"biozoo export hf --model {preset}" in err
        assert not out.exists()
        assert main(["export", "hf", "--model", preset, "--output", str(out)]) == 0
        assert json.loads((out / "config.json").read_text())["architectures"] == ["BertForTokenClassification"]
        capsys.readouterr()


@pytest.mark.parametrize("fmt", ["onnx", "litert"])
def test_ids_export_of_a_task_preset_is_refused(fmt, ner_dir, tmp_path, capsys):
    """`export onnx|litert --preset` writes the bare encoder: a task checkpoint there would lose
    its head, so it is refused as `export hf --preset` refuses it, pointing to --model."""
    from biozoo.export.ids_models import export_ids_model

    out = tmp_path / "out"
    assert main(["export", fmt, "--preset", str(ner_dir), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "is an ner model" in err and f"biozoo export {fmt} --model {ner_dir}" in err
    assert not out.exists()
    with pytest.raises(BiozooError, match="without its head"):
        export_ids_model(fmt, out, preset=str(ner_dir))
    assert not out.exists()


@pytest.mark.parametrize("value", ["-0.5", "-1e-9", "nan"])
def test_negative_max_f1_drop_is_refused(value, ner_dir, tmp_path, capsys):
    """--max-f1-drop is the F1 points the export may lose: a negative one is refused at parse
    time naming the flag (it would refuse every export after the conversion's work)."""
    from biozoo.export.ids_models import export_ids_model

    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "litert", "--model", str(ner_dir), "--output", str(out), "--data", str(tmp_path),
              f"--max-f1-drop={value}"])  # argparse takes "-1e-9" after a space for an option
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --max-f1-drop" in err and "not 0 or more" in err
    assert not out.exists()
    with pytest.raises(ValueError, match=r"max_f1_drop \(--max-f1-drop\) .* is not 0 or more"):
        export_ids_model("litert", out, model=str(ner_dir), data=str(tmp_path), max_f1_drop=float(value))
    assert not out.exists()


@pytest.mark.parametrize("module", ["tf2onnx", "onnx", "onnxruntime"])
def test_onnx_export_without_its_packages_names_the_extra(module, ner_dir, tmp_path, monkeypatch, capsys):
    """Without tf2onnx, onnx or onnxruntime, `export onnx` fails before loading the model with
    one line naming the module and the extra that installs it (an extra of biozoo's metadata
    that requires each of them)."""
    import sys
    from importlib.metadata import requires

    from biozoo.export import ids_models
    from biozoo.export.onnx import ONNX_EXTRA, ONNX_MODULES

    extra = {r.split(";")[0].split("=")[0].split(">")[0].strip() for r in requires("biozoo")
             if f'extra == "{ONNX_EXTRA}"' in r}
    assert set(ONNX_MODULES) <= extra, extra
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed

    def not_loaded(*args):
        raise AssertionError("the model was loaded before the missing package was named")

    monkeypatch.setattr(ids_models, "_source", not_loaded)
    out = tmp_path / "out"
    assert main(["export", "onnx", "--model", str(ner_dir), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert re.search(rf"not installed here: [\w, ]*\b{module}\b", err), err
    assert f"pip install 'biozoo[{ONNX_EXTRA}]'" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_exports_through_tensorflow_refuse_another_backend_in_one_line(ner_dir, tiny_bert_real_vocab, tmp_path):
    """Under JAX (TensorFlow installed), the exports that trace a TensorFlow graph exit 2 with one
    line that names the backend to use, before any work; `export hf` and `garden` need no graph."""
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    refused = {"tfhub --preset": ["tfhub", "--preset", str(tiny_bert_real_vocab), "--seq-length", "16"],
               "tfhub --model": ["tfhub", "--model", str(ner_dir)],
               "onnx": ["onnx", "--model", str(ner_dir)]}  # litert goes through onnx's function
    for name, argv in refused.items():
        out = tmp_path / name.replace(" ", "")
        run = subprocess.run([sys.executable, "-m", "biozoo", "export", *argv, "--output", str(out)], env=env,
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 2, (name, run.stderr[-2000:])
        assert run.stderr.strip().startswith(f"biozoo export: error: export {name.split()[0]} traces the model"), \
            (name, run.stderr[-2000:])
        assert "KERAS_BACKEND=tensorflow" in run.stderr and "(this process runs jax)" in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1 and not out.exists()
    run = subprocess.run([sys.executable, "-m", "biozoo", "export", "hf", "--model", str(ner_dir), "--output",
                          str(tmp_path / "hf")], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "hf" / "config.json").exists()
