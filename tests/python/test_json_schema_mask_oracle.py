"""JSON Schema masks against an oracle that shares no code with stencil (issue 29, E3/E5; issue 40, T3).

The verdicts come from ``json_oracle.Oracle`` (``json``, ``jsonschema``, and its own model of the
white space and property order each option promises): it imports nothing of stencil. Each schema
is compiled under configurations that cover, pair by pair, ``property_order`` ("any",
"definition"), ``whitespace`` ("compact", "flexible" with ``max_whitespace_run=3``, an indentation
of 2) and two vocabularies: single bytes (ids 0-255, 256 EOS), and the bytes plus multi-byte tokens
(``MULTI``: tokens across a key and its colon, a value and its comma, runs of one character in
strings and numbers, literals, escapes, indentation, characters of two to four bytes beside
fragments that are no UTF-8 under the same lead byte). A scalar's configurations differ only in
the vocabulary (white space and key order change nothing at the top level of a string or number).
Two checks per schema and configuration:

- Completeness and EOS, exhaustively over a fixed universe of candidate texts (strings over small
  alphabets, numbers in many spellings, dates, small and nested arrays and objects, escapes) built
  by ``json.dumps`` and by hand, independent of the schema, laid out for the white space mode (each
  compact text, and a spaced or indented copy of it): walking the universe's trie by tokens (the
  multi-byte ones first, so that the nodes they reach are entered by them), every token that leads
  to a valid candidate must be allowed by the mask, and at the end of each candidate EOS must be
  allowed exactly when the oracle finds it valid.
- Soundness, by random walks that follow the masks: at every step each token's bit agrees with
  ``accept_token``, EOS is allowed exactly when the text so far is valid, never is the mask empty,
  and every allowed token keeps the text completable. A completion is *proved* by a witness: a
  valid text of the universe, or one the engine proposes (its shortest completion, read off budget
  masks; else a search over its masks that may add whole members) and the oracle alone judges, so
  a dead-end token (a prefix no valid document extends) cannot pass, whatever the engine proposes.
  This is the check that the shared mask cache's bug (maxLength 6 beside ``^\\d+\\.\\d+`` allowed a
  fifth digit after ``"9714``, fixed in 7f708ef) fails.

The engine bugs this oracle found keep their minimal reproducers in ``ENGINE_BUGS``, each a
regression test now that it is fixed, and the shapes around them are among the cases.
"""
from __future__ import annotations

import bisect
import functools
import itertools
import json
import random
from dataclasses import dataclass

import numpy as np
import pytest

import stencil
from json_oracle import Oracle, Undecided, indent_gaps, lex, relayout

EOS = 256
MAX_RUN = 3   # max_whitespace_run of the flexible configurations: walks reach it

# ---------------------------------------------------------------------------------------------
# Vocabularies: single bytes, and single bytes plus multi-byte tokens.

MULTI = (b'"a', b'a"', b'"b', b'":', b'":"', b'},', b',"', b'{"', b'["', b'"]', b'"}', b'"a":', b'"ab":',
         b'ab', b'aa', b'abc', b'ba', b'bb', b'12', b'11', b'00', b'99', b'1.', b'.5', b'.0', b'0.', b'e1',
         b'E1', b'e-', b'-1', b'-0', b'1,', b'1]', b'1}', b'],', b']]', b'[[', b']}', b'}}', b'true', b'null',
         b'false', b'fals', b'ue', b'\\u00', b'\\u006', b'"x"', b'x"', b'20', b'02', b'29', b'-02-', b'": ', b', ',
         b'{\n', b'[\n', b',\n', b'\n  ', b'\n    ', b'  ', b'   ', b'    ',
         # characters of two to four bytes under shared lead bytes, beside fragments that are no
         # UTF-8 (a surrogate, past U+10FFFF, overlong): sub-tries of a lead byte, mixed
         *(c.encode() for c in ("é", "è", "éé", "ü", "€", "→", "€€", "a€", "\ud7ff", "\U0010ffff", "\u0800")),
         b"\xed\xa0\x80", b"\xed\xa0", b"\xed\x9f", b"\xf4\x90\x80\x80", b"\xf4\x8f", b"\xe0\x80\x80", b"\xe0\xa0",
         b"\xc0\x80", b"\xc3\x28")


@dataclass(frozen=True)
class Vocab:
    name: str
    tokens: tuple   # bytes of each id, EOS's empty

    @functools.cached_property
    def info(self) -> stencil.TokenizerInfo:
        return stencil.TokenizerInfo.from_vocab([t or b"<eos>" for t in self.tokens], eos_token_ids=EOS)

    @property
    def size(self) -> int:
        return len(self.tokens)

    @functools.cached_property
    def multi(self) -> list[int]:
        """The ids of the multi-byte tokens, the longest first."""
        return sorted((i for i in range(self.size) if len(self.tokens[i]) > 1), key=lambda i: -len(self.tokens[i]))


