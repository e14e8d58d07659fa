"""Objects: the grammar of an :class:`~..core.model.ObjSpec` (read by :mod:`..read.objects`).

Keys outside ``properties`` are split into classes by which ``patternProperties`` (and the
``additionalProperties`` rule, "matches no pattern") they match; each class is one key lexeme (a
string regex that also excludes the named properties) with the conjunction of the matching
schemas as its value.

Two member orders:

- ``property_order="definition"`` (default): named properties in ``properties`` order (then
  required names that only the other keywords describe), each optional one skippable, then the
  other keys. The member list is a left-nested chain of rules whose state is (next property,
  number of members), so ``minProperties``/``maxProperties`` are counted by the grammar itself.
- ``property_order="any"``: members in any order. The core's checks make it exact: ``next_key``
  (below) keeps named keys unique, ``unique_key`` vetoes a repeated key of the other keys,
  ``object_keys`` vetoes an object that lacks a required key or has a member count outside
  [minProperties, maxProperties]. The member list also counts the required members and the
  members up to minProperties (states (mask, required, others)), so that the grammar closes the
  object only where the check lets it: the newline before an indented brace is no dead end, and
  the budget's shortest completion is a real one. Where few keys are required, the list holds
  which of them are written (a bit each), not how many, and offers each one only once: the
  shortest completion the budget reads off the grammar then writes the required keys still
  missing, not the cheapest one again (which next_key would veto: the budget ran out there).

Checks that only ran when a member or the object completes would let the mask walk into dead ends
(a repeated key's value written out, a comma after the last member a closed object can hold), so
the member list carries two more: ``next_key`` on an empty rule before each named key (run before
the key starts: the key is new, and leaves room within the member bound for the required keys not
written yet; for the other keys, only the room), and, when the comma is followed by indentation,
``more_members`` on the comma (vetoed when no member can follow; a lone comma after which every
next_key check fails is refused by the parser already). The member bound is ``maxProperties``, and the named keys when the object
takes no other key. The checks see the required names, not the keys a ``not`` demands (``some``
entries: some key starts with c); where those need members of their own, each member's checks
take a bound lowered by the members its list state still needs beyond the required names (the
fewest members from that state to the closing one), so that under ``maxProperties: 1`` a key
that is none of the demanded ones is refused before it starts.

Example::

    rule = emit_object(emitter, ObjSpec(props=(("a", frozenset()),), required=("a",)), depth=0)
"""
from __future__ import annotations

from typing import Optional

from stencil._core import CheckKind
from stencil.grammar.deadline import check_deadline
from stencil.grammar.json.schema.core.formulas import FALSE, TRUE, Formula, f_and, f_not, f_or, str_eval, str_words
from stencil.grammar.json.schema.core.model import (FALSE_SUB, NONE, TRUE_SUB, ObjSpec, Unsupported, rules_sub,
                                                    sub_and)
from stencil.grammar.json.schema.read.disjoint import formula_empty

__all__ = ["emit_object", "MAX_KEY_CLASSES", "MAX_OBJECT_STATES"]

#: most classes of keys (sets of patternProperties that one key can match together) on one object
MAX_KEY_CLASSES = 64
#: most (property, count) states of one object's member chain
MAX_OBJECT_STATES = 20_000
#: most links (member-list state, member kind) of an object in any order whose list tracks which
#: required keys are written (past it, how many: see :func:`_emit_any`)
MAX_KEYSET_LINKS = 1_024


