"""The battery: a case's backbone, converted heads, task heads and ids-in exports against
transformers. It runs under every Keras backend (the exports need TensorFlow). torch (the
`biozoo[test]` extra), TensorFlow and the TensorFlow-written exports are imported by the tests
that use them."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import keras
import numpy as np

from biozoo import api, presets
from biozoo import tasks as task_classes
from biozoo._keras_internals import count_attention_paths
from biozoo.choices import DEFAULT_AGGREGATION
from biozoo.documents.sentences import split_sentences
from biozoo.export.formats import IDS_FORMATS
from biozoo.models import FAMILIES, never
from biozoo.preset_files import read_heads
from biozoo.tasks import SequenceClassifier, inference
from biozoo.tasks.inference import compiled_predict
from biozoo.testing.cases import (
    CONVERTED_HEADS,
    INT8_TOLERANCE,
    MIXED_POLICIES,
    MIXED_TOLERANCE,
    TASKS,
    TOLERANCE,
    get_case,
)
from biozoo.testing.checkpoints import (
    HEAD_TENSORS,
    case_inputs,
    hf_features,
    hf_outputs,
    make_model,
    max_diff,
    save_case,
    save_hf_directory,
    tiny_sentencepiece,
    torch_inputs,
)
from biozoo.testing.processes import run_exported_without_keras


def to_numpy(value):
    """A backend tensor (or a structure of them) as NumPy, whatever the Keras backend."""
    return keras.tree.map_structure(lambda v: np.asarray(keras.ops.convert_to_numpy(v)), value)


def _numpy(outputs):
    return {k: to_numpy(v) for k, v in outputs.items()}


def _assert_same_outputs(got, expected, mask, atol, what):
    assert set(got) == set(expected), f"{what}: outputs {sorted(got)} != {sorted(expected)}"
    diff = max_diff(got["sequence_output"], expected["sequence_output"], mask)
    assert diff <= atol, f"{what}: sequence_output max |diff| {diff:.2e} > {atol:g}"
    if "pooled_output" in expected:
        diff = float(np.abs(np.asarray(got["pooled_output"], np.float32) - expected["pooled_output"]).max())
        assert diff <= atol, f"{what}: pooled_output max |diff| {diff:.2e} > {atol:g}"


def _assert_matches_transformers(outputs, model, inputs, what):
    sequence, pooled = hf_outputs(model, inputs)
    diff = max_diff(outputs["sequence_output"], sequence, inputs["padding_mask"])
    assert diff <= TOLERANCE, f"{what}: sequence_output max |diff| to transformers {diff:.2e} > {TOLERANCE:g}"
    if pooled is not None:
        assert "pooled_output" in outputs, f"{what}: transformers has a pooled output, biozoo none"
        diff = float(np.abs(np.asarray(outputs["pooled_output"]) - pooled).max())
        assert diff <= TOLERANCE, f"{what}: pooled_output max |diff| to transformers {diff:.2e} > {TOLERANCE:g}"


def _assert_features_match_transformers(backbone, model, inputs, what):
    """`features()` (distillation's and the TF Hub export's `encoder_outputs`) gives transformers'
    hidden states and attention maps, the last hidden state being the sequence output."""
    hidden, attentions = hf_features(model, inputs)
    features = backbone.features(inputs, attentions=True)
    ours = [to_numpy(h) for h in features["hidden_states"]]
    assert len(ours) == len(hidden), f"{what}: {len(ours)} hidden states, transformers {len(hidden)}"
    mask = inputs["padding_mask"]
    for i, (got, reference) in enumerate(zip(ours, hidden)):
        diff = max_diff(got, reference, mask)
        assert diff <= TOLERANCE, f"{what}: hidden state {i} max |diff| to transformers {diff:.2e} > {TOLERANCE:g}"
    last = max_diff(ours[-1], to_numpy(features["sequence_output"]), mask)
    assert last <= 1e-6, f"{what}: the last hidden state differs from the sequence output by {last:.2e}"
    maps = [to_numpy(a) for a in features["attentions"]]
    assert len(maps) == len(attentions), f"{what}: {len(maps)} attention maps, transformers {len(attentions)}"
    queries = np.asarray(mask).astype(bool)[:, None, :, None]
    for i, (got, reference) in enumerate(zip(maps, attentions)):
        diff = float(np.abs(np.where(queries, got - reference, 0.0)).max())
        assert diff <= TOLERANCE, f"{what}: attention map {i} max |diff| to transformers {diff:.2e} > {TOLERANCE:g}"


def run_parity_test(name, hf_class, fmt, directory, spiece_model=None):
    """`biozoo.from_preset(hf_dir)` of a published class saved as `fmt` equals transformers to
    max |diff| <= 1e-4 (sequence and pooled output); ELECTRA and DistilBERT invent no pooler."""
    case = get_case(name)
    model, hf_dir = save_case(case, hf_class, directory, fmt, spiece_model)
    backbone = api.from_preset(str(hf_dir))
    inputs = case_inputs(model)
    outputs = _numpy(backbone(inputs))
    _assert_matches_transformers(outputs, model, inputs, f"{case.name} {hf_class} {fmt}")
    if FAMILIES[case.family].use_pooler is never:
        assert set(outputs) == {"sequence_output"}  # no invented pooler
    return backbone


def run_converted_heads_test(name, hf_class, directory, spiece_model=None):
    """The preset of a published class keeps exactly its heads (`Case.published`), each
    tensor converted with the layout rules of `HEAD_TENSORS`, checked against torch."""
    case = get_case(name)
    expected_heads = set(case.published[hf_class])
    model, hf_dir = save_case(case, hf_class, directory, "safetensors", spiece_model)
    heads, config = read_heads(presets.resolve_preset(str(hf_dir)))
    assert {key.split("/")[0] for key in heads} == expected_heads
    assert set(config) == expected_heads
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    for head in expected_heads:
        for source, target in HEAD_TENSORS[head].items():
            key = next((k for k in state if k.endswith(source)), None)
            if key is None:
                continue  # e.g. no transform.LayerNorm for ELECTRA's discriminator head
            if target.endswith("!"):
                target, value = target[:-1], state[key]
            else:
                value = state[key].T if target.endswith("kernel") else state[key]
            np.testing.assert_array_equal(heads[f"{head}/{target}"], value)


def run_backbone_test(name, directory, spiece_model=None, sequence_lengths=(8, 20),
                      mixed_policies=MIXED_POLICIES):
    """The backbone battery for one case, on the bare encoder converted from transformers:

    parity with transformers at every length in `sequence_lengths`; a padded batch gives the
    unpadded batch's outputs; `get_config` / `from_config` and `.keras` save / load round
    trips give the same outputs; `predict` (on a `tf.data.Dataset` under TensorFlow, on NumPy
    batches under the other backends) equals the eager call; under each mixed-precision policy the
    outputs have the compute dtype, the variables stay float32, and the outputs are finite and close
    to float32 (`MIXED_TOLERANCE`). It runs under every Keras backend.
    """
    case = get_case(name)
    directory = Path(directory)
    model, hf_dir = save_case(case, case.model_class, directory, "safetensors", spiece_model)
    backbone = api.from_preset(str(hf_dir))
    longest = max(sequence_lengths)
    inputs = case_inputs(model, length=longest)
    mask = inputs["padding_mask"]
    expected = _numpy(backbone(inputs))
    _assert_matches_transformers(expected, model, inputs, f"{case.name} length {longest}")
    _assert_features_match_transformers(backbone, model, inputs, case.name)

    # Shorter sequences: parity, and padding them to the longest length changes nothing.
    for length in sorted(sequence_lengths)[:-1]:
        short = {k: v[:, :length].copy() for k, v in inputs.items()}
        short["padding_mask"][:] = 1  # every position real, including those padded above
        outputs = _numpy(backbone(short))
        _assert_matches_transformers(outputs, model, short, f"{case.name} length {length}")
        padded = {k: np.pad(v, ((0, 0), (0, longest - length))) for k, v in short.items()}
        prefix = {k: v[:, :length] if k == "sequence_output" else v
                  for k, v in _numpy(backbone(padded)).items()}
        _assert_same_outputs(prefix, outputs, short["padding_mask"], 1e-5,
                             f"{case.name}: length {length} padded to {longest}")

    # get_config / from_config
    config = backbone.get_config()
    restored = type(backbone).from_config(config)
    assert restored.get_config() == config
    restored.set_weights(backbone.get_weights())
    _assert_same_outputs(_numpy(restored(inputs)), expected, mask, 1e-6, f"{case.name}: from_config")

    # .keras save / load
    path = directory / f"{case.name}.keras"
    backbone.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(backbone)
    _assert_same_outputs(_numpy(loaded(inputs)), expected, mask, 1e-6, f"{case.name}: .keras load")

    # predict in batches of 2 and a short last one (graph mode on a tf.data pipeline under TensorFlow)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        predicted = backbone.predict(tf.data.Dataset.from_tensor_slices(inputs).batch(2), verbose=0)
    else:
        predicted = backbone.predict(inputs, batch_size=2, verbose=0)
    _assert_same_outputs(_numpy(predicted), expected, mask, 1e-5, f"{case.name}: predict")

    # mixed precision
    for policy in mixed_policies:
        mixed = type(backbone).from_config({**config, "dtype": policy})
        mixed.set_weights(backbone.get_weights())
        compute = keras.DTypePolicy(policy).compute_dtype
        assert all(w.dtype == "float32" for w in mixed.weights), f"{case.name} {policy}: non-float32 variables"
        outputs = mixed(inputs)
        for key, value in outputs.items():
            assert keras.backend.standardize_dtype(value.dtype) == compute, (
                f"{case.name} {policy}: {key} is {value.dtype}, not {compute}")
        outputs = {k: to_numpy(keras.ops.cast(v, "float32")) for k, v in outputs.items()}
        assert all(np.isfinite(v).all() for v in outputs.values()), f"{case.name} {policy}: non-finite outputs"
        scale = max(1.0, float(np.abs(expected["sequence_output"][mask.astype(bool)]).max()))
        _assert_same_outputs(outputs, expected, mask, MIXED_TOLERANCE[policy] * scale, f"{case.name} {policy}")
    return backbone


def _task_head_modules(model, kind):
    """The HF head's (dense before the output or None, output Linear, dropout or None)."""
    head = getattr(model, "classifier", None)
    dropout = getattr(model, "dropout", None)
    if kind == "re" and hasattr(head, "out_proj"):  # ElectraClassificationHead
        return head.dense, head.out_proj, dropout or head.dropout
    return getattr(model, "pre_classifier", None), head, dropout


