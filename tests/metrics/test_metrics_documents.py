"""Mention-level scores by offsets (biozoo.metrics.documents) and `biozoo score ner --gold/--pred`."""

import itertools
import json
import random

import pytest

from biozoo.documents import Annotation, Document, Passage
from biozoo.metrics.documents import Mention, match_overlapping, score_mentions, score_offsets
from biozoo.metrics.ner import entity_scores


def doc(doc_id, text, annotations=(), predictions=()):
    """A one-passage document; annotations are (start, end, type) or (spans, type)."""

    def annotation(item):
        if len(item) == 2:  # discontinuous: ([(start, end), ...], type)
            spans, type_ = item
            return Annotation(spans[0][0], spans[0][1], type_, " ".join(text[s:e] for s, e in spans),
                              locations=list(spans))
        start, end, type_ = item
        return Annotation(start, end, type_, text[start:end])

    return Document(doc_id, [Passage(0, text, annotations=[annotation(a) for a in annotations])],
                    predictions=[annotation(a) for a in predictions])


def counts(section):
    c = section["counts"]
    return c["tp"], c["fp"], c["fn"]


def type_counts(section):
    return {t: (v["tp"], v["fp"], v["fn"]) for t, v in section["per_type"].items()}


# ---------------------------------------------------------------- hand-counted edits

TEXT1 = "Aspirin reduces colon cancer risk in mice with BRCA1 mutations and lung tumors."
TEXT2 = "breast and ovarian cancer"


def span(text, words, type_):
    start = text.index(words)
    return (start, start + len(words), type_)


def edited_case():
    gold = [
        doc("d1", TEXT1, [
            span(TEXT1, "Aspirin", "Chemical"),
            span(TEXT1, "colon cancer", "Disease"),
            span(TEXT1, "mice", "Species"),
            span(TEXT1, "BRCA1", "Gene"),
            span(TEXT1, "BRCA1", "Gene"),  # duplicate in gold: counted once
            span(TEXT1, "lung tumors", "Disease"),
        ]),
        doc("d2", TEXT2, [
            ([(0, 6), (19, 25)], "Disease"),  # "breast ... cancer", discontinuous
            span(TEXT2, "ovarian cancer", "Disease"),
        ]),
        doc("d3", "Nothing here."),
    ]
    colon = span(TEXT1, "colon cancer", "Disease")
    pred = [
        doc("d1", TEXT1, [
            span(TEXT1, "Aspirin", "Chemical"),  # exact: TP strict and approximate
            span(TEXT1, "Aspirin", "Chemical"),  # duplicate prediction: counted once
            (colon[0] + 1, colon[1], "Disease"),  # boundary shifted by one char: strict FP+FN, approx TP
            span(TEXT1, "mice", "Chemical"),  # type changed: FP (Chemical) + FN (Species) in both
            # "BRCA1" Gene missing: FN in both
            span(TEXT1, "risk", "Disease"),  # extra: FP in both
            span(TEXT1, "lung", "Disease"),  # partial overlap of "lung tumors": strict FP, approx TP ...
            span(TEXT1, "tumors", "Disease"),  # ... second partial of the same gold: FP in both (one to one)
        ]),
        doc("d2", TEXT2, [
            ([(19, 25), (0, 6)], "Disease"),  # same spans listed in another order: TP strict
            span(TEXT2, "ovarian cancer", "Disease"),  # exact: TP (it also overlaps "breast ... cancer")
        ]),
        doc("d3", "Nothing here."),
    ]
    return gold, pred