def _key_classes(em, spec: ObjSpec) -> tuple[list, Optional[Formula]]:
    """(key formula, value Sub) partitioning the keys outside the named properties: one class per
    set of rules (patternProperties, additionalProperties) a key can match at once; and the keys
    the classes hold together where that is every key the object may have (no class dropped for
    a false schema), else None."""
    forbidden: Formula = FALSE
    live = []
    for pred, sub in spec.rules:
        if sub == FALSE_SUB:
            forbidden = f_or(forbidden, pred)
        elif sub != TRUE_SUB:
            live.append((pred, sub))
    base = f_and(spec.names, f_not(forbidden))
    if base == FALSE:
        return [], None
    n = len(live)
    if n <= 3:
        overlap = [[True] * n for _ in range(n)]
    else:
        # which rules can match one key together (the core's emptiness test on each pair)
        overlap = [[i == j or not formula_empty(em.ctx, "str", f_and(base, live[i][0], live[j][0]))
                    for j in range(n)] for i in range(n)]
    out = []
    whole = True
    for chosen in _cliques(overlap):
        f = base
        sub = TRUE_SUB
        for i in chosen:
            f = f_and(f, live[i][0])
            sub = sub_and(sub, live[i][1])
        # a rule disjoint from a chosen one cannot match anyway: no need to exclude it
        for j in range(n):
            if j not in chosen and all(overlap[i][j] for i in chosen):
                f = f_and(f, f_not(live[j][0]))
        if f != FALSE and sub != FALSE_SUB:
            out.append((f, sub))
        whole = whole and (f == FALSE or sub != FALSE_SUB)
    return out, base if whole else None


def _cliques(overlap) -> list:
    """Every set of pairwise overlapping rules, the empty set included."""
    n = len(overlap)
    out: list[tuple[int, ...]] = []
    stack: list[tuple[tuple[int, ...], int]] = [((), 0)]
    while stack:
        chosen, start = stack.pop()
        out.append(chosen)
        if len(out) > MAX_KEY_CLASSES:
            raise Unsupported("patternProperties", f"keys fall into more than {MAX_KEY_CLASSES} classes of "
                              "overlapping patterns on one object")
        for j in range(start, n):
            if all(overlap[i][j] for i in chosen):
                stack.append((chosen + (j,), j + 1))
    return out


def _key_symbol(em, f, excluded: list, consts: Optional[frozenset]):
    """The key of a class: strings satisfying ``f`` except the named properties (``consts``: f's
    strings where they are few, :func:`str_words`); None if empty.
    The named properties are left out by the core's ``not_in`` check on a rule around the key
    lexeme (a complement in the regex would slow the lexer and the builder's emptiness search)."""
    b = em.b
    # A finite set of keys (unevaluatedProperties, a pattern `^[a-e]$`): spelled out without the
    # named ones, so that a class whose keys are all named has no key (the not_in check below
    # would refuse each at its end: a dead end where minProperties counts on one).
    if consts is not None:
        keys = sorted(consts - set(excluded))
        if not keys:
            return None
        return b.lexeme(b.re_or([em.key_text(k) for k in keys]), "key")
    lexeme = em.string_lexeme(f, "key")
    names = [k for k in excluded if str_eval(f, k)]   # only those f would let through
    if not names:
        return lexeme
    key = em.fresh("key")
    b.add_alternative(key, [lexeme])
    em.check(key, CheckKind.not_in, names=names)
    return key


def _subsets(entries, key_ok):
    """(bit mask, key formula, value Sub) for each set of ``some`` entries a member may satisfy."""
    out = [(0, TRUE, TRUE_SUB)]
    for i, (f, sub) in enumerate(entries):
        if not key_ok(f):
            continue
        out += [(m | (1 << i), f_and(kf, f), sub_and(vs, sub)) for m, kf, vs in out]
    return out


