"""ONNX and LiteRT exports of a fine-tuned task (or a backbone preset): a model file that takes
token ids, its accuracy certificate, the tokenizer's files and a README.

    OUT/model.onnx | OUT/model.tflite   inputs input_word_ids, input_mask, input_type_ids
    OUT/accuracy_certificate.json       against biozoo float32 (biozoo.export.certificate)
    OUT/export.json                     format, quantization, inputs, outputs, labels, tokenizer settings,
                                        the longest sequence the model takes
    OUT/tokenizer/                      the tokenizer as transformers' AutoTokenizer loads it
    OUT/crf.npz                         a CRF task's transitions, start and end energies (AIONER's CRF model):
                                        the README's numpy Viterbi decodes the model's `emissions` with them
    OUT/README.md

Example:
    >>> export_ids_model("litert", "out/ner-int8", model="out/ncbi", quantize="int8",
    ...                  data="data/NCBI-disease", split="dev", max_f1_drop=0.5)
"""

from __future__ import annotations

import inspect
import json
import os

import keras
import numpy as np

from biozoo._io import atomic_directory, atomic_write_json, atomic_write_text, check_output, read_json
from biozoo.api import Tokenizer, from_preset
from biozoo.errors import BiozooError
from biozoo.export.certificate import ACCURACY_CERTIFICATE_FILE, TOLERANCE, make_certificate
from biozoo.export.formats import IDS_FORMATS, OPSET, QUANTIZATIONS
from biozoo.export.hf import check_backbone_preset, tokenizer_files, transformers_tokenizer_class
from biozoo.export.onnx import INT8_BATCH_DEPENDENCE, require_onnx
from biozoo.export.tfhub import require_tensorflow_backend
from biozoo.tasks.aioner import crf_decode
from biozoo.tasks.tf_inference import INPUT_NAMES
from biozoo.tokenizers import SentencePieceTokenizer

FORMATS = {name: fmt.file for name, fmt in IDS_FORMATS.items()}  # format -> its model file (IDS_FORMATS' view)
# An export's output -> its row of `TOLERANCE` (float32 on both sides): a float32
# export farther from biozoo's float32 model than that on the fixed sentences is refused
TOLERANCE_ROWS = {"logits": "task_logits", "emissions": "task_logits", "sequence_output": "sequence_output",
                  "pooled_output": "pooled_output"}
CRF_FILE = "crf.npz"  # beside a CRF task's model: transitions [from, to], start and end [labels]
# The README's decoding of a CRF export: the tagger's own (AIONER's tf_crf2 boundary energies at the
# first and last position, padding included; crf_decode's Viterbi, first maximum on ties), shown as its
# source, with the parameters written to CRF_FILE.
README_CRF_LOAD = f"""import numpy as np
crf = dict(np.load("{CRF_FILE}"))  # transitions [from, to], start [labels], end [labels]
"""
README_CRF_DECODE = inspect.getsource(crf_decode)


def float_tolerance(diffs):
    """The tolerance of each output in `diffs` (a certificate's max |diff| by output name)."""
    unknown = sorted(set(diffs) - set(TOLERANCE_ROWS))
    if unknown:
        raise ValueError(f"outputs {unknown} have no tolerance (biozoo.export.ids_models.TOLERANCE_ROWS)")
    return {name: TOLERANCE[TOLERANCE_ROWS[name]] for name in diffs}


def _source(model, preset):
    """(the task (None for a backbone), the network exported, its tokenizer, its kind, its adapter or None,
    label names)"""
    if (model is None) == (preset is None):
        raise ValueError("give one of model (a fine-tuned model / task checkpoint) or preset (a backbone)")
    if model is not None:
        from biozoo.tasks.adapters import load_with_adapter

        kind, adapter, task = load_with_adapter(model)
        network = task.ids_model()
        decoding = task.export_decoding() if hasattr(task, "export_decoding") else None
        if decoding and decoding["output"] != "logits":  # named for what it is (a CRF's emissions)
            network = keras.Model(network.input, {decoding["output"]: network.output}, name=f"{network.name}_export")
        return task, network, task.preprocessor.tokenizer, kind, adapter, list(getattr(task, "label_names", []))

    return None, from_preset(preset), Tokenizer.from_preset(preset), "backbone", None, []


