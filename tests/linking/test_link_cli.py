"""The command line: `annotate --link` (PubTator id column, BioC identifier, JSONL; plain and
Beam runs alike), `evaluate link`, `score ner --ids` and `finetune link`, each against values
worked out by hand or by the test."""

import json
from collections import Counter

import pytest

from biozoo import testing as H
from biozoo.cli import main
from biozoo.documents import read_documents

GOLD = ("1|t|Wilson disease (WD) and breast cancer.\n"
        "1|a|WD patients had heart attacks.\n"
        "1\t0\t14\tWilson disease\tDisease\tD006527\n"
        "1\t16\t18\tWD\tDisease\tD006527\n"
        "1\t24\t37\tbreast cancer\tDisease\tD001943|D009369\n"
        "1\t39\t41\tWD\tDisease\tD006527\n"
        "1\t55\t68\theart attacks\tDisease\tD009203\n\n")
DICTIONARY = "D006527\tWilson disease\nD006527\thepatolenticular degeneration\nD001943\tbreast neoplasms\n" \
             "D009203\tmyocardial infarction\nD009203\theart attack\n"


@pytest.fixture(scope="module")
def tagger_dir(tmp_path_factory):
    labels = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    model = H.make_model("bert", "BertForTokenClassification", num_labels=len(labels),
                         id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)},
                         architectures=["BertForTokenClassification"])
    return str(H.save_hf_directory(model, tmp_path_factory.mktemp("ner") / "hf"))


