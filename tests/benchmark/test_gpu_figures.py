"""The GPU figures script (`benchmarks/gpu_figures.py`, run on a lent GPU machine, which has
JAX, torch and transformers but no TensorFlow) runs here in its `--smoke` shapes under JAX with
TensorFlow not importable, so that a session lent a GPU spends its minutes measuring, not
debugging: every part reports, biozoo's float32 logits equal transformers' on the same weights,
and the annotate part's counts agree with each other."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_gpu_script_runs_every_part_without_tensorflow(tmp_path, minilm_dir):
    from biozoo.testing import TENSORFLOW_DISTRIBUTIONS, site_without

    site = site_without(tmp_path / "site", TENSORFLOW_DISTRIBUTIONS)  # this venv as if TensorFlow were absent
    report = tmp_path / "gpu.json"
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": f"{site}{os.pathsep}{ROOT}",
           "BIOZOO_CACHE": str(tmp_path / "cache")}
    (tmp_path / "profile").mkdir()
    result = subprocess.run([sys.executable, "-S", str(ROOT / "benchmarks" / "gpu_figures.py"), "--smoke",
                             "--vocab", str(minilm_dir / "vocab.txt"), "--workers", "1", "--profile", str(tmp_path / "profile"), "--report", str(report)],
                            env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    figures = json.loads(report.read_text())
    assert figures["device"]["torch_device"] == "cpu"
    inference = figures["inference_smoke"]
    assert inference["float32_max_abs_diff_vs_transformers"] < 1e-4
    assert set(inference["sequences_per_second"]) == {
        "biozoo_float32", "biozoo_tf32", "biozoo_bf16_weights", "biozoo_bf16_weights_xla_attention",
        "biozoo_bf16_weights_unpadded", "biozoo_bf16_weights_unpadded_pipelined",
        "transformers_float32", "transformers_tf32", "transformers_bf16_autocast", "transformers_bf16_weights",
        "transformers_bf16_weights_pipelined", "jax_reference_bf16_xla_auto", "jax_reference_bf16_xla_auto_pipelined"}
    assert "cuDNN" in inference["not_run"]["jax_reference_cudnn"]  # no GPU here: said, not dropped
    assert inference["gpu_time_per_call"]["biozoo_bf16_weights_unpadded_host_ms_per_call"] > 0
    assert (tmp_path / "profile" / "smoke-bf16_weights_unpadded.xplane.pb").stat().st_size > 0
    for precision in ("float32", "bfloat16"):
        run = figures[f"annotate_{precision}"]
        assert run["abstracts"] == 8 and run["distinct_abstracts"] == 4 and run["sentences"] > 8
        assert run["vocabulary_size"] == 30522  # MiniLM's, all of it (transformers 5 drops a `vocab_file` argument)
        assert run["entities"] == run["entities_placed_by_stages"] > 0  # the pipeline and its stages agree
        assert abs(sum(run["stage_share_percent"].values()) - 100) < 0.5
    workers = figures["annotate_bfloat16_workers"]  # the corpus 4 times over through 1 worker process
    assert workers["documents_out"] == workers["abstracts"] == 32 and workers["entities_equal_one_process"]
    assert workers["abstracts_per_second_after_first_chunk"] > 0
    host_only = figures["annotate_workers_without_model"]  # the model replaced by zeros: no entity, every document
    assert host_only["documents_out"] == host_only["abstracts"] == 32 and host_only["calling_process_cpu_seconds"] > 0
    compared = figures["annotate_bfloat16_vs_float32"]
    assert compared["same"] + compared["only_float32"] == compared["float32_entities"] == figures["annotate_float32"]["entities"]
    for name in ("finetune_smoke",):
        assert set(figures[name]["by_batch"]) == {"2", "4"}
        assert all(row["biozoo_examples_per_second"] > 0 for row in figures[name]["by_batch"].values())