def _convert(fmt, target, quantize, opset):
    if fmt == "onnx":
        from biozoo.export.onnx import OnnxRunner, onnx_model_bytes

        blob = onnx_model_bytes(target, quantize, opset)
        return blob, OnnxRunner(blob)
    from biozoo.tasks.tf_inference import LiteRtRunner, litert_flatbuffer

    blob = litert_flatbuffer(target, quantize)
    return blob, LiteRtRunner(blob)


def export_ids_model(fmt, output, model=None, preset=None, quantize=None, data=None, split=None,
                     max_f1_drop=None, opset=None, overwrite=False):
    """Write an ONNX (`fmt="onnx"`) or LiteRT (`"litert"`) export of `model` (a `biozoo finetune`
    output or task checkpoint) or `preset` (a backbone) to `output`, with its certificate.

    `data`/`split` (default "dev"): the dev split the certificate scores both models on (needed
    for `max_f1_drop`: the export fails, writing nothing, when F1 drops by more points). A float32
    export fails, writing nothing, when an output differs from biozoo's float32 model by more than
    its tolerance (`TOLERANCE_ROWS`) on the certificate's fixed sentences.
    An earlier biozoo output at `output` is replaced only with `overwrite`. Returns the certificate.
    """
    if fmt not in IDS_FORMATS:
        raise ValueError(f"export format {fmt!r}: choose {' or '.join(IDS_FORMATS)}")
    require_tensorflow_backend(f"export {fmt}")
    IDS_FORMATS[fmt].check_quantization(quantize)
    if max_f1_drop is not None and not max_f1_drop >= 0:  # negative or nan
        raise ValueError(f"max_f1_drop (--max-f1-drop) {max_f1_drop} is not 0 or more: it is the F1 points the "
                         "export may lose")
    if max_f1_drop is not None and data is None:
        raise ValueError("max_f1_drop needs dev data (--data) to measure the F1 of both models")
    if split is not None and data is None:
        raise ValueError(f"split {split!r} (--split) needs dev data (--data): it names the split of that data the "
                         "certificate scores both models on")
    split = "dev" if split is None else split
    opset = opset or OPSET
    inputs = [model, preset, data]
    check_output(output, overwrite, inputs)
    if fmt == "onnx":
        require_onnx()
    if preset is not None and model is None:
        check_backbone_preset(preset, fmt)
    task, target, tokenizer, kind, adapter, labels = _source(model, preset)
    backbone = target if task is None else task.backbone
    decoding = task.export_decoding() if hasattr(task, "export_decoding") else None
    # the longest input: the positions, or the length a task with its own decoding runs at (AIONER: its record's)
    max_length = decoding["sequence_length"] if decoding else getattr(backbone, "max_sequence_length", None)
    crf = decoding and decoding["crf"]
    if data is not None and adapter is None:
        raise ValueError("dev data scores task models; a backbone preset has no task metric")
    evaluation = None
    if data is not None:
        examples = adapter.load_for(task, data, only=split)[split]
        if not examples:
            raise ValueError(f"{data}: split {split!r} has no examples to score the export on")
        evaluation = (adapter, task, examples, {"data": str(data), "split": split, "examples": len(examples)})
    blob, runner = _convert(fmt, target, quantize, opset)
    what = {"format": fmt, "quantize": quantize, "source": str(model or preset), "task": kind,
            "max_sequence_length": max_length, **({"opset": opset} if fmt == "onnx" else {})}
    batch_dependence = INT8_BATCH_DEPENDENCE if (fmt, quantize) == ("onnx", "int8") else None
    certificate = make_certificate(target, tokenizer, runner, what, evaluation, batch_dependence)
    certificate["max_f1_drop"] = max_f1_drop
    # float32: each output within its tolerance; a quantized export is held to --max-f1-drop instead
    diffs = certificate["fixed_inputs"]["max_abs_diff"]
    tolerance = float_tolerance(diffs) if quantize is None else None
    certificate["tolerance"] = tolerance
    certificate["within_tolerance"] = None if tolerance is None else all(diffs[n] <= tolerance[n] for n in diffs)
    if certificate["within_tolerance"] is False:
        name = max(diffs, key=lambda n: diffs[n] / tolerance[n])
        raise BiozooError(
            f"{fmt} export of {model or preset}: output {name} differs from biozoo's float32 model by up to "
            f"{diffs[name]:.3g} on the fixed sentences, more than its tolerance {tolerance[name]:g} (max |diff|: "
            + ", ".join(f"{n} {d:.3g}" for n, d in diffs.items()) + f"); nothing was written to {output}.")
    if max_f1_drop is not None and certificate["dev"]["f1_drop"] > max_f1_drop:
        dev = certificate["dev"]
        raise BiozooError(
            f"{fmt}{'/' + quantize if quantize else ''} export of {model}: F1 on {data} ({split}) drops by "
            f"{dev['f1_drop']:.2f} points ({dev['f1_float32']:.2f} -> {dev['f1_export']:.2f}), more than "
            f"--max-f1-drop {max_f1_drop}; nothing was written to {output}.")
    names = sorted(runner(_one_row(tokenizer)))
    info = {"format": fmt, "file": IDS_FORMATS[fmt].file, "quantize": quantize, "task": kind, "source": str(model or preset),
            "inputs": {name: "int32 [batch, seq]" for name in INPUT_NAMES}, "outputs": names,
            "label_names": labels, "tokenizer": tokenizer_settings(tokenizer),
            "batch_dependent": certificate["batch_dependent"], "max_sequence_length": max_length,
            **({"opset": opset} if fmt == "onnx" else {})}
    if decoding:
        info.update(decoder=decoding["decoder"], decoding_reference=decoding["reference"])
    if crf:  # the CRF scores every position: inputs are padded to exactly this length
        info.update(crf_file=CRF_FILE, pad_to_length=max_length)
    with atomic_directory(output, overwrite, inputs) as tmp:
        with open(os.path.join(tmp, IDS_FORMATS[fmt].file), "wb") as f:
            f.write(blob)
        atomic_write_json(os.path.join(tmp, ACCURACY_CERTIFICATE_FILE), certificate)
        atomic_write_json(os.path.join(tmp, "export.json"), info)
        if crf:
            with open(os.path.join(tmp, CRF_FILE), "wb") as f:
                np.savez(f, **{k: np.asarray(v, np.float32) for k, v in crf.items()})
        write_tokenizer(tokenizer, os.path.join(tmp, "tokenizer"), max_length)
        atomic_write_text(os.path.join(tmp, "README.md"), _readme(info, certificate))
    return certificate


