"""MaskBench exactness on the sample in tests/data/maskbench-sample (or every 16th schema of the folder
STENCIL_MASKBENCH names, see data_paths.py; a whole set runs with
``python -m benchmarks.json_schema_coverage``): every valid instance accepted token
by token (DeepSeek tokenizer), every invalid instance rejected, for the schemas that compile."""
from __future__ import annotations

import pytest

import stencil
from data_paths import MASKBENCH, ON_SAMPLE
from tests.support.json_schema_suite import maskbench_files, print_maskbench, run_maskbench
from tokenizers_zoo import get

STEP = 1 if ON_SAMPLE else 16


@pytest.fixture(scope="module")
def results():
    files = maskbench_files(MASKBENCH, step=STEP)
    assert files, f"no MaskBench file in {MASKBENCH}"
    entry = get("deepseek")

    def encode(text):
        return entry.hf.encode(text, add_special_tokens=False).ids

    return run_maskbench(stencil.GrammarCompiler(entry.info, cache_size=8), encode, files)


def test_no_invalid_instance_accepted_and_almost_no_valid_one_rejected(results, capsys):
    with capsys.disabled():
        print()
        print_maskbench(results)
    n = results["schemas"]
    assert n >= (65 if ON_SAMPLE else 400)
    assert results["invalidation_errors"] == 0, results["wrong"]
    # the sample is pinned: one wrong verdict fails; a larger set may have 0.2% of valid rejected
    assert results["validation_errors"] <= (0 if ON_SAMPLE else max(1, n * 0.002)), results["wrong"]


def test_most_schemas_compile(results):
    # llguidance compiles about 83% and XGrammar about 86% of schemas of this kind (issue 4). The
    # sample is pinned at every schema compiled and passed: one refusal fails.
    share = 1.0 if ON_SAMPLE else 0.96
    assert results["compiled"] >= share * results["schemas"]
    assert results["passed"] >= share * results["schemas"]
