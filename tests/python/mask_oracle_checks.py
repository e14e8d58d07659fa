"""What test_mask_oracle.py checks at each step, and the vocabularies and walks it checks them on:
synthetic vocabularies cut from a grammar's strings, trackers that follow the engine and the
oracle side by side, the mask, EOS, forced-token and refused-token checks, and random and mutated
string walks. Counts go into STATS, which the tests print at the end of their module."""
from __future__ import annotations

import collections
import os
import random
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import oracles as O  # noqa: E402

import stencil  # noqa: E402
from stencil.bitmask import bitmask_to_bool  # noqa: E402

STATS = collections.Counter()
EOS, SP_A, SP_B = 256, 257, 258
SPECIALS = (SP_A, SP_B)


# ------------------------------------------------------------------------------ vocabularies

def synthetic_vocab(rng: random.Random, texts: list[bytes], n_multi: int = 160):
    """A small vocabulary (see the module docstring); returns (TokenizerInfo, oracles.Vocab)."""
    toks = [bytes([i]) for i in range(256)] + [b"</s>", b"<|a|>", b"a"]
    seen = set(toks[:256])
    multi = []

    def add(t: bytes):
        if len(t) >= 2 and t not in seen:
            seen.add(t)
            multi.append(t)

    texts = [t for t in texts if t] or [b"abc"]
    for _ in range(n_multi * 4):
        if len(multi) >= n_multi:
            break
        t = rng.choice(texts)
        if len(t) < 2:
            continue
        if rng.random() < 0.3:
            # cut at character boundaries
            s = t.decode("utf-8", "ignore") or "a"
            i = rng.randrange(len(s))
            add(s[i:i + rng.randint(1, 4)].encode("utf-8"))
        else:
            i = rng.randrange(len(t) - 1)
            add(t[i:i + rng.randint(2, 7)])
    pool = [c.encode("utf-8") for c in O.LIT_CHARS + ["</", "  ", "\u3000", "→", "中文", "true"]]
    for _ in range(20):
        add(b"".join(rng.choice(pool) for _ in range(rng.randint(1, 3))))
    for junk in (b"\xff\xfe", b"a\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe4\xb8", b"\xf0\x9f",
                 b"\xf0\x9f\x98", b"\x80\x80", b"\xc3", b"0\xe4", b"\xbf\xbf"):
        add(junk)
    # a few long tokens: whole strings of the language and long slices (many lexemes each)
    for t in rng.sample(texts, min(3, len(texts))):
        add(t[:40])
        if len(t) > 12:
            i = rng.randrange(len(t) - 8)
            add(t[i:i + rng.randint(8, 24)])
    toks += multi
    # duplicates of single bytes and multi-byte tokens
    for t in rng.sample(toks[:256], 3) + rng.sample(multi, min(4, len(multi))):
        toks.append(t)
    toks.append(b"<|end|>")  # a second EOS
    eos2 = len(toks) - 1
    info = stencil.TokenizerInfo.from_vocab(toks, eos_token_ids=[EOS, eos2],
                                            special_token_ids=[EOS, SP_A, SP_B, eos2], vocab_size=len(toks) + 5)
    return info, O.Vocab.from_info(info)


def units_to_tokens(rng: random.Random, units, by_bytes: dict, max_len: int) -> list[int]:
    """Random segmentation of text units into token ids (single bytes always exist)."""
    out = []
    for u in units:
        if not isinstance(u, bytes):
            out.append(u[1])
            continue
        i = 0
        while i < len(u):
            cands = [u[i:i + k] for k in range(1, min(max_len, len(u) - i) + 1) if u[i:i + k] in by_bytes]
            piece = rng.choice(cands) if rng.random() < 0.7 else cands[-1]
            out.append(rng.choice(by_bytes[piece]))
            i += len(piece)
    return out


def bytes_index(vocab: O.Vocab) -> tuple[dict, int]:
    d = collections.defaultdict(list)
    for i in vocab.normal:
        d[vocab.token_bytes[i]].append(i)
    return d, max(len(b) for b in d)


# ------------------------------------------------------------------------------ trackers

