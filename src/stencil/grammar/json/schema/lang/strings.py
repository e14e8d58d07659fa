"""JSON string lexemes from constraints on the *decoded* string.

A JSON Schema constrains the string value, but the model writes its JSON text, where any character
may appear raw or escaped (``json.dumps`` escapes every non-ASCII character by default). So every
constraint (pattern, length, format, const, enum) becomes a regular language over the encoded body
(the bytes between the quotes) in which each code point may take any of its JSON encodings:

- raw UTF-8, except ``"``, ``\\`` and the controls U+0000-U+001F, which must be escaped;
- a short escape ``\\" \\\\ \\/ \\b \\f \\n \\r \\t``;
- ``\\uXXXX`` (hex digits in either case) for a BMP code point, a surrogate pair for the others.

Encodings are uniquely decodable, so intersections and complements of encoded languages are the
encodings of intersections and complements: ``pattern`` AND ``maxLength`` is ``re_and`` of the two.
Lengths count code points (a surrogate pair is one). An escape of a lone surrogate is refused
everywhere: it is no character (only a ``const`` or ``enum`` that holds one spells it).

Example::

    s = JsonStrings(b)
    body = b.re_and([s.pattern("^[a-z]+$"), s.length(1, 8)])
    lexeme = b.lexeme(s.quoted(body), "name")
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from stencil._core import ExprId
from stencil.grammar.json.schema.core.patterns import pattern_node
from stencil.grammar.json.value import HEX_DIGIT_VALUES, SHORT_ESCAPES
from stencil.grammar.regex import AnchorEnd, AnchorStart, CharClass, Empty, Literal, Nothing, Repeat
from stencil.grammar.regex import unicode
from stencil.grammar.regex.ast import Alt, Concat, postorder

__all__ = ["JsonStrings", "intersect_ranges"]

#: code points that may appear raw in a JSON string
RAW_OK = unicode.complement(unicode.normalize([(0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]))
BMP = unicode.normalize([(0, 0xFFFF)])
ASTRAL = ((0x10000, unicode.MAX_CP),)


def intersect_ranges(a, b):
    """Intersection of two normalized range sets."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


_SHORT = {cp: "\\" + letter for cp, letter in SHORT_ESCAPES}


@lru_cache(maxsize=65536)
def _u_pieces(cp: int) -> tuple:
    """``\\uXXXX`` of a BMP code point as literal runs and (lower, upper) hex-letter pairs."""
    out: list[str | tuple[str, str]] = []
    run = "\\u"
    for ch in "%04x" % cp:
        if ch.isdigit():
            run += ch
        else:
            out.append(run)
            out.append((ch, ch.upper()))
            run = ""
    if run:
        out.append(run)
    return tuple(x for x in out if x)


def _hex_piece(b, piece) -> ExprId:
    if isinstance(piece, str):
        return b.re_literal(piece)
    return b.re_char_ranges([(ord(piece[0]), ord(piece[0])), (ord(piece[1]), ord(piece[1]))], False)


# --- emission ------------------------------------------------------------------------------------

# json.dumps's own escapes: the short ones but ``\/``, and ``\u00xx`` (lower case) for the
# other controls.
_DUMPS_SHORT = tuple((cp, letter) for cp, letter in SHORT_ESCAPES if letter != "/")
_DUMPS_U = tuple(cp for cp in range(0x20) if cp not in {c for c, _ in _DUMPS_SHORT})


#: llguidance's spellings ("controls", "unicode"): U+007F is escaped too, and "controls" writes
#: ``\uXXXX`` only for these
_CONTROLS = unicode.normalize([(0x00, 0x1F), (0x7F, 0x7F)])
_RAW_NO_DEL = unicode.complement(unicode.union(_CONTROLS, unicode.normalize([(0x22, 0x22), (0x5C, 0x5C)])))


