"""Arrays: the grammar of an :class:`~..core.model.ArrSpec` (read by :mod:`..read.arrays`).

The grammar is a counter automaton: the state after each item is (position, matches of each
``contains``), where the position is exact up to the largest index a keyword mentions and
saturates after it. An item's schema depends on its position (prefix or rest) and, under
``contains``, on whether it is counted as a match (the item schema AND the contains schema) or
not (AND NOT the contains schema, needed only when the count has an upper bound). ``uniqueItems`` wraps each item in a rule with the core's ``unique_item`` check, which
vetoes an item equal (as JSON values) to an earlier item of the same array. The lists are
right-nested rules (one prediction when an array opens, whatever maxItems is), except under
``uniqueItems``, whose check needs the left-nested form.

An item of a unique array that is one of a few scalar values (``enum``, ``const``, booleans)
cannot be written out differently once started, so the check at its end would leave the mask in
a dead end (``["a", "a`` with ``enum: ["a", "b"]``): each value is then its own alternative after
an empty rule with the ``next_item`` check (run before the value starts), and the list counts its
items up to the number of values.

Example::

    spec = ArrSpec(items=frozenset(), min=1, max=3)
    rule = emit_array(emitter, spec, depth=0)
"""
from __future__ import annotations

import json

from stencil._core import CheckKind
from stencil.grammar.json.schema.core.formulas import (FALSE, Const, f_and, num_const, num_consts, num_spellings,
                                                       small_integers, str_consts)
from stencil.grammar.json.schema.core.model import FALSE_SUB, ArrSpec, Typed, Unsupported, sub_and

__all__ = ["emit_array", "MAX_ARRAY_STATES"]

#: most (position, counters) states of one array's automaton
MAX_ARRAY_STATES = 20_000
#: positions past which an array that only its positions tell apart is counted by doubling rules
#: (O(log n) of them) instead of a rule per position: a maxItems of 1,000 made a thousand rules,
#: 4.5 ms of a compile, where the doubling rules take 0.8; a mask and a token's step inside cost
#: the same either way (900 items of maxItems 1,000: 1.4 / 1.5 us a token; 2,000 of 5,000: 1.5 /
#: 1.4), and short positional lists keep their rule per position
LONG_ARRAY_POSITIONS = 256
#: most values of a unique array's items written one alternative each (see the module docstring)
MAX_UNIQUE_VALUES = 64


def _contains_entries(em, spec: ArrSpec) -> list:
    """(Sub, lo, hi, start) entries that constrain anything, with FALSE/TRUE contains folded."""
    out = []
    for sub, lo, hi, start in spec.contains:
        if lo == 0 and hi is None:
            continue
        out.append((sub, lo, hi, start))
    if len(out) > 3:
        raise Unsupported("contains", "more than three contains constraints on one array")
    return out


def emit_array(em, spec: ArrSpec, depth: int):
    """A rule for the arrays of ``spec``."""
    b = em.b
    entries = _contains_entries(em, spec)
    p = len(spec.prefix)
    top = spec.max if spec.max is not None else max([p, spec.min] + [start for _, _, _, start in entries])
    if top - p > LONG_ARRAY_POSITIONS and not entries and not spec.unique:
        return _emit_long_array(em, spec, depth)
    auto = _Counters(em, spec, entries, top, depth)
    values = _unique_values(em, spec, entries)
    if values is not None:
        body = _left_linear_values(em, depth, spec, values) if len(values) >= spec.min else []
    elif spec.unique:
        body = _left_linear(em, depth, auto.start, auto.kinds_at, auto.step, auto.accepting, auto.item_symbol)
    else:
        body = _right_linear(em, depth, auto.start, auto.kinds_at, auto.step, auto.accepting, auto.item_symbol)
    rule = em.fresh("array")
    if auto.accepting(auto.start):
        b.add_alternative(rule, em.empty_array())
    for r in body:
        b.add_alternative(rule, em.arr_open(depth) + [r] + em.arr_close(depth))
    if not auto.accepting(auto.start) and not body:
        em.dead(rule)
    return rule


