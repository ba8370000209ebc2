"""Write TF1 checkpoints under the original google-research names, from random transformers
models, with tf.compat.v1 variables (and Adam slots and global_step, as training leaves them).

The HF -> TF1 renaming here is written independently of biozoo's tables, from the
google-research code (see shared/reference/conversion-facts.md §2). Documented transposes:
TF1 dense kernels are [in, out], the transpose of torch's Linear weight [out, in]; BERT's
cls/seq_relationship/output_weights is stored [2, hidden] (used with transpose_b), i.e. the
torch weight as is; embeddings are [vocab, width] on both sides.
"""

from __future__ import annotations

import re

import numpy as np


def _leaf(name, array, tf_name):
    """Add the parameter suffix: kernels (transposed), LayerNorm gamma/beta, biases."""
    layer_norm = "LayerNorm." in name or "layer_norm." in name
    if layer_norm and name.endswith((".weight", ".gamma")):
        return f"{tf_name}/gamma", array
    if layer_norm and name.endswith((".bias", ".beta")):
        return f"{tf_name}/beta", array
    if name.endswith(".weight"):
        return f"{tf_name}/kernel", array.T
    if name.endswith(".bias"):
        return f"{tf_name}/bias", array
    raise ValueError(name)


BERT_SCOPES = [
    (r"^bert\.embeddings\.(word|position|token_type)_embeddings\.weight$", lambda m: f"bert/embeddings/{m[1]}_embeddings"),
    (r"^bert\.embeddings\.LayerNorm\.", lambda m: "bert/embeddings/LayerNorm"),
    (r"^bert\.encoder\.layer\.(\d+)\.(.*)\.(weight|bias)$", lambda m: f"bert/encoder/layer_{m[1]}/" + m[2].replace(".", "/")),
    (r"^bert\.pooler\.dense\.", lambda m: "bert/pooler/dense"),
    (r"^cls\.predictions\.transform\.(dense|LayerNorm)\.", lambda m: f"cls/predictions/transform/{m[1]}"),
]


def bert_tf1_variables(state):
    out = {}
    for name, array in state.items():
        if not name.startswith(("bert.", "cls.")):
            name = "bert." + name  # a bare BertModel's state dict has no prefix
        if name in ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias") or "position_ids" in name:
            continue  # tied to the word embedding / a copy of cls.predictions.bias
        if name == "cls.predictions.bias":
            out["cls/predictions/output_bias"] = array
            continue
        if name.startswith("cls.seq_relationship."):
            out["cls/seq_relationship/" + ("output_weights" if name.endswith("weight") else "output_bias")] = array
            continue
        for pattern, scope in BERT_SCOPES:
            match = re.match(pattern, name)
            if match:
                tf_name = scope(match)
                if "_embeddings.weight" in name:
                    out[tf_name] = array
                else:
                    key, value = _leaf(name, array, tf_name)
                    out[key] = value
                break
        else:
            raise KeyError(f"no TF1 name for {name}")
    return out


ALBERT_LAYER = {
    "attention.query": "attention_1/self/query", "attention.key": "attention_1/self/key",
    "attention.value": "attention_1/self/value", "attention.dense": "attention_1/output/dense",
    "attention.LayerNorm": "LayerNorm", "ffn": "ffn_1/intermediate/dense",
    "ffn_output": "ffn_1/intermediate/output/dense", "full_layer_layer_norm": "LayerNorm_1",
}


def albert_tf1_variables(state):
    out = {}
    for name, array in state.items():
        if name.startswith("predictions.decoder") or "position_ids" in name:
            continue
        if name.startswith("albert.embeddings.") and name.endswith("_embeddings.weight"):
            out["bert/embeddings/" + name.split(".")[2]] = array
            continue
        if name == "predictions.bias":
            out["cls/predictions/output_bias"] = array
            continue
        if name.startswith("sop_classifier.classifier."):
            out["cls/seq_relationship/" + ("output_weights" if name.endswith("weight") else "output_bias")] = array
            continue
        m = re.match(r"^albert\.encoder\.albert_layer_groups\.(\d+)\.albert_layers\.(\d+)\.(.*)\.(weight|bias)$", name)
        if m:
            tf_name = f"bert/encoder/transformer/group_{m[1]}/inner_group_{m[2]}/{ALBERT_LAYER[m[3]]}"
        elif name.startswith("albert.embeddings.LayerNorm"):
            tf_name = "bert/embeddings/LayerNorm"
        elif name.startswith("albert.encoder.embedding_hidden_mapping_in"):
            tf_name = "bert/encoder/embedding_hidden_mapping_in"
        elif name.startswith("albert.pooler."):
            tf_name = "bert/pooler/dense"
        elif name.startswith("predictions.dense"):
            tf_name = "cls/predictions/transform/dense"
        elif name.startswith("predictions.LayerNorm"):
            tf_name = "cls/predictions/transform/LayerNorm"
        else:
            raise KeyError(f"no TF1 name for {name}")
        key, value = _leaf(name, array, tf_name)
        out[key] = value
    return out


def electra_tf1_variables(discriminator_state, generator_state):
    """One ELECTRA pretraining checkpoint: electra/ (discriminator), generator/ and heads;
    the embeddings live once, under electra/embeddings."""
    out = {}
    for part, state in (("electra", discriminator_state), ("generator", generator_state)):
        for name, array in state.items():
            if "position_ids" in name or name == "generator_lm_head.weight":
                continue
            if name.startswith("electra.embeddings."):
                if part == "generator":
                    continue  # shared with the discriminator
                if name.endswith("_embeddings.weight"):
                    out["electra/embeddings/" + name.split(".")[2]] = array
                    continue
                tf_name = "electra/embeddings/LayerNorm"
            elif name.startswith("electra.embeddings_project."):
                tf_name = f"{part}/embeddings_project"
            elif name.startswith("electra.encoder.layer."):
                m = re.match(r"^electra\.encoder\.layer\.(\d+)\.(.*)\.(weight|bias)$", name)
                tf_name = f"{part}/encoder/layer_{m[1]}/" + m[2].replace(".", "/")
            elif name.startswith("discriminator_predictions.dense_prediction."):
                tf_name = "discriminator_predictions/dense_1"
            elif name.startswith("discriminator_predictions.dense."):
                tf_name = "discriminator_predictions/dense"
            elif name.startswith("generator_predictions."):
                tf_name = "generator_predictions/" + name.split(".")[1]
            elif name == "generator_lm_head.bias":
                out["generator_predictions/output_bias"] = array
                continue
            else:
                raise KeyError(f"no TF1 name for {name}")
            key, value = _leaf(name, array, tf_name)
            out[key] = value
    out["generator_predictions/temperature"] = np.float32(1.0)
    return out


def write_tf1_checkpoint(variables, prefix, adam_slots=True, seed=0):
    """Save `variables` ({name: array}) with tf.compat.v1 under exactly those names."""
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    everything = dict(variables)
    if adam_slots:
        for name, value in variables.items():
            if np.ndim(value) == 0:
                continue
            everything[f"{name}/adam_m"] = rng.normal(size=np.shape(value)).astype(np.float32)
            everything[f"{name}/adam_v"] = np.abs(rng.normal(size=np.shape(value))).astype(np.float32)
        everything["global_step"] = np.int64(1234)
    graph = tf.Graph()
    with graph.as_default():
        tf_vars = [tf.compat.v1.Variable(np.asarray(v), name=n) for n, v in everything.items()]
        saver = tf.compat.v1.train.Saver(tf_vars)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return saver.save(session, str(prefix))


def torch_state(model):
    return {k: v.detach().numpy() for k, v in model.state_dict().items()}
