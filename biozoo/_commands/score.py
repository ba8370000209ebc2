"""``biozoo score``: score prediction files with the official metrics; JSON on stdout.

    biozoo score ner    --input conlleval.txt
    biozoo score ner    --gold GOLD.pubtator --pred PRED.pubtator [--allow-missing]
    biozoo score re     --gold test.tsv --pred predictions.txt [--negative-label False]
    biozoo score qa     --data dev.json --pred predictions.json [--na-prob na.json]
    biozoo score bioasq --gold golden.json (--pred system.json | --nbest nbest_predictions.json)
    biozoo score doc    --gold HoC/test.tsv --pred predictions.txt

All scores are percentages (0-100). The scorers, in biozoo.metrics, are imported inside the
handlers.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from biozoo._commands import documents_argument
from biozoo._io import atomic_write_json, is_remote, read_json
from biozoo.data.files import text_lines
from biozoo.data.relation import RELATION_FORMATS, read_relation
from biozoo.errors import DataFormatError


def _emit(result) -> int:
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _local(path, what):
    """`path` as a local Path; a gs:// path is refused naming it (only `score ner` reads remote documents)."""
    if is_remote(path):
        raise ValueError(f"{path}: `biozoo score` reads {what} files from a local disk; copy it first "
                         "(gcloud storage cp)")
    return Path(path)


def _load_json(path, what):
    path = _local(path, what)
    if not path.is_file():
        raise FileNotFoundError(f"{what} file not found: {path}")
    return read_json(path, what, DataFormatError)


def _read_lines(path, what):
    """Non-empty lines of a one-item-per-line file; trailing blank lines ignored, inner ones rejected."""
    path = _local(path, what)
    if not path.is_file():
        raise FileNotFoundError(f"{what} file not found: {path}")
    lines = [raw.rstrip("\r\n") for _, raw in text_lines(path)]
    while lines and not lines[-1].strip():
        lines.pop()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            raise DataFormatError(f"{path}:{lineno}: blank line in {what} file (one item per line expected)")
    return lines


def _print_warnings(caught):
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)


# ------------------------------------------------------------------ handlers


def _score_ner(args) -> int:
    if args.gold is not None:
        return _score_ner_documents(args)
    document_flags = (("--pred", args.pred), ("--gold-format", args.gold_format),
                      ("--pred-format", args.pred_format), ("--allow-missing", args.allow_missing or None),
                      ("--pred-from", args.pred_from), ("--gold-from", args.gold_from))
    extra = [flag for flag, value in document_flags if value is not None]
    if extra:
        raise ValueError(f"{', '.join(extra)} go(es) with --gold, not with --input")
    from biozoo.metrics.ner import entity_scores, read_conlleval

    path = Path(args.input)
    if not path.is_file():
        raise FileNotFoundError(f"conlleval file not found: {path}")
    gold, pred = read_conlleval(path)
    return _emit(entity_scores(gold, pred))


def _read_document_file(path, fmt):
    """(every document of a file (or folder, .gz, "-"), how many of its annotations have a text other
    than the document's at their offsets): such annotations are kept, and scored by their offsets."""
    from biozoo.documents import KEEP_MISMATCHED, read_documents

    told = []
    stream = read_documents(path, fmt=fmt or "auto", strict=KEEP_MISMATCHED, on_warning=told.append)
    documents = list(stream)
    if told:
        print(f"warning: {path}: {len(told)} annotation(s) whose text differs from the document's at their offsets, "
              f"scored by their offsets; the first: {told[0]}", file=sys.stderr)
    return documents, stream.kept_mismatched


