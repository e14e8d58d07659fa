"""Oracle tests for token masks (issue 3, "What it must show").

For many grammars (hand-written and seeded random regexes; hand-written and seeded random
context-free grammars with recursion, nullable rules and nullable lexemes, ambiguity, left
recursion, ignored white space, overlapping lexemes, lazy lexemes, random regex lexemes, special
tokens and Unicode) and for small synthetic vocabularies and the real 128k DeepSeek vocabulary,
the mask from ``fill_next_token_bitmask`` must equal, at every step of random valid walks (random
allowed tokens; strings of the language cut into random tokens) and invalid walks (refused tokens
tried at every step; mutated strings followed up to the first refused token), the set of tokens a
brute-force oracle accepts (tests/python/oracles/: the ``regex`` module for regexes, checked
against a second oracle on random regexes; a character-level Earley recognizer for CFGs). The EOS
bits must equal "the text is complete", ``is_accepting`` likewise, ``accept_token`` must agree
with the mask (a refused token leaves the state unchanged), ``forced_tokens`` must start with
the single allowed token when there is one and ``forced_bytes`` must equal the oracle's run of
only-possible bytes. Rollback, fork, ``validate_tokens``, ``accept_bytes``, ``reset`` and batch
filling on two threads must give the same masks as replaying from scratch.

Synthetic vocabularies: ids 0-255 are the single bytes (so every byte string is reachable,
including invalid UTF-8), 256 is EOS, 257 and 258 are special tokens (258's bytes are b"a": a
special token is never allowed for its bytes), then multi-byte tokens cut from strings of the
grammar's language at random byte offsets (partial UTF-8 at either end, tokens crossing lexeme
boundaries), long tokens spanning many lexemes, random junk and invalid UTF-8, a few duplicate
byte strings, a second EOS id, and padding ids past the last token (never allowed).

Counts and the runtime are printed at the end of the module (``pytest -s``).
"""
from __future__ import annotations

import os
import random
import sys
import time
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import oracles as O  # noqa: E402
from oracles import (CFG, R, Choice, Cls, Delim, Lit, Many, Opt, Plus, Ref, Rep, Seq, Special,  # noqa: E402
                     Star, StarCls, Word)

from mask_oracle_checks import (EOS, SP_A, SP_B, SPECIALS, STATS, RegexTracker, StateTracker,  # noqa: E402
                                bytes_index, engine_mask, fmt_tokens, mutate_units, string_walk, synthetic_vocab,
                                token_walk, units_to_tokens)

import stencil  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _report():
    t0 = time.time()
    yield
    print(f"\n[mask oracle] {STATS['grammars']} grammars ({STATS['regex_grammars']} regex, "
          f"{STATS['cfg_grammars']} CFG), {STATS['steps']} oracle-compared steps "
          f"({STATS['deepseek_steps']} on the 128k vocabulary), {STATS['tokens']:,} token verdicts compared, "
          f"{STATS['oracle_cross_checks']} masks where two oracles agreed, {STATS['forced_bytes_checks']} "
          f"forced_bytes checks, {STATS['refused']} refused tokens checked, {STATS['replay_checks']} "
          f"replay/rollback/fork/batch mask checks, {time.time() - t0:.1f} s")
    print(f"[mask oracle] mean allowed tokens per mask {STATS['allowed'] / max(1, STATS['steps']):.1f}; "
          f"allowed tokens that are not valid UTF-8 on their own (synthetic): {STATS['partial_utf8_allowed']}; "
          f"token-walk steps {STATS['token_walk_steps']}; string walks: {STATS['string_walks_completed']} ran to "
          f"the end ({STATS['string_walks_complete_text']} complete texts), {STATS['string_walks_refused']} stopped "
          f"at a refused token")


# ------------------------------------------------------------------------------ regexes

