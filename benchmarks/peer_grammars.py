"""Peers' grammar cases (issue 44): grammars in each peer's dialect, and strings, answered by
stencil and by the peer; the figure is the share of answers that agree, per peer.

- llguidance: its Lark dialect (docs/syntax.md), compiled by stencil's ``compile_lark``; the
  peer's answer is the installed ``llguidance`` package's (``LLMatcher`` over a byte vocabulary).
- XGrammar: its EBNF (docs/defining_structures/ebnf_grammar.md) through ``compile_gbnf``; the
  peer's answer is the installed ``xgrammar``'s (``testing._is_grammar_accept_string``).
- llama.cpp: GBNF (grammars/README.md) through ``compile_gbnf``; llama.cpp is not a Python
  package here, so its answer is the one written beside each string, read from that document
  and llama.cpp's grammar parser (``src/llama-grammar.cpp``: its escapes, ``.``, classes).

The grammars and strings are written here from the peers' documents and the kinds of case their
test suites hold (escapes, classes, Unicode, repetition, flags, errors); none is copied. Every
string of a live peer is also mutated (a character dropped, doubled or replaced by one of
``POOL``: non-ASCII digits, letters, marks, spaces, line terminators) into near misses that the
peer answers too. A string's answer is "accepted" or "rejected"; a grammar that either side
refuses is one answer, the grammar's ("error" or "compiles"), instead of one per string.

    python -m benchmarks.peer_grammars            # the table and every disagreement
    python -m benchmarks.peer_grammars --peer llguidance --quiet
"""
from __future__ import annotations

import argparse
import random
import sys
import zlib
from dataclasses import dataclass, field
from typing import Callable, Optional

#: characters the mutations draw from: where dialects read \d \w \s "." and escapes apart
POOL = ("0", "7", "a", "Z", "_", "-", ".", " ", "\t", "\n", "\r", "\\", '"', "é", "ß", "中", "\u0663",
        "\uff15", "\u00b2", "\u2167", "\u0301", "\u00a0", "\u2028", "\u3000", "\x1c", "\u212a", "\U0001F600")

ERROR = "error"


@dataclass
class Case:
    peer: str                               # "llguidance", "xgrammar" or "llama.cpp"
    grammar: str
    accept: list[str] = field(default_factory=list)   # what the peer is expected to accept
    reject: list[str] = field(default_factory=list)   # ... and to refuse
    error: bool = False                     # the peer refuses the grammar itself


def _lg(grammar: str, accept=(), reject=(), error=False) -> Case:
    return Case("llguidance", grammar, list(accept), list(reject), error)


def _xg(grammar: str, accept=(), reject=(), error=False) -> Case:
    return Case("xgrammar", grammar, list(accept), list(reject), error)


def _lc(grammar: str, accept=(), reject=(), error=False) -> Case:
    return Case("llama.cpp", grammar, list(accept), list(reject), error)


DIGITS = ["0", "42", "\u0663\u0664", "\uff11\uff12", "\u00b2", "\u2167", "a", ""]
WORDS = ["abc", "a_1", "\u00e9t\u00e9", "\u4e2d\u6587", "e\u0301", "\u00b2", "\u2167", "\u24b6", "a-b", "a b", ""]
SPACES = [" ", "\t\n", "\r", "\x0b\x0c", "\u00a0", "\u2028", "\u3000", "\x1c", "\u200b", "\u0085", "a", ""]
ANY1 = ["a", "\n", "\r", "\u2028", "\u0085", "\u00e9", "\U0001F600", "\x00", "ab", ""]