def _score_ner_documents(args) -> int:
    """Mention-level scores by offsets: gold = GOLD's annotations when it has any, else its
    predictions (--gold-from); pred = PRED's predictions when it has any, else its annotations
    (--pred-from)."""
    from biozoo.metrics.documents import score_mentions

    if args.pred is None:
        raise ValueError("--gold needs --pred (the predicted documents)")
    gold, gold_mismatched = _read_document_file(args.gold, args.gold_format)
    pred, pred_mismatched = _read_document_file(args.pred, args.pred_format)
    result = score_mentions(gold, pred, gold_from=args.gold_from or "auto", pred_from=args.pred_from or "auto",
                            allow_missing=args.allow_missing)
    for warning in _gold_source_warnings(args.gold, gold, args.gold_from or "auto", result):
        print(warning, file=sys.stderr)
    result["text_mismatches"] = {"gold": gold_mismatched, "pred": pred_mismatched}
    if getattr(args, "ids", False):
        result.update(_linked_scores(gold, pred, result["sources"]["gold"], result["sources"]["pred"]))
    if args.pred_from in (None, "auto") and result["sources"]["pred"] == "existing":
        warning = _no_predictions_warning(args.pred, pred)
        if warning:
            print(warning, file=sys.stderr)
    for side, path in (("gold", args.gold), ("pred", args.pred)):
        if result["duplicates_removed"][side]:
            print(f"warning: {path}: {result['duplicates_removed'][side]} duplicate {side} mention(s) "
                  "(same document, offsets and type) counted once", file=sys.stderr)
    for side in ("gold", "pred"):
        ids = result["documents"][f"only_in_{side}"]
        if ids:
            print(f"warning: {len(ids)} document(s) only in {side}, counted as "
                  f"{'missed (FN)' if side == 'gold' else 'false positives (FP)'}", file=sys.stderr)
    for side, path in (("gold", args.gold), ("pred", args.pred)):
        if result["abbreviations_left_out"][side]:
            print(f"note: {path}: {result['abbreviations_left_out'][side]} ShortForm / LongForm annotation(s) "
                  "(abbreviation definitions, not entities) left out of the scores", file=sys.stderr)
    if result["text_differs"]:
        print(f"warning: {len(result['text_differs'])} document(s) have a different text in gold and pred "
              f"(offsets may not compare the same characters): {', '.join(result['text_differs'][:10])}",
              file=sys.stderr)
    return _emit(result)


def _no_predictions_warning(path, pred) -> str | None:
    """The warning for a pred file that carries no predictions but input annotations (scored as the
    predictions), whatever its format; None when it has no annotation either."""
    annotated = sum(len(d.existing_annotations()) for d in pred)
    if not annotated:
        return None
    formats = sorted({d.source_format or "unknown" for d in pred})
    if set(formats) <= {"pubtator"}:
        how = ("PubTator has no mark for a prediction; `biozoo annotate` refuses to write an input's annotations "
               "to PubTator, but another tool's output may hold them")
    else:
        how = ("`biozoo annotate` keeps its predictions apart: JSONL \"predictions\", BioC annotator infon "
               "\"biozoo:MODEL\"; a file annotated from a gold file without --drop-existing holds the gold here")
    return (f"warning: {path} ({', '.join(formats)}) carries no predictions: its {annotated} annotation(s) are "
            f"scored as the predictions ({how}; --pred-from existing says that is meant, --pred-from predictions "
            "scores none)")


def _gold_source_warnings(path, gold, asked, result) -> list[str]:
    """Warnings on the gold side: its predictions taken as the gold (auto, no annotations), or no
    gold mention at all (every prediction then counts as a false positive)."""
    warnings_ = []
    source = result["sources"]["gold"]
    if asked == "auto" and source == "predictions":
        models = sorted({a.model for d in gold for a in d.predictions if a.model})
        by = f" (model {', '.join(models)})" if models else ""
        warnings_.append(f"warning: {path} carries no annotations but {sum(len(d.predictions) for d in gold)} "
                         f"prediction(s){by}: they are scored as the gold (--gold-from predictions says that is "
                         "meant)")
    if not result["mentions"]["gold"]:
        other = "predictions" if source == "existing" else "existing"
        held = sum(len(d.predictions) if other == "predictions" else len(d.existing_annotations()) for d in gold)
        hint = (f"; it carries {held} {'prediction' if other == 'predictions' else 'annotation'}(s), which "
                f"--gold-from {other} scores as the gold" if held and source != "all" else "")
        warnings_.append(f"warning: {path}: no gold mention (--gold-from {source}): every prediction counts as a "
                         f"false positive and recall is 0{hint}")
    return warnings_


def _linked_scores(gold, pred, gold_from, pred_from):
    """`score ner --ids`: end-to-end NER + id scores and accuracy@1 of the gold mentions found."""
    from biozoo.documents import ABBREVIATION_TYPES
    from biozoo.metrics.linking import mention_accuracy, score_linked

    def by_document(documents, source):
        out = {}
        for document in documents:
            annotations = document.existing_annotations() if source == "existing" else (
                list(document.predictions) if source == "predictions" else
                document.existing_annotations() + list(document.predictions))
            out[document.id] = [(a.start, a.end, a.type, a.concept_id, tuple(a.spans())) for a in annotations
                                if a.type not in ABBREVIATION_TYPES]
        return out

    gold_mentions, pred_mentions = by_document(gold, gold_from), by_document(pred, pred_from)
    return {"linked": score_linked(gold_mentions, pred_mentions),
            "accuracy_at_1": mention_accuracy(gold_mentions, pred_mentions)}