@lru_cache(maxsize=4096)
def _class_plan(key: tuple, spelling: str, escapes: str) -> tuple:
    """What :meth:`JsonStrings.encoded_class` builds for one range set, worked out once per process
    (every schema's "any character" and key characters ask again): the raw ranges, the short
    escapes' texts, ``\\u00xy`` escapes of the plain spelling as (prefix, low digits' ranges), and
    the BMP and astral ranges that the any spelling writes as ``\\u`` escapes and pairs."""
    plain = spelling != "any"
    peer = spelling in ("controls", "unicode")
    raw = tuple(unicode.bridge_surrogates(intersect_ranges(key, _RAW_NO_DEL if peer else RAW_OK)))
    shorts = tuple("\\" + letter for cp, letter in (_DUMPS_SHORT if plain else SHORT_ESCAPES)
                   if unicode.contains(key, cp) and (not peer or letter in escapes))
    if peer:
        return raw, shorts, (), (), ()
    if plain:   # \u00xx for the other controls: \u00 then the high digit (0 or 1), then a class
        by_high: dict = {}
        for cp in _DUMPS_U:
            if unicode.contains(key, cp):
                by_high.setdefault(cp >> 4, []).append(ord("%x" % (cp & 15)))
        u00 = tuple(("\\u00%d" % high, tuple((c, c) for c in lows)) for high, lows in by_high.items())
        return raw, shorts, u00, (), ()
    return raw, shorts, (), intersect_ranges(key, BMP), intersect_ranges(key, ASTRAL)


