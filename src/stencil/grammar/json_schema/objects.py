"""Objects: reading ``properties``/``patternProperties``/``additionalProperties``/``required``/
``propertyNames``/``minProperties``/``maxProperties``/``dependentRequired``/``dependentSchemas``/
``dependencies`` into :class:`~.model.ObjSpec` unions, and the grammar of an ObjSpec.

Keys outside ``properties`` are split into classes by which ``patternProperties`` (and the
``additionalProperties`` rule, "matches no pattern") they match; each class is one key lexeme (a
string regex that also excludes the named properties) with the conjunction of the matching
schemas as its value.

Two member orders:

- ``property_order="definition"`` (default): named properties in ``properties`` order (then
  required names that only the other keywords describe), each optional one skippable, then the
  other keys. The member list is a left-nested chain of rules whose state is (next property,
  number of members), so ``minProperties``/``maxProperties`` are counted by the grammar itself.
- ``property_order="any"``: members in any order. The core's checks make it exact: ``unique_key``
  vetoes a repeated key, ``object_keys`` vetoes an object that lacks a required key or has a
  member count outside [minProperties, maxProperties].

Example::

    rule = emit_object(emitter, ObjSpec(props=(("a", frozenset()),), required=("a",)), depth=0)
"""
from __future__ import annotations

from itertools import product

from stencil._core import GrammarError
from stencil.grammar.json_schema.formulas import FALSE, TRUE, f_and, f_not, f_or, str_consts, str_eval
from stencil.grammar.json_schema.model import (ANY, FALSE_SUB, TRUE_SUB, ObjSpec, Unsupported,
                                               normalize_obj, rules_sub, sub_and)

__all__ = ["read", "emit_object", "MAX_KEY_RULES", "MAX_OBJECT_STATES"]

#: most patternProperties/additionalProperties rules with a schema on one object
MAX_KEY_RULES = 6
#: most (property, count) states of one object's member chain
MAX_OBJECT_STATES = 20_000


def read(ctx, loc, s, exact: bool = False):
    """The object conjuncts of a schema object (ANY when it has no object keyword)."""
    from stencil.grammar.json_schema.keywords import _count, _where, only_obj
    keys = ("properties", "patternProperties", "additionalProperties", "required", "propertyNames",
            "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies")
    if not any(k in s for k in keys):
        return ANY
    alg = ctx.alg
    props = []
    evaluated = FALSE
    if "properties" in s:
        ps = s["properties"]
        if not isinstance(ps, dict):
            raise GrammarError(f"properties at {_where(loc, 'properties')}: must be an object")
        for name, sch in ps.items():
            props.append((name, ctx.sub(loc, sch, "properties", name)))
        if ps:
            evaluated = f_or(*[("const", k) for k in ps])
    rules = []
    pats = []
    if "patternProperties" in s:
        pp = s["patternProperties"]
        if not isinstance(pp, dict):
            raise GrammarError(f"patternProperties at {_where(loc, 'patternProperties')}: must be an object")
        from stencil.grammar.json_schema.strings import pattern_node
        for pat, sch in pp.items():
            try:
                pattern_node(pat)
            except GrammarError as e:
                ctx.unsupported("patternProperties", _where(loc, "patternProperties"), str(e))
                continue
            pats.append(("pat", pat))
            rules.append((("pat", pat), ctx.sub(loc, sch, "patternProperties", pat)))
        evaluated = f_or(evaluated, *pats)
        # unlike additionalProperties, a pattern also applies to the named properties it matches
        from stencil.grammar.json_schema.formulas import str_eval
        props = [(k, sub_and(ps, *[rs for pred, rs in rules if str_eval(pred, k)]) if rules else ps)
                 for k, ps in props]
    if "additionalProperties" in s:
        rules.append((f_not(f_or(*pats)), ctx.sub(loc, s["additionalProperties"], "additionalProperties")))
        evaluated = TRUE
    required: tuple = ()
    if "required" in s:
        req = s["required"]
        if isinstance(req, bool):  # draft 3 style, as seen in the wild: a per-property flag
            ctx.unknown.setdefault("required (boolean)", _where(loc, "required"))
        elif not isinstance(req, list) or not all(isinstance(k, str) for k in req):
            raise GrammarError(f"required at {_where(loc, 'required')}: must be a list of strings")
        else:
            required = tuple(dict.fromkeys(req))
    names = TRUE
    if "propertyNames" in s:
        names = ctx.sub_typed(ctx.sub(loc, s["propertyNames"], "propertyNames")).str
    lo = _count(loc, s, "minProperties") if "minProperties" in s else 0
    hi = _count(loc, s, "maxProperties") if "maxProperties" in s else None
    spec = normalize_obj(ObjSpec(tuple(props), required, tuple(rules), names, lo, hi, evaluated))
    t = only_obj([spec] if spec is not None else [])
    # dependencies: "if key k is present then ..." is a union of two object specs
    deps = []
    for key in ("dependentRequired", "dependentSchemas", "dependencies"):
        d = s.get(key)
        if d is None:
            continue
        if not isinstance(d, dict):
            raise GrammarError(f"{key} at {_where(loc, key)}: must be an object")
        for k, v in d.items():
            deps.append((key, k, v))
    for key, k, v in deps:
        absent = ObjSpec(props=((k, FALSE_SUB),))
        if isinstance(v, list):
            if key == "dependentSchemas" or not all(isinstance(x, str) for x in v):
                raise GrammarError(f"{key} at {_where(loc, key)}/{k}: must be a list of property names")
            present = [ObjSpec(required=tuple(dict.fromkeys([k] + v)))]
        else:
            if key == "dependentRequired":
                raise GrammarError(f"{key} at {_where(loc, key)}/{k}: must be a list of property names")
            dep = ctx.loc_typed(ctx.resolver.child(loc, v, key, k), exact)
            present = [x for o in dep.obj if (x := alg.obj_and(ObjSpec(required=(k,)), o)) is not None]
        t = alg.t_and(t, only_obj([absent] + present))
    return t


