"""Which lexemes could a greedy lexer run past? A context-aware answer over LR(1) item sets.

The GBNF front-end (:mod:`stencil.grammar.ebnf.gbnf_lexemes`) asks: for lexemes X and Y that the
parser may allow at the same moment, can a word of X followed by a character that may come next
keep Y alive? The question needs to know which lexemes are allowed together and what may follow
each, and a context-free FOLLOW set mixes contexts that never meet (the "," of a JSON array and
the "," of an object both follow a number, but never in the same place). Canonical LR(1) item
sets keep the contexts apart: the set of valid items for a prefix determines exactly which
lexemes may come next (shifts and reduce lookaheads).

stencil's parser is Earley, not LR: when several lexemes match the same text it follows all of
them, so the relevant unit is a pair of LR(1) states reached by two sequences of lexemes that
match the same text. :func:`unsafe_lexemes` explores those pairs; where the state after a lexeme
is not determined locally (after a reduction) it takes every state that lexeme can lead to,
which only adds pairs (safe). Past a work limit on states it answers None and the caller falls back
to a context-free check.

Example::

    unsafe = unsafe_lexemes(rules, start, lexemes)   # lexeme ids to split, or None
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Optional

from stencil.grammar.regex.unicode import ranges_intersect
from stencil.grammar.regex.unicode import normalize

__all__ = ["unsafe_lexemes"]

MAX_STATES = 3000
MAX_PAIRS = 20_000
MAX_WORK = 400_000   # elementary steps of one analysis, a deterministic time bound
EOF = -1


class _OutOfWork(Exception):
    pass


def unsafe_lexemes(rules: list, start: int, num_nt: int, lex_first: list, lex_null: list,
                   is_text: Callable[[int], bool], is_multi: Callable[[int], bool],
                   compatible: Callable[[int, int], bool],
                   can_run_into: Callable[[list], list]) -> Optional[set]:
    """Lexemes Y to split so that no allowed lexeme can run past another's end.

    ``rules``: (lhs, rhs) pairs over nonterminals (>= 0) and lexemes (``~k``), ``start`` the start
    nonterminal; ``lex_first[k]`` code points lexeme k starts with; ``lex_null[k]`` whether its
    regex holds "" (it is then optional); ``compatible(x, y)``: may x and y match the same text;
    ``can_run_into([(x, chars, y), ...])``: the regex question, asked once for all the triples
    the search meets (a list of answers). None when the work limit is reached.
    """
    try:
        return _analyze(rules, start, num_nt, lex_first, lex_null, is_text, is_multi, compatible,
                        can_run_into)
    except _OutOfWork:
        return None


def _analyze(rules, start, num_nt, lex_first, lex_null, is_text, is_multi, compatible, can_run_into):
    lr = _Lr1(rules, start, num_nt, lex_null)
    if not lr.build_states():
        return None
    lr.build_tables()
    return _PairSearch(lr, lex_first, is_text, is_multi, compatible, can_run_into).run()


def _optional_lexemes(rules, num_nt: int, lex_null) -> tuple[list, int]:
    """Nullable lexemes are optional: the rules with each one as a fresh nonterminal
    opt -> ε | k, and the new count of nonterminals."""
    rules = [list(r) for r in rules]
    opt_of: dict[int, int] = {}
    extra: list[tuple[int, tuple[int, ...]]] = []
    for r in rules:
        rhs = list(r[1])
        for i, s in enumerate(rhs):
            if s < 0 and lex_null[~s]:
                if s not in opt_of:
                    opt_of[s] = num_nt + len(opt_of)
                    extra.append((opt_of[s], ()))
                    extra.append((opt_of[s], (s,)))
                rhs[i] = opt_of[s]
        r[1] = tuple(rhs)
    return [tuple(r) for r in rules] + extra, num_nt + len(opt_of)


def _first_sets(rules, num_nt: int) -> tuple[list, list]:
    """(nullable, FIRST as lexeme ids) of every nonterminal, swept to a fixpoint."""
    null = [False] * (num_nt + 1)
    first: list[set] = [set() for _ in range(num_nt + 1)]
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            before = (null[lhs], len(first[lhs]))
            all_null = True
            for s in rhs:
                if s < 0:
                    first[lhs].add(~s)
                    all_null = False
                    break
                first[lhs] |= first[s]
                if not null[s]:
                    all_null = False
                    break
            if all_null:
                null[lhs] = True
            if (null[lhs], len(first[lhs])) != before:
                changed = True
    return null, first


class _Lr1:
    """Canonical LR(1) item sets (items (rule, dot, lookahead)) of the rules augmented with
    ``aug -> start``, and per state the lexemes allowed next: shifts and reduce lookaheads.
    ``work`` counts elementary steps against MAX_WORK."""

    def __init__(self, rules, start: int, num_nt: int, lex_null):
        rules, num_nt = _optional_lexemes(rules, num_nt, lex_null)
        self.aug = num_nt
        rules.append((self.aug, (start,)))
        self.rules = rules
        self.by_lhs: list[list[int]] = [[] for _ in range(num_nt + 1)]
        for i, (lhs, _) in enumerate(rules):
            self.by_lhs[lhs].append(i)
        self.null, self.first = _first_sets(rules, num_nt)
        self.work = 0
        self.states: list[frozenset] = []
        self.index: dict[frozenset, int] = {}
        self.goto: list[dict] = []
        self._below: dict = {}
        self._after: dict = {}

    def seq_first(self, rhs, i: int, la) -> set:
        out = set()
        for s in rhs[i:]:
            if s < 0:
                out.add(~s)
                return out
            out |= self.first[s]
            if not self.null[s]:
                return out
        out.add(la)
        return out

    def closure(self, kernel) -> frozenset:
        rules, by_lhs = self.rules, self.by_lhs
        items = set(kernel)
        stack = list(kernel)
        while stack:
            r, dot, la = stack.pop()
            self.work += 1
            if self.work > MAX_WORK:
                raise _OutOfWork
            rhs = rules[r][1]
            if dot < len(rhs) and rhs[dot] >= 0:
                las = self.seq_first(rhs, dot + 1, la)
                for r2 in by_lhs[rhs[dot]]:
                    for b in las:
                        it = (r2, 0, b)
                        if it not in items:
                            items.add(it)
                            stack.append(it)
        return frozenset(items)

    def add(self, kernel) -> Optional[int]:
        """The state of ``kernel``'s closure, added if new; None past MAX_STATES."""
        st = self.closure(kernel)
        if st not in self.index:
            if len(self.states) >= MAX_STATES:
                return None
            self.index[st] = len(self.states)
            self.states.append(st)
            self.goto.append({})
        return self.index[st]

    def build_states(self) -> bool:
        """All states reachable from the start and their goto edges; False past the work limit."""
        if self.add([(len(self.rules) - 1, 0, EOF)]) is None:
            return False
        queue = deque([0])
        while queue:
            q = queue.popleft()
            moves: dict[int, list] = {}
            for r, dot, la in self.states[q]:
                rhs = self.rules[r][1]
                if dot < len(rhs):
                    moves.setdefault(rhs[dot], []).append((r, dot + 1, la))
            for sym, kernel in moves.items():
                n_before = len(self.states)
                t = self.add(kernel)
                if t is None or self.work > MAX_WORK:
                    return False
                self.goto[q][sym] = t
                if len(self.states) > n_before:
                    queue.append(t)
        return True

    def build_tables(self) -> None:
        """Per state: shifts, reductions by lookahead, allowed lexemes; predecessor edges."""
        n = len(self.states)
        goto = self.goto
        self.shifts = [{~s for s in goto[q] if s < 0} for q in range(n)]
        self.reductions: list[dict] = []   # per state: lookahead -> rules to reduce
        for q in range(n):
            red: dict = {}
            for r, dot, la in self.states[q]:
                lhs, rhs = self.rules[r]
                if dot == len(rhs) and la != EOF and lhs != self.aug:
                    red.setdefault(la, []).append(self.rules[r])
            self.reductions.append(red)
        reduce_la = [set(red) for red in self.reductions]
        self.allowed = [self.shifts[q] | reduce_la[q] for q in range(n)]
        self.rev: list[list] = [[] for _ in range(n)]   # predecessor edges: (p, symbol)
        for q in range(n):
            for sym, t in goto[q].items():
                self.rev[t].append((q, sym))

    def below(self, q: int, rhs: tuple) -> set:
        """States p with a path spelling ``rhs`` from p to q."""
        key = (q, rhs)
        if key in self._below:
            return self._below[key]
        rev = self.rev
        cur = {q}
        for sym in reversed(rhs):
            self.work += sum(len(rev[t]) for t in cur)
            cur = {p for t in cur for p, s in rev[t] if s == sym}
        self._below[key] = cur
        return cur

    def after(self, q: int, z: int) -> tuple:
        """States the parser can be in right after lexeme z is scanned in state q (a shift, or
        reductions done with lookahead z and then a shift), and whether the parser may be in
        several of them at once (an LR conflict on z: Earley follows every action). Otherwise
        the several states come from not knowing the stack below q, and the parser is in one."""
        key = (q, z)
        if key in self._after:
            return self._after[key]
        out: set = set()
        seen = {q}
        stack = [q]
        nondet = False
        while stack:
            s = stack.pop()
            self.work += 1 + len(self.reductions[s])
            actions = 0
            if z in self.shifts[s]:
                out.add(self.goto[s][~z])
                actions += 1
            for lhs, rhs in self.reductions[s].get(z, ()):
                actions += 1
                for p in self.below(s, rhs):
                    t = self.goto[p].get(lhs)
                    if t is not None and t not in seen:
                        seen.add(t)
                        stack.append(t)
            nondet = nondet or actions > 1
        self._after[key] = out, nondet
        return out, nondet