def test_hand_counted_edits():
    gold, pred = edited_case()
    result = score_mentions(gold, pred)
    strict, approx = result["strict"], result["approximate"]
    # strict: TP Aspirin, both d2 mentions; FP shifted colon, mice/Chemical, risk, lung, tumors;
    # FN colon cancer, mice/Species, BRCA1, lung tumors
    assert counts(strict) == (3, 5, 4)
    assert type_counts(strict) == {"Chemical": (1, 1, 0), "Disease": (2, 4, 2), "Gene": (0, 0, 1), "Species": (0, 0, 1)}
    # approximate: + shifted colon and one of lung/tumors matched
    assert counts(approx) == (5, 3, 2)
    assert type_counts(approx) == {"Chemical": (1, 1, 0), "Disease": (4, 2, 0), "Gene": (0, 0, 1), "Species": (0, 0, 1)}
    assert strict["precision"] == 37.5 and strict["recall"] == pytest.approx(300 / 7)
    assert strict["f1"] == pytest.approx(2 * 37.5 * (300 / 7) / (37.5 + 300 / 7))
    assert approx["precision"] == 62.5 and approx["recall"] == pytest.approx(500 / 7)
    assert strict["per_type"]["Disease"]["support"] == 4 and strict["per_type"]["Gene"]["precision"] == 0.0
    assert strict["counts"]["correct"] == 3 and strict["counts"]["gold"] == 7 and strict["counts"]["pred"] == 8
    assert result["duplicates_removed"] == {"gold": 1, "pred": 1}
    assert result["mentions"] == {"gold": 7, "pred": 8}
    assert result["documents"] == {"gold": 3, "pred": 3, "only_in_gold": [], "only_in_pred": []}
    assert result["text_differs"] == []


def test_predictions_field_and_sources():
    text = "Aspirin helps."
    gold = [doc("1", text, [(0, 7, "Chemical")])]
    as_predictions = [doc("1", text, predictions=[(0, 7, "Chemical")])]
    result = score_mentions(gold, as_predictions)  # pred_from="auto": there are predictions
    assert counts(result["strict"]) == (1, 0, 0) and result["sources"] == {"gold": "existing", "pred": "predictions"}
    assert counts(score_mentions(gold, as_predictions, pred_from="existing")["strict"]) == (0, 0, 1)
    assert counts(score_mentions(gold, as_predictions, pred_from="all")["strict"]) == (1, 0, 0)
    # auto on a file without predictions (PubTator): its annotations
    assert score_mentions(gold, gold)["sources"]["pred"] == "existing"
    # the gold side ignores a gold file's predictions by default
    assert score_mentions(as_predictions, as_predictions)["mentions"] == {"gold": 0, "pred": 1}
    # a file annotated from a gold file keeps the gold as its annotations: auto does not count them
    annotated = [doc("1", text, [(0, 7, "Chemical")], predictions=[(0, 6, "Chemical")])]
    assert counts(score_mentions(gold, annotated)["strict"]) == (0, 1, 1)
    assert counts(score_mentions(gold, annotated, pred_from="all")["strict"]) == (1, 1, 0)
    with pytest.raises(ValueError, match="source must be"):
        score_mentions(gold, gold, pred_from="model")


def test_abbreviation_definitions_are_no_entities():
    """`annotate --abbreviations` writes ShortForm / LongForm predictions: not scored as entities."""
    text = "Wilson disease (WD) is rare."
    gold = [doc("1", text, [(0, 14, "Disease")])]
    pred = [doc("1", text, predictions=[(0, 14, "Disease"), (0, 14, "LongForm"), (16, 18, "ShortForm")])]
    result = score_mentions(gold, pred)
    assert counts(result["strict"]) == (1, 0, 0) and result["strict"]["precision"] == 100.0
    assert result["abbreviations_left_out"] == {"gold": 0, "pred": 2}


def test_greedy_alone_would_not_be_maximum():
    # gold A [0,10) and B [10,20); pred P [2,11) overlaps A by 8 and B by 1, Q [0,1) overlaps A only.
    # Greedy by overlap pairs A-P and stops at 1; the one-to-one maximum is 2 (A-Q, B-P).
    gold = {"d": [(0, 10, "X"), (10, 20, "X")]}
    pred = {"d": [(2, 11, "X"), (0, 1, "X")]}
    assert counts(score_offsets(gold, pred)["approximate"]) == (2, 0, 0)
    assert match_overlapping([Mention(((0, 10),), "X")], [Mention(((10, 12),), "X")]) == []  # touching is no overlap
    # an empty span is never overlapped, but found exactly it counts in both (approximate >= strict)
    result = score_offsets({"d": [(4, 4, "X")]}, {"d": [(4, 4, "X"), (3, 5, "X")]})
    assert counts(result["strict"]) == counts(result["approximate"]) == (1, 1, 0)