LLGUIDANCE: list[Case] = [
    # \d \w \s "." and their negations, as Rust's regex crate reads them (Unicode)
    _lg(r"start: /\d+/", ["0", "42", "\u0663\u0664", "\uff11\uff12"], ["\u00b2", "\u2167", "a", ""]),
    _lg(r"start: /\w+/", ["abc", "a_1", "\u00e9t\u00e9", "\u4e2d\u6587", "e\u0301", "\u2167", "\u24b6"],
        ["\u00b2", "a-b", "a b", ""]),
    _lg(r"start: /\s+/", [" ", "\t\n", "\r", "\x0b\x0c", "\u00a0", "\u2028", "\u3000", "\u0085"],
        ["\x1c", "\u200b", "a", ""]),
    _lg(r"start: /./", ["a", "\r", "\u2028", "\u0085", "\u00e9", "\U0001F600", "\x00"], ["\n", "ab", ""]),
    _lg(r"start: /\D\W\S/", ["a-a", "\u00b2 x"], ["0-a", "a_a", "a- "]),
    _lg(r"start: /[\d\s]+/", ["1 2", "\u0663\u00a0"], ["a"]),
    _lg(r"start: /[^\d]+/", ["ab", "\u00b2"], ["a1", "\u0663"]),
    _lg(r"start: /[^\w]+/", ["-+", " "], ["a", "\u00e9", "\u4e2d"]),
    _lg(r"start: /[\w-]+/", ["a-b", "\u00e9-1"], ["a b"]),
    _lg(r"start: /(?s)a.b/", ["a\nb", "axb"], ["ab"]),
    _lg(r"start: /a.b/s", ["a\nb", "axb"], ["ab"]),
    _lg(r"start: /abc/i", ["ABC", "aBc", "abc"], ["abd"]),
    _lg(r"start: /(?i)k/", ["k", "K", "\u212a"], ["x"]),
    _lg(r"start: /(?i)stra\u00dfe/", ["STRA\u00dfE", "stra\u1e9ee"], ["strasse"]),
    _lg(r"start: /(?x) a b  # a comment" + "\n/", ["ab"], ["a b"]),
    _lg(r"start: /(?-u:\w)+/", ["ab"], []),
    # Unicode properties and Rust's other escapes and classes
    _lg(r"start: /\p{L}+/", ["abc", "\u00e9", "\u4e2d"], ["1", "_"]),
    _lg(r"start: /\p{Lu}\p{Ll}*/", ["Abc", "\u00c9t\u00e9"], ["abc"]),
    _lg(r"start: /\p{Greek}+/", ["\u03b1\u03b2"], ["ab"]),
    _lg(r"start: /\pN+/", ["1\u00b2\u2167"], ["a"]),
    _lg(r"start: /\P{L}/", ["1", "-"], ["a"]),
    _lg(r"start: /[[:alpha:]]+/", ["abc", "ABC"], ["\u00e9", "1"]),
    _lg(r"start: /[[:^digit:]]/", ["a", "\u0663"], ["5"]),
    _lg(r"start: /[[:word:][:space:]]+/", ["a b_1"], ["-"]),
    _lg(r"start: /\x{1F600}/", ["\U0001F600"], ["x"]),
    _lg(r"start: /\u{e9}/", ["\u00e9"], ["e"]),
    _lg(r"start: /\x41\u00e9/", ["A\u00e9"], ["Ae"]),
    _lg(r"start: /\U0001F600/", ["\U0001F600"], []),
    _lg(r"start: /[a-c&&b-d]+/", ["bc"], ["a", "d"]),
    _lg(r"start: /[a-z--c]+/", ["ab"], ["c"]),
    _lg(r"start: /[a-z~~c-e]+/", ["ab", "z"], ["d"]),
    _lg(r"start: /[]a]+/", ["]a"], ["b"]),
    _lg(r"start: /[a-]+/", ["a-"], ["b"]),
    _lg(r"start: /[\[\]]+/", ["[]"], ["a"]),
    _lg(r"start: /\//", ["/"], ["\\/"]),
    _lg(r"start: /a\.b/", ["a.b"], ["axb", "a\\.b"]),
    _lg(r"start: /\-\:/", ["-:"], []),
    _lg(r"start: /\a\t\n\r\f\v/", ["\x07\t\n\r\x0c\x0b"], []),
    _lg(r"start: /\0/", [], [], error=True),
    _lg(r"start: /\101/", [], [], error=True),
    _lg(r"start: /\h/", [], [], error=True),
    _lg(r"start: /\bfoo/", [], [], error=True),
    _lg(r"start: /(?=a)a/", [], [], error=True),
    _lg(r"start: /a{2,3}/", ["aa", "aaa"], ["a", "aaaa"]),
    _lg(r"start: /a{2}b{1,}/", ["aab", "aabbb"], ["ab"]),
    _lg(r"start: /a*?b+?/", ["b", "aab"], ["a"]),
    _lg(r"start: /(ab|cd)*/", ["", "abcd", "cdab"], ["abc"]),
    _lg(r"start: /(?:ab)+|x/", ["abab", "x"], ["", "xab"]),
    _lg(r"start: /a|/", ["a", ""], ["b"]),
    _lg(r"start: /[\u00e9-\u00eb]/", ["\u00e9", "\u00ea"], ["e", "\u00ec"]),
    _lg(r"start: /[^a]/", ["b", "\n", "\u00e9"], ["a", ""]),
    # string literals: llguidance's escapes (JSON's, plus what Rust's lexer reads)
    _lg('start: "a\\tb"', ["a\tb"], ["a\\tb", "atb"]),
    _lg('start: "a\\nb"', ["a\nb"], ["anb"]),
    _lg('start: "\\u00e9"', ["\u00e9"], ["u00e9"]),
    _lg('start: "\\x41"', ["A"], ["x41"]),
    _lg('start: "a\\\\b"', ["a\\b"], ["ab"]),
    _lg('start: "a\\"b"', ['a"b'], ["ab"]),
    _lg('start: "a\\/b"', ["a/b"], []),
    _lg('start: "a\\.b"', [], [], error=True),
    _lg('start: "a\\-b"', [], [], error=True),
    _lg('start: "\u00e9\u4e2d"', ["\u00e9\u4e2d"], ["e"]),
    _lg('start: "abc"i', ["ABC", "aBc"], ["abd"]),
    _lg("start: 'ab'", error=True),
    # rules, terminals, operators
    _lg('start: a b\na: "x"\nb: "y"', ["xy"], ["x", "yx"]),
    _lg('start: item+\nitem: "a" | "b"', ["a", "abba"], [""]),
    _lg('start: "a"? "b"* "c"', ["c", "abbc"], ["aac"]),
    _lg('start: ("a" | "b"){2,3}', ["ab", "bab"], ["a", "abab"]),
    _lg('start: "a".."c"', ["a", "b", "c"], ["d"]),
    _lg('start: A+\nA: /[0-9]/ | "x"', ["1x2"], ["y"]),
    _lg('start: "a" "b"\n%ignore " "', ["ab", "a b", "a  b"], ["a-b", " a b", "a b "]),
    _lg('start: WORD (" " WORD)*\nWORD: /[a-z]+/', ["ab cd"], ["ab  cd"]),
    _lg('start: "a" "b"*\n%ignore " "', ["a ", "a b ", "a bb"], [" a"]),
    _lg('start: "a" "b"?\n%ignore " "', ["a ", "a b"], ["a b "]),
    _lg('start: x\nx: x "a" | "b"', ["b", "baa"], ["a"]),
    _lg('start: "(" start ")" | ""', ["", "(())"], ["(()"]),
    _lg('start: NUM\nNUM: INT ("." INT)?\nINT: /[0-9]+/', ["1", "1.25"], ["1.", ".5"]),
    _lg('start: "a" undefined_rule', [], [], error=True),
    _lg('start: "a"\n%llguidance {}', ["a"], ["b"]),
    _lg('start: s{2,3}\ns: "x" "y"?', ["xx", "xyx", "xyxyx"], ["x", "xxxx"]),
    _lg('start: /[a-z]+/ ":" /\\d+/', ["ab:12", "ab:\u0663"], ["ab:", ":1"]),
    _lg('start: %json {"type": "integer"}', ["12", "-3"], ["1.5", "a"]),
    _lg('start: %regex {"substring_words": "foo bar"}', ["foo", "bar", "foo bar"], ["baz"]),
    # "." counts characters, not bytes; a literal between regexps; lexer choices
    _lg('start: /../ "x" /../', ["abxcd", "😀éx中 "], ["axbc", "abxc"]),
    _lg("start: \"'q'\" /a+/ | QUOTED /b+/\nQUOTED: /'[^']*'/", ["'q'a", "'z'bb", "'q'b"], ["'z'a"]),
    _lg('start: KW | NAME\nKW: "if"\nNAME: /[a-z]+/', ["if", "iff", "x"], ["IF"]),
    _lg('start: ab{3,5}\nab: "a" | "b"', ["aba", "aaaaa"], ["aa", "aaaaaa"]),
    _lg('start: ab{,2}\nab: "a" | "b"', ["", "ab"], ["aba"]),
    _lg('start: T\nT: ("a" | "b"){2}', ["ab", "bb"], ["a", "abb"]),
    _lg('start: A B\nA: "a"\nB: A "b"', ["aab"], ["ab"]),
    # JSON Schema patterns inside %json keep ECMA-262's ASCII \d \w
    _lg('start: %json {"type": "string", "pattern": "^\\\\d$"}', ['"1"'], ['"\u09e7"', '"12"', "1"]),
    _lg('start: %json {"type": "string", "pattern": "^\\\\w+$"}', ['"a1_"'], ['"\u0142"', '""']),
    _lg('start: %json {"type": "string", "pattern": "^\\\\s$"}', ['" "', '"\\t"', '"\u00a0"'], ['"a"']),
    _lg('start: %json {"type": "array", "items": {"type": "integer"}, "maxItems": 2}', ["[]", "[1,2]"],
        ["[1,2,3]", "[1.5]"]),
    # grammar errors: each refused by llguidance
    _lg('start: foo{7,6}\nfoo: "a"', error=True),
    _lg('start: FOO\nFOO: "a" | BAR\nBAR: "b" FOO', error=True),
    _lg('start: foo\nfoo: "a" | bar\nbar: "b" foo', ["a", "ba", "bba"], ["b"]),
    _lg('start: FOO\nBAR: "b"', error=True),
    _lg('start: BAR\nBAR: BAZ "a"', error=True),
    _lg('%import common.INT\nstart: INT', ["0", "123"], ["a", "-1"]),
    _lg('%import common.NOPE\nstart: NOPE', error=True),
    _lg("start: /[abc/", error=True),
    _lg("start: /[abc]/l", error=True),
    _lg('start: "ab".."c"', error=True),
    _lg('start: "d".."a"', error=True),
    _lg('start: foo\nfoo: "a"\nfoo: "c"', error=True),
    _lg('root: "abc"', error=True),
    _lg('start: "a" | <|no_such_token|>', error=True),
    _lg('start: FOO\nFOO: %json {}', error=True),
    _lg('start: %regex {"substring_words": "a", "substring_chars": "b"}', error=True),
    # lexeme attributes
    _lg('start: foo\nfoo[stop="!"]: /[a-z]*/', ["ab!", "!"], ["ab", "a!b"]),
    _lg('start: foo "."\nfoo[lazy]: /[a-z]+x/', ["abx.", "ax."], ["abxx.", "ab.", "x."]),
    _lg('start: %regex {"substring_chars": "h\u00e9llo"}', ["h\u00e9l", "llo", ""], ["hl"]),
]