def _assert_head_dropouts_match(task, model, inputs, what):
    """Training applies the dropouts transformers' head applies: as many, at the same rates."""
    ours = sorted(layer.rate for layer in task.layers if isinstance(layer, keras.layers.Dropout) and layer.rate)
    theirs = sorted(p for p in _hf_head_dropouts(model, inputs) if p)
    assert ours == theirs, f"{what}: the head applies dropout {ours}, transformers' head {theirs}"


def _hf_head_dropouts(model, inputs):
    """The rate of each dropout transformers' model applies outside its base model, in training,
    once per call (ELECTRA's classification head applies one module twice)."""
    import torch

    inside = {id(m) for m in model.base_model.modules()}
    rates, hooks = [], []
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout) and id(module) not in inside:
            hooks.append(module.register_forward_hook(lambda m, args, out: rates.append(m.p)))
    try:
        with torch.no_grad():
            model(**torch_inputs(model, inputs))
    finally:
        for hook in hooks:
            hook.remove()
    return rates


def _copy_linear(layer, linear):
    layer.set_weights([linear.weight.detach().numpy().T, linear.bias.detach().numpy()])


def run_task_test(name, kind, hf_class, directory, spiece_model=None):
    """A biozoo task's logits equal the transformers head of the same weights (<= 1e-4).

    "mlm", "rtd" and "qa": the task is built with `from_preset` on the saved HF model, so its
    head comes from the converter. "ner" and "re" (sequence classification): the encoder of the HF model is
    converted, the task built on it, and the HF head's weights copied into the task's layers
    (torch Linear [out, in] -> Keras kernel [in, out]); the head structure (pooler or token 0
    through a dense layer) must be HF's. For "ner", "re" and "qa" the dropouts the head applies in
    training are transformers' (as many, at the same rates). Then the task's
    `get_config` / `from_config` round trip gives the same logits.
    """
    import torch

    case = get_case(name)
    task_cls = getattr(task_classes, TASKS[kind])
    what = f"{case.name} {hf_class} ({TASKS[kind]})"
    labels = ["a", "b", "c"]
    overrides = {"num_labels": len(labels)} if kind in ("ner", "re") else {}
    converted = kind in CONVERTED_HEADS
    model, hf_dir = save_case(case, hf_class, directory, "safetensors", spiece_model,
                              base_only=not converted, **overrides)
    if converted:
        task = task_cls.from_preset(str(hf_dir))
    else:
        task = task_cls(api.from_preset(str(hf_dir)), label_names=labels)
        dense, output, _ = _task_head_modules(model, kind)
        ours = getattr(task, "cls_dense", None)
        assert (dense is None) == (ours is None), (
            f"{what}: transformers {'has' if dense is not None else 'has no'} dense layer before the "
            f"classifier, biozoo {'has' if ours is not None else 'has none'}")
        if dense is not None:
            _copy_linear(ours, dense)
        _copy_linear(task.output_dense, output)
    inputs = case_inputs(model)
    if kind in ("ner", "re", "qa"):  # the fine-tuning heads (a pre-training class also runs heads biozoo's lack)
        _assert_head_dropouts_match(task, model, inputs, what)
    mask = inputs["padding_mask"]
    if kind == "mlm":
        positions = np.array([[1, 3, 5], [0, 2, 9], [4, 5, 6]], np.int32)
        inputs = {**inputs, "mask_positions": positions}
    ours = to_numpy(task(inputs))
    with torch.no_grad():
        out = model(**torch_inputs(model, inputs))
    if kind == "mlm":
        logits = (out.prediction_logits if hasattr(out, "prediction_logits") else out.logits).numpy()
        expected = np.take_along_axis(logits, positions[..., None], axis=1)
        diff, bound = float(np.abs(ours - expected).max()), TOLERANCE * max(1.0, float(np.abs(expected).max()))
    elif kind == "qa":
        diff = max(max_diff(ours[..., 0], out.start_logits.numpy(), mask),
                   max_diff(ours[..., 1], out.end_logits.numpy(), mask))
        bound = TOLERANCE
    elif kind == "re":
        diff, bound = float(np.abs(ours - out.logits.numpy()).max()), TOLERANCE
    else:  # ner, rtd: one score (vector) per real token
        diff, bound = max_diff(ours, out.logits.numpy(), mask), TOLERANCE
    assert diff <= bound, f"{what}: logits max |diff| to transformers {diff:.2e} > {bound:.2g}"
    if kind == "ner":
        unpadded = {**inputs, "padding_mask": np.ones_like(mask)}
        with torch.no_grad():
            unpadded_reference = model(**torch_inputs(model, unpadded)).logits.numpy()
        _check_compiled_prediction(task, inputs, ours, mask, what, unpadded, unpadded_reference)

    restored = type(task).from_config(task.get_config())
    restored.set_weights(task.get_weights())
    np.testing.assert_allclose(to_numpy(restored(inputs)), ours, atol=1e-6, err_msg=f"{what}: from_config")
    if kind == "re" and _pooler_linear(model.base_model) is not None:
        _check_classifier_without_pooler(case, model, Path(directory) / "no-pooler", spiece_model, labels, inputs, what)
    return task


