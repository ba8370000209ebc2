"""Megatron-LM / NeMo BERT checkpoints (BioMegatron's MegatronBERT.pt, .nemo archives)."""

from biozoo.mapping import Rule, Table, dense, embedding, layer_norm, param

LAYER = "layers.{i}"
BLOCK = "transformer_layer_{i}"
QKV = ("query", "key", "value")


def megatron_table(checkpoint_version):
    """The name table for a checkpoint version: only the fused QKV row order depends on it."""
    layout = "v0" if checkpoint_version < 1.0 else ("v1" if checkpoint_version < 2.0 else "v2")
    attention = BLOCK + "/self_attention_layer"
    return Table(
        rules=[
            *embedding("embedding.word_embeddings", "token_embedding"),
            *embedding("embedding.position_embeddings", "position_embedding"),
            *embedding("embedding.tokentype_embeddings", "segment_embedding"),
            *layer_norm(LAYER + ".input_layernorm", BLOCK + "/self_attention_layer_norm"),
            Rule(LAYER + ".attention.query_key_value.weight", tuple(f"{attention}/{p}/kernel" for p in QKV),
                 f"megatron_qkv_{layout}"),
            Rule(LAYER + ".attention.query_key_value.bias", tuple(f"{attention}/{p}/bias" for p in QKV),
                 f"megatron_qkv_{layout}"),
            *dense(LAYER + ".attention.dense", attention + "/attention_output", "linear_from_heads"),
            *layer_norm(LAYER + ".post_attention_layernorm", BLOCK + "/feedforward_layer_norm"),
            *dense(LAYER + ".mlp.dense_h_to_4h", BLOCK + "/feedforward_intermediate_dense"),
            *dense(LAYER + ".mlp.dense_4h_to_h", BLOCK + "/feedforward_output_dense"),
            *layer_norm("final_layernorm", "final_layer_norm"),
            *dense("pooler.dense", "pooled_dense"),
            *dense("lm_head.dense", "heads/mlm/dense"),
            *layer_norm("lm_head.layernorm", "heads/mlm/layer_norm"),
            *param("lm_head.bias", "heads/mlm/output_bias"),
            *dense("binary_head", "heads/nsp/dense"),
        ],
        ignore=(r".*\._extra_state", r".*rotary.*inv_freq"),
        strip_prefixes=(),
        renames=(
            # NeMo ("model." / "bert_model.") and Megatron-LM ("model.") spellings of one layout
            (r"^(model|bert_model)\.", ""),
            (r"^language_model\.", ""),
            (r"^(transformer|encoder)\.", ""),
            (r"\.self_attention\.", ".attention."),
        ),
    )
