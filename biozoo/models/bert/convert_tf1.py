"""google-research/bert TF1 checkpoints (BioBERT, and BERT-objective BioM runs)."""

from biozoo.mapping import Rule, Table, tf_attention, tf_dense, tf_layer_norm

# Optimizer slots, step counters and loss-scale state: not model weights.
TF1_TRAINING_STATE = (
    r".*/adam_[mv]", r".*/(AdamWeightDecayOptimizer|LAMB|Adam|Momentum)(_\d+)?", r"global_step",
    r"(.*/)?(good_steps|bad_steps|loss_scale|current_loss_scale)", r".*/ExponentialMovingAverage",
)

LAYER = "bert/encoder/layer_{i}"
BLOCK = "transformer_layer_{i}"

BERT_TF1_LAYER = [
    *tf_attention(LAYER + "/attention/self", LAYER + "/attention/output/dense", BLOCK + "/self_attention_layer"),
    *tf_layer_norm(LAYER + "/attention/output/LayerNorm", BLOCK + "/self_attention_layer_norm"),
    *tf_dense(LAYER + "/intermediate/dense", BLOCK + "/feedforward_intermediate_dense"),
    *tf_dense(LAYER + "/output/dense", BLOCK + "/feedforward_output_dense"),
    *tf_layer_norm(LAYER + "/output/LayerNorm", BLOCK + "/feedforward_layer_norm"),
]

BERT_TF1_HEADS = [
    *tf_dense("cls/predictions/transform/dense", "heads/mlm/dense"),
    *tf_layer_norm("cls/predictions/transform/LayerNorm", "heads/mlm/layer_norm"),
    Rule("cls/predictions/output_bias", "heads/mlm/output_bias"),
    # stored [2, hidden] and used with transpose_b: the Keras kernel is its transpose
    Rule("cls/seq_relationship/output_weights", "heads/nsp/dense/kernel", "transpose"),
    Rule("cls/seq_relationship/output_bias", "heads/nsp/dense/bias"),
]

TF1_TABLE = Table(
    rules=[
        Rule("bert/embeddings/word_embeddings", "token_embedding/embeddings"),
        Rule("bert/embeddings/position_embeddings", "position_embedding/embeddings"),
        Rule("bert/embeddings/token_type_embeddings", "segment_embedding/embeddings"),
        *tf_layer_norm("bert/embeddings/LayerNorm", "embeddings_layer_norm"),
        *BERT_TF1_LAYER,
        *tf_dense("bert/pooler/dense", "pooled_dense"),
        *BERT_TF1_HEADS,
    ],
    ignore=TF1_TRAINING_STATE,
    strip_prefixes=("module/",),
)
