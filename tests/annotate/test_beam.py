"""`biozoo annotate --runner beam` and cascade inference: the Beam pipeline gives plain
`annotate`'s annotations; a killed run resumes to the uninterrupted run's output with every
document once; bad documents are dead-lettered and counted; the cascade's confidence equals one
computed from transformers' own model; calibration's chosen threshold is what the cascade does."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("apache_beam")

from biozoo import testing as H  # noqa: E402
from biozoo.annotate import AnnotationJob  # noqa: E402
from biozoo.cli import main  # noqa: E402
from biozoo.documents import read_documents  # noqa: E402

LABELS = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
REPO = Path(__file__).resolve().parents[2]


def tagger(directory, seed):
    import torch

    model = H.make_model("bert", "BertForTokenClassification", seed=seed, num_labels=len(LABELS),
                         id2label=dict(enumerate(LABELS)), label2id={l: i for i, l in enumerate(LABELS)},
                         architectures=["BertForTokenClassification"])
    with torch.no_grad():  # confident on most words, unsure on some: a cascade has work to do
        model.classifier.weight.normal_(0, 1.5 if seed == 0 else 0.3)
        model.classifier.bias.copy_(torch.tensor([2.0, 0.0, 0.0, 0.0, 0.0]))
    return str(H.save_hf_directory(model, directory))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("cascade")
    return tagger(root / "small", 0), tagger(root / "large", 1)


@pytest.fixture(scope="module")
def corpus(shared_data):
    return [shared_data / "documents" / "NCBIdisease_Test.PubTator", shared_data / "documents" / "BC5CDR_Test.PubTator"]


def plain(job, files):
    """Plain `annotate` (AnnotationRun) over each file: the documents with their predictions."""
    out = []
    for path in files:
        out.extend(job.run(progress=False).annotate(read_documents([path])))
    return out


def run_beam(job, files, output, **options):
    from biozoo.annotate.beam import annotate_corpus

    return annotate_corpus(job, [str(f) for f in files], str(output), progress=False, **options)


def predictions(document):
    """(start, end, type, text, score) of a document's predictions, read back from any format."""
    found = document.predictions or [a for a in document.existing_annotations() if a.infons.get("annotator")]
    return [(a.start, a.end, a.type, a.text, a.score if a.score is not None else float(a.infons.get("score", "nan")))
            for a in found]


def test_beam_equals_plain_annotate_on_the_shared_documents_pubtator(tmp_path, models, corpus):
    from biozoo.annotate.shards import ShardStore

    job = AnnotationJob(models=(models[0],), output_format="pubtator", drop_existing=True, chunk_size=64)
    summary = run_beam(job, corpus, tmp_path / "beam")
    expected = plain(job, corpus)
    assert (summary["read"], summary["annotated"], summary["dead_lettered"]) == (600, 600, 0)
    assert summary["entities"] == sum(len(d.predictions) for d in expected) > 1000
    from biozoo.documents import encode_documents

    store = ShardStore(tmp_path / "beam", "pubtator")
    shards = b"".join(Path(store.path(m["shard"])).read_bytes() for m in store.manifests())
    assert shards == encode_documents(expected, "pubtator")[0]  # the same bytes, document by document


def test_beam_equals_plain_annotate_on_the_shared_documents_bioc(tmp_path, models, corpus):
    from biozoo.annotate.shards import ShardStore

    job = AnnotationJob(models=(models[0],), output_format="bioc-xml", chunk_size=64)
    run_beam(job, corpus, tmp_path / "beam")
    expected = plain(job, corpus)
    got = list(ShardStore(tmp_path / "beam", "bioc-xml").documents())
    assert [d.id for d in got] == [d.id for d in expected] and len(got) == 600
    for ours, theirs in zip(got, expected):
        a, b = predictions(ours), predictions(theirs)
        assert [x[:4] for x in a] == [x[:4] for x in b], ours.id
        np.testing.assert_allclose([x[4] for x in a], [x[4] for x in b], atol=1e-5)
        gold = [[(g.start, g.end, g.type, g.concept_id, g.model) for g in d.existing_annotations()] for d in (ours, theirs)]
        assert gold[0] == gold[1]  # the gold kept, apart from the predictions


