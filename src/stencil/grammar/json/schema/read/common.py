"""What every keyword reader shares: the keyword vocabulary (annotations, what is enforced, what
a draft lacks), where a keyword sits (:func:`where`, for error messages), the check of a schema
object's keyword values (:func:`check_values`, against :mod:`..core.keywords`' table) and the
error naming a keyword and its place (:func:`keyword_error`), count keywords, the ``pattern``
formula, and a Typed that constrains one JSON type only (``only_*``).
"""
from __future__ import annotations

import json

from stencil._core import GrammarError
from stencil.grammar.deadline import check_deadline
from stencil.grammar.json.schema.core.document import json_pointer
from stencil.grammar.json.schema.core.formulas import TRUE, Formula, Pattern, f_and, f_not
from stencil.grammar.json.schema.core.keywords import COUNT, COUNT_LIMIT, KEYWORD_VALUES
from stencil.grammar.json.schema.core.model import ANY_ARR, ANY_OBJ, BOTH_BOOLS, Typed
from stencil.grammar.json.schema.core.patterns import lift_lookaheads, pattern_node

__all__ = ["ANNOTATIONS", "KEYWORD_GROUPS", "UNDERSTOOD", "VALIDATION_VOCABULARY", "NEWER_THAN", "NOT_ENFORCEABLE", "where",
           "keyword_error", "check_values", "count", "pattern_formula", "only_num", "only_str", "only_arr",
           "only_obj"]

#: keywords that never change which instances are valid
ANNOTATIONS = frozenset("""
    $schema $id id $anchor $dynamicAnchor $recursiveAnchor $defs definitions $comment $vocabulary
    title description
    default examples example deprecated readOnly writeOnly contentMediaType contentEncoding
    contentSchema
""".split())

