"""`biozoo annotate` over documents: sentences that keep every character, exact offsets on every
shared document, several models, overlaps, gold kept apart, errors that name the document."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from biozoo import testing as H
from biozoo.cli import main
from biozoo.documents import Annotation, Document, Passage, read_documents
from biozoo.documents.sentences import split_sentences

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "aioner"


@pytest.fixture(scope="module")
def aioner_preset(tmp_path_factory):
    from biozoo.convert.aioner import convert_aioner

    root = FIXTURES / "pretrained_models"
    target = tmp_path_factory.mktemp("aioner") / "softmax"
    convert_aioner(root / "AIONER" / "Bioformer-softmax-AIONER.h5", root / "bioformer-cased-v1.0", target,
                   (FIXTURES / "AIO_label.vocab").read_text().split(), "softmax", False, progress=False)
    return str(target)


@pytest.fixture(scope="module")
def tagger_dir(tmp_path_factory):
    """A random BertForTokenClassification (transformers' own), labels for two types."""
    labels = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    model = H.make_model("bert", "BertForTokenClassification", num_labels=len(labels),
                         id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)},
                         architectures=["BertForTokenClassification"])
    return str(H.save_hf_directory(model, tmp_path_factory.mktemp("ner") / "hf"))


@pytest.mark.parametrize("text,expected", [
    ("Mice got 5 mg/kg i.v. (n = 24). Fig. 3B shows it.", ["Mice got 5 mg/kg i.v. (n = 24).", "Fig. 3B shows it."]),
    ("Levels fell, e.g. in rats (p < 0.05). Smith et al. reported it. E. coli grew.",
     ["Levels fell, e.g. in rats (p < 0.05).", "Smith et al. reported it.", "E. coli grew."]),
    ("2,4-dinitrophenol (DNP) was given vs. saline. It worked!", ["2,4-dinitrophenol (DNP) was given vs. saline.", "It worked!"]),
    ("Title without period\n\nAbstract starts here.", ["Title without period", "Abstract starts here."]),
    ("  Trailing and leading space.  ", ["Trailing and leading space."]),
    ("", []),
])
def test_sentences_respect_biomedical_abbreviations(text, expected):
    assert [text[s:e] for s, e in split_sentences(text)] == expected


def test_sentences_cover_every_character_of_every_shared_passage(shared_data):
    """No text is lost: between sentences only whitespace, sentences in order."""
    paths = sorted((shared_data / "documents").glob("*.PubTator")) + [shared_data / "documents" / "example_pmc.BioC.xml"]
    passages = 0
    for document in read_documents(paths):
        for passage in document.passages:
            spans = split_sentences(passage.text)
            position = 0
            for start, end in spans:
                assert position <= start < end <= len(passage.text)
                assert passage.text[position:start].strip() == "", (document.id, passage.offset, start)
                position = end
            assert passage.text[position:].strip() == ""
            passages += 1
    assert passages > 1200


def check_offsets(documents):
    count = 0
    for document in documents:
        for p in document.predictions:
            assert document.text_at(p.start, p.end) == p.text and p.text.strip() == p.text, (document.id, p)
            assert document.text[p.start:p.end] == p.text
            count += 1
    return count


def test_every_prediction_indexes_the_document_text(shared_data, aioner_preset, tagger_dir):
    from biozoo.annotate import AnnotationRun, load_annotator

    files = [shared_data / "documents" / name for name in ("NCBIdisease_Test.PubTator", "example.PubTator", "example_pmc.BioC.xml")]
    run = AnnotationRun([load_annotator(aioner_preset)], progress=False)
    annotated = list(run.annotate(read_documents(files)))
    assert len(annotated) == 105 and check_offsets(annotated) > 5000
    assert run.documents == 105 and run.entities == sum(len(d.predictions) for d in annotated)
    tagged = list(AnnotationRun([load_annotator(tagger_dir)], progress=False).annotate(
        read_documents([shared_data / "documents" / "BC5CDR_Test.PubTator"])))
    assert len(tagged) == 500 and check_offsets(tagged) > 1000
    assert all(len(d.existing_annotations()) > 0 for d in tagged)  # gold kept, apart


def test_overlap_rules():
    from biozoo.annotate import resolve_overlaps

    a = Annotation(0, 10, "Gene", "x" * 10, 0.5, "m1")
    b = Annotation(5, 20, "Disease", "x" * 15, 0.4, "m2")
    c = Annotation(21, 25, "Chemical", "x" * 4, None, "m2")
    assert resolve_overlaps([b, a, c], "keep") == [a, b, c]
    assert resolve_overlaps([a, b, c], "longest") == [b, c]
    assert resolve_overlaps([a, b, c], "score") == [a, c]
    with pytest.raises(ValueError, match="overlaps must be"):
        resolve_overlaps([a], "biggest")


def test_a_prediction_outside_every_passage_names_the_document():
    document = Document("PMID9", [Passage(0, "Aspirin."), Passage(20, "Later text.")], source_format="bioc-xml")
    with pytest.raises(ValueError, match="PMID9.*5-22"):
        document.text_at(5, 22)