def write_bad_pubtator(path):
    path.write_text("1|t|Good title on cisplatin\n1|a|Good abstract.\n\n2|t|Bad\n2|a|Abstract\n2\t0\t99\tBad\tGene\n\n"
                    "3|t|Fine\n3|a|Fine too, renal failure.\n", encoding="utf-8")
    return path


def command(models, files, output, *extra):
    return [sys.executable, "-m", "biozoo", "annotate", "--model", models[0], "--runner", "beam", "--output",
            str(output), "--output-format", "pubtator", "--drop-existing", "--chunk-size", "8", "--no-progress",
            *extra, *map(str, files)]


def shard_contents(root):
    from biozoo.annotate.shards import ShardStore

    store = ShardStore(root, "pubtator")
    return {m["key"]: (m["ids"], Path(store.path(m["shard"])).read_bytes() if m["shard"] else b"")
            for m in store.manifests()}


@pytest.mark.slow
def test_a_killed_run_resumes_to_the_uninterrupted_output(tmp_path, models, corpus):
    files = [*corpus, write_bad_pubtator(tmp_path / "bad.pubtator")]
    job = AnnotationJob(models=(models[0],), output_format="pubtator", drop_existing=True, chunk_size=8)
    whole = run_beam(job, files, tmp_path / "whole")
    # the same command, SIGKILLed once some chunks are committed, then run again
    output = tmp_path / "killed"
    process = subprocess.Popen(command(models, files, output), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True, cwd=REPO)
    manifests = output / "manifests"
    deadline = time.time() + 300
    while time.time() < deadline and process.poll() is None:
        if manifests.is_dir() and len(os.listdir(manifests)) >= 3:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be killed: " + process.stderr.read().decode()[-2000:]
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    committed = len(os.listdir(manifests))
    assert 3 <= committed < whole["chunks"] and not (output / "summary.json").exists()
    again = subprocess.run(command(models, files, output), capture_output=True, text=True, cwd=REPO)
    assert again.returncode == 0, again.stderr[-3000:]
    summary = json.loads(again.stdout.strip().splitlines()[-1])
    assert summary["this_run"]["chunks_already_done"] >= committed - 1  # the one in flight may be redone
    assert shard_contents(output) == shard_contents(tmp_path / "whole")
    # every document exactly once; the bad one dead-lettered with its reason; the counts add up
    ids = [i for ids, _ in shard_contents(output).values() for i in ids]
    expected = [d.id for d in read_documents(files, skip_bad=True, on_skip=lambda m: None)]
    assert sorted(ids) == sorted(expected) and len(ids) == 602
    assert summary["read"] == summary["annotated"] + summary["dead_lettered"] == 603
    assert (summary["dead_lettered"], summary["duplicate_ids"]) == (1, 0)
    (letter,) = [json.loads(line) for p in (output / "dead-letters").iterdir() for line in p.read_text().splitlines()]
    assert letter["stage"] == "read" and "bad.pubtator:6" in letter["reason"]
    assert {k: v for k, v in summary.items() if k != "this_run"} == {k: v for k, v in whole.items() if k != "this_run"}


def test_failed_inference_is_dead_lettered_then_retried_and_other_options_are_refused(tmp_path, models, monkeypatch):
    from biozoo.annotate import beam

    source = write_bad_pubtator(tmp_path / "in.pubtator")
    job = AnnotationJob(models=(models[0],), output_format="jsonl", chunk_size=1)
    original = beam.ChunkModelHandler._annotate

    def failing(self, chunk, model):
        if chunk.index == 1:
            raise RuntimeError("worker out of memory")
        return original(self, chunk, model)

    monkeypatch.setattr(beam.ChunkModelHandler, "_annotate", failing)
    first = run_beam(job, [source], tmp_path / "out")
    assert (first["read"], first["annotated"], first["dead_lettered"], first["incomplete_chunks"]) == (3, 1, 2, 1)
    letters = list(beam.ShardStore(tmp_path / "out", "jsonl").dead_letters())
    assert {(l["stage"], l["id"]) for l in letters} == {("read", "2"), ("inference", "3")}
    assert [l["reason"] for l in letters if l["stage"] == "inference"] == [
        "inference failed for the chunk: RuntimeError: worker out of memory"]
    monkeypatch.setattr(beam.ChunkModelHandler, "_annotate", original)
    second = run_beam(job, [source], tmp_path / "out")
    assert (second["read"], second["annotated"], second["dead_lettered"], second["incomplete_chunks"]) == (3, 2, 1, 0)
    assert second["this_run"]["chunks_already_done"] == 1  # the chunk of document 1; the failed one was retried
    with pytest.raises(ValueError, match="chunk_size: 1 there, 2 now"):
        run_beam(AnnotationJob(models=(models[0],), output_format="jsonl", chunk_size=2), [source], tmp_path / "out")


