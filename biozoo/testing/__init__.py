"""The test battery every biozoo family passes, driven by one table of tiny cases.

Modelled on KerasHub's `TestCase.run_backbone_test` / `run_preset_test`. `CASES` holds, per
family (and per variant that flips an architectural switch), a tiny transformers config,
every published HF class biozoo converts (with the heads its preset keeps), the HF classes
whose heads the tasks reproduce, the file formats and the export expectations. Adding a
family or a published HF class means adding to `CASES` only: the tests read their
parameters from `cases(...)`.

The configs are small but exercise every architectural switch (embedding projection, shared
ALBERT groups, MobileBERT bottlenecks and stacked FFNs, pre-LN Megatron), and use
initializer_range 0.2 so that an approximate GELU or a wrong epsilon shows in the outputs.
Everything is compared with transformers (imported lazily: importing biozoo never imports
torch; running the battery needs `pip install 'biozoo[test]'`).

Example:
    >>> import pytest
    >>> from biozoo import testing
    >>> @pytest.mark.parametrize("name", testing.cases("electra"))
    ... def test_backbone(name, tmp_path):
    ...     testing.run_backbone_test(name, tmp_path)
    >>> testing.cases("electra", kind="task")[:2]
    [('electra', 'rtd', 'ElectraForPreTraining'), ('electra', 'mlm', 'ElectraForMaskedLM')]
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import re
from pathlib import Path

import numpy as np

VOCAB_SIZE = 99
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TOLERANCE = 1e-4  # max |diff| against transformers, float32
FORMATS = ("safetensors", "bin")
# biozoo task class per task kind; "mlm", "rtd" and "qa" heads come from the converter,
# "ner" and "classification" heads are copied from the HF model by `run_task_test`.
TASKS = {"ner": "TokenClassifier", "classification": "SequenceClassifier", "qa": "QuestionAnswerer",
         "mlm": "MaskedLM", "rtd": "ReplacedTokenDetector"}
CONVERTED_HEADS = ("mlm", "rtd", "qa")
IDS_EXPORTS = ("onnx", "litert")
MIXED_POLICIES = ("mixed_bfloat16", "mixed_float16")
# Mixed precision: max |diff| to the float32 outputs, relative to max(1, max |float32 output|).
# Each op's result is rounded to the compute dtype: unit roundoff 2^-11 ~ 4.9e-4 for float16
# (11 significant bits), 2^-8 ~ 3.9e-3 for bfloat16 (8 bits). Through the embeddings, 2 to 4
# blocks of matmuls, softmax and normalisation the errors add up to about 3-4 unit roundoffs
# (measured on these configs, all positions: float16 <= 1.4e-3, bfloat16 <= 1.4e-2 relative,
# worst mobilebert_layer_norm). The bounds are ~12 unit roundoffs, 3-4x the measured worst
# case, so they hold across CPU kernels yet fail when a part of the model is wrong in mixed
# precision (e.g. a mask, scale or epsilon cast into a dtype that cannot hold it).
MIXED_TOLERANCE = {"mixed_float16": 6e-3, "mixed_bfloat16": 5e-2}


@dataclasses.dataclass(frozen=True)
class Case:
    """One row of the table: a tiny transformers config of a family and what biozoo does with it.

    - `published`: HF class -> the heads its converted preset keeps ("mlm", "nsp", "sop",
      "rtd", "qa"); the first class is the bare encoder.
    - `tasks`: task kind -> HF class whose head the biozoo task must reproduce, besides the
      "mlm" / "rtd" / "qa" heads of the published classes.
    - `garden`: config overrides under which the Model Garden export holds the case (None:
      no Garden export); `garden_refusal`: the message with which exporting the case as is
      is refused (None: it is not).
    """

    name: str
    family: str
    config_class: str
    config: dict
    published: dict
    tasks: dict = dataclasses.field(default_factory=dict)
    tokenizer: str = "wordpiece"  # or "sentencepiece"
    formats: tuple = FORMATS
    garden: dict = None
    garden_refusal: str = None

    @property
    def model_class(self):
        """The bare encoder class (BertModel...)."""
        return next(iter(self.published))

    def __str__(self):
        return self.name


def _bert_like(prefix):
    """The published classes (-> heads kept) and task heads of a BERT-style family's HF classes."""
    published = {f"{prefix}Model": (), f"{prefix}ForMaskedLM": ("mlm",),
                 f"{prefix}ForPreTraining": ("mlm", "nsp"), f"{prefix}ForQuestionAnswering": ("qa",)}
    heads = {"ner": f"{prefix}ForTokenClassification", "classification": f"{prefix}ForSequenceClassification"}
    return published, heads


