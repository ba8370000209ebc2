"""The table of tiny cases every family passes: one row per family and per variant that flips an
architectural switch (`CASES`), and the parameters tests read from it (`cases`)."""

from __future__ import annotations

import dataclasses

from biozoo.export.formats import IDS_FORMATS
from biozoo.task_kinds import TASK_KINDS

VOCAB_SIZE = 99


SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


TOLERANCE = 1e-4  # max |diff| against transformers, float32


FORMATS = ("safetensors", "bin")


# biozoo task class per task kind (and pretraining head); "mlm", "rtd" and "qa" heads come from the converter,
# "ner" and "re" (sequence classification) heads are copied from the HF model by `run_task_test`.
TASKS = {**{name: TASK_KINDS[name].task_class_name for name in ("ner", "re", "qa")},
         "mlm": "MaskedLM", "rtd": "ReplacedTokenDetector"}


CONVERTED_HEADS = ("mlm", "rtd", "qa")


IDS_EXPORTS = tuple(IDS_FORMATS)


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
# int8 exports (int8 weights, activations quantized at run time) against float32: max |diff| of the
# logits relative to max(1, |float32 logits|). Measured on these tiny random configs (ONNX, every
# matmul quantized): 1.1e-2 (mobilebert) to 7.7e-2 (albert: one layer's weights shared by all);
# 0.25 is a margin (~3x the worst), not a derived bound
INT8_TOLERANCE = 0.25


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
    heads = {kind: prefix + TASK_KINDS[kind].hf_suffixes[0] for kind in ("ner", "re")}
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
