"""An independent recognizer for the grammar front-end tests: character-level Earley.

It reads a grammar parsed by the oracle's own parsers (oracle_grammars.parse_gbnf,
oracle_lark.lark: nothing of stencil) and decides, with no lexer at all, whether a sequence of
segments (text and special-token ids) is a viable prefix of the language and whether it is
complete. Lexemes, greedy lexing and the core play no part, so comparing it with the Matcher
checks the front-ends' parsing and their lexeme choices. Lark ``%ignore`` is modelled as "any
number of ignored matches before each terminal", which is what the Matcher implements for
grammars whose terminals cannot run into each other, except at the very start: no ignored match
begins at position 0 unless the grammar sets ``initial_skip`` (llguidance's and XGrammar's rule,
which stencil follows); none follows the last terminal unless the grammar sets ``final_skip``
(llguidance's rule; Lark's own reading allows it).
"""
from __future__ import annotations

import stencil   # only to drive the Matcher (feed, accepts, accepts_text, matcher_verdict); the oracle reads none of it
from oracle_grammars import OGrammar


class CharEarley:
    def __init__(self, g: OGrammar, table=None):
        self.rules: dict = {}
        self.counter = 0
        self.table = table
        self.ignore = None
        self.initial_skip = g.initial_skip
        if g.ignore is not None:
            self.ignore = self._nt([[]])
            self.rules[self.ignore].append([self.ignore] + self._seq(g.ignore))
        for name in g.rules:
            self.rules.setdefault(("rule", name), [])
        for name, body in g.rules.items():
            alts = body[1] if body[0] == "alt" else (body,)
            self.rules[("rule", name)] = [self._seq(a) for a in alts]
        self.start = self._nt([[("rule", g.start)] + ([self.ignore] if self.ignore and g.final_skip else [])])
        self._nullable()

    # -- conversion -------------------------------------------------------------------------------
    def _nt(self, alts) -> tuple:
        self.counter += 1
        key = ("gen", self.counter)
        self.rules[key] = alts
        return key

    def _seq(self, e) -> list:
        kind = e[0]
        if kind == "cat":
            return [s for k in e[1] for s in self._seq(k)]
        if kind == "cls":
            return [("chars", e[1])]
        if kind == "ref":
            return [("rule", e[1])]
        if kind == "alt":
            return [self._nt([self._seq(k) for k in e[1]])]
        if kind == "rep":
            return [self._rep(self._nt([self._seq(e[1])]), e[2], e[3])]
        if kind == "term":
            return ([self.ignore] if self.ignore else []) + self._seq(e[1])
        ids = e[1] if kind == "special" else [self.table.lookup(e[1])]
        alts = []
        for i in ids:
            if self.table is None or self.table.is_special(i):
                alts.append([("special", i)])
            else:
                alts.append([("chars", ((ord(c), ord(c)),)) for c in self.table.text(i).decode()])
        return [self._nt(alts)]

    def _rep(self, item, lo, hi) -> tuple:
        if hi is None:
            star = self._nt([[]])
            self.rules[star].append([star, item])
            return self._nt([[item] * lo + [star]])
        return self._nt([[item] * n for n in range(lo, hi + 1)])

    def _nullable(self) -> None:
        self.null: set = set()
        changed = True
        while changed:
            changed = False
            for k, alts in self.rules.items():
                if k not in self.null and any(all(s in self.null for s in a) for a in alts):
                    self.null.add(k)
                    changed = True

    # -- recognition ------------------------------------------------------------------------------
    @staticmethod
    def _matches(sym, unit) -> bool:
        if sym[0] == "special":
            return unit == sym[1]
        if not isinstance(unit, str):
            return False
        c = ord(unit)
        return any(lo <= c <= hi for lo, hi in sym[1])

    def _close(self, items: set, waiting: list, k: int) -> None:
        """Predict and complete within set k; ``waiting[j]`` maps a nonterminal to the items of
        set j whose dot stands before it."""
        here: dict = {}
        waiting.append(here)
        stack = list(items)
        while stack:
            it = stack.pop()
            lhs, alt_i, dot, origin = it
            alt = self.rules[lhs][alt_i]
            if dot < len(alt):
                sym = alt[dot]
                if sym[0] in ("rule", "gen"):
                    here.setdefault(sym, []).append(it)
                    # an ignored match starting at 0 would come before the first terminal
                    only_empty = k == 0 and sym == self.ignore and not self.initial_skip
                    new = [(sym, j, 0, k) for j in range(1 if only_empty else len(self.rules[sym]))]
                    if sym in self.null:
                        new.append((lhs, alt_i, dot + 1, origin))
                    # a nonterminal that completed empty earlier in this set completes again
                    for n in new:
                        if n not in items:
                            items.add(n)
                            stack.append(n)
            else:
                for plhs, palt, pdot, porigin in list(waiting[origin].get(lhs, ())):
                    n = (plhs, palt, pdot + 1, porigin)
                    if n not in items:
                        items.add(n)
                        stack.append(n)

    def run(self, units) -> tuple[int, bool]:
        """(length of the longest viable prefix of ``units``, whether all of it is complete)."""
        waiting: list = []
        cur = {(self.start, j, 0, 0) for j in range(len(self.rules[self.start]))}
        self._close(cur, waiting, 0)
        for k, u in enumerate(units):
            nxt = set()
            for lhs, alt_i, dot, origin in cur:
                alt = self.rules[lhs][alt_i]
                if dot < len(alt) and alt[dot][0] in ("chars", "special") and self._matches(alt[dot], u):
                    nxt.add((lhs, alt_i, dot + 1, origin))
            if not nxt:
                return k, False
            self._close(nxt, waiting, k + 1)
            cur = nxt
        done = any(lhs == self.start and dot == len(self.rules[lhs][a]) and o == 0
                   for lhs, a, dot, o in cur)
        return len(units), done


