"""google-research/albert TF1 checkpoints (BioM-ALBERT), also TF-Hub v1 modules (`module/`)."""

from biozoo.mapping import Rule, Table, tf_attention, tf_dense, tf_layer_norm
from biozoo.models.bert.convert_tf1 import TF1_TRAINING_STATE

BLOCK_SOURCE = "bert/encoder/transformer/group_{i}/inner_group_{j}"
BLOCK = "group_{i}_inner_layer_{j}"

TF1_TABLE = Table(
    rules=[
        Rule("bert/embeddings/word_embeddings", "token_embedding/embeddings"),
        Rule("bert/embeddings/position_embeddings", "position_embedding/embeddings"),
        Rule("bert/embeddings/token_type_embeddings", "segment_embedding/embeddings"),
        *tf_layer_norm("bert/embeddings/LayerNorm", "embeddings_layer_norm"),
        *tf_dense("bert/encoder/embedding_hidden_mapping_in", "embedding_projection"),
        *tf_attention(BLOCK_SOURCE + "/attention_1/self", BLOCK_SOURCE + "/attention_1/output/dense",
                      BLOCK + "/self_attention_layer"),
        *tf_layer_norm(BLOCK_SOURCE + "/LayerNorm", BLOCK + "/self_attention_layer_norm"),
        *tf_dense(BLOCK_SOURCE + "/ffn_1/intermediate/dense", BLOCK + "/feedforward_intermediate_dense"),
        *tf_dense(BLOCK_SOURCE + "/ffn_1/intermediate/output/dense", BLOCK + "/feedforward_output_dense"),
        *tf_layer_norm(BLOCK_SOURCE + "/LayerNorm_1", BLOCK + "/feedforward_layer_norm"),
        *tf_dense("bert/pooler/dense", "pooled_dense"),
        *tf_dense("cls/predictions/transform/dense", "heads/mlm/dense"),
        *tf_layer_norm("cls/predictions/transform/LayerNorm", "heads/mlm/layer_norm"),
        Rule("cls/predictions/output_bias", "heads/mlm/output_bias"),
        Rule("cls/seq_relationship/output_weights", "heads/sop/dense/kernel", "transpose"),
        Rule("cls/seq_relationship/output_bias", "heads/sop/dense/bias"),
    ],
    ignore=TF1_TRAINING_STATE,
    strip_prefixes=("module/",),
)