def _gbnf(make: Callable[..., Case]) -> list[Case]:
    """GBNF cases that llama.cpp and XGrammar's EBNF both read; answers as both documents say."""
    return [
        make("root ::= [0-9]+", ["0", "123"], ["", "a", "\u0663"]),
        make('root ::= "a" | "b" "c"', ["a", "bc"], ["ac", "b"]),
        make('root ::= ("a" "b")* "c"', ["c", "ababc"], ["abac"]),
        make('root ::= "a"? "b"+', ["b", "abb"], ["a", "aab"]),
        make('root ::= [a-z]{2,3}', ["ab", "abc"], ["a", "abcd"]),
        make('root ::= "x"{2}', ["xx"], ["x", "xxx"]),
        make('root ::= "x"{2,}', ["xx", "xxxxx"], ["x"]),
        make('root ::= "x"{0,2}', ["", "x", "xx"], ["xxx"]),
        make('root ::= [^a]', ["b", "\n", "\u00e9", "\U0001F600"], ["a", "", "bc"]),
        make('root ::= [^\\n]*', ["abc", "\u00e9"], ["a\nb"]),
        make('root ::= [\\]\\[]+', ["[]", "]["], ["a"]),
        make('root ::= [\\\\]', ["\\"], ["a"]),
        make('root ::= [a-zA-Z_] [a-zA-Z_0-9]*', ["_a1", "Abc"], ["1a"]),
        make('root ::= [\u03b1-\u03c9]+', ["\u03b1\u03b2"], ["a"]),
        make('root ::= [\\x41-\\x43]', ["A", "C"], ["D"]),
        make('root ::= [\\u00e9]', ["\u00e9"], ["e"]),
        make('root ::= "\\x41\\u00e9\\U0001F600"', ["A\u00e9\U0001F600"], ["A"]),
        make('root ::= "a\\tb\\nc\\rd"', ["a\tb\nc\rd"], ["atbncrd"]),
        make('root ::= "a\\"b\\\\c"', ['a"b\\c'], []),
        make('root ::= "\u00e9\u4e2d"', ["\u00e9\u4e2d"], ["e"]),
        make('root ::= item ("," item)*\nitem ::= [0-9]+', ["1", "1,22,3"], ["1,", ",1"]),
        make('root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= [0-9]+ | "(" expr ")"',
             ["1+2", "(1-2)+3"], ["1+", "(1"]),
        make('root ::= "a" # a comment\n  "b"', ["ab"], ["a"]),
        make('root ::= x\nx ::= x "a" | "b"', ["b", "baa"], ["a"]),
        make('root ::= "(" root ")" | ""', ["", "(())"], ["(()"]),
        make('root ::= "a" undefined', [], [], error=True),
        make('root ::= "a', [], [], error=True),
        make('root ::= [a-', [], [], error=True),
        make('root ::= "a\\qb"', [], [], error=True),
        make('root ::= ("a" | "b")+ "."', ["ab.", "b."], [".", "ab"]),
        make('root ::= [ \\t\\n]* "x"', ["x", " \t\nx"], ["\rx"]),
        make('root ::= ws "{" ws "}" ws\nws ::= [ \\t\\n]*', ["{}", " { } "], ["{ }x"]),
    ]


