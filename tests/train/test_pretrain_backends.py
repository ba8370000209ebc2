"""`biozoo pretrain` on JAX and PyTorch (`make test` runs this file under JAX, with two host CPU
devices and TensorFlow not importable, and under PyTorch; TensorFlow's runs are in
test_pretrain.py): MLM with NSP and ELECTRA train on real sentences to the losses TensorFlow's
runs reach there, the outputs load, an unused pooler stays as it was, and a run killed with
SIGKILL then rerun ends with the weights and loss curves of an uninterrupted run (on PyTorch this
caught ELECTRA's gradients adding up over steps: see `LossHistoryStep.zero_grad`)."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from biozoo import testing as H

BACKEND = keras.backend.backend()
pytestmark = [pytest.mark.backends,
              pytest.mark.skipif(BACKEND == "tensorflow", reason="TensorFlow's pretraining: test_pretrain.py")]
ELECTRA_CONFIG = {"family": "electra", "num_layers": 2, "num_heads": 4, "hidden_dim": 64, "embedding_dim": 32,
                  "intermediate_dim": 128, "max_sequence_length": 64}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, corpus_sentences):
    sentences = corpus_sentences[:600]
    documents = ["\n".join(sentences[i:i + 6]) for i in range(0, len(sentences), 6)]
    path = tmp_path_factory.mktemp("corpus") / "pubmed.txt"
    path.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    return path


def first_last(values, k=10):
    return float(np.mean(values[:k])), float(np.mean(values[-k:]))


def numpy_weights(model):
    return {w.path: keras.ops.convert_to_numpy(w.value) for w in model.weights}


def test_mlm_with_nsp_loss_falls_and_the_output_loads(tmp_path, corpus, tiny_bert_real_vocab):
    import biozoo
    from biozoo.train.pretrain import run_pretrain

    output = tmp_path / "out"
    metrics = run_pretrain("mlm", [corpus], output, preset=tiny_bert_real_vocab, sentence_task="nsp",
                           max_seq_length=64, batch_size=16, steps=80, learning_rate=1e-3, verbose=0,
                           log=lambda message: None)
    mlm_first, mlm_last = first_last(metrics["mlm_losses"])
    print(BACKEND, "mlm loss", mlm_first, "->", mlm_last, "| sentence loss", first_last(metrics["sentence_losses"]))
    assert metrics["backend"] == BACKEND and len(metrics["losses"]) == 80 and metrics["instances"] > 300
    # TensorFlow's run of this case (test_pretrain.py) asserts the same
    assert mlm_first > 10.0 and mlm_first - mlm_last > 0.8
    # loss = mlm + sentence in float32 (<= half an ulp, ~1e-6 at 16) and each curve is written
    # rounded to 5 decimals (<= 5e-6 each, three of them); log_every is 1 here (80 steps)
    np.testing.assert_allclose(metrics["losses"], np.add(metrics["mlm_losses"], metrics["sentence_losses"]),
                               rtol=0, atol=2e-5)
    assert not os.path.exists(str(output) + ".records")
    task = biozoo.MaskedLM.from_preset(str(output))
    assert json.loads((output / "heads.json").read_text()).keys() == {"mlm", "nsp"}
    assert biozoo.Tokenizer.from_preset(str(output)).ids(["breast cancer"]) == \
        biozoo.Tokenizer.from_preset(tiny_bert_real_vocab).ids(["breast cancer"])
    before = numpy_weights(biozoo.MaskedLM.from_preset(tiny_bert_real_vocab).backbone)
    after = numpy_weights(task.backbone)
    assert not np.allclose(before["pooled_dense/kernel"], after["pooled_dense/kernel"])


def test_mlm_alone_leaves_the_pooler_as_it_was(tmp_path, corpus, tiny_bert_real_vocab):
    """Without a sentence task no loss reads the pooler: JAX gives it a zero gradient, which
    AdamW's weight decay would still move (TensorFlow skips it)."""
    import biozoo
    from biozoo.train.pretrain import run_pretrain

    run_pretrain("mlm", [corpus], tmp_path / "out", preset=tiny_bert_real_vocab, max_seq_length=32, batch_size=8,
                 steps=3, learning_rate=1e-2, weight_decay=0.5, verbose=0, log=lambda message: None)
    before = numpy_weights(biozoo.MaskedLM.from_preset(tiny_bert_real_vocab).backbone)
    after = numpy_weights(biozoo.MaskedLM.from_preset(str(tmp_path / "out")).backbone)
    pooler = [path for path in before if "pooled_dense" in path]
    assert pooler and all(np.array_equal(before[path], after[path]) for path in pooler)
    assert not np.allclose(before["token_embedding/embeddings"],
                           after["token_embedding/embeddings"])


