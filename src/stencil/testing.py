"""Helpers for testing stencil and the grammars a user brings: random strings of a grammar, near
misses, and counters of the core's shared structures that tests may assert on.

Random strings: :func:`sample` walks a parsed Lark or GBNF grammar (``stencil.grammar.ebnf``'s
``parse_lark`` / ``parse_gbnf``) and returns one string of its language as a list of segments:
text (``str``) and special-token ids (``int``). Recursion is kept finite by switching, past
``max_depth``, to the alternatives that finish soonest; repetitions draw counts near their
minimum. :func:`mutate` makes near-misses (one character dropped, doubled, replaced or inserted,
or the text cut short), which are mostly outside the language: a test must still check each with
an independent recognizer. :func:`alphabet` gives the characters a grammar mentions, for mutations
that stay close.

Random outputs of a compiled grammar: :func:`random_walk` draws tokens at random among those the
budget-aware mask allows (what a model with random weights would write under the grammar),
until the output may end and a coin says so, or the budget closes it.

Counters: :func:`vocab_stats` (the token trie and the vocabulary's shared mask cache of a
``TokenizerInfo``), :func:`matcher_stats` (a ``Matcher``'s parser rows and items) and
:func:`compiler_stats` (a ``GrammarCompiler``'s cache). They read the core's own counters, so
tests need not reach into private attributes.

Example::

    from stencil.grammar.ebnf.gbnf import parse_gbnf
    from stencil.testing import alphabet, mutate, sample, vocab_stats

    g = parse_gbnf(open("json.gbnf").read())
    rng = random.Random(0)
    text = "".join(sample(g, rng))
    near = mutate(text, rng, alphabet(g))
    vocab_stats(tok).trie_nodes          # nodes of the token trie
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from stencil.bitmask import allocate_token_bitmask
from stencil.kernels.numpy import bitmask_to_bool
from stencil.grammar.regex import ast as regex_ast
from stencil.grammar.ebnf.ast import Alt, EbnfGrammar, JsonSchema, Ref, Rep, Seq, Term, TokenRef, children

__all__ = ["sample", "sample_regex", "random_walk", "mutate", "alphabet", "VocabStats", "vocab_stats", "MatcherStats",
           "matcher_stats", "CompilerStats", "compiler_stats"]

_INF = float("inf")


def sample_regex(node, rng: random.Random, max_repeat: int = 3) -> str:
    """One random word of a regex AST (anchors match the empty string)."""
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, regex_ast.Literal):
            out.append(n.text)
        elif isinstance(n, regex_ast.CharClass):
            out.append(chr(_pick_code_point(n.ranges, rng)))
        elif isinstance(n, regex_ast.Concat):
            stack.extend(reversed(n.items))
        elif isinstance(n, regex_ast.Alt):
            live = [k for k in n.items if not isinstance(k, regex_ast.Nothing)]
            stack.append(rng.choice(live))
        elif isinstance(n, regex_ast.Repeat):
            hi = n.min + max_repeat if n.max is None else min(n.max, n.min + max_repeat)
            stack.extend([n.item] * rng.randint(n.min, hi))
        elif isinstance(n, regex_ast.Nothing):
            raise ValueError("cannot sample from an empty language")
    return "".join(out)


def _pick_code_point(ranges, rng: random.Random) -> int:
    # Mostly printable ASCII where the class allows it (readable, tokenizes like real text),
    # sometimes range edges and anything else.
    ascii_part = [(max(lo, 0x20), min(hi, 0x7E)) for lo, hi in ranges if lo <= 0x7E and hi >= 0x20]
    r = rng.random()
    if ascii_part and r < 0.8:
        lo, hi = rng.choice(ascii_part)
        return rng.randint(lo, hi)
    lo, hi = rng.choice(ranges)
    if r < 0.9:
        return rng.choice((lo, hi))
    return rng.randint(lo, min(hi, lo + 0x3000))


class _Walk:
    def __init__(self, g: EbnfGrammar, rng: random.Random, max_depth: int, max_repeat: int,
                 ignore_prob: float, max_len: int):
        self.g, self.rng = g, rng
        self.max_len = max_len
        self.max_depth, self.max_repeat = max_depth, max_repeat
        self.ignore_prob = ignore_prob
        self.height = self._heights()
        self._node_h: dict = {}

    def _heights(self) -> dict:
        """Per rule, the least derivation depth (how soon it can finish)."""
        h = {name: _INF for name in self.g.rules}
        changed = True
        while changed:
            changed = False
            for name, rd in self.g.rules.items():
                v = self.node_height(rd.body, h) + 1
                if v < h[name]:
                    h[name] = v
                    changed = True
        return h

    def node_height(self, node, h=None) -> float:
        if h is None:
            key = id(node)
            if key not in self._node_h:
                self._node_h[key] = (node, self.node_height(node, self.height))
            return self._node_h[key][1]
        if isinstance(node, Ref):
            return h.get(node.name, _INF)
        if isinstance(node, Seq):
            return max((self.node_height(k, h) for k in node.items), default=0)
        if isinstance(node, Alt):
            return min(self.node_height(k, h) for k in node.items)
        if isinstance(node, Rep):
            return 0 if node.min == 0 else self.node_height(node.item, h)
        return 0

    def run(self) -> list:
        out: list = []
        self.size = 0
        self.emit(Ref(self.g.start), 0, out)
        return _merge(out)

    def emit(self, node, depth: int, out: list) -> None:
        rng = self.rng
        # past the depth or size limit, take the ways out that finish soonest
        deep = depth > self.max_depth or self.size > self.max_len
        if isinstance(node, Ref):
            self.emit(self.g.rules[node.name].body, depth + 1, out)
        elif isinstance(node, Seq):
            for k in node.items:
                self.emit(k, depth, out)
        elif isinstance(node, Alt):
            if deep:
                best = min(self.node_height(k) for k in node.items)
                choices = [k for k in node.items if self.node_height(k) == best]
            else:
                choices = [k for k in node.items if self.node_height(k) < _INF]
            self.emit(rng.choice(choices), depth, out)
        elif isinstance(node, Rep):
            hi = node.min + self.max_repeat if node.max is None else min(node.max, node.min + self.max_repeat)
            n = node.min if deep else rng.randint(node.min, hi)
            for _ in range(n):
                self.emit(node.item, depth, out)
        elif isinstance(node, Term):
            self.emit_term(node, out)
        elif isinstance(node, TokenRef):
            if node.ids is None or node.negated:
                raise ValueError("sampling a token reference by name or a negated one needs the tokenizer")
            out.append(rng.choice(node.ids))
        elif isinstance(node, JsonSchema):
            raise ValueError("sampling from an embedded JSON Schema is not supported")
        else:
            raise AssertionError(type(node).__name__)

    def emit_term(self, node: Term, out: list) -> None:
        # no ignored text before the first terminal unless the grammar allows it (llguidance's rule)
        started = self.size > 0 or self.g.options.get("allow_initial_skip", False)
        if self.g.ignores and started and self.rng.random() < self.ignore_prob:
            out.append(sample_regex(self.rng.choice(self.g.ignores).regex, self.rng, 1))
            self.size += len(out[-1])
        if node.build is not None:
            raise ValueError(f"cannot sample the %regex terminal {node.name or ''}")
        out.append(sample_regex(node.regex, self.rng, 1 if self.size > self.max_len else self.max_repeat))
        self.size += len(out[-1])


def _merge(parts: list) -> list:
    out: list = []
    for p in parts:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        elif p != "":
            out.append(p)
    return out


def sample(g: EbnfGrammar, rng: Optional[random.Random] = None, *, max_depth: int = 8,
           max_repeat: int = 3, ignore_prob: float = 0.0, max_len: int = 300) -> list:
    """One random string of the grammar's language, as segments: ``str`` text and ``int``
    special-token ids. Past ``max_depth`` nested rules or about ``max_len`` characters the walk
    heads for the end. ``ignore_prob`` (Lark): how often to put an ``%ignore`` match before a
    terminal."""
    return _Walk(g, rng or random.Random(), max_depth, max_repeat, ignore_prob, max_len).run()


def alphabet(g: EbnfGrammar) -> str:
    """Characters the grammar's literals and classes mention (for mutations that stay close).

    Example::

        alphabet(parse_gbnf('root ::= "ab" [0-9]'))   # "09ab"
    """
    chars: set[str] = set()
    stack = [rd.body for rd in g.rules.values()]
    while stack:
        n = stack.pop()
        if isinstance(n, Term):
            rs = [n.regex]
            while rs:
                r = rs.pop()
                if isinstance(r, regex_ast.Literal):
                    chars.update(r.text)
                elif isinstance(r, regex_ast.CharClass):
                    for lo, hi in r.ranges[:4]:
                        chars.add(chr(lo))
                        chars.add(chr(hi))
                else:
                    rs.extend(regex_ast.children(r))
        else:
            stack.extend(children(n))
    return "".join(sorted(chars)) or "a"


def random_walk(matcher: Any, info: Any, rng: random.Random, max_tokens: int, *, end_chance: float = 0.3,
                space_draws: int = 8) -> list[int]:
    """Token ids drawn at random among those ``matcher``'s budget-aware mask allows, for at most
    ``max_tokens`` tokens: once the output may end, it does with probability ``end_chance`` (or
    when nothing else is allowed). A token that is only white space is drawn again up to
    ``space_draws`` times, since white space is most of what a ``\\s*`` allows and would fill
    the budget. The matcher ends accepting unless the budget was below its
    ``min_completion_tokens()``."""
    eos = np.array(sorted(info.eos_token_ids), dtype=np.int64)
    mask = allocate_token_bitmask(1, info.vocab_size)
    out: list[int] = []
    for left in range(max_tokens, 0, -1):
        matcher.fill_next_token_bitmask(mask, 0, left)
        # (in numpy: a list of a 200k-token vocabulary's allowed ids cost ~30 ms a step)
        ids = np.flatnonzero(bitmask_to_bool(mask[0], info.vocab_size))
        ids = ids[~np.isin(ids, eos)]
        if matcher.is_accepting() and (not len(ids) or rng.random() < end_chance):
            break
        t = int(ids[rng.randrange(len(ids))])
        for _ in range(space_draws):
            if info.token_bytes(t).decode("utf-8", "ignore").strip():
                break
            t = int(ids[rng.randrange(len(ids))])
        if not matcher.accept_token(t):
            raise AssertionError(f"the mask allowed token {t} that accept_token refused")
        out.append(t)
    return out


def mutate(text: str, rng: random.Random, chars: str) -> str:
    """A near-miss of ``text``: drop, double, replace or insert one character, or cut it short.

    Example::

        mutate("true", random.Random(0), "tru")   # e.g. "tue", "truue" or "tr"
    """
    if not text:
        return rng.choice(chars)
    i = rng.randrange(len(text))
    op = rng.randrange(5)
    if op == 0:
        return text[:i] + text[i + 1:]
    if op == 1:
        return text[:i] + text[i] + text[i:]
    if op == 2:
        return text[:i] + rng.choice(chars) + text[i + 1:]
    if op == 3:
        return text[:i] + rng.choice(chars) + text[i:]
    return text[:i]


# ------------------------------------------------------------------------------------ counters

@dataclass(frozen=True)
class VocabStats:
    """What a tokenizer's vocabulary holds in the core (see :func:`vocab_stats`)."""

    trie_nodes: int            # nodes of the token trie (the root included)
    trie_memory_bytes: int     # the trie's own arrays
    trie_build_seconds: float  # how long the trie took to build
    memory_bytes: int          # the whole vocabulary: token bytes, trie, shared masks
    shared_mask_entries: int   # masks cached per vocabulary and shared by every grammar over it
    shared_mask_bytes: int     # what every grammar over it shares: those masks and the token paths
    shared_path_entries: int   # lexemes' cheapest token paths the budget's searches found, shared alike
    shared_path_hits: int      # times a grammar took such a path instead of searching
    shared_class_entries: int  # merged runs' class tries, shared by every grammar's mask entries
    shared_class_hits: int     # times an entry took such a trie instead of building it
    shared_verdict_entries: int  # count sandwiches found alike or not (whole walks), shared alike
    shared_verdict_hits: int     # times a grammar took such a verdict instead of walking


