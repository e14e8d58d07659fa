"""The generated schemas of the engine benchmarks (tests/support/schema_generator.py) and the parts of
the vLLM backend comparison (benchmarks/vllm_backends.py) that run without vLLM: the schemas are
valid Draft 2020-12 schemas that stencil compiles, the same for a seed, short to write (every
array and free string bounded), and a run's outputs are judged refused / cut / invalid / valid."""
from __future__ import annotations

import importlib.util
import random

import jsonschema
import pytest

import stencil
from tests.support.schema_generator import FIELDS, KINDS, generated_schemas
from benchmarks.vllm_backends import _verdict, main


def _unbounded(node, path="#") -> list[str]:
    """Arrays without maxItems and strings with neither maxLength, pattern, format nor enum."""
    out = []
    if isinstance(node, dict):
        if node.get("type") == "array" and "maxItems" not in node:
            out.append(path)
        if node.get("type") == "string" and not {"maxLength", "pattern", "format", "enum"} & set(node):
            out.append(path)
        for k, v in node.items():
            out += _unbounded(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _unbounded(v, f"{path}/{i}")
    return out


def test_schemas_are_valid_bounded_seeded_and_compile():
    cases = generated_schemas(len(KINDS) + 5, seed=3)
    assert len(cases) == len(KINDS) + 5
    assert {c.name.rsplit("-", 1)[0] for c in cases} == {k.replace(" ", "_") for k in KINDS}
    assert [c.schema for c in cases] == [c.schema for c in generated_schemas(len(KINDS) + 5, seed=3)]
    assert [c.schema for c in cases] != [c.schema for c in generated_schemas(len(KINDS) + 5, seed=4)]
    compiler = stencil.GrammarCompiler(stencil.TokenizerInfo([bytes([i]) for i in range(256)] + [b"</s>"],
                                                             special_token_ids={256: "</s>"}, eos_token_ids=[256]))
    for c in cases:
        jsonschema.Draft202012Validator.check_schema(c.schema)
        assert _unbounded(c.schema) == [], c.name
        assert c.schema["required"] and set(c.schema["required"]) <= set(c.schema["properties"])
        compiler.compile_json_schema(c.schema)
        assert c.name.split("-")[0].replace("_", " ") in c.prompt


def test_verdicts():
    case = {"schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}
    done = {"status": "done", "finish_reason": "stop", "tokens": 5}
    assert _verdict(case, {"status": "refused", "why": "x"}) == "refused"
    assert _verdict(case, {**done, "finish_reason": "length", "text": '{"a": 1'}) == "cut"
    assert _verdict(case, {**done, "text": '{"a": 1}'}) == "valid"
    assert _verdict(case, {**done, "text": '{"a": "1"}'}) == "invalid"
    assert _verdict(case, {**done, "text": '{"a": 1'}) == "invalid"     # ended (stop) but not JSON


def test_unknown_backend_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--backends", "stencil,outlines"])
    assert "unknown backends ['outlines']" in capsys.readouterr().err


def test_generated_instances_of_a_schema_validate():
    """A sanity check of the generator's vocabulary of fields: each field's schema takes a typical value."""
    sample = {"email": "a@b.co", "phone": "+1 555 0100", "created_at": "2024-01-02T03:04:05Z", "date": "2024-01-02",
              "start_time": "09:30", "color": "#a0B1c2", "country_code": "FR", "postal_code": "75001",
              "version": "1.2.3", "ip_address": "10.0.0.1", "notes": None, "website": "https://example.com"}
    for name, value in sample.items():
        schema = FIELDS[name](random.Random(0))
        jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())


def test_replay_walks_valid_outputs_and_times_each_engine(capsys):
    """benchmarks.vllm_replay: the walked outputs are valid (checked before the replay), a peer takes
    only outputs it accepts, and each engine gets its row of cold and warm times."""
    from benchmarks.vllm_replay import main as replay
    engines = ["stencil"] + [e for e in ("llguidance", "xgrammar") if importlib.util.find_spec(e)]
    assert replay(["--engines", ",".join(engines), "--count", "2", "--cpu"]) == 0
    out = capsys.readouterr().out
    assert "2 generated schemas (seed 0)" in out and "thread CPU time" in out
    rows = [line.split() for line in out.splitlines() if line.split() and line.split()[0] in engines]
    assert [r[0] for r in rows] == engines
    for r in rows:   # compile, compile + cold replay, then per step and per mask, cold and warm
        assert float(r[1].rstrip("s")) <= float(r[2].rstrip("s"))
        assert all(float(x) > 0 for x in (r[4], r[5], r[7], r[8]))


def test_prompt_lookup_proposes_what_followed_the_longest_recurring_suffix():
    from benchmarks.vllm_spec_replay import prompt_lookup
    ctx = [1, 2, 3, 9, 9, 1, 2, 3, 7, 8, 5, 2, 3]
    assert prompt_lookup(ctx, 2) == [7, 8]          # [2, 3] last recurs before 7, 8
    assert prompt_lookup(ctx + [7], 3) == [8, 5, 2]   # [2, 3, 7]: the longer suffix wins
    assert prompt_lookup([1, 2, 3, 4], 3) == []       # nothing recurs
    assert prompt_lookup([5, 6, 5, 6], 4) == [5, 6]   # what follows, up to the context's end


def test_speculative_replay_drafts_and_times_both_engines(capsys):
    """benchmarks.vllm_replay --speculate: the extraction outputs replayed without drafts and with
    n-gram drafts through each engine's calls; drafts take several tokens in some steps."""
    from benchmarks.vllm_replay import main as replay
    engines = ["stencil"] + (["xgrammar"] if importlib.util.find_spec("xgrammar") else [])
    assert replay(["--speculate", "0,3", "--engines", ",".join(engines), "--count", "3", "--cpu"]) == 0
    out = capsys.readouterr().out
    assert "3 extraction requests" in out
    rows = [line.replace("|", " ").split() for line in out.splitlines() if line.split() and line.split()[0] in engines]
    assert [(r[0], r[1]) for r in rows] == [(e, k) for e in engines for k in ("0", "3")]
    for r in rows:   # name, K, compile, steps, tokens and masks per step, cold ms/step, us/token, warm ms/step, us/token
        assert all(float(x) > 0 for x in r[5:10])
    steps = {(r[0], r[1]): int(r[3]) for r in rows}
    assert all(steps[(e, "3")] < steps[(e, "0")] for e in engines)
    masks = {(r[0], r[1]): float(r[5]) * int(r[3]) for r in rows}   # draft positions add masks
    assert all(masks[(e, "3")] > masks[(e, "0")] for e in engines)
