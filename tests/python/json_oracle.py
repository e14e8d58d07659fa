"""Whether bytes are a JSON text that stencil's JSON Schema options promise to accept, judged by
``json``, ``jsonschema`` and the code below, which imports nothing of stencil (issue 40, T2/T3).

``Oracle(schema, whitespace=..., property_order=..., plain_strings=..., max_run=...)`` is called on
bytes and says yes when all of these hold:

- UTF-8, and ``json.loads`` reads it with numbers as ``Decimal``, no NaN or Infinity, no repeated key;
- the layout outside strings is the one of the ``whitespace`` option (``core/options.py``):
  ``"compact"``, no white space at all; ``"flexible"``, runs of at most ``max_run`` characters of
  `` \\t\\n\\r`` between two tokens, none before or after the value; an int n, exactly the layout of
  ``json.dumps(value, indent=n)``: a newline and n spaces a level after ``{``, ``[`` and ``,``, before
  a closer of a non-empty container, one space after ``:`` (``indent_gaps``; the tests check it
  against ``json.dumps`` itself);
- with ``property_order="definition"``, the keys of each object in the order of its schema's
  ``properties``, then the required names ``properties`` does not name (in ``required``'s order),
  then the other keys in any order (through ``$ref``, into property values, patternProperties,
  additionalProperties and items, and along a branch of ``anyOf``/``oneOf`` that the value is valid for);
- ``plain_strings``: every string literal (keys too) spelled as ``json.dumps(s, ensure_ascii=False)``;
- beside ``multipleOf`` a non-zero number is written without exponent (stencil's documented subset);
- ``jsonschema`` Draft 2020-12 finds the value valid, numbers compared exactly, ``pattern`` with
  ECMA-262's ``$`` and ASCII ``\\d``, and ``format: date`` asserted as RFC 3339's full-date (own
  check below: Python's ``datetime`` refuses the year 0, which RFC 3339 allows), ``format:
  hostname`` as RFC 1123's host names (own check below).
"""
from __future__ import annotations

import decimal
import json
import re
from decimal import Decimal

import jsonschema
from jsonschema import validators

WS = " \t\n\r"
PUNCTUATION = "{}[],:"
OPENERS, CLOSERS = ("{", "["), ("}", "]")


def _is_integer(_checker, x) -> bool:
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or (isinstance(x, Decimal) and x.is_finite() and x == x.to_integral_value())


def _is_number(_checker, x) -> bool:
    return isinstance(x, (int, Decimal)) and not isinstance(x, bool)


def ecma_search(pattern: str, text: str) -> bool:
    """ECMA-262's ``$`` is the end of the input (Python's also matches before a final newline), and
    its ``\\d`` is ASCII."""
    return re.search(re.sub(r"(?<!\\)\$", r"\\Z", pattern), text, re.ASCII) is not None


def _ecma_pattern(_validator, pattern, instance, _schema):
    if isinstance(instance, str) and not ecma_search(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def rfc3339_full_date(s: str) -> bool:
    """RFC 3339's full-date, with its month lengths and Appendix C's leap years."""
    m = re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", s)
    if not m:
        return False
    year, month, day = (int(g) for g in m.groups())
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return 1 <= month <= 12 and 1 <= day <= days[month - 1]


_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"


def rfc1123_hostname(s: str) -> bool:
    """RFC 1123 host names: dot-separated labels of letters, digits and inner hyphens, each of at
    most 63 characters, at most 253 in all."""
    return len(s) <= 253 and re.fullmatch(rf"{_LABEL}(?:\.{_LABEL})*", s) is not None


FORMATS = jsonschema.FormatChecker(formats=())
FORMATS.checks("date")(lambda s: not isinstance(s, str) or rfc3339_full_date(s))
FORMATS.checks("hostname")(lambda s: not isinstance(s, str) or rfc1123_hostname(s))

# Draft 2020-12 with numbers read exactly (1.0 is an integer, 0.1 is 1/10) and ECMA-262 patterns.
Validator = validators.extend(
    jsonschema.Draft202012Validator, validators={"pattern": _ecma_pattern},
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}))


class Undecided(Exception):
    """A number the Decimal context cannot reduce (a huge exponent): no verdict."""