def _table():
    bert, bert_tasks = _bert_like("Bert")
    albert, albert_tasks = _bert_like("Albert")
    albert["AlbertForPreTraining"] = ("mlm", "sop")
    mobilebert, mobilebert_tasks = _bert_like("MobileBert")
    megatron, megatron_tasks = _bert_like("MegatronBert")
    _, electra_tasks = _bert_like("Electra")
    _, distilbert_tasks = _bert_like("DistilBert")
    rows = [
        Case("bert", "bert", "BertConfig",
             dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                  max_position_embeddings=64, hidden_act="gelu"),
             bert, bert_tasks, garden=dict(layer_norm_eps=1e-12)),
        Case("bert_gelu_new_eps", "bert", "BertConfig",
             dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                  max_position_embeddings=64, hidden_act="gelu_new", layer_norm_eps=1e-3, type_vocab_size=3),
             {"BertModel": ()}, {**bert_tasks, "mlm": "BertForMaskedLM"},  # the MLM transform uses both
             garden_refusal="layer_norm_epsilon is 0.001"),
        Case("albert", "albert", "AlbertConfig",
             dict(embedding_size=16, hidden_size=32, num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2,
                  num_attention_heads=4, intermediate_size=37, max_position_embeddings=64, hidden_act="gelu"),
             albert, albert_tasks, tokenizer="sentencepiece",
             garden=dict(num_hidden_groups=1, inner_group_num=1), garden_refusal="2 groups x 2 inner layers"),
        Case("electra", "electra", "ElectraConfig",
             dict(embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                  max_position_embeddings=64, hidden_act="gelu"),
             {"ElectraModel": (), "ElectraForPreTraining": ("rtd",), "ElectraForMaskedLM": ("mlm",),
              "ElectraForQuestionAnswering": ("qa",)},
             electra_tasks, garden=dict(layer_norm_eps=1e-12)),
        Case("distilbert", "distilbert", "DistilBertConfig",
             dict(dim=32, n_layers=2, n_heads=4, hidden_dim=37, max_position_embeddings=64, activation="gelu"),
             {"DistilBertModel": (), "DistilBertForMaskedLM": ("mlm",), "DistilBertForQuestionAnswering": ("qa",)},
             distilbert_tasks, garden={}),
        Case("mobilebert", "mobilebert", "MobileBertConfig",
             dict(embedding_size=16, hidden_size=64, intra_bottleneck_size=32, true_hidden_size=32,
                  num_attention_heads=4, intermediate_size=48, num_hidden_layers=2, num_feedforward_networks=3,
                  max_position_embeddings=64, hidden_act="relu", normalization_type="no_norm",
                  classifier_activation=False,
                  # NoNorm never renormalises: at 0.2 the states reach ~70 and float32 rounding alone
                  # nears 1e-4. ReLU and NoNorm have no GELU or epsilon to expose; the layer_norm
                  # variant below keeps 0.2.
                  initializer_range=0.1),
             mobilebert, mobilebert_tasks, garden_refusal="mobilebert"),
        Case("mobilebert_layer_norm", "mobilebert", "MobileBertConfig",
             dict(embedding_size=16, hidden_size=64, intra_bottleneck_size=32, true_hidden_size=32,
                  num_attention_heads=4, intermediate_size=48, num_hidden_layers=2, num_feedforward_networks=2,
                  max_position_embeddings=64, hidden_act="gelu", normalization_type="layer_norm",
                  classifier_activation=True),  # the pooler's tanh dense layer exists
             {"MobileBertModel": ()}, {**mobilebert_tasks, "mlm": "MobileBertForMaskedLM"},
             garden_refusal="mobilebert"),
        Case("megatron_bert", "megatron_bert", "MegatronBertConfig",
             dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                  max_position_embeddings=64, hidden_act="gelu"),
             megatron, megatron_tasks, garden_refusal="megatron_bert"),
    ]
    return {case.name: case for case in rows}


CASES = _table()


def get_case(case):
    """The `Case` of a name (a `Case` passes through)."""
    return case if isinstance(case, Case) else CASES[case]


def cases(family=None, kind="backbone"):
    """Parameters for `pytest.mark.parametrize`, from `CASES` (all families when `family` is None).

    kind:
      - "backbone": case names (the family and its variants);
      - "parity": (name, hf_class, fmt) for every published class and file format;
      - "heads": (name, hf_class) for the published classes that carry heads;
      - "task": (name, task kind, hf_class) for every head a biozoo task reproduces;
      - "hf_export": (name, bare encoder class);
      - "garden": (name, bare encoder class, overrides) for the Garden export;
      - "garden_refusal": (name, bare encoder class, message) for the refused Garden exports;
      - "ids_export": (name, format) for the ONNX and LiteRT exports of the family's NER model
        (the family's base case only: one conversion per family and format).
    """
    rows = [c for c in CASES.values() if family is None or c.family == family]
    if kind == "backbone":
        return [c.name for c in rows]
    if kind == "parity":
        return [(c.name, cls, fmt) for c in rows for cls in c.published for fmt in c.formats]
    if kind == "heads":
        return [(c.name, cls) for c in rows for cls, heads in c.published.items() if heads]
    if kind == "task":
        out = []
        for c in rows:
            pairs = [(k, cls) for cls, heads in c.published.items() for k in CONVERTED_HEADS if k in heads]
            pairs += [(k, cls) for k, cls in c.tasks.items() if (k, cls) not in pairs]
            out += [(c.name, k, cls) for k, cls in pairs]
        return out
    if kind == "hf_export":
        return [(c.name, c.model_class) for c in rows]
    if kind == "garden":
        return [(c.name, c.model_class, c.garden) for c in rows if c.garden is not None]
    if kind == "garden_refusal":
        return [(c.name, c.model_class, c.garden_refusal) for c in rows if c.garden_refusal]
    if kind == "ids_export":
        return [(c.name, fmt) for c in rows if c.name == c.family for fmt in IDS_EXPORTS]
    raise ValueError(f"unknown kind {kind!r}")


