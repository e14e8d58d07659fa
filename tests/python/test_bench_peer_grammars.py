"""Grammars mean what their dialect says (issue 44), checked against the references installed here
rather than against hand-written answers: Python ``re`` (Lark's own regexps) on what it shares
with Rust's regex crate, llguidance (Rust's regex crate) for whole Unicode classes, and the peers'
grammar cases of ``benchmarks.peer_grammars`` (llguidance, XGrammar, llama.cpp), whose agreement
must stay at or above 99% per peer.

Lark terminals are read as llguidance's Lark dialect (what OpenAI custom tools serve): \\d is Nd
for both references, "." everything but "\\n" for both; \\s and \\w differ between Python and Rust
(Python's \\s holds U+001C..U+001F, its \\w holds No but no marks), and llguidance decides those."""
from __future__ import annotations

import random
import re
import unicodedata

import pytest
from grammar_oracle import accepts_text

import stencil
from benchmarks import peer_grammars

#: one byte a token, and an EOS: a string is accepted exactly when its UTF-8 bytes are
_BYTES = stencil.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b"<eos>"],
                                          eos_token_ids=256, special_token_ids=[256])
#: every scalar value the running Python's Unicode tables assign (newer ones are version skew)
_ASSIGNED = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and unicodedata.category(chr(cp)) != "Cn"]


@pytest.fixture(scope="module")
def compiler():
    return stencil.GrammarCompiler(_BYTES)


def _members(compiler, pattern: str) -> set[int]:
    """The code points of ``_ASSIGNED`` that the one-character Lark terminal /pattern/ takes:
    one Matcher over /(pattern)*/, each character fed alone (a refused one changes nothing)."""
    m = stencil.Matcher(compiler.compile_lark(f"start: /({pattern})*/"))
    return {cp for cp in _ASSIGNED if m.accept_string(chr(cp))}


@pytest.mark.parametrize("pattern", [r"\d", r"\D", r".", r"(?s).", r"[^\d\n]", r"(?i)k", r"[\d_]"])
def test_classes_match_python_re_on_every_code_point(compiler, pattern):
    want = {cp for cp in _ASSIGNED if re.fullmatch(pattern, chr(cp))}
    got = _members(compiler, pattern)
    assert got == want, f"{pattern}: {sorted(got ^ want)[:10]} differ"


def test_space_and_word_as_rust_reads_them(compiler):
    # Python's \s also holds the four information separators, which Unicode's White_Space (Rust's
    # \s) leaves out; Python's \w holds No (superscripts) and no marks, Rust's \w the reverse
    space = _members(compiler, r"\s")
    assert space == {cp for cp in _ASSIGNED if re.fullmatch(r"\s", chr(cp))} - set(range(0x1C, 0x20))
    word = _members(compiler, r"\w")
    assert {0xB2, 0xBC} & word == set() and {0x301, 0x24B6, 0x1F130, 0x2167, 0x200D} <= word
    python = {cp for cp in _ASSIGNED if re.fullmatch(r"\w", chr(cp))}
    assert {unicodedata.category(chr(cp)) for cp in python - word} == {"No"}
    # marks, the joiners, connector punctuation but "_", Other_Alphabetic's circled letters
    assert {unicodedata.category(chr(cp)) for cp in word - python} == {"Mn", "Mc", "Me", "Cf", "Pc", "So"}


@pytest.mark.parametrize("pattern", [r"\w", r"\s", r"\W", r"[\d\s]", r"(?-u:\w)", r"[\w--\d]", r"[\p{L}&&\p{Lu}]"])
def test_classes_match_llguidance_on_every_code_point(compiler, pattern):
    llg = pytest.importorskip("llguidance", reason="llguidance is not installed (extra 'bench', make bench-deps)")
    tok = llg.LLTokenizer(llg.TokenizerWrapper(peer_grammars.ByteTokens()))
    m = llg.LLMatcher(tok, llg.grammar_from("lark", f"start: /({pattern})*/"), log_level=0)
    assert not m.is_error(), m.get_error()
    want = set()
    for cp in _ASSIGNED:
        b = list(chr(cp).encode())
        n = m.try_consume_tokens(b)
        if n == len(b):
            want.add(cp)
        elif n:
            m.rollback(n)
    got = _members(compiler, pattern)
    assert got == want, f"{pattern}: {[hex(c) for c in sorted(got ^ want)[:10]]} differ"


#: what the mutations draw from: ASCII and non-ASCII digits, letters, marks, spaces, line ends
_CHARS = "09aZ_-. \t\n\r\\é中\u0663\uff15\u00b2\u2167\u0301\u00a0\u2028\u0085\u212a"
#: Lark terminals whose meaning Python's re and Rust's regex share
_SHARED = [r"\d+(\.\d*)?", r"[^\d\s]+", r".+", r"(?s).{1,3}", r"(?i)[a-k]+\d", r"[a\-z]*\D", r"\x41|\u00e9+",
           r"(\d|_)*", r"[^a-z\n]{2,}", r"(?i)\u212a."]