@functools.cache
def vocab(name: str) -> Vocab:
    tokens = [bytes([i]) for i in range(256)] + [b""]
    if name == "multi":
        assert len(set(MULTI)) == len(MULTI) and all(len(t) > 1 for t in MULTI)
        tokens += MULTI
    return Vocab(name, tuple(tokens))


# ---------------------------------------------------------------------------------------------
# Configurations: the options' values, pair by pair (every value of one option beside every
# value of each other), not their whole product.


@dataclass(frozen=True)
class Config:
    property_order: str
    whitespace: object
    vocab: str

    @property
    def id(self) -> str:
        ws = self.whitespace if isinstance(self.whitespace, str) else f"indent{self.whitespace}"
        return f"{self.property_order}-{ws}-{self.vocab}"

    def options(self) -> dict:
        extra = {"max_whitespace_run": MAX_RUN} if self.whitespace == "flexible" else {}
        return {"whitespace": self.whitespace, "property_order": self.property_order, **extra}


CONFIGS = [Config("any", "compact", "bytes"), Config("definition", "compact", "multi"),
           Config("definition", "flexible", "bytes"), Config("any", "flexible", "multi"),
           Config("any", 2, "bytes"), Config("definition", 2, "multi")]

# ---------------------------------------------------------------------------------------------
# The candidate universe: fixed texts, built without looking at any schema.


def _strings(alphabet: str, longest: int) -> list[str]:
    return ["".join(p) for n in range(longest + 1) for p in itertools.product(alphabet, repeat=n)]


NUMBERS = ["-16", "-15", "-14", "-3", "-2.5", "-2", "-1", "-0", "0", "0.0", "-0.0", "0.5", "1", "1.0",
           "1.5", "1.50", "2", "2.5", "7", "7.0", "9.5", "10", "10.0", "12", "12.0", "14", "21", "119",
           "120", "121", "126", "1e1", "1E1", "5e-1", "10e-1", "1.2e1", "2.5e0", "100e-1", "0.5e1",
           "14e0", "-2.50", "-25e-1", "95e-1", "1.19e2", "0e5", "7e0", "0.25", "3", "5", "5.5", "7.5", "11",
           "20", "20.5", "21.0", "4.0", "4", "5.0", "75e-1", "6.5", "10.5"]
ESCAPED = ['"\\u0061"', '"\\u0061b"', '"a\\u0062"', '"\\u0062a"', '"\\u00311.9"', '"1\\u002e9"',
           '"\\/"', '"\\n"', '"\\\\"', '"\\u0078"', '"\\ud83d\\ude00"', '"é"', '"ab\\u0063"']
DATES = ["2024-02-29", "2023-02-29", "2000-02-29", "1900-02-29", "2024-13-01", "2024-04-31", "2024-04-30",
         "1999-12-31", "2024-00-10", "2024-01-00", "2024-1-01", "20240101", "0000-01-01", "0004-02-29",
         "2024-02-30", "9999-12-31", "2024-02-29x", "0000-02-29", "0100-02-29"]
ITEMS = ["1", "2", '"x"', "true", "1.0", "null", '"ab"', "0", "2.0"]
KEYS = ['"a"', '"b"', '"c"', '"ab"', '"ba"', '"\\u0061"']
VALUES = ["1", "0", "9", "true", '"x"', '"ab"', "null", "1.0", "12"]
# values to nest: objects of the keys above, arrays of arrays of booleans, recursive nodes
INNER = ["1", "2", '"x"', "null", "{}", '{"a":1}', '{"b":1}', '{"a":2,"b":{"a":0}}', '{"b":{"a":1},"a":2}',
         '{"a":1,"b":"x"}', "[]", "[true]", "[[true]]", "[[true,false],[]]", "[[],[false]]", '[["x"]]', "[[1]]"]


def base_universe() -> list[str]:
    texts = ["null", "true", "false", *NUMBERS, *ESCAPED, *(json.dumps(d) for d in DATES)]
    texts += [json.dumps(s) for s in _strings("19.", 7) + _strings("abc", 5) + ["x", "xy", "é", "aé"]]
    texts += ["[" + ",".join(p) + "]" for n in range(4) for p in itertools.product(ITEMS, repeat=n)]
    texts += ['[1,"x"]', '[1.0,"x"]', '["x",1]', "[[1]]", "[true,\"a\",\"b\"]", '[false,""]']
    members = [k + ":" + v for k in KEYS for v in VALUES]
    texts += ["{" + ",".join(p) + "}" for n in range(3) for p in itertools.product(members, repeat=n)]
    rng = random.Random(29)
    texts += ["{" + ",".join(rng.sample(members, 3)) + "}" for _ in range(300)]
    texts += ['{"a":null}', '{"a":1,"c":true}', '{"c":false,"a":1}', '{"a":1,"b":"xy"}', '{"b":"","a":0}',
              '{"a":1,"c":false}', '{"a":1,"c":true,"b":false}', '{"a":1,"c":false,"b":true}']
    for x in INNER:
        texts += ['{"a":%s}' % x, '{"b":%s}' % x, '{"c":%s}' % x, "[%s]" % x, "[%s,%s]" % (x, x),
                  '{"a":1,"b":%s}' % x, '{"b":%s,"a":1}' % x, '{"a":%s,"c":[]}' % x, '{"c":[[true]],"a":%s}' % x,
                  '{"a":{"b":1},"c":%s}' % x, '{"a":{"b":1},"ab":%s}' % x, '{"ab":%s,"a":{"b":2}}' % x]
    return texts


