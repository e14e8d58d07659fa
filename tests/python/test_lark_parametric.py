"""Parametric Lark rules (llguidance's dialect, its docs/parametric.md): a rule carrying a 64-bit
parameter, ``%if`` conditions on it and the bit operations, expanded into ordinary rules.

Languages are checked with the DeepSeek tokenizer through a Matcher; for finite languages every
mask along the way is compared with an oracle that knows the language as a plain set of strings
(a token is allowed iff the text so far plus its bytes is a prefix of some string of the set)."""
from __future__ import annotations

import itertools
import random
import time

import numpy as np
import pytest

import stencil
import oracles as O
from grammar_oracle import accepts, encode_segments
from stencil.bitmask import bitmask_to_bool
from stencil.grammar.ebnf.lark import lark_grammar, parametric


def check(env, grammar: str, good, bad):
    compiled = env[1].compile_lark(grammar)
    for s in good:
        assert accepts(env, compiled, s), f"rejected valid {s!r}"
    for s in bad:
        assert not accepts(env, compiled, s), f"accepted invalid {s!r}"
    return compiled


# --- languages ----------------------------------------------------------------------------------

COMPASS = """
start   : "<" dirs::0x0 ">"
dirs::_ : ""                    %if is_ones([0:4])
        | "N" dirs::set_bit(0)  %if bit_clear(0)
        | "E" dirs::set_bit(1)  %if bit_clear(1)
        | "S" dirs::set_bit(2)  %if bit_clear(2)
        | "W" dirs::set_bit(3)  %if bit_clear(3)
"""


def test_permutation_each_item_exactly_once(env):
    perms = ["<" + "".join(p) + ">" for p in itertools.permutations("NESW")]
    bad = ["<>", "<NES>", "<NESWN>", "<NNSW>", "<WSEW>", "<NESWX>", "NESW"]
    check(env, COMPASS, perms, bad)


def test_permutation_of_five_words(env):
    grammar = """
    start   : seat::0
    seat::_ : ""                        %if is_ones([0:5])
            | "ann " seat::set_bit(0)   %if bit_clear(0)
            | "bob " seat::set_bit(1)   %if bit_clear(1)
            | "cyd " seat::set_bit(2)   %if bit_clear(2)
            | "dee " seat::set_bit(3)   %if bit_clear(3)
            | "eve " seat::set_bit(4)   %if bit_clear(4)
    """
    names = ["ann ", "bob ", "cyd ", "dee ", "eve "]
    rng = random.Random(3)
    good = ["".join(rng.sample(names, 5)) for _ in range(12)]
    bad = ["ann bob cyd dee ", "ann bob cyd dee eve ann ", "bob bob cyd dee eve ", ""]
    check(env, grammar, good, bad)


# JSON-like object whose four keys may each appear at most once, in any order. `more::_` offers a
# comma only while a key is left: member::0xf has no alternative and is dropped with it.
KEYS = r"""
start       : "{" [member::0] "}"
member::_   : "\"a\":1" more::set_bit(0)       %if bit_clear(0)
            | "\"b\":true" more::set_bit(1)    %if bit_clear(1)
            | "\"c\":null" more::set_bit(2)    %if bit_clear(2)
            | "\"d\":\"s\"" more::set_bit(3)   %if bit_clear(3)
more::_     : "" | "," member::_
"""
MEMBERS = ['"a":1', '"b":true', '"c":null', '"d":"s"']


def keys_language() -> set:
    out = set()
    for k in range(len(MEMBERS) + 1):
        for p in itertools.permutations(MEMBERS, k):
            out.add("{" + ",".join(p) + "}")
    return out


def test_keys_at_most_once_any_order(env):
    lang = keys_language()
    assert len(lang) == 65
    bad = ['{"a":1,"a":1}', '{"b":true,"c":null,"b":true}', '{"a":1,}', '{,"a":1}',
           '{"a":1,"b":true,"c":null,"d":"s","a":1}', '{"e":2}']
    check(env, KEYS, sorted(lang), bad)


def _oracle_mask(prefixes: set, lang: set, text: bytes, vocab: O.Vocab) -> np.ndarray:
    want = np.zeros(vocab.vocab_size, dtype=bool)
    for t in vocab.normal:
        want[t] = text + vocab.token_bytes[t] in prefixes
    if text in lang:
        for e in vocab.eos:
            want[e] = True
    return want