def tokenizer_settings(tokenizer):
    """What export.json records of the tokenizer: where its files are, the transformers class
    that loads them, its normalization and its added tokens."""
    if isinstance(tokenizer, SentencePieceTokenizer):
        normalization = {"model": "SentencePiece", "transformers_class": transformers_tokenizer_class(tokenizer),
                         "lowercase": bool(tokenizer.lowercase), "keep_accents": bool(tokenizer.keep_accents)}
    else:
        strip_accents = tokenizer.lowercase if tokenizer.hf_strip_accents is None else tokenizer.hf_strip_accents
        normalization = {"model": "WordPiece", "transformers_class": transformers_tokenizer_class(tokenizer),
                         "lowercase": bool(tokenizer.lowercase), "strip_accents": bool(strip_accents)}
    return {"files": "tokenizer/", **normalization, "added_tokens": list(tokenizer.added_tokens)}


def write_tokenizer(tokenizer, directory, max_length=None):
    """Write `tokenizer` to `directory` as `transformers.AutoTokenizer.from_pretrained(directory)`
    loads it with biozoo's ids: `biozoo.export.hf.tokenizer_files`, with the class to build in
    tokenizer_config.json (there is no config.json to name the model type)."""
    os.makedirs(directory, exist_ok=True)
    tokenizer_files(tokenizer, directory, max_length)
    config_path = os.path.join(directory, "tokenizer_config.json")
    config = read_json(config_path, "tokenizer config")
    config["tokenizer_class"] = transformers_tokenizer_class(tokenizer)
    atomic_write_json(config_path, config)