def vocab_stats(info: Any) -> VocabStats:
    """The token trie and shared mask cache of a ``stencil.TokenizerInfo``, read now.

    Example::

        tok = stencil.TokenizerInfo.from_vocab([b"a", b"ab", b"b", b"</s>"], eos_token_ids=[3])
        vocab_stats(tok).trie_nodes          # 4: the root, "a", "ab", "b"
    """
    v = info.vocabulary
    return VocabStats(trie_nodes=v.trie_nodes, trie_memory_bytes=v.trie_memory_bytes,
                      trie_build_seconds=v.trie_build_seconds, memory_bytes=v.memory_bytes,
                      shared_mask_entries=v.shared_mask_entries, shared_mask_bytes=v.shared_mask_bytes,
                      shared_path_entries=v.shared_path_entries, shared_path_hits=v.shared_path_hits,
                      shared_class_entries=v.shared_class_entries, shared_class_hits=v.shared_class_hits,
                      shared_verdict_entries=v.shared_verdict_entries, shared_verdict_hits=v.shared_verdict_hits)


@dataclass(frozen=True)
class MatcherStats:
    """A matcher's parse state (see :func:`matcher_stats`)."""

    lexer_state: int
    parser_rows: int    # Earley rows on the parser's stack
    parser_items: int   # Earley items in those rows
    tokens: int         # tokens in the matcher's history
    terminated: bool


def matcher_stats(m: Any) -> MatcherStats:
    """The lexer state, parser rows and items of a ``stencil.Matcher``, read now
    (``Matcher.stats()``).

    Example::

        m = stencil.Matcher(compiler.compile_json_schema({"type": "array"}))
        m.accept_string("[1, [2")
        matcher_stats(m).parser_items        # Earley items the parser holds now
    """
    s = m.stats()
    return MatcherStats(lexer_state=int(s["lexer_state"]), parser_rows=int(s["parser_rows"]),
                        parser_items=int(s["parser_items"]), tokens=int(s["tokens"]),
                        terminated=bool(s["terminated"]))


@dataclass(frozen=True)
class CompilerStats:
    """A grammar compiler's cache (see :func:`compiler_stats`)."""

    cached_grammars: int   # compiled grammars the compiler keeps (by grammar hash)


def compiler_stats(compiler: Any) -> CompilerStats:
    """The cache of a ``stencil.GrammarCompiler``, read now.

    Example::

        compiler.compile_regex("[0-9]+")
        compiler_stats(compiler).cached_grammars   # 1
    """
    return CompilerStats(cached_grammars=compiler.num_cached_grammars)
