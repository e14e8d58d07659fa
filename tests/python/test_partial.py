"""stencil.partial (issue 45) piece by piece: the tracker on JSON texts fed at every split point
(numbers that are not settled until ended, escapes and UTF-8 characters cut between pieces,
literals), its errors on text that is not JSON, what the schema view reads for
``missing_required`` ($ref, allOf, drafts, items), and partial Pydantic objects."""
from __future__ import annotations

import json
from typing import Optional

import pytest

import stencil
from stencil.partial import PartialTracker
from stencil.partial.schema import SchemaView
from stencil.partial.typed import partial_object
from partial_checks import contradictions

DOCS = [
    {"a": 12, "b": "x\u00e9\U0001F600\n\"\\/", "c": [True, False, None, -0.5e-3, 1E+2, -0], "d": {}, "e": []},
    [[], [{}], {"k": [1, [2, [3]]]}, "", 0],
    "a \U0001F600 b \u2028 \\u0041 \x7f\x00",
    12345,
    -1.5e10,
    None,
    {"\u00e9\"key": {"nested \\": [1.0, "s"]}, "": ""},
]
LAYOUTS = [dict(), dict(ensure_ascii=False), dict(indent=2), dict(separators=(",", ":"), ensure_ascii=False)]


def _feed_all(data: bytes, pieces: list[int], schema=None):
    """Snapshots after each piece (cut at ``pieces``), then after finish()."""
    t = PartialTracker(schema)
    snaps, at = [t.snapshot()], 0
    for cut in pieces + [len(data)]:
        t.feed(data[at:cut])
        snaps.append(t.snapshot())
        at = cut
    t.finish()
    snaps.append(t.snapshot())
    return snaps


@pytest.mark.parametrize("layout", LAYOUTS, ids=["ascii", "utf8", "indent", "compact"])
@pytest.mark.parametrize("doc", DOCS, ids=[f"doc{i}" for i in range(len(DOCS))])
def test_every_byte_split_is_consistent_with_the_final_value(doc, layout):
    data = json.dumps(doc, **layout).encode()
    snaps = _feed_all(data, list(range(1, len(data))))   # one byte at a time: every cut there is
    assert contradictions(snaps, doc) == []
    assert snaps[-1].complete and snaps[-1].value == doc and () in snaps[-1].complete_paths
    # and in a few bigger pieces, which must end at the same place
    assert _feed_all(data, list(range(3, len(data), 7)))[-1] == snaps[-1]


def test_a_number_is_settled_by_the_byte_after_it():
    t = PartialTracker()
    t.feed(b'{"a": 12')
    s = t.snapshot()
    assert s.value == {} and s.open_path == ("a",) and s.complete_paths == ()
    t.feed(b"3")
    assert t.snapshot().value == {}
    t.feed(b" ")
    s = t.snapshot()
    assert s.value == {"a": 123} and s.complete_paths == (("a",),) and s.open_path == ()
    root = PartialTracker()
    root.feed(b"12")
    assert root.snapshot().value is None and not root.done
    root.finish()
    assert root.snapshot().value == 12 and root.snapshot().complete


def test_cut_escapes_and_characters_wait_for_their_end():
    t = PartialTracker()
    t.feed(b'["x\\u00')
    assert t.snapshot().value == ["x"] and t.snapshot().open_path == (0,)
    t.feed(b'e9\\ud83d')   # a high surrogate waits for its low half
    assert t.snapshot().value == ["x\u00e9"]
    t.feed(b"\\ude00" + "\u00e9".encode()[:1])   # half of a UTF-8 character
    assert t.snapshot().value == ["x\u00e9\U0001F600"]
    t.feed("\u00e9".encode()[1:] + b'\\')
    assert t.snapshot().value == ["x\u00e9\U0001F600\u00e9"]
    t.feed(b'n", tr')
    s = t.snapshot()
    assert s.value == ["x\u00e9\U0001F600\u00e9\n"] and s.open_path == (1,) and s.complete_paths == ((0,),)
    t.feed(b"ue]")
    assert t.snapshot().value == ["x\u00e9\U0001F600\u00e9\n", True] and t.done


def test_open_path_names_the_member_once_its_key_is_written():
    t = PartialTracker()
    paths = []
    for piece in (b'{"ab', b'c"', b":", b' "', b'v"', b",", b' "n": [', b"1", b",", b" {", b"}]}"):
        t.feed(piece)
        paths.append(t.snapshot().open_path)
    assert paths == [(), ("abc",), ("abc",), ("abc",), (), (), ("n",), ("n", 0), ("n", 1), ("n", 1), None]


@pytest.mark.parametrize("text", ['{"a" 1}', "[1,]", "tru e", '{"a":1}}', "[1 2]", '"\\x"', "{,}", "+1", "[1]x"])
def test_text_that_is_not_json_is_a_value_error(text):
    with pytest.raises(ValueError):
        PartialTracker().feed(text.encode())


def test_finish_before_the_end_is_a_value_error():
    t = PartialTracker()
    t.feed(b'{"a": [1')
    with pytest.raises(ValueError, match="complete"):
        t.finish()
    cut = PartialTracker()
    cut.feed("\u00e9".encode()[:1])
    with pytest.raises(ValueError, match="UTF-8"):
        cut.finish()


