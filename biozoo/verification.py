"""Parity certificates (`biozoo verify`): a checkpoint loaded by biozoo and by transformers (in
a child process, so TensorFlow and torch never share one), compared on fixed biomedical
sentences; the result is written into the preset as parity_certificate.json.

The certificate holds the max |diff| of the sequence output, the pooled output and every
converted head (MLM logits, ELECTRA's replaced-token logits, BERT's next-sentence and ALBERT's
sentence-order logits, a task checkpoint's token / sequence classification or QA logits; per
token over the sentences' valid positions); whether the tokenizers give identical ids on each sentence; both libraries'
versions and the date.

Example:
    >>> certificate = verify("bioformer_8l")
    >>> certificate["max_abs_diff"]["sequence_output"] <= 1e-4
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version

import keras
import numpy as np

import biozoo  # __version__
from biozoo import api, presets
from biozoo._io import atomic_write_json
from biozoo.errors import CheckpointError
from biozoo.export.certificate import FIXED_SENTENCES, TOLERANCE, packed_fixed_inputs
from biozoo.preset_files import PARITY_CERTIFICATE_FILE, read_heads, read_provenance, weights_format
from biozoo.presets.hub import is_commit, snapshot_commit
from biozoo.task_kinds import task_kind
from biozoo.tasks import MaskedLM, ReplacedTokenDetector
from biozoo.tasks.finetuned import load_task

__all__ = ["verify", "PARITY_CERTIFICATE_FILE", "sequence_length", "TOLERANCE"]

# float32 on both sides: the families' parity tests hold encoder outputs to 1e-4; logits over a
# vocabulary are sums of hundreds of products of larger numbers
# converted head -> the certificate's output name
HEAD_OUTPUTS = {"mlm": "mlm_logits", "rtd": "rtd_logits", "nsp": "nsp_logits", "sop": "sop_logits",
                "classifier": "task_logits", "qa": "task_logits"}
# outputs with one value per sequence rather than per token
_PER_SEQUENCE = ("pooled_output", "nsp_logits", "sop_logits")
# A few more sentences for the tokenizer: casing, accents, digits and symbols.
EXTRA_SENTENCES = (
    "IL-6 and TNF-α levels rose 2.5-fold (p<0.001) in Crohn's disease.",
    "Naïve CD4+ T-cells; β-catenin/Wnt signalling [Fig. 3B].",
    "GLUT4 translocation requires AS160 (TBC1D4) phosphorylation at Thr642.",
)

_CHILD = r"""
import inspect, json, sys
import numpy as np
import torch, transformers
hf_dir, inputs_path, out_path, heads, lowercase, weights_format = sys.argv[1:7]
# the weights biozoo converted, not another format the folder holds (transformers prefers safetensors)
load = {} if weights_format == "auto" else {"use_safetensors": weights_format == "safetensors"}
heads = [h for h in heads.split(",") if h]
data = np.load(inputs_path)
config = transformers.AutoConfig.from_pretrained(hf_dir)
model = transformers.AutoModel.from_pretrained(hf_dir, **load).eval()
kwargs = {"input_ids": torch.tensor(data["token_ids"], dtype=torch.long),
          "attention_mask": torch.tensor(data["padding_mask"], dtype=torch.long)}
if "token_type_ids" in inspect.signature(model.forward).parameters:  # DistilBERT has no token types
    kwargs["token_type_ids"] = torch.tensor(data["segment_ids"], dtype=torch.long)
out = {}
with torch.no_grad():
    o = model(**kwargs)
    out["sequence_output"] = o.last_hidden_state.float().numpy()
    if getattr(o, "pooler_output", None) is not None:
        out["pooled_output"] = o.pooler_output.float().numpy()
    if "mlm" in heads:
        out["mlm_logits"] = transformers.AutoModelForMaskedLM.from_pretrained(hf_dir, **load).eval()(**kwargs).logits.float().numpy()
    if "rtd" in heads:
        out["rtd_logits"] = transformers.ElectraForPreTraining.from_pretrained(hf_dir, **load).eval()(**kwargs).logits.float().numpy()
    if "nsp" in heads or "sop" in heads:
        o = transformers.AutoModelForPreTraining.from_pretrained(hf_dir, **load).eval()(**kwargs)
        if "nsp" in heads:
            out["nsp_logits"] = o.seq_relationship_logits.float().numpy()
        if "sop" in heads:
            out["sop_logits"] = o.sop_logits.float().numpy()
    if "classifier" in heads or "qa" in heads:
        o = getattr(transformers, config.architectures[0]).from_pretrained(hf_dir, **load).eval()(**kwargs)
        if "qa" in heads:
            out["task_logits"] = torch.stack([o.start_logits, o.end_logits], -1).float().numpy()
        else:
            out["task_logits"] = o.logits.float().numpy()