def _score_re(args) -> int:
    from biozoo.metrics.relation import micro_prf

    examples = read_relation(_local(args.gold, "gold"), fmt=args.gold_format)
    preds = [line.strip() for line in _read_lines(args.pred, "prediction")]
    if len(preds) != len(examples):
        raise ValueError(
            f"{args.pred} has {len(preds)} predictions but {args.gold} has {len(examples)} examples; "
            "one label per line, in the gold file's order, is expected"
        )
    gold = [ex.label for ex in examples]
    known = {label.strip() for label in args.labels.split(",")} if args.labels else set(gold)
    where = "--labels" if args.labels else f"the labels of {args.gold}"
    for lineno, label in enumerate(preds, start=1):
        if label not in known:
            close = [k for k in sorted(known) if k.lower() == label.lower()]
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise DataFormatError(
                f"{args.pred}:{lineno}: label {label!r} is not one of {where} ({', '.join(sorted(known))}){hint} "
                "(labels are compared as exact strings; --labels L1,L2,... declares every label a model may predict)")
    return _emit(micro_prf(gold, preds, negative_label=args.negative_label))


def _iter_questions(dataset):
    return (qa for article in dataset["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"])


def _squad_rules(dataset, args):
    """"1.1" or "2.0": the --rules asked for, else 2.0 where a question is unanswerable or no-answer
    probabilities are given (the two scripts differ on gold answers that normalise to "")."""
    if args.rules != "auto":
        return args.rules
    if args.na_prob:
        return "2.0"
    unanswerable = any(qa.get("is_impossible") or not qa.get("answers") for qa in _iter_questions(dataset))
    return "2.0" if unanswerable else "1.1"


def _score_qa(args) -> int:
    from biozoo.metrics.squad import evaluate_v1, evaluate_v2, missing_predictions

    dataset = _load_json(args.data, "dataset")
    if not isinstance(dataset, dict) or "data" not in dataset:
        raise DataFormatError(f"{args.data}: not a SQuAD json (no 'data' list)")
    preds = _load_json(args.pred, "predictions")
    if args.na_prob and args.rules == "1.1":
        raise ValueError("--na-prob goes with the v2.0 rules (--rules 2.0 or auto), not --rules 1.1")
    na_probs = _load_json(args.na_prob, "na-prob") if args.na_prob else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            missing = missing_predictions(dataset, preds) if isinstance(preds, dict) else []
            if missing and not args.allow_missing:
                raise DataFormatError(
                    f"{args.pred} has no prediction for {len(missing)} question(s) of {args.data}: "
                    f"{', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''} (--allow-missing scores them "
                    "as wrong answers)")
            rules = _squad_rules(dataset, args)
            if rules == "1.1":
                v1 = evaluate_v1(dataset, preds)
                total = sum(1 for _ in _iter_questions(dataset))
                # every question has an answer: the HasAns_* breakdown is the whole, as v2.0 prints it
                result = {"exact": v1["exact_match"], "f1": v1["f1"], "total": total,
                          "HasAns_exact": v1["exact_match"], "HasAns_f1": v1["f1"], "HasAns_total": total}
            else:
                result = evaluate_v2(dataset, preds, na_probs=na_probs, na_prob_thresh=args.na_prob_thresh,
                                     missing="wrong")
        except DataFormatError:
            raise
        except (KeyError, TypeError, ValueError) as error:  # a malformed dataset or predictions file
            raise DataFormatError(f"{args.data} scored with {args.pred}: {error}") from None
    _print_warnings(caught)
    return _emit({"rules": rules, **result, "missing": len(missing)})