def family_of(name):
    """The biozoo family of a case name ("bert_gelu_new_eps" -> "bert")."""
    return get_case(name).family


# ---- tiny HF models -----------------------------------------------------------------------


def wordpiece_vocab():
    """The 99-token WordPiece vocabulary of the tiny models."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    words = ["the", "gene", "cancer", "protein", "cell", "##s", "##ing", "##ed", "brca", "##1", ".", ",", "(", ")", "-"]
    tokens = list(dict.fromkeys(SPECIAL + words + letters + ["##" + c for c in letters]))
    tokens += [f"[unused{i}]" for i in range(VOCAB_SIZE - len(tokens))]
    return tokens[:VOCAB_SIZE]


def tiny_sentencepiece(directory):
    """An ALBERT-style 40-piece SentencePiece model (fits the tiny models' 99-row embeddings)."""
    import sentencepiece as spm

    os.makedirs(directory, exist_ok=True)
    prefix = os.path.join(directory, "spiece")
    if not os.path.exists(prefix + ".model"):
        text = [" ".join(w for w in wordpiece_vocab() if w.isalpha())] * 50
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(text), model_prefix=prefix, vocab_size=40, model_type="unigram",
            pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"], minloglevel=2,
        )
    return Path(prefix + ".model")


def read_sentences(path, limit=None):
    """Sentences (words joined by spaces) of a token<TAB>tag file."""
    sentences, words = [], []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            if words:
                sentences.append(" ".join(words))
                words = []
        elif not line.startswith("-DOCSTART-"):
            words.append(line.split("\t")[0])
    if words:
        sentences.append(" ".join(words))
    return sentences[:limit] if limit else sentences


def train_spiece(prefix, text, vocab_size):
    """Train an ALBERT-style SentencePiece model (unigram; <pad> <unk> [CLS] [SEP] [MASK])."""
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(text), model_prefix=str(prefix), vocab_size=vocab_size,
        model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], minloglevel=2,
    )
    return Path(str(prefix) + ".model")


def chemprot_subset(shared_data, target, counts=None):
    """The first lines of ChemProt's train / dev / test splits (`counts` per split) in `target`."""
    counts = counts or {"train": 96, "dev": 24, "test": 24}
    target.mkdir(parents=True, exist_ok=True)
    for split, count in counts.items():
        lines = (shared_data / "re" / "chemprot" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        (target / f"{split}.tsv").write_text("\n".join(lines[:count]) + "\n", encoding="utf-8")
    return target


def bioasq_dev(shared_data):
    """The BioASQ 7b factoid dev file (SQuAD v1.1): ../shared/data's qa/bioasq/dev.json, or the same
    file as `biozoo data download tests` saves it (qa/bioasq/test.json)."""
    folder = shared_data / "qa" / "bioasq"
    return folder / "dev.json" if (folder / "dev.json").exists() else folder / "test.json"


def make_config(name, **overrides):
    """The transformers config of a case (`name` may also be a `Case`)."""
    import transformers

    case = get_case(name)
    kwargs = {"initializer_range": 0.2, **case.config, "vocab_size": VOCAB_SIZE, **overrides}
    return getattr(transformers, case.config_class)(**kwargs)


def make_model(name, model_cls, seed=0, **overrides):
    """A random transformers model of a case, in eval mode, with non-trivial 1-D parameters."""
    import torch
    import transformers

    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(make_config(name, **overrides)).eval()
    # Random, non-trivial LayerNorm/NoNorm parameters and biases (HF initialises them to 1/0).
    with torch.no_grad():
        for _, param in model.named_parameters():
            if param.ndim == 1:
                param.add_(torch.randn_like(param) * 0.1)
    return model


def save_hf_directory(model, directory, fmt="safetensors", tokenizer="wordpiece", spiece_model=None,
                      vocab_file=None):
    """Save `model` as an HF directory: config.json, weights in `fmt`, vocabulary."""
    import shutil

    import torch

    os.makedirs(directory, exist_ok=True)
    model.config.save_pretrained(directory)
    state = model.state_dict()
    if fmt == "safetensors":
        from safetensors.torch import save_file

        # safetensors refuses shared storage: drop tied copies, as save_pretrained does.
        seen, unique = {}, {}
        for key, tensor in state.items():
            ptr = (tensor.data_ptr(), tuple(tensor.shape))
            if ptr in seen:
                continue
            seen[ptr] = key
            unique[key] = tensor.contiguous()
        save_file(unique, os.path.join(directory, "model.safetensors"), metadata={"format": "pt"})
    elif fmt == "bin":
        torch.save(state, os.path.join(directory, "pytorch_model.bin"))
    else:
        raise ValueError(fmt)
    if tokenizer == "sentencepiece":
        shutil.copy(spiece_model, os.path.join(directory, "spiece.model"))
    elif vocab_file is not None:
        shutil.copy(vocab_file, os.path.join(directory, "vocab.txt"))
    else:
        with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(wordpiece_vocab()) + "\n")
        with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
            json.dump({"do_lower_case": True}, f)
    return directory