def write_pubtator(path, documents):
    path.write_text("".join(f"{i}|t|{t}\n{i}|a|{a}\n" + "".join(f"{i}\t{s}\t{e}\t{(t + ' ' + a)[s:e]}\t{k}\n" for s, e, k in anns)
                            + "\n" for i, t, a, anns in documents), encoding="utf-8")


def test_cli_two_models_bioc_out_gold_apart(tmp_path, aioner_preset, tagger_dir, capsys):
    source = tmp_path / "in.pubtator"
    write_pubtator(source, [("11", "Cisplatin nephrotoxicity in β-thalassemia.", "Müller et al. gave 5 mg/kg i.v. doses.",
                             [(0, 9, "Chemical")]), ("12", "BRCA1 in breast cancer", "No abstract text.", [])])
    out = tmp_path / "out.json"
    assert main(["annotate", "--model", aioner_preset, "--model", tagger_dir, "--output-format", "bioc-json",
                 "--output", str(out), "--no-progress", str(source)]) == 0
    assert "annotated 2 documents" in capsys.readouterr().err
    documents = list(read_documents([out]))
    assert [d.id for d in documents] == ["11", "12"]
    for document in documents:  # biozoo's BioC marks its predictions (annotator "biozoo:MODEL"): read back apart
        assert {aioner_preset, tagger_dir} <= {a.model for a in document.predictions}
    gold = documents[0].existing_annotations()
    assert [(a.start, a.end, a.type, a.model) for a in gold] == [(0, 9, "Chemical", None)]
    # PubTator output cannot keep gold apart: refused, and nothing written
    bad = tmp_path / "out.pubtator"
    assert main(["annotate", "--model", aioner_preset, "--output-format", "pubtator", "--output", str(bad),
                 "--no-progress", str(source)]) == 2
    assert "drop" in capsys.readouterr().err and not bad.exists()
    assert main(["annotate", "--model", aioner_preset, "--output-format", "pubtator", "--output", str(bad),
                 "--drop-existing", "--no-progress", str(source)]) == 0
    again = list(read_documents([bad]))
    assert [a.model for d in again for a in d.predictions] == []  # PubTator predictions read back as annotations
    assert all(d.text_at(a.start, a.end) == a.text for d in again for a in d.existing_annotations())


def test_cli_a_document_the_output_cannot_hold_stops_the_run_or_is_skipped_alone(tmp_path, tagger_dir, capsys):
    """A form feed (text from a PDF) cannot be in XML: with --skip-bad that document alone is
    skipped and counted, the others written (the run stopped, nothing written, before)."""
    source = tmp_path / "in.txt"
    source.write_text("Aspirin was given.\nPage one\x0cpage two of the text.\nFever fell.\n", encoding="utf-8")
    out = tmp_path / "out.bioc.xml"
    assert main(["annotate", "--model", tagger_dir, "--output", str(out), "--no-progress", str(source)]) == 2
    assert "document 2 (" in capsys.readouterr().err and not out.exists()
    assert main(["annotate", "--model", tagger_dir, "--output", str(out), "--no-progress", "--skip-bad",
                 str(source)]) == 0
    err = capsys.readouterr().err
    assert "cannot be written as BioC XML" in err and "annotated 2 documents" in err and "2 written" in err
    assert "1 bad document(s) skipped" in err
    written = list(read_documents([out]))
    assert [d.text for d in written] == ["Aspirin was given.", "Fever fell."]
    # PubTator cannot keep input annotations apart: an annotate run refuses a document that has any,
    # predictions or not, --skip-bad or not (skipped alone, those without predictions wrote the gold as
    # predictions); nothing written
    pubtator = tmp_path / "in.pubtator"
    write_pubtator(pubtator, [("1", "Aspirin.", "Given.", [(0, 7, "Chemical")]), ("2", "Fever.", "Fell.", [])])
    assert main(["annotate", "--model", tagger_dir, "--output", str(tmp_path / "out.pubtator"), "--no-progress",
                 "--skip-bad", str(pubtator)]) == 2
    err = capsys.readouterr().err
    assert "document 1 (" in err and "in.pubtator:1) carries 1 input annotation(s)" in err
    assert "--drop-existing" in err and not (tmp_path / "out.pubtator").exists()


def test_cli_reports_a_malformed_document_and_skips_it_only_when_asked(tmp_path, aioner_preset, capsys):
    source = tmp_path / "in.pubtator"
    source.write_text("1|t|Good title\n1|a|Good abstract.\n\n2|t|Bad\n2|a|Abstract\n2\t0\t99\tBad\tGene\n\n"
                      "3|t|Fine\n3|a|Fine too.\n", encoding="utf-8")
    assert main(["annotate", "--model", aioner_preset, "--no-progress", str(source)]) == 2
    err = capsys.readouterr().err
    assert "in.pubtator:6" in err and "2" in err
    assert main(["annotate", "--model", aioner_preset, "--no-progress", "--skip-bad", str(source)]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["id"] for line in captured.out.splitlines()] == ["1", "3"]
    assert "1 bad document(s) skipped" in captured.err


