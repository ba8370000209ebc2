"""GluonNLP 1.0 ELECTRA (`model.params` / `disc_model.params` / `gen_model.params`)."""

from biozoo.mapping import Rule, Table, dense, embedding, fused_attention, layer_norm, param

LAYER = "encoder.all_encoder_layers.{i}"
BLOCK = "transformer_layer_{i}"

BACKBONE = [
    *embedding("word_embed", "token_embedding"),
    *embedding("token_type_embed", "segment_embedding"),
    *embedding("token_pos_embed._embed", "position_embedding"),
    *layer_norm("embed_layer_norm", "embeddings_layer_norm", "gamma", "beta"),
    *dense("embed_factorized_proj", "embeddings_projection"),
    # Q, K and V fused in that order: rows [0:U] = Q, [U:2U] = K, [2U:3U] = V
    *fused_attention(LAYER + ".attn_qkv", LAYER + ".attention_proj", BLOCK + "/self_attention_layer"),
    *layer_norm(LAYER + ".layer_norm", BLOCK + "/self_attention_layer_norm", "gamma", "beta"),
    *dense(LAYER + ".ffn.ffn_1", BLOCK + "/feedforward_intermediate_dense"),
    *dense(LAYER + ".ffn.ffn_2", BLOCK + "/feedforward_output_dense"),
    *layer_norm(LAYER + ".ffn.layer_norm", BLOCK + "/feedforward_layer_norm", "gamma", "beta"),
]

HEADS = [
    *dense("rtd_encoder.0", "heads/rtd/dense"),
    *dense("rtd_encoder.2", "heads/rtd/output"),
    *dense("mlm_decoder.0", "heads/mlm/dense"),
    *layer_norm("mlm_decoder.2", "heads/mlm/layer_norm", "gamma", "beta"),
    *param("mlm_decoder.3.bias", "heads/mlm/output_bias"),
    # tied to the word embedding; a deduplicated save keeps only this name
    Rule("mlm_decoder.3.weight", "token_embedding/embeddings"),
]


def _table(prefixes, other):
    return Table(rules=[*BACKBONE, *HEADS], ignore=other, strip_prefixes=prefixes)


DISCRIMINATOR_TABLE = _table(
    ("discriminator.backbone_model.", "disc_backbone.", "discriminator.", "backbone_model."),
    (r"generator\..*",),
)
GENERATOR_TABLE = _table(("generator.backbone_model.", "generator.", "backbone_model."),
                         (r"discriminator\..*", r"disc_backbone\..*"))

ACTIVATIONS = {"gelu": "gelu", "gelu(erf)": "gelu", "gelu(tanh)": "gelu_new", "relu": "relu"}
