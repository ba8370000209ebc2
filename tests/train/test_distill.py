"""`biozoo distill`: the three procedures' losses against a NumPy reference, student
initialisation from the teacher, and, from a small trained teacher, students that learn to
agree with it (loss falls; top-1 agreement on held-out masked tokens beats a random student).
The tests marked `backends` run under TensorFlow, JAX (TensorFlow not importable) and PyTorch."""

import argparse
import hashlib
import json
import os
import shutil
from pathlib import Path

import keras
import numpy as np
import pytest

import biozoo
from biozoo.errors import BiozooError
from biozoo.models.bert.backbone import BertBackbone
from biozoo.tasks.pretraining import MaskedLM
from biozoo.testing import read_sentences
from biozoo.train import distill as D

VOCAB = 60


def numpy(value):
    return keras.ops.convert_to_numpy(value)


def tiny_mlm(num_layers=4, hidden_dim=16, num_heads=4, seed=0):
    keras.utils.set_random_seed(seed)
    backbone = BertBackbone(vocabulary_size=VOCAB, num_layers=num_layers, num_heads=num_heads, hidden_dim=hidden_dim,
                            intermediate_dim=2 * hidden_dim, max_sequence_length=32, initializer_range=0.3)
    return MaskedLM(backbone=backbone)


def tiny_batch(seed=0, batch=4, length=12, masks=3):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, VOCAB, (batch, length)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 8:] = 0
    mask[3, 5:] = 0
    ids[mask == 0] = 0
    positions = np.stack([np.sort(rng.choice(np.arange(1, mask[r].sum()), masks, replace=False))
                          for r in range(batch)]).astype("int32")
    labels = np.take_along_axis(ids, positions, 1).copy()
    labels[3, 2] = -100  # a padding slot: no loss there
    positions[3, 2] = 0
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask, "mask_positions": positions}
    return x, {"mask_labels": labels}


# ---- NumPy reference of the losses --------------------------------------------------------


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def cosine_distance(a, b):
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return 1 - (a * b).sum(-1)