np.savez(out_path, **out)
options = {} if lowercase == "auto" else {"do_lower_case": lowercase == "true"}
tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir, **options)
sentences = json.loads(open(inputs_path + ".sentences.json", encoding="utf-8").read())
ids = [tokenizer(s, add_special_tokens=False)["input_ids"] for s in sentences]
json.dump({"ids": ids, "transformers": transformers.__version__, "torch": torch.__version__},
          open(out_path + ".json", "w", encoding="utf-8"))
"""


def _hf_source(handle):
    """(HF directory of `handle`, its registry entry or None)."""
    try:
        return presets.hf_source_directory(handle)
    except ValueError:
        raise ValueError(f"{handle}: verify compares a checkpoint in HuggingFace form with transformers; give a "
                         "registry name, hf://org/repo or a local HF directory (a Keras preset has no transformers "
                         "counterpart)") from None


def _same_commit(handle, hf_dir, preset_dir):
    """Refuse to compare a conversion with a hub snapshot of another commit (a moving revision such
    as main, converted before it moved and not converted again offline)."""
    source = snapshot_commit(hf_dir)
    provenance = read_provenance(preset_dir)
    if source is None or not provenance.get("hf_repo"):
        return
    converted = provenance.get("commit") or (provenance["revision"] if is_commit(provenance.get("revision")) else None)
    if converted != source:
        raise CheckpointError(
            f"{handle}: the cached conversion {preset_dir} was made from commit {converted or '(not recorded)'} of "
            f"hf://{provenance['hf_repo']}@{provenance.get('revision')}, but the snapshot to compare it with, {hf_dir}, "
            f"is commit {source}: the comparison would measure the difference between two commits. Run it online "
            "(the conversion is then made again from the hub's current commit), or delete that folder and run again "
            "(it is converted from the snapshot)")


def _transformers_side(hf_dir, inputs, sentences, heads, lowercase, load_format="auto"):
    with tempfile.TemporaryDirectory(prefix="biozoo-verify-") as scratch:
        inputs_path = os.path.join(scratch, "inputs.npz")
        np.savez(inputs_path, **inputs)
        with open(inputs_path + ".sentences.json", "w", encoding="utf-8") as f:
            json.dump(list(sentences), f)
        out_path = os.path.join(scratch, "out.npz")
        flag = "auto" if lowercase is None else ("true" if lowercase else "false")
        result = subprocess.run([sys.executable, "-c", _CHILD, str(hf_dir), inputs_path, out_path, ",".join(heads), flag,
                                 load_format],
                                capture_output=True, text=True)
        if result.returncode:
            last = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
            if "No module named 'torch'" in last or "No module named 'transformers'" in last:
                raise CheckpointError(f"verify compares with transformers, which needs torch and transformers in this "
                                      f"Python: {last}")
            raise CheckpointError(f"transformers could not load {hf_dir}: {last}")
        with np.load(out_path) as data:
            outputs = {k: data[k] for k in data.files}
        with open(out_path + ".json", encoding="utf-8") as f:
            return outputs, json.load(f)


def verify(handle, sentences=(), write=True):
    """Compare `handle` under biozoo and under transformers; return the certificate (and write
    it into the converted preset as parity_certificate.json unless `write` is False)."""
    hf_dir, entry = _hf_source(handle)
    preset_dir = presets.resolve_preset(handle)
    _same_commit(handle, hf_dir, preset_dir)
    tokenizer = api.Tokenizer.from_preset(handle)
    inputs = packed_fixed_inputs(tokenizer, sequence_length(preset_dir))
    mask = inputs["padding_mask"].astype(bool)
    heads = read_heads(preset_dir)[0]
    converted = sorted({key.split("/")[0] for key in heads})
    compared = [h for h in converted if h in HEAD_OUTPUTS]
    heads_not_compared = {}
    if {"classifier", "qa"} & set(compared) and not _task_class(preset_dir):
        for head in {"classifier", "qa"} & set(compared):
            compared.remove(head)
            heads_not_compared[head] = "config.json names no architecture: which transformers task class is unknown"
    all_sentences = list(FIXED_SENTENCES) + list(EXTRA_SENTENCES) + list(sentences)
    lowercase = entry["tokenizer"]["lowercase"] if entry else None
    reference, child = _transformers_side(hf_dir, inputs, all_sentences, compared, lowercase,
                                          weights_format(read_provenance(preset_dir).get("weights") or []) or "auto")

    backbone = api.from_preset(handle)
    ours = {k: np.asarray(v) for k, v in backbone(inputs).items()}
    if "mlm" in compared:
        positions = np.tile(np.arange(inputs["token_ids"].shape[1], dtype=np.int32), (len(mask), 1))
        ours["mlm_logits"] = np.asarray(MaskedLM.from_preset(handle)({**inputs, "mask_positions": positions}))
    if "rtd" in compared:
        ours["rtd_logits"] = np.asarray(ReplacedTokenDetector.from_preset(handle)(inputs))
    per_sequence = set(_PER_SEQUENCE)
    for sentence_task in {"nsp", "sop"} & set(compared):  # MaskedLMPretrainer's Dense(2) on the pooled output
        kernel, bias = heads[f"{sentence_task}/dense/kernel"], heads[f"{sentence_task}/dense/bias"]
        ours[f"{sentence_task}_logits"] = ours["pooled_output"].astype(np.float32) @ kernel + bias
    if {"classifier", "qa"} & set(compared):
        task = load_task(handle)
        ours["task_logits"] = np.asarray(task.task(inputs))
        if task_kind(task.kind).logits_per == "sequence":
            per_sequence.add("task_logits")
    diffs, not_compared = {}, {}
    for name, expected in reference.items():
        if name not in ours:  # AutoModel builds a pooler the checkpoint lacks, with random weights
            not_compared[name] = "the checkpoint has no trained weights for it"
            continue
        got = ours[name]
        if got.shape != expected.shape:
            raise ValueError(f"{name}: biozoo gives shape {got.shape}, transformers {expected.shape}")
        delta = np.abs(got.astype(np.float64) - expected.astype(np.float64))
        diffs[name] = float((delta if name in per_sequence else delta[mask]).max())  # per token: valid ones
    our_ids = [list(map(int, ids)) for ids in tokenizer.ids(all_sentences)]
    differing = [i for i, (a, b) in enumerate(zip(our_ids, child["ids"])) if a != b]
    certificate = {
        "handle": str(handle), "registry_name": entry["name"] if entry else None, "source": str(hf_dir),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {"biozoo": biozoo.__version__, "keras": keras.__version__, "backend": keras.backend.backend(),
                     "tensorflow": _version("tensorflow"),
                     "transformers": child["transformers"], "torch": child["torch"]},
        "sentences": len(FIXED_SENTENCES), "max_abs_diff": diffs, "tolerance": TOLERANCE,
        "outputs_not_compared": not_compared, "heads_compared": compared, "heads_not_compared": heads_not_compared,
        "tokenizer": {"sentences": len(all_sentences), "identical": len(all_sentences) - len(differing),
                      "differing": [{"sentence": all_sentences[i], "biozoo": our_ids[i], "transformers": child["ids"][i]}
                                    for i in differing[:5]]},
    }
    certificate["passed"] = all(d <= TOLERANCE[n] for n, d in diffs.items()) and not differing
    if write:
        atomic_write_json(os.path.join(preset_dir, PARITY_CERTIFICATE_FILE), certificate)
    return certificate


def _task_class(preset_dir):
    return ((read_provenance(preset_dir).get("hf_config") or {}).get("architectures") or [None])[0]


def sequence_length(preset_dir, longest=128):
    """The certificate's sequence length: 128, or the model's positions when it has fewer."""
    with open(os.path.join(preset_dir, "config.json"), encoding="utf-8") as f:
        positions = json.load(f).get("config", {}).get("max_sequence_length") or longest
    return min(longest, positions)


def _version(package):
    """The installed version of `package` (None where it is not installed), without importing it."""
    try:
        return version(package)
    except PackageNotFoundError:
        return None
