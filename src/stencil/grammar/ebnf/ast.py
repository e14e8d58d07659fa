"""The grammar AST shared by the Lark and GBNF front-ends, with the checks both need.

Both syntaxes parse into the same small tree: rules whose bodies are sequences, alternatives and
repetitions over references to other rules, terminal pieces (regex ASTs from
:mod:`stencil.grammar.regex.ast`), token references and embedded JSON Schemas. Each front-end then
decides what becomes a lexeme (Lark: every terminal; GBNF: maximal regular pieces) and emits the
result into a ``stencil.GrammarBuilder``. Every node remembers where it was written, so an error
can say "line 3, column 7".

Example::

    g = parse_gbnf('root ::= "a" root | "b"')   # an EbnfGrammar
    check_grammar(g)                            # undefined / unused / unproductive rules
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from stencil._core import ExprId, GrammarError, Symbol
from stencil.grammar.deadline import check_deadline
from stencil.grammar.regex import ast as regex_ast
from stencil.grammar.regex.ast import Nothing

__all__ = ["repeat", "shared_expr", "without_texts",
    "Node", "Seq", "Alt", "Rep", "Ref", "Term", "TokenRef", "JsonSchema", "And", "Not", "SubGrammar",
    "RuleDef", "EbnfGrammar",
    "TokenTable", "Source", "check_grammar", "walk", "refs_of", "GrammarWarning", "Namespaced",
]


class Source:
    """The grammar text, to turn offsets into "line L, column C" in error messages."""

    def __init__(self, text: str, what: str = "grammar"):
        self.text = text
        self.what = what
        self._line_starts = [0]
        for i, c in enumerate(text):
            if c == "\n":
                self._line_starts.append(i + 1)

    def line_col(self, offset: int) -> tuple[int, int]:
        import bisect
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1, offset - self._line_starts[line] + 1

    def error(self, message: str, offset: Optional[int]) -> GrammarError:
        if offset is None:
            return GrammarError(f"{self.what}: {message}")
        line, col = self.line_col(offset)
        return GrammarError(f"{self.what}, line {line}, column {col}: {message}")


# --- nodes --------------------------------------------------------------------------------------
# ``pos`` is the offset in the source text where the node was written (None for generated nodes).

@dataclass(eq=False)
class Node:
    pos: Optional[int] = field(default=None, kw_only=True)


@dataclass(eq=False)
class Seq(Node):
    items: list


@dataclass(eq=False)
class Alt(Node):
    items: list


@dataclass(eq=False)
class Rep(Node):
    """``item{min,max}``; ``max`` None means unbounded."""
    item: Node
    min: int
    max: Optional[int]


def repeat(item: Node, lo: int, hi: Optional[int], pos: Optional[int] = None) -> Node:
    """``item{lo,hi}``, a repetition of a repetition folded where the language is the same:
    ``(x+)+`` is ``x+``, ``(x*)+``, ``(x+)*``, ``(x?)*`` and ``(x+)?`` are ``x*``. The nested
    forms are ambiguous in every way a text splits, which an Earley parser pays for at every byte
    (``x+++...`` a hundred deep took half a minute a mask).

    Example::

        repeat(repeat(Ref("x"), 1, None), 1, None)   # Rep(Ref("x"), 1, None)
    """
    simple = lo in (0, 1) and hi in (1, None)
    if simple and isinstance(item, Rep) and item.min in (0, 1) and item.max in (1, None):
        unbounded = hi is None or item.max is None
        return Rep(item.item, lo * item.min, None if unbounded else 1, pos=pos)
    return Rep(item, lo, hi, pos=pos)


@dataclass(eq=False)
class Ref(Node):
    name: str


@dataclass(eq=False)
class Term(Node):
    """A terminal piece: a regex AST (``regex_ast`` node). ``name`` is set for named terminals
    (Lark ``NAME: ...``); ``build`` optionally emits the piece straight into a builder (Lark
    ``%regex`` terminals whose constraints a plain regex AST cannot state)."""
    regex: Any
    name: str = ""
    build: Optional[Callable] = None
    lazy: bool = False      # the lexeme ends as soon as it matches
    max_tokens: int = 0     # > 0: the lexeme spans at most this many tokens (Lark max_tokens)
    max_chars: Optional[int] = None   # GBNF rule option: at most this many code points


@dataclass(eq=False)
class TokenRef(Node):
    """``<[1,5-7]>`` (ids), ``<|name|>`` / ``<name>`` (text, resolved through a TokenTable);
    ``negated`` (GBNF ``!<...>``): any text, but not these tokens."""
    ids: Optional[tuple] = None
    text: Optional[str] = None
    negated: bool = False

    def shown(self) -> str:
        """The reference as written: its name, or ``<[1,2]>``."""
        return self.text or f"<[{','.join(map(str, self.ids or ()))}]>"


@dataclass(eq=False)
class JsonSchema(Node):
    """``%json { ... }`` (Lark): a JSON Schema embedded as a rule."""
    schema: Any
    options: dict = field(default_factory=dict)


@dataclass(eq=False)
class And(Node):
    """Lark (llguidance) ``A & B``: text matching every item; only inside one lexeme."""
    items: list


@dataclass(eq=False)
class Not(Node):
    """Lark (llguidance) ``~A``: any text (bytes) that ``A`` does not match; only inside one lexeme."""
    item: Node


@dataclass(eq=False)
class SubGrammar(Node):
    """Lark ``%lark { ... }``: a whole grammar embedded as one element, with its own names, start
    rule and ``%ignore``. ``grammar`` is the parsed syntax until terminals are resolved, then the
    checked :class:`EbnfGrammar`."""
    grammar: Any


@dataclass(eq=False)
class RuleDef:
    name: str
    body: Node
    pos: Optional[int] = None
    # Lark attributes: lazy (end as soon as matched), stop (a string, a TokenRef, or a Term / Ref
    # to a terminal ending the text), max_chars (at most that many code points, XGrammar)
    lazy: bool = False
    stop: Any = None
    max_chars: Optional[int] = None
    max_tokens: int = 0


@dataclass
class EbnfGrammar:
    rules: dict          # name -> RuleDef, in definition order
    start: str
    source: Source
    ignores: list = field(default_factory=list)   # Term nodes (Lark %ignore)
    # Lark: named terminals, name -> RuleDef (their bodies hold Term/Seq/Alt/Rep only)
    terminals: dict = field(default_factory=dict)
    # Lark: %llguidance / %grammar_options (allow_initial_skip, ignore_once, ...)
    options: dict = field(default_factory=dict)

    def error(self, message: str, pos: Optional[int]) -> GrammarError:
        return self.source.error(message, pos)


@dataclass
class TokenTable:
    """What a front-end may learn about the tokenizer: how names resolve to ids, which ids are
    special (matched by id, never by text) and the text of ordinary tokens. The compiler fills
    it from its ``TokenizerInfo``; front-ends never see the vocabulary itself.

    Example::

        table = TokenTable(lookup=tok.token_id, is_special=tok.is_special, text=tok.token_bytes)
    """
    lookup: Callable[[str], int]              # raises KeyError for an unknown name
    is_special: Callable[[int], bool]
    text: Callable[[int], bytes]
    vocab_size: int = 1 << 31


# --- traversal ----------------------------------------------------------------------------------

def children(node: Node) -> list:
    if isinstance(node, (Seq, Alt, And)):
        return node.items
    if isinstance(node, (Rep, Not)):
        return [node.item]
    return []


def walk(node: Node):
    """Every node under ``node`` (itself included), without recursion."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def refs_of(node: Node) -> list:
    return [n for n in walk(node) if isinstance(n, Ref)]