def reference_terms(method, teacher, student, x, y, layer_map, temperature, projection=None):
    inputs = {k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    t = {k: [numpy(v) for v in vs] if isinstance(vs, list) else numpy(vs)
         for k, vs in teacher.backbone.features(inputs, attentions=True, training=False).items()}
    s = {k: [numpy(v) for v in vs] if isinstance(vs, list) else numpy(vs)
         for k, vs in student.backbone.features(inputs, attentions=True, training=False).items()}
    t_logits, s_logits = numpy(teacher(x, training=False)), numpy(student(x, training=False))
    labels = y["mask_labels"]
    w = (labels >= 0).astype(np.float64)
    tokens = x["padding_mask"].astype(bool)

    def masked_mean(values):
        return (values * w).sum() / w.sum()

    def mse(a, b):
        return ((a - b) ** 2).mean(-1)[tokens].mean()

    project = (lambda h: h @ projection[0] + projection[1]) if projection is not None else (lambda h: h)
    s_logp, t_logp = log_softmax(s_logits / temperature), log_softmax(t_logits / temperature)
    terms = {}
    if method != "tinybert":
        picked = np.take_along_axis(log_softmax(s_logits), np.maximum(labels, 0)[..., None], -1)[..., 0]
        terms["mlm"] = masked_mean(-picked)
        terms["output"] = temperature ** 2 * masked_mean((np.exp(t_logp) * (t_logp - s_logp)).sum(-1))
    else:
        terms["output"] = masked_mean(-(np.exp(t_logp) * s_logp).sum(-1))
    if method == "distilbert":
        terms["align"] = cosine_distance(s["sequence_output"], t["sequence_output"])[tokens].mean()
        return terms
    hidden = attention = 0.0
    for l, g in enumerate(layer_map, start=1):
        s_a, t_a = s["attentions"][l - 1], t["attentions"][g - 1]
        if s_a.shape[1] != t_a.shape[1]:
            s_a, t_a = s_a.mean(1, keepdims=True), t_a.mean(1, keepdims=True)
        rows = np.broadcast_to(tokens[:, None, :], s_a.shape[:3])
        if method == "tinybert":
            hidden += mse(project(s["hidden_states"][l]), t["hidden_states"][g])
            # each real query row's MSE over its real keys (padding columns left out)
            row_mse = ((s_a - t_a) ** 2 * tokens[:, None, None, :]).sum(-1) / tokens.sum(-1)[:, None, None]
            attention += row_mse[rows].mean()
        else:
            hidden += cosine_distance(s["hidden_states"][l], t["hidden_states"][g])[tokens].mean()
            # KLDivLoss(reduction="mean") of CompactBioBERT-Distillation.py: over every key column
            t_a, s_a = t_a + 1e-12, s_a + 1e-12
            kl = (t_a * (np.log(t_a) - np.log(s_a))).sum(-1)
            attention += kl[rows].mean() / t_a.shape[-1]
    terms["hidden"], terms["attention"] = hidden, attention
    if method == "tinybert":
        terms["embedding"] = mse(project(s["hidden_states"][0]), t["hidden_states"][0])
    return terms


@pytest.mark.backends
@pytest.mark.parametrize("method,student_shape", [
    ("distilbert", {}), ("compact", {}), ("tinybert", {}), ("tinybert", {"hidden_dim": 8, "num_heads": 2}),
])
def test_loss_terms_match_numpy_reference(method, student_shape):
    teacher = tiny_mlm()
    student = tiny_mlm(num_layers=2, seed=1, **student_shape)
    distiller = D.Distiller(teacher, student, method, layer_map=[2, 4])
    x, y = tiny_batch()
    _, ids, weights = D._unpack((x, y))
    ours = {k: float(v) for k, v in distiller.compute_terms(x, ids, weights, training=False).items()}
    projection = None
    if distiller.projection is not None:
        projection = [numpy(v.value) for v in distiller.projection.weights]
    reference = reference_terms(method, teacher, student, x, y, [2, 4], distiller.temperature, projection)
    assert set(ours) == set(D.DISTILL_METHODS[method]["terms"]) == set(reference)
    for term in ours:
        assert ours[term] == pytest.approx(reference[term], rel=1e-4, abs=1e-6), term
        assert reference[term] > 1e-4, term  # non-trivial values: the check means something


@pytest.mark.backends
@pytest.mark.parametrize("method", list(D.DISTILL_METHODS))
def test_terms_do_not_change_when_the_batch_is_padded_further(method):
    """Length-sorted micro-batches and dynamic padding pad a sentence to different lengths: the
    loss of the same sentences must not depend on it (TinyBERT's attention MSE included). Except
    CompactBioBERT's attention KL, whose released mean counts the padding keys (the next test)."""
    teacher = tiny_mlm()
    student = tiny_mlm(num_layers=2, seed=1)
    distiller = D.Distiller(teacher, student, method, layer_map=[2, 4])
    x, y = tiny_batch()
    wider = {k: np.pad(v, ((0, 0), (0, 6))) if k != "mask_positions" else v for k, v in x.items()}
    terms = [{k: float(v) for k, v in distiller.compute_terms(batch, *D._unpack((batch, y))[1:],
                                                                 training=False).items()}
             for batch in (x, wider)]
    for term in terms[0]:
        if (method, term) == ("compact", "attention"):
            assert terms[1][term] == pytest.approx(terms[0][term] * 12 / 18, rel=1e-5), term
            continue
        assert terms[1][term] == pytest.approx(terms[0][term], rel=1e-5, abs=1e-7), term


@pytest.mark.backends
def test_compact_attention_term_is_the_released_kl_div_mean():
    """CompactBioBERT-Distillation.py (nlpie-research/Compact-Biomedical-Transformers),
    compute_attention_loss, transcribed in torch on biozoo's attention maps of a padded batch:
    the real query rows masked_select-ed, 1e-12 added, nn.KLDivLoss(reduction="mean") per
    layer (the mean over every element, key columns included), summed over the layers."""
    torch = pytest.importorskip("torch")
    teacher = tiny_mlm()
    student = tiny_mlm(num_layers=2, seed=1)
    distiller = D.Distiller(teacher, student, "compact", layer_map=[2, 4])
    x, y = tiny_batch()
    ours = float(distiller.compute_terms(x, *D._unpack((x, y))[1:], training=False)["attention"])
    inputs = {k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    s_maps = student.backbone.features(inputs, attentions=True, training=False)["attentions"]
    t_maps = teacher.backbone.features(inputs, attentions=True, training=False)["attentions"]
    attention_mask = torch.tensor(x["padding_mask"])
    released = 0.0
    for index, s_map in enumerate(s_maps):
        s_map, t_map = torch.tensor(numpy(s_map)), torch.tensor(numpy(t_maps[2 * index + 1]))
        selected = attention_mask.unsqueeze(1).repeat(1, s_map.shape[1], 1).unsqueeze(-1).expand_as(s_map).bool()
        s_rows = torch.masked_select(s_map, selected).view(-1, s_map.size(-1)) + 1e-12
        t_rows = torch.masked_select(t_map, selected).view(-1, t_map.size(-1)) + 1e-12
        released += float(torch.nn.functional.kl_div(torch.log(s_rows), t_rows, reduction="mean"))
    assert released > 1e-4
    assert ours == pytest.approx(released, rel=1e-5)


@pytest.mark.backends
@pytest.mark.parametrize("method", list(D.DISTILL_METHODS))
def test_terms_vanish_when_the_student_is_the_teacher(method):
    teacher = tiny_mlm(num_layers=2)
    student = tiny_mlm(num_layers=2, seed=1)
    copied = D.initialize_student(student, teacher, [1, 2])
    assert copied == {"embeddings": True, "mlm_head": True, "layers": {1: 1, 2: 2}}
    distiller = D.Distiller(teacher, student, method)
    x, y = tiny_batch()
    terms = distiller.compute_terms(x, *D._unpack((x, y))[1:], training=False)
    for term in set(terms) - {"mlm", "output"}:
        assert float(terms[term]) == pytest.approx(0.0, abs=1e-5), term
    if method != "tinybert":
        assert float(terms["output"]) == pytest.approx(0.0, abs=1e-5)
    else:  # soft cross-entropy of a distribution with itself: its entropy
        logits = numpy(teacher(x, training=False))
        p = np.exp(log_softmax(logits))
        entropy = -(p * log_softmax(logits)).sum(-1)[y["mask_labels"] >= 0].mean()
        assert float(terms["output"]) == pytest.approx(entropy, rel=1e-4)


@pytest.mark.backends
def test_student_starts_from_every_other_teacher_layer():
    teacher = tiny_mlm(num_layers=4)
    student = tiny_mlm(num_layers=2, seed=1)
    copied = D.initialize_student(student, teacher, D.uniform_layer_map(2, 4))
    assert copied["layers"] == {1: 2, 2: 4} and copied["embeddings"] and copied["mlm_head"]
    for l, g in ((0, 1), (1, 3)):
        for a, b in zip(student.backbone.transformer_layers[l].weights, teacher.backbone.transformer_layers[g].weights):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    for a, b in zip(student.mlm_head.weights, teacher.mlm_head.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(student.backbone.token_embedding.embeddings.numpy(),
                                  teacher.backbone.token_embedding.embeddings.numpy())
    # a narrower student keeps its random initialisation
    narrow = tiny_mlm(num_layers=2, hidden_dim=8, seed=1)
    before = [w.numpy().copy() for w in narrow.weights]
    assert D.initialize_student(narrow, teacher, [2, 4]) == {"embeddings": False, "mlm_head": False, "layers": {}}
    assert all(np.array_equal(a, w.numpy()) for a, w in zip(before, narrow.weights))


@pytest.mark.backends
def test_layer_maps_and_config_errors(tmp_path):
    assert D.uniform_layer_map(2, 4) == [2, 4]
    assert D.uniform_layer_map(6, 12) == [2, 4, 6, 8, 10, 12]
    assert D.uniform_layer_map(4, 12) == [3, 6, 9, 12]  # TinyBERT's 4-layer map
    assert D.parse_layer_map("1, 3", 2, 4) == [1, 3]
    assert D.parse_layer_map(None, 3, 12) == [4, 8, 12]
    for bad in ("1,2,3", "0,4", "2,5", "a,b"):
        with pytest.raises(BiozooError, match="layer-map"):
            D.parse_layer_map(bad, 2, 4)
    teacher = tiny_mlm(num_layers=2)
    (tmp_path / "s.json").write_text('{"num_layers": 1, "hidden_dim": 8}')
    assert D.read_student_config(str(tmp_path / "s.json")) == {"num_layers": 1, "hidden_dim": 8}
    assert D.read_student_config('{"num_layers": 1}') == {"num_layers": 1}
    with pytest.raises(BiozooError, match="no such file"):
        D.read_student_config(str(tmp_path / "missing.json"))
    with pytest.raises(BiozooError, match="num_layerz"):
        D.student_backbone_config(teacher.backbone, {"num_layerz": 1})
    with pytest.raises(BiozooError, match="tinybert"):
        D.Distiller(teacher, tiny_mlm(num_layers=1, hidden_dim=8), "compact")
    with pytest.raises(BiozooError, match="unknown distillation method"):
        D.Distiller(teacher, tiny_mlm(num_layers=1), "minilm")


def test_train_step_updates_only_the_student_and_projection():
    import tensorflow as tf

    from biozoo.optim import adamw

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])  # train_step in a replica context
    with strategy.scope():
        teacher = tiny_mlm(num_layers=2)
        student = tiny_mlm(num_layers=1, hidden_dim=8, num_heads=2, seed=1)
        distiller = D.Distiller(teacher, student, "tinybert", total_steps=3, log_every=2)
        distiller.compile(optimizer=adamw(1e-2, 10, 0.0, 0.0))
    trainable = {id(v) for v in distiller.trainable_variables}
    assert not teacher.trainable_variables and not trainable & {id(v) for v in teacher.variables}
    projection = {id(v) for v in distiller.projection.trainable_variables}
    assert {id(v) for v in student.trainable_variables} | projection == trainable
    before = {id(v): v.numpy().copy() for v in distiller.variables}
    x, y = tiny_batch()
    dataset = tf.data.Dataset.from_tensors((x, y)).repeat()
    history = distiller.fit(dataset, steps_per_epoch=3, epochs=1, verbose=0).history
    assert set(history) == {"loss", "embedding", "hidden", "attention", "output"}
    curves = distiller.loss_curves(3)  # windows of steps 1-2 and 3, recorded in the graph
    assert set(curves) == set(history) and all(len(v) == 2 for v in curves.values())
    for name, values in curves.items():
        assert (2 * values[0] + values[1]) / 3 == pytest.approx(history[name][0], rel=1e-5)
    assert all(np.array_equal(before[id(v)], v.numpy()) for v in teacher.variables)

    def changed(layer):
        return any(not np.array_equal(before[id(v)], v.numpy()) for v in layer.trainable_variables)

    assert changed(student.backbone.transformer_layers[0]) and changed(distiller.projection)
    assert changed(student.mlm_head)


@pytest.mark.backends
@pytest.mark.skipif(keras.backend.backend() == "tensorflow", reason="TensorFlow's step: the test above")
def test_fit_updates_only_the_student_and_projection_on_jax_and_torch():
    from biozoo.optim import adamw
    from biozoo.train.loss_history import LabelsInInputs

    teacher = tiny_mlm(num_layers=2)
    student = tiny_mlm(num_layers=1, hidden_dim=8, num_heads=2, seed=1)
    distiller = D.Distiller(teacher, student, "tinybert", total_steps=3, log_every=2)
    distiller.compile(optimizer=adamw(1e-2, 10, 0.0, 0.0))
    trainable = {id(v) for v in distiller.trainable_variables}
    assert not teacher.trainable_variables and not trainable & {id(v) for v in teacher.variables}
    projection = {id(v) for v in distiller.projection.trainable_variables}
    assert {id(v) for v in student.trainable_variables} | projection == trainable
    before = {id(v): numpy(v.value).copy() for v in distiller.variables}
    batch = tiny_batch()
    history = distiller.fit(LabelsInInputs.wrap([batch] * 3), steps_per_epoch=3, epochs=1, verbose=0).history
    assert set(history) == {"loss", "embedding", "hidden", "attention", "output"}
    curves = distiller.loss_curves(3)  # windows of steps 1-2 and 3, kept in a model variable
    assert set(curves) == set(history) and all(len(v) == 2 for v in curves.values())
    for name, values in curves.items():
        assert (2 * values[0] + values[1]) / 3 == pytest.approx(history[name][0], rel=1e-5)
    assert all(np.array_equal(before[id(v)], numpy(v.value)) for v in teacher.variables)

    def changed(layer):
        return any(not np.array_equal(before[id(v)], numpy(v.value)) for v in layer.trainable_variables)

    assert changed(student.backbone.transformer_layers[0]) and changed(distiller.projection)
    assert changed(student.mlm_head)


# ---- from a small trained teacher -----------------------------------------------------------

SEQ, BATCH, TEACHER_STEPS, STUDENT_STEPS = 64, 16, 600, 150
TEACHER = {"vocabulary": 256, "num_layers": 4, "num_heads": 4, "hidden_dim": 64, "intermediate_dim": 128,
           "learning_rate": 2e-3, "warmup": 0.05, "weight_decay": 0.01, "seed": 0, "sequence": SEQ, "batch": BATCH,
           "steps": TEACHER_STEPS}


def write_corpus(path, sentences, per_document=8):
    with open(path, "w", encoding="utf-8") as f:
        for i in range(0, len(sentences), per_document):
            f.write("\n".join(sentences[i:i + per_document]) + "\n\n")
    return str(path)


@pytest.fixture(scope="module")
def trained_teacher(tmp_path_factory, ncbi_disease):
    """A 4-layer, 64-wide BERT trained briefly (MLM) on NCBI-disease training sentences, saved
    as a MaskedLM preset, with the corpus and 300 held-out (dev) sentences.

    A 256-piece SentencePiece vocabulary and single-piece masking let so small a model get past
    the unigram plateau in a few hundred steps: its predictions depend on the context.

    `make test` runs this file under TensorFlow, JAX and PyTorch: the later passes of one run distil
    from the teacher the first pass trained (a preset written under one backend loads under the
    others), kept in BIOZOO_TEST_REFERENCES (emptied when `make test` starts) under a digest of the
    corpus and TEACHER. Without the variable, trained here."""
    root = tmp_path_factory.mktemp("distill")
    sentences = read_sentences(ncbi_disease / "train.tsv")
    corpus = write_corpus(root / "train.txt", sentences)
    held_out = write_corpus(root / "dev.txt", read_sentences(ncbi_disease / "devel.tsv", 300))
    digest = hashlib.sha256(json.dumps(TEACHER, sort_keys=True).encode() + Path(corpus).read_bytes())
    folder = os.environ.get("BIOZOO_TEST_REFERENCES")
    stored = Path(folder) / f"distill-teacher-{digest.hexdigest()[:16]}" if folder else None
    if stored is None or not stored.exists():
        preset = train_teacher(root, corpus, sentences)
        if stored is not None:
            partial = stored.with_name(f"{stored.name}.{os.getpid()}.partial")
            shutil.copytree(preset, partial)
            os.replace(partial, stored)
    return {"preset": str(stored or preset), "corpus": corpus, "held_out": held_out}


def train_teacher(root, corpus, sentences):
    from biozoo.data.pretraining import MaskedBatches, write_instance_shards
    from biozoo.optim import adamw
    from biozoo.testing import train_spiece
    from biozoo.tokenizers import SentencePieceTokenizer

    keras.utils.set_random_seed(TEACHER["seed"])  # before the tokenizer: re-seeding drops SentencePiece's TF resource
    spiece = train_spiece(root / "spiece", [s.lower() for s in sentences], TEACHER["vocabulary"])
    tokenizer = SentencePieceTokenizer(proto=str(spiece), lowercase=True)
    prefixes = write_instance_shards([corpus], tokenizer, root / "shards", SEQ, None, seed=TEACHER["seed"])
    backbone = BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), num_layers=TEACHER["num_layers"],
                            num_heads=TEACHER["num_heads"], hidden_dim=TEACHER["hidden_dim"],
                            intermediate_dim=TEACHER["intermediate_dim"], max_sequence_length=SEQ, dropout=0.0)
    teacher = MaskedLM(backbone=backbone)
    teacher.compile(optimizer=adamw(TEACHER["learning_rate"], TEACHER_STEPS, TEACHER["warmup"],
                                    TEACHER["weight_decay"]))
    batches = MaskedBatches(prefixes, tokenizer, SEQ, BATCH, seed=TEACHER["seed"], whole_words=False).batches_from(0)
    keras.Model.fit(teacher, ((x, y["mask_labels"]) for x, y in batches), steps_per_epoch=TEACHER_STEPS, epochs=1,
                    verbose=0)  # Keras' own fit: KerasHub's would preprocess a generator through tf.data or Grain
    teacher.compile()  # the preset keeps the model, not Adam's moments
    preset = root / "teacher"
    teacher.save_to_preset(preset)
    tokenizer.save_to_preset(preset)
    return preset