def spaced(text: str, rng: random.Random) -> str:
    """The text with runs of JSON white space put into a few of the places between its tokens
    (runs of MAX_RUN and MAX_RUN + 1 among them), now and then before or after the whole value."""
    tokens, _ = lex(text)
    gaps = [""] * (len(tokens) + 1)
    for i in rng.sample(range(1, len(tokens)), min(len(tokens) - 1, 2)):
        gaps[i] = "".join(rng.choice(" \t\n\r") for _ in range(rng.choice([1, 2, MAX_RUN, MAX_RUN + 1])))
    if rng.random() < 0.05:
        gaps[rng.choice([0, -1])] = " "
    return "".join(g + t for g, t in zip(gaps, tokens)) + gaps[-1]


@functools.cache
def universe(whitespace) -> list[bytes]:
    """The compact texts and, in the other modes, one spaced or indented copy of each."""
    texts = base_universe()
    if whitespace == "flexible":
        rng = random.Random(40)
        texts += [spaced(t, rng) for t in texts if len(lex(t)[0]) > 1]
    elif whitespace != "compact":
        texts += [relayout(t, whitespace) for t in texts]
    return sorted({t.encode() for t in texts})


# ---------------------------------------------------------------------------------------------
# The schemas: each with options for the compiler, the bytes random walks favour, and whether it
# is structured (an object or array somewhere, where white space and key order matter).