def _unique_values(em, spec: ArrSpec, entries: list):
    """The items' values when the array is unique, its items (no prefix, no contains) are a few
    scalars (an enum, booleans, a small range of integers), as [(JSON text, Typed)]; else None."""
    if not spec.unique or spec.prefix or entries:
        return None
    t = em.ctx.sub_typed(spec.items)
    if t.arr or t.obj:
        return None
    nums = num_consts(t.num) if t.num != FALSE else frozenset()
    if nums is None:  # a small integer range: its values too (fewer than minItems: no array)
        nums = small_integers(t.num, MAX_UNIQUE_VALUES)
    strs = str_consts(t.str) if t.str != FALSE else frozenset()
    if nums is None or strs is None or t.null + len(t.bools) + len(nums) + len(strs) > MAX_UNIQUE_VALUES:
        return None
    out = [("null", Typed(null=True))] if t.null else []
    out += [(json.dumps(b), Typed(bools=frozenset([b]))) for b in sorted(t.bools)]
    # each value as the items spell it (num_spellings): an integer stays one (number_spelling="plain"
    # writes it without a fraction), draft 4's integer 2 is not 2.0 (nor its non-integer 2 is 2)
    spelled = num_spellings(t.num, sorted(nums)) if nums else {}
    out += [(str(n), Typed(num=f_and(num_const(n), spelled[n]))) for n in sorted(nums)]
    out += [(json.dumps(s), Typed(str=Const(s))) for s in sorted(strs)]
    return out


def _left_linear_values(em, depth: int, spec: ArrSpec, values: list) -> list:
    """The non-empty item lists of a unique array of known values, as left-nested rules by item
    count (up to maxItems and the number of values); the rules of counts from minItems up."""
    b = em.b
    firsts, items = [], []
    for text, t in values:
        guard = em.fresh("next_item")
        b.add_alternative(guard, [])
        em.check(guard, CheckKind.next_item, key=text)
        value = em.value(frozenset([t]), depth + 1)
        firsts.append([value])   # no earlier item to compare with
        items.append([guard, value])
    # counted: after n distinct items, n < len(values), some value is always left for one more
    most = len(values) if spec.max is None else min(spec.max, len(values))
    if most == 0:   # (maxItems 0, or no value: the empty array alone, which emit_array writes)
        return []
    comma = em.comma(depth)
    lists = [None] + [em.fresh("items") for _ in range(most)]
    for value in firsts:
        b.add_alternative(lists[1], value)
    for n in range(2, most + 1):
        for item in items:
            b.add_alternative(lists[n], [lists[n - 1]] + comma + item)
    return lists[max(spec.min, 1):]


class _Counters:
    """The counter automaton of one ArrSpec: a state is (position, matches of each ``contains``
    entry), the position saturating at ``top`` when there is no maxItems."""

    def __init__(self, em, spec: ArrSpec, entries: list, top: int, depth: int):
        self.em, self.spec, self.entries, self.top, self.depth = em, spec, entries, top, depth
        self.saturate = spec.max is None   # the position top stands for "top or more"
        self.start = (0, (0,) * len(entries))
        self._wrappers: dict = {}
        self._kinds: dict = {}
        self._alike_from = max([len(spec.prefix)] + [start for _, _, _, start in entries])

    def item_symbol(self, sub: frozenset):
        """The symbol of one item: its value, wrapped in a unique_item check under uniqueItems."""
        sym = self._wrappers.get(sub)
        if sym is None:
            em = self.em
            value = em.value(sub, self.depth + 1)
            if self.spec.unique:
                sym = em.fresh("uitem")
                em.b.add_alternative(sym, [value])
                em.check(sym, CheckKind.unique_item)
            else:
                sym = value
            self._wrappers[sub] = sym
        return sym

    def kinds_at(self, pos: int) -> list:
        """(Sub, counter increments) for an item at ``pos`` (memoized; the same list from the
        position where neither a prefix item nor a contains entry's start tells items apart)."""
        pos = min(pos, self._alike_from)
        ks = self._kinds.get(pos)
        if ks is None:
            ks = self._kinds[pos] = self._kinds_of(pos)
        return ks

    def _kinds_of(self, pos: int) -> list:
        spec, alg = self.spec, self.em.ctx.alg
        first = spec.prefix[pos] if pos < len(spec.prefix) else spec.items
        out: list[tuple[frozenset, tuple[int, ...]]] = [(first, ())]
        for csub, _lo, hi, start in self.entries:
            if pos < start:
                out = [(s, inc + (0,)) for s, inc in out]
                continue
            nxt = []
            for s, inc in out:
                nxt.append((sub_and(s, csub), inc + (1,)))
                nxt.append((s if hi is None else sub_and(s, alg.neg(csub)), inc + (0,)))
            out = nxt
        return [(s, inc) for s, inc in out if s != FALSE_SUB]

    def step(self, state, inc):
        """The state after an item with counter increments ``inc``; None past a bound."""
        pos, counts = state
        if counts:   # (the usual array has no contains: the position alone is its state)
            new = []
            for (_csub, lo, hi, _start), c, d in zip(self.entries, counts, inc):
                c += d
                if hi is not None and c > hi:
                    return None
                if hi is None:
                    c = min(c, lo)
                new.append(c)
            counts = tuple(new)
        npos = pos + 1
        if npos > self.top:
            if not self.saturate:
                return None
            npos = self.top
        return (npos, counts)

    def accepting(self, state) -> bool:
        pos, counts = state
        return pos >= self.spec.min and all(c >= lo for (_, lo, _, _), c in zip(self.entries, counts))


