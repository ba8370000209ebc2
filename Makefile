# `make test` and `make demo` each create .venv when it is missing, install biozoo with the
# extras they need (only when setup.py changed since the last install) and run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PRESET ?= minilm
PYTEST_ARGS ?=

.PHONY: test demo install-test install-demo test-fast bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel

$(VENV)/.installed-test: setup.py $(PY)
	$(PY) -m pip install --quiet -e ".[test]"
	@touch $@

$(VENV)/.installed-demo: setup.py $(PY)
	$(PY) -m pip install --quiet -e ".[demo]"
	@touch $@

install-test: $(VENV)/.installed-test
install-demo: $(VENV)/.installed-demo

test: install-test
	$(PY) -m pytest $(PYTEST_ARGS)

# Only the fast tests (no real-data fine-tuning, no subprocess exports).
test-fast: install-test
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

demo: install-demo
	$(PY) -m biozoo demo --preset $(PRESET)

bench: install-test
	$(PY) benchmarks/finetune_vs_hf.py
	$(PY) benchmarks/inference_vs_hf.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
