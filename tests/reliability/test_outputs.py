"""Outputs never destroy what biozoo did not write: a folder biozoo writes carries its marker, only
such a folder is replaced and only with --overwrite, an input is never an output; a killed
write's temporary files are removed by the next write."""

import json
import shutil
import subprocess

import pytest
from reliability_kit import leftovers, tree_digest

from biozoo.cli import main

MARKER = ".biozoo-output"  # biozoo._io.OUTPUT_MARKER


def run(*argv):
    return main([str(a) for a in argv])


def test_convert_writes_a_marked_folder_replaced_only_with_overwrite(kit, tmp_path, capsys):
    import biozoo

    out = tmp_path / "preset"
    assert run("convert", "--from", "hf", kit.tiny_hf, "--output", out) == 0
    assert json.loads((out / MARKER).read_text())["written_by"] == "biozoo"
    biozoo.from_preset(str(out))  # a complete preset
    (out / "mine.txt").write_text("added by hand\n")
    before = tree_digest(out)
    assert run("convert", "--from", "hf", kit.tiny_hf, "--output", out) == 2
    assert "holds an earlier biozoo output; pass --overwrite" in capsys.readouterr().err
    assert tree_digest(out) == before
    assert run("convert", "--from", "hf", kit.tiny_hf, "--output", out, "--overwrite") == 0
    assert not (out / "mine.txt").exists() and (out / MARKER).exists()  # replaced, in one rename
    assert leftovers(tmp_path) == []


def test_convert_never_empties_a_project_or_the_working_folder(kit, tmp_path, monkeypatch, capsys):
    project = tmp_path / "work_project"
    (project / "src").mkdir(parents=True)
    (project / "thesis.tex").write_text("chapter 1\n")
    (project / "src" / "main.py").write_text("print(1)\n")
    before = tree_digest(project)
    for argv in (["--output", project], ["--output", project, "--overwrite"]):
        assert run("convert", "--from", "hf", kit.tiny_hf, *argv) == 2
    monkeypatch.chdir(project)
    assert run("convert", "--from", "hf", kit.tiny_hf, "--output", ".") == 2
    err = capsys.readouterr().err
    assert "was not written by biozoo" in err and "working folder" in err
    assert tree_digest(project) == before


def test_input_and_output_are_never_the_same_path(kit, tmp_path):
    checkpoint = shutil.copytree(kit.tiny_hf, tmp_path / "checkpoint")
    before = tree_digest(checkpoint)
    assert run("convert", "--from", "hf", checkpoint, "--output", checkpoint, "--overwrite") == 2
    assert run("convert", "--from", "hf", checkpoint, "--output", tmp_path) == 2  # a folder holding the input
    assert tree_digest(checkpoint) == before


def test_an_output_that_is_a_file_is_refused(kit, tmp_path):
    target = tmp_path / "model"
    target.write_text("not a folder\n")
    assert run("convert", "--from", "hf", kit.tiny_hf, "--output", target) == 2
    assert target.read_text() == "not a folder\n"


def test_every_export_refuses_a_folder_it_did_not_write(kit, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "data.csv").write_text("1,2\n")
    for kind in ("hf", "hub", "garden", "onnx", "litert"):
        assert run("export", kind, "--preset", kit.preset, "--output", project) == 2, kind
    assert (project / "data.csv").read_text() == "1,2\n" and sorted(p.name for p in project.iterdir()) == ["data.csv"]


def test_export_replaces_its_own_output_with_overwrite(kit, tmp_path, capsys):
    out = tmp_path / "hf"
    assert run("export", "hf", "--preset", kit.preset, "--output", out) == 0
    first = tree_digest(out)
    assert run("export", "hf", "--preset", kit.preset, "--output", out) == 2
    assert tree_digest(out) == first
    assert run("export", "hf", "--preset", kit.preset, "--output", out, "--overwrite") == 0
    assert (out / "model.safetensors").exists() and (out / MARKER).exists()


def test_the_python_api_is_guarded_too(kit, tmp_path):
    from biozoo._io import atomic_directory
    from biozoo.errors import OutputError
    from biozoo.export.hf import export_hf

    project = tmp_path / "project"
    project.mkdir()
    (project / "keep.txt").write_text("x")
    with pytest.raises(OutputError, match="was not written by biozoo"):
        export_hf(str(kit.preset), str(project))
    with pytest.raises(OutputError, match="was not written by biozoo"):
        with atomic_directory(project, overwrite=True):
            (tmp_path / "never").write_text("the block must not run")  # pragma: no cover
    assert (project / "keep.txt").read_text() == "x" and not (tmp_path / "never").exists()


def test_finetune_onto_a_finished_model_needs_overwrite(kit, tmp_path, capsys):
    model = shutil.copytree(kit.ner_model, tmp_path / "model")
    before = tree_digest(model)
    argv = ["finetune", "ner", "--preset", kit.preset, "--data", kit.ner_data, "--output", model, "--epochs", "1",
            "--batch-size", "8", "--max-seq-length", "16", "--seed", "7"]
    assert run(*argv) == 2
    assert "holds an earlier biozoo output; pass --overwrite" in capsys.readouterr().err
    assert tree_digest(model) == before
    assert run(*argv, "--overwrite") == 0
    after = tree_digest(model)
    assert after["model.weights.h5"] != before["model.weights.h5"]  # trained anew with seed 7
    assert json.loads((model / "metrics.json").read_text())["hyperparameters"]["seed"] == 7
    assert leftovers(tmp_path) == []


def _dead_pid():
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_killed_writes_temporary_files_are_removed_by_the_next_write(tmp_path):
    from biozoo._io import _host_tag, atomic_binary_file, remove_stale_scratch

    out = tmp_path / "out.jsonl"
    dead = _dead_pid()
    stale_file = tmp_path / f".out.jsonl.partial-{_host_tag()}-{dead}-abc123"
    stale_file.write_text("half")
    stale_dir = tmp_path / f".preset.streamed-{_host_tag()}-{dead}-xyz"
    stale_dir.mkdir()
    (stale_dir / "model.weights.h5").write_text("half")
    alive = tmp_path / f".out.jsonl.partial-{_host_tag()}-1-live"  # pid 1 is alive: another writer's
    alive.write_text("being written")
    other_host = tmp_path / f".out.jsonl.partial-elsewhere-{dead}-q"  # another machine's (a shared disk)
    other_host.write_text("not ours to judge")
    with atomic_binary_file(out) as f:
        f.write(b"done\n")
    assert out.read_text() == "done\n" and not stale_file.exists()
    assert alive.exists() and other_host.exists()
    assert remove_stale_scratch(tmp_path / "preset") == [stale_dir.name] and not stale_dir.exists()
