"""The bad-input catalogue: what a new user types wrong, one row each. Every row is a command (run
in-process through `biozoo.cli.main`), the exit status it must end with and a fragment of the one
line it must print on stderr; every row also checks that nothing was written where the output
would have gone (no output, no temporary file left beside it) and that nothing of the user's was
deleted or changed (their project folder, their notes file, the inputs, an earlier output).

The models are tiny random-weight ones (`kit` in conftest.py). A second table holds the API's
bad arguments. Rows that need a file of their own name it in `files` (made by FILES)."""

import io
import os
import pickle
import re
import shlex
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from reliability_kit import BIOC_OVERLAP, damaged_gzip_inputs, leftovers, pubtator_document, tree_digest, write_ner_data

from biozoo.cli import main

# ------------------------------------------------------------------------------- the files


def _bad_byte(tmp, paths=None):
    data = bytearray("".join(pubtator_document(3000 + i) for i in range(4)).encode())
    data[data.index(b"3001|a|") + 12] = 0xFF
    path = tmp / "bad_byte.pubtator"
    path.write_bytes(bytes(data))
    return path


def _write(name, text):
    def make(tmp, paths=None):
        path = tmp / name
        path.write_text(text, encoding="utf-8")
        return path

    return make


def _binary(tmp, paths=None):
    path = tmp / "weights.bin"
    path.write_bytes(b"\x00\x01\x02\xff" * 64)
    return path


def _docs_folder(tmp, paths=None):
    folder = tmp / "docs"
    folder.mkdir()
    (folder / "a.pubtator").write_text(pubtator_document(4000), encoding="utf-8")
    return folder


def _evil_nemo(tmp, paths=None):
    path = tmp / "evil.nemo"
    with tarfile.open(path, "w") as tar:
        member = tarfile.TarInfo("../escaped.txt")
        member.size = 6
        tar.addfile(member, io.BytesIO(b"gotcha"))
    return path


def _ner_folder(name, **texts):
    def make(tmp, paths=None):
        folder = tmp / name
        folder.mkdir(parents=True)
        for split, text in texts.items():
            (folder / f"{split}.tsv").write_text(text, encoding="utf-8")
        return folder

    return make


def _no_test(tmp, paths=None):
    return write_ner_data(tmp / "NCBI-disease-no-test", splits=("train", "devel"))


def _pickled_bin(tmp, paths=None):
    import torch

    from biozoo import testing as H

    directory = H.save_hf_directory(H.make_model("bert", "BertModel"), tmp / "evil_hf", "bin")
    state = torch.load(directory / "pytorch_model.bin", weights_only=True)
    state["evil"] = _RunsCode(str(tmp / "pwned"))
    with open(directory / "pytorch_model.bin", "wb") as f:
        pickle.dump(state, f)
    return directory


class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


BIOC_OUTSIDE = ('<?xml version="1.0"?>\n<collection><source>s</source><date>d</date><key>k</key>\n'
                '<document><id>9</id><passage><offset>0</offset><text>Abc</text>\n'
                '<annotation id="a"><infon key="type">X</infon><location offset="1" length="9"/><text>bc</text>'
                '</annotation></passage></document>\n</collection>\n')
QUIRK = "5|t|Intersex cancer\n5|a|A study.\n5\t0\t8\tintersex\tDisease\tD1\n5\t9\t15\tcancer\tDisease\tD2\n\n"

def _copy(key):
    """A copy of a kit folder, for the rows that aim at their own input: the kit stays intact even
    where an older biozoo would destroy what the row targets."""

    def make(tmp, paths):
        return Path(shutil.copytree(paths[key], tmp / f"{key}_copy"))

    return make


