"""HuggingFace DistilBERT (DistilBertModel, DistilBertForMaskedLM, DistilBertForQuestionAnswering)."""

from biozoo.mapping import Table, attention, dense, embedding, layer_norm, param
from biozoo.models._common import check_hf_config
from biozoo.models.family import hf_get

LAYER = "transformer.layer.{i}"
BLOCK = "transformer_layer_{i}"

HF_TABLE = Table(
    rules=[
        *embedding("embeddings.word_embeddings", "token_embedding"),
        *embedding("embeddings.position_embeddings", "position_embedding"),
        *layer_norm("embeddings.LayerNorm", "embeddings_layer_norm"),
        *attention(
            LAYER + ".attention.q_lin",
            LAYER + ".attention.k_lin",
            LAYER + ".attention.v_lin",
            LAYER + ".attention.out_lin",
            BLOCK + "/self_attention_layer",
        ),
        *layer_norm(LAYER + ".sa_layer_norm", BLOCK + "/self_attention_layer_norm"),
        *dense(LAYER + ".ffn.lin1", BLOCK + "/feedforward_intermediate_dense"),
        *dense(LAYER + ".ffn.lin2", BLOCK + "/feedforward_output_dense"),
        *layer_norm(LAYER + ".output_layer_norm", BLOCK + "/feedforward_layer_norm"),
        # MLM head (DistilBertForMaskedLM): vocab_projector's weight is the tied embedding
        *dense("vocab_transform", "heads/mlm/dense"),
        *layer_norm("vocab_layer_norm", "heads/mlm/layer_norm"),
        *param("vocab_projector.bias", "heads/mlm/output_bias"),
        *dense("qa_outputs", "heads/qa/dense"),
        # *ForTokenClassification: classifier; *ForSequenceClassification: pre_classifier (relu), classifier
        *dense("pre_classifier", "heads/classifier/hidden"),
        *dense("classifier", "heads/classifier/dense"),
    ],
    ignore=(r"embeddings\.position_ids",),
    tied=((r"vocab_projector\.weight", "token_embedding/embeddings"),),
    strip_prefixes=("distilbert.",),
)


def config_from_hf(config, use_pooler=False, source="config.json"):
    check_hf_config(config, source, ("vocab_size", "n_layers", "n_heads", "dim", "hidden_dim", "max_position_embeddings"),
                    activation_key="activation", heads=("dim", "n_heads"))
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": hf_get(config, "n_layers", 6),
        "num_heads": hf_get(config, "n_heads", 12),
        "hidden_dim": hf_get(config, "dim", 768),
        "intermediate_dim": hf_get(config, "hidden_dim", 3072),
        "activation": hf_get(config, "activation", "gelu"),
        "layer_norm_epsilon": 1e-12,  # fixed in HF's DistilBERT
        "dropout": hf_get(config, "dropout", 0.1),
        "max_sequence_length": hf_get(config, "max_position_embeddings", 512),
        "initializer_range": hf_get(config, "initializer_range", 0.02),
    }


def heads_config(config):
    return {
        "mlm": {
            "activation": hf_get(config, "activation", "gelu"),
            "layer_norm_epsilon": 1e-12,
            "tied_embedding": True,
        },
        "qa": {},
    }


def config_to_hf(config):
    return {
        "architectures": ["DistilBertModel"],
        "model_type": "distilbert",
        "vocab_size": config["vocabulary_size"],
        "dim": config["hidden_dim"],
        "n_layers": config["num_layers"],
        "n_heads": config["num_heads"],
        "hidden_dim": config["intermediate_dim"],
        "activation": config["activation"],
        "dropout": config["dropout"],
        "attention_dropout": config["dropout"],
        "max_position_embeddings": config["max_sequence_length"],
        "sinusoidal_pos_embds": False,
        "initializer_range": config["initializer_range"],
    }