def _one_row(tokenizer):
    ids = np.array([[tokenizer.cls_token_id, tokenizer.sep_token_id]], np.int32)
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}


# The README's code up to the model: `texts` -> int32 `ids`, `mask`, `types`
README_TOKENIZATION = """import transformers
tokenizer = transformers.AutoTokenizer.from_pretrained("tokenizer")
batch = tokenizer(texts, padding=True, truncation=True, return_tensors="np")
ids, mask, types = (batch[k].astype("int32") for k in ("input_ids", "attention_mask", "token_type_ids"))
"""
# The same for a task that reads words its own way (AIONER): `sentences` -> ids; {padding}: the task's
README_WORDS_TOKENIZATION = """import transformers
tokenizer = transformers.AutoTokenizer.from_pretrained("tokenizer")
# sentences: AIONER's words of each sentence between its type's markers: [["<ALL>", "BRCA1", "mutations", ..., "</ALL>"]]
batch = tokenizer(sentences, is_split_into_words=True, padding={padding}, truncation=True, return_tensors="np")
ids, mask, types = (batch[k].astype("int32") for k in ("input_ids", "attention_mask", "token_type_ids"))
"""
README_WORDS_REFERENCE = """
What goes in and comes out around the model is AIONER's own; `{reference}` is its
reference: the text's pre-tokenization (spaces around `= / ( ) < > + - _`), spaCy's sentences and
words, each sentence between its type's marker words (`<ALL>` ... `</ALL>`, 256 words at most), each
word labelled by its first piece (`batch.word_ids(row)`), AIONER's rules from labels to entities.
"""


