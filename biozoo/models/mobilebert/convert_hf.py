"""HuggingFace MobileBERT (MobileBertModel, *ForMaskedLM, *ForPreTraining, *ForQuestionAnswering)."""

from biozoo.mapping import Table, dense, embedding, layer_norm, param
from biozoo.models._common import check_hf_config
from biozoo.models.bert.convert_hf import LEGACY_RENAMES, SIZE_KEYS, check_absolute_positions
from biozoo.models.family import hf_get

LAYER = "encoder.layer.{i}"
BLOCK = "transformer_layer_{i}"
FFN = LAYER + ".ffn.{j}"


def norm(source, target):
    """NoNorm and LayerNorm both store `weight` and `bias`."""
    return layer_norm(source, target)


HF_TABLE = Table(
    rules=[
        *embedding("embeddings.word_embeddings", "token_embedding"),
        *embedding("embeddings.position_embeddings", "position_embedding"),
        *embedding("embeddings.token_type_embeddings", "segment_embedding"),
        *dense("embeddings.embedding_transformation", "embedding_transformation"),
        *norm("embeddings.LayerNorm", "embeddings_norm"),
        *dense(LAYER + ".bottleneck.input.dense", BLOCK + "/bottleneck_input_dense"),
        *norm(LAYER + ".bottleneck.input.LayerNorm", BLOCK + "/bottleneck_input_norm"),
        *dense(LAYER + ".bottleneck.attention.dense", BLOCK + "/bottleneck_attention_dense"),
        *norm(LAYER + ".bottleneck.attention.LayerNorm", BLOCK + "/bottleneck_attention_norm"),
        *dense(LAYER + ".attention.self.query", BLOCK + "/self_attention/query", "linear_to_heads"),
        *dense(LAYER + ".attention.self.key", BLOCK + "/self_attention/key", "linear_to_heads"),
        *dense(LAYER + ".attention.self.value", BLOCK + "/self_attention/value", "linear_to_heads"),
        *dense(LAYER + ".attention.output.dense", BLOCK + "/self_attention/attention_output", "linear_from_heads"),
        *norm(LAYER + ".attention.output.LayerNorm", BLOCK + "/attention_norm"),
        *dense(FFN + ".intermediate.dense", BLOCK + "/ffn_{j}_intermediate"),
        *dense(FFN + ".output.dense", BLOCK + "/ffn_{j}_output"),
        *norm(FFN + ".output.LayerNorm", BLOCK + "/ffn_{j}_norm"),
        *dense(LAYER + ".intermediate.dense", BLOCK + "/intermediate_dense"),
        *dense(LAYER + ".output.dense", BLOCK + "/output_dense"),
        *norm(LAYER + ".output.LayerNorm", BLOCK + "/output_norm"),
        *dense(LAYER + ".output.bottleneck.dense", BLOCK + "/output_bottleneck_dense"),
        *norm(LAYER + ".output.bottleneck.LayerNorm", BLOCK + "/output_bottleneck_norm"),
        *dense("pooler.dense", "pooled_dense"),
        # MLM head: logits = h @ [embedding.T ; cls.predictions.dense.weight] + bias
        *dense("cls.predictions.transform.dense", "heads/mlm/dense"),
        *layer_norm("cls.predictions.transform.LayerNorm", "heads/mlm/layer_norm"),
        *param("cls.predictions.dense.weight", "heads/mlm/extra_output_kernel"),
        *param("cls.predictions.bias", "heads/mlm/output_bias"),
        *dense("cls.seq_relationship", "heads/nsp/dense"),
        *dense("qa_outputs", "heads/qa/dense"),
        *dense("classifier", "heads/classifier/dense"),  # *ForTokenClassification, *ForSequenceClassification
    ],
    ignore=(r"embeddings\.position_ids",),
    unused=(
        # MobileBertBottleneck builds its shared query/key bottleneck even when
        # use_bottleneck_attention feeds queries and keys from the input bottleneck
        (r"encoder\.layer\.\d+\.bottleneck\.attention\..*",
         lambda c: hf_get(c, "use_bottleneck", True) and hf_get(c, "use_bottleneck_attention", False)
         and hf_get(c, "key_query_shared_bottleneck", True)),
        # MobileBertEmbeddings builds the transformation even when it skips it (no trigram, same widths)
        (r"embeddings\.embedding_transformation\..*",
         lambda c: not hf_get(c, "trigram_input", True)
         and hf_get(c, "embedding_size", 128) == hf_get(c, "hidden_size", 512)),
    ),
    tied=((r"cls\.predictions\.decoder\.weight", "token_embedding/embeddings"),
          (r"cls\.predictions\.decoder\.bias", "heads/mlm/output_bias")),
    strip_prefixes=("mobilebert.",),
    renames=LEGACY_RENAMES,
)