def _no_repeats(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("repeated key")
    return dict(pairs)


def _refuse(name):
    raise ValueError(name)


def lex(text: str) -> tuple[list[str], list[str]]:
    """(the tokens of the text: string literals as written, punctuation, and the runs of other
    characters; the white space before each token and, last, after the final one)."""
    tokens: list[str] = []
    gaps: list[str] = []
    gap = ""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in WS:
            gap += ch
            i += 1
            continue
        gaps.append(gap)
        gap = ""
        j = i + 1
        if ch == '"':
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
        elif ch not in PUNCTUATION:
            while j < n and text[j] not in WS and text[j] not in PUNCTUATION and text[j] != '"':
                j += 1
        tokens.append(text[i:j])
        i = j
    gaps.append(gap)
    return tokens, gaps


def indent_gaps(tokens: list[str], indent: int) -> list[str]:
    """The white space json.dumps(value, indent=indent) writes before each token and after the last."""
    out = [""]
    depth = 0
    for a, b in zip(tokens, tokens[1:]):
        depth += (a in OPENERS) - (a in CLOSERS)
        if a in OPENERS and b in CLOSERS:
            out.append("")
        elif a in OPENERS or a == ",":
            out.append("\n" + " " * (indent * depth))
        elif b in CLOSERS:
            out.append("\n" + " " * (indent * (depth - 1)))
        else:
            out.append(" " if a == ":" else "")
    out.append("")
    return out


def relayout(text: str, indent: int) -> str:
    """The text's tokens laid out as json.dumps(..., indent=indent) lays out its value."""
    tokens, _ = lex(text)
    return "".join(g + t for g, t in zip(indent_gaps(tokens, indent), tokens))


def layout_ok(tokens: list[str], gaps: list[str], whitespace, max_run: int | None) -> bool:
    """Whether lex's tokens and gaps are laid out as the ``whitespace`` option says."""
    if whitespace == "compact":
        return not any(gaps)
    if whitespace == "flexible":
        return not gaps[0] and not gaps[-1] and all(max_run is None or len(g) <= max_run for g in gaps)
    return gaps == indent_gaps(tokens, whitespace)


# the verdicts on the value (all but the layout and the key order), by the schema and the tokens: a
# text and its spaced or indented copies share one (JSON does not care where its white space goes)
_VALUE_VERDICTS: dict = {}


class Oracle:
    """See the module docstring. ``__call__(data: bytes) -> bool``; raises ``Undecided`` for a
    number the Decimal context cannot compare."""

    def __init__(self, schema, *, plain_strings: bool = False, whitespace="compact", property_order: str = "any",
                 max_run: int | None = None):
        self.schema = json.loads(json.dumps(schema), parse_float=Decimal)
        self.validator = Validator(self.schema, format_checker=FORMATS)
        self.plain_strings = plain_strings
        self.whitespace = whitespace
        self.max_run = max_run
        self.definition_order = property_order == "definition"
        # stencil's documented subset (grammar/json/schema/lang/numbers.py): beside multipleOf a
        # number is written without exponent, unless it is zero
        self.exponent_only_at_zero = "multipleOf" in json.dumps(schema)
        self.key = (json.dumps(schema, sort_keys=True), plain_strings)

    def __call__(self, data: bytes) -> bool:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        tokens, gaps = lex(text)
        if not layout_ok(tokens, gaps, self.whitespace, self.max_run):
            return False
        key = (self.key, tuple(tokens))
        if key not in _VALUE_VERDICTS:
            _VALUE_VERDICTS[key] = self._in_context(self._judge, text, tokens)
        verdict = _VALUE_VERDICTS[key]
        if verdict is None:
            raise Undecided(text)
        if not verdict or not self.definition_order:
            return verdict
        return self._in_context(lambda t, _: self._in_order(self.schema, _read(t)), text, tokens)

    @staticmethod
    def _in_context(judge, text: str, tokens: list[str]) -> bool | None:
        """judge(text, tokens) with exact Decimal numbers (None: a number past its exponents)."""
        with decimal.localcontext() as ctx:
            ctx.prec, ctx.Emax, ctx.Emin = 400, decimal.MAX_EMAX, decimal.MIN_EMIN
            try:
                return judge(text, tokens)
            except decimal.DecimalException:
                return None

    def _judge(self, text: str, tokens: list[str]) -> bool:
        try:
            value = _read(text)
        except ValueError:
            return False
        literals = [t for t in tokens if t.startswith('"')]
        if self.plain_strings and any(json.dumps(json.loads(lit), ensure_ascii=False) != lit for lit in literals):
            return False
        if self.exponent_only_at_zero and any(Decimal(t) != 0 for t in tokens if re.fullmatch(
                r"-?[0-9.]+[eE][-+]?[0-9]+", t)):
            return False
        return self.validator.is_valid(value)

    # -- property_order="definition" -----------------------------------------------------------
    def _in_order(self, schema, value) -> bool:
        schema = self._follow(schema)
        if not isinstance(schema, dict):
            return True
        assert not {"allOf", "if", "dependentSchemas", "unevaluatedProperties"} & set(schema), schema
        for kw in ("anyOf", "oneOf"):
            branches = [b for b in schema.get(kw, []) if self.validator.evolve(schema=b).is_valid(value)]
            if branches and not any(self._in_order(b, value) for b in branches):
                return False
        if isinstance(value, dict):
            props = list(schema.get("properties", {}))
            named = props + [r for r in schema.get("required", []) if r not in props]
            ranks = [named.index(k) if k in named else len(named) for k in value]
            if ranks != sorted(ranks):
                return False
            return all(self._in_order(sub, v) for k, v in value.items() for sub in _member_schemas(schema, k))
        if isinstance(value, list):
            prefix = schema.get("prefixItems", [])
            return all(self._in_order(prefix[i] if i < len(prefix) else schema.get("items", True), v)
                       for i, v in enumerate(value))
        return True

    def _follow(self, schema):
        """The schema a local ``$ref`` (alone, or beside ``$defs``; ``#`` the root) points to."""
        while isinstance(schema, dict) and "$ref" in schema:
            ref = schema["$ref"]
            assert set(schema) <= {"$ref", "$defs"} and (ref == "#" or ref.startswith("#/")), schema
            target = self.schema
            for part in ref[2:].split("/") if ref != "#" else []:
                target = target[part.replace("~1", "/").replace("~0", "~")]
            schema = target
        return schema


def _read(text: str):
    return json.loads(text, parse_float=Decimal, parse_constant=_refuse, object_pairs_hook=_no_repeats)


def _member_schemas(schema: dict, key: str) -> list:
    """The schemas a member's value is checked against: its property's, else those of the
    patternProperties its key matches, else additionalProperties'."""
    if key in schema.get("properties", {}):
        return [schema["properties"][key]]
    matched = [s for p, s in schema.get("patternProperties", {}).items() if ecma_search(p, key)]
    return matched or [schema.get("additionalProperties", True)]