def test_keys_masks_match_the_set_oracle(env):
    """Every mask along tokenized strings of the language equals the mask the set of strings
    gives; each step also takes a token the oracle refuses and checks that it is refused."""
    entry, compiler, bitmask = env
    vocab = O.Vocab.from_info(entry.info)
    lang = {s.encode() for s in keys_language()}
    prefixes = {s[:i] for s in lang for i in range(len(s) + 1)}
    compiled = compiler.compile_lark(KEYS)
    rng = random.Random(11)
    steps = 0
    for s in rng.sample(sorted(lang), 8):
        m = stencil.Matcher(compiled)
        done = b""
        for t in encode_segments(entry, [s.decode()]):
            m.fill_next_token_bitmask(bitmask, 0)
            got = bitmask_to_bool(bitmask, vocab.vocab_size)[0]
            want = _oracle_mask(prefixes, lang, done, vocab)
            diff = np.nonzero(got != want)[0]
            assert not len(diff), f"after {done!r}: mask differs on {[vocab.token_bytes[i] for i in diff[:8]]}"
            refused = int(rng.choice(np.nonzero(~want)[0]))
            assert not m.accept_token(refused)
            assert m.accept_token(t)
            done += vocab.token_bytes[t]
            steps += 1
        assert m.is_accepting()
    assert steps > 20


def test_counted_conditions(env):
    """x at most 3 times; y only after some x, at most 3 times; the end only with exactly two
    x or with at least two bits set in the y count (3 y). Checked against a direct count."""
    grammar = """
    start  : lst::0
    lst::_ : "x" lst::incr([0:2])  %if lt([0:2], 3)
           | "y" lst::incr([2:4])  %if and(ge([0:2], 1), not(is_ones([2:4])))
           | ""                    %if or(eq([0:2], 2), bit_count_ge([2:4], 2))
    """

    def valid(s: str) -> bool:
        xs = ys = 0
        for c in s:
            if c == "x" and xs < 3:
                xs += 1
            elif c == "y" and xs >= 1 and ys < 3:
                ys += 1
            else:
                return False
        return xs == 2 or ys == 3
    strings = ["".join(p) for n in range(8) for p in itertools.product("xy", repeat=n)]
    good = [s for s in strings if valid(s)]
    bad = [s for s in strings if not valid(s)]
    assert len(good) > 10 and len(bad) > 100
    check(env, grammar, good, bad[::3])


def test_at_least_once_each_with_repeats(env):
    grammar = """
    start   : cov::0x0
    cov::_  : ""                     %if is_ones([0:3])
            | "p" cov::set_bit(0)
            | "q" cov::set_bit(1)
            | "r" cov::set_bit(2)
    """
    check(env, grammar, ["pqr", "rqp", "ppqqrr", "qrqrqrp", "pppppppqr"], ["", "pq", "ppppp", "qrqrq"])


def test_saturating_incr_decr_and_masks(env):
    """A counter over bits [4:6] saturates at 3, so any number of "u" is fine; "d" lowers it
    (saturating at 0) and "!" needs it at 2 exactly. clear_bit / bit_and / bit_or go through."""
    grammar = """
    start  : c::0x10
    c::_   : "u" c::incr([4:6])
           | "d" c::decr([4:6])
           | "!" fin::bit_or(0x100)         %if eq([4:6], 2)
    fin::_ : "." fin::clear_bit(8)          %if bit_set(8)
           | "#" fin::bit_and(0xff)         %if and(bit_set(8), ne([4:6], 3))
           | ""                             %if bit_clear(8)
    """
    good = ["u!.", "uuuuuud!.", "ddduu!.", "u!#", "uudddduu!."]
    bad = ["!.", "u!", "uu!.", "u!..", "uuuuu!.", "u!#."]
    check(env, grammar, good, bad)


def test_parametric_rule_in_nested_lark_and_alongside_plain_rules(env):
    grammar = """
    start  : "(" %lark { start: one::0
                         one::_ : "i" one::set_bit(0) %if bit_clear(0)
                                | "j" one::set_bit(1) %if bit_clear(1)
                                | "" %if bit_count_eq(_, 2) } ")" tail
    tail   : "." | tail "."
    """
    check(env, grammar, ["(ij).", "(ji)..."], ["(i).", "(iij).", "(ij)"])


def test_self_reference_and_constants(env):
    """``name::_`` passes the parameter on unchanged; a constant argument restarts it."""
    grammar = """
    start  : a::5
    a::_   : "-" a::_       %if eq(_, 5)
           | "+" b::7       %if gt(_, 4)
    b::_   : "z"            %if le(_, 7)
    """
    check(env, grammar, ["+z", "---+z"], ["-", "z", "+"])