def reference_confidence(model_dir, texts):
    """The lowest word-first-token top probability per text, from transformers' own model and
    tokenizer (a word starts at a token without the ## prefix), in a child process."""
    script = f"""
import json, sys, torch, transformers
tok = transformers.AutoTokenizer.from_pretrained({model_dir!r})
model = transformers.AutoModelForTokenClassification.from_pretrained({model_dir!r}).eval()
out = []
for text in json.loads(sys.stdin.read()):
    enc = tok(text, return_tensors="pt")
    with torch.no_grad():
        probs = model(**enc).logits[0].softmax(-1)[1:-1]
    tokens = tok.convert_ids_to_tokens(enc["input_ids"][0])[1:-1]
    starts = [i for i, t in enumerate(tokens) if not t.startswith("##")]
    top = probs[starts].sort(-1).values
    out.append([float(top[:, -1].min()), float((top[:, -1] - top[:, -2]).min())])
print(json.dumps(out))
"""
    done = subprocess.run([sys.executable, "-c", script], input=json.dumps(texts), capture_output=True, text=True,
                          check=True)
    return np.array(json.loads(done.stdout))


def test_cascade_confidence_equals_transformers_and_escalates_below_the_threshold(models, corpus):
    from biozoo.annotate import load_annotator, load_cascade
    from biozoo.annotate.annotators import Sentences

    documents = list(read_documents([corpus[0]]))[:20]
    texts = Sentences.of(documents).texts
    small = load_annotator(models[0])
    # transformers reads one window: the sentences that fit the tiny model's positions (biozoo's windows cover the rest)
    fits = [t for t in texts if len(small.task.preprocessor.tokenizer.token_spans([t])[0]) <= 62]
    assert len(fits) >= 40
    reference = reference_confidence(models[0], fits)
    for column, measure in enumerate(("probability", "margin")):
        _, confidence = small.tag(fits, measure)
        np.testing.assert_allclose(confidence, reference[:, column], atol=1e-5)
    confidence = np.array(small.tag(texts, "probability")[1])
    threshold = float(np.median(confidence))
    cascade = load_cascade(*models, threshold)
    found = cascade.annotate(documents)
    escalate = confidence < threshold
    assert cascade.escalated == escalate.sum() and 0 < cascade.escalated < len(texts)
    # each sentence's entities come from the model the threshold names
    large = load_annotator(models[1])
    sentences = Sentences.of(documents)
    small_entities, _ = small.tag(sentences.texts)
    large_entities, _ = large.tag(sentences.texts)
    chosen = [l if e else s for s, l, e in zip(small_entities, large_entities, escalate)]
    names = [models[1] if e else models[0] for e in escalate]
    expected = sentences.place(chosen, len(documents), names)
    assert [[(a, b, t, m) for a, b, t, _, m in doc] for doc in found] == \
        [[(a, b, t, m) for a, b, t, _, m in doc] for doc in expected]
    # the large model read the escalated sentences alone, in other batches than all of them: scores to 1e-5
    np.testing.assert_allclose([e[3] for doc in found for e in doc], [e[3] for doc in expected for e in doc], atol=1e-5)


