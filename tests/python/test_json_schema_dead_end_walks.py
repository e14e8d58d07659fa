"""Random walks must never meet a dead end (issue 40): the fast subset of ``python -m
benchmarks.dead_ends`` (which runs every schema of the JSON Schema Test Suite and 500 MaskBench
schemas; see its docstring), here over the generated ``uniqueItems`` arrays and a handful of Test
Suite groups, with DeepSeek's multi-byte vocabulary and few walks a configuration.

Every walk test asserts 0 dead ends (a mask with neither a token nor EOS), 0 tokens the mask allows
and ``accept_token`` refuses, and 0 outputs ``jsonschema`` finds invalid.

The harness's own judge is checked first against the artefacts that would make it cry wolf:
numbers read as floats, Python's regular expressions where ECMA-262's are meant, a ``$ref`` into a
document that names its draft.
"""
from __future__ import annotations

import pytest

from tests.support.dead_ends import CONFIGS, Case, Judge, Starts, Tally, Vocab, Walker, ecma_regex, run_case, suite_cases
from tests.support.dead_ends import unique_items_cases
from tests.support.json_schema_suite import suite_registry
from data_paths import JSON_SCHEMA_SUITE

# ---------------------------------------------------------------------------------------------
# The judge and the repeat finder of the harness.


def test_judge_reads_numbers_as_json_schema_does():
    judge = Judge({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2}, "uniqueItems": True})
    assert judge(b"[0.1e1,2]") == ("valid", "")              # 1 and 2, integers by value
    assert judge(b"[-0E-3430508661748534352423,1]")[0] == "valid"   # a zero whatever its exponent
    assert judge(b"[1,1.0]")[0] == "wrong"                   # one value twice
    assert judge(b"[1.5]")[0] == "wrong"
    assert judge(b'{"a":1,"a":2}')[0] == "wrong"             # a repeated key is no valid output
    assert judge(b"[1e99999999999999999999999]")[0] == "undecided"
    assert Judge({"multipleOf": 0.1})(b"0.3")[0] == "valid"  # exact, not 0.30000000000000004
    assert Judge({"not": {"type": "integer"}})(b"1.5e1")[0] == "wrong"


def test_judge_reads_patterns_as_ecma_262_does():
    for pattern, text, match in [(r"^\W$", "寓", True), (r"^\w$", "é", False), (r"^\d$", "৪", False),
                                 (r"^\s$", "\ufeff", True), (r"^\s$", "\x1c", False), (r"^[\s]$", "\xa0", True),
                                 (r"^\p{Letter}+$", "éa", True), (r"^\cC$", "\x03", True), (r"^a$", "a\n", False),
                                 (r"^[^\s]$", "a", True), (r"^[\w-]+$", "a-b", True)]:
        assert (ecma_regex(pattern).search(text) is not None) == match, (pattern, text)
    judge = Judge({"type": "object", "patternProperties": {r"^\d$": {"type": "integer"}},
                   "additionalProperties": False})
    assert judge(b'{"1":2}')[0] == "valid" and judge('{"৪":2}'.encode())[0] == "wrong"


def test_judge_keeps_its_numbers_through_remote_refs():
    registry = suite_registry(JSON_SCHEMA_SUITE)
    judge = Judge({"$schema": "https://json-schema.org/draft/2020-12/schema",
                   "$ref": "http://localhost:1234/draft2020-12/integer.json"}, registry)
    assert judge(b"8.1908046e8")[0] == "valid" and judge(b"0E78")[0] == "valid" and judge(b"1.5")[0] == "wrong"
    # a document of another draft stays one: 2019-09 ignores prefixItems
    old = {"http://localhost:1234/old.json": {"$schema": "https://json-schema.org/draft/2019-09/schema",
                                              "prefixItems": [{"type": "string"}]}}
    cross = Judge({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array",
                   "$ref": "http://localhost:1234/old.json"}, old)
    assert cross(b"[1]")[0] == "valid"


def test_starts_find_what_would_repeat():
    """What followed each earlier item, key or value that the one being written so far begins like
    (cut at 24 bytes or where the present one begins)."""
    def tails(text: str, n: int) -> list:
        s = Starts()
        s.feed(text.encode())
        return sorted({t[:n] for t in s.continuations()})

    assert tails("[0,", 9) == [b"0,"]
    assert tails("[true,t", 9) == [b"rue,"]
    assert tails('[{"a":true,"b":true},{"a":true,"b":tru', 2) == [b"e,", b"e}"]
    assert tails('{"a":1,', 9) == [b'"a":1,']
    assert tails('{"a":1,"b":"x,[",', 9) == [b'"a":1,"b"', b'"b":"x,["']   # no start inside a string
    assert tails('{"k":"a","k":', 9) == [b'"a","k":']   # after a colon, only what followed a colon
    assert tails("[\n  1,\n  ", 9) == [b"1,\n  "]


# ---------------------------------------------------------------------------------------------
# Walks.

UNIQUE = {c.name: c for c in unique_items_cases()}
# one configuration of each white-space mode, both property orders among them
TEST_CONFIGS = [("any", "compact"), ("definition", "flexible"), ("any", 2)]
WALKS = 4   # repeat, close with a budget, uniform, repeat with a budget (tests.support.dead_ends.STYLES)

