"""llguidance's ``%json`` dialect in Lark: the ``x-guidance`` options (separators, white space,
escapes), the schema's brace on the line after ``%json``, strings with ``\\u`` escapes for control
characters only, integers without fraction or exponent, and no white space around the value; and
what ``compile_json_schema`` shares with it (no lone surrogate)."""
from __future__ import annotations

import json

import pytest

import stencil


def _full(compiled, text: str) -> bool:
    m = stencil.Matcher(compiled)
    return m.accept_string(text) and m.is_accepting()


def _check(compiled, good, bad):
    for s in good:
        assert _full(compiled, s), f"rejected valid {s!r}"
    for s in bad:
        assert not _full(compiled, s), f"accepted invalid {s!r}"


def _lark_json(compiler, schema: dict, prefix: str = "", suffix: str = ""):
    return compiler.compile_lark(f'start: "{prefix}" obj "{suffix}"\nobj: %json {json.dumps(schema)}')


# -- x-guidance ------------------------------------------------------------------------------------

def test_separators_replace_comma_and_colon(compiler):
    schema = {"x-guidance": {"item_separator": ";", "key_separator": "="},
              "type": "object", "properties": {"k": {"type": "array", "items": {"type": "integer"}}},
              "required": ["k"]}
    g = _lark_json(compiler, schema, "<", ">")
    _check(g, ['<{"k"=[4;5;6]}>', '<{"k" = [ 4 ; 5 ]}>', '<{"k"=[]}>'],
           ['<{"k":[4,5]}>', '<{"k"=[4,5]}>', '<{"k":[4;5]}>'])


def test_separator_regex_with_compact_whitespace(compiler):
    schema = {"x-guidance": {"item_separator": " ?, ?", "key_separator": ": ", "whitespace_flexible": False},
              "type": "object", "properties": {"p": {"type": "integer"}, "q": {"type": "boolean"}},
              "required": ["p", "q"]}
    g = _lark_json(compiler, schema)
    _check(g, ['{"p": 3, "q": true}', '{"p": 3 ,"q": false}', '{"p": 3,"q": true}'],
           ['{"p":3,"q":true}', '{"p": 3,  "q": true}', '{ "p": 3, "q": true}', '{"p":  3, "q": true}'])


def test_whitespace_flexible_false_is_compact(compiler):
    schema = {"x-guidance": {"whitespace_flexible": False}, "type": "array", "items": {"type": "string"}}
    g = _lark_json(compiler, schema)
    _check(g, ['["ab","c"]', "[]"], ['["ab", "c"]', '[ "ab"]', '["ab" ,"c"]'])


def test_whitespace_pattern_bounds_each_gap(compiler):
    schema = {"x-guidance": {"whitespace_pattern": "[ ]{0,2}"}, "type": "object",
              "properties": {"w": {"type": "null"}}, "required": ["w"]}
    g = _lark_json(compiler, schema)
    _check(g, ['{"w":null}', '{  "w" :  null }'], ['{   "w":null}', '{\n"w":null}'])


def test_unknown_x_guidance_key_is_named(compiler):
    schema = {"x-guidance": {"whitespace_flexible": True, "indent_by": 2}, "type": "object"}
    with pytest.raises(stencil.GrammarError, match="indent_by"):
        _lark_json(compiler, schema)


@pytest.mark.parametrize("xg, word", [({"whitespace_flexible": "no"}, "true or false"),
                                      ({"item_separator": 7}, "a string"),
                                      ({"json_allowed_escapes": "nqx"}, "escapes")])
def test_bad_x_guidance_values(compiler, xg, word):
    with pytest.raises(stencil.GrammarError, match=word):
        _lark_json(compiler, {"x-guidance": xg, "type": "string"})


def test_bad_separator_regex_names_the_option(compiler):
    with pytest.raises(stencil.GrammarError, match="item_separator"):
        _lark_json(compiler, {"x-guidance": {"item_separator": "(,"}, "type": "array"})


def test_x_guidance_lenient_ignores_unsupported(compiler):
    schema = {"type": "string", "disallow": "integer"}
    with pytest.raises(stencil.GrammarError):
        _lark_json(compiler, schema)
    g = _lark_json(compiler, {"x-guidance": {"lenient": True}, **schema})
    _check(g, ['"zz"'], ["12"])


# -- %json with its brace on the next line -----------------------------------------------------------

def test_json_schema_brace_on_next_line(compiler):
    g = compiler.compile_lark('start: "id=" val\nval: %json\n  # the schema\n  {"type": "integer", "maximum": 9}\n')
    _check(g, ["id=7"], ["id=12", "id="])


# -- strings ---------------------------------------------------------------------------------------

def test_unicode_escapes_only_for_controls_by_default(compiler):
    g = _lark_json(compiler, {"type": "string"})
    _check(g, ['"tab\\there"', '"bell\\u0007"', '"nl\\u000A"', '"del\\u007f"', '"caf\u00e9"', '"a/b"'],
           ['"caf\\u00e9"', '"\\u0041"', '"a\\/b"', '"raw\x7fdel"', '"\\ud83d\\ude00"'])