def test_matching_is_maximum_on_random_cases():
    rng = random.Random(5)

    def mention():
        spans = []
        for _ in range(rng.randint(1, 2)):
            start = rng.randint(0, 25)
            spans.append((start, start + rng.randint(0, 6)))
        return Mention(tuple(sorted(spans)), rng.choice("XY"))

    def overlaps(a, b):
        chars = {i for s, e in a.spans for i in range(s, e)}
        return a == b or a.type == b.type and any(i in chars for s, e in b.spans for i in range(s, e))

    def brute_force(gold, pred):
        edges = [(g, p) for g in range(len(gold)) for p in range(len(pred)) if overlaps(gold[g], pred[p])]
        for size in range(min(len(gold), len(pred)), 0, -1):
            for chosen in itertools.combinations(edges, size):
                if len({g for g, _ in chosen}) == size == len({p for _, p in chosen}):
                    return size
        return 0

    for _ in range(800):
        gold = [mention() for _ in range(rng.randint(0, 5))]
        pred = [mention() for _ in range(rng.randint(0, 5))]
        pairs = match_overlapping(gold, pred)
        assert len({g for g, _ in pairs}) == len(pairs) == len({p for _, p in pairs})
        assert all(overlaps(gold[g], pred[p]) for g, p in pairs)
        assert len(pairs) == brute_force(gold, pred)


def test_different_documents_are_an_error_unless_allowed():
    gold = {"a": [(0, 3, "X")], "b": [(0, 3, "X")]}
    pred = {"a": [(0, 3, "X")], "c": [(4, 6, "X")]}
    with pytest.raises(ValueError, match=r"only in gold: b.*only in pred: c"):
        score_offsets(gold, pred)
    result = score_offsets(gold, pred, allow_missing=True)
    assert counts(result["strict"]) == (1, 1, 1)  # b's mention: FN; c's: FP
    assert result["documents"] == {"gold": 2, "pred": 2, "only_in_gold": ["b"], "only_in_pred": ["c"]}


def test_bad_input():
    with pytest.raises(ValueError, match="appears twice"):
        score_mentions([doc("1", "a"), doc("1", "b")], [doc("1", "a")])
    with pytest.raises(ValueError, match="document 1: bad mention offsets 5-3"):
        score_offsets({"1": [(5, 3, "X")]}, {"1": []})
    with pytest.raises(ValueError, match="no spans"):
        score_offsets({"1": [Mention((), "X")]}, {"1": []})
    with pytest.raises(TypeError, match="expected"):
        score_offsets({"1": ["X"]}, {"1": []})
    result = score_mentions([doc("1", "Aspirin.")], [doc("1", "Aspirin!")])
    assert result["text_differs"] == ["1"]


def test_empty_input_scores_zero():
    result = score_offsets({}, {})
    assert result["strict"]["f1"] == 0.0 and result["strict"]["per_type"] == {}
    assert result["documents"]["gold"] == 0


# ---------------------------------------------------------------- gold file against itself