def save_case(name, model_cls, directory, fmt="safetensors", spiece_model=None, base_only=False, **overrides):
    """(model, HF directory) of a case: `make_model` saved with the case's tokenizer. With
    `base_only` only the encoder (`model.base_model`) is saved, as for a fine-tuned head that
    biozoo does not convert."""
    case = get_case(name)
    model = make_model(case, model_cls, **overrides)
    if case.tokenizer == "sentencepiece" and spiece_model is None:
        spiece_model = tiny_sentencepiece(Path(directory) / "spm")
    saved = model.base_model if base_only else model
    directory = save_hf_directory(saved, Path(directory) / "hf", fmt, case.tokenizer, spiece_model)
    return model, directory


def random_inputs(batch=3, length=20, seed=0, num_segments=2):
    """Backbone inputs: rows 1 and 2 end in padding (6 and length - 7 positions)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCAB_SIZE, (batch, length)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, length - 6:] = 0
    mask[2, 7:] = 0
    ids[mask == 0] = 0
    segments = np.zeros_like(ids)
    segments[:, length // 2:] = num_segments - 1
    segments[mask == 0] = 0
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


def case_inputs(model, **kwargs):
    """`random_inputs` using every token type the model's config has."""
    return random_inputs(num_segments=getattr(model.config, "type_vocab_size", 2), **kwargs)


def torch_inputs(model, inputs):
    """The transformers keyword arguments for `inputs` (no token types for DistilBERT)."""
    import torch

    out = {"input_ids": torch.tensor(inputs["token_ids"], dtype=torch.long),
           "attention_mask": torch.tensor(inputs["padding_mask"], dtype=torch.long)}
    if "token_type_ids" in inspect.signature(model.forward).parameters:
        out["token_type_ids"] = torch.tensor(inputs["segment_ids"], dtype=torch.long)
    return out


def hf_outputs(model, inputs):
    """(sequence_output, pooled_output or None) of the model's base encoder."""
    import torch

    base = model.base_model
    with torch.no_grad():
        out = base(**torch_inputs(base, inputs))
    pooled = getattr(out, "pooler_output", None)
    return out.last_hidden_state.numpy(), None if pooled is None else pooled.numpy()


def max_diff(ours, ref, mask):
    """max |ours - ref| over the positions where `mask` is set."""
    mask = np.asarray(mask).astype(bool)
    return float(np.abs(np.asarray(ours, np.float32) - np.asarray(ref, np.float32))[mask].max())


# head -> {suffix of the HF tensor name: name inside the head}; torch Linear weights are
# [out, in] and kept as Keras kernels [in, out], except names marked "!" (stored as is).
HEAD_TENSORS = {
    "mlm": {
        "predictions.transform.dense.weight": "dense/kernel",
        "predictions.transform.dense.bias": "dense/bias",
        "predictions.transform.LayerNorm.weight": "layer_norm/gamma",
        "predictions.bias": "output_bias",
        "generator_predictions.dense.weight": "dense/kernel",
        "generator_lm_head.bias": "output_bias",
        "vocab_transform.weight": "dense/kernel",
        "vocab_projector.bias": "output_bias",
        # already [in, out]: logits = h @ concat([embedding.T, this])
        "cls.predictions.dense.weight": "extra_output_kernel!",
    },
    "nsp": {"seq_relationship.weight": "dense/kernel", "seq_relationship.bias": "dense/bias"},
    "sop": {"sop_classifier.classifier.weight": "dense/kernel", "sop_classifier.classifier.bias": "dense/bias"},
    "rtd": {
        "discriminator_predictions.dense.weight": "dense/kernel",
        "discriminator_predictions.dense_prediction.weight": "output/kernel",
        "discriminator_predictions.dense_prediction.bias": "output/bias",
    },
    "qa": {"qa_outputs.weight": "dense/kernel", "qa_outputs.bias": "dense/bias"},
}


