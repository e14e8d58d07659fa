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
which only adds pairs (safe). Past a budget on states it answers None and the caller falls back
to a context-free check.

Example::

    unsafe = unsafe_lexemes(rules, start, lexemes)   # lexeme ids to split, or None
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Optional

from stencil.grammar.regex.nfa import ranges_intersect
from stencil.grammar.regex.unicode import normalize

__all__ = ["unsafe_lexemes"]

MAX_STATES = 3000
MAX_PAIRS = 20_000
MAX_WORK = 400_000   # elementary steps of one analysis, a deterministic time bound
EOF = -1


class _OutOfBudget(Exception):
    pass


def unsafe_lexemes(rules: list, start: int, num_nt: int, lex_first: list, lex_null: list,
                   is_text: Callable[[int], bool], is_multi: Callable[[int], bool],
                   compatible: Callable[[int, int], bool],
                   can_run_into: Callable[[int, tuple, int], bool]) -> Optional[set]:
    """Lexemes Y to split so that no allowed lexeme can run past another's end.

    ``rules``: (lhs, rhs) pairs over nonterminals (>= 0) and lexemes (``~k``), ``start`` the start
    nonterminal; ``lex_first[k]`` code points lexeme k starts with; ``lex_null[k]`` whether its
    regex holds "" (it is then optional); ``compatible(x, y)``: may x and y match the same text;
    ``can_run_into(x, chars, y)``: the regex question. None when the work budget runs out.
    """
    try:
        return _analyze(rules, start, num_nt, lex_first, lex_null, is_text, is_multi, compatible,
                        can_run_into)
    except _OutOfBudget:
        return None