def units(segments) -> list:
    """Segments (str text, int special ids) as a list of characters and ids."""
    out: list = []
    for s in segments:
        if isinstance(s, str):
            out.extend(s)
        else:
            out.append(s)
    return out


# --- driving a Matcher with real tokens ---------------------------------------------------------

def encode_segments(entry, segments) -> list:
    """Token ids for segments (text through the tokenizer's own encoder, ints kept as ids)."""
    ids: list = []
    for s in segments:
        if isinstance(s, str):
            if s:
                got = entry.encode_batch([s])[0]
                assert entry.info.decode_bytes(got) == s.encode("utf-8"), f"encoder does not round-trip {s!r}"
                ids.extend(got)
        else:
            ids.append(s)
    return ids


def _bit(bitmask, t: int) -> bool:
    return bool((int(bitmask[0, t >> 5]) >> (t & 31)) & 1)


def feed(matcher, ids, bitmask=None, eos=None) -> tuple[int, bool]:
    """Accept ``ids`` one by one; returns (how many were accepted, accepting at the end).

    With a ``bitmask`` (from ``stencil.allocate_token_bitmask(1, vocab)``), every step also
    checks that the mask allows exactly what ``accept_token`` accepts, and, given the ``eos``
    id, that EOS is allowed at the end exactly when the matcher is accepting."""
    for k, t in enumerate(ids):
        if bitmask is not None:
            matcher.fill_next_token_bitmask(bitmask, 0)
            allowed = _bit(bitmask, t)
        ok = matcher.accept_token(t)
        if bitmask is not None:
            assert ok == allowed, f"token {t} at step {k}: mask says {allowed}, accept_token says {ok}"
        if not ok:
            return k, False
    accepting = matcher.is_accepting()
    if bitmask is not None and eos is not None:
        matcher.fill_next_token_bitmask(bitmask, 0)
        assert _bit(bitmask, eos) == accepting, f"EOS allowed={_bit(bitmask, eos)} but is_accepting={accepting}"
    return len(ids), accepting


def accepts(env, compiled, text: str) -> bool:
    """``text``, through the tokenizer's own encoder, is accepted token by token (the mask agreeing
    with accept_token at every step) and the matcher ends accepting (EOS allowed exactly then).
    ``env``: (zoo entry, compiler, one-row bitmask), conftest's ``env`` fixture."""
    entry, _, bitmask = env
    ids = encode_segments(entry, [text])
    n, ok = feed(stencil.Matcher(compiled), ids, bitmask, entry.info.eos_token_ids[0])
    return n == len(ids) and ok


def accepts_text(compiled, text: str) -> bool:
    """The Matcher takes ``text`` whole (as bytes, no tokenizer) and ends accepting."""
    m = stencil.Matcher(compiled)
    return m.accept_string(text) and m.is_accepting()


def matcher_verdict(compiled, text: str) -> tuple[int, bool]:
    """The Matcher's side of CharEarley.run: (characters accepted before the first refusal,
    complete), fed one character at a time."""
    m = stencil.Matcher(compiled)
    for k, ch in enumerate(text):
        if not m.accept_string(ch):
            return k, False
    return len(text), m.is_accepting()