def test_cascade_on_beam_equals_plain_cascade(tmp_path, models, corpus, capsys):
    out = tmp_path / "plain.pubtator"
    cascade = ["--cascade", ",".join(models), "--escalate-below", "0.8", "--output-format", "pubtator",
               "--drop-existing", "--chunk-size", "32", "--no-progress"]
    assert main(["annotate", *cascade, "--output", str(out), str(corpus[0])]) == 0
    err = capsys.readouterr().err
    assert "sentences escalated" in err
    assert main(["annotate", *cascade, "--runner", "beam", "--output", str(tmp_path / "beam"), str(corpus[0])]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert 0 < summary["escalated"] < summary["sentences"]
    assert f"{summary['escalated']} of {summary['sentences']} sentences escalated" in err
    shards = sorted((tmp_path / "beam" / "shards").iterdir())
    assert b"".join(p.read_bytes() for p in shards) == out.read_bytes()


def test_calibrate_picks_the_smallest_threshold_the_cascade_reaches_the_target_with(tmp_path, models, corpus, capsys):
    from biozoo.annotate import load_annotator, load_cascade
    from biozoo.annotate.annotators import Sentences

    documents = list(read_documents([corpus[0]]))[:30]
    source = tmp_path / "dev.pubtator"
    from biozoo.documents import write_documents

    write_documents(documents, source, "pubtator")
    plot = tmp_path / "curve.png"
    assert main(["cascade-calibrate", "--small", models[0], "--large", models[1], "--data", str(source),
                 "--target", "0.9", "--plot", str(plot)]) == 0
    captured = capsys.readouterr()
    chosen = json.loads(captured.out.strip().splitlines()[-1])
    assert "**chosen**" in captured.err and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the cascade at the chosen threshold keeps that share of the large model's entities, and just below it fewer
    texts = Sentences.of(documents).texts
    large, _ = load_annotator(models[1]).tag(texts)
    large_spans = {(i, e["start"], e["end"], e["type"]) for i, found in enumerate(large) for e in found}

    def agreement(threshold):
        cascade = load_cascade(*models, threshold)
        first = cascade.first_pass(documents)
        entities = list(first.entities)
        for i, found in zip(first.escalate, cascade.large.tag([texts[i] for i in first.escalate])[0]):
            entities[i] = found
        spans = {(i, e["start"], e["end"], e["type"]) for i, found in enumerate(entities) for e in found}
        return len(spans & large_spans) / len(large_spans), len(first.escalate) / len(texts), first.confidence

    kept, escalated, confidence = agreement(chosen["threshold"])
    assert kept == pytest.approx(chosen["agreement"]) and kept >= 0.9
    assert escalated == pytest.approx(chosen["escalated"]) and 0 < escalated < 1
    # P lies between two confidences: at the lower one, its sentences stay with the small model, below the target
    below = max(c for c in confidence if c < chosen["threshold"])
    assert abs(chosen["threshold"] - below) > 1e-7
    assert agreement(below)[0] < 0.9


def test_a_chunk_whose_every_document_fails_is_retried_not_dead_lettered_for_good(tmp_path, models, monkeypatch):
    """One bad document among good ones is a dead letter; all of a chunk's documents failing is the worker's
    fault (memory, device): the chunk goes to Beam's dead-letter output and the next run retries it."""
    from biozoo.annotate import beam, runner

    source = write_bad_pubtator(tmp_path / "in.pubtator")
    job = AnnotationJob(models=(models[0],), output_format="jsonl", chunk_size=1)
    original = runner.AnnotationRun._predictions

    def device_lost(self, chunk):
        if any(d.id == "3" for d in chunk):
            raise ValueError("device lost")
        return original(self, chunk)

    monkeypatch.setattr(runner.AnnotationRun, "_predictions", device_lost)
    first = run_beam(job, [source], tmp_path / "out")
    assert (first["annotated"], first["dead_lettered"], first["incomplete_chunks"]) == (1, 2, 1)
    # the failed chunk is not counted as committed
    assert (first["this_run"]["chunks_failed"], first["this_run"]["chunks_committed"]) == (1, first["chunks"] - 1)
    letters = [l for l in beam.ShardStore(tmp_path / "out", "jsonl").dead_letters() if l["stage"] == "inference"]
    assert len(letters) == 1 and letters[0]["reason"].startswith(
        "inference failed for the chunk: every document of the chunk failed in the model; the first: ")
    assert letters[0]["reason"].endswith("(id 3): device lost") and "Error" not in letters[0]["reason"]  # once
    monkeypatch.setattr(runner.AnnotationRun, "_predictions", original)
    second = run_beam(job, [source], tmp_path / "out")
    assert (second["annotated"], second["dead_lettered"], second["incomplete_chunks"]) == (2, 1, 0)


def test_a_cascade_chunk_whose_every_document_fails_in_the_small_model_is_retried(tmp_path, models, monkeypatch):
    """As without a cascade: the small model failing on each document of a chunk is the worker's fault, so
    the chunk is not committed as done with its documents dead-lettered for good."""
    from biozoo.annotate import beam
    from biozoo.annotate.annotators import CascadeAnnotator

    source = write_bad_pubtator(tmp_path / "in.pubtator")
    job = AnnotationJob(cascade=tuple(models), escalate_below=0.8, output_format="jsonl", chunk_size=1)
    original = CascadeAnnotator.first_pass

    def out_of_memory(self, documents):
        if any(d.id == "3" for d in documents):
            raise MemoryError("out of memory")
        return original(self, documents)

    monkeypatch.setattr(CascadeAnnotator, "first_pass", out_of_memory)
    first = run_beam(job, [source], tmp_path / "out")
    assert (first["annotated"], first["dead_lettered"], first["incomplete_chunks"]) == (1, 2, 1)
    letters = [l for l in beam.ShardStore(tmp_path / "out", "jsonl").dead_letters() if l["stage"] == "inference"]
    assert len(letters) == 1 and "every document of the chunk failed" in letters[0]["reason"]
    monkeypatch.setattr(CascadeAnnotator, "first_pass", original)
    second = run_beam(job, [source], tmp_path / "out")
    assert (second["annotated"], second["dead_lettered"], second["incomplete_chunks"]) == (2, 1, 0)


def test_a_document_the_output_cannot_hold_is_dead_lettered_and_the_run_resumable(tmp_path, models, capsys):
    """A form feed cannot be in BioC XML: that document is a dead letter of stage "write" and the
    others are committed (the Commit step raised before: the pipeline failed, on every rerun);
    an output folder inside an input folder is refused up front (its shards would be read as
    input by the next run, which then refused the folder)."""
    from biozoo.annotate import beam

    source = tmp_path / "corpus" / "in.txt"
    source.parent.mkdir()
    source.write_text("Aspirin was given.\nPage one\x0cpage two.\nFever fell.\n", encoding="utf-8")
    job = AnnotationJob(models=(models[0],), output_format="bioc-xml", chunk_size=2)
    summary = run_beam(job, [source], tmp_path / "out")
    assert (summary["read"], summary["annotated"], summary["dead_lettered"]) == (3, 2, 1)
    letters = list(beam.ShardStore(tmp_path / "out", "bioc-xml").dead_letters())
    assert [(l["stage"], l["id"]) for l in letters] == [("write", "2")]
    assert "cannot be written as BioC XML" in letters[0]["reason"]
    written = [d.text for shard in sorted((tmp_path / "out" / "shards").iterdir()) for d in read_documents([shard])]
    assert sorted(written) == ["Aspirin was given.", "Fever fell."]
    assert run_beam(job, [source], tmp_path / "out")["this_run"]["chunks_already_done"] == 2
    assert main(["annotate", "--runner", "beam", "--model", models[0], "--output", str(source.parent / "tagged"),
                 "--no-progress", str(source.parent)]) == 2
    assert "lies inside the input folder" in capsys.readouterr().err and not (source.parent / "tagged").exists()


def test_a_folder_that_is_no_jobs_output_is_refused_untouched(tmp_path, models):
    from biozoo.errors import OutputError

    source = write_bad_pubtator(tmp_path / "in.pubtator")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "summary.json").write_text('{"mine": 1}')
    (mine / "notes.txt").write_text("my notes")
    job = AnnotationJob(models=(models[0],), output_format="jsonl", chunk_size=2)
    with pytest.raises(OutputError, match=r"mine exists and holds notes.txt, summary.json, but no job.json"):
        run_beam(job, [source], mine)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt", "summary.json"]
    assert (mine / "summary.json").read_text() == '{"mine": 1}'
    empty = tmp_path / "empty"
    empty.mkdir()  # an empty folder is a new output
    assert run_beam(job, [source], empty)["read"] == 3


