"""Code points, UTF-8 prefixes, vocabularies, and the generic byte-level oracle with its mask
walks (the package docstring says how they decide)."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np


MAX_CP = 0x10FFFF
LINE_TERMINATORS = (0x0A, 0x0D, 0x2028, 0x2029)
# Edges that any pattern may depend on implicitly (ASCII categories, line terminators, UTF-8
# length classes, surrogates). Extra boundaries only add representatives, never lose exactness.
DEFAULT_BOUNDARIES = frozenset(
    [0, 0x09, 0x0E, 0x20, 0x21, 0x30, 0x3A, 0x41, 0x5B, 0x5F, 0x60, 0x61, 0x7B, 0x80, 0x800, 0xD800,
     0xE000, 0x10000, MAX_CP + 1]
    + [c for t in LINE_TERMINATORS for c in (t, t + 1)])


# ----------------------------------------------------------------------------------- UTF-8

def char_prefix(seq: bytes):
    """Classify 1..4 bytes meant as (the start of) one UTF-8 character.

    Returns ``("char", cp)`` for a complete valid character, ``("partial", [(lo, hi), ...])`` with
    the code points whose encoding starts with ``seq``, or None when no valid character starts so.
    """
    lead = seq[0]
    if lead < 0x80:
        n, bits = 1, lead
    elif 0xC0 <= lead < 0xE0:
        n, bits = 2, lead & 0x1F
    elif 0xE0 <= lead < 0xF0:
        n, bits = 3, lead & 0x0F
    elif 0xF0 <= lead < 0xF8:
        n, bits = 4, lead & 0x07
    else:
        return None
    if len(seq) > n:
        return None
    for c in seq[1:]:
        if not 0x80 <= c <= 0xBF:
            return None
        bits = (bits << 6) | (c & 0x3F)
    rest = n - len(seq)
    lo = bits << (6 * rest)
    hi = lo | ((1 << (6 * rest)) - 1)
    vlo, vhi = {1: (0, 0x7F), 2: (0x80, 0x7FF), 3: (0x800, 0xFFFF), 4: (0x10000, MAX_CP)}[n]
    lo, hi = max(lo, vlo), min(hi, vhi)
    ivs = []
    for a, b in ((lo, min(hi, 0xD7FF)), (max(lo, 0xE000), hi)):
        if a <= b:
            ivs.append((a, b))
    if not ivs:
        return None
    if rest == 0:
        return ("char", ivs[0][0])
    return ("partial", ivs)


def split_utf8(data: bytes):
    """``(text, partial_intervals)`` for valid UTF-8 with a possibly incomplete last character
    (``partial_intervals`` is None when the text is complete); None when the bytes can never be
    valid UTF-8."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    for k in (1, 2, 3):
        if len(data) < k:
            break
        r = char_prefix(data[-k:])
        if r is not None and r[0] == "partial":
            try:
                return data[:-k].decode("utf-8"), r[1]
            except UnicodeDecodeError:
                return None
    return None


def representatives(intervals, boundaries: Sequence[int]) -> list[int]:
    """One code point from every piece of ``intervals`` cut at ``boundaries`` (sorted)."""
    out = []
    for lo, hi in intervals:
        cp = lo
        while cp <= hi:
            out.append(cp)
            j = bisect.bisect_right(boundaries, cp)
            if j >= len(boundaries):
                break
            cp = boundaries[j]
    return out


def sorted_boundaries(extra: Iterable[int]) -> list[int]:
    return sorted(DEFAULT_BOUNDARIES | set(extra))


def ranges_contain(ranges, negate: bool, cp: int) -> bool:
    inside = any(lo <= cp <= hi for lo, hi in ranges)
    return inside != negate


# ------------------------------------------------------------------------------ vocabularies

