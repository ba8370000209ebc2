"""The process set-up biozoo does before TensorFlow loads: quiet logs on a CPU machine, triton
loaded first where it is installed, and no torch._dynamo pulled in by biozoo's own readers."""

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

from biozoo import testing as H
from biozoo._environment import has_gpu_device_node

CUDA_LINES = ("cuInit", "cuda_platform", "cudart_stub", "Could not find cuda drivers", "CUDA error")


def child(code, env=None, args=()):
    environment = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    environment.update(env or {})
    return subprocess.run([sys.executable, *args] if args else [sys.executable, "-c", code], env=environment,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(has_gpu_device_node(), reason="a GPU machine: TensorFlow's CUDA lines are real there")
def test_no_cuda_lines_on_a_cpu_machine(tmp_path):
    help_run = child("", args=("-m", "biozoo", "--help"))
    assert help_run.returncode == 0
    model = H.make_model("bert", "BertModel")
    H.save_hf_directory(model, tmp_path / "hf")
    convert_run = child("", args=("-m", "biozoo", "convert", "--from", "hf", str(tmp_path / "hf"), "--output",
                                  str(tmp_path / "preset")))
    assert convert_run.returncode == 0, convert_run.stderr
    assert (tmp_path / "preset" / "model.weights.h5").exists()
    for run in (help_run, convert_run):
        assert not [line for line in run.stderr.splitlines() if any(s in line for s in CUDA_LINES)], run.stderr
    # The control: TensorFlow alone, at its default log level, prints the line this test looks for.
    plain = child("import tensorflow as tf; tf.constant(1) + 1")
    assert any(s in plain.stderr for s in CUDA_LINES), plain.stderr


def test_triton_is_loaded_before_tensorflow(tmp_path):
    """A stand-in triton records whether TensorFlow was already loaded when it was imported."""
    (tmp_path / "triton").mkdir()
    (tmp_path / "triton" / "__init__.py").write_text(textwrap.dedent("""
        import sys
        TENSORFLOW_WAS_LOADED = "tensorflow" in sys.modules
    """))
    code = "import biozoo, sys, tensorflow; import triton; print(triton.TENSORFLOW_WAS_LOADED)"
    run = child(code, env={"PYTHONPATH": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"


def test_reading_a_bin_checkpoint_loads_no_dynamo_or_triton(tmp_path):
    model = H.make_model("bert", "BertModel")
    H.save_hf_directory(model, tmp_path / "hf", fmt="bin")
    assert (tmp_path / "hf" / "pytorch_model.bin").exists()
    code = textwrap.dedent(f"""
        import sys
        import biozoo
        backbone = biozoo.from_preset({str(tmp_path / "hf")!r})
        print(sorted(m for m in ("torch", "torch._dynamo", "triton") if m in sys.modules))
    """)
    run = child(code, env={"BIOZOO_CACHE": str(tmp_path / "cache")})
    assert run.returncode == 0, run.stderr

    expected = ["torch", "triton"] if importlib.util.find_spec("triton") else ["torch"]  # triton: biozoo's own preload
    assert run.stdout.strip().splitlines()[-1] == str(expected)


def test_import_help_list_and_info_load_neither_keras_nor_tensorflow():
    """`import biozoo` hands its names out lazily: the registry commands stay light."""
    code = textwrap.dedent("""
        import contextlib, io, sys
        from biozoo.cli import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            for argv in (["list"], ["list", "--kind", "task"], ["info", "bioformer_8l"]):
                assert main(argv) == 0, argv
            try:
                main(["--help"])
            except SystemExit:
                pass
        print(sorted(m for m in ("keras", "keras_hub", "tensorflow", "jax", "torch") if m in sys.modules))
    """)
    run = child(code)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"
    control = child("import sys, biozoo; biozoo.TokenClassifier; print('keras' in sys.modules)")  # the check can fail
    assert control.stdout.strip().splitlines()[-1] == "True"


def test_keras_hub_loads_a_biozoo_preset_after_a_plain_import_biozoo(tmp_path):
    """biozoo's classes register when KerasHub is imported after `import biozoo`, and at once when
    KerasHub came first."""
    model = H.make_model("bert", "BertModel")
    H.save_hf_directory(model, tmp_path / "hf")
    from biozoo.cli import main

    assert main(["convert", "--from", "hf", str(tmp_path / "hf"), "--output", str(tmp_path / "preset")]) == 0
    for first in ("import biozoo\nimport keras_hub", "import keras_hub\nimport biozoo"):
        code = first + f"\nprint(type(keras_hub.models.Backbone.from_preset({str(tmp_path / 'preset')!r})).__name__)"
        run = child(code)
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip().splitlines()[-1] == "BertBackbone"