def _emit_long_array(em, spec: ArrSpec, depth: int):
    """Arrays whose item counts (minItems, maxItems) run past LONG_ARRAY_POSITIONS, when nothing
    but the position decides an item's schema: the items after the prefix are counted by
    rules that double (:func:`_counted`), O(log n) of them, exact for any n."""
    b = em.b
    p = len(spec.prefix)
    comma = em.comma(depth)
    items = [em.value(sub, depth + 1) for sub in spec.prefix] or [em.value(spec.items, depth + 1)]
    unit = em.fresh("unit")    # ", item" after the first items
    b.add_alternative(unit, comma + [em.value(spec.items, depth + 1)])
    head = max(p, 1)           # the items written out: the prefix, or the first item
    rule = em.fresh("array")
    if spec.min == 0:
        b.add_alternative(rule, em.empty_array())
    for n in range(max(spec.min, 1), head):   # shorter than the prefix
        listed = [x for i in range(n) for x in (comma if i else []) + [items[i]]]
        b.add_alternative(rule, em.arr_open(depth) + listed + em.arr_close(depth))
    listed = [x for i in range(head) for x in (comma if i else []) + [items[i]]]
    lo = max(spec.min - head, 0)
    hi = None if spec.max is None else spec.max - head
    if hi is None or hi >= lo:
        b.add_alternative(rule, em.arr_open(depth) + listed + [_counted(em, unit, lo, hi)] + em.arr_close(depth))
    return rule


def _counted(em, unit, lo: int, hi) -> object:
    """A rule deriving unit^n for lo <= n <= hi (hi None: no upper bound), unambiguously, with
    O(log hi) rules: E(k) is exactly 2^k units (E(k) -> E(k-1) E(k-1)), F(k) any count below 2^k
    (F(k) -> F(k-1) | E(k-1) F(k-1)), and at most r is F(k) | E(k) at-most(r - 2^k) for the top
    bit k of r. Counting from the left keeps the parser's items per step O(log^2 hi)."""
    b = em.b
    exact: dict = {0: unit}
    below: dict = {}

    def e(k):
        if k not in exact:
            r = exact[k] = em.fresh(f"units{1 << k}")
            b.add_alternative(r, [e(k - 1), e(k - 1)])
        return exact[k]

    def f(k):
        if k not in below:
            r = below[k] = em.fresh(f"below{1 << k}")
            b.add_alternative(r, [] if k == 0 else [f(k - 1)])
            if k:
                b.add_alternative(r, [e(k - 1), f(k - 1)])
        return below[k]

    def at_most(r):
        if r == 0:
            return []
        k = r.bit_length() - 1
        rule = em.fresh(f"upto{r}")
        b.add_alternative(rule, [f(k)])
        b.add_alternative(rule, [e(k)] + at_most(r - (1 << k)))
        return [rule]

    seq = [e(k) for k in range(lo.bit_length()) if lo >> k & 1]
    if hi is None:
        star = em.fresh("units")
        b.add_alternative(star, [])
        b.add_alternative(star, [star, unit])
        seq.append(star)
    else:
        seq += at_most(hi - lo)
    out = em.fresh("count")
    b.add_alternative(out, seq)
    return out


