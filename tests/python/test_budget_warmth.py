"""A budget-aware mask is a function of the grammar, the matcher's state and the budget, whatever
the caches hold (issue 41): the cost searches stop at a limit on their own steps, not on the
lexer states and cost tables they happen to build (support/work_limit.h, cost/README.md).

Found by the tool-call benchmark: at a state where the budget binds, a fresh grammar's first
budget mask kept 1 token where the same state on a warm grammar kept the exact 196 (the search
ran out of work building a cold lexer and bounded the costs coarsely), so greedy decoding wrote
other text on a tool set's first request than on its repeats.

Each case is compiled by a fresh GrammarCompiler (no cache), walked under a tight, shrinking
budget with probes at the budget and one and two tokens under it, and walked again, the same
way, on the now warm grammar: every mask must be the same bit for bit. Cases: a tool-call grammar
of generated tool schemas, generated schemas, JSON Schema Test Suite schemas and MaskBench ones.
"""
from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest

import stencil
from benchmarks.dead_ends import suite_cases
from benchmarks.schema_generator import generated_schemas
from data_paths import JSON_SCHEMA_SUITE, MASKBENCH_SAMPLE

# Test Suite groups with strings, patterns, lengths, formats and enums: the lexemes whose cost
# searches build many lexer states.
SUITE_GROUPS = ("pattern.json#0", "maxLength.json#0", "minLength.json#0", "enum.json#1", "propertyNames.json#0",
                "patternProperties.json#0", "additionalProperties.json#0", "uniqueItems.json#0")
MASKBENCH_FILES = ("BFCL_java_0.json", "BFCL_javascript_25.json")


def tools(count: int, seed: int) -> list:
    return [{"type": "function", "function": {"name": c.name.replace("-", "_"), "description": c.prompt,
                                              "parameters": c.schema}} for c in generated_schemas(count, seed)]


def cases() -> dict:
    out: dict = {f"tools{k}": ("tools", tools(3, k)) for k in range(2)}
    out.update({f"generated {c.name}": ("schema", c.schema) for c in generated_schemas(6, 3)})
    suite = {c.name.split(" ", 1)[0]: c.schema for c in suite_cases(JSON_SCHEMA_SUITE)}
    out.update({f"suite {g}": ("schema", suite[f"draft2020-12/{g}"]) for g in SUITE_GROUPS})
    for name in MASKBENCH_FILES:
        with open(os.path.join(MASKBENCH_SAMPLE, name), encoding="utf-8") as f:
            out[f"maskbench {name}"] = ("schema", json.load(f)["schema"])
    return out


CASES = cases()


def compile_fresh(info, kind: str, obj):
    c = stencil.GrammarCompiler(info)
    if kind == "tools":
        return c.compile_tool_calls(obj, format="qwen-coder", tool_choice="required")
    return c.compile_json_schema(obj)


def budget_walk(g, vocab_size: int, seed: int, steps: int = 40) -> list:
    """The budget masks along a seeded walk that keeps within a budget of the bound plus 0-7
    tokens: at each step the budget left, one under it and two under it (where the budget binds)."""
    rng = random.Random(seed)
    bm = stencil.allocate_token_bitmask(1, vocab_size)
    m = stencil.Matcher(g)
    k = m.min_completion_tokens()
    assert k is not None
    k += rng.randrange(8)
    out = []
    for used in range(min(steps, k)):
        if m.is_terminated():
            break
        left = k - used
        for probe in (left - 2, left - 1, left):
            if probe >= 1:
                m.fill_next_token_bitmask(bm, 0, remaining_tokens=probe)
                out.append((used, probe, bm[0].copy()))
        ids = np.flatnonzero(np.unpackbits(bm[0].view(np.uint8), bitorder="little")[:vocab_size])
        if len(ids) == 0:
            break
        assert m.accept_token(int(rng.choice(ids)))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_budget_masks_are_the_same_on_a_cold_and_a_warm_grammar(name, deepseek):
    info = deepseek.info
    kind, obj = CASES[name]
    try:
        g = compile_fresh(info, kind, obj)
    except stencil.StencilError as e:
        pytest.skip(f"does not compile: {e}")
    binding = 0
    for seed in range(2):
        if seed:
            g = compile_fresh(info, kind, obj)  # cold again
        cold = budget_walk(g, info.vocab_size, seed)
        warm = budget_walk(g, info.vocab_size, seed)
        assert len(cold) == len(warm)
        for (used, probe, a), (_, _, b) in zip(cold, warm):
            kept = (int(np.unpackbits(a.view(np.uint8)).sum()), int(np.unpackbits(b.view(np.uint8)).sum()))
            assert np.array_equal(a, b), f"seed {seed}, token {used}, budget {probe}: kept cold/warm {kept}"
        binding += len(cold)
    assert binding > 0
