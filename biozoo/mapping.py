"""Name mappings as data: tables of (source name pattern, Keras target, transform).

A family writes one table per source format with the helpers below, e.g.

    dense("encoder.layer.{i}.intermediate.dense", "transformer_layer_{i}/feedforward_intermediate_dense")

`{i}` matches a layer number. Targets are Keras variable paths of the backbone
(`transformer_layer_0/.../kernel`), or `heads/<head>/<name>` for pretraining and task heads,
which are kept beside the backbone in the preset. `apply_table` streams a checkpoint through a
table into a built backbone and reports every missing, unexpected or misshapen tensor by name.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from biozoo.errors import CheckpointError


# Source layouts. PyTorch `nn.Linear` stores weights [out, in]; Keras `Dense` kernels are
# [in, out], so "linear" transposes. Keras MultiHeadAttention keeps q/k/v kernels as
# [in, heads, head_dim] and the output kernel as [heads, head_dim, out].
def _split3(a):
    """Fused Q,K,V (rows [0:U] = Q, [U:2U] = K, [2U:3U] = V) -> three arrays."""
    if a.shape[0] % 3:
        raise ValueError("fused QKV size is not a multiple of 3")
    return np.split(a, 3, axis=0)


TRANSFORMS = {
    "copy": lambda a, shape: a,
    "linear": lambda a, shape: a.T,
    "linear_to_heads": lambda a, shape: a.T.reshape(shape),
    "linear_from_heads": lambda a, shape: a.T.reshape(shape),
    "to_heads": lambda a, shape: a.reshape(shape),  # [in, out] kernels and [out] biases
    "transpose": lambda a, shape: a.T,  # TF1's [out, in] output_weights (used with transpose_b)
    # fused [3U, U] (out, in) weights and [3U] biases -> q, k, v in Keras layout
    "split_linear_to_heads": lambda a, shapes: [p.T.reshape(s) for p, s in zip(_split3(a), shapes)],
    "split_to_heads": lambda a, shapes: [p.reshape(s) for p, s in zip(_split3(a), shapes)],
}


def _megatron_qkv(layout):
    """Megatron-LM's fused query_key_value -> q, k, v in Keras layout.

    The rows are ordered (3, heads, head_dim) in checkpoint version 0, (heads, head_dim, 3)
    in version 1.0 and (heads, 3, head_dim) from 2.0 on (Megatron-LM checkpointing code,
    as HF's convert_megatron_bert_checkpoint.fix_query_key_value_ordering reads it).
    """
    def split(a, shapes):
        # the query target is a kernel [in, heads, head_dim] (3-D) or a bias [heads, head_dim]
        heads, head_dim = shapes[0][-2:] if len(shapes[0]) == 3 else shapes[0]
        rest = a.shape[1:]
        if a.shape[0] != 3 * heads * head_dim:
            raise ValueError("fused QKV size")
        if layout == "v0":
            parts = a.reshape((3, heads, head_dim) + rest)
        elif layout == "v1":
            parts = np.moveaxis(a.reshape((heads, head_dim, 3) + rest), 2, 0)
        else:
            parts = np.moveaxis(a.reshape((heads, 3, head_dim) + rest), 1, 0)
        if rest:  # weights [heads, head_dim, in] -> kernels [in, heads, head_dim]
            return [np.ascontiguousarray(np.moveaxis(p, -1, 0)) for p in parts]
        return [np.ascontiguousarray(p) for p in parts]

    return split


for _layout in ("v0", "v1", "v2"):
    TRANSFORMS[f"megatron_qkv_{_layout}"] = _megatron_qkv(_layout)


@dataclasses.dataclass(frozen=True)
class Rule:
    """One row of a `Table`: a source tensor name pattern (`{i}`, `{j}` match indices), its Keras
    target(s) with the same placeholders, and the transform applied on the way.

    Example:
        >>> rule = Rule("encoder.layer.{i}.output.dense.weight", "transformer_layer_{i}/feedforward_output_dense/kernel",
        ...             "linear")
        >>> rule.targets(rule.regex.match("encoder.layer.3.output.dense.weight").groupdict())
        'transformer_layer_3/feedforward_output_dense/kernel'
    """

    pattern: str  # source name with {i}, {j} placeholders for indices
    target: object  # Keras variable path or heads/<...> (same placeholders); a tuple for splits
    transform: str = "copy"

    @property
    def regex(self):
        return re.compile(
            re.escape(self.pattern).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{j\}", r"(?P<j>\d+)") + "$"
        )

    def targets(self, groups):
        if isinstance(self.target, tuple):
            return tuple(t.format(**groups) for t in self.target)
        return self.target.format(**groups)


def param(source, target, transform="copy"):
    return [Rule(source, target, transform)]


def embedding(source, target):
    return [Rule(f"{source}.weight", f"{target}/embeddings")]


def dense(source, target, transform="linear", bias=True):
    """A torch Linear (`.weight`, `.bias`) -> a Keras Dense (`kernel`, `bias`)."""
    rules = [Rule(f"{source}.weight", f"{target}/kernel", transform)]
    if bias:
        bias_transform = "to_heads" if transform == "linear_to_heads" else "copy"
        rules.append(Rule(f"{source}.bias", f"{target}/bias", bias_transform))
    return rules


def layer_norm(source, target, weight="weight", bias="bias"):
    return [Rule(f"{source}.{weight}", f"{target}/gamma"), Rule(f"{source}.{bias}", f"{target}/beta")]


def attention(query, key, value, output, target):
    """q/k/v/output torch Linears -> a Keras MultiHeadAttention."""
    return [
        *dense(query, f"{target}/query", "linear_to_heads"),
        *dense(key, f"{target}/key", "linear_to_heads"),
        *dense(value, f"{target}/value", "linear_to_heads"),
        *dense(output, f"{target}/attention_output", "linear_from_heads"),
    ]


def fused_attention(qkv, output, target):
    """One fused (Q, K, V) torch Linear + the output Linear -> a Keras MultiHeadAttention."""
    parts = ("query", "key", "value")
    return [
        Rule(f"{qkv}.weight", tuple(f"{target}/{p}/kernel" for p in parts), "split_linear_to_heads"),
        Rule(f"{qkv}.bias", tuple(f"{target}/{p}/bias" for p in parts), "split_to_heads"),
        *dense(output, f"{target}/attention_output", "linear_from_heads"),
    ]


# TF1 checkpoints: variables named scope/.../kernel, bias, gamma, beta; kernels already [in, out].


def tf_dense(source, target, transform="copy"):
    return [Rule(f"{source}/kernel", f"{target}/kernel", transform),
            Rule(f"{source}/bias", f"{target}/bias", "to_heads" if transform == "to_heads" else "copy")]


def tf_layer_norm(source, target):
    return [Rule(f"{source}/gamma", f"{target}/gamma"), Rule(f"{source}/beta", f"{target}/beta")]


def tf_attention(scope, output, target):
    """`scope/{query,key,value}` and the output dense (TF1 [in, out] kernels) -> Keras MHA."""
    return [
        *tf_dense(f"{scope}/query", f"{target}/query", "to_heads"),
        *tf_dense(f"{scope}/key", f"{target}/key", "to_heads"),
        *tf_dense(f"{scope}/value", f"{target}/value", "to_heads"),
        *tf_dense(output, f"{target}/attention_output", "to_heads"),
    ]


@dataclasses.dataclass
class Table:
    """One converter mapping: rules, names to ignore, and source-name normalization."""

    rules: list
    ignore: tuple = ()  # regexes of tensors that carry no information (buffers)
    strip_prefixes: tuple = ()  # model-class prefixes: "bert.", "electra.", ...
    renames: tuple = ()  # (regex, replacement) applied to names first (legacy spellings)
    # (regex, target): copies of what another tensor gives `target` (an MLM decoder tied to the
    # word embedding); checked equal to it, not stored
    tied: tuple = ()
    # (regex, hf config -> bool): tensors transformers saves but never reads under such a config
    # (MobileBERT's bottleneck.attention with use_bottleneck_attention); see `for_config`
    unused: tuple = ()

    def __post_init__(self):
        self._compiled = [(rule.regex, rule) for rule in self.rules]
        self._ignore = [re.compile(p + "$") for p in self.ignore]
        self._tied = [(re.compile(p + "$"), target) for p, target in self.tied]
        self._unused_here = []

    def for_config(self, config):
        """This table for a checkpoint of HF config `config`: its `unused` tensors ignored."""
        table = dataclasses.replace(self)
        table._unused_here = [re.compile(p + "$") for p, applies in self.unused if applies(config)]
        return table

    def tied_target(self, name):
        """The target `name` must equal when it is a tied copy, else None."""
        name = self.normalize(name)
        return next((target for regex, target in self._tied if regex.match(name)), None)

    def normalize(self, name):
        for pattern, repl in self.renames:
            name = re.sub(pattern, repl, name)
        for prefix in self.strip_prefixes:
            if name.startswith(prefix):
                return name[len(prefix):]
        return name

    def lookup(self, name):
        """(target, transform) for a source name, "ignore", or None when no rule matches."""
        name = self.normalize(name)
        if any(r.match(name) for r in self._unused_here):
            return "ignore"
        for regex, rule in self._compiled:
            match = regex.match(name)
            if match:
                return rule.targets(match.groupdict()), rule.transform
        if any(r.match(name) for r in self._ignore):
            return "ignore"
        return None


# Keras layout -> the source layout, for the transforms HF tables use (export to HF).
INVERSE = {
    "copy": lambda v: v,
    "linear": lambda v: v.T,
    "linear_to_heads": lambda v: v.reshape(v.shape[0], -1).T,  # [in, heads, dim] -> [out, in]
    "linear_from_heads": lambda v: v.reshape(-1, v.shape[-1]).T,  # [heads, dim, out] -> [out, in]
    "to_heads": lambda v: v.reshape(-1),  # [heads, dim] biases
}


def reverse_lookup(table, target):
    """(source name, transform) whose rule maps to the Keras `target` path, or None."""
    for rule in table.rules:
        if isinstance(rule.target, tuple):
            continue
        regex = re.escape(rule.target).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{j\}", r"(?P<j>\d+)") + "$"
        match = re.match(regex, target)
        if match:
            return rule.pattern.format(**match.groupdict()), rule.transform
    return None


def mapped_targets(table, names):
    """The Keras targets that a checkpoint's tensor names map to (without reading data)."""
    targets = set()
    for name in names:
        found = table.lookup(name)
        if found not in (None, "ignore"):
            targets.update(found[0] if isinstance(found[0], tuple) else (found[0],))
    return targets


def _with_source(table, target):
    """`target`, and the checkpoint tensor that gives it where the table says."""
    found = reverse_lookup(table, target)
    return f"{target} (from '{found[0]}')" if found else target


def _list(names, limit=40):
    names = sorted(names)
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def apply_table(table, tensors, sink, source, progress=None):
    """Write a stream of `(name, array)` through `table` into `sink` (`shapes`, `assign`,
    `read`: the backbone's weights file, see `biozoo.convert.sink`).

    Returns the head tensors (`{"mlm/dense/kernel": array, ...}`). Raises CheckpointError
    naming `source` and every missing, unexpected or misshapen tensor; what was written is then
    partial and must be discarded.
    """
    variables = sink.shapes
    # Shared variables (ALBERT's one layer used N times) appear once per path.
    assigned, unexpected, heads, tied = set(), [], {}, []
    for name, array in tensors:
        if progress is not None:
            progress.update(1)
        tie = table.tied_target(name)
        if tie is not None:
            tied.append((name, tie, np.asarray(array, np.float32)))
            continue
        found = table.lookup(name)
        if found == "ignore":
            continue
        if found is None:
            unexpected.append(name)
            continue
        targets, transform = found
        if isinstance(targets, str) and targets.startswith("heads/"):
            heads[targets[len("heads/"):]] = np.ascontiguousarray(TRANSFORMS[transform](array, None))
            continue
        split = isinstance(targets, tuple)
        targets = targets if split else (targets,)
        missing_targets = [t for t in targets if t not in variables]
        if missing_targets:
            unexpected.append(f"{name} (no {', '.join(missing_targets)} in this config)")
            continue
        shapes = [variables[t] for t in targets]
        try:
            values = TRANSFORMS[transform](array, shapes if split else shapes[0])
            values = values if split else [values]
        except ValueError:
            values = None
        if values is None or [tuple(v.shape) for v in values] != shapes:
            raise CheckpointError(
                f"{source}: tensor '{name}' has shape {tuple(array.shape)}, which does not fit "
                f"{', '.join(repr(t) for t in targets)} of shape {', '.join(map(str, shapes))} in the "
                "model built from the config; the checkpoint and its config disagree."
            )
        for target, value in zip(targets, values):
            if target in assigned:
                # tied copies (a generator's embedding saved twice) must agree
                if not np.array_equal(sink.read(target), value.astype(np.float32, copy=False)):
                    raise CheckpointError(f"{source}: more than one tensor maps to '{target}' (last: '{name}').")
                continue
            sink.assign(target, value)
            assigned.add(target)
    missing = set(variables) - assigned
    problems = []
    if missing:
        problems.append(f"missing tensors for: {_list(_with_source(table, target) for target in missing)}")
    if unexpected:
        problems.append(f"unexpected tensors: {_list(unexpected)}")
    if problems:
        raise CheckpointError(f"{source}: " + "; ".join(problems) + ".")
    for name, target, array in tied:
        head = target[len("heads/"):] if target.startswith("heads/") else None
        if head is not None and head not in heads:
            if any(key.split("/")[0] == head.split("/")[0] for key in heads):
                heads[head] = np.ascontiguousarray(array)  # a save that kept only the tied copy's name
            continue
        stored = np.asarray(heads[head] if head is not None else sink.read(target), np.float32)
        if stored.shape != array.shape or not np.array_equal(stored, array):
            source_name = reverse_lookup(table, target)
            raise CheckpointError(
                f"{source}: tensor '{name}' differs from '{source_name[0] if source_name else target}', which it "
                "is tied to in biozoo's model (an MLM decoder not tied to the word embedding: tie_word_embeddings "
                "false); converting it would change the model's outputs")
    return heads
