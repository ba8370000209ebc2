"""Child process of test_across_backends.py, run under one Keras backend (KERAS_BACKEND): loads every
preset of the request, writes its outputs (npz) and its annotations (json), and writes one task
preset of its own, which the parent loads under TensorFlow.

    python backend_child.py REQUEST.json OUT_DIR
"""

import json
import sys
from pathlib import Path

import numpy as np

import biozoo
from biozoo.testing import to_numpy

LOADERS = {"backbone": "from_preset", "ner": "TokenClassifier", "re": "SequenceClassifier",
           "qa": "QuestionAnswerer", "mlm": "MaskedLM", "rtd": "ReplacedTokenDetector"}


def load(kind, preset):
    if kind == "backbone":
        return biozoo.from_preset(preset)
    if kind.startswith("aioner"):
        return biozoo.AionerTagger.from_preset(preset)
    return getattr(biozoo, LOADERS[kind]).from_preset(preset)


def outputs(kind, model, inputs):
    if kind.startswith("aioner"):
        return {}
    if kind == "mlm":
        inputs = {**inputs, "mask_positions": np.array([[1, 3, 5], [0, 2, 9], [4, 5, 6]], np.int32)}
    result = model(inputs)
    return {k: to_numpy(v) for k, v in result.items()} if isinstance(result, dict) else {"logits": to_numpy(result)}


def annotations(kind, model, texts):
    if kind == "ner":
        return model.annotate(texts, aggregation="simple")
    if kind == "re":
        return model.classify(texts)
    if kind == "qa":
        return model.answer(texts[:3], texts[3:6])
    if kind.startswith("aioner"):
        return model.annotate(texts)
    return None


def main(request_path, out_dir):
    import keras

    request = json.loads(Path(request_path).read_text())
    out_dir = Path(out_dir)
    arrays, results = {}, {"backend": keras.backend.backend(), "tensorflow_loaded": "tensorflow" in sys.modules}
    for item in request["items"]:
        model = load(item["kind"], item["preset"])
        inputs = dict(np.load(item["inputs"])) if item.get("inputs") else None
        if inputs is not None:
            for key, value in outputs(item["kind"], model, inputs).items():
                arrays[f"{item['name']}/{key}"] = value
        results[item["name"]] = annotations(item["kind"], model, request["texts"])
    written = request.get("write")
    if written:  # a task preset written under this backend, and what it computes here
        task = biozoo.TokenClassifier.from_preset(written["backbone"], label_names=["O", "B-X", "I-X"])
        task.save_to_preset(str(out_dir / "written_here"))
        arrays["written_here/logits"] = to_numpy(task(dict(np.load(written["inputs"]))))
    results["tensorflow_loaded"] = "tensorflow" in sys.modules
    np.savez(out_dir / "outputs.npz", **arrays)
    (out_dir / "results.json").write_text(json.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:])