LLAMA_CPP: list[Case] = _gbnf(_lc) + [
    _lc('root ::= [a-z]{2,3} [0-9]{1}', ["ab1", "abc2"], ["a1", "abcd1"]),
    _lc('root ::= ("ab" | "c"){2,}', ["abc", "cc", "ababab"], ["c"]),
    _lc('root ::= [^a-z\u00e9]+', ["A1", "\u00e8", "\n"], ["a", "\u00e9"]),
    _lc('root ::= rule-a\nrule-a ::= "a"', ["a"], ["b"]),
    _lc('root ::= "\\x4"', [], [], error=True),
    _lc('root ::= [\u4e00-\u9fff]+ "!"', ["\u4e2d\u6587!"], ["a!"]),
    _lc('root ::= ("a" | "b" "c"?)*', ["", "abcb", "bb"], ["c"]),
    _lc('root ::= "a"{3}', ["aaa"], ["aa", "aaaa"]),
    # llama.cpp: "." is any character, newline included; an unknown escape is an error
    _lc("root ::= .", ["a", "\n", "\r", "\u00e9", "\U0001F600"], ["", "ab"]),
    _lc("root ::= .+ \"!\"", ["ab!", "\n!"], ["!"]),
    _lc('root ::= [a\\-z]', [], [], error=True),
    _lc("root ::= \"a\" |", ["a", ""], ["b"]),
]