def check_distilled(metrics, output, num_layers=2, k=3):
    agreement, accuracy = metrics["agreement"], metrics["masked_accuracy"]
    curve = metrics["loss_curves"]["loss"]  # mean total loss of each `log_every` steps
    first, last = np.mean(curve[:k]), np.mean(curve[-k:])
    print(f"\n{metrics['method']} {json.dumps(metrics['student_config'])}: training loss (mean of the first / last "
          f"{k * metrics['log_every']} steps) {first:.3f} -> {last:.3f}; per term (first / last "
          f"{metrics['log_every']} steps) "
          + ", ".join(f"{name} {v['first']:.4f} -> {v['last']:.4f}" for name, v in metrics["loss"].items())
          + "; held-out, before -> after: "
          + ", ".join(f"{name} {v['before']:.4f} -> {v['after']:.4f}" for name, v in metrics["eval_loss"].items())
          + f"; top-1 agreement with the teacher on {metrics['eval_masked_tokens']} held-out masked tokens: "
          f"distilled {agreement['distilled']:.3f}, at initialisation {agreement['initial']:.3f}, random student "
          f"{agreement['random']:.3f} (accuracy: teacher {accuracy['teacher']:.3f}, distilled "
          f"{accuracy['distilled']:.3f}, random {accuracy['random']:.3f})")
    assert len(curve) == -(-STUDENT_STEPS // metrics["log_every"])
    assert last < first
    assert metrics["eval_loss"]["loss"]["after"] < metrics["eval_loss"]["loss"]["before"]
    assert agreement["distilled"] > agreement["random"] + 0.1
    assert metrics["eval_source"].startswith("held out")
    assert metrics["eval_masked_tokens"] > 500
    # the output is a preset: backbone, tokenizer and MaskedLM task
    backbone = biozoo.from_preset(str(output))
    assert backbone.num_layers == num_layers
    assert biozoo.Tokenizer.from_preset(str(output)).vocabulary_size() == backbone.vocabulary_size
    assert MaskedLM.from_preset(str(output)).backbone.num_layers == num_layers
    assert json.loads((output / "metrics.json").read_text())["agreement"] == agreement


@pytest.mark.backends
@pytest.mark.slow
@pytest.mark.parametrize("method", ["distilbert", "compact"])
def test_distilled_student_agrees_with_teacher(method, trained_teacher, tmp_path):
    output = tmp_path / "student"
    metrics = D.run_distill(method, trained_teacher["preset"], {"num_layers": 2}, [trained_teacher["corpus"]], output,
                            max_seq_length=SEQ, batch_size=BATCH, steps=STUDENT_STEPS,
                            eval_corpus=[trained_teacher["held_out"]], masking="token", verbose=0,
                            log=lambda message: None)
    layer_map = {"distilbert": [1, 3], "compact": [2, 4]}[method]  # the first / last of each block of 2
    assert metrics["layer_map"] == layer_map
    assert metrics["initialized_from_teacher"]["layers"] == {"1": layer_map[0], "2": layer_map[1]}
    check_distilled(metrics, output)
    assert not os.path.exists(str(output) + ".records")  # the packed shards go after a successful run


@pytest.mark.backends
@pytest.mark.slow
def test_tinybert_cli_narrow_student_with_projection(trained_teacher, tmp_path):
    (tmp_path / "student.json").write_text(json.dumps({"num_layers": 2, "hidden_dim": 32, "intermediate_dim": 64,
                                                       "num_heads": 2}))
    from biozoo._commands.train import add_distill_arguments, distill_from_args

    parser = add_distill_arguments(argparse.ArgumentParser())
    output = tmp_path / "student"
    args = parser.parse_args([
        "--teacher", trained_teacher["preset"], "--student-config", str(tmp_path / "student.json"),
        "--method", "tinybert", "--corpus", trained_teacher["corpus"], "--eval-corpus", trained_teacher["held_out"],
        "--output", str(output), "--max-seq-length", str(SEQ), "--batch-size", str(BATCH),
        "--steps", str(STUDENT_STEPS), "--learning-rate", "2e-3", "--masking", "token",
    ])
    metrics = distill_from_args(args)
    assert metrics["initialized_from_teacher"] == {"embeddings": False, "mlm_head": False, "layers": {}}
    check_distilled(metrics, output)
    assert biozoo.from_preset(str(output)).hidden_dim == 32


def test_command_line_defaults_are_the_hyperparameters_defaults():
    from biozoo._commands.train import add_distill_arguments, distill_hyperparameters

    args = add_distill_arguments(argparse.ArgumentParser()).parse_args(
        ["--teacher", "t", "--student-config", "{}", "--method", "compact", "--corpus", "c.txt", "--output", "o"])
    assert distill_hyperparameters(args) == D.DistillHyperparameters()


def test_distillation_clips_the_gradient_at_global_norm_1_by_default(tmp_path):
    """The released distillation scripts train with the HF Trainer, whose max_grad_norm is 1.0:
    the distiller's optimizer clips so by default, at --clip-norm otherwise (0: off), and a
    rerun resumes only with the same clipping."""
    from biozoo._commands.train import add_distill_arguments, distill_hyperparameters
    from biozoo.train.run import TrainingRun, resume_settings

    teacher = tmp_path / "teacher"
    tiny_mlm().save_to_preset(str(teacher))
    parser = add_distill_arguments(argparse.ArgumentParser())
    clipping = []
    for flags in ([], ["--clip-norm", "0.5"], ["--clip-norm", "0"]):
        args = parser.parse_args(["--teacher", str(teacher), "--student-config", "{}", "--method", "compact",
                                  "--corpus", "c.txt", "--output", "o", "--max-seq-length", "32", *flags])
        hp = D.method_defaults("compact", distill_hyperparameters(args))
        models = D._build_models(TrainingRun(str(tmp_path / "out"), batch_size=4), "compact", str(teacher),
                                 {"num_layers": 2}, hp, 1)
        clipping.append(models.distiller.optimizer.global_clipnorm)
        assert resume_settings(hp)["clip_norm"] == hp.clip_norm
    assert clipping == [1.0, 0.5, None]
    with pytest.raises(BiozooError, match="--clip-norm"):
        D.run_distill("compact", str(teacher), {"num_layers": 2}, ["c.txt"], tmp_path / "o", clip_norm=float("nan"))


# What the released scripts (nlpie-research/Compact-Biomedical-Transformers) do, transcribed: the
# 0-based teacher layer each student layer starts from or is compared with, for a 12-layer teacher.
RELEASED = {
    # DistilBioBERT-Distillation.py, initializeStudent (num_hidden_layers //= 2):
    #   distillationModel.encoder.layer[index] = bertModel.encoder.layer[2*index]
    "distilbert": {"student_layers": 6, "teacher_layers": [2 * index for index in range(6)],
                   "warmup_steps": 5000},
    # TinyBioBERT-Distillation.py (TinyBERT_General_4L_312D: 4 layers), layers_per_block = 12 / 4:
    #   new_teacher_atts = [t_attentions[i * layers_per_block + layers_per_block - 1] ...]
    "tinybert": {"student_layers": 4, "teacher_layers": [i * 3 + 3 - 1 for i in range(4)], "warmup_steps": 10000},
    # CompactBioBERT-Distillation.py, initializeStudent and compute_attention_loss / compute_hidden_loss:
    #   distillationModel.encoder.layer[index] = bertModel.encoder.layer[2*index + 1]; t_attentions[2*index + 1]
    "compact": {"student_layers": 6, "teacher_layers": [2 * index + 1 for index in range(6)],
                "warmup_steps": 5000},
}
RELEASED_STEPS = 100000  # every script: num_train_epochs=(1/173989)*(100000) of 173,989 steps an epoch


@pytest.mark.parametrize("method", list(D.DISTILL_METHODS))
def test_method_defaults_are_the_released_scripts(method):
    """Each method's default layer map, warmup and masking are its released script's: every
    script masks single pieces (DataCollatorForLanguageModeling, mlm_probability 0.15)."""
    released = RELEASED[method]
    layer_map = D.parse_layer_map(None, released["student_layers"], 12, D.DISTILL_METHODS[method]["layer_map"])
    assert layer_map == [g + 1 for g in released["teacher_layers"]]
    hp = D.method_defaults(method, D.DistillHyperparameters())
    assert hp.warmup_ratio == released["warmup_steps"] / RELEASED_STEPS
    assert hp.masking == "token"
    given = D.method_defaults(method, D.DistillHyperparameters(warmup_ratio=0.2, masking="wwm"))
    assert (given.warmup_ratio, given.masking) == (0.2, "wwm")


@pytest.mark.parametrize("method, first_layers", [("distilbert", {1: 1, 2: 3}), ("compact", {1: 2, 2: 4})])
def test_student_starts_from_its_methods_teacher_layers(method, first_layers, tmp_path):
    """By default DistilBioBERT's student starts from teacher layers 1, 3, ... (1-based),
    CompactBioBERT's from 2, 4, ...; the distiller compares the same layers."""
    teacher = tiny_mlm(num_layers=4)
    teacher.save_to_preset(str(tmp_path / "teacher"))
    from biozoo.train.run import TrainingRun

    models = D._build_models(TrainingRun(str(tmp_path / "out"), batch_size=4), method, str(tmp_path / "teacher"),
                             {"num_layers": 2},
                             D.method_defaults(method, D.DistillHyperparameters(max_seq_length=32)), 1)
    assert models.copied["layers"] == first_layers
    assert models.distiller.layer_map == models.layer_map == list(first_layers.values())
    for l, g in first_layers.items():
        for a, b in zip(models.student.backbone.transformer_layers[l - 1].weights,
                        teacher.backbone.transformer_layers[g - 1].weights):
            np.testing.assert_array_equal(numpy(a.value), numpy(b.value))