def _members(em, spec: ObjSpec, depth: int):
    """Named members [(name, required, [(mask, symbols)])], other members [(mask, symbols)] (a
    mask says which ``some`` entries the member satisfies), and the other members' keys where
    they are few (:func:`str_words`; None: not known to be)."""
    names = {k for k, _ in spec.props}   # sets: lists made 10,000 required keys quadratic (2 s)
    required = set(spec.required)
    props = list(spec.props) + [(k, rules_sub(spec, k)) for k in spec.required if k not in names]
    colon = em.colon()
    named = []
    some = spec.some
    for i, (k, sub) in enumerate(props):
        if i % 256 == 0:
            check_deadline()   # 10,000 properties: 0.4 s of members
        if sub == FALSE_SUB:
            continue
        if not some:   # the usual case: one alternative, no mask bookkeeping
            if NONE not in sub:
                named.append((k, k in required, [(0, [em.key_literal(k)] + colon + [em.value(sub, depth + 1)])]))
            else:
                named.append((k, k in required, []))
            continue
        alts = []
        for mask, _, extra in _subsets(some, lambda f, k=k: str_eval(f, k)):
            vs = sub_and(sub, extra)
            if vs != FALSE_SUB:
                alts.append((mask, [em.key_literal(k)] + colon + [em.value(vs, depth + 1)]))
        named.append((k, k in required, alts))
    excluded = [k for k, _ in props]
    others = []
    other_keys: Optional[frozenset] = frozenset()
    classes, cover = _key_classes(em, spec)
    covering = []   # the classes' lexemes (those that spell their keys out leave the named ones out)
    for f, sub in classes:
        if str_words(f) is None:
            covering.append(em.string_lexeme(f))
        for mask, kf, extra in _subsets(spec.some, lambda g: True):
            vs, fk = sub_and(sub, extra), f_and(f, kf)
            if mask and spec.max is not None and formula_empty(em.ctx, "str", fk):
                continue   # no such key: the member list's room under maxProperties must not count on one
            if vs == FALSE_SUB:
                continue
            words = str_words(fk)
            key = _key_symbol(em, fk, excluded, words)
            if key is not None:
                others.append((mask, [key] + colon + [em.value(vs, depth + 1)]))
                other_keys = None if other_keys is None or words is None else other_keys | words.difference(excluded)
    if cover is not None and len(covering) == len(classes) > 1:
        # Every key falls in the class of the rules it matches: the classes hold the string of
        # any key together, whose derivatives stay few where those of classes split by
        # unanchored patterns multiply (Lexer::cover_state). (A class whose value has no
        # instance leaves its lexeme unused: the builder then drops the cover.)
        em.b.cover(covering, em.string_expr(cover))
    return named, others, other_keys


def emit_object(em, spec: ObjSpec, depth: int):
    """A rule for the objects of ``spec``."""
    if len(spec.some) > 6:
        raise Unsupported("not", "more than six 'some member' constraints on one object")
    named, others, other_keys = _members(em, spec, depth)
    most = _most_members(spec, named, other_keys)
    if most is not None and spec.min > most:   # more members than there are keys: no such object
        rule = em.fresh("object")
        em.dead(rule)
        return rule
    if em.options.property_order == "any":
        return _emit_any(em, spec, depth, named, others, most)
    return _emit_definition(em, spec, depth, named, others)


def _most_members(spec: ObjSpec, named: list, other_keys: Optional[frozenset]):
    """The most members an object can have (None: no bound): maxProperties, and the keys it may
    have when they are finite: the named ones, and the other members' keys beside them (consts,
    propertyNames' enum, a key pattern `^[a-e]$`, less the named ones). (A member list counts
    members, not distinct keys: minProperties 3 over the names a and b would count to 3 with a
    key written twice, which next_key refuses at the end: a dead end.)"""
    most = spec.max
    if other_keys is not None:
        possible = sum(1 for _, _, alts in named if alts) + len(other_keys)
        most = possible if most is None else min(most, possible)
    return most


def _by_mask(em, alts: list, check: bool = False) -> dict:
    """One member rule per mask (or kind, see :func:`_emit_any`): {mask: [[member rule]]}, the
    shape of :func:`_group`; with the ``unique_key`` check at the member's end when asked."""
    out: dict = {}
    for mask, symbols in alts:
        r = out.get(mask)
        if r is None:
            r = em.fresh("member")
            out[mask] = [[r]]
            if check:
                em.check(r, CheckKind.unique_key)
        em.b.add_alternative(out[mask][0][0], symbols)
    return out


def _group(alts: list) -> dict:
    """Members' symbol lists by mask, {mask: [symbols, ...]}, written inline in the member list
    (so that the checks on their first symbols see the earlier members as siblings)."""
    out: dict = {}
    for mask, symbols in alts:
        out.setdefault(mask, []).append(symbols)
    return out


def _keyed(em, alts: list) -> list:
    """Each member's key wrapped in a rule with the ``unique_key`` check, which runs as the key
    ends (the key of a class of other keys can always be written out differently, so ending it
    is where a repeat shows)."""
    keyed: dict = {}
    out = []
    for mask, (key, *rest) in alts:
        k = keyed.get(key)
        if k is None:
            k = keyed[key] = em.fresh("keyed")
            em.b.add_alternative(k, [key])
            em.check(k, CheckKind.unique_key)
        out.append((mask, [k] + rest))
    return out


