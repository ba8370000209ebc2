"""HuggingFace ALBERT (AlbertModel, AlbertForMaskedLM, AlbertForPreTraining,
AlbertForQuestionAnswering)."""

from biozoo.mapping import Table, attention, dense, embedding, layer_norm, param
from biozoo.models._common import check_hf_config
from biozoo.models.bert.convert_hf import LEGACY_RENAMES, SIZE_KEYS, check_absolute_positions
from biozoo.models.bert.convert_hf import config_to_hf as bert_config_to_hf
from biozoo.models.family import hf_get

LAYER = "encoder.albert_layer_groups.{i}.albert_layers.{j}"
BLOCK = "group_{i}_inner_layer_{j}"

HF_TABLE = Table(
    rules=[
        *embedding("embeddings.word_embeddings", "token_embedding"),
        *embedding("embeddings.position_embeddings", "position_embedding"),
        *embedding("embeddings.token_type_embeddings", "segment_embedding"),
        *layer_norm("embeddings.LayerNorm", "embeddings_layer_norm"),
        *dense("encoder.embedding_hidden_mapping_in", "embedding_projection"),
        *attention(
            LAYER + ".attention.query",
            LAYER + ".attention.key",
            LAYER + ".attention.value",
            LAYER + ".attention.dense",
            BLOCK + "/self_attention_layer",
        ),
        *layer_norm(LAYER + ".attention.LayerNorm", BLOCK + "/self_attention_layer_norm"),
        *dense(LAYER + ".ffn", BLOCK + "/feedforward_intermediate_dense"),
        *dense(LAYER + ".ffn_output", BLOCK + "/feedforward_output_dense"),
        *layer_norm(LAYER + ".full_layer_layer_norm", BLOCK + "/feedforward_layer_norm"),
        *dense("pooler", "pooled_dense"),
        # MLM head: predictions.decoder.weight is the tied embedding, its bias a copy
        *dense("predictions.dense", "heads/mlm/dense"),
        *layer_norm("predictions.LayerNorm", "heads/mlm/layer_norm"),
        *param("predictions.bias", "heads/mlm/output_bias"),
        *dense("sop_classifier.classifier", "heads/sop/dense"),
        *dense("qa_outputs", "heads/qa/dense"),
        *dense("classifier", "heads/classifier/dense"),  # *ForTokenClassification, *ForSequenceClassification
    ],
    ignore=(r"embeddings\.position_ids",),
    tied=((r"predictions\.decoder\.weight", "token_embedding/embeddings"),
          (r"predictions\.decoder\.bias", "heads/mlm/output_bias")),
    strip_prefixes=("albert.",),
    renames=LEGACY_RENAMES,
)


def config_from_hf(config, use_pooler, source="config.json"):
    check_absolute_positions(config, source)
    # no heads check: transformers skips it where the config has an embedding_size (ALBERT, ELECTRA)
    check_hf_config(config, source, (*SIZE_KEYS, "embedding_size", "num_hidden_groups", "inner_group_num"))
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": hf_get(config, "num_hidden_layers", 12),
        "num_heads": hf_get(config, "num_attention_heads", 64),
        "embedding_dim": hf_get(config, "embedding_size", 128),
        "hidden_dim": hf_get(config, "hidden_size", 4096),
        "intermediate_dim": hf_get(config, "intermediate_size", 16384),
        "num_groups": hf_get(config, "num_hidden_groups", 1),
        "num_inner_repetitions": hf_get(config, "inner_group_num", 1),
        "activation": hf_get(config, "hidden_act", "gelu_new"),
        "layer_norm_epsilon": hf_get(config, "layer_norm_eps", 1e-12),
        "dropout": hf_get(config, "hidden_dropout_prob", 0.0),
        "max_sequence_length": hf_get(config, "max_position_embeddings", 512),
        "num_segments": hf_get(config, "type_vocab_size", 2),
        "use_pooler": use_pooler,
        "initializer_range": hf_get(config, "initializer_range", 0.02),
    }


def heads_config(config):
    return {
        "mlm": {
            "activation": hf_get(config, "hidden_act", "gelu_new"),
            "layer_norm_epsilon": hf_get(config, "layer_norm_eps", 1e-12),
            "tied_embedding": True,
        },
        "sop": {},
        "qa": {},
    }


def config_to_hf(config):
    return {**bert_config_to_hf(config), "model_type": "albert", "architectures": ["AlbertModel"],
            "embedding_size": config["embedding_dim"], "num_hidden_groups": config["num_groups"],
            "inner_group_num": config["num_inner_repetitions"]}