CASES = {
    # lengths beside patterns (intersections), in both string spellings
    "maxlen_pattern_plain": ({"type": "string", "maxLength": 6, "pattern": "^\\d+\\.\\d+"},
                             {"string_spelling": "plain"}, b'0123456789."a', False),
    "maxlen_pattern_any": ({"type": "string", "maxLength": 6, "pattern": "^\\d+\\.\\d+"}, {}, b'19."a\\u0', False),
    "minmax_pattern": ({"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[ab]+c?$"}, {},
                       b'abc"\\u06', False),
    "not_pattern": ({"type": "string", "maxLength": 5, "pattern": "^[ab]*$", "not": {"pattern": "ba"}},
                    {"string_spelling": "plain"}, b'ab"c', False),
    # unanchored counts: runs begun kept as alternatives (the least of them), and beside a length
    # (decided off the pattern's derivatives)
    "unanchored_count": ({"type": "string", "pattern": "[ab]{3}"}, {"string_spelling": "plain"}, b'abc"', False),
    "unanchored_count_maxlen": ({"type": "string", "pattern": "[ab]{3,4}", "maxLength": 5}, {}, b'ab"c\\u0', False),
    # an unanchored pattern beside a length whose minimum is past the pattern's shortest word:
    # plain tokens within the pattern's slack of the count taken whole, the longer ones walked
    "unanchored_exact_length": ({"type": "string", "pattern": "[ab]+", "minLength": 3, "maxLength": 3}, {},
                                b'abc"x\\u0', False),
    "unanchored_slack_plain": ({"type": "string", "pattern": "b[ab]", "minLength": 2, "maxLength": 4},
                               {"string_spelling": "plain"}, b'abc"x', False),
    # (and anchored ones, which plain text can kill: words counted by a pattern, a first letter)
    "anchored_words_min": ({"type": "string", "pattern": "^(?:a+ )*a+$", "minLength": 1},
                           {"string_spelling": "plain"}, b'ab "x', False),
    "anchored_head_length": ({"type": "string", "pattern": "^a[ab ]*$", "minLength": 2, "maxLength": 4}, {},
                             b'ab "x\\u0', False),
    "enum": ({"enum": ["ab", "abc", 12, 1.5, [1, "x"], {"a": None}, True, None]}, {},
             b'abc"12.5[],x{}:nultrue\\e0', True),
    "property_names": ({"type": "object", "propertyNames": {"pattern": "^[ab]{1,2}$"}, "maxProperties": 2,
                        "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9}}, {},
                       b'{}"ab:,0159', True),
    "required_closed": ({"type": "object", "properties": {"a": {"type": "integer"},
                                                          "b": {"type": "string", "maxLength": 2}},
                         "required": ["a"], "additionalProperties": False}, {}, b'{}"abxy:,0129', True),
    # (the keys from an enum: a search for a completion over free keys branches on every byte)
    "required_open": ({"type": "object", "properties": {"a": {"const": 1}}, "required": ["a", "c"],
                       "propertyNames": {"enum": ["a", "b", "c"]}, "additionalProperties": {"type": "boolean"}},
                      {}, b'{}"abc:,1truefals\\06', True),
    "number_bounds": ({"type": "number", "minimum": -2.5, "exclusiveMaximum": 10, "multipleOf": 0.5}, {},
                      b"-0123456789.5eE", False),
    "integer_multiple": ({"type": "integer", "minimum": -15, "maximum": 120, "multipleOf": 7}, {},
                         b"-0123456789.eE", False),
    "array_unique_enum": ({"type": "array", "items": {"enum": [1, 2, "x"]}, "uniqueItems": True,
                           "minItems": 2, "maxItems": 3}, {}, b'[],12"x.0', True),
    "array_unique_int": ({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2},
                          "uniqueItems": True, "maxItems": 3}, {}, b"[],0123.e-", True),
    "array_prefix": ({"type": "array", "prefixItems": [{"type": "boolean"}],
                      "items": {"type": "string", "maxLength": 1}, "minItems": 1, "maxItems": 3}, {},
                     b'[],"abtruefals', True),
    # oneOf over overlapping numbers: the integers 5..10 are in both branches (so 7 and 7.0 are
    # not valid, 7.5 is)
    "one_of_numbers": ({"oneOf": [{"type": "integer", "minimum": 0, "maximum": 10},
                                  {"type": "number", "minimum": 5, "maximum": 20}]}, {}, b"-0123457.5eE", False),
    # complements of integer and of multipleOf: an integral value in any spelling (1.5e1 is 15) is no
    # fraction; beside multipleOf (not: included) a non-zero number has no exponent
    "not_integer_range": ({"type": "number", "minimum": 5, "not": {"type": "integer", "maximum": 10}}, {},
                          b"-0123457.5eE", False),
    "not_integer": ({"type": "number", "maximum": 14, "not": {"type": "integer"}}, {}, b"-012345.eE", False),
    "not_multiple": ({"type": "number", "exclusiveMaximum": 20, "not": {"multipleOf": 3}}, {}, b"-01235.eE",
                     False),
    "any_of_types": ({"anyOf": [{"type": "object", "properties": {"a": {"type": "integer"},
                                                                  "b": {"type": "string", "maxLength": 2}},
                                 "required": ["a"], "additionalProperties": False},
                                {"type": "array", "items": {"type": "string", "maxLength": 2}, "maxItems": 2}]},
                     {}, b'{}[]"ab:,0129x', True),
    "ref_tree": ({"$defs": {"node": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0,
                                                                             "maximum": 9},
                                                                       "b": {"$ref": "#/$defs/node"}},
                                     "required": ["a"], "additionalProperties": False}},
                  "$ref": "#/$defs/node"}, {}, b'{}"ab:,0129', True),
    # a recursive root: under an indentation each depth has its rules, up to max_depth
    "ref_lists": ({"$defs": {"l": {"type": "array", "items": {"anyOf": [{"type": "boolean"}, {"$ref": "#/$defs/l"}]},
                                   "maxItems": 2}}, "$ref": "#/$defs/l"}, {}, b"[],truefals", True),
    "date": ({"type": "string", "format": "date"}, {"string_spelling": "plain"}, b'"0123456789-', False),
    # a length beside a format's own (a host name's 253 characters): the tighter count heads the
    # text, the looser one is implied
    "hostname_max_length": ({"type": "string", "format": "hostname", "maxLength": 4}, {"string_spelling": "plain"},
                            b'"a1.-', False),
    # a key matching both patterns ("ab") needs an integer that is a string: no such member
    "pattern_properties": ({"type": "object", "patternProperties": {"^a": {"type": "integer"},
                                                                    "b$": {"type": "string", "maxLength": 1}},
                            "additionalProperties": False, "maxProperties": 2}, {}, b'{}"abc:,01x', True),
    # a member count to reach in any order (the member list counts it: an indented } and the budget's
    # shortest completion come only after enough members)
    "min_properties": ({"type": "object", "minProperties": 2, "maxProperties": 3,
                        "propertyNames": {"enum": ["a", "b", "c"]}, "additionalProperties": {"type": "integer"}},
                       {}, b'{}"abc:,019', True),
    # a key a `not` demands (some key is "a"; beside the required "b"), where maxProperties leaves
    # room for the demanded keys alone: any other key first is a dead end
    "demanded_key": ({"type": "object", "not": {"propertyNames": {"not": {"const": "a"}}}, "maxProperties": 1,
                      "additionalProperties": {"type": "integer"}}, {}, b'{}"abc:,01', True),
    "demanded_key_required": ({"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"],
                               "not": {"patternProperties": {"^a": False}}, "maxProperties": 2,
                               "additionalProperties": {"type": "integer"}}, {}, b'{}"abc:,01', True),
    # objects that share key names under other required names and member bounds: a next_key
    # check's room counts its own object's required names (one count per object and text)
    "shared_key_names": ({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
              "required": ["a"], "additionalProperties": False},
        "b": {"type": "integer"}}, "required": ["b"], "maxProperties": 2,
        "additionalProperties": {"type": "integer"}}, {}, b'{}"abc:,01', True),
    # two objects at one place under other required names: their checks read one member list
    "any_of_required": ({"anyOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}, "d": {"type": "integer"}}, "required": ["a"],
         "additionalProperties": False},
        {"type": "object", "properties": {"a": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["c"],
         "maxProperties": 2, "additionalProperties": {"type": "integer"}}]}, {}, b'{}"abcd:,01', True),
    "nested": ({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"],
              "additionalProperties": False},
        "c": {"type": "array", "items": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2},
              "maxItems": 2}}, "minProperties": 1}, {}, b'{}[]"abc:,12truefals', True),
}


