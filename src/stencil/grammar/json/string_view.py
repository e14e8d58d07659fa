r"""A view of a ``GrammarBuilder`` in which every text expression becomes a JSON string body:
a front-end (regex, Lark, JSON Schema ...) built through it describes the *decoded* text, and
the grammar holds its JSON encodings (the bytes between the quotes of a JSON string).

The encoding is :class:`~stencil.grammar.json.schema.lang.strings.JsonStrings`' (the one the
JSON Schema front-end gives ``pattern`` and ``format``): a homomorphism over code points whose
images are uniquely decodable and never hold a raw ``"``, so a lexeme's language maps to the
encodings of its language (intersections and complements included) and the string ends at the
first raw ``"``, what a JSON reader takes. One lexeme (a regex) keeps its meaning exactly.

Between lexemes (a Lark grammar) one thing needs care: the core's lexer decides a lexeme's end
one byte ahead, without going back, and every escape starts with ``\``; a terminal that may go
on with some escaped character would then run past its end into a next terminal that starts
with another (``/[^
]*/ "
"``: after ``x``, the ``\`` of ``
`` could still be a ``"`` of the
line), which the decoded text never does. :meth:`term` (the Lark emitter's hook for terminals)
therefore builds a terminal that holds escaped characters from its regex as raw runs (greedy
lexemes, which never hold a ``\``) and its escaped characters as lexemes of their own, so that
the escapes of both terminals are lexed side by side and the parser picks. Use the "plain"
spelling there (``json.dumps(s, ensure_ascii=False)``'s: escapes only for ``"``, ``\`` and the
controls), or every character would be an escape. Where one escaped character could both
continue a terminal and start the next one, the parser may take either, where Lark's greedy
lexer only continues.

What has no place in a JSON string is refused with a ``GrammarError``: special tokens, raw
bytes outside UTF-8, ignored lexemes (their scope is the whole builder's grammar; emit them as
explicit lexemes) and the JSON completion checks (they read the JSON text of a span).

Example::

    view = JsonStringBuilder(b)
    body = build_regex(view, r"[a-z]+\n", dialect="rust")   # "abc\n" as its JSON body abc\n
    lexeme = b.lexeme(view.strings.quoted(body), "input")
"""
from __future__ import annotations

from stencil._core import CheckKind, ExprId, GrammarError, Symbol
from stencil.grammar.json.schema.lang.strings import RAW_OK, JsonStrings, intersect_ranges
from stencil.grammar.regex import unicode
from stencil.grammar.regex.ast import Alt, CharClass, Concat, Empty, Literal, Nothing, Repeat, postorder

#: the code points a JSON string holds only escaped
ESCAPED = unicode.complement(RAW_OK)

__all__ = ["JsonStringBuilder"]


