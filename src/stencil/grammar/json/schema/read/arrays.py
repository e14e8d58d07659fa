"""Arrays: reading ``prefixItems``/``items``/``additionalItems``/``minItems``/``maxItems``/
``contains``/``minContains``/``maxContains``/``uniqueItems`` into an
:class:`~..core.model.ArrSpec` (its grammar: :mod:`..emit.arrays`).
"""
from __future__ import annotations

from stencil.grammar.json.schema.core.model import ANY, TRUE_SUB, ArrSpec, normalize_arr
from stencil.grammar.json.schema.read.common import KEYWORD_GROUPS, count, only_arr

__all__ = ["read"]

_ALL = 1 << 40   # eval_upto when every item is evaluated
#: the array keywords but minContains/maxContains (nothing without contains)
_KEYS = KEYWORD_GROUPS["array"] - {"minContains", "maxContains"}


def read(ctx, loc, s):
    """The array conjunct of a schema object (ANY when it has no array keyword)."""
    if _KEYS.isdisjoint(s):
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
            prefix = tuple(ctx.sub(loc, x, "prefixItems", i) for i, x in enumerate(s["prefixItems"]))
            eval_upto = len(prefix)
        if items is not None:
            rest = ctx.sub(loc, items, "items")
            eval_upto = _ALL
    lo = count(s, "minItems") if "minItems" in s else 0
    hi = count(s, "maxItems") if "maxItems" in s else None
    unique = s.get("uniqueItems") is True
    contains: tuple = ()
    eval_contains: tuple = ()
    if "contains" in s:
        c = ctx.sub(loc, s["contains"], "contains")
        cmin = count(s, "minContains") if ("minContains" in s and loc.draft >= 2019) else 1
        cmax = count(s, "maxContains") if ("maxContains" in s and loc.draft >= 2019) else None
        contains = ((c, cmin, cmax, 0),)
        eval_contains = (c,)
    spec = normalize_arr(ArrSpec(prefix, rest, lo, hi, contains, unique, eval_upto, eval_contains))
    return only_arr([spec] if spec is not None else [])