def _pooler_linear(base):
    """The pooler's dense layer of a transformers base model (ALBERT's pooler is one), or None."""
    import torch

    pooler = getattr(base, "pooler", None)
    linear = getattr(pooler, "dense", pooler)
    return linear if isinstance(linear, torch.nn.Linear) else None


def _check_classifier_without_pooler(case, model, directory, spiece_model, labels, inputs, what):
    """On an encoder saved without its pooler, transformers' *ForSequenceClassification builds a
    new pooler (dense + tanh): biozoo's classifier on that encoder is the same head (logits and
    dropouts), and `export_hf_task` writes its dense layer as the pooler transformers loads."""
    import torch
    import transformers

    from biozoo.export.hf import export_hf_task

    base = model.base_model
    without = type(base)(base.config, add_pooling_layer=False).eval()
    without.load_state_dict({k: v for k, v in base.state_dict().items() if not k.startswith("pooler")})
    hf_dir = save_hf_directory(without, directory / "hf", "safetensors", case.tokenizer, spiece_model)
    task = SequenceClassifier.from_preset(str(hf_dir), label_names=labels)
    what = f"{what} on an encoder without a pooler"
    assert "pooled_output" not in task.backbone.output and task.cls_dense is not None, what
    _copy_linear(task.cls_dense, _pooler_linear(base))
    _copy_linear(task.output_dense, model.classifier)
    ours = to_numpy(task(inputs))
    with torch.no_grad():
        theirs = model(**torch_inputs(model, inputs)).logits.numpy()
    diff = float(np.abs(ours - theirs).max())
    assert diff <= TOLERANCE, f"{what}: logits max |diff| to transformers {diff:.2e} > {TOLERANCE:g}"
    _assert_head_dropouts_match(task, model, inputs, what)
    export_hf_task(task, directory / "export")
    exported = transformers.AutoModelForSequenceClassification.from_pretrained(str(directory / "export")).eval()
    with torch.no_grad():
        reloaded = exported(**torch_inputs(exported, inputs)).logits.numpy()
    diff = float(np.abs(reloaded - ours).max())
    assert diff <= TOLERANCE, f"{what}: the export's logits in transformers max |diff| {diff:.2e} > {TOLERANCE:g}"


