"""Hostile or faulty input to the library API gets a clear error, cheaply: the exception names the
argument (or the JSON pointer) and says what is wrong, never a hang, a memory blow-up, a silent
misreading or nanobind's dump of a signature (review 2026-11-26, findings F5-F8)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import stencil


def small_tok():
    toks = [bytes([c]) for c in range(32, 127)] + [b"ab", b"<eos>"]
    return stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1])


@pytest.fixture(scope="module")
def tok():
    return small_tok()


@pytest.fixture(scope="module")
def compiler(tok):
    return stencil.GrammarCompiler(tok)


@pytest.fixture(scope="module")
def grammar(compiler):
    return compiler.compile_regex("[a-c]+x")


# -- F5, F6: deep and cyclic Python documents ---------------------------------------------------

_HUGE = textwrap.dedent("""
    import json, resource, sys, time
    import stencil
    toks = [bytes([c]) for c in range(32, 127)] + [b"<eos>"]
    compiler = stencil.GrammarCompiler(stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[len(toks) - 1]))
    deep = {"type": "integer"}
    for _ in range(100_000):
        deep = {"type": "object", "properties": {"a": deep}}
    cyclic = {"type": "object", "properties": {}}
    cyclic["properties"]["a"] = cyclic
    loop = []
    loop.append(loop)
    cases = {"deep": deep, "cyclic": cyclic, "enum": {"enum": loop},
             "deep-enum": {"enum": [deep]}, "registry": {"$ref": "urn:x"}}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for name, schema in cases.items():
        t = time.perf_counter()
        try:
            compiler.compile_json_schema(schema, registry={"urn:x": cyclic} if name == "registry" else None)
            out = ["compiled", ""]
        except Exception as e:
            out = [type(e).__name__, str(e)]
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        print(json.dumps([name, *out, time.perf_counter() - t, grown]), flush=True)
""")


@pytest.fixture(scope="module")
def huge_results():
    """Each hostile document compiled in one child process (a hang or a blow-up must not take
    the test run with it): {name: (error type, message, seconds, growth of peak RSS in MB)}."""
    p = subprocess.run([sys.executable, "-c", _HUGE], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return {r[0]: tuple(r[1:]) for r in map(json.loads, p.stdout.splitlines())}


@pytest.mark.parametrize("name,needle", [
    # refused at the first value past the limit, before any copy or walk of the whole document
    ("deep", r"nests more than 1000 levels deep \(at /properties/a/properties/a/.*\.\.\..*/properties/a/type\)"),
    ("cyclic", r"the value at /properties/a is the object at / again \(a cycle"),
    ("enum", r"the value at /enum/0 is the array at /enum again \(a cycle"),
    ("deep-enum", r"nests more than 1000 levels deep \(at /enum/0/properties/a/"),
    ("registry", r"JSON Schema 'urn:x' of the registry: the value at /properties/a is the object at / again"),
])
def test_deep_or_cyclic_documents_are_refused_at_once_with_little_memory(huge_results, name, needle):
    kind, message, seconds, grown_mb = huge_results[name]
    assert kind == "GrammarError"
    assert re.search(needle, message), message
    # before: 5.6 GB and 33 s (deep), 3.9 s (cyclic) to a MemoryError; a hang past 60 s (enum)
    assert seconds < 5, seconds
    assert grown_mb < 100, grown_mb


def test_shared_subschemas_are_no_cycle_and_are_walked_once():
    from stencil.grammar.json.schema.core.document import check_document
    s = {"type": "integer"}
    for _ in range(80):   # 2**80 paths through 80 dicts
        s = {"anyOf": [s, s], "not": {"allOf": [s]}}
    t = time.perf_counter()
    check_document(s, 1000, "JSON Schema")
    assert time.perf_counter() - t < 1
    with pytest.raises(stencil.GrammarError, match=r"nests more than 100 levels deep \(at /anyOf/0/"):
        check_document(s, 100, "JSON Schema")


def test_check_document_returns_the_deepest_level():
    from stencil.grammar.json.schema.core.document import check_document
    assert check_document(5, 10, "x") == 0
    assert check_document({"a": 1, "b": []}, 10, "x") == 1
    assert check_document({"a": [{"b": {}}], "c": 2}, 10, "x") == 3


def test_a_structural_tag_checks_a_schema_deeper_than_schemas_nest(compiler):
    # the tag's own check takes deeper documents; its schemas then get their own check
    deep: dict = {}
    for _ in range(1001):
        deep = {"not": deep}
    tag = {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": deep}}
    with pytest.raises(stencil.GrammarError, match=r"JSON Schema: the document nests more than 1000 levels"):
        compiler.compile_structural_tag(tag)


@pytest.mark.parametrize("schema,needle", [
    ({"type": "object", "properties": {b"x": {}}}, r"the key b'x' at /properties is not a str but bytes"),
    ({"enum": [{"a": [{1: 2}]}]}, r"the key 1 at /enum/0/a/0 is not a str but int"),
    ({"$defs": {("t",): {}}}, r"the key \('t',\) at /\$defs is not a str but tuple"),
])
def test_non_string_keys_are_named_with_their_pointer(compiler, schema, needle):
    with pytest.raises(stencil.GrammarError, match=needle):
        compiler.compile_json_schema(schema)


@pytest.mark.parametrize("schema,pointer", [
    ({"type": "string", "minLength": 10**5000}, "/minLength"),
    ({"enum": [1, {"a": [10**5000]}]}, "/enum/1/a/0"),
    ({"properties": {"n": {"type": "integer", "maximum": -(10**5000)}}}, "/properties/n/maximum"),
    ({"const": 10**5000}, "/const"),
])
def test_integers_python_cannot_print_are_named(compiler, schema, pointer):
    """Past 4,300 digits an int has no repr (a ValueError from deep inside, before)."""
    with pytest.raises(stencil.GrammarError, match=f"the integer at {pointer} has more digits than Python prints"):
        compiler.compile_json_schema(schema)


@pytest.mark.parametrize("key,kind", [("Length", "string"), ("Items", "array"), ("Properties", "object")])
def test_counts_past_what_a_grammar_repeats(compiler, key, kind):
    """A maximum past 2**32 - 2 bounds nothing an output can reach: no bound (maxLength 10**400 was a
    TypeError from the core's binding, 10**12 'invalid repetition bounds' without a place); a
    minimum past it is a GrammarError naming the keyword."""
    for big in (2**32 - 1, 10**12, 10**400):
        g = compiler.compile_json_schema({"type": kind, "max" + key: big})
        m = stencil.Matcher(g)
        text = {"string": '"' + "ab" * 40 + '"', "array": "[" + ",".join(["1"] * 40) + "]",
                "object": "{" + ",".join(f'"k{i}":1' for i in range(40)) + "}"}[kind]
        assert m.accept_string(text) and m.is_accepting()
        with pytest.raises(stencil.GrammarError, match=f"min{key} at /min{key}: .* is more than any output can hold"):
            compiler.compile_json_schema({"type": kind, "min" + key: big})
    if kind != "object":   # (objects count members one grammar state each, up to 20,000: a GrammarError past it)
        limit = 2**32 - 2   # the largest count kept, and kept with its minimum
        m = stencil.Matcher(compiler.compile_json_schema({"type": kind, "max" + key: limit, "min" + key: 2}))
        short, long = {"string": ('"a"', '"ab"'), "array": ("[1]", "[1,1]")}[kind]
        f = m.fork()
        assert not (f.accept_string(short) and f.is_accepting())
        assert m.accept_string(long) and m.is_accepting()


def test_cyclic_structural_tag_and_tool_parameters_are_refused(compiler):
    fmt = {"type": "sequence", "elements": []}
    fmt["elements"].append(fmt)
    with pytest.raises(stencil.GrammarError, match=r"structural tag: the value at \$\.format\.elements\[0\] is "
                                                   r"the object at \$\.format again \(a cycle"):
        compiler.compile_structural_tag({"type": "structural_tag", "format": fmt})
    params = {"type": "object", "properties": {}}
    params["properties"]["self"] = params
    with pytest.raises(stencil.GrammarError, match=r"tool 'f': JSON Schema: the value at /properties/self is"):
        compiler.compile_tool_calls([{"name": "f", "parameters": params}])


# -- F7: choices ----------------------------------------------------------------------------------

@pytest.mark.parametrize("choices,got", [("abc", "str"), (b"abc", "bytes"), (None, "NoneType"), (3, "int")])
def test_choices_must_be_a_list_of_strings(compiler, choices, got):
    with pytest.raises(TypeError, match=f"choices must be a list of strings, got {got}$"):
        compiler.compile_choice(choices)


def test_choices_in_any_iterable_still_work(compiler):
    g = compiler.compile_choice(c for c in ("yes", "no"))
    m = stencil.Matcher(g)
    assert m.accept_string("no") and m.is_accepting()


# -- F8: GrammarCompiler options ------------------------------------------------------------------

_OPTIONS = ["cache_size", "max_lexer_states", "lexer_fuel", "mask_cache_bytes", "lexer_memory_bytes", "max_threads"]


@pytest.mark.parametrize("option", _OPTIONS)
@pytest.mark.parametrize("value,error", [(-1, ValueError), (2**64, ValueError), (1.5, TypeError),
                                         ("8", TypeError), (None, TypeError), (True, TypeError)])
def test_numeric_compiler_options_are_checked_at_construction(tok, option, value, error):
    with pytest.raises(error, match=f"GrammarCompiler: {option} must be an int in \\["):
        stencil.GrammarCompiler(tok, **{option: value})


def test_numeric_compiler_options_take_numpy_integers(tok):
    c = stencil.GrammarCompiler(tok, cache_size=np.int64(1), lexer_fuel=np.uint32(10**6), max_threads=np.int8(1))
    c.compile_regex("a")
    c.compile_regex("b")   # cache_size=-1 failed here with KeyError: 'dictionary is empty'
    assert c.compile_async(c.compile_regex, "c").result() is not None


# -- F8: Lark -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,column,code", [('start: "\ud800"', 8, "D800"), ('start: "a"\n  | "x\udc80"i', 5, "DC80")])
def test_lark_string_with_a_lone_surrogate_says_so_where(compiler, text, column, code):
    # before: "the start rule 'start' can never complete (every alternative needs itself)"
    line = text.count("\n") + 1
    with pytest.raises(stencil.GrammarError, match=rf"line {line}, column {column}: the string .* holds a lone "
                                                   rf"surrogate U\+{code}, which cannot be encoded as UTF-8"):
        compiler.compile_lark(text)


@pytest.mark.parametrize("pattern,position,code", [("\ud800+", 0, "D800"), ("ab\udc80", 2, "DC80"), ("(x\udbff)?y\ud800", 2, "DBFF")])
def test_regex_with_a_lone_surrogate_says_so_where(compiler, pattern, position, code):
    # before (review N12): "the grammar's language is empty: rule 'start' can never complete"
    with pytest.raises(stencil.GrammarError, match=rf"^regex: the pattern holds a lone surrogate U\+{code} .* at "
                                                   rf"position {position}\n") as e:
        compiler.compile_regex(pattern)
    assert e.value.position == position


def test_regex_lone_surrogate_elsewhere_keeps_its_meaning(compiler):
    assert compiler.compile_regex("a|\ud800") is not None   # it matches nothing, the language is still {a}
    with pytest.raises(stencil.GrammarError, match="language is empty"):
        compiler.compile_regex("a^b")                        # empty for another reason: said as before


# -- F8: the probe list of review section 1 (each was nanobind's signature dump or an internal error)

def _ro(words):
    a = np.zeros((1, words), np.int32)
    a.flags.writeable = False
    return a


def _meta(words):
    torch = pytest.importorskip("torch")
    return torch.zeros((1, words), dtype=torch.int32, device="meta")


_BITMASKS = [  # (name, make(words), error, message)
    ("read-only", _ro, ValueError, r"^the bitmask is read-only"),
    ("big-endian", lambda w: np.zeros((1, w), ">i4"), TypeError, r"^the bitmask must be little-endian int32, got >i4"),
    ("list", lambda w: [[0] * w], TypeError, r"^the bitmask must be a C-contiguous int32 .*, got list$"),
    ("None", lambda w: None, TypeError, r"^the bitmask must be a C-contiguous int32 .*, got NoneType$"),
    ("meta", _meta, TypeError, r"^the bitmask must be in CPU memory .*, got a tensor on meta$"),
]

_TOKEN = r"an int in \[0, vocab_size\)"
_PROBES = [  # (name, call(m, g, V), error, message)
    *[(f"accept_token({n})", lambda m, g, V, v=v: m.accept_token(v), e, f"^token must be {_TOKEN}, got {w}$")
      for n, v, e, w in [("None", None, TypeError, "NoneType"), ("float", 1.0, TypeError, "float"),
                         ("str", "a", TypeError, "str"), ("2**64", 2**64, ValueError, str(2**64))]],
    *[(f"rollback({n})", lambda m, g, V, v=v: m.rollback(v), e, f"^n must be an int >= 0, got {w}$")
      for n, v, e, w in [("None", None, TypeError, "NoneType"), ("float", 1.0, TypeError, "float"),
                         ("str", "1", TypeError, "str"), ("2**64", 2**64, ValueError, str(2**64))]],
    *[(f"Matcher(max_rollback={n})", lambda m, g, V, v=v: stencil.Matcher(g, max_rollback=v), e,
       rf"^max_rollback must be an int >= -1 \(-1: unlimited\), got {w}$")
      for n, v, e, w in [("None", None, TypeError, "NoneType"), ("float", 1.0, TypeError, "float"),
                         ("str", "all", TypeError, "str"), ("2**64", 2**64, ValueError, str(2**64))]],
    ("Matcher(max_rollback=2**40)", lambda m, g, V: stencil.Matcher(g, max_rollback=2**40), ValueError,
     r"max_rollback must be -1 \(unlimited\) or a count in \[0, 2\*\*31\), got 1099511627776"),
    ("Matcher(None)", lambda m, g, V: stencil.Matcher(None), TypeError,
     r"^Matcher needs a stencil.CompiledGrammar \(GrammarCompiler.compile_\*\), got NoneType$"),
    ("accept_tokens([1, 2.0])", lambda m, g, V: m.accept_tokens([66, 2.0]), TypeError,
     rf"^tokens\[1\] must be {_TOKEN}, got float$"),
    ("accept_tokens(None)", lambda m, g, V: m.accept_tokens(None), TypeError,
     r"^tokens must be a list of token ids, got NoneType$"),
    ("validate_tokens([2**64])", lambda m, g, V: m.validate_tokens([2**64]), ValueError,
     rf"^tokens\[0\] must be {_TOKEN}, got {2**64}$"),
    ("accept_string(lone surrogate)", lambda m, g, V: m.accept_string("ab\udc80"), ValueError,
     r"^text holds a lone surrogate U\+DC80 at index 2, which cannot be encoded as UTF-8$"),
    ("accept_string(bytes)", lambda m, g, V: m.accept_string(b"a"), TypeError,
     r"^text must be a str \(accept_bytes takes bytes\), got bytes$"),
    ("accept_bytes(str)", lambda m, g, V: m.accept_bytes("a"), TypeError,
     r"^data must be bytes \(accept_string takes a str\), got str$"),
    ("fill index=1.0", lambda m, g, V: m.fill_next_token_bitmask(stencil.allocate_token_bitmask(2, V), 1.0),
     TypeError, r"^index must be an int \(a row of the bitmask\), got float$"),
    ("fill remaining_tokens=1.5", lambda m, g, V: m.fill_next_token_bitmask(stencil.allocate_token_bitmask(1, V),
                                                                            0, 1.5),
     TypeError, r"^remaining_tokens must be an int >= 0 \(or None for no budget\), got float$"),
    *[(f"fill bitmask {n}", lambda m, g, V, mk=mk: m.fill_next_token_bitmask(mk((V + 31) // 32), 0), e, w)
      for n, mk, e, w in _BITMASKS],
    *[(f"batch bitmask {n}", lambda m, g, V, mk=mk: stencil.fill_next_token_bitmasks([m], mk((V + 31) // 32)), e, w)
      for n, mk, e, w in _BITMASKS],
    ("read-only logits", lambda m, g, V: stencil.apply_token_bitmask_inplace(
        np.frombuffer(bytes(4 * V), np.float32)[None, :],   # a read-only view
        stencil.allocate_token_bitmask(1, V)), ValueError, r"^logits are read-only"),
    ("batch matchers=None", lambda m, g, V: stencil.fill_next_token_bitmasks(None, stencil.allocate_token_bitmask(1, V)),
     TypeError, r"^matchers must be a list of stencil.Matcher, got NoneType$"),
    ("batch indices=[None]", lambda m, g, V: stencil.fill_next_token_bitmasks(
        [m], stencil.allocate_token_bitmask(1, V), [None]), TypeError, r"^indices\[0\] must be an int, got NoneType$"),
    ("batch indices=[0.5]", lambda m, g, V: stencil.fill_next_token_bitmasks(
        [m], stencil.allocate_token_bitmask(1, V), [0.5]), TypeError, r"^indices\[0\] must be an int, got float$"),
    ("batch remaining_tokens=[1.5]", lambda m, g, V: stencil.fill_next_token_bitmasks(
        [m], stencil.allocate_token_bitmask(1, V), remaining_tokens=[1.5]), TypeError,
     r"^remaining_tokens\[0\] must be an int, got float$"),
    ("from_vocab(None)", lambda m, g, V: stencil.TokenizerInfo.from_vocab(None), TypeError,
     r"tokens must be a list of bytes \(one per token id\), got NoneType$"),
]


@pytest.mark.parametrize("case", range(len(_PROBES)), ids=[p[0] for p in _PROBES])
def test_probe_gets_an_error_naming_the_argument(tok, grammar, case):
    name, call, error, needle = _PROBES[case]
    m = stencil.Matcher(grammar)
    with pytest.raises(error, match=needle) as info:
        call(m, grammar, tok.vocab_size)
    assert "incompatible function arguments" not in str(info.value), name
    assert m.num_accepted_tokens == 0 and not m.is_terminated()   # a refused call changed nothing


def test_right_arguments_still_work_after_the_checks(tok, grammar):
    ids = {tok.token_bytes(i): i for i in range(tok.vocab_size)}
    m = stencil.Matcher(grammar, max_rollback=np.int64(-1))
    assert m.accept_token(np.int64(ids[b"a"])) and m.accept_tokens(np.array([ids[b"b"], ids[b"ab"]]))
    assert m.validate_tokens((ids[b"c"], ids[b"x"])) == 2
    m.rollback(np.int32(1))
    assert m.accept_string("cx") and m.is_accepting()
    assert stencil.Matcher(grammar).accept_bytes(b"abx")
    bm = stencil.allocate_token_bitmask(3, tok.vocab_size)
    m2 = stencil.Matcher(grammar)
    m2.fill_next_token_bitmask(bm, np.int64(2), remaining_tokens=np.int64(5))
    stencil.fill_next_token_bitmasks([m2], bm, indices=np.array([1]), remaining_tokens=[np.int64(3)])
    assert (bm[1] == bm[2]).all() and not (bm[1] == -1).all()
    with pytest.raises(ValueError, match="out of range"):   # the core's range check is unchanged
        m2.accept_token(tok.vocab_size)