@dataclass
class Vocab:
    """Token bytes and kinds, with the sorted order the prefix walk needs (built once)."""
    token_bytes: list          # bytes per id (b"" for padding ids)
    special: frozenset         # special ids (EOS included)
    eos: frozenset
    vocab_size: int
    order: list = field(default_factory=list)   # normal token ids, sorted by bytes
    lcp: list = field(default_factory=list)     # common prefix length with the previous in order

    def __post_init__(self):
        normal = [i for i in range(self.vocab_size) if i not in self.special and self.token_bytes[i]]
        normal.sort(key=lambda i: self.token_bytes[i])
        self.order = normal
        lcp, prev = [], b""
        for i in normal:
            cur = self.token_bytes[i]
            n, m = 0, min(len(cur), len(prev))
            while n < m and cur[n] == prev[n]:
                n += 1
            lcp.append(n)
            prev = cur
        self.lcp = lcp
        self.normal = normal

    @classmethod
    def from_info(cls, info) -> "Vocab":
        tb = [info.token_bytes(i) for i in range(info.vocab_size)]
        return cls(tb, frozenset(info.special_token_ids) | frozenset(info.eos_token_ids), frozenset(info.eos_token_ids),
                   info.vocab_size)


# -------------------------------------------------------------------- generic byte-level oracle

class Language:
    """A language over code points and special-token ids, stepped one symbol at a time.

    ``step(state, sym)`` returns the next state or None when the prefix is no longer viable;
    ``sym`` is an int code point or ``("special", id)``."""
    boundaries: list

    def start(self):
        raise NotImplementedError

    def step(self, state, sym):
        raise NotImplementedError

    def accepting(self, state) -> bool:
        raise NotImplementedError


class ByteOracle:
    """Lifts a code-point Language to bytes: state = (language state, pending partial char)."""

    def __init__(self, lang: Language):
        self.lang = lang

    def start(self):
        s = self.lang.start()
        return None if s is None else (s, b"")

    def push_byte(self, st, b: int):
        s, pend = st
        seq = pend + bytes((b,))
        r = char_prefix(seq)
        if r is None:
            return None
        if r[0] == "char":
            ns = self.lang.step(s, r[1])
            return None if ns is None else (ns, b"")
        for cp in representatives(r[1], self.lang.boundaries):
            if self.lang.step(s, cp) is not None:
                return (s, seq)
        return None

    def push_bytes(self, st, data: bytes):
        for b in data:
            if st is None:
                return None
            st = self.push_byte(st, b)
        return st

    def push_special(self, st, token_id: int):
        s, pend = st
        if pend:
            return None
        ns = self.lang.step(s, ("special", token_id))
        return None if ns is None else (ns, b"")

    def accepting(self, st) -> bool:
        return not st[1] and self.lang.accepting(st[0])


def mask_prefix_walk(oracle: ByteOracle, st, vocab: Vocab) -> np.ndarray:
    """The allowed tokens at byte-level state ``st`` (None = terminated: only EOS)."""
    mask = np.zeros(vocab.vocab_size, dtype=bool)
    if st is None:
        mask[list(vocab.eos)] = True
        return mask
    stack = [st]
    tb = vocab.token_bytes
    for tid, lcp in zip(vocab.order, vocab.lcp):
        if len(stack) > lcp + 1:
            del stack[lcp + 1:]
        elif len(stack) < lcp + 1:
            continue  # shares a prefix that is not viable with the previous token
        data = tb[tid]
        ok = True
        for d in range(len(stack) - 1, len(data)):
            ns = oracle.push_byte(stack[-1], data[d])
            if ns is None:
                ok = False
                break
            stack.append(ns)
        if ok:
            mask[tid] = True
    _specials(oracle, st, vocab, mask)
    return mask


def mask_direct_states(oracle: ByteOracle, st, vocab: Vocab) -> np.ndarray:
    """Same as mask_prefix_walk, token by token from ``st`` (slow; used to check the walk)."""
    mask = np.zeros(vocab.vocab_size, dtype=bool)
    if st is None:
        mask[list(vocab.eos)] = True
        return mask
    for tid in vocab.normal:
        mask[tid] = oracle.push_bytes(st, vocab.token_bytes[tid]) is not None
    _specials(oracle, st, vocab, mask)
    return mask


def _specials(oracle: ByteOracle, st, vocab: Vocab, mask):
    for tid in vocab.special:
        if tid in vocab.eos:
            mask[tid] = oracle.accepting(st)
        else:
            mask[tid] = oracle.push_special(st, tid) is not None