def populate_hf_cache(hf_cache, repo, revision, source_dir):
    """Lay out `source_dir`'s files as huggingface_hub's cache holds a downloaded snapshot of
    `repo` at `revision`, so that offline `snapshot_download` finds them (a local mirror)."""
    import shutil

    commit = revision if re.fullmatch(r"[0-9a-f]{40}", revision) else "0" * 40
    root = os.path.join(hf_cache, "models--" + repo.replace("/", "--"))
    snapshot = os.path.join(root, "snapshots", commit)
    shutil.copytree(source_dir, snapshot, dirs_exist_ok=True)
    os.makedirs(os.path.join(root, "refs"), exist_ok=True)
    with open(os.path.join(root, "refs", revision if revision != commit else "main"), "w") as f:
        f.write(commit)
    return snapshot


# ---- the battery --------------------------------------------------------------------------


def to_numpy(value):
    """A backend tensor (or a structure of them) as NumPy, whatever the Keras backend."""
    import keras

    return keras.tree.map_structure(lambda v: np.asarray(keras.ops.convert_to_numpy(v)), value)


def _numpy(outputs):
    return {k: to_numpy(v) for k, v in outputs.items()}


def _assert_same_outputs(got, expected, mask, atol, what):
    assert set(got) == set(expected), f"{what}: outputs {sorted(got)} != {sorted(expected)}"
    diff = max_diff(got["sequence_output"], expected["sequence_output"], mask)
    assert diff <= atol, f"{what}: sequence_output max |diff| {diff:.2e} > {atol:g}"
    if "pooled_output" in expected:
        diff = float(np.abs(np.asarray(got["pooled_output"], np.float32) - expected["pooled_output"]).max())
        assert diff <= atol, f"{what}: pooled_output max |diff| {diff:.2e} > {atol:g}"


def _assert_matches_transformers(outputs, model, inputs, what):
    sequence, pooled = hf_outputs(model, inputs)
    diff = max_diff(outputs["sequence_output"], sequence, inputs["padding_mask"])
    assert diff <= TOLERANCE, f"{what}: sequence_output max |diff| to transformers {diff:.2e} > {TOLERANCE:g}"
    if pooled is not None:
        assert "pooled_output" in outputs, f"{what}: transformers has a pooled output, biozoo none"
        diff = float(np.abs(np.asarray(outputs["pooled_output"]) - pooled).max())
        assert diff <= TOLERANCE, f"{what}: pooled_output max |diff| to transformers {diff:.2e} > {TOLERANCE:g}"


def run_parity_test(name, hf_class, fmt, directory, spiece_model=None):
    """`biozoo.from_preset(hf_dir)` of a published class saved as `fmt` equals transformers to
    max |diff| <= 1e-4 (sequence and pooled output); ELECTRA and DistilBERT invent no pooler."""
    import biozoo

    case = get_case(name)
    model, hf_dir = save_case(case, hf_class, directory, fmt, spiece_model)
    backbone = biozoo.from_preset(str(hf_dir))
    inputs = case_inputs(model)
    outputs = _numpy(backbone(inputs))
    _assert_matches_transformers(outputs, model, inputs, f"{case.name} {hf_class} {fmt}")
    if case.family in ("electra", "distilbert"):
        assert set(outputs) == {"sequence_output"}  # no invented pooler
    return backbone


def run_converted_heads_test(name, hf_class, directory, spiece_model=None):
    """The preset of a published class keeps exactly its heads (`Case.published`), each
    tensor converted with the layout rules of `HEAD_TENSORS`, checked against torch."""
    from biozoo import presets
    from biozoo.preset_files import read_heads

    case = get_case(name)
    expected_heads = set(case.published[hf_class])
    model, hf_dir = save_case(case, hf_class, directory, "safetensors", spiece_model)
    heads, config = read_heads(presets.resolve_preset(str(hf_dir)))
    assert {key.split("/")[0] for key in heads} == expected_heads
    assert set(config) == expected_heads
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    for head in expected_heads:
        for source, target in HEAD_TENSORS[head].items():
            key = next((k for k in state if k.endswith(source)), None)
            if key is None:
                continue  # e.g. no transform.LayerNorm for ELECTRA's discriminator head
            if target.endswith("!"):
                target, value = target[:-1], state[key]
            else:
                value = state[key].T if target.endswith("kernel") else state[key]
            np.testing.assert_array_equal(heads[f"{head}/{target}"], value)