def case_params(test: str) -> list:
    """(case, configuration) pairs: a structured case under every configuration, a scalar one
    under the compact ones (one per vocabulary)."""
    out = []
    for name, (_, _, _, structured) in CASES.items():
        for config in CONFIGS:
            if not structured and config.whitespace != "compact":
                continue
            out.append(pytest.param(name, config, id=f"{name}-{config.id}"))
    return out


@dataclass
class Setup:
    """A case under a configuration: the oracle, the universe of its white space, the vocabulary."""
    name: str
    config: Config

    def __post_init__(self):
        schema, options, self.alphabet, _ = CASES[self.name]
        self.options = {**self.config.options(), **options}
        self.oracle = Oracle(schema, plain_strings=options.get("string_spelling") == "plain",
                             whitespace=self.config.whitespace, property_order=self.config.property_order,
                             max_run=MAX_RUN)
        self.universe = universe(self.config.whitespace)
        self.vocab = vocab(self.config.vocab)
        self.grammar = stencil.GrammarCompiler(self.vocab.info).compile_json_schema(schema, **self.options)
        self.bm = stencil.allocate_token_bitmask(1, self.vocab.size)
        self.undecided = 0   # witnesses the oracle could not judge (judge)

    @functools.cached_property
    def valid_texts(self) -> list[bytes]:
        return [t for t in self.universe if self.oracle(t)]   # sorted, as the universe

    def known_completion(self, prefix: bytes) -> bytes | None:
        """A valid text of the universe that starts with ``prefix`` (its tail), or None."""
        i = bisect.bisect_left(self.valid_texts, prefix)
        if i < len(self.valid_texts) and self.valid_texts[i].startswith(prefix):
            return self.valid_texts[i][len(prefix):]
        return None

    def mask(self, m: stencil.Matcher, remaining: int | None = None) -> np.ndarray:
        m.fill_next_token_bitmask(self.bm, 0, remaining_tokens=remaining)
        return np.unpackbits(self.bm[0].view(np.uint8), bitorder="little")[:self.vocab.size].astype(bool)


# ---------------------------------------------------------------------------------------------
# The oracle's own layout against json.dumps's.


def test_oracle_layouts_are_json_dumps_layouts():
    """The indented layout the oracle demands is json.dumps's, and the spaced copies of the
    universe break the flexible mode's rules in the ways the tests need (runs over the bound, white
    space around the value) as well as keep them."""
    checked = 0
    for t in base_universe():
        try:
            value = json.loads(t)
        except ValueError:
            continue
        if json.dumps(value, separators=(",", ":"), ensure_ascii=False) == t:
            for n in (0, 2, 3):
                assert relayout(t, n) == json.dumps(value, indent=n, ensure_ascii=False), (t, n)
            checked += 1
    assert checked > 2000
    tokens, gaps = lex('{"a" :\t[1,  2 ]}')
    assert tokens == ["{", '"a"', ":", "[", "1", ",", "2", "]", "}"] and gaps == ["", "", " ", "\t", "", "", "  ", " ",
                                                                              "", ""]
    assert indent_gaps(["[", "]"], 2) == ["", "", ""]
    flexible = Oracle({}, whitespace="flexible", max_run=MAX_RUN)
    assert flexible(b'[1,' + b" " * MAX_RUN + b'2]') and not flexible(b'[1,' + b" " * (MAX_RUN + 1) + b'2]')
    assert not flexible(b" 1") and not flexible(b"1\n") and not flexible(b"- 1") and flexible(b'{ "a"\r:\t1 }')
    runs = [len(g) for t in universe("flexible") for g in lex(t.decode())[1]]
    assert runs.count(MAX_RUN) > 100 and runs.count(MAX_RUN + 1) > 100