def test_evaluate_link_counts_by_hand(tmp_path, capsys):
    (tmp_path / "gold.pubtator").write_text(GOLD)
    (tmp_path / "dict.tsv").write_text(DICTIONARY)
    assert main(["evaluate", "link", "--model", "none", "--documents", str(tmp_path / "gold.pubtator"),
                 "--dictionary", str(tmp_path / "dict.tsv")]) == 0
    result = json.loads(capsys.readouterr().out)
    # Wilson disease: exact; WD twice: its long form (abbreviation); breast cancer: char 3-grams to breast
    # neoplasms (one of its two gold ids); heart attacks: char 3-grams to heart attack
    assert (result["correct"], result["mentions"]) == (5, 5) and result["methods"]["exact"] == {"mentions": 3, "correct": 3}
    assert main(["evaluate", "link", "--model", "none", "--documents", str(tmp_path / "gold.pubtator"),
                 "--dictionary", str(tmp_path / "dict.tsv"), "--abbreviations", "none"]) == 0
    assert json.loads(capsys.readouterr().out)["correct"] == 3  # "WD" alone is nothing's name
    # a gold mention whose text is not the document's at its offsets: dropped and counted, or refused
    (tmp_path / "gold.pubtator").write_text(GOLD.replace("\n\n", "\n1\t24\t30\tbreast\tDisease\tD001943\n"
                                                                  "1\t0\t6\tWilsen\tDisease\tD006527\n\n"))
    argv = ["evaluate", "link", "--model", "none", "--documents", str(tmp_path / "gold.pubtator"),
            "--dictionary", str(tmp_path / "dict.tsv")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["gold_dropped"] == 1 and result["mentions"] == 6 and "Wilsen" in captured.err
    assert main(argv + ["--strict"]) == 2
    assert "Wilsen" in capsys.readouterr().err


def test_evaluate_link_no_progress_reads_the_dictionary_without_a_bar(tmp_path, capsys):
    (tmp_path / "gold.pubtator").write_text(GOLD)
    for name, flags in (("shown", []), ("quiet", ["--no-progress"])):  # two files: each table is built, not cached
        (tmp_path / f"{name}.tsv").write_text(DICTIONARY)
        assert main(["evaluate", "link", "--model", "none", "--documents", str(tmp_path / "gold.pubtator"),
                     "--dictionary", str(tmp_path / f"{name}.tsv"), *flags]) == 0
        err = capsys.readouterr().err
        assert ("reading shown" in err) if name == "shown" else ("reading quiet" not in err and "\r" not in err)


def test_evaluate_link_gives_the_thresholded_and_the_top_candidate_accuracy(tmp_path, capsys):
    """At --threshold 0.99 the two char 3-gram links (breast cancer, heart attacks) give no id:
    accuracy 3 of 5; SapBERT's acc@1 scores the best candidate whatever its score: 5 of 5."""
    (tmp_path / "gold.pubtator").write_text(GOLD)
    (tmp_path / "dict.tsv").write_text(DICTIONARY)
    assert main(["evaluate", "link", "--model", "none", "--documents", str(tmp_path / "gold.pubtator"),
                 "--dictionary", str(tmp_path / "dict.tsv"), "--threshold", "0.99"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["correct"], result["mentions"], result["accuracy"]) == (3, 5, 60.0)
    assert result["top1_accuracy"] == 100.0 and result["unlinked"] == 2


def test_evaluate_link_of_no_gold_mention_of_the_types_is_an_error(tmp_path, capsys):
    (tmp_path / "gold.pubtator").write_text(GOLD.replace("\tDisease\t", "\tSpecificDisease\t"))
    (tmp_path / "dict.tsv").write_text(DICTIONARY)
    argv = ["evaluate", "link", "--model", "none", "--documents", str(tmp_path / "gold.pubtator"),
            "--dictionary", str(tmp_path / "dict.tsv")]
    assert main(argv + ["--types", "Disease"]) == 2
    assert "no gold mention of type Disease to link; the documents' types: {'SpecificDisease': 5}" in \
        capsys.readouterr().err
    assert main(argv + ["--types", "SpecificDisease"]) == 0
    assert json.loads(capsys.readouterr().out)["mentions"] == 5


def test_a_disease_dictionary_links_ncbi_diseases_types_by_default(shared_data, tmp_path):
    """`annotate --link ctd-diseases` and `evaluate link --dictionary ctd-diseases` link the types
    the table names for it: every type NCBI-disease's and BC5CDR's gold use for diseases."""
    from biozoo.linking import default_link_types

    for name in ("NCBIdisease_Test.PubTator", "BC5CDR_Test.PubTator"):
        types = {a.type for d in read_documents([str(shared_data / "documents" / name)]) for a in d.existing_annotations()}
        diseases = types - {"Chemical"}
        assert diseases and diseases <= set(default_link_types("ctd-diseases")), (name, diseases)
    (tmp_path / "mine.tsv").write_text(DICTIONARY)
    assert default_link_types(str(tmp_path / "mine.tsv")) == ("*",)


def test_a_link_whose_types_the_model_never_tags_is_told(tmp_path, tagger_dir, capsys):
    (tmp_path / "docs.pubtator").write_text("1|t|Wilson disease is rare.\n1|a|Aspirin helps.\n\n")
    (tmp_path / "dict.tsv").write_text(DICTIONARY)
    annotate(tmp_path, tagger_dir, "--link", f"Gene={tmp_path / 'dict.tsv'}", "--link-encoder", "none")
    err = capsys.readouterr().err
    assert "links mentions of type Gene, and the model tags Chemical, Disease: it will link nothing" in err
    assert "; 0 of 0 mentions linked" in err


def test_score_ner_ids_by_hand(tmp_path, capsys):
    (tmp_path / "gold.pubtator").write_text(GOLD)
    pred = ("1|t|Wilson disease (WD) and breast cancer.\n1|a|WD patients had heart attacks.\n"
            "1\t0\t14\tWilson disease\tDisease\tD006527\n"      # right
            "1\t16\t18\tWD\tDisease\tD000001\n"                 # wrong id
            "1\t31\t37\tcancer\tDisease\tD009369\n"             # overlaps breast cancer, right id: approximate only
            "1\t55\t68\theart attacks\tDisease\n\n")            # no id
    (tmp_path / "pred.pubtator").write_text(pred)
    assert main(["score", "ner", "--gold", str(tmp_path / "gold.pubtator"), "--pred", str(tmp_path / "pred.pubtator"),
                 "--ids"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["linked"]["strict"]["counts"] == {"gold": 5, "pred": 4, "tp": 1, "fp": 3, "fn": 4}
    assert result["linked"]["approximate"]["counts"]["tp"] == 2 and result["linked"]["pred_without_id"] == 1
    assert result["accuracy_at_1"] == {"accuracy": 33.33, "correct": 1, "mentions": 3, "gold_mentions": 5}
    assert result["strict"]["counts"]["tp"] == 3  # the NER scores are unchanged


def annotate(tmp_path, tagger_dir, *extra, fmt="jsonl"):
    out = tmp_path / f"out.{fmt}"
    assert main(["annotate", str(tmp_path / "docs.pubtator"), "--model", tagger_dir, "--output-format", fmt,
                 "--output", str(out), "--no-progress", *extra]) == 0
    return list(read_documents([str(out)]))


def test_annotate_link_gives_every_format_the_ids_of_the_dictionary(tmp_path, tagger_dir, shared_data):
    text = (shared_data / "documents" / "NCBIdisease_Test.PubTator").read_text().split("\n\n")[:6]
    (tmp_path / "docs.pubtator").write_text("\n\n".join(text) + "\n\n")
    plain = annotate(tmp_path, tagger_dir)
    texts = sorted({p.text for d in plain for p in d.predictions})
    assert len(texts) > 10
    ids = {t: f"X{i}" for i, t in enumerate(texts)}
    (tmp_path / "dict.tsv").write_text("".join(f"{i}\t{t}\n" for t, i in ids.items()))
    link = ["--link", f"Chemical,Disease={tmp_path / 'dict.tsv'}", "--link-encoder", "none"]
    linked = annotate(tmp_path, tagger_dir, *link, "--abbreviations", "none")  # no short form read as its long form
    predictions = [p for d in linked for p in d.predictions]
    assert len(predictions) == sum(len(d.predictions) for d in plain)
    assert all(p.concept_id == ids[p.text] and p.infons["link_method"] == "exact" for p in predictions)
    pubtator = annotate(tmp_path, tagger_dir, *link, "--abbreviations", "none", "--drop-existing", fmt="pubtator")
    assert sorted((a.start, a.concept_id) for d in pubtator for a in d.existing_annotations()) == \
        sorted((p.start, p.concept_id) for p in predictions)
    options = (*link, "--drop-existing", "--abbreviations", "schwartz-hearst")
    bioc = annotate(tmp_path, tagger_dir, *options, fmt="bioc-xml")
    jsonl = [p for d in annotate(tmp_path, tagger_dir, *options) for p in d.predictions]
    found = [a for d in bioc for a in d.predictions]  # BioC reads biozoo's predictions back as predictions
    assert not any(d.existing_annotations() for d in bioc)
    assert sorted((a.start, a.type, a.concept_id) for a in found) == \
        sorted((p.start, p.type, p.concept_id) for p in jsonl)
    short_forms = [a for a in found if a.type == "ShortForm"]
    assert short_forms and all(a.infons["long_form"] for a in short_forms)
    expanded = [p for p in jsonl if "link_query" in p.infons]  # a short form, read as its long form
    assert all(p.infons["link_query"] != p.text for p in expanded)


def test_beam_links_as_plain_annotate_does(tmp_path, tagger_dir, shared_data):
    pytest.importorskip("apache_beam")
    from biozoo.annotate import AnnotationJob
    from biozoo.annotate.beam import annotate_corpus

    path = shared_data / "documents" / "NCBIdisease_Test.PubTator"
    (tmp_path / "dict.tsv").write_text(DICTIONARY)
    job = AnnotationJob(models=(tagger_dir,), output_format="jsonl", drop_existing=True, chunk_size=16,
                        link=(f"Disease,Chemical={tmp_path / 'dict.tsv'}",), link_encoder=None, link_threshold=0.2)
    plain = list(job.run(progress=False).annotate(read_documents([str(path)])))
    summary = annotate_corpus(job, [str(path)], str(tmp_path / "shards"), progress=False)
    beam = {d.id: d for d in read_documents(sorted(str(p) for p in (tmp_path / "shards").rglob("*.jsonl*")))}
    expected = [(d.id, p.start, p.end, p.concept_id, p.infons.get("link_name")) for d in plain for p in d.predictions]
    got = [(d.id, p.start, p.end, p.concept_id, p.infons.get("link_name")) for d in plain for p in beam[d.id].predictions]
    assert got == expected and any(item[3] for item in expected)
    # the summary counts every mention asked about, by method, as the plain run linked them
    methods = Counter(p.infons["link_method"] for d in plain for p in d.predictions)
    assert summary["link_methods"] == dict(methods) and methods["none"] and sum(methods.values()) > methods["none"]
    assert json.loads((tmp_path / "shards" / "summary.json").read_text())["link_methods"] == dict(methods)


def test_annotate_tells_how_many_mentions_were_linked_and_why_not_the_others(tmp_path, tagger_dir, shared_data, capsys):
    text = (shared_data / "documents" / "NCBIdisease_Test.PubTator").read_text().split("\n\n")[:6]
    (tmp_path / "docs.pubtator").write_text("\n\n".join(text) + "\n\n")
    texts = sorted({p.text for d in annotate(tmp_path, tagger_dir) for p in d.predictions})
    kept = texts[::2]  # half the mention texts have a concept; char 3-grams at threshold 0.99 find none of the others
    (tmp_path / "dict.tsv").write_text("".join(f"X{i}\t{t}\n" for i, t in enumerate(kept)))
    capsys.readouterr()
    linked = annotate(tmp_path, tagger_dir, "--link", f"Chemical,Disease={tmp_path / 'dict.tsv'}", "--link-encoder",
                      "none", "--link-threshold", "0.99", "--abbreviations", "none")
    predictions = [p for d in linked for p in d.predictions]
    with_id = sum(1 for p in predictions if p.concept_id)
    assert 0 < with_id < len(predictions)
    err = capsys.readouterr().err
    assert (f"; {with_id} of {len(predictions)} mentions linked ({len(predictions) - with_id}: nothing above the "
            "threshold);") in err


def test_finetune_link_cli(tmp_path, tiny_encoder_dir, capsys):
    (tmp_path / "dict.tsv").write_text(DICTIONARY)
    assert main(["finetune", "link", "--preset", str(tiny_encoder_dir), "--dictionary", str(tmp_path / "dict.tsv"),
                 "--output", str(tmp_path / "out"), "--epochs", "1", "--batch-size", "2"]) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert metrics["task"] == "link" and metrics["pairs"] == 3 and metrics["steps"] == 2  # 2 synonym pairs, 1 self pair
    from biozoo.linking import NameEncoder

    assert NameEncoder.from_preset(str(tmp_path / "out")).encode(["x"]).shape == (1, 32)
    assert main(["finetune", "link", "--preset", str(tiny_encoder_dir), "--output", str(tmp_path / "o2")]) == 2
    assert main(["finetune", "ner", "--preset", str(tiny_encoder_dir), "--output", str(tmp_path / "o3")]) == 2


def test_finetune_link_options_default_to_the_api_settings(tmp_path, monkeypatch):
    """`biozoo finetune link` trains as `LinkTraining()` does unless told otherwise (it passed
    finetune's 10 % warmup where the settings say none)."""
    from biozoo.linking import training

    seen = []
    monkeypatch.setattr(training, "finetune_linker", lambda dictionary, preset, output, settings, **k: seen.append(
        settings) or {})
    monkeypatch.setattr("biozoo.linking.load_dictionary", lambda *a, **k: None)
    base = ["finetune", "link", "--preset", "p", "--dictionary", "d", "--no-progress"]
    assert main([*base, "--output", str(tmp_path / "a")]) == 0
    assert main([*base, "--output", str(tmp_path / "b"), "--warmup-ratio", "0.2", "--weight-decay", "0"]) == 0
    default = training.LinkTraining()
    assert (seen[0].warmup_ratio, seen[0].weight_decay) == (default.warmup_ratio, default.weight_decay) == (0.0, 0.01)
    assert (seen[1].warmup_ratio, seen[1].weight_decay) == (0.2, 0.0)


def test_finetune_link_trains_at_the_name_length_its_checkpoint_declares(tmp_path, tiny_encoder_dir, capsys):
    (tmp_path / "dict.tsv").write_text(DICTIONARY)
    base = ["finetune", "link", "--dictionary", str(tmp_path / "dict.tsv"), "--batch-size", "2", "--no-progress"]
    assert main([*base, "--preset", str(tiny_encoder_dir), "--output", str(tmp_path / "first"),
                 "--max-seq-length", "30"]) == 0
    assert main([*base, "--preset", str(tmp_path / "first"), "--output", str(tmp_path / "again")]) == 0
    assert main([*base, "--preset", str(tiny_encoder_dir), "--output", str(tmp_path / "plain")]) == 0
    capsys.readouterr()
    recorded = {name: json.loads((tmp_path / name / "linking.json").read_text())["max_length"]
                for name in ("first", "again", "plain")}
    assert recorded == {"first": 30, "again": 30, "plain": 25}  # none declared: SapBERT's 25


def test_finetune_link_no_progress_shows_no_bar(tmp_path, tiny_encoder_dir, capsys):
    for name, flags in (("shown", []), ("quiet", ["--no-progress"])):
        (tmp_path / f"{name}.tsv").write_text(DICTIONARY)
        assert main(["finetune", "link", "--preset", str(tiny_encoder_dir), "--dictionary", str(tmp_path / f"{name}.tsv"),
                     "--output", str(tmp_path / name), "--batch-size", "2", *flags]) == 0
        err = capsys.readouterr().err
        assert ("reading shown" in err) if name == "shown" else ("reading quiet" not in err and "\r" not in err)
    assert main(["finetune", "ner", "--preset", str(tiny_encoder_dir), "--output", str(tmp_path / "ner"),
                 "--no-progress"]) == 2
    assert "--no-progress is an option of finetune link only" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["--strategy", "tpu"], ["--checkpoint-every", "1"], ["--seeds", "3"],
                                   ["--mixed-precision", "bfloat16"], ["--layer-decay", "0.8"], ["--epochs", "1.5"]])
def test_finetune_link_refuses_the_options_it_does_not_take(tmp_path, tiny_encoder_dir, capsys, flags):
    (tmp_path / "dict.tsv").write_text(DICTIONARY)
    assert main(["finetune", "link", "--preset", str(tiny_encoder_dir), "--dictionary", str(tmp_path / "dict.tsv"),
                 "--output", str(tmp_path / "out"), *flags]) == 2
    assert flags[0] in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_finetune_link_onto_an_earlier_output_needs_overwrite_and_says_so_before_training(tmp_path, tiny_encoder_dir,
                                                                                          capsys):
    (tmp_path / "dict.tsv").write_text(DICTIONARY)
    argv = ["finetune", "link", "--preset", str(tiny_encoder_dir), "--dictionary", str(tmp_path / "dict.tsv"),
            "--output", str(tmp_path / "out"), "--batch-size", "2", "--hard-negatives", "0"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--overwrite" in err and "epoch 1" not in err  # refused before any training
    assert main([*argv, "--overwrite"]) == 0