FILES = {
    "cut_gz": lambda tmp, paths=None: damaged_gzip_inputs(tmp)[0],
    "bad_byte": _bad_byte,
    "bad_start": _write("bad_start.pubtator", "1|t|Aspirin helps.\n1|a|It does.\n1\t0x\t7\tAspirin\tChemical\n\n"),
    "bad_end": _write("bad_end.pubtator", "1|t|Aspirin helps.\n1|a|It does.\n1\t0\tseven\tAspirin\tChemical\n\n"),
    "overlap_bioc": _write("overlap.bioc.xml", BIOC_OVERLAP),
    "outside_bioc": _write("outside.bioc.xml", BIOC_OUTSIDE),
    "quirk": _write("quirk.pubtator", QUIRK),
    "surrogate_jsonl": _write("surrogate.jsonl", '{"id": "1", "text": "a \\ud800 b"}\n'),
    "bad_jsonl": _write("bad.jsonl", '{"id": "1", "text": "fine"}\nnot json at all\n'),
    "no_text_jsonl": _write("no_text.jsonl", '{"id": "1", "title": "no text key"}\n'),
    "binary": _binary,
    "html_xml": _write("page.xml", "<?xml version='1.0'?><html><body/></html>"),
    "no_title": _write("no_title.pubtator", "7|a|An abstract alone.\n\n"),
    "broken_xml": _write("broken.bioc.xml", "<collection><source>x</source><document><id>1</id>\n<passage>"),
    "empty_file": _write("empty.txt", ""),
    "docs_folder": _docs_folder,
    "evil_nemo": _evil_nemo,
    "pickled_bin": _pickled_bin,
    "empty_train": _ner_folder("empty/NCBI-disease", train="\n\n", test="the\tO\n"),
    "no_test": _no_test,
    "mixed_tags": _ner_folder("mixed/NCBI-disease", train="a\tB\nb\tI\n\nc\tB-Disease\n"),
    "bad_label": _ner_folder("badlabel/NCBI-disease", train="a\tB-Disease\nb\tX-Disease\n"),
    "yaml_config": _write("model_config.yaml", "hidden_size: [not, a, number\n"),
    "bad_re": _write("re_test.tsv", "sentence\tlabel\nonly one column\n"),
    "bad_pred": _write("pred.txt", "CPR:3\n"),
    "squad_bad": _write("dev.json", '{"data": 3}'),
    "bioc_json_bad": _write("bad.bioc.json", '{"documents": [{"passages": []}]}'),
    **{f"{key}_copy": _copy(key) for key in ("tiny_hf", "preset", "ner_model", "ner_data")},
}


# ------------------------------------------------------------------------------- the table


@dataclass
class Case:
    id: str
    command: str
    rc: int
    says: str  # a regular expression the error output must match
    files: tuple = ()
    keep: tuple = ("project", "notes", "old_output", "tiny_hf", "preset", "ner_model", "ner_data")
    absent: tuple = ("out",)  # must not exist afterwards (rc != 0)
    cwd: str = None
    env: dict = field(default_factory=dict)
    hub: str = None  # "server" or "unreachable": huggingface_hub points there
    never: str = None  # a regular expression the error output must not match
    slow: bool = False


def c(*args, **kwargs):
    return Case(*args, **kwargs)


FT = "finetune ner --preset {preset} --data {ner_data} --output {out}"
ANN = "annotate --model {ner_model} --no-progress"

