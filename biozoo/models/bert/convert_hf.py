"""HuggingFace BERT (BertModel, BertForMaskedLM, BertForPreTraining, BertForQuestionAnswering,
BertForTokenClassification, BertForSequenceClassification)."""

from biozoo.errors import CheckpointError
from biozoo.mapping import Table, attention, dense, embedding, layer_norm, param
from biozoo.models._common import check_hf_config
from biozoo.models.family import hf_get

LAYER = "encoder.layer.{i}"
BLOCK = "transformer_layer_{i}"

# The encoder layer as HF BERT, ELECTRA and DistilBERT-free families name it.
BERT_LAYER_RULES = [
    *attention(
        LAYER + ".attention.self.query",
        LAYER + ".attention.self.key",
        LAYER + ".attention.self.value",
        LAYER + ".attention.output.dense",
        BLOCK + "/self_attention_layer",
    ),
    *layer_norm(LAYER + ".attention.output.LayerNorm", BLOCK + "/self_attention_layer_norm"),
    *dense(LAYER + ".intermediate.dense", BLOCK + "/feedforward_intermediate_dense"),
    *dense(LAYER + ".output.dense", BLOCK + "/feedforward_output_dense"),
    *layer_norm(LAYER + ".output.LayerNorm", BLOCK + "/feedforward_layer_norm"),
]

# Pretraining and task heads of BertForPreTraining / BertForMaskedLM / *ForQuestionAnswering /
# *ForTokenClassification and *ForSequenceClassification (both name their output "classifier").
BERT_HEAD_RULES = [
    *dense("cls.predictions.transform.dense", "heads/mlm/dense"),
    *layer_norm("cls.predictions.transform.LayerNorm", "heads/mlm/layer_norm"),
    *param("cls.predictions.bias", "heads/mlm/output_bias"),
    *dense("cls.seq_relationship", "heads/nsp/dense"),
    *dense("qa_outputs", "heads/qa/dense"),
    *dense("classifier", "heads/classifier/dense"),
]

# Legacy checkpoints (TF-converted BioBERT .bin) spell LayerNorm parameters gamma/beta.
LEGACY_RENAMES = ((r"LayerNorm\.gamma$", "LayerNorm.weight"), (r"LayerNorm\.beta$", "LayerNorm.bias"))

# Non-persistent buffers saved by old versions.
BUFFERS = (r"embeddings\.position_ids",)
# The MLM decoder, tied to the word embedding and its bias to the head's: checked, not stored.
TIED_DECODER = ((r"cls\.predictions\.decoder\.weight", "token_embedding/embeddings"),
                (r"cls\.predictions\.decoder\.bias", "heads/mlm/output_bias"))

HF_TABLE = Table(
    rules=[
        *embedding("embeddings.word_embeddings", "token_embedding"),
        *embedding("embeddings.position_embeddings", "position_embedding"),
        *embedding("embeddings.token_type_embeddings", "segment_embedding"),
        *layer_norm("embeddings.LayerNorm", "embeddings_layer_norm"),
        *BERT_LAYER_RULES,
        *dense("pooler.dense", "pooled_dense"),
        *BERT_HEAD_RULES,
    ],
    ignore=BUFFERS,
    tied=TIED_DECODER,
    strip_prefixes=("bert.",),
    renames=LEGACY_RENAMES,
)


# The sizes of an HF BERT-like config.json (a whole number of at least 1; the layers, 0).
SIZE_KEYS = ("vocab_size", "num_hidden_layers", "num_attention_heads", "hidden_size", "intermediate_size",
             "max_position_embeddings", "type_vocab_size")


def check_absolute_positions(config, source="config.json"):
    kind = config.get("position_embedding_type", "absolute")
    if kind not in (None, "absolute"):
        raise CheckpointError(
            f"{source}: position_embedding_type '{kind}' is not supported (only 'absolute')."
        )


def config_from_hf(config, use_pooler, source="config.json"):
    """`source`: where `config` came from (a config.json path), named by the errors."""
    check_absolute_positions(config, source)
    check_hf_config(config, source, SIZE_KEYS, heads=("hidden_size", "num_attention_heads"))
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": hf_get(config, "num_hidden_layers", 12),
        "num_heads": hf_get(config, "num_attention_heads", 12),
        "hidden_dim": hf_get(config, "hidden_size", 768),
        "intermediate_dim": hf_get(config, "intermediate_size", 3072),
        "activation": hf_get(config, "hidden_act", "gelu"),
        "layer_norm_epsilon": hf_get(config, "layer_norm_eps", 1e-12),
        "dropout": hf_get(config, "hidden_dropout_prob", 0.1),
        "max_sequence_length": hf_get(config, "max_position_embeddings", 512),
        "num_segments": hf_get(config, "type_vocab_size", 2),
        "use_pooler": use_pooler,
        "initializer_range": hf_get(config, "initializer_range", 0.02),
    }


def heads_config(config):
    """BERT's MLM transform uses hidden_act and layer_norm_eps; the decoder is tied."""
    return {
        "mlm": {
            "activation": hf_get(config, "hidden_act", "gelu"),
            "layer_norm_epsilon": hf_get(config, "layer_norm_eps", 1e-12),
            "tied_embedding": True,
        },
        "nsp": {},
        "qa": {},
    }


def config_to_hf(config):
    """The HF config.json of a BertBackbone config."""
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": config["vocabulary_size"],
        "hidden_size": config["hidden_dim"],
        "num_hidden_layers": config["num_layers"],
        "num_attention_heads": config["num_heads"],
        "intermediate_size": config["intermediate_dim"],
        "hidden_act": config["activation"],
        "layer_norm_eps": config["layer_norm_epsilon"],
        "hidden_dropout_prob": config["dropout"],
        "attention_probs_dropout_prob": config["dropout"],
        "max_position_embeddings": config["max_sequence_length"],
        "type_vocab_size": config["num_segments"],
        "initializer_range": config["initializer_range"],
    }