HANDWRITTEN_REGEXES = [  # (pattern, strings of its language for the string walks)
    (r"\d{4}-\d{2}-\d{2}", ["2024-01-31", "0000-99-19"]),
    (r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?", ["-12.5e+3", "0", "10E7"]),
    (r"[a-zA-Z_][a-zA-Z0-9_]*", ["_x1", "Hello_World"]),
    (r"(a|aa)*b", ["aaaab", "b"]),
    (r"[α-ω]+", ["αβγ", "ω"]),
    (r".{0,5}x", ["héllx", "😀x", "x"]),
    (r"(x+x+)+y", ["xxxxy", "xxy"]),
    (r"(yes|no|maybe)", ["maybe", "no"]),
    (r"(中文|日本語|한국어)+[0-9]{1,3}", ["中文한국어12", "日本語9"]),
    (r"(?:\+|-)?\d{1,3}(?:,\d{3})*", ["+1,234,567", "-12"]),
    (r"[😀-😂]{2}é?", ["😀😂é", "😁😁"]),
    (r"(?:ab|a)(?:bc|c)", ["abc", "abbc"]),
    (r"[^a-z]{1,3}z", ["中Éz", "1z"]),
    (r"\w+@\w+\.(com|org)", ["alice@example.com", "x_1@y.org"]),
    (r"", [""]),
    (r"(a|b|)c", ["ac", "c"]),
    (r"[\u0080-\u07ff]{1,2}[\u0800-\uffff]\u{10000}?", ["é\u07ff\u0800", "ß\uffff\U00010000"]),
    (r"(?<year>\d{4})|(?P<other>x)", ["2024", "x"]),
    (r"a+?b*?c??", ["aabbc", "a"]),
    (r"[\n\t ]*x\.", ["\n\t x.", "x."]),
    (r"(?:[a-c]{2,3}){2}", ["abcab", "aaaa"]),
    (r"[^\"\\]*\"", ["héllo 中\"", "\""]),
    (r"\D\W[^\d]", ["a-b", "中中中"]),
    (r"[^\n]{2}", ["\r\u2028", "ab"]),
]


class CrossCheckTracker(RegexTracker):
    """A RegexTracker that also asks the Earley oracle (on the regex's AST as a CFG) at every
    mask and insists both oracles agree before the engine is judged."""

    def __init__(self, lang, vocab, cfg_oracle: O.ByteOracle):
        super().__init__(lang, vocab)
        self.second = StateTracker(cfg_oracle, vocab)

    def mask(self):
        a, b = super().mask(), self.second.mask()
        assert np.array_equal(a, b), (f"the two oracles disagree after {self.describe()}: regex module allows "
                                      f"{fmt_tokens(np.nonzero(a & ~b)[0], self.vocab)}; Earley allows "
                                      f"{fmt_tokens(np.nonzero(b & ~a)[0], self.vocab)}")
        STATS["oracle_cross_checks"] += 1
        return a

    def advance(self, t):
        super().advance(t)
        self.second.advance(t)


class RegexCase:
    """A pattern with its oracle and strings of its language (``texts`` feed the vocabulary)."""

    def __init__(self, pattern: str, rng: random.Random, sampler=None, examples=(), node=None):
        self.pattern, self.node = pattern, node
        self.lang = O.RegexLanguage(O.ecma_to_python(pattern))
        if sampler is None:
            sampler = regex_sampler(self.lang, rng)
        self.samples = list(examples) + [x for x in (sampler() for _ in range(8)) if x is not None]
        rng.shuffle(self.samples)
        for s in self.samples:  # the oracle itself must accept its own language
            assert self.lang.complete_bytes(s.encode()), f"oracle/sampler disagree on {s!r} for {pattern!r}"
        self.texts = [s.encode() for s in self.samples]


def regex_case(pattern: str, rng: random.Random, sampler=None, walks=4, steps=14, examples=(), node=None):
    """Compile ``pattern`` against a synthetic vocabulary and run valid and invalid walks."""
    case = RegexCase(pattern, rng, sampler, examples, node)
    info, vocab = synthetic_vocab(rng, case.texts)
    run_regex_case(case, info, vocab, stencil.GrammarCompiler(info), rng, walks, steps)


def run_regex_case(case: RegexCase, info, vocab, compiler, rng, walks, steps):
    pattern, lang, samples, node = case.pattern, case.lang, case.samples, case.node
    g = compiler.compile_regex(pattern)
    STATS["grammars"] += 1
    STATS["regex_grammars"] += 1
    by_bytes, max_len = bytes_index(vocab)
    what = f"regex {pattern!r}"
    second = O.ByteOracle(O.EarleyLanguage(O.regex_to_cfg(node))) if node is not None else None
    for w in range(walks):
        m = stencil.Matcher(g, max_rollback=-1)
        tr = RegexTracker(lang, vocab) if second is None else CrossCheckTracker(lang, vocab, second)
        if w % 2 == 0:
            token_walk(rng, m, tr, vocab, f"{what} token walk {w}", steps)
        else:
            units = [samples[w % len(samples)].encode()]
            if w == 3:
                units = mutate_units(rng, units)
            toks = units_to_tokens(rng, units, by_bytes, max_len)
            done = string_walk(rng, m, tr, vocab, toks[:steps * 2], f"{what} string walk {w}")
            if w != 3:
                assert done, f"{what}: a string of the language was refused"
                # a long sample is checked mask by mask up to its cut; its rest is accepted plainly
                assert all(m.accept_token(t) for t in toks[steps * 2:]), f"{what}: a string of the language was refused"
                assert m.is_accepting(), f"{what}: a string of the language is incomplete"


def regex_sampler(lang: O.RegexLanguage, rng: random.Random):
    """For hand-written patterns: strings of the language by a random oracle-guided walk over
    characters (each step keeps a viable prefix; stops when complete)."""
    chars = sorted(set(O.SAMPLE_CHARS) | {chr(c) for c in lang.boundaries if c <= O.MAX_CP and not 0xD800 <= c < 0xE000})

    def sample():
        for _ in range(20):
            text = ""
            for _ in range(16):
                if lang.accepting(text) and rng.random() < 0.35:
                    return text
                nxt = [c for c in chars if lang.step(text, ord(c)) is not None]
                if not nxt:
                    break
                text += rng.choice(nxt)
            if lang.accepting(text):
                return text
        return None

    return sample


@pytest.mark.parametrize("pattern,examples", HANDWRITTEN_REGEXES, ids=[p for p, _ in HANDWRITTEN_REGEXES])
def test_handwritten_regex_masks(pattern, examples):
    rng = random.Random(zlib.crc32(pattern.encode()))
    regex_case(pattern, rng, examples=examples, walks=6, steps=20)


@pytest.mark.parametrize("seed", range(30))
def test_random_regex_masks(seed):
    """Six random regexes per seed, all compiled for ONE vocabulary (and so sharing its
    cross-grammar mask cache), odd seeds through one GrammarCompiler."""
    rng = random.Random(1000 + seed)
    cases = []
    for _k in range(6):
        node = O.random_regex(rng, depth=rng.choice([2, 3, 4]))
        pattern = node.render(python=False)
        assert O.ecma_to_python(pattern) == node.render(python=True)
        cases.append(RegexCase(pattern, rng, sampler=lambda node=node: node.sample(rng, [8]), node=node))
    info, vocab = synthetic_vocab(rng, [t for c in cases for t in c.texts], n_multi=240)
    compiler = stencil.GrammarCompiler(info)
    for c in cases:
        run_regex_case(c, info, vocab, compiler if seed % 2 else stencil.GrammarCompiler(info), rng, 4, 16)


# Families of nearly equal regexes on one vocabulary: lexer states of different grammars that
# differ in one detail must never share a cached mask.
NEAR_MISS_FAMILIES = [
    [r"a{2,3}b", r"a{2,4}b", r"a{3}b", r"a{2,}b", r"a{2,3}c"],
    [r"[a-c]+x", r"[a-d]+x", r"[b-c]+x", r"[^a-c]+x", r"[a-c]*x"],
    [r"(ab|cd)+", r"(ab|ce)+", r"(ab|cd)*", r"(?:ab|cd){2}", r"(ab|cd)+?"],
    [r"[α-ω]{1,3}", r"[α-ψ]{1,3}", r"[β-ω]{1,3}", r"[α-ω]{1,4}", r"[α-ω]{0,3}"],
    [r"\d+\.\d*", r"\d*\.\d+", r"\d+\.\d+", r"\d+,\d*", r"[0-8]+\.\d*"],
    [r".{0,3}x", r".{0,4}x", r"[^\n]{0,3}x", r".{1,3}x", r"[^\r]{0,3}x"],
    [r"[😀-😂]+", r"[😀-😃]+", r"[😁-😂]+", r"[😀-😂]*a", r"[😀-😂]{1,2}"],
    [r"\"[^\"]*\"", r"\"[^\"\\]*\"", r"\"[^\"]{0,5}\"", r"\"[^\"]*\",", r"'[^\"]*\""],
]


@pytest.mark.parametrize("family", range(len(NEAR_MISS_FAMILIES)))
def test_near_miss_regexes_share_a_vocabulary(family):
    rng = random.Random(77 + family)
    cases = [RegexCase(p, rng) for p in NEAR_MISS_FAMILIES[family]]
    info, vocab = synthetic_vocab(rng, [t for c in cases for t in c.texts], n_multi=200)
    for _rnd in range(2):  # the second round finds every state in the shared cache
        for c in cases:
            run_regex_case(c, info, vocab, stencil.GrammarCompiler(info), rng, 4, 14)


# ------------------------------------------------------------------------------ CFGs

WS = R(" \t\n")
HANDWRITTEN_CFGS = [
    CFG("arithmetic, left recursive", {
        "E": [[Ref("E"), Lit("+"), Ref("T")], [Ref("E"), Lit("-"), Ref("T")], [Ref("T")]],
        "T": [[Ref("T"), Lit("*"), Ref("F")], [Ref("F")]],
        "F": [[Lit("("), Ref("E"), Lit(")")], [Plus(R("0-9"))], [Lit("-"), Ref("F")]],
    }, "E", ignore=R(" \t")),
    CFG("balanced brackets, ambiguous and nullable", {
        "S": [[Ref("S"), Ref("S")], [Lit("("), Ref("S"), Lit(")")], [Lit("["), Ref("S"), Lit("]")], []],
    }, "S"),
    CFG("json-like values", {
        "V": [[Ref("L")], [Ref("O")], [Plus(R("0-9"))], [Delim('"', '"')], [Lit("true")], [Lit("false")],
              [Lit("null")]],
        "L": [[Lit("["), Opt(Seq((Ref("V"), Star(Seq((Lit(","), Ref("V"))))))), Lit("]")]],
        "O": [[Lit("{"), Opt(Seq((Ref("P"), Star(Seq((Lit(","), Ref("P"))))))), Lit("}")]],
        "P": [[Delim('"', '"'), Lit(":"), Ref("V")]],
    }, "V", ignore=WS),
    CFG("unicode arrows, right recursive, ideographic space ignored", {
        "S": [[Ref("X")], [Ref("X"), Lit("→"), Ref("S")]],
        "X": [[Plus(R("α-ω"))], [Lit("中文")], [Lit("😀"), Opt(Cls(R("0-9")))]],
    }, "S", ignore=R(" \u3000")),
    CFG("nullable chains", {
        "S": [[Ref("A"), Ref("B"), Ref("C"), Lit("x")], [Ref("B"), Ref("B")]],
        "A": [[], [Lit("a")]],
        "B": [[Ref("A"), Ref("A")], [Lit("b"), Ref("B")]],
        "C": [[Ref("B")], [Lit("c")], [Ref("A"), Ref("C"), Lit("d")]],
    }, "S"),
    CFG("overlapping lexemes", {
        "S": [[Cls(R("a-c")), Lit("x")], [Lit("b"), Lit("y")], [Plus(R("0-9")), Lit(";"), Ref("S")], [Lit("z")]],
    }, "S"),
    CFG("lazy and greedy delimited lexemes sharing a prefix with a literal", {
        "S": [[Ref("I")], [Ref("S"), Lit(","), Ref("I")]],
        "I": [[Delim("<!", ">", True)], [Delim("'", "'", True)], [Delim('"', '"')], [Lit("<")]],
    }, "S", ignore=R(" ")),
    CFG("special tokens", {
        "S": [[Lit("a"), Special((SP_A,)), Ref("S")], [Lit("b")], [Special((SP_B,)), Lit("c")]],
    }, "S", ignore=R(" ")),
    CFG("keywords", {
        "S": [[Lit("if"), Ref("E"), Lit("then"), Ref("S")], [Ref("E")]],
        "E": [[Plus(R("0-9"))], [Lit("("), Ref("E"), Lit(")")]],
    }, "S", ignore=R(" ")),
    CFG("ambiguous sums", {
        "E": [[Ref("E"), Lit("+"), Ref("E")], [Cls(R("0-9"))], [Cls(R("α-ω"))]],
    }, "E"),
    CFG("bounded repeats and choices", {
        "S": [[Rep(Lit("ab"), 2, 4), Opt(Ref("S"))], [Choice((Lit("é"), Lit("ß"))), Many(Cls(R("0-9")))]],
    }, "S"),
    CFG("left-recursive list with optional separators", {
        "L": [[Ref("L"), Opt(Lit(",")), Cls(R("a-z"))], []],
    }, "L"),
    CFG("nullable lexemes (zero or more characters)", {
        "S": [[StarCls(R("a")), StarCls(R("b")), Opt(Ref("T"))], [Lit("x"), StarCls(R("α-ω")), Special((SP_A,))]],
        "T": [[Lit(";"), StarCls(R("0-9"))]],
    }, "S"),
    CFG("keywords and identifiers (re_and / re_not)", {
        "S": [[Lit("if"), Ref("E"), Lit("then"), Lit("{"), Ref("S"), Lit("}")],
              [Word(R("a-z"), ("if", "then")), Lit("="), Ref("E")],
              [Ref("S"), Lit(";"), Ref("S")]],
        "E": [[Plus(R("0-9"))], [Lit("("), Word(R("a-zα-ω"), ("if", "then", "αβ")), Lit(")")]],
    }, "S", ignore=R(" ")),
    CFG("random regex lexemes", {
        "S": [[Ref("S"), Ref("X")], [Ref("X")]],
        "X": [[O.random_regex_lexeme(random.Random(11))], [O.random_regex_lexeme(random.Random(12))],
              [O.random_regex_lexeme(random.Random(15))], [O.random_regex_lexeme(random.Random(16))]],
    }, "S"),
]


class CfgCase:
    """A CFG description with its Earley oracle and strings of its language."""

    def __init__(self, cfg: CFG, rng: random.Random):
        reason = O.greedy_safe(cfg)
        assert reason is None, f"{cfg.name}: not usable with the character-level oracle: {reason}"
        self.cfg = cfg
        self.oracle = O.ByteOracle(O.EarleyLanguage(cfg))
        self.samples = [O.segments_to_units(O.sample_cfg(cfg, rng)) for _ in range(8)]
        for units in self.samples:  # the oracle accepts its own samples
            st = self.oracle.start()
            for u in units:
                st = self.oracle.push_bytes(st, u) if isinstance(u, bytes) else self.oracle.push_special(st, u[1])
                assert st is not None, f"{cfg}\noracle refuses its own sample {units}"
            assert self.oracle.accepting(st), f"{cfg}\noracle: sample {units} incomplete"
        self.texts = [b"".join(u for u in units if isinstance(u, bytes)) for units in self.samples]


def cfg_case(cfg: CFG, rng: random.Random, walks=4, steps=14):
    case = CfgCase(cfg, rng)
    info, vocab = synthetic_vocab(rng, case.texts)
    return run_cfg_case(case, info, vocab, stencil.GrammarCompiler(info), rng, walks, steps)


def run_cfg_case(case: CfgCase, info, vocab, compiler, rng, walks, steps):
    cfg, oracle, samples = case.cfg, case.oracle, case.samples
    g = compiler.compile_grammar(O.build_stencil(cfg, stencil.GrammarBuilder))
    STATS["grammars"] += 1
    STATS["cfg_grammars"] += 1
    by_bytes, max_len = bytes_index(vocab)
    what = f"CFG {cfg.name}\n{cfg}\n"
    for w in range(walks):
        m = stencil.Matcher(g, max_rollback=-1)
        tr = StateTracker(oracle, vocab)
        if w % 2 == 0:
            token_walk(rng, m, tr, vocab, f"{what} token walk {w}", steps)
        else:
            units = samples[w]
            if w == 3:
                units = mutate_units(rng, units)
            toks = units_to_tokens(rng, units, by_bytes, max_len)
            done = string_walk(rng, m, tr, vocab, toks[:steps * 2], f"{what} string walk {w}")
            if w != 3:
                assert done, f"{what}: a string of the language was refused"
                # a long sample is checked mask by mask up to its cut; its rest is accepted plainly
                assert all(m.accept_token(t) for t in toks[steps * 2:]), f"{what}: a string of the language was refused"
                assert m.is_accepting(), f"{what}: a string of the language is incomplete"
    return g, vocab


@pytest.mark.parametrize("cfg", HANDWRITTEN_CFGS, ids=[c.name for c in HANDWRITTEN_CFGS])
def test_handwritten_cfg_masks(cfg):
    cfg_case(cfg, random.Random(len(cfg.name)), walks=6, steps=25)


@pytest.mark.parametrize("seed", range(30))
def test_random_cfg_masks(seed):
    """Five random CFGs per seed, all compiled for one vocabulary."""
    rng = random.Random(2000 + seed)
    cases = [CfgCase(O.random_cfg(rng, seed * 10 + k, SPECIALS, regex_lexemes=2), rng) for k in range(5)]
    info, vocab = synthetic_vocab(rng, [t for c in cases for t in c.texts], n_multi=240)
    compiler = stencil.GrammarCompiler(info)
    for c in cases:
        run_cfg_case(c, info, vocab, compiler, rng, 4, 20)


def test_handwritten_cfgs_share_a_vocabulary():
    """Every hand-written CFG on one vocabulary, twice over, plus the same grammars without their
    ignored white space and with lazy/greedy delimited lexemes swapped (near-identical lexer
    states in different grammars)."""
    rng = random.Random(4)
    variants = list(HANDWRITTEN_CFGS)
    for cfg in HANDWRITTEN_CFGS:
        if cfg.ignore:
            variants.append(CFG(cfg.name + " (no white space)", cfg.rules, cfg.start))
    flip = {Delim('"', '"'): Delim('"', '"', True), Delim("'", "'", True): Delim("'", "'")}
    variants.append(CFG("lazy/greedy swapped", {n: [[flip.get(x, x) for x in alt] for alt in alts]
                                                 for n, alts in HANDWRITTEN_CFGS[6].rules.items()}, "S", R(" ")))
    cases = [CfgCase(c, rng) for c in variants]
    info, vocab = synthetic_vocab(rng, [t for c in cases for t in c.texts], n_multi=300)
    for _rnd in range(2):
        for c in cases:
            run_cfg_case(c, info, vocab, stencil.GrammarCompiler(info), rng, 2, 14)


# ------------------------------------------------------------------------------ oracle self-checks

def test_utf8_oracle_edges():
    assert O.char_prefix(b"\xc3") == ("partial", [(0xC0, 0xFF)])
    assert O.char_prefix(b"\xc0") is None and O.char_prefix(b"\xc1") is None  # overlong
    assert O.char_prefix(b"\xe0\x80") is None  # overlong
    assert O.char_prefix(b"\xed\xa0") is None  # surrogates
    assert O.char_prefix(b"\xed\x9f") == ("partial", [(0xD7C0, 0xD7FF)])
    assert O.char_prefix(b"\xf4\x90") is None and O.char_prefix(b"\xf5") is None  # beyond U+10FFFF
    assert O.char_prefix(b"\xf0\x9f\x98\x80") == ("char", 0x1F600)
    assert O.split_utf8(b"a\xe4\xb8") == ("a", [(0x4E00, 0x4E3F)])
    assert O.split_utf8(b"\xe4\xb8a") is None
    assert O.representatives([(0x4E00, 0x4E3F)], O.sorted_boundaries([0x4E10, 0x4E11])) == [0x4E00, 0x4E10, 0x4E11]


def test_oracle_mask_strategies_agree():
    """The direct regex oracle, the prefix walk and the token-by-token state walk agree."""
    rng = random.Random(7)
    for pattern in (r"(中文|ab)+\d?", r"[^a]{0,3}é"):
        lang = O.RegexLanguage(O.ecma_to_python(pattern))
        _, vocab = synthetic_vocab(rng, [s.encode() for s in ("中文ab中文1", "bbé", "ab")])
        bo = O.ByteOracle(lang)
        for prefix in (b"", b"\xe4", "中".encode(), b"ab", b"x"):
            st = bo.push_bytes(bo.start(), prefix)
            if st is None:
                continue
            a = O.regex_mask_direct(lang, prefix, vocab)
            assert np.array_equal(a, O.mask_prefix_walk(bo, st, vocab))
            assert np.array_equal(a, O.mask_direct_states(bo, st, vocab))


def test_oracles_known_answers():
    """The oracles on hand-checked cases, so that they cannot be wrong the same way as stencil."""
    lang = O.RegexLanguage(O.ecma_to_python(r"[α-ω]+"))
    assert lang.viable_bytes(b"\xce") and lang.viable_bytes(b"\xcf")  # U+0380.., U+03C0..
    assert not lang.viable_bytes("ϊ".encode()) and not lang.viable_bytes(b"\xcf\x8a")  # U+03CA > ω
    assert not lang.viable_bytes(b"\xd0") and not lang.viable_bytes(b"\xc0")
    assert not lang.complete_bytes(b"") and lang.complete_bytes("αω".encode())
    lang = O.RegexLanguage(O.ecma_to_python(r".{0,2}x"))
    assert lang.viable_bytes(b"\xe2\x80") and not lang.viable_bytes("\u2028".encode())
    assert lang.viable_bytes("\u2027".encode()) and not lang.viable_bytes(b"abc") and lang.complete_bytes(b"abx")
    assert O.ecma_to_python(r"a+?(?<n>b)??\d{2,}?") == "a+(?P<n>b)?[0-9]{2,}"

    def verdicts(cfg, texts):
        bo = O.ByteOracle(O.EarleyLanguage(cfg))
        out = []
        for t in texts:
            st = bo.push_bytes(bo.start(), t.encode())
            out.append("dead" if st is None else "complete" if bo.accepting(st) else "prefix")
        return out

    brackets, arith, nullable = HANDWRITTEN_CFGS[1], HANDWRITTEN_CFGS[0], HANDWRITTEN_CFGS[12]
    assert verdicts(brackets, ["", "(()", "())", "([)]", "()[()]"]) == ["complete", "prefix", "dead", "dead", "complete"]
    assert verdicts(arith, ["1+", "1 2", " 12 ", "(1*-2", "1+*2", "((3))-4"]) == \
        ["prefix", "dead", "complete", "prefix", "dead", "complete"]
    assert verdicts(nullable, ["", "aab", "ba", ";", "b;12", "x", "xαβ"]) == \
        ["complete", "complete", "dead", "complete", "complete", "prefix", "prefix"]
    word = CFG("word", {"S": [[Word(R("a-z"), ("if", "then"))]]}, "S")
    assert verdicts(word, ["", "i", "if", "ifx", "the", "then", "thenx", "x1"]) == \
        ["prefix", "complete", "prefix", "complete", "complete", "prefix", "complete", "dead"]
    lazy = HANDWRITTEN_CFGS[6]
    assert verdicts(lazy, ["<!a>", "<!a>>", "<,<!>", "'x'y'", "\"a\"", "<! '\" >"]) == \
        ["complete", "dead", "complete", "dead", "complete", "complete"]


def test_scripted_walks():
    """Deterministic walks through the spots random walks may miss: partial UTF-8 before a
    special token and before EOS, byte-by-byte 4-byte characters, empty lexemes at the end."""
    rng = random.Random(1)
    cases = [
        (HANDWRITTEN_CFGS[12], [[b"x", b"\xce", SP_A], [b"x", b"\xce\xb1", SP_A], [b"x", SP_A], [b"a", b"b", b";"],
                                [b"b", b"a"]]),
        (HANDWRITTEN_CFGS[7], [[b"a", SP_A, b" ", b"b"], [SP_B, b"c"], [b"a", b" ", SP_A, b"a", SP_A, b"b"]]),
        (HANDWRITTEN_CFGS[3], [[b"\xf0", b"\x9f", b"\x98", b"\x80", b"1", "\u3000".encode()[:1]],
                               [b"\xce", b"\xb1", b"\xe2", b"\x86", b"\x92", b"\xe4\xb8"]]),
    ]
    for cfg, walks in cases:
        oracle = O.ByteOracle(O.EarleyLanguage(cfg))
        info, vocab = synthetic_vocab(rng, [b"".join(p for p in w if isinstance(p, bytes)) for w in walks])
        g = stencil.GrammarCompiler(info).compile_grammar(O.build_stencil(cfg, stencil.GrammarBuilder))
        by_bytes, _ = bytes_index(vocab)
        for w in walks:
            toks = [p if isinstance(p, int) else by_bytes[p][0] for p in w]
            string_walk(rng, stencil.Matcher(g), StateTracker(oracle, vocab), vocab, toks, f"CFG {cfg.name} {w}")
    for pattern, steps in [(r"[😀-😂]{2}é?", [b"\xf0", b"\x9f", b"\x98", b"\x80", b"\xf0\x9f", b"\x98\x82", b"\xc3"]),
                           (r"[^a-z]{1,3}z", [b"\xed", b"\x9f", b"\xbf", b"\xf4\x8f", b"\xbf\xbf", b"z"])]:
        lang = O.RegexLanguage(O.ecma_to_python(pattern))
        info, vocab = synthetic_vocab(rng, [b"".join(steps)])
        g = stencil.GrammarCompiler(info).compile_regex(pattern)
        by_bytes, _ = bytes_index(vocab)
        string_walk(rng, stencil.Matcher(g), RegexTracker(lang, vocab), vocab, [by_bytes[p][0] for p in steps],
                    f"regex {pattern!r}")


def test_greedy_safety_check_rejects_unsafe_grammars():
    assert O.greedy_safe(CFG("two numbers", {"S": [[Plus(R("0-9")), Plus(R("0-9"))]]}, "S")) is not None
    assert O.greedy_safe(CFG("prefix literal", {"S": [[Lit("a"), Lit("bc")], [Lit("ab")]]}, "S")) is not None
    assert O.greedy_safe(CFG("ws starts lexeme", {"S": [[Lit(" a")]]}, "S", ignore=R(" "))) is not None
    assert O.greedy_safe(CFG("separated", {"S": [[Plus(R("0-9")), Lit(","), Plus(R("0-9"))]]}, "S")) is None


# ------------------------------------------------------------------------------ DeepSeek 128k

@pytest.fixture(scope="module")
def deepseek():
    import tokenizers_zoo

    entry = tokenizers_zoo.get("deepseek")
    return entry, O.Vocab.from_info(entry.info)


DEEPSEEK_REGEXES = [
    (r"\d{4}-\d{2}-\d{2}", ["2024-01-31", "1999-12-05"]),
    (r"[a-z]+@[a-z]+\.(com|org)", ["alice@example.com"]),
    (r"(中文|日本語)+[0-9]{1,3}( [α-ω]+)?", ["中文日本語12 αβγ"]),
    (r".{0,6}x", ["héllo x", "😀😀x"]),
    # a part that loops on any text beside partial matches of a searched pattern
    (r".*\d{2}-x.{0,3}", ["ab 12-xyz", "é 99-x"]),
    # character counts with a lower bound only, and with equal bounds, before a non-text byte
    (r".{4,}\n", ["héllo wörld\n", "abcd\n"]),
    (r"[^\n]{9}\n", ["abcdéfghi\n"]),
    # states that loop on a class of characters (whole sub-tries skipped), one excluding some
    # non-ASCII characters (\s has U+00A0, U+3000, ...), one with a bound no token reaches
    (r"[^/]+/[^/]+", ["sec/12 é", "日本/語"]),
    (r"[^ \n\u00a0\u3000]+ [^ \n\u00a0\u3000]*\n", ["héllo wörld\n", "x😀中文、 \n"]),
    (r"[\w.-]{0,200}@", ["abc.d-e@", "ab_12@"]),
    (r"[^é\n]*é", ["abcé", "中文ñé"]),
    # counts below the longest token: sub-tries no deeper than the count walk it lifted
    (r"[a-z ]{0,40}@[a-z.]{1,50}\.com", ["hello there@mail.example.com", "@x.com"]),
]


@pytest.mark.parametrize("pattern,texts", DEEPSEEK_REGEXES, ids=[p for p, _ in DEEPSEEK_REGEXES])
def test_deepseek_regex_masks(deepseek, pattern, texts):
    entry, vocab = deepseek
    rng = random.Random(len(pattern))
    lang = O.RegexLanguage(O.ecma_to_python(pattern))
    g = stencil.GrammarCompiler(entry.info).compile_regex(pattern)
    STATS["grammars"] += 1
    STATS["regex_grammars"] += 1
    for text in texts:
        assert lang.complete_bytes(text.encode())
        ids = entry.encode_batch([text])[0]
        assert b"".join(vocab.token_bytes[i] for i in ids) == text.encode()
        m = stencil.Matcher(g, max_rollback=-1)
        assert string_walk(rng, m, RegexTracker(lang, vocab), vocab, ids, f"deepseek regex {pattern!r}",
                           compare_every=2, deepseek=True)
        assert m.is_accepting()
    # a random walk over the whole vocabulary's allowed tokens
    m = stencil.Matcher(g, max_rollback=-1)
    token_walk(rng, m, RegexTracker(lang, vocab), vocab, f"deepseek regex {pattern!r} token walk", 3,
               eos_prob=0.0, deepseek=True)


DEEPSEEK_CFGS = [HANDWRITTEN_CFGS[0], HANDWRITTEN_CFGS[3], HANDWRITTEN_CFGS[7]]


@pytest.mark.parametrize("cfg", DEEPSEEK_CFGS, ids=[c.name for c in DEEPSEEK_CFGS])
def test_deepseek_cfg_masks(deepseek, cfg):
    entry, vocab = deepseek
    rng = random.Random(3)
    # the special-token grammar names two of DeepSeek's own special tokens
    specials = sorted(set(entry.info.special_token_ids) - set(entry.info.eos_token_ids))
    cfg = O.remap_specials(cfg, {SP_A: specials[0], SP_B: specials[1]})
    assert O.greedy_safe(cfg) is None
    oracle = O.ByteOracle(O.EarleyLanguage(cfg))
    g = stencil.GrammarCompiler(entry.info).compile_grammar(O.build_stencil(cfg, stencil.GrammarBuilder))
    STATS["grammars"] += 1
    STATS["cfg_grammars"] += 1
    for _ in range(2):
        ids = []
        for seg in O.sample_cfg(cfg, rng, max_depth=4):
            ids += entry.encode_batch([seg])[0] if isinstance(seg, str) else [seg[1]]
        m = stencil.Matcher(g, max_rollback=-1)
        assert string_walk(rng, m, StateTracker(oracle, vocab), vocab, ids[:8], f"deepseek CFG {cfg.name}",
                           deepseek=True)
    m = stencil.Matcher(g, max_rollback=-1)
    token_walk(rng, m, StateTracker(oracle, vocab), vocab, f"deepseek CFG {cfg.name} token walk", 3,
               eos_prob=0.0, deepseek=True)


# ------------------------------------------------------------------------------ rollback, fork, batch

def _grammars_for_replay():
    rng = random.Random(99)
    out = []
    for pattern in (r"(a|aa)*b", r"[α-ω]+( [0-9]{1,3})?", r".{0,5}x", r"(中文|ab)+\d?"):
        info, vocab = synthetic_vocab(rng, [b"aab", "αβγ 12".encode(), "héllox".encode(), "中文ab1".encode()])
        out.append((f"regex {pattern!r}", stencil.GrammarCompiler(info).compile_regex(pattern), vocab, info))
    for cfg in (HANDWRITTEN_CFGS[0], HANDWRITTEN_CFGS[2], HANDWRITTEN_CFGS[6], HANDWRITTEN_CFGS[7]):
        texts = [b"".join(u for u in O.segments_to_units(O.sample_cfg(cfg, rng)) if isinstance(u, bytes))
                 for _ in range(6)]
        info, vocab = synthetic_vocab(rng, texts)
        g = stencil.GrammarCompiler(info).compile_grammar(O.build_stencil(cfg, stencil.GrammarBuilder))
        out.append((f"CFG {cfg.name}", g, vocab, info))
    return out


def _random_path(rng, m, vocab, n):
    """Accept up to n random allowed non-EOS tokens (by the engine's own mask); returns
    (tokens, masks before each token and after the last)."""
    toks, masks = [], []
    for _ in range(n):
        mask = engine_mask(m, vocab.vocab_size)
        masks.append(mask)
        choices = [int(t) for t in np.nonzero(mask)[0] if t not in vocab.eos]
        if not choices:
            break
        t = rng.choice(choices)
        assert m.accept_token(t)
        toks.append(t)
    if len(masks) == len(toks):
        masks.append(engine_mask(m, vocab.vocab_size))
    return toks, masks


def _replay_masks(g, vocab, toks):
    m = stencil.Matcher(g)
    masks = [engine_mask(m, vocab.vocab_size)]
    for t in toks:
        assert m.accept_token(t)
        masks.append(engine_mask(m, vocab.vocab_size))
    return masks


def _eq(a, b, what):
    STATS["replay_checks"] += 1
    assert np.array_equal(a, b), f"{what}: masks differ ({np.count_nonzero(a != b)} tokens)"


@pytest.mark.parametrize("case", range(8))
def test_rollback_fork_validate_replay(case):
    what, g, vocab, _ = _grammars_for_replay()[case]
    rng = random.Random(case)
    for _trial in range(3):
        m = stencil.Matcher(g, max_rollback=-1)
        toks, masks = _random_path(rng, m, vocab, 16)
        fresh = _replay_masks(g, vocab, toks)
        for i, (a, b) in enumerate(zip(masks, fresh)):
            _eq(a, b, f"{what}: walk vs fresh replay at step {i}")
        n = len(toks)
        # rollback k, then replay: same masks as from scratch
        for _ in range(3):
            k = rng.randint(0, n)
            m.rollback(k)
            _eq(engine_mask(m, vocab.vocab_size), fresh[n - k], f"{what}: rollback({k})")
            assert m.num_accepted_tokens == n - k
            for j in range(n - k, n):
                assert m.accept_token(toks[j])
                _eq(engine_mask(m, vocab.vocab_size), fresh[j + 1], f"{what}: replay after rollback({k})")
        # EOS then rollback(1)
        if m.is_accepting():
            assert m.accept_token(EOS) and m.is_terminated()
            m.rollback(1)
            assert not m.is_terminated()
            _eq(engine_mask(m, vocab.vocab_size), fresh[n], f"{what}: rollback of EOS")
        # fork at a random point: both continue independently
        i = rng.randint(0, n)
        m.rollback(n - i)
        f = m.fork()
        _eq(engine_mask(f, vocab.vocab_size), fresh[i], f"{what}: fork at {i}")
        ftoks, fmasks = _random_path(rng, f, vocab, 6)
        _eq(engine_mask(m, vocab.vocab_size), fresh[i], f"{what}: original after the fork moved on")
        for j in range(i, n):
            assert m.accept_token(toks[j])
        _eq(engine_mask(m, vocab.vocab_size), fresh[n], f"{what}: original replayed after fork")
        ffresh = _replay_masks(g, vocab, toks[:i] + ftoks)
        for j, fm in enumerate(fmasks):
            _eq(fm, ffresh[i + j], f"{what}: fork path step {j}")
        # validate_tokens: same count as one by one, state unchanged
        m.rollback(n - i)
        tail = toks[i:]
        if tail and rng.random() < 0.7:
            bad = [int(t) for t in np.nonzero(~fresh[i + len(tail) // 2])[0]
                   if int(t) < vocab.vocab_size and int(t) not in vocab.eos]
            if bad:
                tail = tail[: len(tail) // 2] + [rng.choice(bad)] + tail[len(tail) // 2:]
        probe = m.fork()
        expect = probe.accept_tokens(tail)
        before = engine_mask(m, vocab.vocab_size)
        assert m.validate_tokens(tail) == expect, f"{what}: validate_tokens"
        assert m.num_accepted_tokens == i
        _eq(engine_mask(m, vocab.vocab_size), before, f"{what}: state after validate_tokens")
        # accept_bytes is one rollback step
        m2 = stencil.Matcher(g, max_rollback=1)
        k = next((j for j, t in enumerate(toks) if t in vocab.special), n)  # special tokens are not bytes
        data = b"".join(vocab.token_bytes[t] for t in toks[:k])
        assert m2.accept_bytes(data)
        _eq(engine_mask(m2, vocab.vocab_size), fresh[k], f"{what}: accept_bytes")
        m2.rollback(1)
        _eq(engine_mask(m2, vocab.vocab_size), fresh[0], f"{what}: rollback of accept_bytes")
        with pytest.raises(ValueError):
            m2.rollback(2)
        # reset
        m.reset()
        _eq(engine_mask(m, vocab.vocab_size), fresh[0], f"{what}: reset")


def test_batch_fill_matches_individual_fills():
    rng = random.Random(5)
    for _rnd in range(3):
        # freshly compiled grammars each round: the threads race on cold lazy lexer states
        cases = _grammars_for_replay()
        size = max(v.vocab_size for _, _, v, _ in cases)
        matchers, vocabs = [], []
        for _what, g, vocab, _info in cases:
            for _ in range(2):
                m = stencil.Matcher(g, max_rollback=-1)
                _random_path(rng, m, vocab, rng.randint(0, 8))
                if rng.random() < 0.15 and m.is_accepting():
                    m.accept_token(EOS)
                matchers.append(m)
                vocabs.append(vocab)
        # one bitmask for all: every vocabulary fits in the widest row
        n = len(matchers)
        order = list(range(n))
        rng.shuffle(order)
        bm = stencil.allocate_token_bitmask(n + 2, size)
        stencil.fill_next_token_bitmasks(matchers, bm, indices=order, num_threads=2)
        for i, m in enumerate(matchers):
            one = stencil.allocate_token_bitmask(1, size)
            m.fill_next_token_bitmask(one, 0)
            _eq(bm[order[i]], one[0], f"batch row {order[i]} (matcher {i})")
        bm2 = stencil.allocate_token_bitmask(n, size)
        stencil.fill_next_token_bitmasks(matchers, bm2, num_threads=2)
        for i in range(n):
            _eq(bm2[i], bm[order[i]], f"batch without indices, row {i}")