def test_oracle_property_order():
    schema = CASES["nested"][0]
    definition = Oracle(schema, property_order="definition")
    assert definition(b'{"a":{"b":1},"c":[],"ab":2,"b":3}') and definition(b'{"a":{"b":1},"b":3,"ab":2}')
    assert not definition(b'{"c":[],"a":{"b":1}}') and not definition(b'{"b":3,"a":{"b":1}}')
    assert Oracle(schema)(b'{"c":[],"a":{"b":1}}')
    required = Oracle(CASES["required_open"][0], property_order="definition")
    assert required(b'{"a":1,"c":true,"b":false}') and not required(b'{"a":1,"b":false,"c":true}')
    tree = Oracle(CASES["ref_tree"][0], property_order="definition")
    assert tree(b'{"a":1,"b":{"a":2}}') and not tree(b'{"a":1,"b":{"b":{"a":1},"a":2}}')


def test_oracle_dates():
    date = Oracle(CASES["date"][0])
    # (RFC 3339, Appendix C: 0 is divisible by 400, 100 is not)
    assert [t for t in DATES if date(json.dumps(t).encode())] == [
        "2024-02-29", "2000-02-29", "2024-04-30", "1999-12-31", "0000-01-01", "0004-02-29", "9999-12-31",
        "0000-02-29"]


def _engine_accepts(grammar, text: bytes) -> bool:
    m = stencil.Matcher(grammar)
    return all(m.accept_token(b) for b in text) and m.is_accepting()


def _dead_end_after(grammar, text: bytes) -> bool:
    """Whether the engine accepts text, after which its mask allows nothing (not even EOS)."""
    m = stencil.Matcher(grammar)
    bm = stencil.allocate_token_bitmask(1, EOS + 1)
    if not all(m.accept_token(b) for b in text):
        return False
    m.fill_next_token_bitmask(bm, 0)
    return not bm.any()


# Minimal reproducers of the engine bugs found by this file's oracle, kept as regression tests
# now that each is fixed (the last field says what the engine did): the engine's verdict on a
# text must be the oracle's, and no text it takes may leave it with an empty mask.
ENGINE_BUGS = {
    # found beside one_of_numbers: 1.5e1 is 15, an integer, as README says ("integers by value")
    "not_integer": ({"not": {"type": "integer"}}, {}, b"1.5e1", "not integer: 1.5e1 (15) accepted"),
    "not_integer_range": ({"type": "number", "minimum": 5, "not": {"type": "integer", "maximum": 10}}, {},
                          b"1.25e1", "not over an integer range: 1.25e1 (12.5) refused"),
    "recursive_ref_indent": ({"type": "array", "items": {"$ref": "#"}}, {"whitespace": 2}, b"[\n  []\n]",
                             "compile_json_schema: GrammarError \"rule 'value#..' is used but has no definition\""),
    "indent_required_key": ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                            {"whitespace": 2, "property_order": "any"}, b'{\n  "b": 1\n',
                            "after '{\\n  \"b\": 1' the newline is allowed, then nothing: a dead end"),
    # the same dead end under minProperties and in a nested object (after the newline's spaces)
    "indent_min_properties": ({"type": "object", "minProperties": 2}, {"whitespace": 2, "property_order": "any"},
                              b'{\n  "b": 1\n', "the newline before } allowed after one member of two"),
    "indent_nested_required": ({"type": "object", "properties": {"x": {"type": "object", "required": ["a"]}}},
                               {"whitespace": 2, "property_order": "any"}, b'{\n  "x": {\n    "b": 1\n  ',
                               "the inner object's closing newline allowed without its required key"),
    # found by benchmarks.dead_ends (MaskBench's Handwritten---pnmp2, ---allOfPProp8): a key the
    # object does not need where maxProperties leaves room for the one a `not` demands
    "not_pattern_key": ({"type": "object", "not": {"patternProperties": {"^c": False}}, "maxProperties": 1},
                        {"property_order": "any"}, b'{"x":1' + b" " * 32,
                        "'{\"x\":1' allowed (then neither } nor ,): the object must hold a key starting with c"),
    "not_property_names_key": ({"not": {"propertyNames": {"not": {"const": "a"}}}, "maxProperties": 1},
                               {"property_order": "any", "whitespace": "compact"}, b'{"x":true',
                               "'{\"x\":true' allowed, then an empty mask: the object must hold the key a"),
    # found by test_json_schema_number_algebra beside not_integer: the complement of a multipleOf
    # was taken among all numbers, whose exponent forms the regex forms leave out
    "not_multiple_exponent": ({"not": {"multipleOf": 3}}, {}, b"3e0", "not multipleOf 3: 3e0 (3) accepted"),
}