def _guarded(em, alts: list, required, most, key=None) -> list:
    """Each member after an empty rule with the ``next_key`` check, run before its key starts:
    the named ``key`` is not written yet (or, with no key, a key outside the named ones), and
    the member leaves room within ``most`` members for the required keys not written yet."""
    guard = em.fresh("next_key")
    em.b.add_alternative(guard, [])
    em.check(guard, CheckKind.next_key, names=list(required), max=-1 if most is None else most, key=key)
    return [(mask, [guard] + symbols) for mask, symbols in alts]


def _separator(em, comma: list, required, most) -> list:
    """The comma before a member; with a member bound and a comma followed by more (a newline
    and indentation), on a rule whose ``more_members`` check vetoes it when no member can follow.
    A lone comma needs no check: when every next_key check after it fails, the parser's row after
    it expects nothing and the comma itself is refused."""
    if most is None or len(comma) == 1:
        return comma
    sep = em.fresh("comma")
    em.b.add_alternative(sep, comma[:1])
    em.check(sep, CheckKind.more_members, names=list(required), max=most)
    return [sep] + comma[1:]


def _close_counts(spec) -> tuple[int, int]:
    """What the member list of an object in any order counts: the required members written (up
    to their number) and the other members (up to what minProperties needs beside them), so that
    the grammar itself closes the object only after them. ``object_keys``, which runs as the
    object ends, refuses just the closing lexeme: with an indentation (a newline, then the
    brace) the newline would be a dead end, and the shortest completion the budget reads off the
    grammar would be "}" (one token) after any member. Keys are unique (``next_key``), so n
    required members are the n required names."""
    if not (spec.required or spec.min > 0):
        return 0, 0
    need = len(set(spec.required))
    others = max(0, spec.min - need)
    if (need + 1) * (others + 1) * (1 << len(spec.some)) > MAX_OBJECT_STATES:
        raise Unsupported("required" if need else "minProperties",
                          f"counting {need} required keys and {spec.min} members in any order needs more than "
                          f"{MAX_OBJECT_STATES} grammar states")
    return need, others


def _member_rules(em, spec, named, others, need: int, bits: dict):
    """The member rules by kind (mask, and whether the key is a required one where those are
    counted, or its bit where ``bits`` names the required keys' bits) whose next_key checks
    bound the object's members by ``cap``: a function of ``cap``,
    each rule made once. A rule per kind is shared by every place in the list that bounds alike
    (one parser item where a member may start); the next_key checks at the start of its
    alternatives read the members before it. They keep named keys unique; the other keys have a
    rule of their own with unique_key at its end, the exact check (such a key can be written out
    in many ways, so only its end shows a repeat)."""
    made: dict = {}

    def rules(cap):
        members = made.get(cap)
        if members is None:
            # (a required key the list offers once needs no next_key check where no
            # maxProperties asks for room: the grammar keeps it unique)
            alts = [((mask, bits.get(k, 0) if bits else int(req and need > 0)), symbols)
                    for k, req, key_alts in named if key_alts
                    for mask, symbols in (key_alts if k in bits and spec.max is None and not spec.some
                                          else _guarded(em, key_alts, spec.required, cap, k))]
            members = made[cap] = _by_mask(em, alts)
            if others:
                guarded = _guarded(em, others, spec.required, cap) if cap is not None else others
                for mask, rs in _by_mask(em, guarded, check=True).items():
                    members.setdefault((mask, 0), []).extend(rs)
        return members

    return rules


def _depths(kinds, step) -> dict:
    """The member-list states reachable from the empty list's, (0, 0, 0), each with the fewest
    members that reach it."""
    depth = {(0, 0, 0): 0}
    frontier = [(0, 0, 0)]
    while frontier:
        nxt = []
        for s in frontier:
            for kind in kinds:
                n = step(s, kind)
                if n not in depth:
                    depth[n] = depth[s] + 1
                    nxt.append(n)
        frontier = nxt
    return depth


def _distances(states: set, kinds, step, closing) -> dict:
    """The fewest members that take each member-list state to ``closing`` (every state reachable
    from the empty list's reaches it: masks only grow, counts stop at their caps)."""
    dist = {s: 0 if s == closing else len(states) for s in states}
    changed = True
    while changed:
        changed = False
        for s in states:
            for kind in kinds:
                d = dist[step(s, kind)] + 1
                if d < dist[s]:
                    dist[s], changed = d, True
    return dist