XGRAMMAR: list[Case] = _gbnf(_xg) + [
    _xg('root ::= [a-z]{2,3} [0-9]{1}', ["ab1", "abc2"], ["a1", "abcd1"]),
    _xg('root ::= ("ab" | "c"){2,}', ["abc", "cc", "ababab"], ["c"]),
    _xg('root ::= [^a-z\u00e9]+', ["A1", "\u00e8"], ["a", "\u00e9"]),
    _xg('root ::= [\\t\\r\\n ]+', ["\t\r\n "], ["a"]),
    _xg('root ::= "\\f\\v"', ["\f\v"], ["fv"]),
    _xg('root ::= rule-a rule_b\nrule-a ::= "a"\nrule_b ::= "b"', ["ab"], ["a"]),
    _xg('root ::= "a"\nroot ::= "b"', error=True),
    _xg('root ::= [z-a]', error=True),
    _xg('root ::= "a" (("b"))? "c"*', ["a", "abcc"], ["ac b"]),
    _xg('root ::= [\u4e00-\u9fff]+ "!"', ["\u4e2d\u6587!"], ["a!"]),
    _xg('root ::= [a\\-z]', ["a", "-", "z"], ["b"]),
    _xg('root ::= [\\d]+', error=True),
    _xg('root ::= "a" x\nx ::= "b" (= "c")', ["ab"], ["abc"]),
    _xg('root ::= "a" "b"*  "c"+ ', ["ac", "abbcc"], ["ab"]),
    _xg('root ::= [a-z] [0-9]?\n', ["a", "a1"], ["1"]),
    _xg('root ::= "x" | "y"\n\nother ::= "z"', ["x", "y"], ["z"]),
]