def test_enum_and_const_strings_have_one_spelling(compiler):
    g = _lark_json(compiler, {"enum": ["r\u00f4le", "a/b", 'q"t']})
    _check(g, ['"r\u00f4le"', '"a/b"', '"q\\"t"'], ['"r\\u00f4le"', '"a\\/b"', '"q\\u0022t"'])
    g = _lark_json(compiler, {"type": "object", "properties": {"\u00e9t\u00e9": {"const": "x"}},
                              "required": ["\u00e9t\u00e9"]})
    _check(g, ['{"\u00e9t\u00e9":"x"}'], ['{"\\u00e9t\\u00e9":"x"}', '{"\u00e9t\u00e9":"\\u0078"}'])


def test_allowed_escapes_without_u(compiler):
    g = _lark_json(compiler, {"x-guidance": {"json_allowed_escapes": "nt\\\""}, "type": "string"})
    _check(g, ['"x\\ny"', '"q\\"\\\\"'], ['"x\\u000ay"', '"x\\ry"', '"x\\by"'])


def test_general_unicode_escapes(compiler):
    schema = {"x-guidance": {"json_allow_general_unicode_escapes": True}, "type": "string", "maxLength": 2}
    g = _lark_json(compiler, schema)
    _check(g, ['"\\u00e9\\u0041"', '"\\ud83d\\ude00!"', '"\u00e9a"'],
           ['"\\ud83d"', '"\\ude00x"', '"\\u0041\\u0042\\u0043"', '"\\ud83dx"'])


def test_lone_surrogates_refused_by_compile_json_schema(compiler):
    for schema in ({"type": "string"}, {"type": "string", "maxLength": 12}, {}):
        g = compiler.compile_json_schema(schema)
        _check(g, ['"\\ud83d\\ude00"', json.dumps("h\u00e9llo \U0001f600 \x7f")],
               ['"\\ud83d"', '"a\\udc00"', '"\\ud83d\\u0041"', '"\\ude00\\ud83d"'])


def test_compile_json_schema_keeps_json_dumps_spellings(compiler):
    g = compiler.compile_json_schema({"type": "object", "properties": {"n\u00e4me": {"enum": ["\u00fc", "a/b"]}},
                                      "required": ["n\u00e4me"]})
    _check(g, [json.dumps({"n\u00e4me": "\u00fc"}), json.dumps({"n\u00e4me": "a/b"}), '{"n\u00e4me": "a\\/b"}'], [])


def test_json_value_refuses_lone_surrogates(compiler):
    from stencil.grammar.json.value import json_value
    b = stencil.GrammarBuilder()
    g = compiler.compile_grammar(b.build(json_value(b)))
    _check(g, ['["\\ud800\\udc00", "\\u00e9"]'], ['["\\ud800"]', '"\\udfff"'])


# -- numbers ---------------------------------------------------------------------------------------

def test_integers_without_fraction_or_exponent_in_json_only(compiler):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}},
              "required": ["n", "x"]}
    g = _lark_json(compiler, schema)
    _check(g, ['{"n":40,"x":1.5e3}', '{"n":-3,"x":2}'], ['{"n":40.0,"x":1}', '{"n":4e1,"x":1}'])
    standard = compiler.compile_json_schema(schema)
    _check(standard, ['{"n":40.0,"x":1}', '{"n":4e1,"x":1}'], [])


@pytest.mark.parametrize("bounds", [{"minimum": 0}, {"minimum": 0, "maximum": 30}, {"minimum": 2},
                                    {"exclusiveMinimum": 0}, {"minimum": 0, "multipleOf": 3}])
@pytest.mark.parametrize("kind", ["integer", "number"])
def test_negative_zero_refused_above_minimum_zero_in_json_block(compiler, kind, bounds):
    g = _lark_json(compiler, {"type": kind, **bounds})
    zero_ok = bounds.get("minimum") == 0
    _check(g, ["0", "3"] if zero_ok else ["3"], ["-0", "-0.0", "-0e2", "-3"][: 1 if kind == "integer" else 4])
    _check(_lark_json(compiler, {"type": kind, "minimum": -1}), ["-0", "-1", "0"], [])


def test_negative_zero_kept_by_the_standard(compiler):
    # -0 equals 0: valid under minimum 0 for compile_json_schema, which keeps the standard
    g = compiler.compile_json_schema({"type": "number", "minimum": 0})
    _check(g, ["-0", "-0.0", "0", "3"], ["-3", "-0.5"])


# -- white space around the value ------------------------------------------------------------------

def test_no_whitespace_around_json_block_value(compiler):
    g = _lark_json(compiler, {"type": "array"}, "[[", "]]")
    _check(g, ["[[[1, 2]]]", "[[[ ]]]"], ["[[ [1]]]", "[[[1] ]]"])