def _check_compiled_prediction(task, inputs, eager, mask, what, unpadded, unpadded_reference):
    """What `annotate` runs (`compiled_predict`) gives the eager call's logits; off TensorFlow its
    attention goes through `keras.ops.dot_product_attention` although the model has dropout, and
    a batch without padding (`unpadded`) goes there without a mask, to transformers' logits for
    it (`unpadded_reference`)."""
    with count_attention_paths() as (fused, computed), \
            mock.patch.object(inference, "_fused_layer_norm", wraps=inference._fused_layer_norm) as norms:
        compiled = to_numpy(compiled_predict(task)(inputs))
    diff = max_diff(compiled, eager, mask)
    assert diff <= TOLERANCE, f"{what}: compiled prediction max |diff| to the eager call {diff:.2e}"
    if keras.backend.backend() == "tensorflow":
        return
    assert computed.call_count and fused.call_count == computed.call_count, (
        f"{what}: {fused.call_count} of {computed.call_count} attention computations ran dot_product_attention")
    assert all(call.kwargs["mask"] is not None for call in fused.call_args_list), f"{what}: padding unmasked"
    layer_norms = {id(layer) for layer in task._flatten_layers() if type(layer) is keras.layers.LayerNormalization}
    fused_norms = {id(call.args[0]) for call in norms.call_args_list}
    expected_norms = layer_norms if keras.backend.backend() == "jax" else set()
    assert fused_norms == expected_norms, (
        f"{what}: {len(fused_norms)} of {len(layer_norms)} LayerNorms traced in their fused form under "
        f"{keras.backend.backend()}")
    with count_attention_paths() as (fused, computed):
        compiled = to_numpy(compiled_predict(task)(unpadded))
    diff = max_diff(compiled, unpadded_reference, unpadded["padding_mask"])
    assert diff <= TOLERANCE, f"{what}: compiled prediction without padding, max |diff| to transformers {diff:.2e}"
    assert fused.call_count and all(call.kwargs["mask"] is None for call in fused.call_args_list), (
        f"{what}: a batch without padding still attends through a mask")