# --- emission --------------------------------------------------------------------------------------

def _key_classes(em, spec: ObjSpec, excluded: list) -> list:
    """(key body expression, value Sub) for keys outside the named properties."""
    forbidden = FALSE
    live = []
    for pred, sub in spec.rules:
        if sub == FALSE_SUB:
            forbidden = f_or(forbidden, pred)
        elif sub != TRUE_SUB:
            live.append((pred, sub))
    base = f_and(spec.names, f_not(forbidden))
    if base == FALSE:
        return []
    if len(live) > MAX_KEY_RULES:
        raise Unsupported("patternProperties", f"more than {MAX_KEY_RULES} key patterns with schemas on one object")
    out = []
    for picks in product((True, False), repeat=len(live)):
        f = base
        sub = TRUE_SUB
        for (pred, psub), take in zip(live, picks):
            f = f_and(f, pred if take else f_not(pred))
            if take:
                sub = sub_and(sub, psub)
        if f == FALSE or sub == FALSE_SUB:
            continue
        consts = str_consts(f)
        if consts is not None:   # a finite set of keys (e.g. from unevaluatedProperties)
            keys = sorted(consts - set(excluded))
            if keys:
                out.append((em.b.re_or([em.strings.text(k) for k in keys]), sub))
            continue
        # only the named properties this class would match need excluding
        names = [k for k in excluded if str_eval(f, k)]
        if not names:
            body = em.scalars.string_body(f)
        elif f == TRUE:
            body = em.strings.not_texts(names)
        else:
            body = em.b.re_and([em.scalars.string_body(f), em.strings.not_texts(names)])
        out.append((body, sub))
    return out


def _members(em, spec: ObjSpec, depth: int):
    """Named members [(name, required, symbols)] and key-class members [symbols]."""
    names = [k for k, _ in spec.props]
    props = list(spec.props) + [(k, rules_sub(spec, k)) for k in spec.required if k not in names]
    colon = em.colon()
    named = [(k, k in spec.required, [em.key_literal(k)] + colon + [em.value(sub, depth + 1)])
             for k, sub in props if sub != FALSE_SUB]
    classes = []
    for body, sub in _key_classes(em, spec, [k for k, _ in props]):
        key = em.b.lexeme(em.strings.quoted(body), "key")
        classes.append([key] + colon + [em.value(sub, depth + 1)])
    return named, classes


