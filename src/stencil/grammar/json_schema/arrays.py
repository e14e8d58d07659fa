"""Arrays: reading ``prefixItems``/``items``/``additionalItems``/``minItems``/``maxItems``/
``contains``/``minContains``/``maxContains``/``uniqueItems`` into an :class:`~.model.ArrSpec`, and
the grammar of an ArrSpec.

The grammar is a counter automaton: the state after each item is (position, matches of each
``contains``), where the position is exact up to the largest index a keyword mentions and
saturates after it. An item's schema depends on its position (prefix or rest) and, under
``contains``, on whether it is counted as a match (the item schema AND the contains schema) or
not (AND NOT the contains schema, needed only when the count has an upper bound). ``uniqueItems`` wraps each item in a rule with the core's ``unique_item`` check, which
vetoes an item equal (as JSON values) to an earlier item of the same array. The lists are
right-nested rules (one prediction when an array opens, whatever maxItems is), except under
``uniqueItems``, whose check needs the left-nested form.

Example::

    spec = ArrSpec(items=frozenset(), min=1, max=3)
    rule = emit_array(emitter, spec, depth=0)
"""
from __future__ import annotations

from stencil._core import GrammarError
from stencil.grammar.json_schema.model import (ANY, FALSE_SUB, TRUE_SUB, ArrSpec, Unsupported,
                                               normalize_arr, sub_and)

__all__ = ["read", "emit_array", "MAX_ARRAY_STATES"]

#: most (position, counters) states of one array's automaton
MAX_ARRAY_STATES = 20_000
_ALL = 1 << 40   # eval_upto when every item is evaluated


def read(ctx, loc, s):
    """The array conjunct of a schema object (ANY when it has no array keyword)."""
    from stencil.grammar.json_schema.keywords import _count, _where, only_arr
    keys = ("prefixItems", "items", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains")
    if not any(k in s for k in keys):
        return ANY
    prefix: tuple = ()
    rest = TRUE_SUB
    eval_upto = 0
    items = s.get("items")
    if isinstance(items, list):  # draft 2019-09 and earlier: a tuple, then additionalItems
        prefix = tuple(ctx.sub(loc, x, "items", i) for i, x in enumerate(items))
        eval_upto = len(prefix)
        if "additionalItems" in s:
            rest = ctx.sub(loc, s["additionalItems"], "additionalItems")
            eval_upto = _ALL
    else:
        if "prefixItems" in s:
            pi = s["prefixItems"]
            if not isinstance(pi, list):
                raise GrammarError(f"prefixItems at {_where(loc, 'prefixItems')}: must be a list of schemas")
            prefix = tuple(ctx.sub(loc, x, "prefixItems", i) for i, x in enumerate(pi))
            eval_upto = len(prefix)
        if items is not None:
            if not isinstance(items, (dict, bool)):
                raise GrammarError(f"items at {_where(loc, 'items')}: must be a schema or a list of schemas")
            rest = ctx.sub(loc, items, "items")
            eval_upto = _ALL
    lo = _count(loc, s, "minItems") if "minItems" in s else 0
    hi = _count(loc, s, "maxItems") if "maxItems" in s else None
    unique = s.get("uniqueItems") is True
    contains: tuple = ()
    eval_contains: tuple = ()
    if "contains" in s:
        c = ctx.sub(loc, s["contains"], "contains")
        cmin = _count(loc, s, "minContains") if ("minContains" in s and loc.draft >= 2019) else 1
        cmax = _count(loc, s, "maxContains") if ("maxContains" in s and loc.draft >= 2019) else None
        contains = ((c, cmin, cmax, 0),)
        eval_contains = (c,)
    spec = normalize_arr(ArrSpec(prefix, rest, lo, hi, contains, unique, eval_upto, eval_contains))
    return only_arr([spec] if spec is not None else [])


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
    b, alg = em.b, em.ctx.alg
    entries = _contains_entries(em, spec)
    p = len(spec.prefix)
    top = max([p, spec.min] + [start for _, _, _, start in entries])
    if spec.max is not None:
        top = spec.max
        if top < p:
            top = p
    saturate = spec.max is None   # the position top stands for "top or more"

    def item_sub(pos: int) -> frozenset:
        return spec.prefix[pos] if pos < p else spec.items

    wrappers: dict = {}

    def item_symbol(sub: frozenset):
        sym = wrappers.get(sub)
        if sym is None:
            value = em.value(sub, depth + 1)
            if spec.unique:
                sym = em.fresh("uitem")
                b.add_alternative(sym, [value])
                em.check(sym, "unique_item")
            else:
                sym = value
            wrappers[sub] = sym
        return sym

    def kinds(pos: int) -> list:
        """(Sub, counter increments) for an item at ``pos``."""
        out = [(item_sub(pos), ())]
        for k, (csub, lo, hi, start) in enumerate(entries):
            if pos < start:
                out = [(s, inc + (0,)) for s, inc in out]
                continue
            nxt = []
            for s, inc in out:
                nxt.append((sub_and(s, csub), inc + (1,)))
                nxt.append((s if hi is None else sub_and(s, alg.neg(csub)), inc + (0,)))
            out = nxt
        return [(s, inc) for s, inc in out if s != FALSE_SUB]

    def step(state, inc):
        pos, counts = state
        new = []
        for (csub, lo, hi, start), c, d in zip(entries, counts, inc):
            c += d
            if hi is not None and c > hi:
                return None
            if hi is None:
                c = min(c, lo)
            new.append(c)
        npos = pos + 1
        if npos > top:
            if not saturate:
                return None
            npos = top
        return (npos, tuple(new))

    def accepting(state) -> bool:
        pos, counts = state
        return pos >= spec.min and all(c >= lo for (_, lo, _, _), c in zip(entries, counts))

    start = (0, (0,) * len(entries))
    kind_cache: dict = {}

    def kinds_at(pos: int) -> list:
        ks = kind_cache.get(pos)
        if ks is None:
            ks = kind_cache[pos] = kinds(pos)
        return ks

    if spec.unique:
        body = _left_linear(em, depth, start, kinds_at, step, accepting, item_symbol)
    else:
        body = _right_linear(em, depth, start, kinds_at, step, accepting, item_symbol)
    rule = em.fresh("array")
    if accepting(start):
        b.add_alternative(rule, em.empty_array())
    for r in body:
        b.add_alternative(rule, em.arr_open(depth) + [r] + em.arr_close(depth))
    if not accepting(start) and not body:
        em.dead(rule)
    return rule


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
    live = set()
    for state in sorted(edges, key=lambda q: (q[0], sum(q[1])), reverse=True):
        if any(accepting(n) or (n in live and n != state) for _, n in edges[state]):
            live.add(state)
    rules = {state: em.fresh("items") for state in live}
    comma = em.comma(depth)
    for state in live:
        exits = []
        loop = [s for s, n in edges[state] if n == state]
        for s, n in edges[state]:
            if n == state:
                continue
            if accepting(n):
                exits.append([item_symbol(s)])
            if n in live:
                exits.append([item_symbol(s)] + comma + [rules[n]])
        r = rules[state]
        if loop:
            lp = em.fresh("loop")
            for s in dict.fromkeys(loop):
                b.add_alternative(lp, [item_symbol(s)])
                b.add_alternative(lp, [lp] + comma + [item_symbol(s)])
            if accepting(state):
                b.add_alternative(r, [lp])
            for e in exits:
                b.add_alternative(r, [lp] + comma + e)
        for e in exits:
            b.add_alternative(r, e)
    return [rules[start]] if start in live else []