@pytest.mark.parametrize("bug", list(ENGINE_BUGS))
def test_engine_bugs_found_by_the_oracle(bug):
    schema, options, text, _ = ENGINE_BUGS[bug]
    grammar = stencil.GrammarCompiler(vocab("bytes").info).compile_json_schema(schema, **options)
    oracle = Oracle(schema, whitespace=options.get("whitespace", "flexible"), max_run=32,
                    property_order=options.get("property_order", "definition"))
    assert _engine_accepts(grammar, text) == oracle(text) and not _dead_end_after(grammar, text)


# ---------------------------------------------------------------------------------------------
# Completeness and EOS over the universe.


class Node:
    __slots__ = ("kids", "text", "valid")

    def __init__(self):
        self.kids: dict = {}
        self.text: bytes | None = None
        self.valid = False   # some valid text ends here or below


def _trie(texts: list[bytes], verdict: dict) -> Node:
    root = Node()
    for t in texts:
        node = root
        node.valid |= verdict[t]
        for b in t:
            node = node.kids.setdefault(b, Node())
            node.valid |= verdict[t]
        node.text = t
    return root


def _below(node: Node, data: bytes) -> Node | None:
    for b in data:
        node = node.kids.get(b)
        if node is None:
            return None
    return node


@pytest.mark.parametrize("name,config", case_params("completeness"))
def test_masks_allow_every_valid_candidate_and_eos_exactly_at_valid_ones(name, config):
    s = Setup(name, config)
    verdict = {t: s.oracle(t) for t in s.universe}
    m = stencil.Matcher(s.grammar, max_rollback=-1)
    seen = {"valid": 0, "ends": 0, "refused": 0, "multi": 0}
    entered: set = set()
    tokens = s.vocab.tokens

    def visit(node: Node, prefix: bytes) -> None:
        mask = s.mask(m)
        if node.text is not None:
            seen["ends"] += 1
            seen["valid"] += verdict[node.text]
            assert mask[EOS] == verdict[node.text], (name, node.text, "EOS")
        steps = [(t, _below(node, tokens[t])) for t in s.vocab.multi] + list(node.kids.items())
        for t, child in steps:
            if child is None:
                continue
            if not mask[t]:
                seen["refused"] += 1
                assert not child.valid, (name, prefix + tokens[t], "refused, but a valid text starts so")
                continue
            if id(child) in entered:
                continue
            entered.add(id(child))
            seen["multi"] += len(tokens[t]) > 1
            assert m.accept_token(t), (name, prefix, tokens[t])
            visit(child, prefix + tokens[t])
            m.rollback(1)

    visit(_trie(s.universe, verdict), b"")
    assert seen["valid"] >= 5 and seen["refused"] >= 5, (name, seen)
    assert config.vocab == "bytes" or seen["multi"] >= 5, seen


# ---------------------------------------------------------------------------------------------
# Soundness by random walks: no allowed token without a witness the oracle accepts.


def judge(s: Setup, data: bytes) -> bool:
    """The oracle's verdict on a witness; one with a number the oracle cannot compare (an
    exponent past Decimal's) is taken, and counted (``Setup.undecided``)."""
    try:
        return s.oracle(data)
    except Undecided:
        s.undecided += 1
        return True


# members a completion may have to add (required keys in any order are not in the engine's bound,
# README "Limits": its shortest completion may lack them), after a comma and a layout of each
# white space mode, nesting 1 to 3
MEMBERS = ['"a":1', '"a":{"b":1}', '"c":true', '"a":1,"c":true']


def member_moves(whitespace) -> list[bytes]:
    if whitespace in ("compact", "flexible"):
        return [("," + m).encode() for m in MEMBERS]
    out = []
    for m in MEMBERS:
        for depth in (1, 2, 3):
            inner = relayout("{" + m + "}", whitespace).replace("\n", "\n" + " " * (whitespace * (depth - 1)))
            out.append("," + inner[1:inner.rindex("\n")])
    return [m.encode() for m in out]