#: validation keywords this compiler enforces, by the reader of read/types.py that takes them: a
#: schema object without any keyword of a group skips its reader (most schema objects use two or
#: three keywords). UNDERSTOOD is their union, so a new keyword is read only once it has a group,
#: never accepted and then ignored for want of one. (``then``/``else`` mean something only beside
#: ``if``, ``minContains``/``maxContains`` only beside ``contains``, as the specification says.)
KEYWORD_GROUPS = {
    "type": frozenset(("type",)),
    "values": frozenset(("enum", "const")),
    "number": frozenset(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")),
    "string": frozenset(("minLength", "maxLength", "pattern", "format")),
    "array": frozenset(("prefixItems", "items", "additionalItems", "minItems", "maxItems", "uniqueItems",
                        "contains", "minContains", "maxContains")),
    "object": frozenset(("properties", "patternProperties", "additionalProperties", "required",
                         "propertyNames", "minProperties", "maxProperties", "dependentRequired",
                         "dependentSchemas", "dependencies")),
    "applicator": frozenset(("$ref", "allOf", "anyOf", "oneOf", "not", "if", "then", "else")),
    "unevaluated": frozenset(("unevaluatedItems", "unevaluatedProperties")),
}
UNDERSTOOD = frozenset().union(*KEYWORD_GROUPS.values())

#: the 2020-12 validation vocabulary (off under a metaschema whose $vocabulary leaves it out)
VALIDATION_VOCABULARY = frozenset("""
    type enum const multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength minLength
    pattern maxItems minItems uniqueItems maxContains minContains maxProperties minProperties
    required dependentRequired
""".split())

#: keywords a declared older draft does not have (unknown there, so ignored as the validators do)
NEWER_THAN = {
    4: frozenset("const contains propertyNames if then else dependentRequired dependentSchemas "
                 "unevaluatedItems unevaluatedProperties minContains maxContains prefixItems".split()),
    6: frozenset("if then else dependentRequired dependentSchemas unevaluatedItems unevaluatedProperties "
                 "minContains maxContains prefixItems".split()),
    7: frozenset("dependentRequired dependentSchemas unevaluatedItems unevaluatedProperties minContains "
                 "maxContains prefixItems".split()),
    2019: frozenset(["prefixItems"]),
}

#: keywords with a validation meaning that are not enforced (an error unless lenient)
NOT_ENFORCEABLE = {
    "$dynamicRef": "dynamic references (resolution depends on the evaluation path) are not supported",
    "$recursiveRef": "recursive references (resolution depends on the evaluation path) are not supported",
    "disallow": "draft-03 keyword, not supported",
    "extends": "draft-03 keyword, not supported",
    "divisibleBy": "draft-03 keyword, not supported",
}


def only_num(f) -> Typed:
    """Numbers constrained by ``f``, every other type unconstrained."""
    return Typed(True, BOTH_BOOLS, f, TRUE, (ANY_ARR,), (ANY_OBJ,))


def only_str(f) -> Typed:
    return Typed(True, BOTH_BOOLS, TRUE, f, (ANY_ARR,), (ANY_OBJ,))


def only_arr(specs) -> Typed:
    return Typed(True, BOTH_BOOLS, TRUE, TRUE, tuple(specs), (ANY_OBJ,))


def only_obj(specs) -> Typed:
    return Typed(True, BOTH_BOOLS, TRUE, TRUE, (ANY_ARR,), tuple(specs))


def where(loc, key: str) -> str:
    return f"{loc.pointer}/{key}" if loc.doc == "" else f"{loc.doc}#{loc.pointer}/{key}"


def keyword_error(keyword: str, pointer: str, reason: str) -> GrammarError:
    """``keyword at pointer: reason``, with both as attributes (``e.keyword``, ``e.pointer``)."""
    err = GrammarError(f"{keyword} at {pointer}: {reason}")
    # the core's exception class declares no attributes: the context rides on the instance
    err.keyword, err.pointer = keyword, pointer  # type: ignore[attr-defined]
    return err


def _show(v) -> str:
    """A value as JSON, clipped for a message."""
    try:
        text = json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):   # not JSON (a tuple of sets, NaN is fine): Python's spelling
        text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def check_values(loc, s: dict) -> None:
    """Raise :func:`keyword_error` for the first keyword of the schema object ``s`` (at ``loc``)
    whose value is not of the kind :data:`KEYWORD_VALUES` gives it, pointing at the item or member
    that is wrong in a list or map. The readers rely on it: they read values of the right kind."""
    for key, v in s.items():
        shape = KEYWORD_VALUES.get(key)
        if shape is None:
            continue
        if not shape.test(v):
            raise keyword_error(key, where(loc, key), f"must be {shape.what}, got {_show(v)}")
        if shape is COUNT and key.startswith("min") and v > COUNT_LIMIT:
            raise keyword_error(key, where(loc, key), f"{_show(v)} is more than any output can hold (at most "
                                f"{COUNT_LIMIT:,} characters, items or members are counted)")
        each = shape.each
        if each is None or not isinstance(v, shape.of):
            continue
        # (the usual map or list: every item passes, tested in one call; the loop below finds
        # the one that fails, and checks the deadline in long ones)
        if len(v) <= 1024 and all(map(each.test, v.values() if isinstance(v, dict) else v)):
            continue
        for i, (k, x) in enumerate(v.items() if isinstance(v, dict) else enumerate(v)):
            if i % 1024 == 1023:
                check_deadline()   # a map of 10,000 properties, a list of 100,000 values
            if not each.test(x):
                raise keyword_error(key, where(loc, key) + json_pointer([k]), f"must be {each.what}, got {_show(x)}")


def count(s, key):
    """The value of a count keyword (minLength, maxItems...), checked by :func:`check_values`;
    None (no bound) for a maximum above :data:`COUNT_LIMIT`, which no output reaches."""
    n = int(s[key])
    return None if n > COUNT_LIMIT and key.startswith("max") else n


def pattern_formula(pattern: str):
    """The string formula of a JSON Schema ``pattern``: ``Pattern(pattern)``, or, for lookaheads
    right after a leading ``^`` (``^(?!A)B``, ``^(?=A)B``, common in real schemas and beyond a
    regular expression front-end without lookarounds), the same language as plain patterns:
    "^B and not ^A" (``^A`` unanchored at its end means "starts with a match of A"). Other
    unsupported constructs raise the regex front-end's GrammarError."""
    try:
        pattern_node(pattern)
        return Pattern(pattern)
    except GrammarError as err:
        lifted = lift_lookaheads(pattern)
        if lifted is None:
            raise
        f: Formula = Pattern(lifted[0])
        for negative, inner in lifted[1]:
            g = Pattern("^(?:" + inner + ")")
            try:
                pattern_node(g.pattern)
                pattern_node(lifted[0])
            except GrammarError:
                raise err from None
            f = f_and(f, f_not(g) if negative else g)
        return f