def emit_object(em, spec: ObjSpec, depth: int):
    """A rule for the objects of ``spec``."""
    named, classes = _members(em, spec, depth)
    if em.options.property_order == "any":
        return _emit_any(em, spec, depth, named, classes)
    return _emit_definition(em, spec, depth, named, classes)


def _emit_any(em, spec, depth, named, classes):
    b = em.b
    rule = em.fresh("object")
    if not spec.required and spec.min == 0:
        b.add_alternative(rule, em.empty_object())
    if not named and not classes:
        return rule
    member = em.fresh("member")
    for _, _, alt in named:
        b.add_alternative(member, alt)
    for alt in classes:
        b.add_alternative(member, alt)
    em.check(member, "unique_key")
    lst = em.fresh("members")
    b.add_alternative(lst, [member])
    b.add_alternative(lst, [lst] + em.comma(depth) + [member])
    b.add_alternative(rule, em.obj_open(depth) + [lst] + em.obj_close(depth))
    if spec.required or spec.min > 0 or spec.max is not None:
        em.check(rule, "object_keys", names=list(spec.required), min=spec.min,
                 max=-1 if spec.max is None else spec.max)
    return rule


def _emit_definition(em, spec, depth, named, classes):
    b = em.b
    wrapped = []
    for k, req, alt in named:   # a rule per member: the chain mentions each one several times
        m = em.fresh("member")
        b.add_alternative(m, alt)
        wrapped.append((k, req, m))
    named = wrapped
    n = len(named)
    cap = spec.max if spec.max is not None else max(spec.min, 1)
    counted = spec.min > 1 or spec.max is not None
    if not counted:
        cap = 1
    if (n + 1) * (cap + 1) > MAX_OBJECT_STATES:
        raise Unsupported("maxProperties", f"the object needs more than {MAX_OBJECT_STATES} counting states")
    extras = None
    if classes:
        extras = em.fresh("member")
        for alt in classes:
            b.add_alternative(extras, alt)
        em.check(extras, "unique_key")
    comma = em.comma(depth)
    chain: dict = {}   # (i, c) -> rule: non-empty member lists covering properties before i

    def state(i, c):
        c = min(c, cap)
        r = chain.get((i, c))
        if r is None:
            r = chain[(i, c)] = em.fresh("members")
        return r

    def can_add(c):
        return not counted or spec.max is None or c + 1 <= spec.max

    empty_ok = True   # "no member yet" is possible before property i
    reach = set()     # member counts of the non-empty lists before property i
    for i, (k, req, m) in enumerate(named):
        nxt = set()
        for c in sorted(reach):
            if can_add(c):
                b.add_alternative(state(i + 1, c + 1), [state(i, c)] + comma + [m])
                nxt.add(min(c + 1, cap))
            if not req:
                b.add_alternative(state(i + 1, c), [state(i, c)])
                nxt.add(c)
        if empty_ok and can_add(0):
            b.add_alternative(state(i + 1, 1), [m])
            nxt.add(1)
        if req:
            empty_ok = False
        reach = nxt
    # other keys after the named properties
    if extras is not None:
        if empty_ok and can_add(0):
            b.add_alternative(state(n, 1), [extras])
            reach.add(1)
        todo = sorted(reach)
        while todo:
            c = todo.pop()
            if not can_add(c):
                continue
            c2 = min(c + 1, cap)
            b.add_alternative(state(n, c2), [state(n, c)] + comma + [extras])
            if c2 not in reach:
                reach.add(c2)
                todo.append(c2)
    rule = em.fresh("object")
    if empty_ok and spec.min == 0:
        b.add_alternative(rule, em.empty_object())
    for c in sorted(reach):
        if not counted or (c >= spec.min and (spec.max is None or c <= spec.max)):
            b.add_alternative(rule, em.obj_open(depth) + [state(n, c)] + em.obj_close(depth))
    return rule