def test_to_json_and_shared_finished_parts():
    t = PartialTracker()
    t.feed(b'{"a": [1, 2], "b": "x')
    s = t.snapshot()
    assert s.to_json() == {"value": {"a": [1, 2], "b": "x"}, "complete_paths": [["a", 0], ["a", 1], ["a"]],
                           "open_path": ["b"], "missing_required": []}
    t.feed(b'y"}')
    assert s.value == {"a": [1, 2], "b": "x"}   # an earlier snapshot does not change
    assert t.snapshot().value["a"] is s.value["a"]   # finished parts are shared, not copied


# -- the schema: missing_required ------------------------------------------------------------------

PERSON = {"type": "object", "required": ["name", "email"], "properties": {"name": {"type": "string"}}}
SCHEMA = {
    "$defs": {"person": PERSON},
    "type": "object", "required": ["id", "owner", "tags"],
    "properties": {"owner": {"$ref": "#/$defs/person"}, "tags": {"type": "array", "items": {"$ref": "#/$defs/person"}},
                   "maybe": {"anyOf": [{"$ref": "#/$defs/person"}, {"type": "null"}]},
                   "extra": {"allOf": [{"required": ["x"]}, {"type": "object", "required": ["y"]}]}},
}


def _missing(schema, text: str):
    t = PartialTracker(schema)
    t.feed(text.encode())
    return t.snapshot().missing_required


def test_missing_required_follows_refs_and_nested_required_objects():
    assert _missing(SCHEMA, "") == (("id",), ("owner",), ("owner", "name"), ("owner", "email"), ("tags",))
    assert _missing(SCHEMA, '{"id": 1, "owner"') == (("owner", "name"), ("owner", "email"), ("tags",))
    assert _missing(SCHEMA, '{"id": 1, "owner": {"name": "A') == (("tags",), ("owner", "email"))
    # an array item: its required properties count once it has started
    assert _missing(SCHEMA, '{"id": 1, "owner": {"name": "A", "email": "e"}, "tags": [') == ()
    assert _missing(SCHEMA, '{"id": 1, "owner": {"name": "A", "email": "e"}, "tags": [{') == (
        ("tags", 0, "name"), ("tags", 0, "email"))
    # anyOf is not read (the value may be null); allOf is, once its object started
    assert _missing(SCHEMA, '{"maybe": {') == (("id",), ("owner",), ("owner", "name"), ("owner", "email"), ("tags",))
    assert _missing(SCHEMA, '{"extra": {')[-2:] == (("extra", "x"), ("extra", "y"))


def test_schema_view_reads_drafts_items_and_patterns():
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"required": ["a"]}},
              "type": "array", "items": [{"$ref": "#/definitions/a", "required": ["ignored"]}],
              "additionalItems": {"required": ["b"]}}
    v = SchemaView(draft7)
    assert v.required(v.child(v.root, 0)) == ["a"] and v.required(v.child(v.root, 5)) == ["b"]
    v = SchemaView({"prefixItems": [{"required": ["p"]}], "items": {"required": ["q"]}})
    assert v.required(v.child(v.root, 0)) == ["p"] and v.required(v.child(v.root, 1)) == ["q"]
    v = SchemaView(json.dumps({"patternProperties": {"^x": {"required": ["px"]}, "\\p{L": {}},
                               "additionalProperties": {"required": ["ap"]}}))
    assert v.child(v.root, "x1") is None   # a pattern Python cannot read: nothing known of the member
    v = SchemaView({"patternProperties": {"^x": {"required": ["px"]}}, "additionalProperties": {"required": ["ap"]}})
    assert v.required(v.child(v.root, "x1")) == ["px"] and v.required(v.child(v.root, "y")) == ["ap"]
    assert SchemaView(True).required(SchemaView(True).root) == []


# -- typed partial objects -------------------------------------------------------------------------

pydantic = pytest.importorskip("pydantic")


class Address(pydantic.BaseModel):
    city: str
    zip_code: str = pydantic.Field(alias="zip")


class Person(pydantic.BaseModel):
    name: str
    born: int
    home: Optional[Address] = None
    past: list[Address] = []
    tags: dict[str, Address] = {}


def test_partial_objects_are_models_with_none_for_what_is_not_written():
    p = partial_object(Person, {"name": "Ma", "home": {"zip": "75"}, "past": [{"city": "W"}], "tags": {"t": {}}})
    assert isinstance(p, Person) and p.name == "Ma" and p.born is None
    assert isinstance(p.home, Address) and p.home.zip_code == "75" and p.home.city is None
    assert isinstance(p.past[0], Address) and p.past[0].city == "W" and isinstance(p.tags["t"], Address)
    assert p.model_fields_set == {"name", "home", "past", "tags"}
    assert partial_object(Person, None) is None


def test_partial_objects_from_a_generation_shaped_stream():
    schema = Person.model_json_schema()
    t = PartialTracker(schema)
    seen = []
    for ch in json.dumps({"name": "Marie", "born": 1867, "home": {"city": "Paris", "zip": "75005"}}):
        t.feed(ch)
        seen.append(partial_object(Person, t.snapshot().value))
    last = seen[-1]
    assert (last.name, last.born, last.home.city, last.home.zip_code) == ("Marie", 1867, "Paris", "75005")
    assert last.past is None and last.tags is None   # not written: None, not their defaults
    assert [p.born for p in seen if p is not None].count(None) > 10   # born came late, and whole
    assert stencil.PartialTracker is PartialTracker and stencil.PartialResult is type(t.snapshot())
