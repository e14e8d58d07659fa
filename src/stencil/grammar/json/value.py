"""Generic JSON (RFC 8259) as grammar IR: the value grammar, and the string, number and
whitespace lexemes that the JSON Schema front-end reuses.

Example::

    b = stencil.GrammarBuilder()
    g = b.build(json_value(b))      # any JSON value, with flexible whitespace
    compiled = compiler.compile_grammar(g)
"""
from __future__ import annotations

import json

from stencil._core import ExprId, Symbol

#: characters a JSON string holds unescaped: anything but '"', '\\' and controls U+0000-U+001F
_STRING_CHAR_EXCLUDED = [(0x00, 0x1F), (ord('"'), ord('"')), (ord("\\"), ord("\\"))]
_HEX = [(ord("0"), ord("9")), (ord("a"), ord("f")), (ord("A"), ord("F"))]
#: the characters spelling each hex digit value 0-15 (either case)
HEX_DIGIT_VALUES = tuple("0123456789"[v] if v < 10 else "abcdef"[v - 10] + "ABCDEF"[v - 10] for v in range(16))
#: (code point, letter) of the two-character escapes ``\\"``, ``\\\\``, ``\\/``, ``\\b`` ...
SHORT_ESCAPES = ((0x22, '"'), (0x5C, "\\"), (0x2F, "/"), (0x08, "b"), (0x0C, "f"), (0x0A, "n"),
                 (0x0D, "r"), (0x09, "t"))


def _hex_class(b, digits: str) -> ExprId:
    return b.re_char_ranges([(ord(c), ord(c)) for v in digits for c in HEX_DIGIT_VALUES[int(v, 16)]], False)


def string_char(b) -> ExprId:
    """One JSON string character: a plain code point or an escape sequence (a surrogate escape
    only as half of a pair: a lone one is no character)."""
    plain = b.re_char_ranges(_STRING_CHAR_EXCLUDED, True)
    simple_escape = b.re_concat([b.re_literal("\\"), b.re_char_ranges([(ord(c), ord(c)) for c in '"\\/bfnrt'], False)])
    hex_digit = b.re_char_ranges(_HEX, False)
    u, d = b.re_literal("\\u"), _hex_class(b, "d")
    bmp = b.re_or([b.re_concat([_hex_class(b, "0123456789abcef"), b.re_repeat(hex_digit, 3, 3)]),
                   b.re_concat([d, _hex_class(b, "01234567"), b.re_repeat(hex_digit, 2, 2)])])
    pair = b.re_concat([d, _hex_class(b, "89ab"), b.re_repeat(hex_digit, 2, 2),
                        u, d, _hex_class(b, "cdef"), b.re_repeat(hex_digit, 2, 2)])
    return b.re_or([plain, simple_escape, b.re_concat([u, b.re_or([bmp, pair])])])


def string_expr(b) -> ExprId:
    """A JSON string, quotes included."""
    quote = b.re_literal('"')
    return b.re_concat([quote, b.re_repeat(string_char(b), 0, -1), quote])


def number_expr(b) -> ExprId:
    """A JSON number: -?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?"""
    digit = b.re_char_ranges([(ord("0"), ord("9"))], False)
    digits = b.re_repeat(digit, 1, -1)
    int_part = b.re_or([b.re_literal("0"), b.re_concat([b.re_char_ranges([(ord("1"), ord("9"))], False),
                                                         b.re_repeat(digit, 0, -1)])])
    frac = b.re_repeat(b.re_concat([b.re_literal("."), digits]), 0, 1)
    exp = b.re_repeat(b.re_concat([b.re_char_ranges([(ord("e"), ord("e")), (ord("E"), ord("E"))], False),
                                   b.re_repeat(b.re_char_ranges([(ord("+"), ord("+")), (ord("-"), ord("-"))], False), 0, 1),
                                   digits]), 0, 1)
    return b.re_concat([b.re_repeat(b.re_literal("-"), 0, 1), int_part, frac, exp])


def whitespace_expr(b, max_run: int | None = None) -> ExprId:
    """JSON insignificant whitespace; ``max_run`` bounds a run (keeps a model from looping)."""
    ws = b.re_char_ranges([(0x20, 0x20), (0x09, 0x0A), (0x0D, 0x0D)], False)
    return b.re_repeat(ws, 1, -1 if max_run is None else max_run)


def spaced_punctuation(b, max_run: int | None = None, run: int | None = None, seps: dict | None = None) -> dict:
    """``{ } [ ] , :`` as lexemes that carry the JSON white space around them (after an opener,
    before a closer, on both sides of a separator): flexible white space for a JSON value inside a
    larger grammar, where an ignored lexeme would let white space in between the host's own
    terminals too. ``run``: the expression of that white space (default: an optional run of at
    most ``max_run`` JSON white space characters); ``seps``: expressions in place of ``,`` or ``:``."""
    if run is None:
        run = b.re_repeat(whitespace_expr(b, max_run), 0, 1)
    out = {}
    for c in "{}[],:":
        mark = (seps or {}).get(c)
        parts = ([run] if c in "}],:" else []) + [b.re_literal(c) if mark is None else mark] + \
            ([run] if c in "{[,:" else [])
        out[c] = b.lexeme(b.re_concat(parts), json.dumps(c))
    return out


def json_value(b, *, max_whitespace_run: int | None = None) -> Symbol:
    """Add the rules of a generic JSON value to builder ``b``; returns the ``value`` rule."""
    b.ignore(whitespace_expr(b, max_whitespace_run), "WS")
    string = b.lexeme(string_expr(b), "STRING")
    number = b.lexeme(number_expr(b), "NUMBER")
    value, obj, members, pair, arr, elements = (b.rule(n) for n in
                                                ("value", "object", "members", "pair", "array", "elements"))
    for alt in ([obj], [arr], [string], [number], [b.literal("true")], [b.literal("false")], [b.literal("null")]):
        b.add_alternative(value, alt)
    lbrace, rbrace, lbrack, rbrack = b.literal("{"), b.literal("}"), b.literal("["), b.literal("]")
    comma, colon = b.literal(","), b.literal(":")
    b.add_alternative(obj, [lbrace, rbrace])
    b.add_alternative(obj, [lbrace, members, rbrace])
    b.add_alternative(members, [pair])
    b.add_alternative(members, [members, comma, pair])
    b.add_alternative(pair, [string, colon, value])
    b.add_alternative(arr, [lbrack, rbrack])
    b.add_alternative(arr, [lbrack, elements, rbrack])
    b.add_alternative(elements, [value])
    b.add_alternative(elements, [elements, comma, value])
    return value