def propose(m: stencil.Matcher, s: Setup, text: bytes) -> bytes | None:
    """A completion of m's text that the oracle finds valid, or None: a valid text of the universe
    that extends it; else the engine proposes and the oracle judges: the engine's shortest
    completion (the first token of its budget mask at each step), then depth-first searches over
    the plain masks, under longer and longer caps, whose moves are, in this order, whole members (``member_moves``), the tokens
    of the engine's budget mask at its bound, and single bytes (those of the case, the lowest
    allowed one where none of them is)."""
    tail = s.known_completion(text)
    if tail is not None:
        return tail
    tail = _shortest(m, s)
    if tail is not None and judge(s, text + tail):
        return tail
    f = m.fork()
    # the bytes of the case (inside a string all 200-odd bytes branch), and those of indentation
    order = list(dict.fromkeys([*b'"]}', *s.alphabet, *(b"\n " if s.config.whitespace not in
                                                          ("compact", "flexible") else b"")]))
    members = member_moves(s.config.whitespace)
    nodes = [0]

    def search(path: bytes, longest: int) -> bytes | None:
        if f.is_accepting() and judge(s, text + path):
            return path
        nodes[0] -= 1
        if len(path) >= longest or nodes[0] <= 0:
            return None
        mask = s.mask(f)
        k = f.min_completion_tokens()
        cheapest = [s.vocab.tokens[t] for t in np.nonzero(s.mask(f, k))[0] if t != EOS] if k else []
        moves = [mv for mv in members if mask[mv[0]]] + cheapest
        moves += [bytes([b]) for b in order if mask[b]] or [bytes([b]) for b in np.nonzero(mask[:EOS])[0][:1]]
        for mv in dict.fromkeys(moves):
            taken = 0
            while taken < len(mv) and f.accept_token(mv[taken]):
                taken += 1
            found = search(path + mv, longest) if taken == len(mv) else None
            f.rollback(taken)
            if found is not None:
                return found
        return None

    # depth first, under longer and longer caps (each with 400 nodes): a short completion beside a
    # long trap is found
    for longest in (8, 16, 32, 64, 96):
        nodes[0] = 400
        found = search(b"", longest)
        if found is not None:
            return found
    return None


def _shortest(m: stencil.Matcher, s: Setup) -> bytes | None:
    """The engine's shortest completion: the first token of its budget mask at its bound, while
    each token brings the bound one nearer (where a check the bound does not see refuses the end,
    it does not: None)."""
    f = m.fork()
    out = bytearray()
    k = f.min_completion_tokens()
    while not f.is_accepting():
        ids = [t for t in np.nonzero(s.mask(f, k))[0] if t != EOS] if k else []
        if not ids:
            return None
        assert f.accept_token(int(ids[0]))
        out += s.vocab.tokens[ids[0]]
        after = f.min_completion_tokens()
        if after is None or after >= k:
            return None
        k = after
    return bytes(out)


def check_step(m, s: Setup, text: bytes, rng, stats) -> np.ndarray:
    mask = s.mask(m)
    for t in range(s.vocab.size):
        if t == EOS:
            continue
        ok = m.accept_token(t)
        assert ok == mask[t], (text, s.vocab.tokens[t], "accept says", ok)
        if ok:
            m.rollback(1)
    try:
        is_valid = s.oracle(text)
    except Undecided:   # (the walk ends here)
        stats["undecided"] += 1
        return mask
    assert mask[EOS] == is_valid, (text, "EOS allowed" if mask[EOS] else "EOS refused")
    assert m.is_accepting() == mask[EOS], text
    assert mask.any(), (text, "empty mask: a dead end")
    ids = [int(t) for t in np.nonzero(mask)[0] if t != EOS]
    # every allowed token is proved completable: the favoured ones (in the first configuration all
    # of them, in the others a sample of 8) and a sample of 4 of the rest
    probe = [t for t in ids if t in stats["favoured"]]
    if s.config != CONFIGS[0]:
        probe = rng.sample(probe, min(8, len(probe)))
    rest = [t for t in ids if t not in stats["favoured"]]
    probe += rng.sample(rest, min(4, len(rest)))
    for t in probe:
        assert m.accept_token(t)
        tail = propose(m, s, text + s.vocab.tokens[t])
        m.rollback(1)
        assert tail is not None, (text, s.vocab.tokens[t], "allowed, but no completion valid for the oracle")
        stats["witnesses"] += 1
    return mask


STEPS = 24


@pytest.mark.parametrize("name,config", case_params("walks"))
def test_random_walks_never_allow_a_dead_end(name, config):
    s = Setup(name, config)
    walks = 10 if config == CONFIGS[0] else 4
    rng = random.Random(f"{name}-{config.id}")
    favoured = {t for t in range(s.vocab.size) if t != EOS and set(s.vocab.tokens[t]) <= set(s.alphabet)}
    stats = {"name": name, "favoured": favoured, "witnesses": 0, "undecided": 0, "steps": 0, "ended": 0}
    for _ in range(walks):
        m = stencil.Matcher(s.grammar, max_rollback=-1)
        text = b""
        for _ in range(STEPS):
            undecided = stats["undecided"]
            mask = check_step(m, s, text, rng, stats)
            stats["steps"] += 1
            ids = [int(t) for t in np.nonzero(mask)[0] if t != EOS]
            if not ids or (mask[EOS] and rng.random() < 0.15) or stats["undecided"] > undecided:
                stats["ended"] += 1
                break
            liked = [t for t in ids if t in favoured]
            t = rng.choice(liked if liked and rng.random() < 0.9 else ids)
            assert m.accept_token(t)
            text += s.vocab.tokens[t]
    assert stats["undecided"] <= 2 and s.undecided <= stats["witnesses"] // 20, (stats, s.undecided)
    assert stats["steps"] >= walks * 3 and stats["witnesses"] >= stats["steps"], stats
