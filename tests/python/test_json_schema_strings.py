"""String constraints work on the decoded string whatever its JSON spelling: random strings (ASCII,
accented, astral, quotes, backslashes, controls) serialized with and without ``ensure_ascii`` are
checked against Python's own evaluation of the pattern and code-point length; formats against
hand-written valid and invalid examples; property names in every spelling."""
from __future__ import annotations

import itertools
import json
import random
import re

import pytest

import stencil
from stencil.grammar.json.schema import json_schema_grammar
from stencil.grammar.json.schema.core.formats import format_matches


def _accepts(g, value, ensure_ascii=True):
    m = stencil.Matcher(g)
    return m.accept_string(json.dumps(value, ensure_ascii=ensure_ascii)) and m.is_accepting()


ALPHABET = "ab_-.@1 Zé€😀\"\\/\n\t\x01"


def _strings():
    rnd = random.Random(11)
    out = ["", "a", "abc", "é", "😀", "a\"b", "\\", "\n", "ab@x.com", "A-1", "😀😀😀"]
    for _ in range(400):
        out.append("".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, 7))))
    return out


STRINGS = _strings()

# patterns on which ECMA-262 and Python's re agree
PATTERNS = ["^[a-z]+$", "b", "^a", "é$", "^.{2,4}$", "[😀]", "^[^\\\\\"]*$", "\\d", "^(ab|é)*$", "\\s", "^$"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_pattern_matches_python_re_in_both_spellings(compiler, pattern):
    g = compiler.compile_grammar(json_schema_grammar({"type": "string", "pattern": pattern}))
    # ECMA's $ is the end of input (Python's also matches before a final newline)
    rx = re.compile(pattern.replace("\\d", "[0-9]").replace("\\s", "[ \\t\\n\\r\\f\\v\\xa0]").replace("$", "\\Z"))
    bad = []
    for s in STRINGS:
        exp = rx.search(s) is not None
        for ascii_ in (True, False):
            if _accepts(g, s, ascii_) != exp:
                bad.append((s, ascii_, exp))
    assert bad == []


@pytest.mark.parametrize("schema", [{"type": "string"}, {"type": "string", "pattern": "^[a-z]+$"},
                                    {"type": "string", "pattern": "é|\\n"}, {"type": "string", "maxLength": 3},
                                    {"enum": ["a\"b", "\u00e9\n", "x"]}, {"type": "string", "format": "email"},
                                    {"type": "object", "additionalProperties": {"type": "integer"}}])
def test_plain_string_spelling_is_exactly_json_dumps(compiler, schema):
    """``string_spelling="plain"``: a string is accepted in the spelling ``json.dumps(s,
    ensure_ascii=False)`` gives it when the default options accept it at all, and in no other."""
    any_g = compiler.compile_json_schema(schema)
    plain = compiler.compile_json_schema(schema, string_spelling="plain")
    keyed = schema.get("type") == "object"
    checked = escaped = 0
    for s in STRINGS + schema.get("enum", []) + ["ann@b.co", "x.y@bé.com", "a/b@c.de", "q@a.b\n"]:
        value = {s: 1} if keyed else s
        exp = _accepts(any_g, value, False)
        assert _accepts(plain, value, False) == exp, (schema, s)
        checked += exp
        if json.dumps(value) != json.dumps(value, ensure_ascii=False):
            assert not _accepts(plain, value, True), (schema, s)
            escaped += 1
        m = stencil.Matcher(plain)  # other escapes of plain characters are refused
        text = json.dumps(value, ensure_ascii=False)
        if exp and "a" in s:
            assert not m.accept_string(text.replace("a", "\\u0061", 1)), (schema, s)
    assert checked >= 3 and escaped > 5


@pytest.mark.parametrize("lo,hi", [(0, 0), (1, 1), (2, 4), (3, None), (0, 2)])
def test_length_counts_code_points(compiler, lo, hi):
    schema = {"type": "string", "minLength": lo}
    if hi is not None:
        schema["maxLength"] = hi
    g = compiler.compile_grammar(json_schema_grammar(schema))
    for s in STRINGS:
        exp = lo <= len(s) and (hi is None or len(s) <= hi)
        assert _accepts(g, s) == exp and _accepts(g, s, False) == exp, (s, lo, hi)


def test_pattern_and_length_together(compiler):
    g = compiler.compile_grammar(json_schema_grammar({"type": "string", "pattern": "^[a-z]*$", "maxLength": 3}))
    assert _accepts(g, "abc") and not _accepts(g, "abcd") and not _accepts(g, "ab1")


def test_pattern_and_length_emptiness_is_exact(compiler):
    """Whether a pattern AND a length leaves any string: the pattern's shortest string is tried
    first and must be checked against the length too (`^a$` holds no string of 2 characters, so
    a string may not even open), and when it fails the search goes on (`^(a|bb)$` holds `bb`)."""
    g = compiler.compile_json_schema({"anyOf": [{"type": "string", "pattern": "^a$", "minLength": 2},
                                                {"type": "integer"}]})
    assert not stencil.Matcher(g).accept_string('"') and _accepts(g, 7)
    g = compiler.compile_json_schema({"type": "string", "pattern": "^(a|bb)$", "minLength": 2})
    assert _accepts(g, "bb") and not _accepts(g, "a")
    m = stencil.Matcher(g)
    assert m.accept_string('"') and not m.fork().accept_string("a") and m.accept_string("b")
    # the pattern of an e-mail ending .gov.uk within 5 to 254 characters, checked against re
    p = r"^[^@^\s]+@[^@^\.^\s]+(\.[^@^\.^\s]*)*.gov.uk"
    g = compiler.compile_json_schema({"type": "string", "minLength": 5, "maxLength": 254, "pattern": p})
    for text in ["a@b.gov.uk", "a@b.c.gov.uk", "a@bxgov.uk", "x@y.gov.ukzz", "a@b.gov.u", "@b.gov.uk",
                 "a@b@c.gov.uk", "a@" + "b" * 250 + ".gov.uk", "a b@c.gov.uk"]:
        want = re.search(p, text) is not None and 5 <= len(text) <= 254
        assert _accepts(g, text) == want, text


def test_enum_of_strings_in_every_spelling(compiler):
    g = compiler.compile_grammar(json_schema_grammar({"enum": ["café", "a\"b", "😀", "x\ny"]}))
    for s in ("café", "a\"b", "😀", "x\ny"):
        assert _accepts(g, s) and _accepts(g, s, False)
    m = stencil.Matcher(g)  # an escape json.dumps never writes is still the same string
    assert m.accept_string('"caf\\u00E9"') and m.is_accepting()
    assert not _accepts(g, "cafe") and not _accepts(g, "x\\ny")


FORMATS = {
    "date-time": (["2022-01-01T12:00:00Z", "2020-02-29T00:00:00.123+05:30", "1999-12-31t23:59:60z",
                   "0000-02-29T00:00:00Z"],
                  ["2022-01-01T12:00:00", "2021-02-29T00:00:00Z", "2022-01-01 12:00:00Z", "2022-13-01T00:00:00Z"]),
    "date": (["2022-12-31", "2000-02-29", "0000-02-29"], ["2022-04-31", "1900-02-29", "22-01-01", "0100-02-29"]),
    "time": (["12:00:00Z", "08:30:00.5-02:00"], ["12:00:00", "24:00:00Z"]),
    "duration": (["P1D", "PT1H30M", "P1Y2M3DT4H5M6S", "P2W"], ["P", "PT", "P1DT", "1D"]),
    "email": (["joe@example.com", "a.b+c@ex-ample.org", '"a b"@x.com', "x@[192.168.0.1]"],
              ["notanemail", "a..b@x.com", "@x.com", "a@"]),
    "hostname": (["example.com", "localhost", "a-b.c"], ["-bad.com", "a" * 64 + ".com", "a_b.com", ""]),
    "ipv4": (["192.168.0.1", "0.0.0.0"], ["256.1.1.1", "01.1.1.1", "1.2.3"]),
    "ipv6": (["::1", "2001:db8::8a2e:370:7334", "::ffff:192.168.1.1", "1:2:3:4:5:6:7:8"],
             ["12345::", "1:2:3:4:5:6:7:8:9", ":::"]),
    "uri": (["https://example.com/a?b=c#d", "mailto:x@y.z", "http://[::1]:80/", "urn:isbn:0451450523"],
            ["notaurl", "http://exa mple.com", "//foo", "/relative"]),
    "uri-reference": (["/a/b", "../x", "#frag", "http://x", ""], ["a b", "http://x\\y"]),
    "iri": (["http://exämple.com/ü"], ["ü"]),
    "uuid": (["f47ac10b-58cc-4372-a567-0e02b2c3d479", "F47AC10B-58CC-4372-A567-0E02B2C3D479"],
             ["f47ac10b58cc4372a5670e02b2c3d479", "f47ac10b-58cc-4372-a567-0e02b2c3d47"]),
    "json-pointer": (["", "/a/b~0~1"], ["a", "/~2"]),
    "relative-json-pointer": (["0", "1/a", "2#"], ["-1", "/a"]),
    "uri-template": (["http://x/{id}", "{a,b*}", "{+path:3}"], ["{", "{a b}"]),
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_formats(compiler, name):
    good, bad = FORMATS[name]
    g = compiler.compile_grammar(json_schema_grammar({"type": "string", "format": name}))
    for s in good:
        assert _accepts(g, s) and _accepts(g, s, False), (name, s)
    for s in bad:
        assert not _accepts(g, s) and not _accepts(g, s, False), (name, s)


def test_date_formats_leap_years_of_every_year():
    # RFC 3339 Appendix C: divisible by 4, and not by 100 unless by 400 (0000 too: 0 is divisible
    # by 400); a mask oracle found 0000-02-29 refused
    for year in range(10000):
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        assert format_matches("date", f"{year:04d}-02-29") == leap, year
        assert format_matches("date-time", f"{year:04d}-02-29T00:00:00Z") == leap, year
        assert format_matches("date", f"{year:04d}-02-28")


def test_unknown_format_is_an_annotation_and_regex_format_is_unsupported(compiler):
    g = compiler.compile_grammar(json_schema_grammar({"type": "string", "format": "int32"}))
    assert _accepts(g, "anything")
    with pytest.raises(stencil.GrammarError, match=r"format at /format: format 'regex'"):
        json_schema_grammar({"type": "string", "format": "regex"})


def test_property_names_in_every_spelling_and_kept_apart_from_other_keys(compiler):
    schema = {"type": "object", "properties": {"é": {"type": "integer"}, "a\"b": {"type": "string"}},
              "additionalProperties": {"type": "boolean"}}
    g = compiler.compile_grammar(json_schema_grammar(schema, property_order="any"))
    assert _accepts(g, {"é": 1, "a\"b": "x", "z": True})
    assert _accepts(g, {"é": 1}, False)
    m = stencil.Matcher(g)
    assert m.accept_string('{"\\u00e9": 2}') and m.is_accepting()
    # a named key never falls into the other keys' class (whose values are booleans)
    assert not _accepts(g, {"é": True}) and not _accepts(g, {"a\"b": False})
    m = stencil.Matcher(g)
    assert not (m.accept_string('{"\\u00e9": true}') and m.is_accepting())
    assert not _accepts(g, {"z": 1})


def test_pattern_properties_apply_to_named_properties(compiler):
    schema = {"properties": {"foo": {"type": "array", "maxItems": 3}},
              "patternProperties": {"f.o": {"minItems": 2}}}
    g = compiler.compile_grammar(json_schema_grammar(schema, property_order="any"))
    assert _accepts(g, {"foo": [1, 2]}) and not _accepts(g, {"foo": []}) and not _accepts(g, {"foo": [1] * 4})
    assert _accepts(g, {"fxo": [1, 2, 3, 4, 5]}) and not _accepts(g, {"fxo": [1]})


def test_keys_that_must_or_must_not_contain_a_pattern(compiler):
    # A key matching the unanchored pattern takes its schema; any other key the additional one
    # (a lexeme that must not contain the pattern: a complement, dead once the pattern matched).
    schema = {"patternProperties": {"[0-9a-f]{4}": {"type": "integer"}}, "additionalProperties": {"type": "string"}}
    g = compiler.compile_json_schema(schema, key_spelling="plain")
    for key in ("12ab", "x12abx", "12ab12ab", "zz0000"):
        assert _accepts(g, {key: 1}) and not _accepts(g, {key: "s"}), key
    for key in ("12ag", "x12a", "", "ABCD", "1\"2ab"):
        assert _accepts(g, {key: "s"}) and not _accepts(g, {key: 1}), key
    assert _accepts(g, {"1234": 5, "123": "s", "é": "t"})


def test_many_pattern_properties_overlapping_or_not(compiler):
    # Over three patterns, which ones a key can match together is decided pair by pair (most pairs
    # by their fixed first or last characters, the rest by the core): every key gets the schemas
    # of exactly the patterns it matches, checked against the jsonschema package.
    import jsonschema
    pats = {"^name:(en|nl)$": {"type": "string"}, "^url:(en|nl)$": {"type": "string", "maxLength": 5},
            "^c:[0-3]:surName$": {"type": "string"}, "^c:[0-3]:givenName$": {"type": "integer"},
            ":(en|nl)$": {"minLength": 2}, "^c:[0-9]": {"type": ["string", "integer"]},
            "^[a-z]{3}:": {"not": {"const": "xx"}}}
    schema = {"type": "object", "patternProperties": pats, "additionalProperties": False}
    g = compiler.compile_json_schema(schema, key_spelling="plain")
    keys = ["name:en", "url:nl", "url:fr", "c:1:surName", "c:2:givenName", "c:7:givenName", "c:9",
            "abc:x", "abc:en", "nam:en", "name:de", "c:0:", "zz"]
    values = ["", "xx", "abcdef", "ab", 3, None]
    checked = 0
    for k in keys:
        for v in values:
            expected = jsonschema.Draft202012Validator(schema).is_valid({k: v})
            assert _accepts(g, {k: v}) == expected, (k, v)
            checked += expected
    assert 10 < checked < len(keys) * len(values) - 10


def test_content_encoding_base64_on_request(compiler):
    schema = {"type": "string", "contentEncoding": "base64"}
    plain = compiler.compile_grammar(json_schema_grammar(schema))
    assert _accepts(plain, "not base64!")   # an annotation by default (Draft 2020-12)
    g = compiler.compile_grammar(json_schema_grammar(schema, assert_content=True))
    for s in ("", "aGk=", "aGVsbG8=", "YWJj", "+/+/"):
        assert _accepts(g, s), s
    for s in ("aGk", "a===", "not base64!", "aGVsbG8=x"):
        assert not _accepts(g, s), s


def test_leading_lookaheads_become_pattern_formulas(compiler):
    g = compiler.compile_grammar(json_schema_grammar({"type": "string", "pattern": "^(?!aliases|date)[a-z]+$"}))
    for s, ok in (("alias", True), ("aliases", False), ("aliasesx", False), ("dat", True), ("dates", False),
                  ("A", False)):
        assert _accepts(g, s) == ok, s
    g = compiler.compile_grammar(json_schema_grammar(
        {"type": "object", "patternProperties": {"^(?!x-)[a-z-]+$": {"type": "integer"}},
         "additionalProperties": False}, property_order="any"))
    assert _accepts(g, {"ab-c": 1}) and not _accepts(g, {"x-ab": 1}) and not _accepts(g, {"ab": "s"})
    # a lookahead inside one branch of an alternation is still unsupported
    with pytest.raises(stencil.GrammarError, match="lookahead"):
        json_schema_grammar({"type": "string", "pattern": "^(?!a)b|c"})


@pytest.mark.parametrize("pattern", ["^(?!a{2,1})b", "^(?=[z-a])b"])
def test_an_invalid_lifted_lookahead_is_refused_with_the_users_pattern(pattern):
    # the lifted lookahead's inner pattern is checked before it becomes a formula: the error
    # points at the schema's pattern keyword and shows the user's text, not the ^(?:...) rewrite
    with pytest.raises(stencil.GrammarError) as e:
        json_schema_grammar({"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}})
    assert "/properties/s/pattern" in str(e.value) and pattern in str(e.value) and "(?:" not in str(e.value)


def test_plain_property_names_are_spelled_as_json_dumps_spells_them(compiler):
    # key_spelling="plain": each property name has one spelling, json.dumps(ensure_ascii=False)'s,
    # with a lone surrogate as its \u escape (plain_json_text, which calls json's C encoder).
    from stencil.grammar.json.schema.emit.emitter import plain_json_text
    rnd = random.Random(5)
    pool = [chr(c) for c in range(0x80)] + ["\u2028", "\u2029", "\ud800", "\udbff", "\udc00", "\udfff", "é", "中", "😀"]
    surrogate = re.compile("[\ud800-\udfff]")
    for _ in range(3000):
        name = "".join(rnd.choice(pool) for _ in range(rnd.randint(0, 10)))
        expected = surrogate.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(name, ensure_ascii=False))
        assert plain_json_text(name) == expected, name
    names = ["a\"b", "tab\there", "é中😀", "\u2028", "x\ud800y"]
    g = compiler.compile_json_schema({"type": "object", "properties": {n: {"type": "integer"} for n in names},
                                      "additionalProperties": False}, key_spelling="plain")
    for n in names:
        text = "{" + plain_json_text(n) + ":1}"
        assert stencil.Matcher(g).accept_bytes(text.encode("utf-8", "surrogatepass")), n
        escaped = "{" + json.dumps(n) + ":1}"   # \u spellings of non-ASCII: not this name's under plain
        if escaped != text:
            assert not stencil.Matcher(g).accept_string(escaped), n


def _random_pattern(rng: random.Random, depth: int) -> str:
    """A regex over a, b and c: classes, groups, alternatives, bounded and unbounded counts."""
    if depth == 0:
        return rng.choice(["a", "b", "[ab]", "[a-c]", "c", "(?:)"])
    kind = rng.randrange(4)
    if kind == 0:
        return _random_pattern(rng, depth - 1) + _random_pattern(rng, depth - 1)
    if kind == 1:
        return f"(?:{_random_pattern(rng, depth - 1)}|{_random_pattern(rng, depth - 1)})"
    lo = rng.randrange(3)
    count = rng.choice(["*", "+", "?"]) if kind == 2 else "{%d,%d}" % (lo, lo + rng.randrange(3))
    return f"(?:{_random_pattern(rng, depth - 1)}){count}"


def test_finite_key_patterns_are_read_as_their_strings():
    """``node_words`` (the keys of a pattern spelled out, emit/objects.py): against every string
    of up to 6 letters a, b, c that the pattern matches, anchored or not; None only where the
    language is infinite or past the limit."""
    from stencil.grammar.json.schema.core.patterns import node_words, pattern_node
    rng = random.Random(7)
    strings = [""] + ["".join(p) for n in range(1, 7) for p in itertools.product("abc", repeat=n)]
    finite = infinite = 0
    for _ in range(400):
        body = _random_pattern(rng, rng.randrange(1, 4))
        pattern = rng.choice([f"^(?:{body})$", body, f"^(?:{body})"])
        words = node_words(pattern_node(pattern), 64)
        matching = {s for s in strings if re.search(pattern, s)}
        if words is None:
            # unknown: infinite (a match anywhere, an unbounded count), or more than 64 strings
            infinite += 1
            assert len(matching) > 64 or any(len(s) == 6 for s in matching) or "*" in pattern or "+" in pattern \
                or not pattern.startswith("^") or not pattern.endswith("$"), pattern
            continue
        finite += 1
        assert len(words) <= 64 and all(re.search(pattern, w) for w in words), pattern
        assert {w for w in words if len(w) <= 6} == matching, pattern
    assert finite > 80 and infinite > 100
