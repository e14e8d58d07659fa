"""Regex front-end: parse the regex syntax users write and emit it into the core's builder.

Dialect: ECMA-262 as in JSON Schema ``pattern``, with the Python-only forms accepted
(``(?P<name>...)``, ``\\A``, ``\\Z``, ``\\z``, inline flags, ``{,n}``, ``\\N{NAME}``, ``\\UXXXXXXXX``,
``\\a``). Characters are Unicode code points; the builder matches them as UTF-8 bytes.

- ``\\d``, ``\\w`` are ASCII; ``\\s`` is Unicode white space; ``.`` is any code point except
  ``\\n \\r \\u2028 \\u2029`` (any code point under the ``s`` flag).
- ``\\p{...}``/``\\P{...}``: general categories (``L``, ``Lu``, ``Letter``, ``gc=Nd``, ...) and
  ``Any``, ``ASCII``, ``Assigned``; other properties (scripts, ...) are rejected.
- Flags (argument or inline ``(?i)``, ``(?i:...)``, ``(?-i:...)``): ``i`` case-insensitive,
  ``s`` dot-all, ``x`` verbose, ``a`` ASCII-only ``\\s`` and case folding, ``u`` no-op. A global
  ``(?i)`` applies from where it stands to the end of its group. ``m`` (multiline) is rejected.
- Case-insensitivity expands literal characters, ranges and ``\\p`` classes to all their case
  variants (code points linked by single-code-point lower/upper/casefold mappings); ``\\d \\w \\s``,
  their negations and ``.`` are not expanded.
- ``^``/``\\A`` match only at the start of the input and ``$``/``\\Z``/``\\z`` only at its end,
  wherever they stand; the language is computed exactly (``a^b`` matches nothing, ``(?:^|,)x``
  with ``anchored=False`` means "x at the start or after a comma").
- Rejected with a GrammarError naming the construct and its position: lookarounds,
  backreferences (``\\1``, ``\\k<name>``, ``(?P=name)``), ``\\b``/``\\B`` word boundaries,
  possessive quantifiers and atomic groups (they change the language), conditionals.
- Classes: a ``]`` right after ``[`` or ``[^`` is a literal (Python) unless that leaves the class
  unterminated, in which case ``[]`` matches nothing and ``[^]`` any code point (ECMA). A class
  escape cannot be a range endpoint (``[\\w-z]`` is an error, as in Python and ECMA ``u`` mode).
- A ``{`` that does not start a quantifier is a literal; ``{,n}`` means ``{0,n}`` (Python).
- Code points: ``\\uD83D\\uDE00`` pairs combine into one code point; a lone surrogate matches
  nothing (it cannot occur in UTF-8 text).
- Limits: 1,000,000 characters, 1,000 nested groups, repetition counts up to 100,000.
"""
from __future__ import annotations

from typing import Union

from stencil._core import ExprId
from stencil.grammar.regex import unicode
from stencil.grammar.regex.ast import (ANCHOR_END, ANCHOR_START, EMPTY, NOTHING, Alt, AnchorEnd,
                                       AnchorStart, CharClass, Concat, Empty, Literal, Nothing,
                                       RegexNode, Repeat, alt, children, concat, nullable,
                                       postorder, repeat)
from stencil.grammar.regex.parser import (MAX_NESTING_DEPTH, MAX_PATTERN_LENGTH, MAX_REPEAT,
                                          regex_error)
from stencil.grammar.regex.parser import parse as _parse

__all__ = [
    "parse_regex", "build_regex", "split_anchors", "RegexNode", "Nothing", "Empty", "Literal",
    "CharClass", "Concat", "Alt", "Repeat", "AnchorStart", "AnchorEnd", "NOTHING", "EMPTY",
    "ANCHOR_START", "ANCHOR_END", "ANY_STRING", "MAX_PATTERN_LENGTH", "MAX_NESTING_DEPTH",
    "MAX_REPEAT", "regex_error",
]