class JsonStringBuilder:
    """Builder view: ``re_literal``, ``re_char_ranges``, ``re_any_string``, ``re_not`` and
    ``literal`` state decoded text and give its encoded language; structure (rules, lexemes,
    concatenation, repetition, intersection) goes to ``builder`` unchanged. ``spelling``: the
    JSON spellings allowed (``JsonStrings``: "any" or "plain")."""

    def __init__(self, builder, spelling: str = "any", what: str = "a JSON string"):
        self._b = builder
        self._what = what
        self.strings = JsonStrings(builder, spelling)
        # memos of builder-level expressions shared by views (Namespaced.shared): this view's
        # expressions are encoded, so none of the raw builder's memos may be reused through it
        self.shared = None

    def __getattr__(self, attr):
        return getattr(self._b, attr)

    # -- text, encoded --------------------------------------------------------------------------
    def re_literal(self, text: str) -> ExprId:
        return self.strings.text(text)

    def re_char_ranges(self, ranges, negate: bool = False) -> ExprId:
        cps = unicode.normalize(ranges)
        return self.strings.encoded_class(unicode.complement(cps) if negate else cps)

    def re_any_string(self) -> ExprId:
        return self.strings.any_body()

    def re_not(self, item: ExprId) -> ExprId:
        # the complement among encoded strings, not among all byte strings
        return self._b.re_and([self.strings.any_body(), self._b.re_not(item)])

    def literal(self, text: str, name: str = "") -> Symbol:
        return self._b.lexeme(self.strings.text(text), name or text)

    # -- a terminal: raw runs and escaped characters ------------------------------------------------
    def term(self, regex, name: str = "") -> Symbol:
        """A symbol for a terminal of regex AST ``regex`` (decoded text): one encoded lexeme where
        its text holds no escaped character, else a rule of raw-run lexemes and escape lexemes
        (see the module's docstring)."""
        escapes: dict = {}
        postorder(regex, lambda node, kids: escapes.setdefault(id(node), _has_escapes(node, kids)))
        return self._split(regex, name or "term", escapes)

    def _split(self, node, name: str, escapes: dict) -> Symbol:
        b, s = self._b, self.strings
        if not escapes[id(node)]:
            return b.lexeme(s.node(node), name)
        if isinstance(node, Literal):
            runs = [m for m in _runs(node.text)]
            return b.seq([b.lexeme(s.text(r), name) for r in runs])
        if isinstance(node, CharClass):
            return self._one_of(node.ranges, name)
        if isinstance(node, Concat):
            return b.seq([self._split(k, name, escapes) for k in _merged(node.items, escapes)])
        if isinstance(node, Alt):
            return b.choice([self._split(k, name, escapes) for k in node.items])
        assert isinstance(node, Repeat)
        if isinstance(node.item, CharClass) and node.max is None and node.min <= 1:
            # a run of raw characters is one greedy lexeme: (run | escape)+ counts one or more
            raw = intersect_ranges(node.item.ranges, RAW_OK)
            unit = self._one_of(node.item.ranges, name, b.re_repeat(s.encoded_class(raw), 1, -1) if raw else None)
            return b.repeat(unit, node.min, -1)
        return b.repeat(self._split(node.item, name, escapes), node.min, -1 if node.max is None else node.max)

    def _one_of(self, ranges, name: str, raw=None) -> Symbol:
        """One character of ``ranges`` (or ``raw``, a run of its raw ones), escaped ones apart."""
        b, s = self._b, self.strings
        plain = intersect_ranges(ranges, RAW_OK)
        escaped = intersect_ranges(ranges, ESCAPED)
        parts = [b.lexeme(raw if raw is not None else s.encoded_class(plain), name)] if plain else []
        parts.append(b.lexeme(s.encoded_class(escaped), name + " (escaped)"))
        return parts[0] if len(parts) == 1 else b.choice(parts)

    # -- what a JSON string cannot hold -----------------------------------------------------------
    def _refuse(self, what: str):
        raise GrammarError(f"{what} cannot be part of {self._what}")

    def special_token(self, token_ids, name: str = ""):
        self._refuse(f"a special token ({name or token_ids})")

    def re_bytes(self, data: bytes):
        self._refuse("raw bytes")

    def re_byte_ranges(self, ranges, negate: bool = False):
        self._refuse("a byte range")

    def re_any_byte_string(self):
        self._refuse("any byte string")

    def ignore(self, expr: ExprId, name: str = "", initial: bool = True, final: bool = True):
        self._refuse(f"an ignored lexeme ({name or 'ignore'}) of the whole grammar")

    def add_check(self, rule: Symbol, kind: CheckKind, *args, **kwargs):
        # (the core's checks read the JSON text of a span, which the string escapes: %json objects
        # and unique arrays inside a custom tool's Lark input)
        self._refuse(f"a JSON completion check ({kind.name}: the core reads the span's JSON "
                     "text, which the string escapes)")


def _has_escapes(node, kids) -> bool:
    if isinstance(node, Literal):
        return any(unicode.contains(ESCAPED, ord(c)) for c in node.text)
    if isinstance(node, CharClass):
        return bool(intersect_ranges(node.ranges, ESCAPED))
    if isinstance(node, (Empty, Nothing)):
        return False
    return any(kids)


def _runs(text: str) -> list[str]:
    """``text`` cut into runs of raw characters and single escaped ones."""
    out: list[str] = []
    for c in text:
        if unicode.contains(ESCAPED, ord(c)) or not out or unicode.contains(ESCAPED, ord(out[-1][-1])):
            out.append(c)
        else:
            out[-1] += c
    return out


def _merged(items, escapes: dict) -> list:
    """A concatenation's items with each run of escape-free ones joined into one node (one
    greedy lexeme, as the terminal's own lexer reads it)."""
    out: list = []
    for k in items:
        if not escapes[id(k)] and out and not escapes[id(out[-1])]:
            joined = Concat((out[-1], k))
            escapes[id(joined)] = False
            out[-1] = joined
        else:
            out.append(k)
    return out