def test_electra_discriminator_loss_falls_from_a_config(tmp_path, corpus, tiny_bert_real_vocab):
    import biozoo
    from biozoo.train.pretrain import run_pretrain

    output = tmp_path / "out"
    metrics = run_pretrain("electra", [corpus], output, config=ELECTRA_CONFIG, tokenizer=tiny_bert_real_vocab,
                           max_seq_length=48, batch_size=16, steps=50, learning_rate=1e-3, verbose=0,
                           log=lambda message: None)
    d_first, d_last = first_last(metrics["discriminator_losses"])
    g_first, g_last = first_last(metrics["generator_losses"])
    print(BACKEND, "discriminator loss", d_first, "->", d_last, "| generator loss", g_first, "->", g_last)
    assert d_first - d_last > 0.15 and g_first - g_last > 0.3  # as TensorFlow's run of this case
    assert np.allclose(metrics["losses"], np.add(metrics["generator_losses"],
                                                 50 * np.asarray(metrics["discriminator_losses"])), rtol=1e-4)
    discriminator = biozoo.ReplacedTokenDetector.from_preset(str(output))
    generator = biozoo.MaskedLM.from_preset(str(output / "generator"))
    assert generator.backbone.hidden_dim == 16
    for name in ("token_embedding", "segment_embedding", "embeddings_layer_norm"):
        for ours, theirs in zip(getattr(discriminator.backbone, name).weights, getattr(generator.backbone, name).weights):
            assert np.array_equal(keras.ops.convert_to_numpy(ours.value), keras.ops.convert_to_numpy(theirs.value))


def _child():
    return [sys.executable, "-S"] if sys.flags.no_site else [sys.executable]


@pytest.mark.parametrize("method", ["mlm", "electra"])
def test_sigkill_then_rerun_ends_with_the_uninterrupted_weights(method, tmp_path, corpus, tiny_bert_real_vocab):
    config = tmp_path / "electra.json"
    config.write_text(json.dumps(ELECTRA_CONFIG))
    start = ["--config", str(config), "--tokenizer", str(tiny_bert_real_vocab)] if method == "electra" else \
        ["--preset", str(tiny_bert_real_vocab), "--nsp"]
    argv = lambda out: [*_child(), "-m", "biozoo", "pretrain", method, "--corpus", str(corpus), *start,  # noqa: E731
                        "--output", str(out), "--max-seq-length", "32", "--batch-size", "8", "--steps", "24",
                        "--learning-rate", "1e-3", "--checkpoint-every", "4"]
    env = {**os.environ, "BIOZOO_CACHE": str(tmp_path / "cache")}
    whole = subprocess.run(argv(tmp_path / "whole"), env=env, capture_output=True, text=True, timeout=900)
    assert whole.returncode == 0, whole.stderr[-3000:]
    checkpoints = tmp_path / "killed.checkpoints"
    H.kill_after_first_checkpoint(argv(tmp_path / "killed"), checkpoints, env)
    assert not (tmp_path / "killed").exists()
    rerun = subprocess.run(argv(tmp_path / "killed"), env=env, capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "resuming from step" in rerun.stderr + rerun.stdout
    metrics = {name: json.loads((tmp_path / name / "metrics.json").read_text()) for name in ("whole", "killed")}
    assert metrics["killed"]["resumed_from"] > 0 and not checkpoints.exists()
    parts = ("generator_losses", "discriminator_losses") if method == "electra" else ("mlm_losses", "sentence_losses")
    for key in ("losses", *parts):
        np.testing.assert_allclose(metrics["killed"][key], metrics["whole"][key], atol=1e-5, err_msg=key)
    import biozoo

    for path in ("", "generator") if method == "electra" else ("",):
        a = numpy_weights(biozoo.from_preset(str(tmp_path / "whole" / path)))
        b = numpy_weights(biozoo.from_preset(str(tmp_path / "killed" / path)))
        for name in a:
            np.testing.assert_allclose(b[name], a[name], rtol=0, atol=1e-6, err_msg=name)
