"""A choice among fixed strings: the whole output is exactly one of them.

All choices form one lexeme: their literal texts (no regex parsing) arranged as a trie, so
that shared prefixes are written once and the lexer's derivative at each byte looks at one
branch instead of every choice. 50,000 choices compile in well under a second.

Example::

    g = choice_grammar(["yes", "no", "maybe"])
    compiled = compiler.compile_grammar(g)     # or compiler.compile_choice([...])
"""
from __future__ import annotations

from collections.abc import Iterable

from stencil._core import ExprId, GrammarBuilder, GrammarError, Symbol
from stencil.grammar.deadline import check_deadline

__all__ = ["choice_grammar", "build_choice", "trie_expr"]


def _lcp(a: bytes, b: bytes, start: int) -> int:
    n = min(len(a), len(b))
    i = start
    while i < n and a[i] == b[i]:
        i += 1
    return i


def trie_expr(b, words: list[bytes]) -> ExprId:
    """The regex (builder expression) of exactly these byte strings, as a compressed trie.

    ``words`` must be sorted and distinct. Built bottom-up with an explicit stack (no recursion,
    so very long strings are fine)."""
    # A frame covers words[lo:hi], which all share their first `depth` bytes.
    results: dict[tuple[int, int, int], ExprId] = {}
    stack = [(0, len(words), 0, False)]
    steps = 0
    while stack:
        steps += 1
        if not steps & 4095:   # hundreds of thousands of choices take seconds
            check_deadline()
        lo, hi, depth, expanded = stack.pop()
        start = lo + 1 if len(words[lo]) == depth else lo   # words[lo] ends here: ε is in
        groups = []
        i = start
        while i < hi:
            byte = words[i][depth]
            j = i
            while j < hi and words[j][depth] == byte:   # sorted: a group is contiguous
                j += 1
            groups.append((i, j, _lcp(words[i], words[j - 1], depth + 1)))
            i = j
        if not expanded:
            stack.append((lo, hi, depth, True))
            stack.extend((g_lo, g_hi, end, False) for g_lo, g_hi, end in groups)
            continue
        alts = [b.re_empty()] if start > lo else []
        for g_lo, g_hi, end in groups:
            edge = b.re_bytes(words[g_lo][depth:end])
            alts.append(b.re_concat([edge, results.pop((g_lo, g_hi, end))]))
        results[(lo, hi, depth)] = alts[0] if len(alts) == 1 else b.re_or(alts)
    return results[(0, len(words), 0)]


def build_choice(b, choices: Iterable[str], name: str = "choice") -> Symbol:
    """Add a rule matching exactly one of ``choices`` to builder ``b``; returns the rule."""
    # A str is iterable too: "abc" would silently mean the choices "a", "b", "c".
    if isinstance(choices, (str, bytes, bytearray)) or not isinstance(choices, Iterable):
        raise TypeError(f"choices must be a list of strings, got {type(choices).__name__}")
    texts = list(choices)
    if not texts:
        raise GrammarError("compile_choice needs at least one choice")
    words = set()
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"choice #{i} is a {type(t).__name__}, not a str")
        try:
            words.add(t.encode("utf-8"))
        except UnicodeEncodeError:
            raise GrammarError(f"choice #{i} ({t!r}) holds a lone surrogate, which is not valid UTF-8 text") from None
    rule = b.rule(name)
    b.add_alternative(rule, [b.lexeme(trie_expr(b, sorted(words)), name)])
    return rule


def choice_grammar(choices: Iterable[str]):
    """The grammar whose language is exactly the given strings."""
    b = GrammarBuilder()
    return b.build(build_choice(b, choices))