# --- checks -------------------------------------------------------------------------------------

def _productive(node: Node, ok: Callable[[str], bool]) -> bool:
    """Whether ``node`` can derive some finite string, given which rules can (``ok``)."""
    if isinstance(node, Alt):   # the first good alternative decides, the others are not walked
        return any(_productive_walk(k, ok) for k in node.items)
    return _productive_walk(node, ok)


def _productive_walk(node: Node, ok: Callable[[str], bool]) -> bool:
    # post-order over an explicit stack: results of children are needed first
    out: dict[int, bool] = {}
    stack = [(node, False)]
    while stack:
        n, done = stack.pop()
        if not done:
            stack.append((n, True))
            stack.extend((k, False) for k in children(n))
            continue
        if isinstance(n, Seq):
            r = all(out[id(k)] for k in n.items)
        elif isinstance(n, Alt):
            r = any(out[id(k)] for k in n.items)
        elif isinstance(n, Rep):
            r = n.min == 0 or out[id(n.item)]
        elif isinstance(n, Ref):
            r = ok(n.name)
        elif isinstance(n, Term):
            r = n.build is not None or not _is_nothing(n.regex)
        else:
            r = True
        out[id(n)] = r
    return out[id(node)]


def _is_nothing(regex) -> bool:
    return isinstance(regex, Nothing)


