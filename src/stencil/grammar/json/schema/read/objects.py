"""Objects: reading ``properties``/``patternProperties``/``additionalProperties``/``required``/
``propertyNames``/``minProperties``/``maxProperties``/``dependentRequired``/``dependentSchemas``/
``dependencies`` into :class:`~..core.model.ObjSpec` unions (their grammar: :mod:`..emit.objects`).
"""
from __future__ import annotations

from stencil._core import GrammarError
from stencil.grammar.json.schema.core.formulas import FALSE, TRUE, Const, Formula, f_not, f_or, str_eval
from stencil.grammar.json.schema.core.model import ANY, FALSE_SUB, ObjSpec, normalize_obj, sub_and
from stencil.grammar.json.schema.read.common import KEYWORD_GROUPS, count, only_obj, pattern_formula, where

__all__ = ["read"]

_KEYS = KEYWORD_GROUPS["object"]


def read(ctx, loc, s, exact: bool = False):
    """The object conjuncts of a schema object (ANY when it has no object keyword)."""
    if _KEYS.isdisjoint(s):
        return ANY
    alg = ctx.alg
    props = []
    evaluated: Formula = FALSE
    if "properties" in s:
        ps = s["properties"]
        for name, sch in ps.items():
            props.append((name, ctx.sub(loc, sch, "properties", name)))
        if ps:
            evaluated = f_or(*[Const(k) for k in ps])
    rules = []
    pats = []
    if "patternProperties" in s:
        pp = s["patternProperties"]
        for pat, sch in pp.items():
            try:
                pred = pattern_formula(pat)
            except GrammarError as e:
                ctx.unsupported("patternProperties", where(loc, "patternProperties"), str(e))
                continue
            pats.append(pred)
            rules.append((pred, ctx.sub(loc, sch, "patternProperties", pat)))
        evaluated = f_or(evaluated, *pats)
        # unlike additionalProperties, a pattern also applies to the named properties it matches
        props = [(k, sub_and(ps, *[rs for pred, rs in rules if str_eval(pred, k)]) if rules else ps)
                 for k, ps in props]
    if "additionalProperties" in s:
        rules.append((f_not(f_or(*pats)), ctx.sub(loc, s["additionalProperties"], "additionalProperties")))
        evaluated = TRUE
    required: tuple = ()
    if "required" in s:
        req = s["required"]
        if isinstance(req, bool):  # draft 3 style, as seen in the wild: a per-property flag
            ctx.unknown.setdefault("required (boolean)", where(loc, "required"))
        else:
            required = tuple(dict.fromkeys(req))
    names = TRUE
    if "propertyNames" in s:
        names = ctx.sub_typed(ctx.sub(loc, s["propertyNames"], "propertyNames")).str
    lo = count(s, "minProperties") if "minProperties" in s else 0
    hi = count(s, "maxProperties") if "maxProperties" in s else None
    spec = normalize_obj(ObjSpec(tuple(props), required, tuple(rules), names, lo, hi, evaluated))
    t = only_obj([spec] if spec is not None else [])
    # dependencies: "if key k is present then ..." is a union of two object specs
    deps = []
    for key in ("dependentRequired", "dependentSchemas", "dependencies"):
        for k, v in s.get(key, {}).items():
            deps.append((key, k, v))
    for key, k, v in deps:
        absent = ObjSpec(props=((k, FALSE_SUB),))
        if isinstance(v, list):   # a list of property names (check_values)
            present = [ObjSpec(required=tuple(dict.fromkeys([k] + v)))]
        else:
            dep = ctx.loc_typed(ctx.resolver.child(loc, v, key, k), exact)
            present = [x for o in dep.obj if (x := alg.obj_and(ObjSpec(required=(k,)), o)) is not None]
        t = alg.t_and(t, only_obj([absent] + present))
    return t