def annotate_by_sentence(task, texts, model, aggregation=DEFAULT_AGGREGATION):
    """What `biozoo annotate` must write for one-line documents: `task.annotate` of their
    sentences (split_sentences; all in one call, batched as the command batches them), shifted to
    each line's offsets, named by the model."""
    spans = [split_sentences(text) for text in texts]
    sentences = [text[start:end] for text, row in zip(texts, spans) for start, end in row]
    results = iter(task.annotate(sentences, aggregation=aggregation))
    out = []
    for row in spans:
        found = []
        for start, _ in row:
            for e in next(results)["entities"]:
                found.append({"start": start + e["start"], "end": start + e["end"], "type": e["type"],
                              "text": e["text"], "score": e["score"], "model": model, "concept_id": None, "id": None})
        out.append(sorted(found, key=lambda e: (e["start"], e["end"])))
    return out


def run_ids_export_test(name, fmt, directory, spiece_model=None):
    """The ONNX / LiteRT export of a case's NER model (a `*ForTokenClassification` checkpoint
    converted by biozoo), run without keras, biozoo or TensorFlow, gives transformers' logits
    (<= 1e-4 on real tokens); its certificate's max |diff| to biozoo float32 is also <= 1e-4 and
    within the tolerance it states. ONNX: the int8 export too (`check_onnx_int8_export`)."""
    import torch

    from biozoo.export.ids_models import export_ids_model

    case = get_case(name)
    hf_class = case.tasks["ner"]
    labels = ["O", "B-Disease", "I-Disease"]
    model = make_model(case, hf_class, num_labels=len(labels))
    model.config.architectures = [hf_class]
    model.config.id2label = dict(enumerate(labels))
    model.config.label2id = {label: i for i, label in enumerate(labels)}
    directory = Path(directory)
    if case.tokenizer == "sentencepiece" and spiece_model is None:
        spiece_model = tiny_sentencepiece(directory / "spm")
    hf_dir = save_hf_directory(model, directory / "hf", "safetensors", case.tokenizer, spiece_model)
    certificate = export_ids_model(fmt, directory / fmt, model=str(hf_dir))
    diff = certificate["fixed_inputs"]["max_abs_diff"]["logits"]
    assert diff <= TOLERANCE, f"{name} {fmt}: certificate max |diff| to biozoo float32 {diff:.2e}"

    inputs = case_inputs(model)
    feed = {"input_word_ids": inputs["token_ids"], "input_mask": inputs["padding_mask"],
            "input_type_ids": inputs["segment_ids"]}
    outputs = run_exported_without_keras(fmt, directory / fmt / IDS_FORMATS[fmt].file, feed, directory)
    with torch.no_grad():
        expected = model(**torch_inputs(model, inputs)).logits.numpy()
    diff = max_diff(outputs["logits"], expected, inputs["padding_mask"])
    assert diff <= TOLERANCE, f"{name} {fmt}: exported logits max |diff| to transformers {diff:.2e} > {TOLERANCE}"
    assert certificate["within_tolerance"] is True and certificate["tolerance"]["logits"] >= TOLERANCE, certificate
    if fmt == "onnx":
        check_onnx_int8_export(name, hf_dir, directory / "onnx-int8", feed, expected, inputs["padding_mask"])
    return certificate


