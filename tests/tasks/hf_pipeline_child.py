"""Run transformers' pipelines (and the bare models) on requests, in a process of their own.

Usage: python hf_pipeline_child.py REQUESTS.json OUT.json. Each request names an HF directory,
a pipeline ("token-classification" or "text-classification"), texts (and pairs) and, for token
classification, aggregation strategies ("forward_once": one forward pass per text for all of
them, through the pipeline's own preprocess / forward / postprocess). The output holds, per request, the pipeline's results,
the token ids and the logits of each text."""

import json
import sys

import torch
import transformers


def _entities(found):
    return [{"start": int(e["start"]), "end": int(e["end"]), "type": e.get("entity_group", e.get("entity")),
             "score": float(e["score"]), **({"index": int(e["index"])} if "index" in e else {})} for e in found]


def token_classification(request):
    if request.get("forward_once"):
        return token_classification_forward_once(request)
    results = {}
    for strategy in request["strategies"]:
        pipe = transformers.pipeline("token-classification", model=request["dir"], aggregation_strategy=strategy,
                                     device="cpu")
        results[strategy] = [_entities(found) for found in pipe(request["texts"])]
    return results


def token_classification_forward_once(request):
    """The pipeline's own preprocess, forward and postprocess (what `pipe(text)` runs), with one
    forward pass per text shared by every aggregation strategy."""
    from transformers.pipelines.token_classification import AggregationStrategy

    pipe = transformers.pipeline("token-classification", model=request["dir"], device="cpu")
    results = {strategy: [] for strategy in request["strategies"]}
    for text in request["texts"]:
        outputs = [pipe.forward(inputs) for inputs in pipe.preprocess(text, is_split_into_words=False)]
        for strategy in request["strategies"]:
            found = pipe.postprocess(outputs, aggregation_strategy=AggregationStrategy[strategy.upper()])
            results[strategy].append(_entities(found))
    return results


def text_classification(request):
    pipe = transformers.pipeline("text-classification", model=request["dir"], top_k=None, device="cpu")
    pairs = request.get("pairs")
    inputs = request["texts"] if pairs is None else [{"text": a, "text_pair": b} for a, b in zip(request["texts"], pairs)]
    return [[{"label": r["label"], "score": float(r["score"])} for r in rows] for rows in pipe(inputs)]


def model_outputs(request):
    task = request["pipeline"]
    cls = transformers.AutoModelForTokenClassification if task == "token-classification" \
        else transformers.AutoModelForSequenceClassification
    model = cls.from_pretrained(request["dir"]).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(request["dir"])
    ids, logits = [], []
    pairs = request.get("pairs") or [None] * len(request["texts"])
    for text, pair in zip(request["texts"], pairs):
        encoded = tokenizer(text, pair, return_tensors="pt")
        with torch.no_grad():
            out = model(**encoded).logits[0]
        ids.append(encoded["input_ids"][0].tolist())
        logits.append(out.tolist())
    return ids, logits


def main(requests_path, out_path):
    requests = json.load(open(requests_path, encoding="utf-8"))
    out = []
    for request in requests:
        run = token_classification if request["pipeline"] == "token-classification" else text_classification
        ids, logits = model_outputs(request) if request.get("logits", True) else ([], [])
        out.append({"pipeline": run(request), "input_ids": ids, "logits": logits})
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