def test_evaluate_documents_equals_a_direct_count(tmp_path, shared_data, aioner_preset, capsys):
    """`evaluate ner --documents` = the model's predictions scored against the gold by offsets,
    counted here directly."""
    from biozoo.annotate import AnnotationRun, load_annotator

    gold_file = shared_data / "documents" / "NCBIdisease_Test.PubTator"
    assert main(["evaluate", "ner", "--model", aioner_preset, "--documents", str(gold_file), "--type-map",
                 "SpecificDisease=Disease,DiseaseClass=Disease,Modifier=Disease,CompositeMention=Disease"]) == 0
    result = json.loads(capsys.readouterr().out.splitlines()[-1])
    documents = list(AnnotationRun([load_annotator(aioner_preset)], progress=False).annotate(read_documents([gold_file])))
    gold = {(d.id, a.start, a.end) for d in documents for a in d.existing_annotations()}
    predicted = {(d.id, a.start, a.end) for d in documents for a in d.predictions if a.type == "Disease"}
    assert result["strict"]["per_type"]["Disease"]["tp"] == len(gold & predicted)
    assert result["strict"]["per_type"]["Disease"]["fn"] == len(gold - predicted)
    assert result["strict"]["per_type"]["Disease"]["fp"] == len(predicted - gold)
    assert result["mentions"]["gold"] == len(gold) == 960


def test_evaluate_documents_scores_a_gold_mention_whose_text_column_differs(tmp_path, shared_data, aioner_preset,
                                                                           capsys):
    """A gold line whose text column is not the document's text at its offsets is still a gold
    mention: scored by its offsets (as the official scorers do), counted, not dropped."""
    blocks = (shared_data / "documents" / "NCBIdisease_Test.PubTator").read_text(encoding="utf-8").split("\n\n")[:3]
    lines = "\n\n".join(blocks).split("\n")
    first = next(i for i, line in enumerate(lines) if line.count("\t") >= 4)
    fields = lines[first].split("\t")
    fields[3] = fields[3].upper() + "x"  # the text column no longer matches
    lines[first] = "\t".join(fields)
    gold_file = tmp_path / "gold.pubtator"
    gold_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    gold_lines = sum(line.count("\t") >= 4 for line in lines)
    command = ["evaluate", "ner", "--model", aioner_preset, "--documents", str(gold_file), "--type-map",
               "SpecificDisease=Disease,DiseaseClass=Disease,Modifier=Disease,CompositeMention=Disease"]
    assert main(command) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out.splitlines()[-1])
    assert result["mentions"]["gold"] == gold_lines and result["gold_text_mismatches"] == 1
    assert result["gold_dropped"] == 0 and fields[3] in captured.err
    assert main(command + ["--strict"]) == 2


def test_plain_text_lines_that_look_like_json_or_xml_are_text():
    from biozoo.documents import detect_format

    assert detect_format(b"[Treatment of anaemia in children]\nSecond title\n") == "text"
    assert detect_format(b"{Note} a line\n") == "text"
    assert detect_format(b"<i>Aspirin</i> helps.\n") == "text"
    assert detect_format(b'[\n {"source": "PMC", "documents": []}]') == "bioc-json"
    assert detect_format(b'<?xml version="1.0"?><collection>') == "bioc-xml"


def test_a_bad_type_map_is_one_clear_line(aioner_preset, example_pubtator, capsys):
    assert main(["evaluate", "ner", "--model", aioner_preset, "--documents",
                 str(example_pubtator), "--type-map", "SpecificDisease"]) == 2
    assert "--type-map: SpecificDisease is not FROM=TO" in capsys.readouterr().err


def test_a_document_a_model_cannot_annotate_is_named_and_skipped_only_when_asked():
    """An annotator's failure on one document of a chunk: the run stops naming that document, or
    with skip_bad reports it, counts it and annotates the others."""
    from biozoo.annotate import AnnotationRun

    class Picky:
        name = "picky"

        def annotate(self, documents):
            if any(d.id == "bad" for d in documents):
                raise ValueError("offsets 0-99 are outside the text")
            return [[(0, 3, "Gene", 0.9, None)] for _ in documents]

    def documents():
        return [Document(i, [Passage(0, f"ABC text {i}")], source=f"in.txt:{n}") for n, i in enumerate(["a", "bad", "c"], 1)]

    with pytest.raises(ValueError, match=r"in.txt:2 \(id bad\): offsets 0-99"):
        list(AnnotationRun([Picky()], progress=False).annotate(documents()))
    skipped = []
    run = AnnotationRun([Picky()], progress=False, skip_bad=True, on_skip=skipped.append)
    out = list(run.annotate(documents()))
    assert [d.id for d in out] == ["a", "c"] and run.skipped == 1 and "in.txt:2 (id bad)" in skipped[0]
    assert [(p.start, p.end, p.text, p.model) for p in out[0].predictions] == [(0, 3, "ABC", "picky")]