#: any sequence of code points, emitted as ``re_any_string()``
ANY_STRING = Repeat(CharClass(unicode.ANY), 0, None)


def parse_regex(pattern: str, *, flags: str = "", dialect: str = "ecma") -> RegexNode:
    """Parse ``pattern`` into an AST (which may contain AnchorStart/AnchorEnd nodes); ``dialect``:
    "ecma" (JSON Schema, ``compile_regex``) or "rust" (llguidance's Lark terminals: Unicode ``\\d``
    ``\\w``, ``.`` stopping at ``\\n`` only; see ``parser.DIALECTS``)."""
    return _parse(pattern, flags, dialect)


# --- anchors ------------------------------------------------------------------------------------
#
# A node denotes a set of (word, a, b): a = "this match needs to start at the start of the input",
# b = "this match needs to end at the end of the input". We keep the four languages
# (L00, L10, L01, L11) indexed by a + 2*b. A ^ inside a concatenation forces everything before it
# (within the concatenation) to be empty, a $ everything after it.

_PLAIN = (NOTHING, NOTHING, NOTHING)


def _no_anchor(k) -> bool:
    return isinstance(k[1], Nothing) and isinstance(k[2], Nothing) and isinstance(k[3], Nothing)


def _is_any_string(node) -> bool:
    return (isinstance(node, Repeat) and node.min == 0 and node.max is None
            and isinstance(node.item, CharClass) and node.item.ranges == unicode.ANY)


class _AnchorSplitter:
    def __init__(self):
        self.nmemo: dict = {}

    def nul(self, node) -> bool:
        return nullable(node, self.nmemo)

    def eps(self, node):
        """The empty string if it is in the node's language, else nothing."""
        return EMPTY if not isinstance(node, Nothing) and self.nul(node) else NOTHING

    def cat2(self, X, Y):
        out = ([], [], [], [])
        for i1, x in enumerate(X):
            if isinstance(x, Nothing):
                continue
            a1, b1 = i1 & 1, i1 >> 1
            for i2, y in enumerate(Y):
                if isinstance(y, Nothing):
                    continue
                a2, b2 = i2 & 1, i2 >> 1
                left = self.eps(x) if a2 else x
                right = self.eps(y) if b1 else y
                out[(a1 | a2) | ((b1 | b2) << 1)].append(concat([left, right], flatten=False))
        return tuple(alt(o, flatten=False) for o in out)

    def rep(self, X, m, n):
        x00, x10, x01, x11 = X
        e00, e10, e01, e11 = (self.eps(x) is EMPTY for x in X)

        def dec(v, k):
            return None if v is None else v - k

        r00 = repeat(x00, m, n)
        if n is not None and n < 1:
            return (r00, NOTHING, NOTHING, NOTHING)
        # R10: ε iterations, one iteration of x10 (the last one that needs the start), then x00s.
        r10 = concat([x10, repeat(x00, 0 if (e00 or e10) else max(m - 1, 0), dec(n, 1))],
                     flatten=False)
        r01 = concat([repeat(x00, 0 if (e00 or e01) else max(m - 1, 0), dec(n, 1)), x01],
                     flatten=False)
        r11 = []
        if m <= 1 or e00 or e10 or e01:  # one x11 iteration, every other one empty
            r11.append(x11)
        if n is None or n >= 2:  # x10, x00s, x01
            mid = repeat(x00, 0 if (e00 or e10 or e01) else max(m - 2, 0), dec(n, 2))
            r11.append(concat([x10, mid, x01], flatten=False))
        if e11 or (e10 and e01 and (n is None or n >= 2)):  # only empty iterations
            r11.append(EMPTY)
        return (r00, r10, r01, alt(r11, flatten=False))

    def visit(self, node, kids):
        if isinstance(node, AnchorStart):
            return (NOTHING, EMPTY, NOTHING, NOTHING)
        if isinstance(node, AnchorEnd):
            return (NOTHING, NOTHING, EMPTY, NOTHING)
        if all(k[0] is c and _no_anchor(k) for k, c in zip(kids, children(node))):
            return (node,) + _PLAIN  # (also for leaves)
        if isinstance(node, Alt):
            return tuple(alt([k[i] for k in kids], flatten=False) for i in range(4))
        if isinstance(node, Repeat):
            return self.rep(kids[0], node.min, node.max)
        # Concat: runs of anchor-free items become one node, then fold left to right.
        acc, run = None, []
        for k in kids + [None]:
            if k is not None and _no_anchor(k):
                run.append(k[0])
                continue
            if run:
                r = (concat(run),) + _PLAIN
                acc = r if acc is None else self.cat2(acc, r)
                run = []
            if k is not None:
                acc = k if acc is None else self.cat2(acc, k)
        return acc