# --- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("grammar, message", [
    ('start: p::0\np::_ : "a" p::flip(0) %if bit_clear(0) | ""',
     "line 2, column 15: expected a parameter value, '_' or an operation, found 'flip'"),
    ('start: p::0\np::_ : "a" %if bit_toggled(3) | ""',
     "line 2, column 16: expected a condition after %if, found 'bit_toggled'"),
    ('start: item::0\nitem: "a"', "line 1, column 8: rule 'item' takes no parameter"),
    ('start: p\np::_ : "a" %if bit_set(1)', "line 1, column 8: rule 'p' takes a parameter"),
    ('start: p::0\np::_ : "a" %if eq([0:3])', "line 2, column 16: eq([x:y], v) takes 2 arguments"),
    ('start: p::0\np::_ : "a" p::set_bit(1, 2) | ""', "set_bit(k) takes 1 argument"),
    ('start: p::0\np::_ : "a" p::set_bit(64) | ""', "a bit index 64 is too large (at most 63)"),
    ('start: p::0\np::_ : "a" %if is_ones([3:3])', "the bit range [3:3] is empty"),
    ('start: p::0\np::_ : "a" %if is_ones([0:65])', "the end bit 65 is too large (at most 64)"),
    ('start: p::0x1ffffffffffffffff\np::_ : "a" %if true()', "too large"),
    ('start: "a" %if bit_set(0)', "line 1, column 12: %if goes only in a parametric rule"),
    ('start: p::_\np::_ : "a" %if bit_set(0)', "line 1, column 8: p::_ reads the parameter, but 'start' has none"),
    ('start: X\nX::_ : "a"', "line 2, column 2: terminal X cannot take a parameter"),
    ('start: A\nA: "a" p::0\np::_: "" %if bit_set(0)', "line 2, column 8: terminal A is one lexeme"),
    ('start: q::0\nq::_ : "a" | "b"', "line 2, column 1: rule 'q::_' takes a parameter but never reads it"),
    ('start: q::0\nq::_ : "a" %if true | "b" q::0', "never reads it"),
    ('start: p::0\np::x : "x"', "line 2, column 4: expected '_' after 'p::'"),
    ('start: p::0\np::_ : "a" p::incr(3) | ""', "expected a bit range [x:y] or '_'"),
    ('start: p::0\np::_ : "a" %if and(bit_set(0)) | ""', "and(condition, condition) takes 2 arguments"),
    ('start: p::0\np::_[lazy] : /a+/ %if bit_set(0)', "the parametric rule 'p' cannot be lazy"),
    ('start: p::0\np::_ : ("a" p::_ & "b") %if bit_set(0)', "'&' and '~' take terminals"),
])
def test_malformed_parametric_syntax(grammar, message):
    with pytest.raises(stencil.GrammarError) as e:
        lark_grammar(grammar)
    assert message in str(e.value)


def test_dead_instances_leave_an_empty_language_error():
    """Every instance ruled out: the grammar's language is empty, said as usual."""
    grammar = 'start: p::0\np::_ : "a" p::set_bit(0) %if bit_clear(0)'
    with pytest.raises(stencil.GrammarError, match="language is empty|can never complete"):
        lark_grammar(grammar)


def test_parametric_rule_never_given_a_value_is_reported_unused():
    grammar = 'start: "z"\nspare::_ : "a" spare::set_bit(0) %if bit_clear(0) | ""'
    with pytest.raises(stencil.GrammarError, match="line 2, column 1: the parametric rule 'spare' is never given"):
        lark_grammar(grammar, unused="error")
    with pytest.warns(stencil.grammar.ebnf.ast.GrammarWarning):
        lark_grammar(grammar)


def _permutation(n: int) -> str:
    alts = "\n".join(f'  | "i{k};" perm::set_bit({k}) %if bit_clear({k})' for k in range(n))
    return f'start: perm::0\nperm::_ : "" %if is_ones([0:{n}])\n{alts}\n'


def test_instance_bound_names_the_rule():
    t0 = time.perf_counter()
    with pytest.raises(stencil.GrammarError) as e:
        lark_grammar(_permutation(30))
    assert "parametric rule 'perm' reaches over" in str(e.value)
    assert "line 2, column 1" in str(e.value)
    assert time.perf_counter() - t0 < 10


def test_permutation_of_ten_compiles_quickly(env):
    t0 = time.perf_counter()
    compiled = env[1].compile_lark(_permutation(10))
    elapsed = time.perf_counter() - t0
    print(f"\npermutation of 10 items (1024 instances): compiled in {elapsed:.2f} s")
    assert elapsed < 15
    order = list(range(10))
    random.Random(5).shuffle(order)
    assert accepts(env, compiled, "".join(f"i{k};" for k in order))
    assert not accepts(env, compiled, "".join(f"i{k};" for k in order[:9]) + f"i{order[0]};")
    assert parametric.MAX_INSTANCES >= 1 << 10


def test_long_counter_chain_is_within_the_bounds():
    """A counter of small instances may go far beyond a permutation's count of values."""
    grammar = 'start: n::0\nn::_ : "." n::incr(_) %if lt(_, 3000) | ""'
    g = lark_grammar(grammar)
    assert g is not None