class RegexTracker:
    """Oracle state for a regex: the accepted bytes; masks token by token (regex_mask_direct)."""

    def __init__(self, lang: O.RegexLanguage, vocab: O.Vocab):
        self.lang, self.vocab = lang, vocab
        self.acc, self.done = b"", False

    def mask(self) -> np.ndarray:
        return O.regex_mask_direct(self.lang, None if self.done else self.acc, self.vocab)

    def advance(self, t: int):
        if t in self.vocab.eos:
            self.done = True
        else:
            self.acc += self.vocab.token_bytes[t]

    def allowed(self, t: int) -> bool:
        if self.done:
            return t in self.vocab.eos
        if t in self.vocab.eos:
            return self.lang.complete_bytes(self.acc)
        if t in self.vocab.special or not self.vocab.token_bytes[t]:
            return False
        return self.lang.viable_bytes(self.acc + self.vocab.token_bytes[t])

    def forced_bytes(self, limit: int = 64) -> bytes:
        """Bytes that are each the only viable next byte, up to a complete text."""
        out = b""
        while len(out) < limit and not self.lang.complete_bytes(self.acc + out):
            nxt = [b for b in range(256) if self.lang.viable_bytes(self.acc + out + bytes((b,)))]
            if len(nxt) != 1:
                break
            out += bytes(nxt)
        return out

    def describe(self) -> str:
        return f"accepted bytes {self.acc!r}" + (" + EOS" if self.done else "")


class StateTracker:
    """Oracle state for a ByteOracle (CFGs): masks by the sorted-prefix walk."""

    def __init__(self, oracle: O.ByteOracle, vocab: O.Vocab):
        self.oracle, self.vocab = oracle, vocab
        self.st = oracle.start()
        self.acc, self.done = [], False

    def mask(self) -> np.ndarray:
        return O.mask_prefix_walk(self.oracle, None if self.done else self.st, self.vocab)

    def _next(self, t: int):
        v = self.vocab
        if t in v.eos:
            return self.st if self.oracle.accepting(self.st) else None
        if t in v.special:
            return self.oracle.push_special(self.st, t)
        if not v.token_bytes[t]:
            return None
        return self.oracle.push_bytes(self.st, v.token_bytes[t])

    def allowed(self, t: int) -> bool:
        if self.done:
            return t in self.vocab.eos
        return self._next(t) is not None

    def advance(self, t: int):
        ns = self._next(t)
        assert ns is not None
        if t in self.vocab.eos:
            self.done = True
        else:
            self.st = ns
        self.acc.append(self.vocab.token_bytes[t] if t not in self.vocab.special else f"<special {t}>")

    def forced_bytes(self, limit: int = 64) -> bytes:
        out, st = b"", self.st
        while len(out) < limit and not self.oracle.accepting(st):
            nxt = [(b, ns) for b in range(256) for ns in [self.oracle.push_byte(st, b)] if ns is not None]
            if len(nxt) != 1:
                break
            out += bytes((nxt[0][0],))
            st = nxt[0][1]
        return out

    def describe(self) -> str:
        return f"accepted {self.acc!r}" + (" + EOS" if self.done else "")


# ------------------------------------------------------------------------------ checks

def engine_mask(m: stencil.Matcher, vocab_size: int) -> np.ndarray:
    bm = stencil.allocate_token_bitmask(1, vocab_size)
    m.fill_next_token_bitmask(bm, 0)
    return bitmask_to_bool(bm, vocab_size)[0]


_SINGLES = {}


def single_byte_ids(vocab: O.Vocab):
    """Token ids of the 256 single bytes (None unless all are there)."""
    key = id(vocab)
    if key not in _SINGLES:
        ids = {}
        for i in vocab.normal:
            if len(vocab.token_bytes[i]) == 1:
                ids.setdefault(vocab.token_bytes[i][0], i)
        _SINGLES[key] = (vocab, [ids[b] for b in range(256)] if len(ids) == 256 else None)
    return _SINGLES[key][1]


def fmt_tokens(ids, vocab: O.Vocab, limit=12) -> str:
    ids = list(ids)
    s = ", ".join(f"{i}:{vocab.token_bytes[i]!r}" for i in ids[:limit])
    return s + (f" ... ({len(ids)} in all)" if len(ids) > limit else "")