def beam_documents(output, output_format="jsonl"):
    """The documents of a Beam run's shards, in the order of its chunks."""
    from biozoo.annotate.shards import ShardStore

    return list(ShardStore(output, output_format).documents())


def test_a_document_the_large_model_cannot_read_is_dead_lettered_alone_as_plain_annotate_skips_it(
        tmp_path, models, corpus, monkeypatch):
    """The cascade's large model fails on one sentence: plain `annotate --skip-bad` skips that document
    alone; Beam dead-letters it alone and commits its chunk (the chunk failed on every run before)."""
    from biozoo.annotate import annotators, beam
    from biozoo.documents import write_documents

    documents = list(read_documents([corpus[0]]))[:6]
    documents[2].passages[1].text = documents[2].passages[1].text.replace("the", "POISON", 1)
    source = tmp_path / "six.jsonl"
    write_documents(documents, source, "jsonl")
    original = annotators.TaggerAnnotator.tag

    def tag(self, texts, measure=None):
        if self.name == models[1] and any("POISON" in t for t in texts):
            raise ValueError("cannot tokenize this sentence")
        return original(self, texts, measure)

    monkeypatch.setattr(annotators.TaggerAnnotator, "tag", tag)
    job = AnnotationJob(cascade=tuple(models), escalate_below=2.0, chunk_size=3)  # every sentence escalated
    skipped = []
    expected = list(job.run(progress=False, skip_bad=True, on_skip=skipped.append).annotate(read_documents([source])))
    assert len(expected) == 5 and len(skipped) == 1 and f"(id {documents[2].id}): cannot tokenize" in skipped[0]
    summary = run_beam(job, [source], tmp_path / "out")
    assert (summary["read"], summary["annotated"], summary["dead_lettered"], summary["incomplete_chunks"]) == (6, 5, 1, 0)
    (letter,) = beam.ShardStore(tmp_path / "out", "jsonl").dead_letters()
    assert (letter["id"], letter["stage"], letter["reason"]) == (documents[2].id, "annotate", skipped[0])
    got = beam_documents(tmp_path / "out")
    assert [d.id for d in got] == [d.id for d in expected]
    assert [[x[:4] for x in predictions(d)] for d in got] == [[x[:4] for x in predictions(d)] for d in expected]
    assert run_beam(job, [source], tmp_path / "out")["this_run"]["chunks_already_done"] == 2