def _left_linear(em, depth, start, kinds_at, step, accepting, item_symbol) -> list:
    """The non-empty item lists as left-nested rules, one per automaton state (the lists ending
    there); the rules of accepting states. A ``unique_item`` check reads an item's earlier
    siblings from the start of the rule waiting on it, so unique arrays need this form: that
    rule then starts at the first item."""
    b = em.b
    lists: dict = {}   # state -> rule of the non-empty item lists ending in that state
    todo = []
    comma = em.comma(depth)

    def target(state):
        r = lists.get(state)
        if r is None:
            if len(lists) >= MAX_ARRAY_STATES:
                raise Unsupported("maxItems", f"the array needs more than {MAX_ARRAY_STATES} counting states")
            r = lists[state] = em.fresh("items")
            todo.append(state)
        return r

    for s, inc in kinds_at(0):
        nxt = step(start, inc)
        if nxt is not None:
            b.add_alternative(target(nxt), [item_symbol(s)])
    while todo:
        state = todo.pop()
        for s, inc in kinds_at(state[0]):
            nxt = step(state, inc)
            if nxt is not None:
                b.add_alternative(target(nxt), [lists[state]] + comma + [item_symbol(s)])
    return [r for state, r in lists.items() if accepting(state)]


def _right_linear(em, depth, start, kinds_at, step, accepting, item_symbol) -> list:
    """The non-empty item lists as right-nested rules, one per automaton state (the lists from
    there to an accepting state), with a left-nested loop where an item keeps the state. Opening
    the array then predicts one rule, not one per accepting state (maxItems 1000 made that 2,000
    Earley items at every array), and the parser's Leo memo completes the right nesting in O(1)
    per item."""
    b = em.b
    edges: dict = {}   # state -> [(item sub, next state)]
    todo = [start]
    while todo:
        state = todo.pop()
        if state in edges:
            continue
        if len(edges) >= MAX_ARRAY_STATES:
            raise Unsupported("maxItems", f"the array needs more than {MAX_ARRAY_STATES} counting states")
        out = edges[state] = []
        for s, inc in kinds_at(state[0]):
            nxt = step(state, inc)
            if nxt is not None:
                out.append((s, nxt))
                todo.append(nxt)
    # States from which some non-empty list reaches an accepting state. Every item but a
    # self-loop raises the position or, saturated, a count: deepest first is one pass.
    accepts = {state: accepting(state) for state in edges}   # (every next state is in edges)
    live = set()
    for state in sorted(edges, key=lambda q: (q[0], sum(q[1])), reverse=True):
        if any(accepts[n] or (n in live and n != state) for _, n in edges[state]):
            live.add(state)
    rules = {state: em.fresh("items") for state in live}
    comma = em.comma(depth)
    add = b.add_alternative
    for state in live:
        exits = []
        loop = []
        for s, n in edges[state]:
            if n == state:
                loop.append(s)
                continue
            ends, goes_on = accepts[n], n in live
            if ends or goes_on:
                sym = item_symbol(s)
                if ends:
                    exits.append([sym])
                if goes_on:
                    exits.append([sym, *comma, rules[n]])
        r = rules[state]
        if loop:
            lp = em.fresh("loop")
            for s in dict.fromkeys(loop):
                sym = item_symbol(s)
                add(lp, [sym])
                add(lp, [lp, *comma, sym])
            if accepts[state]:
                add(r, [lp])
            for e in exits:
                add(r, [lp, *comma, *e])
        for e in exits:
            add(r, e)
    return [rules[start]] if start in live else []