def _readme(info, certificate):
    fmt, quantize, tokenizer = info["format"], info["quantize"], info["tokenizer"]
    kind = QUANTIZATIONS[quantize]
    if fmt == "onnx":
        load = ("import onnxruntime\n"
                "session = onnxruntime.InferenceSession(\"model.onnx\")\n"
                f"outputs = session.run({info['outputs']!r}, {{\"input_word_ids\": ids, \"input_mask\": mask, "
                "\"input_type_ids\": types})")
        runtime = "onnxruntime"
    else:
        load = ("from ai_edge_litert.interpreter import Interpreter\n"
                "run = Interpreter(model_path=\"model.tflite\").get_signature_runner()\n"
                "outputs = run(input_word_ids=ids, input_mask=mask, input_type_ids=types)")
        runtime = "ai-edge-litert"
    normalization = ", ".join(f"{key} {tokenizer[key]}" for key in ("lowercase", "strip_accents", "keep_accents")
                              if key in tokenizer)
    diffs = ", ".join(f"{k} {v:.2e}" for k, v in certificate["fixed_inputs"]["max_abs_diff"].items())
    dev = certificate["dev"]
    dev_line = ("not measured (no dev data given)" if dev is None else
                f"F1 {dev['f1_export']:.2f} against {dev['f1_float32']:.2f} in float32 on {dev['data']} "
                f"({dev['split']}, {dev['examples']} examples): a drop of {dev['f1_drop']:.2f} points")
    decoder, output = info.get("decoder"), info["outputs"][0] if info["outputs"] else None
    labels = (f"\nLabels ({output}' last axis): {', '.join(info['label_names'])}\n" if info["label_names"] else "")
    longest = info["max_sequence_length"]
    length_note = ("" if longest is None else
                   f"\n`seq` is at most **{longest}** tokens, `[CLS]` and `[SEP]` included (the model's position "
                   f"embeddings; longer\ninputs are not defined): `truncation=True` below cuts to {longest} "
                   "(the tokenizer's `model_max_length`).\n")
    tokenization = README_TOKENIZATION
    decoding = (f"\nNeither biozoo nor Keras is needed: transformers' tokenizer and {runtime} run it. The task's\n"
                "decoding (words, entities, answer spans) is not in the model: biozoo's TokenClassifier /\n"
                "QuestionAnswerer do it.\n")
    if decoder == "crf":
        tokenization = README_WORDS_TOKENIZATION.format(padding='"max_length"')
        length_note = (f"\n**Every input is padded to exactly {longest} tokens** (`padding=\"max_length\"`; the "
                       f"tokenizer's `model_max_length`), as AIONER runs\nits CRF: it scores every position, padding "
                       f"included, with its end energies at position {longest - 1}. Other widths decode differently.\n")
        load += f"\n{README_CRF_LOAD}\n{README_CRF_DECODE}\nlabel_ids = crf_decode(outputs[0], crf)  # [batch, {longest}]"
        decoding = (f"\n`{output}` are the CRF's inputs, not labels: their argmax is not AIONER's output. The labels "
                    f"are\n`crf_decode`'s path above (AIONER's Viterbi; `{info['crf_file']}`: `transitions` [from, to], "
                    f"`start`, `end` [labels]).\nNeither biozoo nor Keras is needed: transformers' tokenizer, {runtime} "
                    "and numpy run it.\n")
    elif decoder is not None:
        tokenization = README_WORDS_TOKENIZATION.format(padding="True")
        decoding = (f"\nEach word takes the label of the largest of its first piece's `{output}` (AIONER's softmax).\n"
                    f"Neither biozoo nor Keras is needed: transformers' tokenizer and {runtime} run it.\n")
    if decoder is not None:
        decoding += README_WORDS_REFERENCE.format(reference=info["decoding_reference"])
    tolerance = certificate["tolerance"]
    tolerance_line = ("" if tolerance is None else
                      "\n- Tolerance (float32 exports are refused beyond it): "
                      + ", ".join(f"{k} {v:g}" for k, v in tolerance.items()))
    batching = certificate["batching"]
    batch_note = "" if not certificate["batch_dependent"] else f"""
**Outputs depend on the batch.** {batching['why']}. Run one unpadded sentence per call for
outputs that do not; LiteRT's int8 export (`biozoo export litert --quantize int8`) has no such
dependence. The certificate's figures were measured on these batches:
- fixed sentences: {batching['fixed_inputs']}
- dev: {batching['dev'] or 'not measured'}
- speed: {batching['speed']}
"""
    return f"""# {info['source']}: {fmt.upper()} export ({kind})

This model takes **token ids, not text**. `tokenizer/` holds the checkpoint's tokenizer as
transformers loads it ({tokenizer['model']}, `{tokenizer['transformers_class']}`; {normalization}): it adds
`[CLS]` and `[SEP]`, pads and truncates.

| input | type | meaning |
|---|---|---|
| `input_word_ids` | int32 [batch, seq] | token ids |
| `input_mask` | int32 [batch, seq] | 1 for tokens, 0 for padding |
| `input_type_ids` | int32 [batch, seq] | segment ids (0 for one text) |
{length_note}
Outputs: {', '.join(f'`{n}`' for n in info['outputs'])}.{labels}
```python
{tokenization}{load}
```
{decoding}{batch_note}
## Accuracy certificate (`{ACCURACY_CERTIFICATE_FILE}`)
- Max |diff| to biozoo's float32 model on {len(certificate['fixed_inputs']['sentences'])} fixed sentences: {diffs}{tolerance_line}
- Dev: {dev_line}
- Speed: {certificate['speed']['export']} sentences/s against {certificate['speed']['float32']} in float32
  ({certificate['speed']['unit']})

`export.json`: {json.dumps({k: info[k] for k in ('format', 'quantize', 'task', 'batch_dependent',
                                                 'max_sequence_length', 'decoder', 'pad_to_length')
                       if k in info})}
"""