def run_backbone_test(name, directory, spiece_model=None, sequence_lengths=(8, 20),
                      mixed_policies=MIXED_POLICIES):
    """The backbone battery for one case, on the bare encoder converted from transformers:

    parity with transformers at every length in `sequence_lengths`; a padded batch gives the
    unpadded batch's outputs; `get_config` / `from_config` and `.keras` save / load round
    trips give the same outputs; `predict` (on a `tf.data.Dataset` under TensorFlow, on NumPy
    batches under the other backends) equals the eager call; under each mixed-precision policy the
    outputs have the compute dtype, the variables stay float32, and the outputs are finite and close
    to float32 (`MIXED_TOLERANCE`). It runs under every Keras backend.
    """
    import keras

    import biozoo

    case = get_case(name)
    directory = Path(directory)
    model, hf_dir = save_case(case, case.model_class, directory, "safetensors", spiece_model)
    backbone = biozoo.from_preset(str(hf_dir))
    longest = max(sequence_lengths)
    inputs = case_inputs(model, length=longest)
    mask = inputs["padding_mask"]
    expected = _numpy(backbone(inputs))
    _assert_matches_transformers(expected, model, inputs, f"{case.name} length {longest}")

    # Shorter sequences: parity, and padding them to the longest length changes nothing.
    for length in sorted(sequence_lengths)[:-1]:
        short = {k: v[:, :length].copy() for k, v in inputs.items()}
        short["padding_mask"][:] = 1  # every position real, including those padded above
        outputs = _numpy(backbone(short))
        _assert_matches_transformers(outputs, model, short, f"{case.name} length {length}")
        padded = {k: np.pad(v, ((0, 0), (0, longest - length))) for k, v in short.items()}
        prefix = {k: v[:, :length] if k == "sequence_output" else v
                  for k, v in _numpy(backbone(padded)).items()}
        _assert_same_outputs(prefix, outputs, short["padding_mask"], 1e-5,
                             f"{case.name}: length {length} padded to {longest}")

    # get_config / from_config
    config = backbone.get_config()
    restored = type(backbone).from_config(config)
    assert restored.get_config() == config
    restored.set_weights(backbone.get_weights())
    _assert_same_outputs(_numpy(restored(inputs)), expected, mask, 1e-6, f"{case.name}: from_config")

    # .keras save / load
    path = directory / f"{case.name}.keras"
    backbone.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(backbone)
    _assert_same_outputs(_numpy(loaded(inputs)), expected, mask, 1e-6, f"{case.name}: .keras load")

    # predict in batches of 2 and a short last one (graph mode on a tf.data pipeline under TensorFlow)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        predicted = backbone.predict(tf.data.Dataset.from_tensor_slices(inputs).batch(2), verbose=0)
    else:
        predicted = backbone.predict(inputs, batch_size=2, verbose=0)
    _assert_same_outputs(_numpy(predicted), expected, mask, 1e-5, f"{case.name}: predict")

    # mixed precision
    for policy in mixed_policies:
        mixed = type(backbone).from_config({**config, "dtype": policy})
        mixed.set_weights(backbone.get_weights())
        compute = keras.DTypePolicy(policy).compute_dtype
        assert all(w.dtype == "float32" for w in mixed.weights), f"{case.name} {policy}: non-float32 variables"
        outputs = mixed(inputs)
        for key, value in outputs.items():
            assert keras.backend.standardize_dtype(value.dtype) == compute, (
                f"{case.name} {policy}: {key} is {value.dtype}, not {compute}")
        outputs = {k: to_numpy(keras.ops.cast(v, "float32")) for k, v in outputs.items()}
        assert all(np.isfinite(v).all() for v in outputs.values()), f"{case.name} {policy}: non-finite outputs"
        scale = max(1.0, float(np.abs(expected["sequence_output"][mask.astype(bool)]).max()))
        _assert_same_outputs(outputs, expected, mask, MIXED_TOLERANCE[policy] * scale, f"{case.name} {policy}")
    return backbone


def _task_head_modules(model, kind):
    """The HF head's (dense before the output or None, output Linear, dropout or None)."""
    head = getattr(model, "classifier", None)
    dropout = getattr(model, "dropout", None)
    if kind == "classification" and hasattr(head, "out_proj"):  # ElectraClassificationHead
        return head.dense, head.out_proj, dropout or head.dropout
    return getattr(model, "pre_classifier", None), head, dropout


def _copy_linear(layer, linear):
    layer.set_weights([linear.weight.detach().numpy().T, linear.bias.detach().numpy()])