def _score_bioasq(args) -> int:
    from biozoo.data.qa import read_bioasq_golden
    from biozoo.metrics.bioasq import aggregate_factoid, factoid_scores

    if args.top_k < 1:
        raise ValueError(f"--top-k must be at least 1, got {args.top_k}")
    if args.save_submission and not args.nbest:
        raise ValueError("--save-submission goes with --nbest")
    golden = read_bioasq_golden(_local(args.gold, "golden"))
    source = args.nbest or args.pred
    try:
        if args.nbest:
            system = aggregate_factoid(_load_json(args.nbest, "n-best"), top_k=args.top_k)
        else:
            system = _load_json(args.pred, "system")
        result = factoid_scores(golden, system, missing="skip")
    except DataFormatError:
        raise
    except ValueError as error:  # a malformed submission or n-best file
        raise DataFormatError(f"{source}: {error}") from None
    if args.save_submission:
        if Path(args.save_submission).resolve() in {Path(p).resolve() for p in (args.gold, args.nbest) if p}:
            raise ValueError(f"--save-submission {args.save_submission} would overwrite an input file")
        atomic_write_json(args.save_submission, system)
    if result["missing"] and not args.skip_missing:
        shown = ", ".join(result["missing"][:10]) + (" ..." if len(result["missing"]) > 10 else "")
        raise DataFormatError(f"{source} answers {len(result['missing'])} of the factoid questions of {args.gold} not "
                              f"at all: {shown} (the official evaluator stops there; --skip-missing scores the "
                              "answered ones only, as its 2020 version)")
    if result["missing"]:
        shown = ", ".join(result["missing"][:10]) + (" ..." if len(result["missing"]) > 10 else "")
        print(f"warning: {source} answers {len(result['missing'])} of the factoid questions of {args.gold} "
              f"not at all; --skip-missing leaves them out of the scores, as the 2020 evaluator: {shown}",
              file=sys.stderr)
    return _emit(result)


def _parse_vector(text, n_labels, where):
    from biozoo.data.hoc import parse_hoc_labels

    text = text.strip()
    if "_" in text:
        try:
            return parse_hoc_labels(text, n_labels)
        except ValueError as error:
            raise DataFormatError(f"{where}: {error}") from None
    parts = text.replace(",", " ").split()
    if len(parts) != n_labels or any(p not in ("0", "1") for p in parts):
        raise DataFormatError(
            f"{where}: expected {n_labels} labels as 'j_v' items or 0/1 values, got {text!r}"
        )
    return tuple(int(p) for p in parts)


def _score_doc(args) -> int:
    from biozoo.data.hoc import read_hoc
    from biozoo.metrics.hoc import hoc_f1_blue, hoc_micro_f1_linkbert

    gold = read_hoc(_local(args.gold, "gold"))
    if not gold:
        raise DataFormatError(f"{args.gold}: no sentences")
    n_labels = len(gold[0].labels)
    lines = _read_lines(args.pred, "prediction")
    if lines and len(lines[0].split("\t")) == 3:  # predictions in the HoC tsv layout (label, sentence, id)
        pred_rows = read_hoc(args.pred, n_labels=n_labels)
        if len(pred_rows) != len(gold):
            raise ValueError(f"{args.pred} has {len(pred_rows)} rows but {args.gold} has {len(gold)}")
        for g, p in zip(gold, pred_rows):
            if g.id != p.id:
                raise DataFormatError(f"{p.path}:{p.line}: id {p.id!r} does not match gold id {g.id!r}")
        pred = [p.labels for p in pred_rows]
    else:
        if len(lines) != len(gold):
            raise ValueError(
                f"{args.pred} has {len(lines)} prediction lines but {args.gold} has {len(gold)} sentences"
            )
        pred = [_parse_vector(line, n_labels, f"{args.pred}:{i}") for i, line in enumerate(lines, start=1)]
    ids = [s.id for s in gold]
    labels = [s.labels for s in gold]
    linkbert = hoc_micro_f1_linkbert(labels, pred, ids=ids)
    blue = hoc_f1_blue(labels, pred, ids=ids)
    return _emit({"linkbert_micro": linkbert, "blue": blue, "abstracts": linkbert["abstracts"]})


# ------------------------------------------------------------------ parser


