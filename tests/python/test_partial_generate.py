"""Partial results of real generations (issue 45), SmolLM2-135M greedy: ``stencil.runtime.generate``'s
``on_partial`` (a snapshot per step, none contradicting the output; the text is never parsed to
make them) and ``stencil.runtime.stream_partial`` (typed partial Pydantic objects, then the validated one;
closing it early stops the generation)."""
from __future__ import annotations

import json

import pytest

import stencil
import stencil.runtime
from partial_checks import contradictions

pydantic = pytest.importorskip("pydantic")

PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                           "born": {"type": "integer", "minimum": 1000, "maximum": 2100},
                                           "city": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 16}},
                                                    "required": ["name"], "additionalProperties": False}},
          "required": ["name", "born", "city"], "additionalProperties": False}
PLAIN = {"whitespace": "compact", "string_spelling": "plain", "number_spelling": "plain"}
PROMPT = "Describe Marie Curie as a JSON object: name, birth year, city of birth."


class City(pydantic.BaseModel):
    name: str


class Person(pydantic.BaseModel):
    name: str
    born: int
    city: City


def test_on_partial_gets_a_snapshot_per_step(lm):
    g = stencil.GrammarCompiler(lm.tokenizer_info).compile_json_schema(PERSON, **PLAIN)
    snaps, pieces = [], []
    out = stencil.runtime.generate(lm, g, PROMPT, max_tokens=40, on_partial=snaps.append, partial_schema=PERSON,
                                   on_text=pieces.append)
    final = json.loads(out.text)
    assert "".join(pieces) == out.text   # on_text still gets the text
    assert contradictions(snaps, final) == []
    assert snaps[-1].complete and snaps[-1].value == final
    assert snaps[0].missing_required and ("city", "name") in snaps[0].missing_required
    assert any(s.value and isinstance(s.value.get("name"), str) and s.open_path == ("name",) for s in snaps)
    print(f"\n{len(snaps)} snapshots for {len(out.token_ids)} tokens, 0 contradictions: {out.text}")


def test_stream_partial_yields_typed_objects_then_the_validated_one(lm):
    compiler = stencil.GrammarCompiler(lm.tokenizer_info)
    stream = stencil.runtime.stream_partial(lm, Person, PROMPT, compiler=compiler, max_tokens=40)
    objs = list(stream)
    assert stream.result is not None and stream.result.complete and stream.snapshot.complete
    assert objs[-1] == Person.model_validate_json(stream.result.text)
    assert all(isinstance(o, Person) for o in objs) and len(objs) > 3
    assert objs[0].born is None and any(o.name and o.born is None for o in objs)   # typed, with None for what is to come
    # closing early stops the generation at its next step
    with stencil.runtime.stream_partial(lm, Person, PROMPT, compiler=compiler, max_tokens=40) as early:
        first = next(early)
    assert isinstance(first, Person) and early.result is None
    with pytest.raises(StopIteration):
        next(early)