def run_task_test(name, kind, hf_class, directory, spiece_model=None):
    """A biozoo task's logits equal the transformers head of the same weights (<= 1e-4).

    "mlm", "rtd" and "qa": the task is built with `from_preset` on the saved HF model, so its
    head comes from the converter. "ner" and "classification": the encoder of the HF model is
    converted, the task built on it, and the HF head's weights copied into the task's layers
    (torch Linear [out, in] -> Keras kernel [in, out]); the head structure (pooler or token 0
    through a dense layer) and the head's dropout rate must be HF's. Then the task's
    `get_config` / `from_config` round trip gives the same logits.
    """
    import torch

    import biozoo

    case = get_case(name)
    task_cls = getattr(biozoo, TASKS[kind])
    what = f"{case.name} {hf_class} ({TASKS[kind]})"
    labels = ["a", "b", "c"]
    overrides = {"num_labels": len(labels)} if kind in ("ner", "classification") else {}
    converted = kind in CONVERTED_HEADS
    model, hf_dir = save_case(case, hf_class, directory, "safetensors", spiece_model,
                              base_only=not converted, **overrides)
    if converted:
        task = task_cls.from_preset(str(hf_dir))
    else:
        task = task_cls(biozoo.from_preset(str(hf_dir)), label_names=labels)
        dense, output, _ = _task_head_modules(model, kind)
        ours = getattr(task, "cls_dense", None)
        assert (dense is None) == (ours is None), (
            f"{what}: transformers {'has' if dense is not None else 'has no'} dense layer before the "
            f"classifier, biozoo {'has' if ours is not None else 'has none'}")
        if dense is not None:
            _copy_linear(ours, dense)
        _copy_linear(task.output_dense, output)
    _, _, dropout = _task_head_modules(model, kind)
    if dropout is not None and hasattr(task, "dropout"):
        assert task.dropout == dropout.p, f"{what}: head dropout {task.dropout}, transformers {dropout.p}"

    inputs = case_inputs(model)
    mask = inputs["padding_mask"]
    if kind == "mlm":
        positions = np.array([[1, 3, 5], [0, 2, 9], [4, 5, 6]], np.int32)
        inputs = {**inputs, "mask_positions": positions}
    ours = to_numpy(task(inputs))
    with torch.no_grad():
        out = model(**torch_inputs(model, inputs))
    if kind == "mlm":
        logits = (out.prediction_logits if hasattr(out, "prediction_logits") else out.logits).numpy()
        expected = np.take_along_axis(logits, positions[..., None], axis=1)
        diff, bound = float(np.abs(ours - expected).max()), TOLERANCE * max(1.0, float(np.abs(expected).max()))
    elif kind == "qa":
        diff = max(max_diff(ours[..., 0], out.start_logits.numpy(), mask),
                   max_diff(ours[..., 1], out.end_logits.numpy(), mask))
        bound = TOLERANCE
    elif kind == "classification":
        diff, bound = float(np.abs(ours - out.logits.numpy()).max()), TOLERANCE
    else:  # ner, rtd: one score (vector) per real token
        diff, bound = max_diff(ours, out.logits.numpy(), mask), TOLERANCE
    assert diff <= bound, f"{what}: logits max |diff| to transformers {diff:.2e} > {bound:.2g}"

    restored = type(task).from_config(task.get_config())
    restored.set_weights(task.get_weights())
    np.testing.assert_allclose(to_numpy(restored(inputs)), ours, atol=1e-6, err_msg=f"{what}: from_config")
    return task


def annotate_by_sentence(task, texts, model, aggregation="first"):
    """What `biozoo annotate` must write for one-line documents: `task.annotate` of their
    sentences (split_sentences; all in one call, batched as the command batches them), shifted to
    each line's offsets, named by the model."""
    from biozoo.documents.sentences import split_sentences

    spans = [split_sentences(text) for text in texts]
    sentences = [text[start:end] for text, row in zip(texts, spans) for start, end in row]
    results = iter(task.annotate(sentences, aggregation=aggregation))
    out = []
    for row in spans:
        found = []
        for start, _ in row:
            for e in next(results)["entities"]:
                found.append({"start": start + e["start"], "end": start + e["end"], "type": e["type"],
                              "text": e["text"], "score": e["score"], "model": model, "concept_id": None, "id": None})
        out.append(sorted(found, key=lambda e: (e["start"], e["end"])))
    return out


def offline_registry_mirror(monkeypatch, directory, name, model=None):
    """An offline HF cache under `directory` holding registry checkpoint `name` as the small
    `model` (default: a random tiny BERT) at the entry's pinned revision, with the entry made to
    describe it; returns the model's HF directory."""
    from biozoo import registry

    cache = Path(directory) / "hf-cache"
    cache.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    source = save_hf_directory(model if model is not None else make_model("bert", "BertModel"),
                               Path(directory) / "hf", "bin")
    registry_entry_describes(monkeypatch, name, source)
    hf = registry.get_entry(name)["sources"]["hf"]
    populate_hf_cache(cache, hf["repo"], hf["revision"], source)
    return source


def registry_entry_describes(monkeypatch, name, source_dir):
    """Make registry entry `name` describe the (small, random) model in `source_dir`: its config
    becomes that config.json's and its recorded weight digests are dropped, so a hub mirror of it
    agrees with the registry, as the real checkpoint agrees with the real entry (restored by
    `monkeypatch` after the test)."""
    import json

    from biozoo import registry

    config = json.loads((Path(source_dir) / "config.json").read_text())
    keep = ("id2label", "label2id", "architectures", "torch_dtype", "transformers_version")
    config = {k: v for k, v in config.items() if k not in keep}
    entry = registry._load_registry()["checkpoints"][name]
    monkeypatch.setitem(entry, "config", config)
    # the digests the registry records are the real weights', not this small model's
    monkeypatch.delitem(entry["sources"]["hf"], "integrity", raising=False)


