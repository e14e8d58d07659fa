"""Which lexemes could a greedy lexer run past? A context-aware answer over LR(1) item sets.

The GBNF front-end (:mod:`stencil.grammar.gbnf_lexemes`) asks: for lexemes X and Y that the
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

__all__ = ["unsafe_lexemes"]

MAX_STATES = 3000
EOF = -1


def unsafe_lexemes(rules: list, start: int, num_nt: int, lex_first: list, lex_null: list,
                   is_text: Callable[[int], bool], is_multi: Callable[[int], bool],
                   compatible: Callable[[int, int], bool],
                   can_run_into: Callable[[int, tuple, int], bool]) -> Optional[set]:
    """Lexemes Y to split so that no allowed lexeme can run past another's end.

    ``rules``: (lhs, rhs) pairs over nonterminals (>= 0) and lexemes (``~k``), ``start`` the start
    nonterminal; ``lex_first[k]`` code points lexeme k starts with; ``lex_null[k]`` whether its
    regex holds "" (it is then optional); ``compatible(x, y)``: may x and y match the same text;
    ``can_run_into(x, chars, y)``: the regex question. None when the state budget runs out.
    """
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

    def closure(kernel) -> frozenset:
        items = set(kernel)
        stack = list(kernel)
        while stack:
            r, dot, la = stack.pop()
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
            if t is None:
                return None
            goto[q][sym] = t
            if len(states) > n_before:
                queue.append(t)

    # Per state: lexemes allowed next (shifts and reduce lookaheads).
    shifts = [{~s for s in goto[q] if s < 0} for q in range(len(states))]
    reduce_la = [{la for r, dot, la in states[q] if dot == len(rules[r][1]) and la != EOF}
                 for q in range(len(states))]
    allowed = [shifts[q] | reduce_la[q] for q in range(len(states))]
    rev: list[list] = [[] for _ in states]   # predecessor edges: (p, symbol)
    for q in range(len(states)):
        for sym, t in goto[q].items():
            rev[t].append((q, sym))

    def below(q: int, rhs: tuple) -> set:
        """States p with a path spelling ``rhs`` from p to q."""
        cur = {q}
        for sym in reversed(rhs):
            cur = {p for t in cur for p, s in rev[t] if s == sym}
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
            actions = 0
            if z in shifts[s]:
                out.add(goto[s][~z])
                actions += 1
            for r, dot, la in states[s]:
                lhs, rhs = rules[r]
                if la != z or dot != len(rhs) or lhs == aug:
                    continue
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
            from stencil.grammar.regex_unicode import normalize
            chars_cache[key] = normalize(acc)
        return chars_cache[key]

    unsafe: set = set()
    seen_pairs = {(0, 0)}
    work = deque([(0, 0)])
    while work:
        q1, q2 = work.popleft()
        for x in allowed[q1]:
            if not is_text(x):
                continue
            c = chars_after(q1, x)
            if not c:
                continue
            for y in allowed[q2]:
                if y in unsafe or not is_multi(y) or not _meet(lex_first[x], lex_first[y]):
                    continue
                if can_run_into(x, c, y):
                    unsafe.add(y)
        for z1 in allowed[q1]:
            for z2 in allowed[q2]:
                if z1 != z2 and not compatible(z1, z2):
                    continue
                next1, nd1 = after(q1, z1)
                next2, nd2 = after(q2, z2)
                if q1 == q2 and z1 == z2 and not nd1:
                    pairs = [(t, t) for t in next1]
                else:
                    pairs = [(t1, t2) for t1 in next1 for t2 in next2]
                for pair in pairs:
                    if pair not in seen_pairs:
                        if len(seen_pairs) > MAX_STATES * 20:
                            return None
                        seen_pairs.add(pair)
                        work.append(pair)
    return unsafe


def _meet(a, b) -> bool:
    from stencil.grammar.nfa import ranges_intersect
    return ranges_intersect(a, b)
