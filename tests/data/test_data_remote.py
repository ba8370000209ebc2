"""Data folders through tf.io.gfile (gs:// on TPUs): read exactly as the local folder. TF's
in-memory ram:// filesystem stands in for gs:// here."""

import pytest

from biozoo.errors import DataFormatError
from biozoo.tasks.adapters import adapter_for


def test_a_gfile_folder_reads_like_the_local_one(shared_data, tmp_path):
    import tensorflow as tf

    local = shared_data / "re" / "chemprot"
    remote = "ram://biozoo-test/chemprot"
    tf.io.gfile.makedirs(remote)
    for split in ("train", "dev", "test"):
        lines = (local / f"{split}.tsv").read_bytes().splitlines(keepends=True)[:50]
        with tf.io.gfile.GFile(f"{remote}/{split}.tsv", "wb") as f:
            f.write(b"".join(lines))
        (tmp_path / f"{split}.tsv").write_bytes(b"".join(lines))
    recipe = adapter_for("re")
    from_remote = recipe.load(remote)
    assert set(from_remote) == {"train", "dev", "test"}
    from_local = recipe.load(tmp_path)
    for split, examples in from_remote.items():
        assert len(examples) >= 49  # a header line, where the file has one
        assert [(e.text, e.label, e.line) for e in examples] == [(e.text, e.label, e.line) for e in from_local[split]]


def test_a_missing_gfile_folder_is_named():
    with pytest.raises(FileNotFoundError, match="ram://biozoo-test/nowhere"):
        adapter_for("ner").load("ram://biozoo-test/nowhere")


def _write_remote(folder, name, text):
    import tensorflow as tf

    tf.io.gfile.makedirs(folder)
    with tf.io.gfile.GFile(f"{folder}/{name}", "wb") as f:
        f.write(text.encode("utf-8"))


def test_a_gfile_folder_keeps_its_name_and_errors_name_it():
    # the copy is named as the folder: NCBI-disease types its bare B/I tags as Disease
    ner = "ram://biozoo-test/blurb/NCBI-disease"
    _write_remote(ner, "train.tsv", "Germline\tO\nBRCA1\tO\ncancer\tB\n")
    (sentence,) = adapter_for("ner").load(ner, only="train")["train"]
    assert (sentence.tags, sentence.path, sentence.line) == (["O", "O", "B-Disease"], f"{ner}/train.tsv", 1)

    relation = "ram://biozoo-test/re/gad"
    _write_remote(relation, "train.tsv", "@GENE$ in @DISEASE$\t1\nbroken row without a label\n")
    with pytest.raises(DataFormatError) as info:
        adapter_for("re").load(relation, only="train")
    assert str(info.value).startswith(f"{relation}/train.tsv:2: expected 2 tab-separated columns")
    with pytest.raises(FileNotFoundError) as info:
        adapter_for("re").load(relation, only="test")
    assert f"no 'test' split in {relation}:" in str(info.value) and "biozoo-data-" not in str(info.value)