def split_anchors(node) -> tuple:
    """Anchor-free (L00, L10, L01, L11): the words a match of ``node`` can take when it needs
    neither, the input start, the input end, or both."""
    return postorder(node, _AnchorSplitter().visit)


def _anchored_language(node, anchored: bool) -> RegexNode:
    if not postorder(node, lambda n, k: isinstance(n, (AnchorStart, AnchorEnd)) or any(k)):
        l00, l10, l01, l11 = node, NOTHING, NOTHING, NOTHING
    else:
        l00, l10, l01, l11 = split_anchors(node)
    if anchored:
        return alt([l00, l10, l01, l11], flatten=False)
    if not isinstance(l00, Nothing) and nullable(l00):
        return ANY_STRING
    return alt([concat([ANY_STRING, l00, ANY_STRING], flatten=False),
                concat([l10, ANY_STRING], flatten=False),
                concat([ANY_STRING, l01], flatten=False), l11], flatten=False)


# --- emission -----------------------------------------------------------------------------------

def _emit_kids(node):
    return () if _is_any_string(node) else children(node)


def _emitter(builder):
    def visit(node, kids):
        if isinstance(node, Literal):
            return builder.re_literal(node.text)
        if isinstance(node, CharClass):
            pos = node.ranges
            neg = unicode.complement(pos)
            if len(unicode.bridge_surrogates(neg)) < len(unicode.bridge_surrogates(pos)):
                return builder.re_char_ranges(unicode.bridge_surrogates(neg), True)
            return builder.re_char_ranges(unicode.bridge_surrogates(pos), False)
        if isinstance(node, Concat):
            return builder.re_concat(list(kids))
        if isinstance(node, Alt):
            return builder.re_or(list(kids))
        if isinstance(node, Repeat):
            if _is_any_string(node):
                return builder.re_any_string()
            return builder.re_repeat(kids[0], node.min, -1 if node.max is None else node.max)
        if isinstance(node, Empty):
            return builder.re_empty()
        if isinstance(node, Nothing):
            return builder.re_nothing()
        raise AssertionError(f"unexpected node {type(node).__name__} in emission")
    return visit


def build_regex(builder, pattern_or_node: Union[str, RegexNode], *, anchored: bool = True,
                flags: str = "", dialect: str = "ecma") -> ExprId:
    """Emit a regex into ``builder`` and return its expression handle.

    ``anchored=True`` (``compile_regex``): the whole output must match. ``anchored=False`` (JSON
    Schema ``pattern``): the pattern may match anywhere, i.e. (any string)·P·(any string), where
    a ``^`` at the start of a branch drops the leading part and a ``$`` at the end the trailing one.
    """
    if isinstance(pattern_or_node, str):
        node = parse_regex(pattern_or_node, flags=flags, dialect=dialect)
    else:
        if flags:
            raise ValueError("flags apply to a pattern string, not to a parsed node")
        node = pattern_or_node
    lang = _anchored_language(node, anchored)
    return postorder(lang, _emitter(builder), kids_fn=_emit_kids)