class JsonStrings:
    """Builds encoded-body expressions in one builder (memoized per builder). ``spelling`` (option
    ``string_spelling``): ``"any"`` JSON spelling, ``"plain"`` (only the spelling
    ``json.dumps(s, ensure_ascii=False)`` writes), or llguidance's ``"controls"`` and ``"unicode"``,
    with ``escapes`` the letters allowed after a backslash."""

    def __init__(self, b, spelling: str = "any", escapes: str | None = None):
        self.b = b
        self.spelling = spelling
        self.plain = spelling != "any"   # a restricted spelling: every class through encoded_class
        self.escapes = '"\\bfnrtu' if escapes is None else escapes
        self._classes: dict = {}
        self._hex: dict = {}
        self._nodes: dict = {}   # id(node) -> (node, expr), for cached format/pattern nodes
        self._char: ExprId | None = None
        self._any: ExprId | None = None
        self._lengths: dict = {}
        self._texts: dict = {}
        self._chars: dict = {}
        self._not_texts: dict = {}
        self._u00: Any = None
        self._digit: list = [None] * 16   # one hex digit value, either case
        self._quote: Any = None

    # -- hex digits -------------------------------------------------------------------------------
    def _hex_digit(self, lo: int, hi: int) -> ExprId:
        if lo == hi:
            e = self._digit[lo]
            if e is None:
                e = self._digit[lo] = self.b.re_char_ranges([(ord(c), ord(c)) for c in HEX_DIGIT_VALUES[lo]], False)
            return e
        key = ("d", lo, hi)
        e = self._hex.get(key)
        if e is None:
            ranges: list[tuple[int, int]] = []
            for v in range(lo, hi + 1):
                ranges.extend((ord(c), ord(c)) for c in HEX_DIGIT_VALUES[v])
            e = self.b.re_char_ranges(ranges, False)
            self._hex[key] = e
        return e

    def hex_range(self, lo: int, hi: int, width: int = 4) -> ExprId:
        """``width`` hex digits (either case) spelling a value in [lo, hi]."""
        key = (lo, hi, width)
        e = self._hex.get(key)
        if e is not None:
            return e
        b = self.b
        if width == 1:
            e = self._hex_digit(lo, hi)
        else:
            unit = 16 ** (width - 1)
            dlo, dhi = lo // unit, hi // unit
            rlo, rhi = lo % unit, hi % unit
            if dlo == dhi:
                e = b.re_concat([self._hex_digit(dlo, dlo), self.hex_range(rlo, rhi, width - 1)])
            else:
                parts = []
                if rlo == 0:
                    first = dlo
                else:
                    parts.append(b.re_concat([self._hex_digit(dlo, dlo), self.hex_range(rlo, unit - 1, width - 1)]))
                    first = dlo + 1
                last = dhi if rhi == unit - 1 else dhi - 1
                if first <= last:
                    parts.append(b.re_concat([self._hex_digit(first, last), self.hex_range(0, unit - 1, width - 1)]))
                if rhi != unit - 1:
                    parts.append(b.re_concat([self._hex_digit(dhi, dhi), self.hex_range(0, rhi, width - 1)]))
                e = b.re_or(parts)
        self._hex[key] = e
        return e

    def _u_escape(self, lo: int, hi: int) -> ExprId:
        return self.b.re_concat([self.b.re_literal("\\u"), self.hex_range(lo, hi)])

    # -- one code point ---------------------------------------------------------------------------
    def encoded_class(self, ranges) -> ExprId:
        """Every JSON encoding of one code point from a normalized range set."""
        key = tuple(ranges)
        e = self._classes.get(key)
        if e is not None:
            return e
        b = self.b
        raw, shorts, u00, bmp, astral = _class_plan(key, self.spelling, self.escapes)
        parts = [b.re_char_ranges(raw, False)] if raw else []
        parts += [b.re_literal(text) for text in shorts]
        if self.spelling in ("controls", "unicode"):
            e = self._classes[key] = self._peer_u_escapes(key, parts)
            return e
        parts += [b.re_concat([b.re_literal(prefix), b.re_char_ranges(lows, False)]) for prefix, lows in u00]
        parts += [self._u_escape(lo, hi) for lo, hi in bmp]
        for lo, hi in astral:
            parts.extend(self._surrogate_pairs(lo, hi))
        e = b.re_or(parts) if parts else b.re_nothing()
        self._classes[key] = e
        return e

    def _peer_u_escapes(self, key, parts: list) -> ExprId:
        """llguidance's ``\\uXXXX`` escapes (either case) added to ``parts``: the controls only, or
        every character under "unicode"; none without ``u`` in ``escapes``."""
        if "u" in self.escapes:
            for lo, hi in intersect_ranges(key, BMP if self.spelling == "unicode" else _CONTROLS):
                parts.append(self._u_escape(lo, hi))
            if self.spelling == "unicode":
                for lo, hi in intersect_ranges(key, ASTRAL):
                    parts.extend(self._surrogate_pairs(lo, hi))
        return self.b.re_or(parts) if parts else self.b.re_nothing()

    def _surrogate_pairs(self, lo: int, hi: int) -> list:
        def split(cp):
            v = cp - 0x10000
            return 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)
        (hlo, llo), (hhi, lhi) = split(lo), split(hi)
        cat = self.b.re_concat
        if hlo == hhi:
            return [cat([self._u_escape(hlo, hlo), self._u_escape(llo, lhi)])]
        out = [cat([self._u_escape(hlo, hlo), self._u_escape(llo, 0xDFFF)])]
        if hlo + 1 <= hhi - 1:
            out.append(cat([self._u_escape(hlo + 1, hhi - 1), self._u_escape(0xDC00, 0xDFFF)]))
        out.append(cat([self._u_escape(hhi, hhi), self._u_escape(0xDC00, lhi)]))
        return out

    def char(self) -> ExprId:
        """Any one code point (no lone surrogate), in any encoding (encoded_class(ANY), written
        directly: hex digits that avoid D800-DFFF, and surrogate pairs)."""
        if self._char is None:
            self._char = self.encoded_class(unicode.ANY) if self.plain else self._any_char()
        return self._char

    def _any_char(self) -> ExprId:
        """char() in the any spelling: raw characters, short escapes, \\u escapes and pairs."""
        b = self.b
        h = self._hex_digit
        hex2 = b.re_concat([h(0, 15), h(0, 15)])
        u = b.re_literal("\\u")
        bmp = b.re_or([b.re_concat([h(0, 12), hex2, h(0, 15)]), b.re_concat([h(14, 15), hex2, h(0, 15)]),
                       b.re_concat([h(13, 13), h(0, 7), hex2])])
        pair = b.re_concat([u, h(13, 13), h(8, 11), hex2, u, h(13, 13), h(12, 15), hex2])
        short = b.re_concat([b.re_literal("\\"), b.re_char_ranges([(ord(c), ord(c)) for c in '"\\/bfnrt'], False)])
        raw = b.re_char_ranges(unicode.bridge_surrogates(RAW_OK), False)
        return b.re_or([raw, short, b.re_concat([u, bmp]), pair])

    def any_body(self) -> ExprId:
        """Any string (no lone surrogates)."""
        if self._any is None:
            self._any = self.b.re_repeat(self.char(), 0, -1)
        return self._any

    def text(self, text: str) -> ExprId:
        """Every encoding of exactly ``text`` (a lone surrogate only as its \\u escape)."""
        e = self._texts.get(text)
        if e is not None:
            return e
        chars = self._chars
        items = list(map(chars.get, text))   # (most characters were met before)
        if None in items:
            for i, c in enumerate(text):
                if items[i] is None:
                    x = chars.get(c)   # (set by an earlier place of c in text)
                    if x is None:
                        x = chars[c] = self._code_point(ord(c))
                    items[i] = x
        e = self.b.re_concat(items) if items else self.b.re_empty()
        self._texts[text] = e
        return e

    def _code_point(self, cp: int) -> ExprId:
        """Every encoding of one code point (the fast path of encoded_class for one character)."""
        b = self.b
        if cp > 0xFFFF or self.plain:
            return self.encoded_class(((cp, cp),))
        alts = []
        if not (0xD800 <= cp <= 0xDFFF) and cp >= 0x20 and cp != 0x22 and cp != 0x5C:
            alts.append(b.re_literal(chr(cp)))
        short = _SHORT.get(cp)
        if short is not None:
            alts.append(b.re_literal(short))
        if cp < 0x100:   # \u00XY from cached parts: fewer builder calls for the usual key characters
            u00 = self._u00
            if u00 is None:
                u00 = self._u00 = b.re_literal("\\u00")
            alts.append(b.re_concat([u00, self._hex_digit(cp >> 4, cp >> 4), self._hex_digit(cp & 15, cp & 15)]))
        else:
            alts.append(b.re_concat([_hex_piece(b, piece) for piece in _u_pieces(cp)]))
        return alts[0] if len(alts) == 1 else b.re_or(alts)

    def not_texts(self, texts) -> ExprId:
        """Every string except those of ``texts``. (A complement: the builder's emptiness search
        finds a witness at once, and it builds faster than a trie-shaped union of escapes.)"""
        key = tuple(sorted(set(texts)))
        e = self._not_texts.get(key)
        if e is None:
            b = self.b
            e = self._not_texts[key] = b.re_and([self.any_body(), b.re_not(b.re_or([self.text(t) for t in key]))])
        return e

    def length(self, lo: int, hi) -> ExprId:
        """Strings of ``lo`` to ``hi`` code points (``hi`` None: unbounded)."""
        key = (lo, hi)
        e = self._lengths.get(key)
        if e is None:
            if hi is not None and hi < lo:
                return self.b.re_nothing()
            e = self.b.re_repeat(self.char(), lo, -1 if hi is None else hi)
            self._lengths[key] = e
        return e

    def node(self, root) -> ExprId:
        """The encoded language of an anchor-free regex node over code points."""
        hit = self._nodes.get(id(root))
        if hit is not None and hit[0] is root:
            return hit[1]
        b = self.b

        def visit(node, kids):
            if isinstance(node, Literal):
                return self.text(node.text)
            if isinstance(node, CharClass):
                return self.encoded_class(node.ranges)
            if isinstance(node, Concat):
                return b.re_concat(list(kids))
            if isinstance(node, Alt):
                return b.re_or(list(kids))
            if isinstance(node, Repeat):
                if node.min == 0 and node.max is None and isinstance(node.item, CharClass) \
                        and node.item.ranges == unicode.ANY:
                    return self.any_body()
                return b.re_repeat(kids[0], node.min, -1 if node.max is None else node.max)
            if isinstance(node, Empty):
                return b.re_empty()
            if isinstance(node, Nothing):
                return b.re_nothing()
            if isinstance(node, (AnchorStart, AnchorEnd)):
                raise AssertionError("anchors must be removed before emission")
            raise AssertionError(f"unexpected node {type(node).__name__}")

        e = postorder(root, visit)
        self._nodes[id(root)] = (root, e)
        return e

    def pattern(self, pattern: str) -> ExprId:
        """A JSON Schema ``pattern``: strings with a match anywhere (ECMA-262 syntax)."""
        return self.node(pattern_node(pattern, False))

    def quoted(self, body: int) -> ExprId:
        q = self._quote
        if q is None:
            q = self._quote = self.b.re_literal('"')
        return self.b.re_concat([q, body, q])