CASES = [
    # --- 1. outputs never replace what biozoo did not write
    c("convert-into-a-project-folder", "convert --from hf {tiny_hf} --output {project}", 2,
      r"--output .*work_project exists and was not written by biozoo \(it holds src, thesis.tex\)"),
    c("convert-into-the-working-folder", "convert --from hf {tiny_hf} --output .", 2, r"is \(or holds\) the working folder",
      cwd="project"),
    c("convert-into-a-parent-of-the-working-folder", "convert --from hf {tiny_hf} --output ..", 2,
      r"is \(or holds\) the working folder", cwd="project"),
    c("convert-onto-its-input", "convert --from hf {tiny_hf_copy} --output {tiny_hf_copy}", 2, r"is the input .*tiny_hf",
      files=("tiny_hf_copy",), keep=("tiny_hf_copy",)),
    c("convert-onto-its-input-even-with-overwrite", "convert --from hf {tiny_hf_copy} --output {tiny_hf_copy} --overwrite",
      2, r"is the input", files=("tiny_hf_copy",), keep=("tiny_hf_copy",)),
    c("convert-into-a-file", "convert --from hf {tiny_hf} --output {notes}", 2, r"notes.txt is a file, not a folder"),
    c("convert-through-a-symlink", "convert --from hf {tiny_hf} --output {link}", 2, r"is a symbolic link"),
    c("convert-onto-an-earlier-output", "convert --from hf {tiny_hf} --output {old_output}", 2,
      r"holds an earlier biozoo output; pass --overwrite"),
    c("convert-over-a-folder-with-overwrite", "convert --from hf {tiny_hf} --output {project} --overwrite", 2,
      r"was not written by biozoo .*even with --overwrite"),
    c("convert-a-preset-onto-itself", "convert --from hf {preset_copy} --output {preset_copy} --overwrite", 2, r"is the input",
      files=("preset_copy",), keep=("preset_copy",)),
    c("export-hf-into-a-project-folder", "export hf --preset {preset} --output {project}", 2, r"was not written by biozoo"),
    c("export-hub-into-a-project-folder", "export hub --preset {preset} --output {project}", 2,
      r"was not written by biozoo"),
    c("export-garden-into-a-project-folder", "export garden --preset {preset} --output {project}", 2,
      r"was not written by biozoo"),
    c("export-onnx-into-a-project-folder", "export onnx --preset {preset} --output {project}", 2,
      r"was not written by biozoo"),
    c("export-litert-into-a-project-folder", "export litert --preset {preset} --output {project}", 2,
      r"was not written by biozoo"),
    c("export-hf-onto-its-model", "export hf --model {ner_model_copy} --output {ner_model_copy} --overwrite", 2,
      r"is the input .*ner_model", files=("ner_model_copy",), keep=("ner_model_copy",)),
    c("export-hub-onto-its-model", "export hub --model {ner_model_copy} --output {ner_model_copy} --overwrite", 2,
      r"is the input", files=("ner_model_copy",), keep=("ner_model_copy",)),
    c("export-hub-into-a-file", "export hub --model {ner_model} --output {notes}", 2, r"is a file"),
    c("export-hf-onto-an-earlier-output", "export hf --preset {preset} --output {old_output}", 2, r"pass --overwrite"),
    c("export-onnx-into-the-working-folder", "export onnx --preset {preset} --output .", 2, r"working folder",
      cwd="project"),
    c("finetune-into-a-project-folder", FT.replace("{out}", "{project}"), 2, r"was not written by biozoo"),
    c("finetune-onto-its-data", "finetune ner --preset {preset} --data {ner_data_copy} --output {ner_data_copy} "
      "--overwrite", 2, r"is the input .*ner_data_copy", files=("ner_data_copy",), keep=("ner_data_copy",)),
    c("finetune-onto-its-preset", "finetune ner --preset {preset_copy} --data {ner_data} --output {preset_copy} "
      "--overwrite", 2, r"is the input", files=("preset_copy",), keep=("preset_copy",)),
    c("finetune-onto-a-finished-model", FT.replace("{out}", "{ner_model_copy}"), 2,
      r"ner_model_copy holds an earlier biozoo output; pass --overwrite", files=("ner_model_copy",),
      keep=("ner_model_copy",)),
    c("finetune-into-the-working-folder", FT.replace("{out}", "."), 2, r"working folder", cwd="project"),
    c("finetune-into-a-file", FT.replace("{out}", "{notes}"), 2, r"is a file"),
    c("finetune-seeds-into-a-project-folder", FT.replace("{out}", "{project}") + " --seeds 2", 2,
      r"was not written by biozoo"),
    c("pretrain-into-a-project-folder", "pretrain mlm --corpus {corpus} --preset {preset} --output {project} --steps 2", 2,
      r"was not written by biozoo"),
    c("distill-into-a-project-folder", "distill --teacher {preset} --student-config '{{\"num_layers\": 1}}' --method "
      "distilbert --corpus {corpus} --output {project} --steps 2", 2, r"was not written by biozoo"),
    c("card-over-a-file", "card bioformer_8l --output {notes}", 2, r"notes.txt exists; pass --overwrite"),

    # --- 2. hyperparameters no run can use
    c("learning-rate-nan", FT + " --learning-rate nan", 2, r"--learning-rate nan: give a finite number above 0"),
    c("learning-rate-zero", FT + " --learning-rate 0", 2, r"--learning-rate 0.0: give a finite number above 0"),
    c("learning-rate-negative", FT + " --learning-rate=-1e-5", 2, r"--learning-rate -1e-05"),
    c("learning-rate-inf", FT + " --learning-rate inf", 2, r"--learning-rate inf"),
    c("epochs-zero", FT + " --epochs 0", 2, r"--epochs 0.0: give a finite number above 0"),
    c("epochs-negative", FT + " --epochs=-1", 2, r"--epochs -1.0"),
    c("epochs-nan", FT + " --epochs nan", 2, r"--epochs nan"),
    c("epochs-not-a-number", FT + " --epochs three", 2, r"argument --epochs: invalid float value: 'three'"),
    c("batch-size-zero", FT + " --batch-size 0", 2, r"--batch-size 0: give a whole number of at least 1"),
    c("batch-size-negative", FT + " --batch-size=-8", 2, r"--batch-size -8"),
    c("max-seq-length-zero", FT + " --max-seq-length 0", 2, r"--max-seq-length 0"),
    c("max-seq-length-tiny", FT + " --max-seq-length 4", 2, r"--max-seq-length 4: give at least 8"),
    c("warmup-ratio-above-one", FT + " --warmup-ratio 1.5", 2, r"--warmup-ratio 1.5: give a finite number from 0 to 1"),
    c("weight-decay-negative", FT + " --weight-decay=-0.1", 2, r"--weight-decay -0.1"),
    c("layer-decay-zero", FT + " --layer-decay 0", 2, r"--layer-decay 0.0: give a finite number above 0 and at most 1"),
    c("clip-norm-nan", FT + " --clip-norm nan", 2, r"--clip-norm nan"),
    c("checkpoint-every-zero", FT + " --checkpoint-every 0", 2, r"--checkpoint-every 0"),
    c("steps-per-execution-zero", FT + " --steps-per-execution 0", 2, r"--steps-per-execution 0"),
    c("seeds-zero", FT + " --seeds 0", 2, r"--seeds 0: give a whole number of at least 1"),
    c("micro-batches-zero", FT + " --micro-batches 0", 2, r"argument --micro-batches: '0' is neither auto"),
    c("finetune-unknown-kind", "finetune tagging --preset {preset} --data {ner_data} --output {out}", 2,
      r"argument kind: invalid choice: 'tagging'"),
    c("pretrain-steps-zero", "pretrain mlm --corpus {corpus} --preset {preset} --output {out} --steps 0", 2,
      r"--steps 0: give a whole number"),
    c("pretrain-learning-rate-nan", "pretrain mlm --corpus {corpus} --preset {preset} --output {out} --learning-rate nan", 2,
      r"--learning-rate nan"),
    c("distill-batch-size-zero", "distill --teacher {preset} --student-config '{{\"num_layers\": 1}}' --method "
      "distilbert --corpus {corpus} --output {out} --batch-size 0", 2, r"--batch-size 0"),

    # --- 3-7. documents: damage, quirks, formats, outputs
    c("damaged-gz-stops-without-skip-bad", ANN + " {cut_gz} --output {out}.jsonl", 2,
      r"cut.pubtator.gz: broken gzip data after [\d,]+ bytes of text \(the file ends inside", files=("cut_gz",),
      absent=("out",)),
    c("bad-byte-names-line-and-pmid", ANN + " {bad_byte} --output {out}.jsonl", 2,
      r"bad_byte.pubtator:6: PMID 3001: not UTF-8", files=("bad_byte",)),
    c("pubtator-start-not-an-integer", ANN + " {bad_start} --output {out}.jsonl", 2,
      r"bad_start.pubtator:3: PMID 1: malformed line: an annotation whose start '0x' is not an integer",
      files=("bad_start",)),
    c("pubtator-end-not-an-integer", ANN + " {bad_end} --output {out}.jsonl", 2,
      r"bad_end.pubtator:3: PMID 1: malformed line: an annotation whose end 'seven'", files=("bad_end",)),
    c("bioc-overlapping-passages-to-pubtator", ANN + " {overlap_bioc} --output {out}.pubtator", 2,
      r"document PMC1 .*its passages overlap \(title at 0-18, abstract at 10-28\)", files=("overlap_bioc",)),
    c("quirk-kept-and-told", ANN + " {quirk} --output {tmp}/quirk_out.jsonl", 0,
      r"quirk.pubtator:3: PMID 5: annotation 0-8 'intersex' does not match the text there: 'Intersex': that "
      r"annotation is dropped.*1 input annotation\(s\) dropped", files=("quirk",)),
    c("quirk-refused-with-strict", ANN + " {quirk} --strict --output {out}.jsonl", 2,
      r"quirk.pubtator:3: PMID 5: annotation 0-8 'intersex' does not match", files=("quirk",)),
    c("output-json-is-ambiguous", ANN + " {pubtator} --output {out}.json", 2,
      r"the extension .json names bioc-json or jsonl; give --output-format"),
    c("output-txt-is-ambiguous", ANN + " {pubtator} --output {out}.txt", 2, r"the extension .txt names pubtator"),
    c("output-csv-names-no-format", ANN + " {pubtator} --output {out}.csv", 2, r"the extension .csv names no output"),
    c("output-extension-contradicts-format", ANN + " {pubtator} --output {out}.bioc.xml --output-format jsonl", 2,
      r"names bioc-xml by its extension but --output-format is jsonl"),
    c("output-is-the-input", ANN + " {pubtator} --output {pubtator}", 2, r"good.pubtator is the input"),
    c("output-inside-the-input-folder", ANN + " {docs_folder} --output {docs_folder}/out.jsonl", 2,
      r"lies inside the input folder", files=("docs_folder",)),
    c("input-missing", ANN + " {tmp}/missing.pubtator --output {out}.jsonl", 2, r"input not found: .*missing.pubtator"),
    c("input-binary", ANN + " {binary} --output {out}.jsonl", 2, r"weights.bin: unknown format", files=("binary",)),
    c("input-html", ANN + " {html_xml} --output {out}.jsonl", 2, r"page.xml: unknown format: XML with root <html>",
      files=("html_xml",)),
    c("input-lone-surrogate", ANN + " {surrogate_jsonl} --output {out}.jsonl", 2,
      r"surrogate.jsonl:1: document 1: passage at 0: character 2 is a lone surrogate \(U\+D800\)",
      files=("surrogate_jsonl",)),
    c("input-jsonl-bad-line", ANN + " {bad_jsonl} --output {out}.jsonl", 2, r"bad.jsonl:2: not a JSON line",
      files=("bad_jsonl",)),
    c("input-jsonl-without-text", ANN + " {no_text_jsonl} --output {out}.jsonl", 2,
      r"no_text.jsonl:1: document 1 a document needs \"text\"", files=("no_text_jsonl",)),
    c("input-pubtator-without-title", ANN + " {no_title} --output {out}.jsonl", 2,
      r"no_title.pubtator:1: PMID 7: abstract line before the title line", files=("no_title",)),
    c("input-bioc-offsets-outside", ANN + " {outside_bioc} --output {out}.jsonl", 2,
      r"outside.bioc.xml:3: document 9: annotation 1-10 'bc': offsets 1-10 are outside", files=("outside_bioc",)),
    c("input-broken-xml", ANN + " {broken_xml} --output {out}.jsonl", 2, r"broken.bioc.xml:\d+: unparsable XML",
      files=("broken_xml",)),
    c("input-bioc-json-without-id", ANN + " {bioc_json_bad} --output {out}.jsonl", 2, r"document without an id",
      files=("bioc_json_bad",)),
    c("input-format-forced-wrong", ANN + " {pubtator} --input-format bioc-xml --output {out}.jsonl", 2,
      r"good.pubtator:1: unparsable XML"),
    c("output-format-unknown", ANN + " {pubtator} --output-format brat", 2, r"argument --output-format: invalid choice"),
    c("annotate-batch-size-zero", ANN + " {pubtator} --batch-size 0 --output {out}.jsonl", 2,
      r"--batch-size takes a number of sentences \(1 or more\) or auto, got '0'"),
    c("annotate-chunk-size-zero", ANN + " {pubtator} --chunk-size 0 --output {out}.jsonl", 2,
      r"chunk size and batch size must be positive"),
    c("cascade-of-one-model", "annotate {pubtator} --cascade {ner_model} --escalate-below 0.5 --output {out}.jsonl", 2,
      r"--cascade takes two models, SMALL,LARGE"),
    c("escalate-without-cascade", ANN + " {pubtator} --escalate-below 0.5 --output {out}.jsonl", 2,
      r"--escalate-below needs --cascade"),
    c("cascade-and-model", ANN + " {pubtator} --cascade {ner_model},{ner_model} --escalate-below 0.5", 2,
      r"--cascade SMALL,LARGE replaces --model"),
    c("beam-to-stdout", ANN + " {pubtator} --runner beam", 2, r"--runner beam writes shards into a folder"),
    c("annotate-unknown-model-name", "annotate {pubtator} --model no_such_model --output {out}.jsonl", 2,
      r"no_such_model"),
    c("annotate-with-a-missing-model-folder", "annotate {pubtator} --model {tmp}/nowhere/model --output {out}.jsonl", 2,
      r"No such directory: .*nowhere/model"),
    c("annotate-with-a-backbone", "annotate {pubtator} --model {preset} --no-progress --output {out}.jsonl", 2,
      r"preset"),
    c("annotate-empty-file", ANN + " {empty_file} --output {tmp}/empty_out.jsonl", 0, r"annotated 0 documents",
      files=("empty_file",)),
    c("damaged-gz-skip-bad-keeps-the-complete-documents", ANN + " {cut_gz} --skip-bad --output {tmp}/kept.jsonl", 0,
      r"the \d+ complete document\(s\) before it were read", files=("cut_gz",)),

    # --- errors that say what happened: the hub (a local stand-in), gs://, the cache
    c("hub-no-such-repository", "convert --from hf hf://org/missing --output {out}", 2,
      r"hf://org/missing@main: no such repository on http://127.0.0.1:\d+ \(HTTP 404\).*hf auth login.*nothing was "
      r"cached", hub="server"),
    c("hub-gated-repository", "convert --from hf hf://org/gated --output {out}", 2,
      r"hf://org/gated@main is a gated repository \(HTTP 401\): accept its conditions.*hf auth login", hub="server"),
    c("hub-private-repository", "convert --from hf hf://org/private --output {out}", 2,
      r"hf://org/private@main: access denied \(HTTP 403\).*log in", hub="server"),
    c("hub-no-such-revision", "convert --from hf hf://org/repo@nope --output {out}", 2,
      r"hf://org/repo@nope: the repository has no such revision \(HTTP 404\)", hub="server"),
    c("hub-server-error", "convert --from hf hf://org/broken --output {out}", 2,
      r"hf://org/broken@main: http://127.0.0.1:\d+ answered HTTP 500: try again later", hub="server"),
    c("hub-timeout", "convert --from hf hf://org/slow --output {out}", 2,
      r"hf://org/slow@main: http://127.0.0.1:\d+ did not answer within 1 s \(BIOZOO_HUB_TIMEOUT\)", hub="server"),
    c("hub-unreachable", "convert --from hf hf://org/repo --output {out}", 2,
      r"hf://org/repo@main: cannot reach http://127.0.0.1:\d+ \(.*\): check the network", hub="unreachable"),
    c("hub-unreachable-for-a-registry-name", "export hf --preset bioformer_8l --output {out}", 2,
      r"hf://bioformers/bioformer-8L@\w+: cannot reach", hub="unreachable"),
    c("hub-unreachable-default-aioner-is-not-offline", "annotate {pubtator} --no-progress --output {out}.jsonl", 2,
      r"Preset 'aioner_bioformer'|hf://\S+: cannot reach http://127.0.0.1", hub="unreachable", never=r"offline mode"),
    c("hub-offline-mode-names-its-variable", "convert --from hf hf://org/repo --output {out}", 2,
      r"offline mode is on \(BIOZOO_OFFLINE=1\)", hub="server", env={"BIOZOO_OFFLINE": "1"}),
    c("hub-annotate-model-missing", "annotate {pubtator} --model hf://org/missing --output {out}.jsonl", 2,
      r"hf://org/missing@main: no such repository", hub="server"),
    c("gs-model-one-line", "convert --from hf gs://biozoo-no-such-bucket-32/model --output {out}", 2,
      r"gs://biozoo-no-such-bucket-32/model/config.json .*\((NotFoundError|FailedPreconditionError|"
      r"PermissionDeniedError|\w+Error): ", slow=True),
    c("gs-input-one-line", ANN + " gs://biozoo-no-such-bucket-32/abstracts.pubtator --output {out}.jsonl", 2,
      r"gs://biozoo-no-such-bucket-32/abstracts.pubtator.*\(\w+Error: ", slow=True),
    # a folder output is written locally and renamed into place: not a local folder named "gs:"
    c("gs-output-folder-refused", "export hf --preset {tiny_hf} --output gs://biozoo-no-such-bucket-32/export", 2,
      r"--output gs://biozoo-no-such-bucket-32/export: biozoo writes this folder on a local disk.*gcloud storage cp"),
    c("gs-output-convert-refused", "convert --from hf {tiny_hf} --output gs://biozoo-no-such-bucket-32/preset", 2,
      r"--output gs://biozoo-no-such-bucket-32/preset: biozoo writes this folder on a local disk"),
    c("cache-not-writable", "export hf --preset {tiny_hf} --output {out}", 2,
      r"biozoo's cache BIOZOO_CACHE=/sys/biozoo-cache-32 cannot be written", env={"BIOZOO_CACHE": "/sys/biozoo-cache-32"}),

    # --- task kinds and data
    c("evaluate-re-with-a-ner-model", "evaluate re --model {ner_model} --data {re_data}", 2,
      r"ner_model is an ner model \(a token classifier\), not an re model \(a sequence classifier\)"),
    c("evaluate-qa-with-a-ner-model", "evaluate qa --model {ner_model} --data {re_data}", 2,
      r"is an ner model \(a token classifier\), not a qa model"),
    c("evaluate-without-data", "evaluate ner --model {ner_model}", 2, r"evaluate needs --data"),
    c("evaluate-missing-test-split", "evaluate ner --model {ner_model} --data {no_test}", 2,
      r"no 'test' split in .*NCBI-disease-no-test: looked for test.tsv, test.tsv.gz, test.txt, test.txt.gz", files=("no_test",)),
    c("evaluate-unknown-split", "evaluate ner --model {ner_model} --data {ner_data} --split final", 2,
      r"unknown split 'final'"),
    c("evaluate-a-backbone", "evaluate ner --model {preset} --data {ner_data}", 2,
      r"neither a model written by `biozoo finetune`"),
    c("evaluate-missing-model", "evaluate ner --model {tmp}/nowhere --data {ner_data}", 2, r"nowhere"),
    c("evaluate-documents-for-re", "evaluate re --model {ner_model} --documents {pubtator}", 2,
      r"--documents evaluates NER models only"),
    c("evaluate-bad-type-map", "evaluate ner --model {ner_model} --documents {pubtator} --type-map Disease", 2,
      r"--type-map: Disease is not FROM=TO"),
    c("evaluate-documents-strict-quirk", "evaluate ner --model {ner_model} --documents {quirk} --strict", 2,
      r"quirk.pubtator:3: PMID 5: annotation 0-8 'intersex' does not match", files=("quirk",)),
    c("finetune-empty-train", "finetune ner --preset {preset} --data {empty_train} --output {out}", 2,
      r"empty/NCBI-disease/train.tsv: split 'train' has no examples", files=("empty_train",)),
    c("finetune-missing-data", "finetune ner --preset {preset} --data {tmp}/nodata --output {out}", 2,
      r"no data folder at .*nodata \(biozoo packages the data folder ncbi-disease\)"),
    c("finetune-misspelt-packaged-data", "finetune ner --preset {preset} --data ncbi_disease --output {out}", 2,
      r"no data folder at ncbi_disease \(did you mean ncbi-disease\? biozoo packages the data folder"),
    c("finetune-mixed-tags", "finetune ner --preset {preset} --data {mixed_tags} --output {out}", 2,
      r"train.tsv:4: typed label 'B-Disease' in a file whose labels are bare", files=("mixed_tags",)),
    c("finetune-bad-label", "finetune ner --preset {preset} --data {bad_label} --output {out}", 2,
      r"train.tsv:2: label 'X-Disease' is not O, B, I", files=("bad_label",)),
    c("finetune-missing-preset", "finetune ner --preset {tmp}/nowhere --data {ner_data} --output {out}", 2,
      r"nowhere"),

    # --- conversions of bad or hostile checkpoints (nothing runs, nothing escapes, nothing is left)
    c("convert-missing-folder", "convert --from hf {tmp}/nowhere --output {out}", 2, r"No such directory"),
    c("convert-a-text-file", "convert --from hf {notes} --output {out}", 2, r"notes.txt is a file, not a model"),
    c("convert-a-keras-preset", "convert --from hf {preset} --output {out}", 2, r"is already a Keras preset"),
    c("convert-unknown-registry-name", "convert --from hf {tiny_hf} --output {out} --name no_such_model", 2,
      r"no_such_model"),
    c("convert-unknown-format", "convert --from onnx {tiny_hf} --output {out}", 2, r"argument --from: invalid choice"),
    c("convert-pickle-that-runs-code", "convert --from hf {pickled_bin} --output {out}", 2, r"refused",
      files=("pickled_bin",)),
    c("convert-nemo-escaping-its-folder", "convert --from megatron {evil_nemo} --output {out}", 2,
      r"evil.nemo.*\.\./escaped.txt", files=("evil_nemo",)),
    c("convert-megatron-missing", "convert --from megatron {tmp}/missing.pt --output {out}", 2,
      r"no Megatron checkpoint at .*missing.pt"),
    c("convert-tf1-missing", "convert --from tf1 {tmp}/missing/model.ckpt --output {out}", 2, r"missing"),
    c("convert-gluon-not-params", "convert --from gluon {notes} --output {out}", 2, r"notes.txt"),
    c("convert-megatron-bad-yaml", "convert --from megatron {binary} --config {yaml_config} --output {out}", 2,
      r"weights.bin", files=("binary", "yaml_config")),

    # --- exports and scores
    c("export-hub-seq-length-too-long", "export hub --preset {preset} --output {out} --seq-length 100000", 2,
      r"--seq-length 100000 exceeds the model's 64 positions"),
    c("export-onnx-max-f1-drop-without-data", "export onnx --model {ner_model} --output {out} --max-f1-drop 1", 2,
      r"needs dev data"),
    c("export-litert-backbone-with-data", "export litert --preset {preset} --output {out} --data {ner_data}", 2,
      r"a backbone preset has no task metric"),
    c("export-hf-missing-model", "export hf --model {tmp}/nowhere --output {out}", 2, r"nowhere"),
    c("export-garden-unknown-name", "export garden --preset no_such_model --output {out}", 2, r"no_such_model"),
    c("info-unknown-name", "info no_such_model", 2, r"no_such_model"),
    c("score-re-bad-gold", "score re --gold {bad_re} --pred {bad_pred}", 2, r"re_test.tsv:2", files=("bad_re", "bad_pred")),
    c("score-qa-bad-data", "score qa --data {squad_bad} --pred {squad_bad}", 2, r"dev.json scored with .*dev.json: ",
      files=("squad_bad",)),
    c("score-ner-missing-gold", "score ner --gold {tmp}/missing.pubtator --pred {pubtator}", 2, r"missing.pubtator"),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id, marks=[pytest.mark.slow] if case.slow else [])
                                  for case in CASES])