def compare(m: stencil.Matcher, tracker, vocab: O.Vocab, what: str, deepseek: bool = False) -> np.ndarray:
    """Engine mask == oracle mask; is_accepting and forced_tokens agree. Returns the mask."""
    got = engine_mask(m, vocab.vocab_size)
    want = tracker.mask()
    if not np.array_equal(got, want):
        extra = np.nonzero(got & ~want)[0]
        missing = np.nonzero(want & ~got)[0]
        raise AssertionError(f"{what}: mask differs from the oracle after {tracker.describe()}\n"
                             f"  allowed by stencil, refused by the oracle: {fmt_tokens(extra, vocab)}\n"
                             f"  allowed by the oracle, refused by stencil: {fmt_tokens(missing, vocab)}")
    eos_ok = bool(want[min(vocab.eos)])
    assert m.is_accepting() == eos_ok, f"{what}: is_accepting() != oracle ({eos_ok}) after {tracker.describe()}"
    if not tracker.done:
        allowed = np.nonzero(want)[0]
        forced = m.forced_tokens()
        if len(allowed) == 1 and allowed[0] not in vocab.eos:
            assert forced[:1] == [int(allowed[0])], f"{what}: forced_tokens {forced} but only {allowed[0]} is allowed"
        else:
            assert forced == [], f"{what}: forced_tokens {forced} with {len(allowed)} allowed tokens"
        # the single-byte tokens' bits are the viable next bytes: no forced byte unless one
        singles = single_byte_ids(vocab)
        fb = b"" if singles is not None and np.count_nonzero(want[singles]) != 1 else tracker.forced_bytes()
        got_fb = m.forced_bytes()
        assert got_fb[:len(fb) if len(fb) == 64 else None] == fb, \
            f"{what}: forced_bytes {got_fb!r}, oracle {fb!r} after {tracker.describe()}"
        STATS["forced_bytes_checks"] += 1
    STATS["steps"] += 1
    STATS["tokens"] += vocab.vocab_size
    STATS["allowed"] += int(np.count_nonzero(want))
    STATS["partial_utf8_allowed"] += sum(1 for t in np.nonzero(want)[0] if t not in vocab.special
                                         and O.split_utf8(vocab.token_bytes[t]) is None) if not deepseek else 0
    if deepseek:
        STATS["deepseek_steps"] += 1
    return got


def check_refusals(rng, m, tracker, vocab: O.Vocab, mask: np.ndarray, what: str, n: int = 3):
    """A few tokens the mask refuses: accept_token says False and the state stays the same."""
    refused = np.nonzero(~mask)[0]
    if len(refused) == 0:
        return
    for t in rng.sample(list(refused), min(n, len(refused))):
        assert m.accept_token(int(t)) is False, f"{what}: accept_token({t}={vocab.token_bytes[t]!r}) " \
                                                f"accepted a masked token after {tracker.describe()}"
        STATS["refused"] += 1
    assert np.array_equal(engine_mask(m, vocab.vocab_size), mask), f"{what}: a refused token changed the state"


def token_walk(rng, m, tracker, vocab, what, steps, eos_prob=0.3, deepseek=False):
    """Random valid walk: at each step pick an allowed token (oracle), compare masks first."""
    for step in range(steps):
        mask = compare(m, tracker, vocab, f"{what} step {step}", deepseek)
        check_refusals(rng, m, tracker, vocab, mask, what, n=2 if deepseek else 3)
        eos_ok = bool(mask[list(vocab.eos)].any())
        choices = [int(t) for t in np.nonzero(mask)[0] if t not in vocab.eos]
        if not choices or (eos_ok and rng.random() < eos_prob):
            if eos_ok:
                eos = rng.choice(sorted(vocab.eos))
                assert m.accept_token(eos)
                tracker.advance(eos)
                assert m.is_terminated()
                compare(m, tracker, vocab, f"{what} after EOS", deepseek)
                with pytest.raises(ValueError):
                    m.accept_token(0)
            return
        STATS["token_walk_steps"] += 1
        # favour multi-byte tokens so that walks get somewhere
        multi = [t for t in choices if len(vocab.token_bytes[t]) > 1]
        t = rng.choice(multi if multi and rng.random() < 0.6 else choices)
        assert m.accept_token(t), f"{what}: accept_token({t}={vocab.token_bytes[t]!r}) refused an allowed token"
        tracker.advance(t)


def string_walk(rng, m, tracker, vocab, tokens, what, compare_every=1, deepseek=False):
    """Walk along a given token sequence (valid or not): compare masks, check accept_token
    against the oracle; stop at the first refused token (state unchanged)."""
    for i, t in enumerate(tokens):
        if i % compare_every == 0:
            mask = compare(m, tracker, vocab, f"{what} token {i}", deepseek)
            ok = bool(mask[t])
        else:
            ok = tracker.allowed(t)
            STATS["tokens"] += 1
        got = m.accept_token(t)
        assert got == ok, (f"{what}: accept_token({t}={vocab.token_bytes[t]!r}) returned {got}, oracle says {ok} "
                           f"after {tracker.describe()}")
        if not ok:
            STATS["refused"] += 1
            STATS["string_walks_refused"] += 1
            compare(m, tracker, vocab, f"{what} after a refused token", deepseek)
            return False
        tracker.advance(t)
    compare(m, tracker, vocab, f"{what} end", deepseek)
    STATS["string_walks_completed"] += 1
    STATS["string_walks_complete_text"] += int(m.is_accepting())
    return True