def substring_regex(chunks: Sequence[str]):
    """The regex AST of every run of whole chunks, ``chunks[n:m]`` joined for ``n <= m`` (the
    empty string included): llguidance's ``%regex {"substring_chunks": ...}`` and XGrammar's
    ``Substring(...)``. The union of ``S_n = chunks[n] (S_{n+1})?``, each S_n built once from
    the next (a DAG of O(len(chunks)) nodes)."""
    starts: list[regex_ast.RegexNode] = [regex_ast.Empty()]
    after = None
    for c in reversed(chunks):
        lit = regex_ast.literal(c)
        after = lit if after is None else regex_ast.concat([lit, regex_ast.repeat(after, 0, 1)])
        starts.append(after)
    return regex_ast.alt(starts)


class GrammarWarning(UserWarning):
    """Something in a grammar that is probably a mistake but does not change its language."""


UNUSED_POLICIES = ("warn", "error", "ignore")


def report_unused(g: "EbnfGrammar", message: str, pos: Optional[int], unused: str) -> None:
    """A definition the grammar never uses: a warning (default), an error, or nothing."""
    if unused not in UNUSED_POLICIES:
        raise ValueError(f"unused must be one of {UNUSED_POLICIES}, got {unused!r}")
    if unused == "ignore":
        return
    err = g.error(message, pos)
    if unused == "error":
        raise err
    import warnings
    warnings.warn(str(err), GrammarWarning, stacklevel=4)


def check_grammar(g: EbnfGrammar, *, unused: str = "warn") -> None:
    """Reject what cannot be right, with positions: references to undefined rules, rules that can
    never complete (unproductive) and an empty language. Rules never used from the start rule
    are reported as ``unused`` says: "warn" (a GrammarWarning, the default: grammars written for
    other engines often carry spare rules), "error" or "ignore"."""
    if g.start not in g.rules:
        raise g.error(f"there is no start rule '{g.start}'", None)
    # each body is walked once for its references (three passes below use them)
    refs = {name: refs_of(rd.body) for name, rd in g.rules.items()}
    for rs in refs.values():
        for r in rs:
            if r.name not in g.rules:
                raise g.error(f"rule '{r.name}' is used but never defined", r.pos)
    # productivity by a worklist: when a rule becomes productive, look again at its users only
    users: dict[str, set] = {name: set() for name in g.rules}
    for name, rs in refs.items():
        for r in rs:
            users[r.name].add(name)
    productive: set[str] = set()
    work = list(g.rules)
    while work:
        if not len(work) & 4095:
            check_deadline()
        name = work.pop()
        if name not in productive and _productive(g.rules[name].body, productive.__contains__):
            productive.add(name)
            work.extend(u for u in users[name] if u not in productive)
    reach = {g.start}
    stack = [g.start]
    while stack:
        for r in refs[stack.pop()]:
            if r.name not in reach:
                reach.add(r.name)
                stack.append(r.name)
    empty = "" if g.start in productive else " (so the grammar's language is empty)"
    for name, rd in g.rules.items():
        if name in reach and name not in productive and name != g.start:
            raise g.error(f"rule '{name}' can never complete: every alternative needs itself or another "
                          f"rule that never completes{empty}", rd.pos)
    if g.start not in productive:
        rd = g.rules[g.start]
        raise g.error(f"the grammar's language is empty: the start rule '{g.start}' can never complete "
                      "(every alternative needs itself)", rd.pos)
    for name, rd in g.rules.items():
        if name not in reach:
            report_unused(g, f"rule '{name}' is never used from the start rule '{g.start}'", rd.pos, unused)


def token_ids_text(ids: Sequence[int]) -> str:
    return ",".join(str(i) for i in ids)


def resolve_tokens(g: EbnfGrammar, node: TokenRef, table: Optional[TokenTable]) -> tuple[list, list]:
    """(special ids, texts of ordinary tokens) a token reference stands for.

    Without a table, ``<[id]>`` ids are taken as special tokens and names cannot be resolved. An
    ordinary (non-special) token stands for its text: the model may then write that text with any
    tokens, as everywhere else in a grammar over text.
    """
    if node.ids is not None:
        ids = list(node.ids)
    else:
        assert node.text is not None   # a reference has ids or a name
        if table is None:
            raise g.error(f"token {node.text} needs a tokenizer to resolve its name (compile the grammar "
                          "with GrammarCompiler, or write the token as <[id]>)", node.pos)
        try:
            ids = [table.lookup(node.text)]
        except KeyError:
            raise g.error(f"there is no token {node.text} in this tokenizer", node.pos) from None
    if table is None:
        return ids, []
    specials, texts = [], []
    for i in ids:
        if not 0 <= i < table.vocab_size:
            raise g.error(f"token id {i} is outside the vocabulary (size {table.vocab_size})", node.pos)
        if table.is_special(i):
            specials.append(i)
            continue
        raw = table.text(i)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise g.error(f"token {i} is not a special token and its bytes {raw!r} are not UTF-8 text, "
                          "so a grammar over text cannot refer to it", node.pos) from None
        if not text:
            raise g.error(f"token {i} has no text (a padding id)", node.pos)
        texts.append(text)
    return specials, texts