class _PairSearch:
    """Pairs of states the parser may be in at once (reached by lexemes that match the same
    text), and in each, the lexemes Y that a word of an allowed X followed by what may come next
    might keep alive (``checked``: (X, chars after X, Y) triples, then asked in one batch)."""

    def __init__(self, lr: _Lr1, lex_first, is_text, is_multi, compatible, can_run_into):
        self.lr, self.lex_first, self.is_text, self.can_run_into = lr, lex_first, is_text, can_run_into
        allowed = lr.allowed
        lexemes = sorted(set().union(*allowed)) if allowed else []
        self.compat_with = {z: {z2 for z2 in lexemes if z2 != z and compatible(z, z2)} for z in lexemes}
        self.multi = {z for z in lexemes if is_multi(z)}
        self.checked: dict = {}   # (x, chars, y) in the order met
        self._chars: dict = {}

    def chars_after(self, q: int, x: int) -> tuple:
        """Code points that may come right after lexeme x scanned in state q."""
        key = (q, x)
        if key not in self._chars:
            acc: list = []
            for k in self.lr.after(q, x)[0]:
                for y in self.lr.allowed[k]:
                    acc.extend(self.lex_first[y])
            self._chars[key] = normalize(acc)
        return self._chars[key]

    def run(self) -> Optional[set]:
        """The lexemes to split; None past the work limit.

        Explored: (q1, q2, several): two states the parser may be in at once, and whether it may
        hold several stacks (after an LR conflict or a scan of several lexemes). With one stack,
        several results of `after` are alternatives (the stack below is not known here), so the
        parser is in one of them; with several stacks, in any set of them."""
        lr = self.lr
        seen_pairs = {(0, 0, False)}
        work = deque(seen_pairs)
        while work:
            q1, q2, several = work.popleft()
            lr.work += len(lr.allowed[q1]) * (len(lr.allowed[q2]) + 1)
            if lr.work > MAX_WORK:
                return None
            self.check_runs(q1, q2)
            for pair in self.successors(q1, q2, several):
                if pair is None:
                    return None
                if pair not in seen_pairs:
                    if len(seen_pairs) > MAX_PAIRS:
                        return None
                    seen_pairs.add(pair)
                    work.append(pair)
        triples = list(self.checked)
        return {y for (_, _, y), runs in zip(triples, self.can_run_into(triples)) if runs}

    def check_runs(self, q1: int, q2: int) -> None:
        """Note the question for each multi-character Y allowed in q2 and each text lexeme X
        allowed in q1 that can start alike: does a word of X, followed by a character that may
        come after X, keep Y alive?"""
        lex_first, checked = self.lex_first, self.checked
        for x in self.lr.allowed[q1]:
            if not self.is_text(x):
                continue
            c = self.chars_after(q1, x)
            if not c:
                continue
            for y in self.lr.allowed[q2]:
                if y in self.multi and (x, c, y) not in checked and _meet(lex_first[x], lex_first[y]):
                    checked[(x, c, y)] = None

    def successors(self, q1: int, q2: int, several: bool):
        """The pairs after scanning lexemes z1 in q1 and z2 in q2 that match the same text;
        None (then stop) past the work limit."""
        lr = self.lr
        allowed2 = lr.allowed[q2]
        for z1 in lr.allowed[q1]:
            next1, nd1 = lr.after(q1, z1)
            if not next1:
                continue
            for z2 in (self.compat_with[z1] & allowed2) | ({z1} if z1 in allowed2 else set()):
                next2, nd2 = lr.after(q2, z2)
                lr.work += len(next1) * len(next2)
                if lr.work > MAX_WORK:
                    yield None
                    return
                more = several or nd1 or nd2 or z1 != z2 or q1 != q2
                if more:
                    yield from ((t1, t2, True) for t1 in next1 for t2 in next2)
                else:
                    yield from ((t, t, False) for t in next1)


def _meet(a, b) -> bool:
    return ranges_intersect(a, b)