def mutate_units(rng, units):
    """One random edit: insert/delete/replace a character or insert a raw byte."""
    units = list(units)
    idx = [i for i, u in enumerate(units) if isinstance(u, bytes) and u]
    if not idx:
        return units + [b"!"]
    i = rng.choice(idx)
    s = units[i].decode("utf-8")
    j = rng.randrange(len(s) + 1)
    op = rng.random()
    c = rng.choice(O.SAMPLE_CHARS)
    if op < 0.3:
        s2 = (s[:j] + c + s[j:]).encode()
    elif op < 0.55 and s:
        j = min(j, len(s) - 1)
        s2 = (s[:j] + s[j + 1:]).encode()
    elif op < 0.8 and s:
        j = min(j, len(s) - 1)
        s2 = (s[:j] + c + s[j + 1:]).encode()
    else:
        k = rng.randrange(len(units[i]) + 1)
        s2 = units[i][:k] + bytes([rng.choice([0x80, 0xC3, 0xE4, 0xF0, 0xFF, 0x22, 0x20])]) + units[i][k:]
    units[i] = s2
    return units


# ------------------------------------------------------------------------------ memos off

def masks_alike_byte_by_byte(info, with_memo, without, text: str, refill: bool = False, budget: bool = False) -> None:
    """Feeds ``text`` a character at a time to a matcher of each compiled grammar (the second
    compiled with ``repeat_memo`` off: no mask or walk is kept) and asserts their masks equal
    before every character, and that both accept or refuse it alike. ``refill``: each mask of the
    first is filled twice (the second fill is the memo's when it may be). ``budget``: budget-aware
    masks at the tightest budget (the shortest completion), where every token's cost decides."""
    a, b = stencil.Matcher(with_memo), stencil.Matcher(without)
    bm_a = stencil.allocate_token_bitmask(1, info.vocab_size)
    bm_b = stencil.allocate_token_bitmask(1, info.vocab_size)
    for i, ch in enumerate(text):
        least = b.min_completion_tokens() if budget else -1
        left = {"remaining_tokens": least + 1} if least >= 0 else {}
        a.fill_next_token_bitmask(bm_a, 0, **left)
        if refill:
            a.fill_next_token_bitmask(bm_a, 0, **left)
        b.fill_next_token_bitmask(bm_b, 0, **left)
        assert np.array_equal(bm_a, bm_b), (text, text[:i])
        ok_a, ok_b = a.accept_string(ch), b.accept_string(ch)
        assert ok_a == ok_b, (text, text[:i + 1])
        if not ok_a:
            return


# ------------------------------------------------------------------------------ two grammars alike

def pick(rng: random.Random, info, ids: np.ndarray) -> int:
    """A token among ``ids``: often a short one (strings grow a byte at a time to their bounds),
    or one with a quote or a backslash."""
    for _ in range(6):
        t = int(ids[rng.randrange(len(ids))])
        b = info.token_bytes(t)
        if len(b) <= 2 or b'"' in b or b"\\" in b or rng.random() < 0.2:
            return t
    return t


def walk_both(info, first, second, rng: random.Random, steps: int, budgets: bool = False) -> int:
    """One random walk fed to a matcher of each of two grammars that must mask alike (one
    compiled with an optimization, one without); the masks compared at every step, with
    ``budgets`` budget-aware masks too (tight budgets: the shortest completion and a few more).
    Returns the masks compared."""
    a, b = stencil.Matcher(first), stencil.Matcher(second)
    bm_a = stencil.allocate_token_bitmask(1, info.vocab_size)
    bm_b = stencil.allocate_token_bitmask(1, info.vocab_size)
    eos = set(info.eos_token_ids)
    text = b""
    for n in range(steps):
        least = b.min_completion_tokens() if budgets else -1
        if least >= 0 and rng.random() < 0.7:
            left = least + 1 + rng.choice([0, 0, 1, 2, 4, 30])
            a.fill_next_token_bitmask(bm_a, 0, remaining_tokens=left)
            b.fill_next_token_bitmask(bm_b, 0, remaining_tokens=left)
        else:
            a.fill_next_token_bitmask(bm_a, 0)
            b.fill_next_token_bitmask(bm_b, 0)
        if not np.array_equal(bm_a, bm_b):
            diff = np.flatnonzero(bitmask_to_bool(bm_a[0], info.vocab_size) != bitmask_to_bool(bm_b[0], info.vocab_size))
            raise AssertionError(f"masks differ after {text!r}: tokens {[info.token_bytes(int(t)) for t in diff[:8]]}")
        ids = np.flatnonzero(bitmask_to_bool(bm_b[0], info.vocab_size))
        ids = np.array([t for t in ids if int(t) not in eos])
        if not len(ids):
            return n + 1
        t = pick(rng, info, ids)
        assert a.accept_token(t) and b.accept_token(t)
        text += info.token_bytes(t)
    return steps