def test_a_document_that_fails_on_its_own_data_alone_in_its_chunk_is_dead_lettered_for_good(tmp_path, models):
    """Passages that overlap with different texts, an entity found there (a one-document file, as PMC
    BioC files are): plain `annotate --skip-bad` skips it; Beam dead-letters it with the same reason
    and commits the chunk, not retried (it was failed for retry on every run before)."""
    from biozoo.annotate import beam

    folder = tmp_path / "in"
    folder.mkdir()
    clash = {"id": "PMC1", "passages": [{"offset": 0, "text": "Aspirin causes fibrosis in mice."},
                                        {"offset": 10, "text": "Cisplatin toxicity in rats here."}]}
    (folder / "one.jsonl").write_text(json.dumps(clash) + "\n")
    (folder / "two.jsonl").write_text(json.dumps({"id": "PMC2", "passages": [clash["passages"][0]]}) + "\n")
    job = AnnotationJob(models=(models[0],))
    skipped = []
    expected = list(job.run(progress=False, skip_bad=True, on_skip=skipped.append).annotate(read_documents([folder])))
    assert [d.id for d in expected] == ["PMC2"] and len(skipped) == 1 and "overlap with different texts" in skipped[0]
    first = run_beam(job, [folder], tmp_path / "out")
    assert (first["read"], first["annotated"], first["dead_lettered"], first["incomplete_chunks"]) == (2, 1, 1, 0)
    assert [(l["id"], l["stage"], l["reason"]) for l in beam.ShardStore(tmp_path / "out", "jsonl").dead_letters()] == [
        ("PMC1", "annotate", skipped[0])]
    assert [d.id for d in beam_documents(tmp_path / "out")] == ["PMC2"]
    again = run_beam(job, [folder], tmp_path / "out")
    assert again["this_run"] == {**again["this_run"], "chunks_committed": 0, "chunks_failed": 0, "chunks_already_done": 2}


