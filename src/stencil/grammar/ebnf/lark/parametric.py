"""llguidance's parametric rules (its docs/parametric.md), expanded into ordinary rules.

A rule declared ``name::_`` takes one unsigned 64-bit parameter. A reference ``name::ARG`` passes
it a value: a constant (``perm::0x0``, ``perm::5``), the caller's own (``perm::_``) or the
caller's changed by ``set_bit(k)``, ``clear_bit(k)``, ``bit_and(v)``, ``bit_or(v)``,
``incr([x:y])`` or ``decr([x:y])`` (saturating on the bits x..y-1; ``_`` stands for all 64). An
alternative followed by ``%if COND`` exists only for the parameter values where COND holds:
``true``, ``bit_set(k)``, ``bit_clear(k)``, ``is_ones(R)``, ``is_zeros(R)``, ``eq``/``ne``/``lt``/
``le``/``gt``/``ge(R, v)``, ``bit_count_eq``/``_ne``/``_lt``/``_le``/``_gt``/``_ge(R, k)``,
``and(c, c)``, ``or(c, c)``, ``not(c)``, where R is ``[x:y]`` or ``_``.

Expansion starts from the constant references in ordinary rules and builds one ordinary rule
``name::0x..`` per value reached, so only reachable instances exist; more than
``MAX_INSTANCES`` is an error naming the rule (a permutation of n items has 2^n states). An
instance that can never complete (all its alternatives ruled out by ``%if``) is dropped with
the alternatives that need it: llguidance's lazy expansion never matches them either.

Example::

    start   : perm::0x0
    perm::_ : ""                    %if is_ones([0:3])
            | "a" perm::set_bit(0)  %if bit_clear(0)
            | "b" perm::set_bit(1)  %if bit_clear(1)
            | "c" perm::set_bit(2)  %if bit_clear(2)
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional

from stencil.grammar.deadline import check_deadline
from stencil.grammar.ebnf.ast import Alt, And, Node, Not, Ref, Rep, RuleDef, Seq, refs_of, walk

__all__ = ["ParamCall", "Guarded", "parse_call", "parse_guard", "expand_parametric", "MAX_INSTANCES",
           "MAX_EXPANDED_NODES"]

# What the instances of all parametric rules of one grammar may add together, in AST nodes (a
# permutation of 12 items, 2^12 instances of 12 alternatives, is about that; its compile takes
# seconds), and in instances (a counter's chain of small instances).
MAX_EXPANDED_NODES = 250_000
MAX_INSTANCES = 1 << 15
_U64 = (1 << 64) - 1


@dataclass(frozen=True)
class ParamFn:
    """A parameter argument or condition: its text as written, its value as a function of the
    caller's parameter (None: the caller has none, which only a function that does not read it
    is given), and whether it reads that parameter at all."""
    text: str
    fn: Callable[[Optional[int]], Any]
    reads: bool


@dataclass(eq=False)
class ParamCall(Node):
    """``name::ARG``: a reference to a parametric rule."""
    name: str
    arg: ParamFn


@dataclass(eq=False)
class Guarded(Node):
    """``item %if cond``: an alternative of a parametric rule, there only where cond holds."""
    item: Node
    cond: ParamFn


def _field(p: int, bits: tuple) -> int:
    lo, hi = bits
    return (p >> lo) & ((1 << (hi - lo)) - 1)


def _ones(bits: tuple) -> int:
    return (1 << (bits[1] - bits[0])) - 1


def _incr(bits: tuple) -> Callable[[int], int]:
    return lambda p: p if _field(p, bits) == _ones(bits) else p + (1 << bits[0])


def _decr(bits: tuple) -> Callable[[int], int]:
    return lambda p: p if _field(p, bits) == 0 else p - (1 << bits[0])


def _compare(op) -> Callable:
    return lambda bits, v: lambda p: op(_field(p, bits), v)


def _count(op) -> Callable:
    return lambda bits, k: lambda p: op(bin(_field(p, bits)).count("1"), k)


# name -> (argument kinds, maker of the function of the parameter)
_ARGS = {
    "set_bit": (("bit",), lambda k: lambda p: p | (1 << k)),
    "clear_bit": (("bit",), lambda k: lambda p: p & ~(1 << k) & _U64),
    "bit_and": (("value",), lambda v: lambda p: p & v),
    "bit_or": (("value",), lambda v: lambda p: p | v),
    "incr": (("bits",), _incr),
    "decr": (("bits",), _decr),
}
_COMPARISONS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
                "gt": operator.gt, "ge": operator.ge}
_CONDS = {
    "true": ((), lambda: lambda p: True),
    "bit_clear": (("bit",), lambda k: lambda p: not (p >> k) & 1),
    "bit_set": (("bit",), lambda k: lambda p: bool((p >> k) & 1)),
    "is_ones": (("bits",), lambda bits: lambda p: _field(p, bits) == _ones(bits)),
    "is_zeros": (("bits",), lambda bits: lambda p: _field(p, bits) == 0),
    **{name: (("bits", "value"), _compare(op)) for name, op in _COMPARISONS.items()},
    **{f"bit_count_{name}": (("bits", "bit"), _count(op)) for name, op in _COMPARISONS.items()},
    "and": (("cond", "cond"), lambda a, b: lambda p: a(p) and b(p)),
    "or": (("cond", "cond"), lambda a, b: lambda p: a(p) or b(p)),
    "not": (("cond",), lambda a: lambda p: not a(p)),
}
_SHOWN = {"bit": "k", "bits": "[x:y]", "value": "v", "cond": "condition"}


# --- parsing (``p`` is the Lark parser: tok, next, expect, err, src) ----------------------------

def _number(p, what: str, limit: int) -> int:
    t = p.tok
    if t.kind not in ("NUMBER", "HEX"):
        found = "the end of the line" if t.kind == "NL" else repr(t.text)
        raise p.err(f"expected {what} (a number), found {found}")
    p.next()
    v = int(t.text, 16) if t.kind == "HEX" else int(t.text)
    if v > limit:
        raise p.err(f"{what} {t.text} is too large (at most {limit})", t.pos)
    return v


def _bits(p) -> tuple:
    """``[x:y]`` (bits x to y-1) or ``_`` (all 64 bits)."""
    t = p.tok
    if t.kind == "_":
        p.next()
        return 0, 64
    p.expect("[", "a bit range [x:y] or '_' (all 64 bits)")
    lo = _number(p, "the first bit", 63)
    p.expect(":", "':' in the bit range [x:y]")
    hi = _number(p, "the end bit", 64)
    p.expect("]", "']' closing the bit range")
    if hi <= lo:
        raise p.err(f"the bit range [{lo}:{hi}] is empty: its end must be above its start", t.pos)
    return lo, hi


def _call(p, table: dict, what: str) -> ParamFn:
    """``name(args)`` from ``table``; conditions read the parameter unless they are ``true`` or
    made only of ``true``."""
    t = p.tok
    if t.kind != "RULE" or t.text not in table:
        found = "the end of the line" if t.kind == "NL" else repr(t.text)
        raise p.err(f"expected {what}, found {found} (known: {', '.join(table)})")
    p.next()
    kinds, make = table[t.text]
    shown = f"{t.text}({', '.join(_SHOWN[k] for k in kinds)})"
    if not kinds and p.tok.kind != "(":   # `true` without parentheses
        return ParamFn(t.text, make(), False)
    p.expect("(", f"'(' after {t.text}: {shown}")
    args: list = []   # conditions (functions), bit ranges and numbers, in the table's order
    reads = bool(kinds) and "cond" not in kinds
    for i, kind in enumerate(kinds):
        if i:
            _separator(p, ",", shown, len(kinds), t.pos)
        if kind == "cond":
            c = _call(p, _CONDS, "a condition")
            reads = reads or c.reads
            args.append(c.fn)
        else:
            args.append(_bits(p) if kind == "bits" else _number(p, "a bit index" if kind == "bit" else "a value",
                                                                63 if kind == "bit" else _U64))
    _separator(p, ")", shown, len(kinds), t.pos)
    return ParamFn(_text(p, t.pos), make(*args), reads)


def _separator(p, kind: str, shown: str, n: int, at: int) -> None:
    if p.tok.kind in (",", ")") and p.tok.kind != kind:
        raise p.err(f"{shown} takes {n} argument{'s' if n != 1 else ''}", at)
    p.expect(kind, f"'{kind}' in {shown}")


def _text(p, start: int) -> str:
    last = p.toks[p.k - 1]
    return p.src.text[start:last.pos + len(last.text)]


def parse_call(p, name) -> ParamCall:
    """``name::ARG`` (the parser is on ``::`` after the name token ``name``)."""
    p.next()
    if name.kind != "RULE":
        raise p.err(f"terminal {name.text} cannot take a parameter: only rules can (name::_)", name.pos)
    t = p.tok
    if t.kind in ("NUMBER", "HEX"):
        v = _number(p, "a parameter value", _U64)
        arg = ParamFn(t.text, lambda _: v, False)
    elif t.kind == "_":
        p.next()
        arg = ParamFn("_", lambda q: q, True)
    else:
        arg = _call(p, _ARGS, "a parameter value, '_' or an operation")
    return ParamCall(name.text, arg, pos=name.pos)


def parse_guard(p, node: Node) -> Guarded:
    """``%if COND`` after an alternative (the parser is on ``%if``)."""
    pos = p.next().pos
    return Guarded(node, _call(p, _CONDS, "a condition after %if"), pos=pos)


# --- expansion ----------------------------------------------------------------------------------

class _Dead(Node):
    """What an alternative becomes where its ``%if`` fails or a rule it needs never completes."""


_DEAD = _Dead()


def _rebuild(node: Node, leaf: Callable[[Node], Optional[Node]]) -> Node:
    """A copy of ``node`` with ``leaf``'s replacements (None: keep looking inside); a dead
    sequence item kills the sequence, a dead alternative leaves its choice."""
    r = leaf(node)
    if r is not None:
        return r
    if isinstance(node, Seq):
        items = [_rebuild(k, leaf) for k in node.items]
        return _DEAD if any(k is _DEAD for k in items) else Seq(items, pos=node.pos)
    if isinstance(node, Alt):
        items = [k for k in (_rebuild(k, leaf) for k in node.items) if k is not _DEAD]
        return (Alt(items, pos=node.pos) if len(items) > 1 else items[0]) if items else _DEAD
    if isinstance(node, Rep):
        item = _rebuild(node.item, leaf)
        if item is _DEAD:
            return Seq([], pos=node.pos) if node.min == 0 else _DEAD
        return Rep(item, node.min, node.max, pos=node.pos)
    return node


class _Expander:
    def __init__(self, syn):
        self.syn, self.src = syn, syn.source
        self.templates: dict = syn.parametric
        self.instances: dict[tuple, str] = {}
        self.queue: list[tuple] = []
        self.size = {name: sum(1 for _ in _walk_all(syn.rules[name].body)) for name in self.templates}
        self.spent = 0   # nodes of the instances made

    def run(self) -> dict:
        out: dict[str, RuleDef] = {}
        for name, rd in self.syn.rules.items():
            _check_operands(self.src, rd.body)
            if name in self.templates:
                self.check_template(rd)
            else:
                out[name] = replace(rd, body=self.substitute(rd.body, None, name))
        made: dict[str, RuleDef] = {}
        while self.queue:
            if not len(made) & 255:
                check_deadline()
            name, value, inst = self.queue.pop()
            rd = self.syn.rules[name]
            made[inst] = replace(rd, name=inst, body=self.substitute(rd.body, value, name))
        return _prune(out, made)

    def check_template(self, rd: RuleDef) -> None:
        if rd.lazy or rd.stop is not None or rd.max_chars is not None or rd.max_tokens:
            raise self.src.error(f"the parametric rule '{rd.name}' cannot be lazy or have stop=, suffix=, "
                                 "max_chars= or max_tokens=", rd.pos)
        if not any(isinstance(n, (ParamCall, Guarded)) and (n.arg if isinstance(n, ParamCall) else n.cond).reads
                   for n in _walk_all(rd.body)):
            raise self.src.error(f"rule '{rd.name}::_' takes a parameter but never reads it (no %if condition "
                                 "and no reference such as name::_ or name::set_bit(0) passing it on)", rd.pos)

    def substitute(self, body: Node, p: Optional[int], owner: str) -> Node:
        """``body`` for parameter ``p`` (None in an ordinary rule): conditions decided, calls
        made references to instances."""
        def leaf(node: Node) -> Optional[Node]:
            if isinstance(node, ParamCall):
                return self.call(node, p, owner)
            if isinstance(node, Guarded):
                if p is None:
                    raise self.src.error(f"%if goes only in a parametric rule (declared {owner}::_), and "
                                         f"'{owner}' takes no parameter", node.pos)
                return _rebuild(node.item, leaf) if node.cond.fn(p) else _DEAD
            if isinstance(node, Ref) and node.name in self.templates:
                raise self.src.error(f"rule '{node.name}' takes a parameter: write {node.name}::VALUE, e.g. "
                                     f"{node.name}::0", node.pos)
            return None
        return _rebuild(body, leaf)

    def call(self, node: ParamCall, p: Optional[int], owner: str) -> Ref:
        if node.name not in self.syn.rules:
            raise self.src.error(f"rule '{node.name}' is used but never defined", node.pos)
        if node.name not in self.templates:
            raise self.src.error(f"rule '{node.name}' takes no parameter (declare it as {node.name}::_ to "
                                 "give it one)", node.pos)
        if p is None and node.arg.reads:
            raise self.src.error(f"{node.name}::{node.arg.text} reads the parameter, but '{owner}' has none: "
                                 f"pass a constant such as {node.name}::0", node.pos)
        value = node.arg.fn(p)
        key = (node.name, value)
        inst = self.instances.get(key)
        if inst is None:
            self.spent += self.size[node.name]
            if len(self.instances) >= MAX_INSTANCES or self.spent > MAX_EXPANDED_NODES:
                raise self.src.error(
                    f"the parametric rule '{node.name}' reaches over {len(self.instances)} parameter values "
                    f"(with the other parametric rules; the limits are {MAX_INSTANCES} instances and "
                    f"{MAX_EXPANDED_NODES} grammar nodes in all); a permutation or selection of n items has 2^n "
                    "values: use fewer items", self.templates[node.name])
            inst = self.instances[key] = f"{node.name}::{value:#x}"
            self.queue.append((node.name, value, inst))
        return Ref(inst, pos=node.pos)


def _check_operands(src, body: Node) -> None:
    for node in _walk_all(body):
        if isinstance(node, (And, Not)):
            bad = next((n for n in _walk_all(node) if isinstance(n, (ParamCall, Guarded))), None)
            if bad is not None:
                raise src.error("'&' and '~' take terminals, not parametric rules or %if", bad.pos)


def _walk_all(node: Node):
    """``walk``, also inside ``%if`` alternatives."""
    stack = [node]
    while stack:
        for n in walk(stack.pop()):
            yield n
            if isinstance(n, Guarded):
                stack.append(n.item)


def _prune(rules: dict, made: dict) -> dict:
    """``rules`` and the instances of ``made`` that can complete; an instance whose every
    alternative was ruled out by ``%if`` is dead, and so is one whose every alternative needs a
    dead one. References to dead instances are dropped with their alternatives (an ordinary rule
    left with nothing keeps an empty choice, so that the usual checks report it). Other rules
    that can never complete (cycles with no exit) are left for those checks too."""
    dead = {name for name, rd in made.items() if rd.body is _DEAD}
    if not dead:
        return {**rules, **made}
    users: dict[str, set] = {}
    for table in (rules, made):
        for name, rd in table.items():
            for r in refs_of(rd.body) if rd.body is not _DEAD else ():
                if r.name in made:
                    users.setdefault(r.name, set()).add(name)

    def leaf(node: Node) -> Optional[Node]:
        return _DEAD if isinstance(node, Ref) and node.name in dead else None
    work = list(dead)
    while work:
        for u in users.get(work.pop(), ()):
            if u in made and u not in dead and _rebuild(made[u].body, leaf) is _DEAD:
                dead.add(u)
                work.append(u)
    touched = set().union(*(users.get(d, ()) for d in dead))
    out = {}
    for table in (rules, made):
        for name, rd in table.items():
            if name in dead:
                continue
            if name in touched:
                body = _rebuild(rd.body, leaf)
                rd = replace(rd, body=Alt([], pos=rd.pos) if body is _DEAD else body)
            out[name] = rd
    return out


def expand_parametric(syn) -> tuple[dict, set]:
    """The rules of ``syn`` (a ``LarkSyntax``) with parametric rules replaced by their reachable
    instances, ordinary rules first; and the names of the parametric rules given some value."""
    x = _Expander(syn)
    return x.run(), {name for name, _ in x.instances}
