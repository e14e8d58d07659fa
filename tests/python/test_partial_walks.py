"""Partial results against the final value on generated schemas (issue 45): 200 schemas of
``tests/support/schema_generator.py``, two random outputs each (the real matcher's budget-aware mask
over SmolLM2's vocabulary, ``stencil.testing.random_walk``; the schemas in turn in three
white-space layouts), a
snapshot after every token, and not one snapshot may contradict the final value
(``partial_checks``). Also: the checks catch planted contradictions, so the count of 0 means
something."""
from __future__ import annotations

import dataclasses
import json
import random
import time

import pytest

import stencil
import stencil.runtime
from stencil.partial import PartialTracker
from stencil.testing import random_walk
from tests.support.schema_generator import generated_schemas
from partial_checks import contradictions

SCHEMAS = 200
WALKS = 2
#: white-space layouts, in turn: compact (as `stencil serve` writes), flexible, json.dumps(indent=2)
LAYOUTS = ({"whitespace": "compact"}, {}, {"whitespace": 2})


@pytest.fixture(scope="module")
def smollm2():
    try:
        path = stencil.runtime.default_model_path()
    except stencil.runtime.ModelError as e:
        pytest.skip(str(e))
    return stencil.TokenizerInfo.from_gguf(path)


def _walks(compiler, tok, schema, opts, rng):
    """(token ids, text) of WALKS random outputs (None for one that did not end complete)."""
    m = stencil.Matcher(compiler.compile_json_schema(schema, **opts))
    budget = max(120, (m.min_completion_tokens() or 0) + 30)
    out = []
    for _ in range(WALKS):
        m.reset()
        ids = random_walk(m, tok, rng, budget)
        out.append((ids, tok.decode_bytes(ids).decode("utf-8")) if m.is_accepting() else None)
    return out


def _snapshots(tok, schema, ids):
    """A snapshot after every token (its bytes fed once), then the one after ``finish()``."""
    t = PartialTracker(schema)
    snaps = [t.snapshot()]
    for i in ids:
        t.feed(tok.token_bytes(i))
        snaps.append(t.snapshot())
    t.finish()
    snaps.append(t.snapshot())
    return snaps


def test_no_snapshot_contradicts_the_final_value(smollm2):
    compiler = stencil.GrammarCompiler(smollm2)
    rng = random.Random(45)
    t0 = time.perf_counter()
    outputs = snapshots = open_strings = missing = cut = 0
    problems: list[str] = []
    track_seconds = 0.0
    for k, case in enumerate(generated_schemas(SCHEMAS, seed=45)):
        for w, walk in enumerate(_walks(compiler, smollm2, case.schema, LAYOUTS[k % len(LAYOUTS)], rng)):
            if walk is None:
                cut += 1
                continue
            ids, text = walk
            t1 = time.perf_counter()
            snaps = _snapshots(smollm2, case.schema, ids)
            track_seconds += time.perf_counter() - t1
            final = json.loads(text)
            problems += [f"{case.name} walk {w}: {p}" for p in contradictions(snaps, final)]
            assert snaps[-1].complete and snaps[-1].value == final, case.name
            outputs += 1
            snapshots += len(snaps)
            open_strings += sum(isinstance(s.open_path, tuple) and isinstance(_at(s.value, s.open_path), str)
                                for s in snaps)
            missing += sum(bool(s.missing_required) for s in snaps)
    seconds = time.perf_counter() - t0
    print(f"\n{SCHEMAS} schemas x {WALKS} walks: {outputs} outputs ({cut} not complete within the budget), "
          f"{snapshots:,} snapshots ({open_strings:,} inside a string, {missing:,} with required properties "
          f"to come), {len(problems)} contradictions; {seconds:.1f} s ({track_seconds:.2f} s in the tracker)")
    assert problems[:10] == []
    # the walks exercised what the checks look at (so 0 contradictions is not 0 of nothing)
    assert outputs >= 0.9 * SCHEMAS * WALKS and snapshots > 50 * outputs
    assert open_strings > snapshots // 4 and missing > snapshots // 10


def _at(value, path):
    for k in path:
        try:
            value = value[k]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def test_the_checks_catch_planted_contradictions():
    t = PartialTracker({"type": "object", "required": ["a", "b"]})
    snaps = []
    for piece in (b'{"a": "xy', b'z", "b": [1, ', b'2]}'):
        t.feed(piece)
        snaps.append(t.snapshot())
    final = {"a": "xyz", "b": [1, 2]}
    assert contradictions(snaps, final) == []
    s0, s1 = snaps[0], snaps[1]
    planted = [
        (dataclasses.replace(s1, value={"a": "xyZ", "b": [1]}), "xyZ"),                  # a settled string changed
        (dataclasses.replace(s0, value={"a": "xq"}), "no prefix"),                      # the open string went astray
        (dataclasses.replace(s1, value={"a": "xyz", "b": [1], "c": 1}), "not in the final"),
        (dataclasses.replace(s1, complete_paths=s1.complete_paths + (("b",),)), "complete ['b']"),
        (dataclasses.replace(s1, open_path=("c",)), "open path"),
        (dataclasses.replace(s1, missing_required=(("c",),)), "never came"),
        (dataclasses.replace(s1, missing_required=(("a",),)), "already in the value"),
    ]
    for bad, words in planted:
        found = contradictions([bad], final)
        assert found and words in " ".join(found), (bad, found)
    # between snapshots: a settled path dropped, a required path back from nowhere
    assert contradictions([s1, dataclasses.replace(snaps[2], complete_paths=())], final)
    assert contradictions([s1, dataclasses.replace(s1, missing_required=(("b", "x"),))], final)