def check_onnx_int8_export(name, hf_dir, out, feed, expected, mask):
    """`export onnx --quantize int8` of a case's NER model: every matmul with a weight is
    quantized (no float Gemm or MatMul reads an initializer: ONNX Runtime's dynamic quantization
    leaves Gemm in float32), and its logits, run by onnxruntime, and its certificate's are within
    `INT8_TOLERANCE` of transformers' / biozoo's float32 ones (relative to max(1, |logits|))."""
    import onnx
    import onnxruntime

    from biozoo.export.ids_models import export_ids_model

    certificate = export_ids_model("onnx", out, model=str(hf_dir), quantize="int8")
    graph = onnx.load(str(out / IDS_FORMATS["onnx"].file)).graph
    weights = {t.name for t in graph.initializer}
    float_matmuls = [f"{n.op_type} {n.name}" for n in graph.node
                     if n.op_type in ("Gemm", "MatMul") and weights & set(n.input)]
    assert not float_matmuls, f"{name} onnx int8: float matmuls with a constant weight: {float_matmuls}"
    assert any(n.op_type == "MatMulInteger" for n in graph.node), f"{name} onnx int8: no MatMulInteger"
    session = onnxruntime.InferenceSession(str(out / IDS_FORMATS["onnx"].file), providers=["CPUExecutionProvider"])
    logits = session.run(["logits"], feed)[0]
    scale = max(1.0, float(np.abs(expected[mask.astype(bool)]).max()))
    diff = max_diff(logits, expected, mask) / scale
    assert 0 < diff <= INT8_TOLERANCE, f"{name} onnx int8: logits max |diff| to transformers {diff:.2e} of {scale:.2f}"
    certified = certificate["fixed_inputs"]["max_abs_diff"]["logits"]
    assert 0 < certified <= INT8_TOLERANCE * scale, f"{name} onnx int8: certificate max |diff| {certified:.2e}"
    assert certificate["tolerance"] is None and certificate["within_tolerance"] is None, certificate