# Run by `run_ids_export_test` in a Python where keras, biozoo and TensorFlow cannot be imported.
_RUNTIME_CHILD = """
import importlib.util, sys
import numpy as np
for name in ("keras", "keras_hub", "tf_keras", "biozoo", "tensorflow"):
    assert importlib.util.find_spec(name) is None, name + " is importable in the child"
fmt, model_path, inputs_path, out_path = sys.argv[1:5]
feed = dict(np.load(inputs_path))
if fmt == "onnx":
    import onnxruntime
    session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    out = dict(zip(names, session.run(names, feed)))
else:
    from ai_edge_litert.interpreter import Interpreter
    out = Interpreter(model_path=model_path).get_signature_runner()(**feed)
np.savez(out_path, **out)
"""


# What a machine without TensorFlow lacks (biozoo's editable install goes too: the repository is put on
# PYTHONPATH instead, its .pth file being skipped by `python -S`).
TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tf_keras", "tensorboard", "__editable__", "biozoo")


def site_without(site_dir, excluded):
    """A site directory holding everything installed but the distributions whose names start with
    one of `excluded` (symbolic links), for a child run with `python -S` and this directory on
    PYTHONPATH: a machine where they are not installed."""
    import site

    site_dir = Path(site_dir)
    site_dir.mkdir(parents=True, exist_ok=True)
    packages = [p for p in site.getsitepackages() if p.endswith("site-packages")][0]
    for name in os.listdir(packages):
        low = name.lower()
        if low.startswith(tuple(excluded)) or low.endswith(".pth"):
            continue
        if not (site_dir / name).exists():
            os.symlink(os.path.join(packages, name), site_dir / name)
    return site_dir


def without_tensorflow(directory, env=None):
    """(argv prefix, environment) of a Python child that runs biozoo from this repository where
    TensorFlow and tensorflow-text cannot be imported."""
    import sys

    site_dir = site_without(Path(directory) / "site-without-tensorflow", TENSORFLOW_DISTRIBUTIONS)
    repository = Path(__file__).resolve().parents[2]
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    environment.update({"PYTHONPATH": f"{site_dir}{os.pathsep}{repository}", **(env or {})})
    return [sys.executable, "-S"], environment


def without_keras_site(directory):
    """A site directory holding everything installed except keras, biozoo, TensorFlow and their
    kin (symbolic links), for a child run with `python -S` and this directory on PYTHONPATH."""
    return site_without(Path(directory) / "site", ("keras", "tf_keras", "biozoo", "__editable__", "tensorflow"))


def run_exported_without_keras(fmt, model_path, feed, directory):
    """The outputs of an ONNX (onnxruntime) or LiteRT (ai-edge-litert) model file on `feed`,
    computed in a child process where keras, biozoo and TensorFlow cannot be imported."""
    import subprocess
    import sys

    directory = Path(directory)
    np.savez(directory / "feed.npz", **feed)
    env = {**os.environ, "PYTHONPATH": str(without_keras_site(directory))}
    result = subprocess.run([sys.executable, "-S", "-c", _RUNTIME_CHILD, fmt, str(model_path),
                             str(directory / "feed.npz"), str(directory / "outputs.npz")],
                            env=env, cwd=directory, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{fmt} child failed:\n{result.stderr[-3000:]}"
    return dict(np.load(directory / "outputs.npz"))


def run_ids_export_test(name, fmt, directory, spiece_model=None):
    """The ONNX / LiteRT export of a case's NER model (a `*ForTokenClassification` checkpoint
    converted by biozoo), run without keras, biozoo or TensorFlow, gives transformers' logits
    (<= 1e-4 on real tokens); its certificate's max |diff| to biozoo float32 is also <= 1e-4."""
    import torch

    from biozoo.export.ids_models import FORMATS, export_ids_model

    case = get_case(name)
    hf_class = case.tasks["ner"]
    labels = ["O", "B-Disease", "I-Disease"]
    model = make_model(case, hf_class, num_labels=len(labels))
    model.config.architectures = [hf_class]
    model.config.id2label = dict(enumerate(labels))
    model.config.label2id = {label: i for i, label in enumerate(labels)}
    directory = Path(directory)
    if case.tokenizer == "sentencepiece" and spiece_model is None:
        spiece_model = tiny_sentencepiece(directory / "spm")
    hf_dir = save_hf_directory(model, directory / "hf", "safetensors", case.tokenizer, spiece_model)
    certificate = export_ids_model(fmt, directory / fmt, model=str(hf_dir))
    diff = certificate["fixed_inputs"]["max_abs_diff"]["logits"]
    assert diff <= TOLERANCE, f"{name} {fmt}: certificate max |diff| to biozoo float32 {diff:.2e}"

    inputs = case_inputs(model)
    feed = {"input_word_ids": inputs["token_ids"], "input_mask": inputs["padding_mask"],
            "input_type_ids": inputs["segment_ids"]}
    outputs = run_exported_without_keras(fmt, directory / fmt / FORMATS[fmt], feed, directory)
    with torch.no_grad():
        expected = model(**torch_inputs(model, inputs)).logits.numpy()
    diff = max_diff(outputs["logits"], expected, inputs["padding_mask"])
    assert diff <= TOLERANCE, f"{name} {fmt}: exported logits max |diff| to transformers {diff:.2e} > {TOLERANCE}"
    return certificate