def test_a_cascade_re_run_on_beam_replaces_its_earlier_predictions_as_plain_annotate_does(tmp_path, models, corpus):
    """Re-annotating a cascade's own JSONL output without --drop-existing: the cascade's earlier
    predictions are replaced (Beam kept them and added the new ones: each twice)."""
    from biozoo.documents import write_documents

    documents = list(read_documents([corpus[0]]))[:4]
    first = AnnotationJob(cascade=tuple(models), escalate_below=0.9, drop_existing=True)
    write_documents(first.run(progress=False).annotate(documents), tmp_path / "first.jsonl", "jsonl")
    carried = [predictions(d) for d in read_documents([tmp_path / "first.jsonl"])]
    assert sum(map(len, carried)) > 20
    job = AnnotationJob(cascade=tuple(models), escalate_below=0.9)
    expected = list(job.run(progress=False).annotate(read_documents([tmp_path / "first.jsonl"])))
    assert [[x[:4] for x in predictions(d)] for d in expected] == [[x[:4] for x in p] for p in carried]
    summary = run_beam(job, [tmp_path / "first.jsonl"], tmp_path / "out")
    got = beam_documents(tmp_path / "out")
    assert summary["entities"] == sum(map(len, carried))
    assert [[x[:4] for x in predictions(d)] for d in got] == [[x[:4] for x in predictions(d)] for d in expected]
    assert [[a.model for a in d.predictions] for d in got] == [[a.model for a in d.predictions] for d in expected]


def test_an_input_file_named_twice_is_refused_before_anything_runs_and_a_job_of_lists_runs(tmp_path, models):
    """A folder and a file in it: refused naming the file, nothing written (the chunks, keyed by path and
    index, collapsed: half the documents were counted). A job built from lists (JSON, argparse) runs."""
    folder = tmp_path / "in"
    folder.mkdir()
    source = write_bad_pubtator(folder / "five.pubtator")
    job = AnnotationJob(models=[models[0]], chunk_size=2)
    with pytest.raises(ValueError, match=f"input file {source} is given twice"):
        run_beam(job, [folder, source], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    summary = run_beam(job, [folder], tmp_path / "out")
    assert (summary["read"], summary["annotated"], summary["dead_lettered"]) == (3, 2, 1)


def test_beam_to_pubtator_dead_letters_a_document_with_input_annotations_as_plain_annotate_refuses_it(tmp_path):
    """PubTator cannot keep the input's annotations apart from predictions (plain annotate refuses
    the run): on Beam each such document is a dead letter of stage "write", naming --drop-existing,
    even where the model finds nothing (its gold would be written as the predictions); the others
    are committed, and --drop-existing writes them all."""
    import torch

    from biozoo.annotate import beam

    silent = H.make_model("bert", "BertForTokenClassification", seed=0, num_labels=len(LABELS),
                          id2label=dict(enumerate(LABELS)), label2id={l: i for i, l in enumerate(LABELS)},
                          architectures=["BertForTokenClassification"])
    with torch.no_grad():  # every token O: no predictions
        silent.classifier.weight.zero_()
        silent.classifier.bias.copy_(torch.tensor([20.0, 0.0, 0.0, 0.0, 0.0]))
    models = (str(H.save_hf_directory(silent, tmp_path / "silent")),)

    source = tmp_path / "in.pubtator"
    source.write_text("1|t|Aspirin was given.\n1|a|Fever fell.\n1\t0\t7\tAspirin\tChemical\tD001241\n\n"
                      "2|t|Ibuprofen was given.\n2|a|Pain fell.\n\n", encoding="utf-8")
    job = AnnotationJob(models=(models[0],), output_format="pubtator", chunk_size=8)
    summary = run_beam(job, [source], tmp_path / "out")
    assert (summary["read"], summary["annotated"], summary["dead_lettered"]) == (2, 1, 1)
    letters = list(beam.ShardStore(tmp_path / "out", "pubtator").dead_letters())
    assert [(letter["stage"], letter["id"]) for letter in letters] == [("write", "1")]
    assert "--drop-existing" in letters[0]["reason"]
    written = [d.id for shard in sorted((tmp_path / "out" / "shards").iterdir()) for d in read_documents([shard])]
    assert written == ["2"]
    dropped = AnnotationJob(models=(models[0],), output_format="pubtator", chunk_size=8, drop_existing=True)
    assert run_beam(dropped, [source], tmp_path / "dropped")["annotated"] == 2