def _emit_any(em, spec, depth, named, others, most):
    b = em.b
    full = (1 << len(spec.some)) - 1
    rule = em.fresh("object")
    empty = not spec.required and spec.min == 0 and full == 0
    if empty:
        b.add_alternative(rule, em.empty_object())
    need, other_need = _close_counts(spec)
    bits = _required_bits(spec, named, others, need, other_need)
    rules = _member_rules(em, spec, named, others, need, bits)
    members = rules(most)

    def step(state, kind):   # a list's (mask, required members, other members) after one more member
        (m, q, o), (mask, req) = state, kind
        if bits:   # q: the required keys written, a bit each
            return m | mask, q | req, min(o + (not req), other_need)
        return m | mask, min(q + req, need), min(o + 1 - req, other_need)

    closing = (full, (1 << need) - 1 if bits else need, other_need)
    # (minProperties over more keys than there are was refused by emit_object: _most_members)
    if not members:
        if not empty:
            em.dead(rule)
        return rule
    # the states a list reaches, with the fewest members to each: only the member bounds of
    # `some` entries need them (elsewhere a closing list never reached shows in `lists` below)
    first = _depths(list(members), step) if most is not None and spec.some else None
    if first is not None and closing not in first and not empty:
        em.dead(rule)
        return rule
    links = _any_links(em, spec, depth, most, need, members, rules, step, first, closing, bool(bits))
    lists: dict = {}   # state -> rule of the non-empty member lists ending there
    todo = []
    add = b.add_alternative

    def extend(m, head: list) -> None:   # the lists one member longer than those in ``head``
        for kind, comma, alts in links(m):
            if not alts:
                continue
            n = step(m, kind)
            r = lists.get(n)
            if r is None:
                r = lists[n] = em.fresh("members")
                todo.append(n)
            head_comma = head + comma if head else head
            for symbols in alts:
                add(r, head_comma + symbols)

    extend((0, 0, 0), [])
    while todo:
        m = todo.pop()
        extend(m, [lists[m]])
    if closing in lists:
        b.add_alternative(rule, em.obj_open(depth) + [lists[closing]] + em.obj_close(depth))
    elif not empty:
        em.dead(rule)
        return rule
    if spec.required or spec.min > 0 or spec.max is not None:
        em.check(rule, CheckKind.object_keys, names=list(spec.required), min=spec.min,
                 max=-1 if spec.max is None else spec.max)
    return rule


def _required_bits(spec, named, others, need: int, other_need: int) -> dict:
    """A bit per required key where the member list can afford to hold which are written (at
    most MAX_KEYSET_LINKS links of list states to member kinds); else {} (it counts them)."""
    if need == 0:
        return {}
    kinds = need + sum(1 for _, req, alts in named if alts and not req) + len(others)
    if (1 << need) * (other_need + 1) * (1 << len(spec.some)) * kinds > MAX_KEYSET_LINKS:
        return {}
    return {k: 1 << i for i, k in enumerate(dict.fromkeys(spec.required))}


def _any_links(em, spec, depth, most, need, members, rules, step, first, closing, by_key: bool = False):
    """A function of a member-list state: (kind, comma, member rules) for each member that may
    follow it. The checks on a member bound the members by ``most`` beside the required keys
    not written yet; where ``some`` entries (a key a ``not`` demands) need members of their own,
    each member is bounded by the room the members it still needs take: a list state that is d
    members from closing is taken with c members only where c + d <= most, so that under
    maxProperties 1 a key that is none of those the object needs is refused as it would start
    (it was taken, and then neither '}' nor ',' could follow: a dead end)."""
    commas: dict = {}

    def comma(cap):
        if cap not in commas:
            commas[cap] = _separator(em, em.comma(depth), spec.required, cap)
        return commas[cap]

    def fresh(m, kind):   # a required key is written once where the list holds which are
        return not (by_key and kind[1] & m[1])

    def missing(q):   # required keys not written yet in a list state's count or key set
        return need - (q.bit_count() if by_key else q)

    if most is None or not spec.some:
        sep = comma(most)
        every = [(kind, sep, alts) for kind, alts in members.items()]
        if not by_key:
            return lambda m: every
        return lambda m: [link for link in every if not link[0][1] & m[1]]
    dist = _distances(set(first), list(members), step, closing)

    def links(m):
        out = []
        for kind in members:
            n = step(m, kind)
            if not fresh(m, kind) or first[m] + 1 + dist[n] > most:   # (first[m]: every list in m's count)
                continue
            # next_key: count + 1 + missing required <= cap; more_members: count + max(missing, 1) <= cap
            key_cap = most - (dist[n] - missing(n[1]))
            comma_cap = most - 1 - dist[n] + max(missing(m[1]), 1)
            out.append((kind, comma(comma_cap), rules(key_cap)[kind]))
        return out

    return links