def mention_lines(path):
    """(pmid, start, end, type) of each of a PubTator file's mention lines, read without biozoo."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("\t")[i] for i in (0, 1, 2, 4)) for line in lines if line.count("\t") >= 4]


@pytest.mark.parametrize("name", ["NCBIdisease_Test.PubTator", "BC5CDR_Test.PubTator"])
def test_gold_file_against_itself_is_100(shared_data, name):
    from biozoo.documents import read_documents

    path = shared_data / "documents" / name
    if not path.is_file():
        pytest.skip(f"{path} not found")
    docs = list(read_documents(path))
    result = score_mentions(docs, docs)
    n_mentions = result["mentions"]["gold"]
    assert n_mentions > 0 and result["mentions"]["pred"] == n_mentions
    for section in ("strict", "approximate"):
        assert result[section]["precision"] == result[section]["recall"] == result[section]["f1"] == 100.0
        assert counts(result[section]) == (n_mentions, 0, 0)
    assert result["documents"]["gold"] == len(docs)
    lines = mention_lines(path)
    assert n_mentions == len(set(lines))
    assert result["duplicates_removed"]["gold"] == len(lines) - len(set(lines))
    if name.startswith("NCBI"):
        assert len(docs) == 100 and result["duplicates_removed"] == {"gold": 0, "pred": 0}


# ---------------------------------------------------------------- equal to the sentence-level scorer

TYPES = ["X", "Y"]


def random_iob2(rng, n):
    """A valid IOB2 sequence: I-T only right after B-T or I-T."""
    tags = []
    for _ in range(n):
        prev = tags[-1] if tags else "O"
        choices = ["O", "O", "B-X", "B-Y"] + ([f"I-{prev[2:]}"] * 2 if prev != "O" else [])
        tags.append(rng.choice(choices))
    return tags


def repair_iob2(tags):
    """An I- tag after O becomes O; after another type, it takes that type."""
    repaired = []
    for tag in tags:
        prev = repaired[-1] if repaired else "O"
        if tag.startswith("I-"):
            tag = "O" if prev == "O" else f"I-{prev[2:]}"
        repaired.append(tag)
    return repaired


def iob2_chunks(tags):
    """Mentions (first token, last token, type) of a valid IOB2 sequence; independent of seqeval."""
    chunks = []
    for i, tag in enumerate(tags):
        if tag.startswith("B-"):
            chunks.append([i, i, tag[2:]])
        elif tag.startswith("I-"):
            chunks[-1][1] = i
    return [tuple(c) for c in chunks]


def sentence_document(doc_id, tokens, tags, where):
    """The sentence as a document (tokens joined by single spaces), its mentions by offsets."""
    starts, position = [], 0
    for token in tokens:
        starts.append(position)
        position += len(token) + 1
    text = " ".join(tokens)
    mentions = [(starts[first], starts[last] + len(tokens[last]), type_) for first, last, type_ in iob2_chunks(tags)]
    return doc(doc_id, text, **{where: mentions})


def random_corpus(rng):
    tokens, gold, pred = [], [], []
    for _ in range(rng.randint(1, 6)):
        n = rng.randint(1, 12)
        tokens.append(["".join(rng.choice("abcde") for _ in range(rng.randint(1, 5))) for _ in range(n)])
        gold.append(random_iob2(rng, n))
        # pred: often a copy with a few tags changed, so that many mentions are correct
        if rng.random() < 0.7:
            edited = list(gold[-1])
            for _ in range(rng.randint(0, 2)):
                edited[rng.randrange(n)] = rng.choice(["O", "B-X", "B-Y"])
            pred.append(repair_iob2(edited))
        else:
            pred.append(random_iob2(rng, n))
    return tokens, gold, pred


def test_random_iob2_is_valid():
    rng = random.Random(3)
    for _ in range(200):
        _, gold, pred = random_corpus(rng)
        for tags in gold + pred:
            for i, tag in enumerate(tags):
                if tag.startswith("I-"):
                    assert i > 0 and tags[i - 1] != "O" and tags[i - 1][2:] == tag[2:]


def test_strict_equals_entity_scores_and_conlleval():
    conlleval = pytest.importorskip("conlleval", reason="the 'conlleval' PyPI package (test extra) is not installed")
    rng = random.Random(2024)
    for _ in range(300):
        tokens, gold, pred = random_corpus(rng)
        gold_docs = [sentence_document(f"s{i}", t, g, "annotations") for i, (t, g) in enumerate(zip(tokens, gold))]
        pred_docs = [sentence_document(f"s{i}", t, p, "predictions") for i, (t, p) in enumerate(zip(tokens, pred))]
        ours = score_mentions(gold_docs, pred_docs)["strict"]
        sentence_level = entity_scores(gold, pred)
        assert {k: ours["counts"][k] for k in ("gold", "pred", "correct")} == sentence_level["counts"]
        for key in ("precision", "recall", "f1"):
            assert ours[key] == pytest.approx(sentence_level[key])
        assert set(ours["per_type"]) == set(sentence_level["per_type"])
        for type_, scores in sentence_level["per_type"].items():
            assert {k: ours["per_type"][type_][k] for k in scores} == pytest.approx(scores)

        lines = []
        for t_sent, g_sent, p_sent in zip(tokens, gold, pred):
            lines += [f"{w} {g} {p}" for w, g, p in zip(t_sent, g_sent, p_sent)] + [""]
        reference = conlleval.evaluate(lines)
        stats, evals = reference["overall"]["chunks"]["stats"], reference["overall"]["chunks"]["evals"]
        assert (ours["counts"]["gold"], ours["counts"]["pred"], ours["counts"]["correct"]) == (
            stats["gold"], stats["pred"], stats["correct"])
        assert ours["f1"] == pytest.approx(100 * evals["f1"])
        # the package reports precision 1 when nothing is predicted (conlleval.pl and biozoo: 0)
        if stats["pred"]:
            assert ours["precision"] == pytest.approx(100 * evals["prec"])
        if stats["gold"]:
            assert ours["recall"] == pytest.approx(100 * evals["rec"])
        for type_, data in reference["slots"]["chunks"].items():
            if data["stats"]["gold"] or data["stats"]["pred"]:
                assert ours["per_type"][type_]["tp"] == data["stats"]["correct"]
                assert ours["per_type"][type_]["f1"] == pytest.approx(100 * data["evals"]["f1"])


def test_conlleval_i_after_o_rule_is_why_equality_needs_iob2():
    # conlleval (and entity_scores, seqeval default mode) start a mention at an I- after O;
    # a strict IOB2 reading (like the chunker above, or a document with offsets) has none there.
    # Documents carry mentions, not tags, so the equality holds for sequences both read alike.
    assert entity_scores([["O", "I-X"]], [["O", "O"]])["counts"]["gold"] == 1
    assert [c for c in iob2_chunks(["O", "B-X"])] == [(1, 1, "X")]


# ---------------------------------------------------------------- command line


def run_score(capsys, *argv):
    from biozoo.cli import main

    status = main(["score", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def write_pubtator(path, documents):
    """documents: [(pmid, title, abstract, [(start, end, type), ...])]."""
    blocks = []
    for pmid, title, abstract, mentions in documents:
        text = f"{title} {abstract}"
        lines = [f"{pmid}|t|{title}", f"{pmid}|a|{abstract}"]
        lines += [f"{pmid}\t{s}\t{e}\t{text[s:e]}\t{t}\tMESH:D0" for s, e, t in mentions]
        blocks.append("\n".join(lines) + "\n")
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


DOC_A = ("101", "Aspirin and colon cancer.", "Mice got aspirin.")
DOC_B = ("102", "Lung tumors.", "None.")


def test_cli_scores_document_files(tmp_path, capsys):
    gold = write_pubtator(tmp_path / "gold.pubtator", [
        (*DOC_A, [(0, 7, "Chemical"), (12, 24, "Disease"), (26, 30, "Species"), (35, 42, "Chemical")]),
        (*DOC_B, [(0, 11, "Disease")]),
    ])
    pred = write_pubtator(tmp_path / "pred.pubtator", [
        (*DOC_A, [(0, 7, "Chemical"), (13, 24, "Disease"), (35, 42, "Chemical"), (35, 42, "Chemical")]),
        (*DOC_B, [(0, 4, "Disease")]),
    ])
    status, out, err = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(pred))
    assert status == 0, err
    result = json.loads(out)
    assert counts(result["strict"]) == (2, 2, 3)  # Aspirin x2 exact; colon and lung shifted; Mice missing
    assert counts(result["approximate"]) == (4, 0, 1)
    assert result["duplicates_removed"] == {"gold": 0, "pred": 1}
    assert "1 duplicate pred mention" in err
    assert out.startswith("{\n  ")

    status, out, _ = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(gold))
    assert status == 0 and json.loads(out)["strict"]["f1"] == 100.0


def test_cli_scores_an_annotation_whose_text_column_differs_by_its_offsets(tmp_path, capsys):
    """A predicted mention one character off, with the text of the gold one, is a false positive
    (and an approximate match), not dropped: dropping it gave precision 100 here."""
    gold = write_pubtator(tmp_path / "gold.pubtator", [(*DOC_A, [(0, 7, "Chemical"), (12, 24, "Disease")])])
    pred = tmp_path / "pred.pubtator"
    pred.write_text("101|t|Aspirin and colon cancer.\n101|a|Mice got aspirin.\n"
                    "101\t0\t7\tAspirin\tChemical\n101\t11\t23\tcolon cancer\tDisease\n", encoding="utf-8")
    status, out, err = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(pred))
    assert status == 0, err
    result = json.loads(out)
    assert counts(result["strict"]) == (1, 1, 1)  # by hand: Aspirin exact; 11-23 is not 12-24
    assert result["strict"]["precision"] == result["strict"]["recall"] == 50.0
    assert counts(result["approximate"]) == (2, 0, 0)
    assert result["text_mismatches"] == {"gold": 0, "pred": 1}
    assert "pred.pubtator: 1 annotation(s)" in err and "pred.pubtator:4" in err
    # a gold mention whose text column differs is scored too (it was dropped: recall 100 of 1)
    status, out, err = run_score(capsys, "ner", "--gold", str(pred), "--pred", str(gold))
    result = json.loads(out)
    assert counts(result["strict"]) == (1, 1, 1) and result["text_mismatches"] == {"gold": 1, "pred": 0}


def test_cli_annotated_jsonl_counts_its_predictions_only(tmp_path, capsys):
    from biozoo.documents import read_documents, write_documents

    gold = write_pubtator(tmp_path / "gold.pubtator", [(*DOC_A, [(0, 7, "Chemical"), (12, 24, "Disease")])])
    docs = list(read_documents(gold))
    docs[0].predictions = [Annotation(0, 7, "Chemical", "Aspirin", model="m")]  # as `biozoo annotate` adds them
    pred = tmp_path / "pred.jsonl"
    write_documents(docs, pred, fmt="jsonl")
    status, out, err = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(pred))
    assert status == 0, err
    result = json.loads(out)
    assert counts(result["strict"]) == (1, 0, 1) and result["sources"]["pred"] == "predictions"
    status, out, _ = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(pred), "--pred-from", "all")
    assert counts(json.loads(out)["strict"]) == (2, 0, 0)


@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json"])
def test_cli_annotated_bioc_counts_its_predictions_only(tmp_path, capsys, fmt):
    """A BioC file that `biozoo annotate` wrote from the gold, without --drop-existing, holds the
    gold too: its predictions alone are scored (the gold scored as predictions gave recall 100)."""
    from biozoo.documents import read_documents, write_documents

    gold = write_pubtator(tmp_path / "gold.pubtator", [(*DOC_A, [(0, 7, "Chemical"), (12, 24, "Disease")])])
    docs = list(read_documents(gold))
    docs[0].predictions = [Annotation(8, 11, "Chemical", "and", score=0.9, model="m")]  # as annotate adds it
    pred = tmp_path / "pred.bioc"
    write_documents(docs, pred, fmt=fmt)
    status, out, err = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(pred))
    assert status == 0, err
    result = json.loads(out)
    assert result["sources"]["pred"] == "predictions"
    assert counts(result["strict"]) == (0, 1, 2)  # by hand: "and" is no gold mention; both gold mentions missed
    assert "carries no predictions" not in err


def annotated(path, fmt, model, predictions):
    """A file as `biozoo annotate --drop-existing` writes it: one document, predictions only."""
    from biozoo.documents import write_documents

    text = "Aspirin causes asthma."
    document = Document("1", [Passage(0, text, "abstract")], predictions=[
        Annotation(start, end, type_, text[start:end], model=model, score=0.9) for start, end, type_ in predictions])
    write_documents([document], path, fmt=fmt)
    return path


@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json", "jsonl"])
def test_cli_scores_against_another_models_predictions_as_silver_gold(tmp_path, capsys, fmt):
    """A gold file without annotations but with a model's predictions: those are the gold (it was
    read as empty: gold 0, F1 0, silently)."""
    gold = annotated(tmp_path / "large.file", fmt, "large", [(0, 7, "Chemical"), (15, 21, "Disease")])
    pred = annotated(tmp_path / "small.file", fmt, "small", [(0, 7, "Chemical")])
    status, out, err = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(pred))
    assert status == 0, err
    result = json.loads(out)
    assert result["sources"] == {"gold": "predictions", "pred": "predictions"}
    assert counts(result["strict"]) == (1, 0, 1)  # by hand: Aspirin found, asthma missed
    assert (result["strict"]["precision"], result["strict"]["recall"]) == (100.0, 50.0)
    assert result["strict"]["f1"] == pytest.approx(200 / 3)
    assert f"warning: {gold} carries no annotations but 2 prediction(s) (model large): they are scored as the gold" in err
    status, out, err = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(pred), "--gold-from", "predictions")
    assert status == 0 and counts(json.loads(out)["strict"]) == (1, 0, 1) and "carries no annotations" not in err
    # --gold-from existing: no gold at all, said on stderr
    status, out, err = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(pred), "--gold-from", "existing")
    assert status == 0 and counts(json.loads(out)["strict"]) == (0, 1, 0)
    assert (f"warning: {gold}: no gold mention (--gold-from existing): every prediction counts as a false positive "
            "and recall is 0; it carries 2 prediction(s), which --gold-from predictions scores as the gold") in err


def test_cli_gold_annotations_win_over_its_predictions_and_an_empty_gold_is_warned(tmp_path, capsys):
    from biozoo.documents import read_documents, write_documents

    gold = write_pubtator(tmp_path / "gold.pubtator", [(*DOC_A, [(0, 7, "Chemical"), (12, 24, "Disease")])])
    docs = list(read_documents(gold))
    docs[0].predictions = [Annotation(0, 7, "Chemical", "Aspirin", model="m")]
    both = tmp_path / "both.bioc"
    write_documents(docs, both, fmt="bioc-xml")  # annotate from the gold without --drop-existing
    status, out, err = run_score(capsys, "ner", "--gold", str(both), "--pred", str(both))
    assert status == 0, err
    result = json.loads(out)
    assert result["sources"] == {"gold": "existing", "pred": "predictions"}
    assert counts(result["strict"]) == (1, 0, 1) and "warning" not in err
    status, out, err = run_score(capsys, "ner", "--gold", str(both), "--pred", str(both), "--gold-from", "all")
    assert counts(json.loads(out)["strict"]) == (1, 0, 1)  # Aspirin twice on the gold side counts once
    assert "1 duplicate gold mention" in err

    empty = write_pubtator(tmp_path / "empty.pubtator", [(*DOC_A, [])])
    status, out, err = run_score(capsys, "ner", "--gold", str(empty), "--pred", str(gold))
    assert status == 0 and counts(json.loads(out)["strict"]) == (0, 2, 0)
    assert f"warning: {empty}: no gold mention (--gold-from existing): every prediction counts as a false positive" in err
    status, _, err = run_score(capsys, "ner", "--input", str(gold), "--gold-from", "predictions")
    assert status == 2 and "--gold-from go(es) with --gold" in err


@pytest.mark.parametrize("fmt", ["pubtator", "bioc-xml", "bioc-json", "jsonl"])
def test_cli_warns_when_the_pred_file_has_annotations_and_no_predictions(tmp_path, capsys, fmt):
    from biozoo.documents import read_documents, write_documents

    gold = write_pubtator(tmp_path / "gold.pubtator", [(*DOC_A, [(0, 7, "Chemical"), (12, 24, "Disease")])])
    pred = tmp_path / "pred.file"
    write_documents(read_documents(gold), pred, fmt=fmt)
    status, out, err = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(pred))
    assert status == 0 and counts(json.loads(out)["strict"]) == (2, 0, 0)
    assert f"warning: {pred} ({fmt}) carries no predictions: its 2 annotation(s) are scored as the predictions" in err
    status, out, err = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(pred), "--pred-from", "existing")
    assert status == 0 and "carries no predictions" not in err  # said on purpose


def test_cli_different_documents(tmp_path, capsys):
    gold = write_pubtator(tmp_path / "gold.pubtator", [(*DOC_A, [(0, 7, "Chemical")]), (*DOC_B, [(0, 11, "Disease")])])
    pred = write_pubtator(tmp_path / "pred.pubtator", [(*DOC_A, [(0, 7, "Chemical")])])
    status, out, err = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(pred))
    assert status == 2 and out == ""
    assert "only in gold: 102" in err and len(err.strip().splitlines()) == 1
    status, out, err = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(pred), "--allow-missing")
    assert status == 0 and counts(json.loads(out)["strict"]) == (1, 0, 1)
    assert "only in gold" in err
    status, out, err = run_score(capsys, "ner", "--gold", str(gold), "--pred", str(tmp_path / "missing.pubtator"))
    assert status == 2 and "missing.pubtator" in err


def test_cli_argument_rules(tmp_path, capsys):
    conll = tmp_path / "pred.txt"
    conll.write_text("a B-X B-X\n")
    with pytest.raises(SystemExit):  # one of --input / --gold is required
        run_score(capsys, "ner")
    with pytest.raises(SystemExit):  # not both
        run_score(capsys, "ner", "--input", str(conll), "--gold", str(conll))
    status, _, err = run_score(capsys, "ner", "--input", str(conll), "--pred", str(conll))
    assert status == 2 and "--pred go(es) with --gold" in err
    status, _, err = run_score(capsys, "ner", "--gold", str(conll))
    assert status == 2 and "--gold needs --pred" in err
    status, out, _ = run_score(capsys, "ner", "--input", str(conll))
    assert status == 0 and json.loads(out)["f1"] == 100.0


def test_resolve_source_auto_prefers_gold_annotations_and_pred_predictions():
    from biozoo.metrics.documents import resolve_source

    annotated_only = [doc("1", "Aspirin.", [(0, 7, "Chemical")])]
    predicted_only = [doc("1", "Aspirin.", predictions=[(0, 7, "Chemical")])]
    both = [doc("1", "Aspirin.", [(0, 7, "Chemical")], [(0, 7, "Chemical")])]
    abbreviation_only = [doc("1", "Aspirin.", [(0, 7, "ShortForm")], [(0, 7, "Chemical")])]
    assert [resolve_source(d, "auto", "gold") for d in (annotated_only, predicted_only, both, abbreviation_only)] == [
        "existing", "predictions", "existing", "predictions"]
    assert [resolve_source(d, "auto", "pred") for d in (annotated_only, predicted_only, both)] == [
        "existing", "predictions", "predictions"]
    assert resolve_source(predicted_only, "existing", "gold") == "existing"
    with pytest.raises(ValueError, match="side must be"):
        resolve_source(both, "auto", "silver")
    with pytest.raises(ValueError, match="source must be auto or one of"):
        resolve_source(both, "gold")
