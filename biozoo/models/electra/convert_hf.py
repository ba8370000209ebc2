"""HuggingFace ELECTRA (ElectraModel, ElectraForPreTraining, ElectraForMaskedLM,
ElectraForQuestionAnswering)."""

from biozoo.mapping import Table, dense, embedding, layer_norm, param
from biozoo.models._common import check_hf_config
from biozoo.models.bert.convert_hf import BERT_LAYER_RULES, LEGACY_RENAMES, SIZE_KEYS, check_absolute_positions
from biozoo.models.bert.convert_hf import config_to_hf as bert_config_to_hf
from biozoo.models.family import hf_get

HF_TABLE = Table(
    rules=[
        *embedding("embeddings.word_embeddings", "token_embedding"),
        *embedding("embeddings.position_embeddings", "position_embedding"),
        *embedding("embeddings.token_type_embeddings", "segment_embedding"),
        *layer_norm("embeddings.LayerNorm", "embeddings_layer_norm"),
        *dense("embeddings_project", "embeddings_projection"),
        *BERT_LAYER_RULES,
        # replaced-token detection head (ElectraForPreTraining)
        *dense("discriminator_predictions.dense", "heads/rtd/dense"),
        *dense("discriminator_predictions.dense_prediction", "heads/rtd/output"),
        # generator MLM head (ElectraForMaskedLM); its decoder is tied to the word embedding
        *dense("generator_predictions.dense", "heads/mlm/dense"),
        *layer_norm("generator_predictions.LayerNorm", "heads/mlm/layer_norm"),
        *param("generator_lm_head.bias", "heads/mlm/output_bias"),
        *dense("qa_outputs", "heads/qa/dense"),
        # ElectraForTokenClassification: classifier; ElectraForSequenceClassification: its
        # ElectraClassificationHead, classifier.dense (gelu) then classifier.out_proj
        *dense("classifier", "heads/classifier/dense"),
        *dense("classifier.dense", "heads/classifier/hidden"),
        *dense("classifier.out_proj", "heads/classifier/output"),
    ],
    ignore=(r"embeddings\.position_ids",),
    tied=((r"generator_lm_head\.weight", "token_embedding/embeddings"),),
    strip_prefixes=("electra.",),
    renames=LEGACY_RENAMES,
)


def config_from_hf(config, use_pooler=False, source="config.json"):
    check_absolute_positions(config, source)
    # no heads check: transformers skips it where the config has an embedding_size (ALBERT, ELECTRA)
    check_hf_config(config, source, (*SIZE_KEYS, "embedding_size"))
    hidden = hf_get(config, "hidden_size", 256)
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": hf_get(config, "num_hidden_layers", 12),
        "num_heads": hf_get(config, "num_attention_heads", 4),
        "hidden_dim": hidden,
        "embedding_dim": hf_get(config, "embedding_size", 128),
        "intermediate_dim": hf_get(config, "intermediate_size", 1024),
        "activation": hf_get(config, "hidden_act", "gelu"),
        "layer_norm_epsilon": hf_get(config, "layer_norm_eps", 1e-12),
        "dropout": hf_get(config, "hidden_dropout_prob", 0.1),
        "max_sequence_length": hf_get(config, "max_position_embeddings", 512),
        "num_segments": hf_get(config, "type_vocab_size", 2),
        "initializer_range": hf_get(config, "initializer_range", 0.02),
    }


def heads_config(config):
    """HF ElectraDiscriminatorPredictions use hidden_act; the generator head always uses
    exact gelu and layer_norm_eps (ElectraGeneratorPredictions)."""
    return {
        "rtd": {"activation": hf_get(config, "hidden_act", "gelu")},
        "mlm": {
            "activation": "gelu",
            "layer_norm_epsilon": hf_get(config, "layer_norm_eps", 1e-12),
            "tied_embedding": True,
        },
        "qa": {},
    }


def config_to_hf(config):
    return {**bert_config_to_hf(config), "model_type": "electra", "architectures": ["ElectraModel"],
            "embedding_size": config["embedding_dim"]}