def test_catalogue(case, work, request, capsys, monkeypatch):
    paths = dict(work.paths)
    for name in case.files:
        paths[name] = str(FILES[name](work.tmp, paths))
    if case.hub:
        hub = request.getfixturevalue("hub")
        hub.use(hub.url if case.hub == "server" else hub.unreachable)
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    if case.id == "cache-not-writable":
        try:
            os.makedirs("/sys/biozoo-cache-32")
        except OSError:
            pass
        else:  # pragma: no cover - a machine where /sys is writable
            pytest.skip("/sys is writable here: no read-only folder to point BIOZOO_CACHE at")
    if case.cwd:
        monkeypatch.chdir(paths[case.cwd])
    monkeypatch.setattr(tempfile, "tempdir", str(work.tmp / "system-tmp"))  # what a conversion leaves in /tmp
    (work.tmp / "system-tmp").mkdir()
    before = {key: tree_digest(paths[key]) for key in case.keep}
    argv = [part.format(**paths) for part in shlex.split(case.command)]
    try:
        rc = main(argv)
    except SystemExit as exit_:  # argparse
        rc = exit_.code
    err = capsys.readouterr().err
    assert rc == case.rc, err[-2000:]
    assert re.search(case.says, err, re.S), f"{case.says!r} not in:\n{err[-2000:]}"
    assert case.never is None or not re.search(case.never, err), err[-2000:]
    if rc:
        lines = [line for line in err.splitlines() if line.startswith("biozoo") and ": error: " in line]
        assert len(lines) <= 1 and "Traceback" not in err, err[-2000:]
        for key in case.absent:  # nothing written
            assert not any(Path(p).exists() for p in (paths[key], paths[key] + ".jsonl", paths[key] + ".pubtator",
                                                      paths[key] + ".bioc.xml")), key
    assert leftovers(work.tmp) == [] and leftovers(paths["project"]) == []
    assert list((work.tmp / "system-tmp").iterdir()) == []  # no temporary folder left behind
    for key, digest in before.items():  # nothing deleted or changed
        assert tree_digest(paths[key]) == digest, f"{key} changed"
    assert not (work.tmp / "pwned").exists() and not (work.tmp / "escaped.txt").exists()


