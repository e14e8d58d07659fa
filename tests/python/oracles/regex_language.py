"""The regex oracle: ECMA-262 patterns rewritten for the ``regex`` module, and the viable-prefix
language over them."""
from __future__ import annotations

import re
import re._parser as sre_parse
from re._constants import (ANY, ASSERT, ASSERT_NOT, AT, ATOMIC_GROUP, BRANCH, CATEGORY, GROUPREF, IN, LITERAL,
                           MAX_REPEAT, MIN_REPEAT, NEGATE, NOT_LITERAL, POSSESSIVE_REPEAT, RANGE, SUBPATTERN)

import numpy as np
import regex

from .text import Language, MAX_CP, Vocab, representatives, sorted_boundaries, split_utf8


# ------------------------------------------------------------------------------ regex oracle

def ecma_to_python(pattern: str) -> str:
    """Rewrite an ECMA-262 pattern (stencil's dialect) for the ``regex`` module with the same
    language: ``\\d``/``\\w`` ASCII, ``.`` excluding the four line terminators."""
    out, i, in_class, after_quantifier = [], 0, False, False
    while i < len(pattern):
        c = pattern[i]
        if not in_class:
            if c == "?" and after_quantifier:
                # a lazy quantifier: same language as the greedy one, and the regex module's
                # partial matching mishandles lazy ones (fullmatch("a??9", "az", partial=True)
                # matches), so the oracle uses the greedy form
                after_quantifier = False
                i += 1
                continue
            q = re.match(r"\*|\+|\?|\{\d+(?:,\d*)?\}", pattern[i:])
            if q and not (c == "?" and i > 0 and pattern[i - 1] == "(" and not _escaped(pattern, i - 1)):
                out.append(q.group())
                i += len(q.group())
                after_quantifier = True
                continue
            after_quantifier = False
        if c == "\\":
            e = pattern[i + 1]
            i += 2
            if e in "sS":
                raise ValueError("\\s differs between ECMA-262 and Python: not usable with the oracle")
            if e == "d":
                out.append("0-9" if in_class else "[0-9]")
            elif e == "w":
                out.append("a-zA-Z0-9_" if in_class else "[a-zA-Z0-9_]")
            elif e in "DW" and not in_class:
                out.append("[^0-9]" if e == "D" else "[^a-zA-Z0-9_]")
            elif e == "u" and pattern[i:i + 1] == "{":
                j = pattern.index("}", i)
                out.append("\\U%08x" % int(pattern[i + 1:j], 16))
                i = j + 1
            else:
                out.append("\\" + e)
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
        elif c == "[":
            in_class = True
            out.append(c)
            if pattern[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1:i + 2] == "]":  # a literal ] first in a class (Python) is not ECMA
                raise ValueError("']' first in a class is not portable")
        elif c == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif pattern.startswith("(?<", i) and pattern[i + 3:i + 4] not in ("=", "!"):
            out.append("(?P<")  # a named group (ECMA) in Python's spelling
            i += 3
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _escaped(pattern: str, i: int) -> bool:
    n = 0
    while i - 1 - n >= 0 and pattern[i - 1 - n] == "\\":
        n += 1
    return n % 2 == 1


def python_pattern_boundaries(pattern: str) -> list[int]:
    """Every code point edge the (Python-syntax) pattern mentions, via the stdlib's re parser."""
    edges = set()

    def walk(items):
        for op, av in items:
            if op in (LITERAL, NOT_LITERAL):
                edges.update((av, av + 1))
            elif op == RANGE:
                edges.update((av[0], av[1] + 1))
            elif op == IN:
                walk(av)
            elif op == SUBPATTERN:
                walk(av[-1])
            elif op == BRANCH:
                for p in av[1]:
                    walk(p)
            elif op in (MAX_REPEAT, MIN_REPEAT, POSSESSIVE_REPEAT):
                walk(av[2])
            elif op == ATOMIC_GROUP:
                walk(av)
            elif op in (ASSERT, ASSERT_NOT, GROUPREF):
                raise ValueError("lookarounds and backreferences have no place in oracle patterns")
            elif op in (ANY, CATEGORY, NEGATE, AT):
                pass  # covered by DEFAULT_BOUNDARIES
            else:
                raise ValueError(f"unexpected regex node {op}")

    walk(sre_parse.parse(pattern))
    return sorted_boundaries(e for e in edges if 0 <= e <= MAX_CP + 1)


class RegexLanguage(Language):
    """State = the text so far (str); viable iff ``regex.fullmatch(text, partial=True)``."""

    def __init__(self, python_pattern: str):
        self.pattern = python_pattern
        self.rx = regex.compile(python_pattern)
        self.boundaries = python_pattern_boundaries(python_pattern)

    def start(self):
        return "" if self.rx.fullmatch("", partial=True) else None

    def step(self, text, sym):
        if not isinstance(sym, int):
            return None  # regex grammars name no special tokens
        t = text + chr(sym)
        return t if self.rx.fullmatch(t, partial=True) is not None else None

    def accepting(self, text) -> bool:
        return self.rx.fullmatch(text) is not None

    # Direct, token-by-token checks on whole byte strings (no incremental state at all).
    def viable_bytes(self, data: bytes) -> bool:
        r = split_utf8(data)
        if r is None:
            return False
        text, partial = r
        if partial is None:
            return self.rx.fullmatch(text, partial=True) is not None
        return any(self.rx.fullmatch(text + chr(cp), partial=True) is not None
                   for cp in representatives(partial, self.boundaries))

    def complete_bytes(self, data: bytes) -> bool:
        r = split_utf8(data)
        return r is not None and r[1] is None and self.rx.fullmatch(r[0]) is not None


def regex_mask_direct(lang: RegexLanguage, accepted: bytes | None, vocab: Vocab, ids=None) -> np.ndarray:
    """Brute force: every token id (or those in ``ids``), one regex call each (plus one per
    representative completion of a trailing partial character). ``accepted=None``: terminated."""
    mask = np.zeros(vocab.vocab_size, dtype=bool)
    if accepted is None:
        mask[list(vocab.eos)] = True
        return mask
    tb = vocab.token_bytes
    for tid in (vocab.normal if ids is None else ids):
        mask[tid] = lang.viable_bytes(accepted + tb[tid])
    complete = lang.complete_bytes(accepted)
    for tid in vocab.special:
        mask[tid] = complete if tid in vocab.eos else False
    return mask