def shared_expr(b, key, make: Callable[[], Any]) -> Any:
    """``make()`` once for all views of one builder that share their memos (``Namespaced.shared``),
    else once per call: for builder-level expressions only (never rules, whose names are a view's),
    such as a format's language or a pattern's, alike in every schema of a tool set.

    Example::

        digits = shared_expr(b, ("digits",), lambda: b.re_repeat(b.re_char_ranges([(48, 57)], False), 1, -1))
    """
    memo = getattr(b, "shared", None)
    if memo is None:
        return make()
    made = memo.get(key)
    if made is None:
        made = memo[key] = make()
    return made


def without_texts(b, texts) -> ExprId:
    """The expression of the strings that hold none of ``texts`` (non-empty strings), once per builder
    for views that share their memos: free text up to a marker, a value a reader ends at a marker.

    Example::

        body = without_texts(b, ["</tool_call>"])   # any text but one holding the end tag
    """
    texts = tuple(sorted(set(texts)))

    def make() -> ExprId:
        anything = b.re_any_string()
        return b.re_not(b.re_concat([anything, b.re_or([b.re_literal(t) for t in texts]), anything]))
    return shared_expr(b, ("without", texts), make)


class Namespaced:
    """A view of a ``GrammarBuilder`` whose named rules get a prefix.

    Front-ends name their rules (``b.rule("value")``), and the builder merges rules of the same
    name; two front-ends (or one used twice) in one builder must therefore keep their names
    apart. Everything but ``rule`` goes straight to the builder.

    Example::

        a = build_json_schema(Namespaced(b, "tool1/"), schema1)
        c = build_json_schema(Namespaced(b, "tool2/"), schema2)
    """

    def __init__(self, builder, prefix: str, shared: Optional[dict] = None):
        self._b = builder
        self._prefix = prefix
        # memos of builder-level expressions that views of one builder may share (a structural
        # tag's tools: one string encoding of a format for all of them); a view of a view shares
        # its parent's
        self.shared = shared if shared is not None else getattr(builder, "shared", None)

    def rule(self, name: str = ""):
        return self._b.rule(self._prefix + name if name else "")

    def __getattr__(self, attr):
        value = getattr(self._b, attr)
        if callable(value):   # a method of the builder: kept, so that nested views resolve it once, not per call
            self.__dict__[attr] = value
        return value


class Excluding:
    """A view of a ``GrammarBuilder`` whose lexemes never hold any of ``texts`` (each lexeme's
    language intersected with "does not contain"; a literal that holds one is a ``GrammarError``).

    Exact where no excluded text can span two lexemes: e.g. ``</parameter>`` inside a JSON value,
    whose ``<`` only a string lexeme holds. Qwen3-Coder's parser ends a parameter at the first
    ``</parameter>``, so a JSON argument is built through this view; the model may still write the
    text escaped (``<\\/parameter>``).

    Example::

        value = build_json_schema(Excluding(b, ["</parameter>"], "qwen_xml /properties/a"), schema)
    """

    def __init__(self, builder, texts, what: str):
        self._b = builder
        self._texts = tuple(texts)
        self._what = what
        self.shared = getattr(builder, "shared", None)
        self._without = without_texts(builder, self._texts)   # (one per builder: lexemes alike stay alike)

    def lexeme(self, expr: ExprId, name: str = "", lazy: bool = False, max_tokens: int = 0) -> Symbol:
        return self._b.lexeme(self._b.re_and([expr, self._without]), name, lazy, max_tokens)

    def literal(self, text: str, name: str = "") -> Symbol:
        for t in self._texts:
            if t in text:
                raise GrammarError(f"{self._what}: the text {text!r} holds {t!r}, which cannot be written here")
        return self._b.literal(text, name)

    def __getattr__(self, attr):
        return getattr(self._b, attr)