# every family of items at minItems = its number of values (maxItems open), and the other shapes; not
# the arrays of integers (arr_int, nested_int: masks of 10 to 50 ms today under DeepSeek's digit
# tokens, a minute a shape) nor the unsatisfiable "over" shapes (see benchmarks.dead_ends)
FAST_UNIQUE = ["unique/enum3/min3", "unique/enum_num/min3", "unique/boolean/min2", "unique/bool_null/min3",
               "unique/int0-2/min3", "unique/int-1-1/min3", "unique/int_mult5/min3", "unique/num_mult_half/min3",
               "unique/const/min1", "unique/const_obj/min1", "unique/str_max1/min3", "unique/str_enum/min3",
               "unique/str_pattern/min2", "unique/obj2/min4", "unique/obj_enum/min4", "unique/obj_optional/min6",
               "unique/obj_required_one/min6", "unique/arr_bool/min3", "unique/arr_bool2/min6",
               "unique/arr_unique_bool/min5", "unique/arr_obj/min3", "unique/untyped/min3", "unique/untyped/array",
               "unique/untyped/plain", "unique/prefix_enum/min3", "unique/prefix_bool/min3", "unique/prefix_obj/min4",
               "unique/nested_arrays/min4", "unique/in_object/min3", "unique/obj_of_arr/min3"]
FAST_SUITE = ["uniqueItems.json#0 ", "uniqueItems.json#2 ", "uniqueItems.json#4 ", "const.json#1 ",
              "required.json#0 ", "propertyNames.json#0 ", "enum.json#3 ", "oneOf.json#8 ",
              "additionalProperties.json#0 ", "prefixItems.json#0 "]


@pytest.fixture(scope="module")
def walker(deepseek):
    return Walker(Vocab(deepseek.info))


def _params(names: list, configs=TEST_CONFIGS) -> list:
    """(name, configuration) pairs."""
    return [pytest.param(name, (order, ws), id=f"{name.strip()}-{order}-{ws}")
            for name in names for order, ws in configs]


def _walk(case, config, compiler, walker) -> list:
    """The findings of WALKS walks of ``case`` under ``config``, no time limit but the matcher's."""
    tally = Tally()
    run_case(case, compiler, walker, tally, walks=WALKS, max_tokens=96, configs=[config])
    assert tally.schemas[case.source]["compiled"] == 1, (case.name, dict(tally.schemas[case.source]))
    assert sum(c["walks"] for c in tally.counts.values()) == WALKS
    return [(kind, how, text.decode("utf-8", "replace"), detail)
            for kind, _, _, how, text, detail in tally.findings if kind in ("dead", "refused", "wrong", "crash")]


def test_the_configurations_are_the_harness_ones():
    assert set(TEST_CONFIGS) <= set(CONFIGS) and {ws for _, ws in TEST_CONFIGS} == {"compact", "flexible", 2}


@pytest.mark.parametrize("name, config", _params(FAST_UNIQUE))
def test_unique_items_walks_meet_no_dead_end(name, config, compiler, walker):
    assert _walk(UNIQUE[name], config, compiler, walker) == []


@pytest.fixture(scope="module")
def suite():
    return suite_cases(JSON_SCHEMA_SUITE)


@pytest.mark.parametrize("name, config", _params(FAST_SUITE))
def test_test_suite_walks_meet_no_dead_end(name, config, suite, compiler, walker):
    [case] = [c for c in suite if c.name.startswith("draft2020-12/" + name)]
    assert _walk(case, config, compiler, walker) == []


# Objects in any order that must hold a key a `not` demands (some key starts with c: not every key
# matches ^c false), where maxProperties leaves room for that key alone (MaskBench's
# Handwritten---pnmp2 and ---allOfPProp8, found by benchmarks.dead_ends): the mask let '{"x":1' in,
# after which neither '}' nor ',' could follow.
_NOT_C = {"not": {"patternProperties": {"^c": False}}}
_NOT_D = {"not": {"patternProperties": {"^d": False}}}
DEMANDED_KEYS = {
    "not_pattern/max1": {"type": "object", **_NOT_C, "maxProperties": 1},
    "not_names/max1": {"not": {"propertyNames": {"not": {"const": "a"}}}, "maxProperties": 1},
    "not_pattern/min2_max2": {"type": "object", **_NOT_C, "minProperties": 2, "maxProperties": 2},
    "two_nots/max2": {"type": "object", "allOf": [_NOT_C, _NOT_D], "maxProperties": 2},
    "two_nots_required/max3": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"],
                               "allOf": [_NOT_C, _NOT_D], "maxProperties": 3},
    "required_one_of_them/max2": {"type": "object", "properties": {"cat": {"type": "boolean"}}, "required": ["cat"],
                                  **_NOT_C, "maxProperties": 2},
    "value_demanded/max1": {"type": "object", "not": {"patternProperties": {"^c": {"not": {"type": "integer"}}}},
                            "maxProperties": 1},
    "any_of_nots/max1": {"type": "object", "anyOf": [_NOT_C, {"not": {"propertyNames": {"not": {"const": "x"}}}}],
                         "maxProperties": 1},
    "pnmp2": {"type": "object", "patternProperties": {"^[0-9]$": {"type": "array", "minItems": 2}},
              "additionalProperties": False, "maxProperties": 2, "not": {"anyOf": [
                  {"propertyNames": {"not": {"enum": ["1", "3"]}}}, {"propertyNames": {"not": {"enum": ["2", "3"]}}}]}},
}


@pytest.mark.parametrize("name, config", _params(list(DEMANDED_KEYS), TEST_CONFIGS + [("any", "flexible")]))
def test_keys_a_not_demands_walks_meet_no_dead_end(name, config, compiler, walker):
    assert _walk(Case("objects", name, DEMANDED_KEYS[name]), config, compiler, walker) == []