def test_worker_processes_annotate_as_one_process_does(tagger_dir, example_pubtator):
    """A tagger's host stages in 2 worker processes: every document, in order, with the entities
    one process gives; a document that fails in a worker (a lone surrogate its tokenizer refuses)
    is found again here, named and skipped, and the rest of its chunk kept."""
    from unittest import mock

    from biozoo.annotate import AnnotationRun, load_annotator, runner

    annotator = load_annotator(tagger_dir)
    bad = Document("bad", [Passage(0, "Aspirin \ud800 given.")], source="in.txt:7")

    def annotated(workers):
        documents = list(read_documents([example_pubtator]))
        documents.insert(2, bad)
        skipped = []
        run = AnnotationRun([annotator], progress=False, chunk_size=2, drop_existing=True, skip_bad=True,
                            on_skip=skipped.append, workers=workers)
        out = [(d.id, [(a.start, a.end, a.type, a.score, a.model) for a in d.predictions]) for d in run.annotate(documents)]
        return out, skipped, len(documents)

    alone, skipped_alone, count = annotated(0)
    environment = dict(os.environ)
    with mock.patch.object(runner, "predictions_in_workers", wraps=runner.predictions_in_workers) as pipeline:
        in_workers, skipped_in_workers, _ = annotated(2)
    assert pipeline.call_count == 1
    assert dict(os.environ) == environment  # the workers' settings stayed theirs
    assert len(alone) == count - 1 and sum(len(found) for _, found in alone) > 0
    assert in_workers == alone
    assert len(skipped_in_workers) == 1 and "in.txt:7 (id bad)" in skipped_in_workers[0]
    assert skipped_in_workers == skipped_alone