PEERS = {"llguidance": LLGUIDANCE, "xgrammar": XGRAMMAR, "llama.cpp": LLAMA_CPP}


# --- answers -------------------------------------------------------------------------------------

class Stencil:
    """stencil's answers over a byte vocabulary (256 one-byte tokens and an EOS)."""

    def __init__(self):
        import stencil
        tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
        self.stencil = stencil
        self.compiler = stencil.GrammarCompiler(stencil.TokenizerInfo.from_vocab(
            tokens, eos_token_ids=256, special_token_ids=[256]))

    def compile(self, peer: str, grammar: str):
        try:
            if peer == "llguidance":
                return self.compiler.compile_lark(grammar, unused="ignore")
            return self.compiler.compile_gbnf(grammar, unused="ignore")
        except Exception:   # noqa: BLE001 - a GrammarError (or any refusal) is the answer "error"
            return None

    def answer(self, compiled, text: str) -> str:
        m = self.stencil.Matcher(compiled)
        ok = m.accept_string(text) and m.is_accepting()
        return "accepted" if ok else "rejected"


class ByteTokens:
    """What llguidance.TokenizerWrapper reads for a byte vocabulary."""

    def __init__(self):
        self.tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
        self.special_token_ids = [256]
        self.eos_token_id = 256
        self.bos_token_id = None

    def __call__(self, text):
        return list(text.encode("utf-8") if isinstance(text, str) else text)


class LLGuidance:
    def __init__(self):
        import llguidance
        self.llg = llguidance
        self.tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(ByteTokens()))

    def compile(self, peer: str, grammar: str):
        g = self.llg.grammar_from("lark", grammar)
        return None if self.llg.LLMatcher(self.tokenizer, g, log_level=0).is_error() else g

    def answer(self, compiled, text: str) -> str:
        m = self.llg.LLMatcher(self.tokenizer, compiled, log_level=0)
        ok = m.consume_tokens(list(text.encode("utf-8")))
        return "accepted" if ok and not m.is_error() and m.is_accepting() else "rejected"