def _analyze(rules, start, num_nt, lex_first, lex_null, is_text, is_multi, compatible, can_run_into):
    # Nullable lexemes are optional: model them as fresh nonterminals opt -> ε | k.
    rules = [list(r) for r in rules]
    opt_of: dict[int, int] = {}
    extra = []
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
    rules = [tuple(r) for r in rules] + extra
    num_nt += len(opt_of)
    aug = num_nt
    rules.append((aug, (start,)))
    by_lhs: list[list[int]] = [[] for _ in range(num_nt + 1)]
    for i, (lhs, _) in enumerate(rules):
        by_lhs[lhs].append(i)

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

    def seq_first(rhs, i, la) -> set:
        out = set()
        for s in rhs[i:]:
            if s < 0:
                out.add(~s)
                return out
            out |= first[s]
            if not null[s]:
                return out
        out.add(la)
        return out

    work_done = [0]

    def closure(kernel) -> frozenset:
        items = set(kernel)
        stack = list(kernel)
        while stack:
            r, dot, la = stack.pop()
            work_done[0] += 1
            if work_done[0] > MAX_WORK:
                raise _OutOfBudget
            rhs = rules[r][1]
            if dot < len(rhs) and rhs[dot] >= 0:
                las = seq_first(rhs, dot + 1, la)
                for r2 in by_lhs[rhs[dot]]:
                    for b in las:
                        it = (r2, 0, b)
                        if it not in items:
                            items.add(it)
                            stack.append(it)
        return frozenset(items)

    states: list[frozenset] = []
    index: dict[frozenset, int] = {}
    goto: list[dict] = []

    def add(kernel) -> Optional[int]:
        st = closure(kernel)
        if st not in index:
            if len(states) >= MAX_STATES:
                return None
            index[st] = len(states)
            states.append(st)
            goto.append({})
        return index[st]

    if add([(len(rules) - 1, 0, EOF)]) is None:
        return None
    queue = deque([0])
    while queue:
        q = queue.popleft()
        moves: dict[int, list] = {}
        for r, dot, la in states[q]:
            rhs = rules[r][1]
            if dot < len(rhs):
                moves.setdefault(rhs[dot], []).append((r, dot + 1, la))
        for sym, kernel in moves.items():
            n_before = len(states)
            t = add(kernel)
            if t is None or work_done[0] > MAX_WORK:
                return None
            goto[q][sym] = t
            if len(states) > n_before:
                queue.append(t)

    # Per state: lexemes allowed next (shifts and reduce lookaheads).
    shifts = [{~s for s in goto[q] if s < 0} for q in range(len(states))]
    reductions: list[dict] = []   # per state: lookahead -> rules to reduce
    for q in range(len(states)):
        red: dict = {}
        for r, dot, la in states[q]:
            lhs, rhs = rules[r]
            if dot == len(rhs) and la != EOF and lhs != aug:
                red.setdefault(la, []).append(rules[r])
        reductions.append(red)
    reduce_la = [set(red) for red in reductions]
    allowed = [shifts[q] | reduce_la[q] for q in range(len(states))]
    rev: list[list] = [[] for _ in states]   # predecessor edges: (p, symbol)
    for q in range(len(states)):
        for sym, t in goto[q].items():
            rev[t].append((q, sym))

    below_cache: dict = {}

    def below(q: int, rhs: tuple) -> set:
        """States p with a path spelling ``rhs`` from p to q."""
        key = (q, rhs)
        if key in below_cache:
            return below_cache[key]
        cur = {q}
        for sym in reversed(rhs):
            work_done[0] += sum(len(rev[t]) for t in cur)
            cur = {p for t in cur for p, s in rev[t] if s == sym}
        below_cache[key] = cur
        return cur

    after_cache: dict = {}

    def after(q: int, z: int) -> tuple:
        """States the parser can be in right after lexeme z is scanned in state q (a shift, or
        reductions done with lookahead z and then a shift), and whether the parser may be in
        several of them at once (an LR conflict on z: Earley follows every action). Otherwise
        the several states come from not knowing the stack below q, and the parser is in one."""
        key = (q, z)
        if key in after_cache:
            return after_cache[key]
        out: set = set()
        seen = {q}
        stack = [q]
        nondet = False
        while stack:
            s = stack.pop()
            work_done[0] += 1 + len(reductions[s])
            actions = 0
            if z in shifts[s]:
                out.add(goto[s][~z])
                actions += 1
            for lhs, rhs in reductions[s].get(z, ()):
                actions += 1
                for p in below(s, rhs):
                    t = goto[p].get(lhs)
                    if t is not None and t not in seen:
                        seen.add(t)
                        stack.append(t)
            nondet = nondet or actions > 1
        after_cache[key] = out, nondet
        return out, nondet

    chars_cache: dict = {}

    def chars_after(q: int, x: int) -> tuple:
        key = (q, x)
        if key not in chars_cache:
            acc: list = []
            for k in after(q, x)[0]:
                for y in allowed[k]:
                    acc.extend(lex_first[y])
            chars_cache[key] = normalize(acc)
        return chars_cache[key]

    lexemes = sorted(set().union(*allowed)) if allowed else []
    compat_with = {z: {z2 for z2 in lexemes if z2 != z and compatible(z, z2)} for z in lexemes}
    multi = {z for z in lexemes if is_multi(z)}
    unsafe: set = set()
    checked: set = set()
    # Explored: (q1, q2, several): two states the parser may be in at once, and whether it may
    # hold several stacks (after an LR conflict or a scan of several lexemes). With one stack,
    # several results of `after` are alternatives (the stack below is not known here), so the
    # parser is in one of them; with several stacks, in any set of them.
    seen_pairs = {(0, 0, False)}
    work = deque(seen_pairs)
    while work:
        q1, q2, several = work.popleft()
        work_done[0] += len(allowed[q1]) * (len(allowed[q2]) + 1)
        if work_done[0] > MAX_WORK:
            return None
        for x in allowed[q1]:
            if not is_text(x):
                continue
            c = chars_after(q1, x)
            if not c:
                continue
            for y in allowed[q2]:
                if y in unsafe or y not in multi or (x, c, y) in checked or not _meet(lex_first[x], lex_first[y]):
                    continue
                checked.add((x, c, y))
                if can_run_into(x, c, y):
                    unsafe.add(y)
        for z1 in allowed[q1]:
            next1, nd1 = after(q1, z1)
            if not next1:
                continue
            for z2 in (compat_with[z1] & allowed[q2]) | ({z1} if z1 in allowed[q2] else set()):
                next2, nd2 = after(q2, z2)
                work_done[0] += len(next1) * len(next2)
                if work_done[0] > MAX_WORK:
                    return None
                more = several or nd1 or nd2 or z1 != z2 or q1 != q2
                if more:
                    pairs = [(t1, t2, True) for t1 in next1 for t2 in next2]
                else:
                    pairs = [(t, t, False) for t in next1]
                for pair in pairs:
                    if pair not in seen_pairs:
                        if len(seen_pairs) > MAX_PAIRS:
                            return None
                        seen_pairs.add(pair)
                        work.append(pair)
    return unsafe


def _meet(a, b) -> bool:
    return ranges_intersect(a, b)