def use_pooler(config, targets):
    """MobileBERT's pooled output is the first token's state, through a tanh dense layer
    only with `classifier_activation`; that layer must then be in the checkpoint."""
    if hf_get(config, "classifier_activation", True):
        return "pooled_dense/kernel" in targets
    return True


def config_from_hf(config, use_pooler, source="config.json"):
    check_absolute_positions(config, source)
    check_hf_config(config, source, (*SIZE_KEYS, "embedding_size", "intra_bottleneck_size", "num_feedforward_networks"))
    use_bottleneck = hf_get(config, "use_bottleneck", True)
    hidden = hf_get(config, "hidden_size", 512)
    # As HF's MobileBertConfig: the true hidden size is the bottleneck size when used.
    true_hidden = hf_get(config, "intra_bottleneck_size", 128) if use_bottleneck else hidden
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": hf_get(config, "num_hidden_layers", 24),
        "num_heads": hf_get(config, "num_attention_heads", 4),
        "hidden_dim": hidden,
        "embedding_dim": hf_get(config, "embedding_size", 128),
        "true_hidden_dim": true_hidden,
        "intermediate_dim": hf_get(config, "intermediate_size", 512),
        "num_feedforward_networks": hf_get(config, "num_feedforward_networks", 4),
        "use_bottleneck": use_bottleneck,
        "use_bottleneck_attention": hf_get(config, "use_bottleneck_attention", False),
        "key_query_shared_bottleneck": hf_get(config, "key_query_shared_bottleneck", True),
        "trigram_input": hf_get(config, "trigram_input", True),
        "normalization_type": hf_get(config, "normalization_type", "no_norm"),
        "classifier_activation": hf_get(config, "classifier_activation", True),
        "activation": hf_get(config, "hidden_act", "relu"),
        "layer_norm_epsilon": hf_get(config, "layer_norm_eps", 1e-12),
        "dropout": hf_get(config, "hidden_dropout_prob", 0.0),
        "attention_dropout": hf_get(config, "attention_probs_dropout_prob", 0.1),
        "max_sequence_length": hf_get(config, "max_position_embeddings", 512),
        "num_segments": hf_get(config, "type_vocab_size", 2),
        "use_pooler": use_pooler,
        "initializer_range": hf_get(config, "initializer_range", 0.02),
    }


def heads_config(config):
    return {
        "mlm": {
            "activation": hf_get(config, "hidden_act", "relu"),
            "layer_norm_epsilon": hf_get(config, "layer_norm_eps", 1e-12),
            "tied_embedding": True,
        },
        "nsp": {},
        "qa": {},
    }


def config_to_hf(config):
    return {
        "architectures": ["MobileBertModel"],
        "model_type": "mobilebert",
        "vocab_size": config["vocabulary_size"],
        "embedding_size": config["embedding_dim"],
        "hidden_size": config["hidden_dim"],
        "true_hidden_size": config["true_hidden_dim"],
        "intra_bottleneck_size": config["true_hidden_dim"],
        "num_hidden_layers": config["num_layers"],
        "num_attention_heads": config["num_heads"],
        "intermediate_size": config["intermediate_dim"],
        "num_feedforward_networks": config["num_feedforward_networks"],
        "use_bottleneck": config["use_bottleneck"],
        "use_bottleneck_attention": config["use_bottleneck_attention"],
        "key_query_shared_bottleneck": config["key_query_shared_bottleneck"],
        "trigram_input": config["trigram_input"],
        "normalization_type": config["normalization_type"],
        "classifier_activation": config["classifier_activation"],
        "hidden_act": config["activation"],
        "layer_norm_eps": config["layer_norm_epsilon"],
        "hidden_dropout_prob": config["dropout"],
        "attention_probs_dropout_prob": config["attention_dropout"],
        "max_position_embeddings": config["max_sequence_length"],
        "type_vocab_size": config["num_segments"],
        "initializer_range": config["initializer_range"],
    }
