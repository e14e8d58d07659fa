"""The grammar oracle's own parsers (oracle_grammars.py, oracle_lark.py) on hand-checked answers,
so that they cannot be wrong the same way as stencil's front ends: llama.cpp's GBNF and Lark's
reading of the text, decided here from their documentation, not from stencil."""
from __future__ import annotations

import random

import pytest

from grammar_oracle import CharEarley
from oracle_grammars import OracleSyntaxError, dead_rules, parse_gbnf, sample
from oracle_lark import lark


def lang(g, good, bad):
    o = CharEarley(g)
    for s in good:
        assert o.run(list(s)) == (len(s), True), s
    for s in bad:
        assert o.run(list(s)) != (len(s), True), s


def test_gbnf_syntax_known_answers():
    lang(parse_gbnf(r'root ::= "\x41\u00e9\U0001F600\n\t\\\"" [^a-c\]] x{2,3} y{2} z{1,} w?'
                    '\nx ::= "x"  # comment\ny ::= "y"\nz ::= [z]\nw ::= .'),
         ["A\u00e9\U0001F600\n\t\\\"dxxyyz", "A\u00e9\U0001F600\n\t\\\"exxxyyzzz\n"],
         ["A\u00e9\U0001F600\n\t\\\"]xxyyz", "A\u00e9\U0001F600\n\t\\\"axxyyz", "A\u00e9\U0001F600\n\t\\\"dxyyz", "A\u00e9\U0001F600\n\t\\\"dxxxxyyz"])
    lang(parse_gbnf('root ::= ("a" | "b" "c")+ | [-x]'), ["a", "bca", "-", "x"], ["b", "", "y"])
    for bad in ['root ::= "\\q"', 'root ::= [z-a]', 'other ::= "a"', 'root ::= "a']:
        with pytest.raises(OracleSyntaxError):
            parse_gbnf(bad)


def test_the_readers_names_differ_only_in_dashes():
    """GBNF names take "-", Lark's do not; both readers (one TextReader) say where a name is missing."""
    lang(parse_gbnf('root ::= my-rule\nmy-rule ::= "a"'), ["a"], ["", "aa"])
    lang(lark('start: my_rule\nmy_rule: "a"'), ["a"], ["", "aa"])
    with pytest.raises(OracleSyntaxError, match="expected ':' at offset 13"):   # the name ends at "-"
        lark('start: "a"\nmy-rule: "a"')
    with pytest.raises(OracleSyntaxError, match="expected a name at offset 0"):
        parse_gbnf('::= "a"')


def test_dead_rules():
    assert dead_rules(parse_gbnf('root ::= "a" | r1\nr1 ::= r1 "b"')) == {"r1"}
    assert dead_rules(parse_gbnf('root ::= root "a"')) == {"root"}
    assert dead_rules(parse_gbnf('root ::= "a" r1?\nr1 ::= "b" r1 | "c"\nr2 ::= r2')) == set()


def test_lark_known_answers():
    g = lark(r'''
        ?start: item ("," _item)*   -> items
        _item: item
        !item.2: KEY "=" VALUE
               | "k"i "." "\." "\\"
        KEY: LETTER (LETTER | DIGIT | "_")*
        VALUE: NUMBER | "a".."c" ~ 2..3 | /"[^"]*"/
        %import common (LETTER, DIGIT)
        %import common.NUMBER
        %import common.WS_INLINE -> SP
        %ignore SP
    ''')
    lang(g, ["a=1", "a1_ = 2.5e3 ,b=ab", 'x="y z"', "K.\\.\\", "\u212a.\\.\\", "a=abc"],
         [" a=1", "a=abcd", "a=a", "1a=1", "k..\\", "a=1,"])
    rng = random.Random(0)
    o = CharEarley(g)
    for _ in range(20):   # the oracle's own samples are in its language
        s = "".join(sample(g, rng, ignore_prob=0.5, max_len=40))
        assert o.run(list(s)) == (len(s), True), s
    lang(lark('start: "a"\n%ignore " "', initial_skip=True, final_skip=True), [" a ", "a"], ["  "])
    lang(lark('start: "a"\n%ignore " "'), ["a"], [" a", "a "])
    lang(lark('start: /\\d+(?:\\.\\d*)?/ /[^\\n]/'), ["1.x", "\u0663\u0663y", "1 "], ["1\n", ".1x"])
    with pytest.raises(OracleSyntaxError):
        lark("start: /(?=a)a/")