def test_a_worker_blocks_what_its_stages_never_use_before_keras_imports_it(tagger_dir, example_pubtator, tmp_path):
    """Keras imports scikit-learn, pandas and matplotlib, spaCy's thinc PyTorch (and CuPy), when
    they are installed, as here: seconds of a worker's start. A worker process starts from
    `biozoo._worker_start` (Keras not imported yet), blocks them (Keras not on PyTorch), and still
    splits and tokenizes; the pool starts its workers that way."""
    import importlib.util
    import pickle
    from unittest import mock

    from biozoo.annotate import AnnotationRun, _workers, load_annotator

    blocked = _workers.blocked_in_workers()
    assert set(blocked) == {"sklearn", "pandas", "matplotlib", "torch", "cupy", "cupyx"}
    stages = tmp_path / "stages.pickle"
    stages.write_bytes(pickle.dumps(_workers.TaggerHostStages(load_annotator(tagger_dir))))
    script = """if True:
        import sys
        import biozoo._worker_start as start
        assert "keras" not in sys.modules and "spacy" not in sys.modules
        start.start(sys.argv[1].split(","), "biozoo.annotate._workers:load_stages", open(sys.argv[2], "rb").read())
        from biozoo.annotate._workers import _prepare
        from biozoo.documents import read_documents
        batches, _ = _prepare(list(read_documents([sys.argv[3]])))
        print(*[sys.modules[name] is None for name in sys.argv[1].split(",")], "keras" in sys.modules,
              "thinc" in sys.modules, sum(len(indices) for indices, _ in batches) > 10)
    """
    done = subprocess.run([sys.executable, "-c", script, ",".join(blocked), str(stages), str(example_pubtator)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True"] * (len(blocked) + 3)
    for name in ("sklearn", "pandas", "matplotlib", "torch"):
        assert importlib.util.find_spec(name) is not None  # installed: what is blocked is there
    with mock.patch.object(_workers.concurrent.futures, "ProcessPoolExecutor",
                           wraps=_workers.concurrent.futures.ProcessPoolExecutor) as pool:
        run = AnnotationRun([load_annotator(tagger_dir)], progress=False, workers=1)
        assert len(list(run.annotate(read_documents([example_pubtator])))) > 0
    options = pool.call_args.kwargs
    assert options["initializer"].__module__ == "biozoo._worker_start"
    assert options["initargs"][:2] == (blocked, "biozoo.annotate._workers:load_stages")
    assert options["mp_context"].Process.__module__ == "biozoo._worker_start"


def test_workers_and_batch_size_options_take_a_count_or_auto(tmp_path, example_pubtator, capsys, monkeypatch):
    from biozoo._commands.annotate import host_workers, model_batch_size
    from biozoo.train import distribution

    assert host_workers("auto") == 0  # no GPU or TPU here: one process feeds the CPU's model
    assert model_batch_size("auto") == 64
    assert host_workers("3") == 3 and model_batch_size("512") == 512
    monkeypatch.setattr(distribution, "accelerators", lambda: ["gpu:0"])
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert host_workers("auto") == 14 and model_batch_size("auto") == 256
    monkeypatch.undo()
    for option, value, message in (("--workers", "two", "--workers takes a number of processes (0 or more) or auto, "
                                     "got 'two'"),
                                   ("--batch-size", "0", "--batch-size takes a number of sentences (1 or more) or "
                                    "auto, got '0'")):
        assert main(["annotate", option, value, "--no-progress", "--output", str(tmp_path / "out.jsonl"),
                     str(example_pubtator)]) == 2
        assert message in capsys.readouterr().err
        assert not (tmp_path / "out.jsonl").exists()


class _EndsTheProcessWhenUnpickled(str):
    """A passage text that kills the worker process which receives it."""

    def __reduce__(self):
        import os

        return (os._exit, (3,))


def test_with_workers_a_chunk_is_dispatched_to_the_model_before_the_one_before_is_read_back(tagger_dir,
                                                                                            example_pubtator):
    """The calling process keeps the accelerator busy: chunk k+1's batches are dispatched before
    chunk k's logits are read back (JAX and PyTorch on a GPU return at once from a dispatch), and
    the entities are those of one process."""
    from biozoo.annotate import AnnotationRun, load_annotator

    annotator = load_annotator(tagger_dir)
    documents = list(read_documents([example_pubtator]))
    alone = [[(a.start, a.end, a.type) for a in d.predictions]
             for d in AnnotationRun([annotator], progress=False, chunk_size=1).annotate(documents)]
    dispatch, events = annotator.task.dispatch_window_batches, []

    def recorded(batches):
        chunk = len([e for e in events if e[0] == "dispatch"])
        events.append(("dispatch", chunk))
        collect = dispatch(batches)

        def collected(per_window=True):
            events.append(("collect", chunk))
            time.sleep(0.2)  # a slow accelerator: the run says it waited for the model
            return collect(per_window)

        return collected

    annotator.task.dispatch_window_batches = recorded
    try:
        run = AnnotationRun([annotator], progress=False, chunk_size=1, workers=2)
        in_workers = [[(a.start, a.end, a.type) for a in d.predictions] for d in run.annotate(documents)]
    finally:
        del annotator.task.dispatch_window_batches
    assert in_workers == alone and sum(map(len, alone)) > 0
    chunks = len(documents)
    assert sorted(events) == sorted([("dispatch", k) for k in range(chunks)] + [("collect", k) for k in range(chunks)])
    for k in range(chunks - 1):
        assert events.index(("dispatch", k + 1)) < events.index(("collect", k)), events
    assert set(run.waited) == {"the workers' batches", "the model", "finished chunks"}
    assert run.waited["the model"] >= 0.2 * chunks and run.waited["the workers' batches"] > 0
    waits = run.summary().split("; this process waited ")[1]
    assert f"{run.waited['the model']:.1f} s for the model" in waits and "s for finished chunks" in waits
    one_process = AnnotationRun([annotator], progress=False)
    assert len(list(one_process.annotate(documents))) == chunks
    assert one_process.waited == {} and "waited" not in one_process.summary()  # no workers: no such line


def test_a_worker_that_dies_stops_the_run_with_what_to_do(tagger_dir):
    from biozoo.annotate import AnnotationRun, load_annotator

    documents = [Document("1", [Passage(0, "Aspirin was given.")], source="in.txt:1"),
                 Document("2", [Passage(0, _EndsTheProcessWhenUnpickled("Aspirin was given."))], source="in.txt:3"),
                 Document("3", [Passage(0, "Aspirin was given.")], source="in.txt:5")]
    run = AnnotationRun([load_annotator(tagger_dir)], progress=False, workers=1, chunk_size=1)
    with pytest.raises(RuntimeError) as raised:
        list(run.annotate(documents))
    message = str(raised.value)
    assert "worker process of the annotation ended abruptly" in message and "--workers 0" in message
    # the documents not annotated, named as the input has them (a run with two chunks in
    # flight and one being read: none yielded before the worker died)
    assert "with 3 documents in flight, not annotated: from 1 (in.txt:1) to 3 (in.txt:5)" in message


def test_an_input_error_comes_after_the_documents_read_before_it(tagger_dir, example_pubtator):
    """Workers hold chunks in flight: a reader that fails mid-stream still gets every complete
    chunk before it annotated and handed on, then its error, as in one process."""
    from biozoo.annotate import AnnotationRun, load_annotator

    documents = list(read_documents([example_pubtator]))

    def reader():
        yield from documents[:2]
        raise ValueError("in.pubtator:9: a broken line")

    out = []
    run = AnnotationRun([load_annotator(tagger_dir)], progress=False, chunk_size=1, workers=2)
    with pytest.raises(ValueError, match="in.pubtator:9"):
        for document in run.annotate(reader()):
            out.append(document.id)
    assert out == [d.id for d in documents[:2]]


def test_window_batches_pad_every_window_once_and_logits_come_back_per_window(tagger_dir):
    """The batches a worker pads hold each window once, as its ids then padding, in length
    buckets (or, `exact_lengths`, padded to their longest); the logits read per batch come back
    per window cut to its length."""
    from unittest import mock

    import biozoo.tasks.token_classifier as token_classifier
    from biozoo.annotate import load_annotator
    from biozoo.data.pipeline import BOUNDARIES
    from biozoo.tasks.token_classifier import logits_per_window, window_batches

    preprocessor = load_annotator(tagger_dir).task.preprocessor
    pad = preprocessor.tokenizer.pad_token_id
    rng = np.random.default_rng(0)
    windows = [rng.integers(pad + 1, 90, size=n).astype(np.int32) for n in (3, 17, 1, 40, 17, 5, 33, 2)]
    for exact in (False, True):
        batches = window_batches(preprocessor, windows, batch_size=3, exact_lengths=exact)
        seen = sorted(int(i) for indices, _ in batches for i in indices)
        assert seen == list(range(len(windows)))
        for indices, x in batches:
            longest = max(len(windows[i]) for i in indices)
            rows, length = x["token_ids"].shape
            # bucketed batches are filled to 3 rows with padding-only rows: one shape per bucket
            assert rows == (len(indices) if exact else 3)
            assert length == longest if exact else length == min(b for b in BOUNDARIES if b >= longest)
            for row, window in enumerate(indices):
                n = len(windows[window])
                assert np.array_equal(x["token_ids"][row, :n], windows[window])
                assert (x["token_ids"][row, n:] == pad).all()
                assert x["padding_mask"][row].tolist() == [1] * n + [0] * (length - n)
                assert not x["segment_ids"][row].any()
            assert (x["token_ids"][len(indices):] == pad).all() and not x["padding_mask"][len(indices):].any()
        assert not exact or any(x["token_ids"].shape[0] < 3 for _, x in batches)
        assert exact or any(len(indices) < 3 for indices, _ in batches)  # some filler rows were checked
        # logits whose every entry says (window, token), filler rows -1: each window's must come back in order
        batch_logits = [(indices, np.stack([np.stack([np.full(4, 1000 * w + t, np.float32)
                                                      for t in range(x["token_ids"].shape[1])])
                                            for w in list(indices) + [-1] * (x["token_ids"].shape[0] - len(indices))]))
                        for indices, x in batches]
        per_window = logits_per_window(batch_logits, [len(w) for w in windows])
        for w, logits in enumerate(per_window):
            assert logits.shape == (len(windows[w]), 4)
            assert logits[:, 0].tolist() == [1000 * w + t for t in range(len(windows[w]))]
    assert window_batches(preprocessor, [], 3) == [] and logits_per_window([], []) == []
    # nothing to predict: no prediction function built (a bfloat16 copy, or int8's converter)
    task = load_annotator(tagger_dir).task
    with mock.patch.object(token_classifier, "compiled_predict", side_effect=AssertionError("built")):
        assert task.dispatch_window_batches([])() == [] and task.window_logits([]) == []


def test_a_chunk_crosses_to_workers_as_padded_batches_and_bytes_that_finish_as_one_process(tagger_dir,
                                                                                         example_pubtator, monkeypatch):
    """What a worker hands the calling process is the chunk's padded model batches and the rest
    as bytes it passes on unread; the logits go back per batch, and the entities finished from
    them are one process's."""
    from biozoo.annotate import _workers, load_annotator
    from biozoo.annotate.annotators import Sentences
    from biozoo.tasks.token_classifier import token_windows, window_batches

    annotator = load_annotator(tagger_dir)
    stages = _workers.TaggerHostStages(annotator)
    monkeypatch.setattr(_workers, "_STAGES", stages)
    documents = list(read_documents([example_pubtator]))
    batches, state = _workers._prepare(documents)
    assert isinstance(state, bytes)
    sentences = Sentences.of(documents)
    _, windows = token_windows(annotator.task.preprocessor, sentences.texts)
    rows = {int(w): x["token_ids"][row] for indices, x in batches for row, w in enumerate(indices)}
    assert sorted(rows) == list(range(len(windows.token_ids)))
    assert all(np.array_equal(rows[w][:len(ids)], ids) for w, ids in enumerate(windows.token_ids))
    batch_logits = annotator.task.dispatch_window_batches(batches)(per_window=False)
    # what crosses back: the windows' rows, up to the longest one's tokens (filler rows and bucket padding cut)
    bucketed = window_batches(annotator.task.preprocessor, windows.token_ids, 4, exact_lengths=False)
    trimmed = annotator.task.dispatch_window_batches(bucketed)(per_window=False)
    for (indices, x), (_, logits) in zip(bucketed, trimmed):
        assert logits.shape[:2] == (len(indices), max(len(windows.token_ids[w]) for w in indices))
    assert any(x["token_ids"].shape != logits.shape[:2] for (_, x), (_, logits) in zip(bucketed, trimmed))
    per_window = annotator.task.dispatch_window_batches(batches)()
    expected = annotator.task.window_logits(windows.token_ids, annotator.batch_size)
    assert len(per_window) == len(expected) and all(a.shape == b.shape and np.allclose(a, b, atol=1e-5)
                                                    for a, b in zip(per_window, expected))
    found = _workers._finish(state, batch_logits, len(documents))
    assert found == annotator.annotate(documents) and sum(map(len, found)) > 0


def test_the_collector_is_paused_while_a_chunk_is_annotated_and_restored_after():
    import gc

    from biozoo.annotate import AnnotationRun
    from biozoo.annotate._gc import collection_paused

    seen = []

    class Recording:
        name = "recording"

        def annotate(self, documents):
            seen.append(gc.isenabled())
            return [[(0, 3, "Gene", 0.9, None)] for _ in documents]

    documents = [Document(str(i), [Passage(0, "ABC text")]) for i in range(5)]
    assert gc.isenabled()
    out = list(AnnotationRun([Recording()], progress=False, chunk_size=2).annotate(documents))
    assert len(out) == 5 and seen == [False, False, False] and gc.isenabled()
    with pytest.raises(ValueError, match="inside"):
        with collection_paused():
            raise ValueError("inside")
    assert gc.isenabled()
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()


def test_a_run_keeps_the_objects_it_started_with_out_of_full_collections_and_releases_them_after():
    """`gc.freeze` for the run: a full collection between chunks walks only what the run made
    (counted: the objects gc tracks in its collected generations), and the heap is as it was
    after the run, also when it ends in an error."""
    import gc

    from biozoo.annotate import AnnotationRun

    walked = []

    class Recording:
        name = "recording"

        def annotate(self, documents):
            walked.append((gc.get_freeze_count(), len(gc.get_objects())))
            return [[(0, 3, "Gene", 0.9, None)] for _ in documents]

    documents = [Document(str(i), [Passage(0, "ABC text")]) for i in range(4)]
    assert gc.get_freeze_count() == 0
    before = len(gc.get_objects())
    out = list(AnnotationRun([Recording()], progress=False, chunk_size=2).annotate(documents))
    assert len(out) == 4 and len(walked) == 2 and gc.get_freeze_count() == 0
    for frozen, tracked in walked:
        assert frozen >= before * 0.9 and tracked < before * 0.1, (frozen, tracked, before)

    class Failing(Recording):
        def annotate(self, documents):
            raise RuntimeError("the model failed")

    with pytest.raises(ValueError, match="the model failed"):
        list(AnnotationRun([Failing()], progress=False).annotate(documents[:1]))
    assert gc.get_freeze_count() == 0
    gc.freeze()  # frozen by someone else already: left as it is
    try:
        frozen = gc.get_freeze_count()
        list(AnnotationRun([Recording()], progress=False).annotate(documents[:1]))
        assert gc.get_freeze_count() > 0.9 * frozen  # not unfrozen by the run (a few objects freed meanwhile)
    finally:
        gc.unfreeze()


def test_an_earlier_runs_predictions_stay_unless_dropped(tmp_path, tagger_dir, capsys):
    """JSONL output annotated again by another model: the first model's predictions were replaced
    without a word; they stay (as the BioC chain keeps them), and go only with --drop-existing.
    The same model run again replaces its own (no duplicates)."""
    other = tmp_path / "other-model"
    shutil.copytree(tagger_dir, other)
    source = tmp_path / "in.txt"
    source.write_text("Aspirin caused fever in mice.\nNaproxen eased the pain.\n", encoding="utf-8")

    def predictions(path):
        return [sorted((a.start, a.end, a.type, a.model) for a in d.predictions) for d in read_documents([path])]

    def annotate(model, source, output, *options):
        assert main(["annotate", "--model", str(model), "--output", str(output), "--no-progress", *options,
                     str(source)]) == 0
        return predictions(output)

    first = annotate(tagger_dir, source, tmp_path / "first.jsonl")
    assert sum(map(len, first)) > 0 and {m for found in first for *_, m in found} == {tagger_dir}
    by_other = [[(s, e, t, str(other)) for s, e, t, _ in found] for found in first]  # the same weights
    assert annotate(other, tmp_path / "first.jsonl", tmp_path / "second.jsonl") == [
        sorted(a + b) for a, b in zip(first, by_other)]
    assert annotate(tagger_dir, tmp_path / "first.jsonl", tmp_path / "again.jsonl") == first
    assert annotate(other, tmp_path / "first.jsonl", tmp_path / "dropped.jsonl", "--drop-existing") == by_other
    capsys.readouterr()


class _FindsWord:
    """An annotator that finds every occurrence of `word` in each passage it reads."""

    name = "finder"

    def __init__(self, word):
        self.word = word

    def annotate(self, documents):
        return [[(p.offset + at, p.offset + at + len(self.word), "Thing", 1.0, None) for p in d.passages
                 for at in range(len(p.text)) if p.text.startswith(self.word, at)] for d in documents]


def test_an_entity_where_passages_overlap_with_different_texts_is_refused_not_misplaced():
    """Two passages at offset 0 (a BioC file whose tool set no offsets): the second passage's
    "mutation" was written with the first passage's text at its offsets."""
    from biozoo.annotate import AnnotationRun

    clash = Document("7", [Passage(0, "Diseases of the gut.", "title"), Passage(0, "One mutation here.", "abstract")],
                     source="in.xml:3")
    same = Document("8", [Passage(0, "A mutation here.", "title"), Passage(0, "A mutation here.", "abstract")])
    apart = Document("9", [Passage(0, "A mutation.", "title"), Passage(12, "B mutation.", "abstract")])
    with pytest.raises(ValueError, match=r"in\.xml:3 \(id 7\): document 7: an entity at 4-12 lies where passages "
                                         r"overlap with different texts \('ases of ', 'mutation'\)"):
        list(AnnotationRun([_FindsWord("mutation")], progress=False).annotate([clash]))
    skipped = []
    run = AnnotationRun([_FindsWord("mutation")], progress=False, skip_bad=True, on_skip=skipped.append)
    done = list(run.annotate([clash, same, apart]))
    assert [d.id for d in done] == ["8", "9"] and len(skipped) == 1 and run.skipped == 1
    assert all(d.text_at(a.start, a.end) == a.text == "mutation" for d in done for a in d.predictions)
    assert [len(d.predictions) for d in done] == [2, 2]


def test_a_missing_input_or_an_empty_folder_is_named_before_any_model_loads(tmp_path, capsys, monkeypatch):
    """The model here cannot be loaded (an offline hub handle): the error is the input's, so it came first."""
    monkeypatch.setenv("BIOZOO_OFFLINE", "1")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / ".hidden").write_text("1|t|x\n\n")
    for missing, said in ((tmp_path / "missing.xml.gz", "input not found"), (tmp_path / "empty", "holds no file")):
        assert main(["annotate", str(missing), "--model", "hf://nobody/none", "--output", str(tmp_path / "o.jsonl"),
                     "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert said in err and str(missing) in err and "nobody" not in err, err


def test_an_input_without_documents_is_told(tmp_path, tagger_dir, capsys):
    (tmp_path / "empty.txt").write_text("")
    assert main(["annotate", str(tmp_path / "empty.txt"), "--model", tagger_dir, "--output",
                 str(tmp_path / "o.jsonl"), "--no-progress"]) == 0
    assert f"warning: no document in {tmp_path / 'empty.txt'}" in capsys.readouterr().err


def test_a_linker_failure_names_the_document_and_keeps_the_error():
    """The linker's error (a KeyError) stops the run as a ValueError naming the document, the
    linker's error its cause; with skip_bad only that document is left out."""
    from biozoo.annotate import AnnotationRun

    class FailsOnTwo:
        def link_documents(self, documents):
            if any(d.id == "2" for d in documents):
                raise KeyError("dictionary lookup failed")
            return documents

    def documents():
        return [Document(i, [Passage(0, f"A mutation {i}.")], source=f"in.txt:{i}") for i in ("1", "2", "3")]

    with pytest.raises(ValueError, match=r"in\.txt:2 \(id 2\): linking: 'dictionary lookup failed'") as raised:
        list(AnnotationRun([_FindsWord("mutation")], progress=False, linker=FailsOnTwo()).annotate(documents()))
    assert isinstance(raised.value.__cause__, KeyError)
    run = AnnotationRun([_FindsWord("mutation")], progress=False, linker=FailsOnTwo(), skip_bad=True, on_skip=print)
    assert [d.id for d in run.annotate(documents())] == ["1", "3"]
    assert (run.documents, run.entities, run.skipped) == (2, 2, 1)
    assert [letter["id"] for letter in run.dead_letters] == ["2"]


def test_a_job_given_lists_equals_the_job_given_tuples():
    """argparse and JSON give lists: the job holds tuples, so it is hashable (Beam's workers look
    their loaded models up by job) and equal to the job built from tuples."""
    from biozoo.annotate import AnnotationJob

    listed = AnnotationJob(models=["a", "b"], entity_types=["Gene"], link=["Gene=ncbi-gene"])
    assert listed == AnnotationJob(models=("a", "b"), entity_types=("Gene",), link=("Gene=ncbi-gene",))
    assert hash(listed) == hash(AnnotationJob(models=("a", "b"), entity_types=("Gene",), link=("Gene=ncbi-gene",)))
    cascade = AnnotationJob(cascade=["small", "large"], escalate_below=0.5)
    assert {cascade: 1}[AnnotationJob(cascade=("small", "large"), escalate_below=0.5)] == 1


def test_an_input_file_named_twice_is_refused_naming_it_before_any_model_loads(tmp_path, capsys, monkeypatch):
    """A folder and a file in it, or a link to a file also given: its documents would be annotated twice."""
    monkeypatch.setenv("BIOZOO_OFFLINE", "1")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.pubtator").write_text("1|t|Aspirin.\n1|a|Fever.\n\n")
    (tmp_path / "link.pubtator").symlink_to(folder / "a.pubtator")
    for inputs in ([folder, folder / "a.pubtator"], [folder / "a.pubtator", tmp_path / "link.pubtator"]):
        assert main(["annotate", *map(str, inputs), "--model", "hf://nobody/none", "--output",
                     str(tmp_path / "o.jsonl"), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert f"input file {inputs[1]} is given twice" in err and "nobody" not in err, err
        assert not (tmp_path / "o.jsonl").exists()


def test_evaluate_documents_scores_only_the_evaluated_models_predictions(tmp_path, shared_data, tagger_dir, capsys):
    """Gold documents in annotate's JSONL output carry an earlier run's predictions: they are dropped
    (counted and told), so the scores equal those on the same gold without them."""
    from biozoo.annotate import AnnotationRun
    from biozoo.annotate.evaluation import score_documents
    from biozoo.documents import write_documents

    gold = list(read_documents([shared_data / "documents" / "NCBIdisease_Test.PubTator"]))[:5]
    write_documents(gold, tmp_path / "gold.pubtator", "pubtator")
    earlier = list(AnnotationRun([_FindsWord("the")], progress=False).annotate(read_documents([tmp_path / "gold.pubtator"])))
    write_documents(earlier, tmp_path / "earlier.jsonl", "jsonl")
    carried = sum(d.text.count("the") for d in gold)  # every "the" (passages do not overlap): a hand count
    assert carried == sum(len(d.predictions) for d in read_documents([tmp_path / "earlier.jsonl"])) > 10
    clean = score_documents(tagger_dir, [tmp_path / "gold.pubtator"], progress=False)
    with_earlier = score_documents(tagger_dir, [tmp_path / "earlier.jsonl"], progress=False)
    assert f"note: {carried} prediction(s) the gold documents carried" in capsys.readouterr().err
    assert (clean["earlier_predictions_dropped"], with_earlier["earlier_predictions_dropped"]) == (0, carried)
    assert with_earlier["strict"] == clean["strict"] and with_earlier["approximate"] == clean["approximate"]
    assert with_earlier["mentions"] == clean["mentions"]