def test_generated_strings_against_python_re(compiler):
    rng = random.Random(44)
    checked = 0
    for pattern in _SHARED:
        g = compiler.compile_lark(f"start: /{pattern}/")
        for _ in range(150):
            text = "".join(rng.choice(_CHARS) for _ in range(rng.randint(0, 5)))
            want = re.fullmatch(pattern, text) is not None
            assert accepts_text(g, text) == want, f"/{pattern}/ on {text!r}: re says {want}"
            checked += want
    assert checked > 100    # enough strings in the languages, not only outside them


def test_rust_regex_syntax(compiler):
    def lang(grammar, good, bad):
        g = compiler.compile_lark(grammar)
        assert [t for t in good if not accepts_text(g, t)] == []
        assert [t for t in bad if accepts_text(g, t)] == []
    lang(r"start: /[a-c&&b-d]+/", ["bc"], ["a", "d"])
    lang(r"start: /[a-z--c]+/", ["ab"], ["c"])
    lang(r"start: /[a-z~~c-e]+/", ["ab", "z"], ["c", "d"])
    lang(r"start: /[a[0-9]]+/", ["a1"], ["b"])
    lang(r"start: /[^a[0-9]]/", ["b"], ["a", "1"])
    lang(r"start: /(?i)[a-c--b]/", ["A", "c"], ["b", "B"])
    lang(r"start: /(?-u:\w)+\w/", ["ab", "a\u00e9"], ["\u00e9a"])
    lang("start: /(?x) a  # a comment\n  b/", ["ab"], ["a b"])
    for bad in (r"/\0/", r"/\101/", r"/(a)\1/"):
        with pytest.raises(stencil.GrammarError, match="no octal escapes or backreferences"):
            compiler.compile_lark(f"start: {bad}")


def test_ignore_is_llguidance_s_unless_xgrammar_options(compiler):
    g = compiler.compile_lark('start: "a" "b"\n%ignore " "')
    assert accepts_text(g, "a b") and not accepts_text(g, "a b ") and not accepts_text(g, " ab")
    g = compiler.compile_lark('%grammar_options {"allow_initial_skip": false}\nstart: "a" "b"\n%ignore " "')
    assert accepts_text(g, "a b ") and not accepts_text(g, " ab")


@pytest.mark.parametrize("peer", sorted(peer_grammars.PEERS))
def test_peer_cases_agree(peer):
    total, bad, _ = peer_grammars.run_peer(peer, peer_grammars.PEERS[peer])
    assert total > 100
    assert (total - len(bad)) / total >= 0.99, [(d.grammar, d.text, d.peer, d.stencil) for d in bad]


@pytest.mark.parametrize("peer", ["llguidance", "xgrammar"])
def test_written_answers_are_the_peers(peer):
    # where the peer is not installed the benchmark falls back on the written answers: they must
    # be what the peer says
    pytest.importorskip(peer, reason=f"{peer} is not installed (extra 'bench', make bench-deps)")
    live = peer_grammars.live_peer(peer)
    wrong = []
    for case in peer_grammars.PEERS[peer]:
        g = live.compile(peer, case.grammar)
        if (g is None) != case.error:
            wrong.append((case.grammar, "compiles" if g is not None else "error"))
        elif g is not None:
            wrong += [(case.grammar, t) for t in case.accept + case.reject
                      if live.answer(g, t) != peer_grammars.expected_answer(case, t)]
    assert wrong == []
    total, bad, _ = peer_grammars.run_peer(peer, peer_grammars.PEERS[peer], live=False)
    assert (total - len(bad)) / total >= 0.99


_IGNORED = ['start: "a" "b"', 'start: x+\nx: "a" | "b" | e\ne: ', 'start: "(" start ")" | "()"',
            'start: a? b*\na: "a"\nb: "b" "c"?', 'start: NUM ("," NUM)*\nNUM: /[0-9]+/',
            'start: s{2,3}\ns: "x" "y"?', 'start: l\nl: l "a" | "b" | ']


@pytest.mark.parametrize("options", ["", '%llguidance {"allow_initial_skip": true}\n',
                                     '%grammar_options {"allow_initial_skip": false}\n'])
def test_scoped_ignore_reads_as_the_whole_grammar(compiler, options):
    # a custom tool's input (build_lark scoped: its %ignore written into its own rules) means what
    # the same grammar means alone (the core's ignored lexemes, as llguidance reads them), but for
    # a skip at the end where another terminal could have followed ('a ' for start: "a" "b"*):
    # llguidance takes it, the scoped rules do not, a subset that never writes what llguidance
    # refuses
    from stencil.grammar.ebnf.lark import build_lark
    rng = random.Random(7)
    trailing = "grammar_options" in options
    for text in _IGNORED:
        text = options + text + '\n%ignore " "'
        whole = compiler.compile_lark(text, unused="ignore")
        b = stencil.GrammarBuilder()
        scoped = compiler.compile_grammar(b.build(build_lark(b, text, unused="ignore", scoped=True)))
        for _ in range(150):
            s = "".join(rng.choice("abcxy()0,  ") for _ in range(rng.randint(0, 6)))
            got, want = accepts_text(scoped, s), accepts_text(whole, s)
            assert got == want if trailing or not s.endswith(" ") else want or not got, (text, s, got)
