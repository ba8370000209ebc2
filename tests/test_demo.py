"""`biozoo demo`: the main job on the data packaged with biozoo, with nothing else on the machine."""

import gzip
import json

import pytest
from seqeval.metrics.sequence_labeling import get_entities

from biozoo.cli import main
from biozoo.data import embedded_corpus, find_split, read_ner
from biozoo.documents import read_documents


@pytest.mark.slow
def test_demo_trains_on_the_packaged_corpus_and_annotates_the_packaged_abstracts(tmp_path, monkeypatch, capsys,
                                                                                   tiny_bert_real_vocab):
    monkeypatch.setenv("BIOZOO_SHARED_DATA", str(tmp_path / "no-shared-data"))  # a user's machine
    output = tmp_path / "runs" / "demo"
    assert main(["demo", "--preset", str(tiny_bert_real_vocab), "--epochs", "0.05", "--batch-size", "16", "--max-seq-length", "64",
                 "--output", str(output)]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out.splitlines()[-1])
    assert "done in " in captured.err and "Next: `" in captured.err
    test = read_ner(find_split(embedded_corpus("ncbi-disease"), "test"))
    assert summary["test"]["sentences"] == len(test) == 940
    assert summary["test"]["counts"]["gold"] == sum(len(get_entities(s.tags)) for s in test)  # every gold entity
    sample = summary["sample"]
    assert all(sample["text"][e["start"]:e["end"]] == e["text"] for e in sample["entities"])

    annotated = list(read_documents([summary["documents"]]))
    original = list(read_documents([embedded_corpus("example-pubtator")]))
    assert [d.id for d in annotated] == [d.id for d in original] == list(summary["document_entities"])
    for before, after in zip(original, annotated):
        assert [p.text for p in after.passages] == [p.text for p in before.passages]
        assert all(after.text[a.start:a.end] == a.text for a in after.existing_annotations())
        assert summary["document_entities"][after.id] == len(after.existing_annotations())
    lines = gzip.decompress(embedded_corpus("example-pubtator").read_bytes()).decode().splitlines()
    written = open(summary["documents"], encoding="utf-8").read().splitlines()
    assert [line for line in written if "|t|" in line or "|a|" in line] == [line for line in lines if line]


def test_the_next_steps_name_a_command_the_shell_finds(tmp_path, monkeypatch):
    """After `make demo` the `biozoo` command sits in .venv/bin, off the path until the venv is activated."""
    from biozoo._commands import demo

    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "biozoo").write_text("#!/bin/sh\n")
    monkeypatch.setattr("sys.executable", str(bin_dir / "python"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert demo._command_name() == ".venv/bin/biozoo"
    monkeypatch.setattr("shutil.which", lambda name: str(bin_dir / "biozoo"))  # the venv is active
    assert demo._command_name() == "biozoo"
    monkeypatch.setattr("shutil.which", lambda name: "/usr/local/bin/biozoo")  # another installation's
    assert demo._command_name() == ".venv/bin/biozoo"