def register(subparsers):
    """Add ``score`` and its sub-commands to the top-level parser."""
    fmt = argparse.RawDescriptionHelpFormatter
    score = subparsers.add_parser(
        "score",
        help="score predictions with the official metrics (JSON, percentages)",
        description=__doc__,
        formatter_class=fmt,
    )
    tasks = score.add_subparsers(dest="score_task", metavar="TASK")
    tasks.required = True

    ner = tasks.add_parser(
        "ner",
        help="entity-level P/R/F1: conlleval.pl-equal (--input) or by document offsets (--gold/--pred)",
        description="With --input: entity-level precision/recall/F1 as conlleval.pl computes them "
        "(seqeval default mode: a stray I- starts an entity; bare B/I tags accepted). Input: one token "
        "per line, 'token ... gold pred' (space or tab separated; the last two fields are the tags); a "
        "blank line or a -DOCSTART-/-X- line ends a sentence. Output: {precision, recall, f1, per_type, "
        "counts}.\n\nWith --gold and --pred: mention-level scores by character offsets on two document "
        "files (PubTator, BioC XML/JSON, JSONL, ...). Gold: GOLD's annotations when it has any, else its "
        "predictions (another model's 'biozoo annotate' output as silver gold; said on stderr); pred: "
        "PRED's predictions when it has any (JSONL or BioC written by 'biozoo annotate'), else its "
        "annotations (PubTator). strict = "
        "same document, offsets (every span) and type, as the BioCreative evaluations count; "
        "approximate = same document and type, overlapping spans, paired one to one "
        "(maximum matching). Identical mentions listed twice count once (reported). An annotation whose text "
        "column differs from the document's text at its offsets is scored by its offsets (counted in "
        "text_mismatches, the first shown on stderr). Both files must hold the same documents unless "
        "--allow-missing. Output: {strict, approximate, documents, mentions, duplicates_removed, sources, "
        "text_differs, text_mismatches}, each section {precision, recall, f1, per_type, counts}.",
        formatter_class=fmt,
    )
    ner_source = ner.add_mutually_exclusive_group(required=True)
    ner_source.add_argument("--input", metavar="FILE", help="conlleval-format file")
    ner_source.add_argument("--gold", metavar="GOLD", type=documents_argument,
                            help="gold document file (its annotations are the gold; see --gold-from), or example-pubtator")
    ner.add_argument("--pred", metavar="PRED", type=documents_argument,
                     help="with --gold: predicted document file, or example-pubtator")
    ner.add_argument("--gold-format", default=None, metavar="F", help="format of GOLD (default: detected)")
    ner.add_argument("--pred-format", default=None, metavar="F", help="format of PRED (default: detected)")
    ner.add_argument(
        "--pred-from",
        default=None,
        choices=("auto", "existing", "predictions", "all"),
        help="which annotations of PRED are the predictions (default auto: its predictions when it has any, "
        "else the annotations it carries)",
    )
    ner.add_argument(
        "--gold-from",
        default=None,
        choices=("auto", "existing", "predictions", "all"),
        help="which annotations of GOLD are the gold (default auto: the annotations it carries when it has any, "
        "else its predictions, with a warning)",
    )
    ner.add_argument(
        "--allow-missing",
        action="store_true",
        help="score documents found in one file only (gold-only mentions: FN; pred-only: FP) instead of failing",
    )
    ner.add_argument(
        "--ids",
        action="store_true",
        help="with --gold/--pred: score concept ids too (biozoo.metrics.linking): adds `linked` = end-to-end NER + "
        "id {strict, approximate} (a mention counts when its id is one of the gold's, '|'-separated), and "
        "`accuracy_at_1` of the gold mentions the prediction holds with the same spans and type",
    )
    ner.set_defaults(func=_score_ner)

    re_ = tasks.add_parser(
        "re",
        help="relation extraction micro P/R/F1 over positive classes (ChemProt, DDI, GAD)",
        description="Micro precision/recall/F1 over the positive classes, the negative class excluded "
        "(ChemProt/DDI scripts; for GAD it equals class-1 F1).\n\nGOLD: a relation file in any "
        "supported layout (BLURB id/sentence/label, ELECTRA sentence/label with header, BioBERT with "
        "or without index column). PRED: one label per line, in the gold file's order.\n\n"
        "Output: {precision, recall, f1, negative_label, counts, per_label}.",
        formatter_class=fmt,
    )
    re_.add_argument("--gold", required=True, metavar="GOLD.tsv", help="gold relation file")
    re_.add_argument("--pred", required=True, metavar="PRED.txt", help="predicted labels, one per line")
    re_.add_argument(
        "--negative-label",
        default=None,
        metavar="L",
        help="the negative class (default: the label containing 'false', any case, or equal to '0')",
    )
    re_.add_argument(
        "--gold-format",
        default="auto",
        choices=RELATION_FORMATS,
        help="layout of GOLD (default: detected)",
    )
    re_.add_argument(
        "--labels",
        default=None,
        metavar="L1,L2,...",
        help="every label a prediction may have (default: the labels of GOLD); any other is an error naming its line",
    )
    re_.set_defaults(func=_score_re)

    qa = tasks.add_parser(
        "qa",
        help="official SQuAD v1.1 / v2.0 evaluation (exact, f1, HasAns/NoAns, best thresholds)",
        description="The official SQuAD evaluation: evaluate-v2.0.py where a question of DATA is "
        "unanswerable or --na-prob is given, else evaluate-v1.1.py (BioASQ converted to SQuAD: every question "
        "answerable); --rules chooses. The two differ where a gold answer normalises to '' (only articles or "
        "punctuation): v2.0 drops it, v1.1 keeps it.\n\nDATA: SQuAD json; PRED: json "
        "{question id: answer text} ('' = no answer); NA: json {question id: no-answer probability}. "
        "A question without a prediction is an error (the official script fails on it too), or with "
        "--allow-missing a wrong answer, counted in every total.\n\n"
        "Output: rules ('1.1' or '2.0'), exact, f1, total, with v2.0 HasAns_*, NoAns_* and best_* when --na-prob "
        "is given, and missing (the number of questions without a prediction).",
        formatter_class=fmt,
    )
    qa.add_argument("--data", required=True, metavar="DATA.json", help="SQuAD-format dataset")
    qa.add_argument("--pred", required=True, metavar="PRED.json", help="predictions {qid: text}")
    qa.add_argument("--na-prob", default=None, metavar="NA.json", help="no-answer probabilities {qid: p}")
    qa.add_argument(
        "--na-prob-thresh",
        type=float,
        default=1.0,
        metavar="T",
        help="predict no-answer when na_prob > T (default: 1.0, as the official script)",
    )
    qa.add_argument("--rules", choices=("auto", "1.1", "2.0"), default="auto",
                    help="which official script's rules (default auto: 2.0 where DATA has an unanswerable question "
                    "or --na-prob is given, else 1.1)")
    qa.add_argument("--allow-missing", action="store_true",
                    help="score a question without a prediction as a wrong answer instead of failing")
    qa.set_defaults(func=_score_qa)

    bioasq = tasks.add_parser(
        "bioasq",
        help="BioASQ factoid strict/lenient accuracy and MRR (official evaluator, -phaseB -e 5)",
        description="Factoid scores as the official BioASQ evaluator (EvaluatorTask1b -phaseB -e 5): "
        "answers lower-cased and compared exactly; gold synonym lists; only the first string of each "
        "submitted inner list counts. A factoid question missing from the submission is an error naming it, as the "
        "evaluator stops on it; --skip-missing leaves such questions out (listed in `missing` and on stderr), as its "
        "2020 version did.\n\n"
        "Give either a BioASQ submission (--pred) or BioBERT-style n-best predictions (--nbest), "
        "which are turned into a submission first (top 5 answers per question).\n\n"
        "Output: {strict_accuracy, lenient_accuracy, mrr, questions, missing}, percentages (the Java "
        "evaluator prints fractions).",
        formatter_class=fmt,
    )
    bioasq.add_argument("--gold", required=True, metavar="GOLDEN.json", help="BioASQ golden json")
    source = bioasq.add_mutually_exclusive_group(required=True)
    source.add_argument("--pred", metavar="SYSTEM.json", help="BioASQ submission json")
    source.add_argument("--nbest", metavar="NBEST.json", help="n-best predictions {qid: [{text, probability}]}")
    bioasq.add_argument("--top-k", type=int, default=5, help="answers kept per question with --nbest (default 5)")
    bioasq.add_argument(
        "--save-submission", metavar="FILE", help="with --nbest: also write the BioASQ submission json here"
    )
    bioasq.add_argument("--skip-missing", action="store_true",
                        help="score only the factoid questions the submission answers (the 2020 evaluator's rule)")
    bioasq.set_defaults(func=_score_bioasq)

    doc = tasks.add_parser(
        "doc",
        help="HoC document-level F1 (LinkBERT micro and BLUE variants)",
        description="Hallmarks of Cancer document-level scores. Sentences are grouped by abstract id "
        "(PMID before '_') with labels OR-ed, then both published variants are reported:\n"
        "  linkbert_micro: micro P/R/F1 over all abstract x label cells (LinkBERT/BioM eval_hoc)\n"
        "  blue:           per-abstract P and R averaged, F = 2PR/(P+R) (BLUE eval_hoc.py)\n\n"
        "GOLD: BLURB HoC tsv (header, 'label<TAB>sentence<TAB>id'). PRED: either the same layout "
        "(ids must match) or one line per gold sentence with 10 labels as 'j_v' items or 0/1 values.",
        formatter_class=fmt,
    )
    doc.add_argument("--gold", required=True, metavar="GOLD.tsv", help="BLURB HoC tsv")
    doc.add_argument("--pred", required=True, metavar="PRED", help="predicted label vectors")
    doc.set_defaults(func=_score_doc)
    return score