class XGrammar:
    def __init__(self):
        import xgrammar
        from xgrammar import testing
        self.xgr = xgrammar
        self.testing = testing

    def compile(self, peer: str, grammar: str):
        try:
            self.xgr.Grammar.from_ebnf(grammar)
        except Exception:   # noqa: BLE001 - XGrammar's refusal is the answer "error"
            return None
        return grammar

    def answer(self, compiled, text: str) -> str:
        return "accepted" if self.testing._is_grammar_accept_string(compiled, text) else "rejected"


def live_peer(peer: str):
    """The installed peer, or None (llama.cpp is never installed: its answers are written)."""
    try:
        return {"llguidance": LLGuidance, "xgrammar": XGrammar}[peer]()
    except (KeyError, ImportError):
        return None


def mutations(text: str, rng: random.Random, n: int) -> list[str]:
    """Near misses of ``text``: one character dropped, doubled or replaced by one of POOL."""
    out = []
    for _ in range(n):
        k = rng.randrange(len(text) + 1)
        how = rng.randrange(3)
        if how == 0 and k < len(text):
            out.append(text[:k] + text[k + 1:])
        elif how == 1 and k < len(text):
            out.append(text[:k + 1] + text[k:])
        else:
            out.append(text[:k] + rng.choice(POOL) + text[k + 1:])
    return out


@dataclass
class Disagreement:
    grammar: str
    text: Optional[str]                     # None: the grammar itself
    peer: str
    stencil: str


def expected_answer(case: Case, text: str) -> str:
    if case.error:
        return ERROR
    return "accepted" if text in case.accept else "rejected"


def run_peer(peer: str, cases: list[Case], mutate: int = 6, seed: int = 0,
             live: bool = True) -> tuple[int, list[Disagreement], bool]:
    """(answers, disagreements, live): every case's strings (and, with a live peer, ``mutate``
    near misses of each) answered by stencil and by the peer (its written answers when it is not
    installed or ``live`` is false)."""
    ours, theirs = Stencil(), live_peer(peer) if live else None
    total, bad = 0, []
    for case in cases:
        texts = list(dict.fromkeys(case.accept + case.reject))
        if theirs is not None:
            rng = random.Random(zlib.crc32(case.grammar.encode()) + seed)
            texts += [t for s in list(texts) for t in mutations(s, rng, mutate)]
            texts = list(dict.fromkeys(texts))
        mine = ours.compile(peer, case.grammar)
        peer_g = theirs.compile(peer, case.grammar) if theirs is not None else None
        peer_error = peer_g is None if theirs is not None else case.error
        if mine is None or peer_error:
            # a grammar refused by either side is one answer, the grammar's, not one per string
            total += 1
            if (mine is None) != peer_error:
                bad.append(Disagreement(case.grammar, None, ERROR if peer_error else "compiles",
                                        ERROR if mine is None else "compiles"))
            continue
        for t in texts:
            total += 1
            a = ours.answer(mine, t)
            b = expected_answer(case, t) if theirs is None else theirs.answer(peer_g, t)
            if a != b:
                bad.append(Disagreement(case.grammar, t, b, a))
    return total, bad, theirs is not None


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peer_grammars", description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", choices=sorted(PEERS), action="append", help="only these peers (repeatable)")
    parser.add_argument("--mutate", type=int, default=6, help="near misses per string for a live peer")
    parser.add_argument("--quiet", action="store_true", help="the table only")
    args = parser.parse_args(argv)
    rows = []
    for peer in args.peer or list(PEERS):
        total, bad, live = run_peer(peer, PEERS[peer], args.mutate)
        rows.append((peer, len(PEERS[peer]), total, total - len(bad), live))
        if not args.quiet:
            for d in bad:
                what = "grammar" if d.text is None else repr(d.text)
                print(f"  {peer}: {d.grammar!r} {what}: peer {d.peer}, stencil {d.stencil}")
    print(f"{'peer':<11} {'grammars':>8} {'answers':>8} {'agree':>8} {'share':>7}  answers from")
    for peer, n, total, agree, live in rows:
        print(f"{peer:<11} {n:>8} {total:>8} {agree:>8} {100 * agree / max(total, 1):>6.1f}%  "
              f"{'the installed package' if live else 'written answers'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