def _emit_definition(em, spec, depth, named, others):
    b = em.b
    full = (1 << len(spec.some)) - 1
    named = [(k, req, _by_mask(em, alts)) for k, req, alts in named]
    extras = _group(_keyed(em, others))
    n = len(named)
    counted = spec.min > 1 or spec.max is not None
    cap = (spec.max if spec.max is not None else max(spec.min, 1)) if counted else 1
    # Member lists are states (property index, member count up to cap, mask); without counting
    # keywords every non-empty list has count 1, so only the properties and masks multiply.
    if (n + 1) * (full + 1) > MAX_OBJECT_STATES:
        raise Unsupported("properties", f"{n} properties (with {len(spec.some)} 'some member' constraints) need "
                                        f"more than {MAX_OBJECT_STATES} grammar states")
    if counted and (n + 1) * (cap + 1) * (full + 1) > MAX_OBJECT_STATES:
        raise Unsupported("maxProperties" if spec.max is not None else "minProperties",
                          f"counting up to {cap} members over {n} properties needs more than "
                          f"{MAX_OBJECT_STATES} grammar states")
    comma = em.comma(depth)
    chain: dict = {}   # (i, c, m) -> rule: non-empty member lists covering the properties before i

    def state(i, c, m):
        key = (i, min(c, cap), m)
        r = chain.get(key)
        if r is None:
            r = chain[key] = em.fresh("members")
        return r

    def can_add(c):
        return not counted or spec.max is None or c + 1 <= spec.max

    empty_ok = True   # "no member yet" is possible before property i
    reach = set()     # (member count, mask) of the non-empty lists before property i
    for i, (_k, req, rules) in enumerate(named):
        nxt = set()
        for c, m in sorted(reach):
            if can_add(c):
                for mask, alts in rules.items():
                    for symbols in alts:
                        b.add_alternative(state(i + 1, c + 1, m | mask), [state(i, c, m)] + comma + symbols)
                    nxt.add((min(c + 1, cap), m | mask))
            if not req:
                b.add_alternative(state(i + 1, c, m), [state(i, c, m)])
                nxt.add((c, m))
        if empty_ok and can_add(0):
            for mask, alts in rules.items():
                for symbols in alts:
                    b.add_alternative(state(i + 1, 1, mask), symbols)
                nxt.add((1, mask))
        if req:
            empty_ok = False
        reach = nxt
    if extras:   # the other keys, after the named properties
        if empty_ok and can_add(0):
            for mask, alts in extras.items():
                for symbols in alts:
                    b.add_alternative(state(n, 1, mask), symbols)
                reach.add((1, mask))
        todo = sorted(reach)
        while todo:
            c, m = todo.pop()
            if not can_add(c):
                continue
            for mask, alts in extras.items():
                nxt = (min(c + 1, cap), m | mask)
                for symbols in alts:
                    b.add_alternative(state(n, *nxt), [state(n, c, m)] + comma + symbols)
                if nxt not in reach:
                    reach.add(nxt)
                    todo.append(nxt)
    rule = em.fresh("object")
    alts = 0
    if empty_ok and spec.min == 0 and full == 0:
        b.add_alternative(rule, em.empty_object())
        alts += 1
    for c, m in sorted(reach):
        if m == full and (not counted or (c >= spec.min and (spec.max is None or c <= spec.max))):
            b.add_alternative(rule, em.obj_open(depth) + [state(n, c, m)] + em.obj_close(depth))
            alts += 1
    if not alts:
        em.dead(rule)
    return rule
