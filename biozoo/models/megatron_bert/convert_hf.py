"""HuggingFace Megatron-BERT (MegatronBertModel, *ForMaskedLM, *ForPreTraining,
*ForQuestionAnswering; the EMBO BioMegatron ports)."""

from biozoo.mapping import Table, attention, dense, embedding, layer_norm
from biozoo.models.bert.convert_hf import BERT_HEAD_RULES, BUFFERS, LEGACY_RENAMES, TIED_DECODER
from biozoo.models.bert.convert_hf import config_from_hf as bert_config_from_hf
from biozoo.models.bert.convert_hf import config_to_hf as bert_config_to_hf
from biozoo.models.bert.convert_hf import heads_config as bert_heads_config

LAYER = "encoder.layer.{i}"
BLOCK = "transformer_layer_{i}"

HF_TABLE = Table(
    rules=[
        *embedding("embeddings.word_embeddings", "token_embedding"),
        *embedding("embeddings.position_embeddings", "position_embedding"),
        *embedding("embeddings.token_type_embeddings", "segment_embedding"),
        # pre-LN: attention.ln normalises the block input, ln the attention output
        *layer_norm(LAYER + ".attention.ln", BLOCK + "/self_attention_layer_norm"),
        *attention(
            LAYER + ".attention.self.query",
            LAYER + ".attention.self.key",
            LAYER + ".attention.self.value",
            LAYER + ".attention.output.dense",
            BLOCK + "/self_attention_layer",
        ),
        *layer_norm(LAYER + ".ln", BLOCK + "/feedforward_layer_norm"),
        *dense(LAYER + ".intermediate.dense", BLOCK + "/feedforward_intermediate_dense"),
        *dense(LAYER + ".output.dense", BLOCK + "/feedforward_output_dense"),
        *layer_norm("encoder.ln", "final_layer_norm"),
        *dense("pooler.dense", "pooled_dense"),
        *BERT_HEAD_RULES,
    ],
    ignore=BUFFERS,
    tied=TIED_DECODER,
    strip_prefixes=("bert.",),
    renames=LEGACY_RENAMES,
)

config_from_hf = bert_config_from_hf
heads_config = bert_heads_config


def config_to_hf(config):
    return {**bert_config_to_hf(config), "model_type": "megatron-bert", "architectures": ["MegatronBertModel"]}
