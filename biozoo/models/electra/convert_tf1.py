"""google-research/electra TF1 checkpoints (BioM-ELECTRA): the discriminator (`electra/`)
or the generator (`generator/`, sharing `electra/embeddings`). Releases ship no config:
sizes are read off the tensors."""

import re

from biozoo.errors import CheckpointError
from biozoo.mapping import Rule, Table, tf_attention, tf_dense, tf_layer_norm
from biozoo.models.bert.convert_tf1 import TF1_TRAINING_STATE


def _table(scope, heads, other_part):
    layer, block = scope + "/encoder/layer_{i}", "transformer_layer_{i}"
    return Table(
        rules=[
            # the embeddings live under electra/ for both parts (shared with the generator)
            Rule("electra/embeddings/word_embeddings", "token_embedding/embeddings"),
            Rule("electra/embeddings/position_embeddings", "position_embedding/embeddings"),
            Rule("electra/embeddings/token_type_embeddings", "segment_embedding/embeddings"),
            *tf_layer_norm("electra/embeddings/LayerNorm", "embeddings_layer_norm"),
            *tf_dense(scope + "/embeddings_project", "embeddings_projection"),
            *tf_attention(layer + "/attention/self", layer + "/attention/output/dense", block + "/self_attention_layer"),
            *tf_layer_norm(layer + "/attention/output/LayerNorm", block + "/self_attention_layer_norm"),
            *tf_dense(layer + "/intermediate/dense", block + "/feedforward_intermediate_dense"),
            *tf_dense(layer + "/output/dense", block + "/feedforward_output_dense"),
            *tf_layer_norm(layer + "/output/LayerNorm", block + "/feedforward_layer_norm"),
            *heads,
        ],
        ignore=TF1_TRAINING_STATE + other_part + (r"generator_predictions/temperature", r"task_specific/.*"),
        strip_prefixes=("module/",),
    )


DISCRIMINATOR_TABLE = _table(
    "electra",
    [*tf_dense("discriminator_predictions/dense", "heads/rtd/dense"),
     *tf_dense("discriminator_predictions/dense_1", "heads/rtd/output")],
    other_part=(r"generator/.*", r"generator_predictions/.*"),
)

GENERATOR_TABLE = _table(
    "generator",
    [*tf_dense("generator_predictions/dense", "heads/mlm/dense"),
     *tf_layer_norm("generator_predictions/LayerNorm", "heads/mlm/layer_norm"),
     Rule("generator_predictions/output_bias", "heads/mlm/output_bias")],
    other_part=(r"electra/encoder/.*", r"electra/embeddings_project/.*", r"discriminator_predictions/.*"),
)


def infer_config(shapes, part="discriminator", num_heads=None):
    """An HF-style ELECTRA config from the checkpoint's tensor shapes.

    Heads are hidden // 64 (ELECTRA's own rule) unless `num_heads` is given; activation
    "gelu" and epsilon 1e-12, as the HF configs of these checkpoints say.
    """
    scope = "electra" if part == "discriminator" else "generator"

    def shape(name):
        for prefix in ("", "module/"):
            if prefix + name in shapes:
                return shapes[prefix + name]
        raise CheckpointError(f"the checkpoint has no '{name}'; is it an ELECTRA {part}?")

    vocab, embedding = shape("electra/embeddings/word_embeddings")
    hidden = shape(f"{scope}/encoder/layer_0/attention/self/query/kernel")[1]
    layers = 1 + max(int(m.group(1)) for n in shapes if (m := re.search(rf"{scope}/encoder/layer_(\d+)/", n)))
    heads = num_heads or max(1, hidden // 64)
    if hidden % heads:
        raise CheckpointError(f"hidden size {hidden} is not divisible by {heads} heads; pass --num-heads.")
    return {
        "model_type": "electra",
        "vocab_size": vocab,
        "embedding_size": embedding,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": shape(f"{scope}/encoder/layer_0/intermediate/dense/kernel")[1],
        "max_position_embeddings": shape("electra/embeddings/position_embeddings")[0],
        "type_vocab_size": shape("electra/embeddings/token_type_embeddings")[0],
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
    }
