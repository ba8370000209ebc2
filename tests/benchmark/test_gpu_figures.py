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
                             "--vocab", str(minilm_dir / "vocab.txt"), "--workers", "1", "--worker-chunks", "256,3", "--without-model", "--profile", str(tmp_path / "profile"), "--report", str(report)],
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
    assert workers["abstracts_per_second_steady"] > 0 and workers["model_collect_seconds"] > 0
    assert 0 < workers["seconds_to_first_model_call"] <= workers["seconds_to_first_chunk"]
    small = figures["annotate_bfloat16_workers_chunk3"]  # a second pass, 3 documents per chunk: more calls
    assert small["chunk_size"] == 3 and small["documents_out"] == 32 and small["entities_equal_one_process"]
    assert workers["chunk_size"] == 256 and small["model_calls"] > workers["model_calls"] > 0
    assert 0 < workers["calling_thread_cpu_seconds"] <= workers["calling_process_cpu_seconds"]
    assert set(workers["calling_thread_waited_seconds"]) == {"the workers' batches", "the model", "finished chunks"}
    for start in (figures["annotate_worker_start"], figures["annotate_workers_start"]):
        assert start["workers"] == len(start["import_seconds"]) == 1 and not start["errors"]
        assert 0 < start["import_seconds"][0] < start["wall_seconds"] and start["first_worker_costliest_imports_ms"]
    host_only = figures["annotate_workers_without_model"]  # the model replaced by zeros: no entity, every document
    assert host_only["documents_out"] == host_only["abstracts"] == 32 and host_only["calling_process_cpu_seconds"] > 0
    compared = figures["annotate_bfloat16_vs_float32"]
    assert compared["same"] + compared["only_float32"] == compared["float32_entities"] == figures["annotate_float32"]["entities"]
    for name in ("finetune_smoke",):
        assert set(figures[name]["by_batch"]) == {"2", "4"}
        assert all(row["biozoo_examples_per_second"] > 0 for row in figures[name]["by_batch"].values())


FIDELITY = """
import json, sys, torch, transformers
sys.path.insert(0, sys.argv[3])
import gpu_figures
source, packed, _, unpacked = sys.argv[1:5]
gpu_figures.unpack_checkpoint(packed, unpacked)
models = [transformers.BertModel.from_pretrained(folder).eval() for folder in (source, unpacked)]
tokenizers = [transformers.BertTokenizerFast.from_pretrained(folder) for folder in (source, unpacked)]
cosines, pieces = [], 0
for sentence in gpu_figures.ncbi_splits(8)["test"]:
    states = []
    for model, tokenizer in zip(models, tokenizers):
        inputs = tokenizer(sentence.words, is_split_into_words=True, return_tensors="pt")
        with torch.no_grad():
            states.append(model(**inputs).last_hidden_state[0])
    pieces += len(states[0])
    cosines.append(float(torch.nn.functional.cosine_similarity(*states, dim=-1).min()))
print(json.dumps({"vocabulary": [len(t.get_vocab()) for t in tokenizers], "min_cosine": min(cosines), "pieces": pieces}))
"""


@pytest.mark.slow
def test_the_scores_part_fine_tunes_both_sides_from_one_packed_checkpoint(tmp_path, minilm_dir):
    """`--pack` cuts MiniLM-L6 to NCBI-disease's pieces in int8 rows (small enough to carry to the
    GPU machine); unpacked, its hidden states match the original checkpoint's on real sentences
    (int8 rows of a 6-layer model: a cosine of about 0.999 per token; a row or scale put in the
    wrong place gives far less), and the `scores` part trains and scores both sides from it."""
    from biozoo.testing import TENSORFLOW_DISTRIBUTIONS, site_without

    script = ROOT / "benchmarks" / "gpu_figures.py"
    packed = tmp_path / "packed"
    subprocess.run([sys.executable, str(script), "--pack", str(packed), "--pack-source", str(minilm_dir)],
                   check=True, capture_output=True, timeout=300)
    assert (packed / "weights.npz").stat().st_size < 16 * 2**20  # the original: 87 MiB
    checked = subprocess.run([sys.executable, "-c", FIDELITY, str(minilm_dir), str(packed), str(ROOT / "benchmarks"),
                              str(tmp_path / "unpacked")], capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stderr[-3000:]
    fidelity = json.loads(checked.stdout.strip().splitlines()[-1])
    assert fidelity["vocabulary"][0] == 30522 and 5000 < fidelity["vocabulary"][1] < 30522
    assert fidelity["pieces"] > 100 and fidelity["min_cosine"] > 0.995

    site = site_without(tmp_path / "site", TENSORFLOW_DISTRIBUTIONS)
    report = tmp_path / "scores.json"
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": f"{site}{os.pathsep}{ROOT}",
           "BIOZOO_CACHE": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-S", str(script), "--smoke", "--parts", "scores", "--checkpoint",
                             str(packed), "--report", str(report)], env=env, capture_output=True, text=True,
                            timeout=900, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    scores = json.loads(report.read_text())["finetune_scores_ncbi_disease"]
    assert scores["train_sentences"] == 24 and scores["steps"] == 1 and scores["epochs"] == 1
    assert scores["biozoo_jax"]["precision"] == "float32"  # bf16 on a GPU only
    for side in (scores["biozoo_jax"], scores["transformers"]):
        assert 0 <= side["dev_f1"] <= 100 and 0 <= side["test_f1"] <= 100 and side["train_seconds"] > 0
    assert scores["dev_f1_difference"] == round(scores["biozoo_jax"]["dev_f1"] - scores["transformers"]["dev_f1"], 2)


def test_gpu_timeline_tells_busy_time_from_idle_gaps():
    """The timeline summary of one GPU stream, on events written out by hand: two overlapping
    kernels (0-100 and 50-150 ns), then one after a 10 us gap and one after a 20 us gap."""
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location("gpu_figures", ROOT / "benchmarks" / "gpu_figures.py")
    gpu_figures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_figures)

    def kernel(name, start, end):
        return SimpleNamespace(name=name, start_ns=start, end_ns=end, duration_ns=end - start)

    events = [kernel("late", 30_250, 30_300), kernel("a", 0, 100), kernel("b", 50, 150), kernel("c", 10_150, 10_250)]
    timeline = gpu_figures.gpu_timeline(events, steps=2)
    assert timeline["span_us_per_call"] == 15.2  # 30.3 us over 2 calls
    assert timeline["busy_us_per_call"] == 0.1  # 0-150, 10,150-10,250 and 30,250-30,300 ns: 300 ns
    assert timeline["kernels_per_call"] == 2.0 and timeline["idle_gaps_per_call"] == 1.0
    assert timeline["idle_us_in_gaps_under_20us_per_call"] == 5.0  # the 10 us gap; the 20 us one is not under
    assert timeline["longest_gaps_us"] == [[20.0, "late"], [10.0, "c"]]