def test_the_catalogue_is_large():
    assert len(CASES) + len(API_CASES) >= 104 and len({case.id for case in CASES}) == len(CASES)


# ----------------------------------------------------------------------------- the API


def _annotate(texts):
    def call(kit):
        from biozoo.tasks import load_task

        return load_task(str(kit.ner_model)).task.annotate(texts)

    return call


def _classify(texts):
    def call(kit):
        from biozoo.tasks.sequence_classifier import SequenceClassifier

        return SequenceClassifier.from_preset(str(kit.preset), label_names=["a", "b"]).predict_labels(texts)

    return call


def _from_preset(handle):
    def call(kit):
        import biozoo

        return biozoo.from_preset(handle)

    return call


def _read(inputs, **options):
    def call(kit):
        from biozoo.documents import read_documents

        return list(read_documents(inputs, **options))

    return call


API_CASES = [
    ("annotate-a-bare-string", _annotate("BRCA1 mutations cause breast cancer."), TypeError,
     r"texts must be a list of strings, got a string: wrap one text in a list"),
    ("annotate-none", _annotate([None]), TypeError, r"texts\[0\] is NoneType, not a string"),
    ("annotate-bytes", _annotate([b"BRCA1"]), TypeError, r"texts\[0\] is bytes, not a string: decode it"),
    ("annotate-bytes-alone", _annotate(b"BRCA1"), TypeError, r"got bytes"),
    ("annotate-lone-surrogate", _annotate(["BRCA1 \udcff mutations"]), ValueError,
     r"texts\[0\] holds a lone surrogate \(U\+DCFF\) at character 6"),
    ("annotate-a-number", _annotate(7), TypeError, r"texts must be a list of strings, got int"),
    ("classify-a-bare-string", _classify("one text"), TypeError, r"got a string"),
    ("classify-none", _classify(["fine", None]), TypeError, r"texts\[1\] is NoneType"),
    ("from-preset-none", _from_preset(None), TypeError, r"must be a string or path"),
    ("from-preset-missing-folder", _from_preset("./nowhere/model"), FileNotFoundError,
     r"No such directory: ./nowhere/model"),
    ("from-preset-bad-hf-handle", _from_preset("hf://only-one-part"), ValueError, r"Bad HF handle"),
    ("read-documents-missing", _read(["nowhere.pubtator"]), FileNotFoundError, r"input not found: nowhere.pubtator"),
    ("read-documents-unknown-format", _read(["x"], fmt="conll"), ValueError, r"unknown input format 'conll'"),
]


@pytest.mark.parametrize("name, call, error, says", API_CASES, ids=[case[0] for case in API_CASES])
def test_api_catalogue(name, call, error, says, kit):
    with pytest.raises(error, match=says):
        call(kit)


def test_annotate_keeps_one_text_whole(kit):
    """The refusal is no loss: the same text in a list gives entities with offsets into it."""
    from biozoo.tasks import load_task

    text = "the gene cancer protein"
    result = load_task(str(kit.ner_model)).task.annotate([text])
    assert len(result) == 1 and result[0]["text"] == text
    assert all(text[e["start"]:e["end"]] == e["text"] for e in result[0]["entities"])
