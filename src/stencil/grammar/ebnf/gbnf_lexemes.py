"""From a character-level grammar (GBNF) to rules over lexemes, keeping the language exact.

A GBNF grammar has no lexer: every string literal and class is a piece of the text. stencil's
lexer is greedy (a lexeme ends only when the next byte cannot extend it), so turning pieces into
lexemes carelessly changes the language: with ``x ::= "a"+ | "(" y ")"`` and ``y ::= x x``, one
``a+`` lexeme would swallow both halves of ``aa``. The steps:

1. Regular rules become regexes: a rule is regular when it references only regular rules and is
   not recursive, or only recursive in tail position (``ws ::= ([ \\t\\n] ws)?`` is
   ``[ \\t\\n]*``; ``r ::= r "x" | "y"`` is ``y x*``).
2. In the other rules, every maximal run of regular pieces in a sequence becomes one lexeme;
   everything else becomes rules.
3. Greedy-safety check: for lexemes X and Y that the parser may allow at the same moment
   (:mod:`stencil.grammar.ebnf.greedy` finds them over LR(1) item sets, so that contexts that never
   meet are not mixed; past a work limit it falls back to FOLLOW sets), with C the characters
   that may follow X there: if some non-empty word w of X and some c in C (up to its UTF-8 first
   byte) make w·c the start of a word of Y, a greedy lexer could run past the end of X, so Y is
   split into lexemes for its parts (a concatenation into its items, a literal into its
   characters, ...), and the check runs again until nothing can run on. Splitting ends at
   single-character lexemes, and a grammar of those is exact by construction, so this always
   ends with an exact grammar; most grammars need no split at all (json.gbnf, chess.gbnf,
   list.gbnf keep their big lexemes).

Why the check suffices: while the lexer reads a word w of the lexeme X the grammar wants, X is
alive, so the lexer cannot stop early; at the end of w, the next byte starts the next piece
(a c in FOLLOW(X)), and by the check no allowed lexeme stays alive on w·c, so the lexer ends
the lexeme there, handing the parser every lexeme that matched w. Special tokens are not bytes:
they always end the lexeme before them, so nothing follows a lexeme "through" a special token.

Example::

    b = GrammarBuilder()
    start = emit_character_grammar(b, parse_gbnf(text), tokens=None)
    grammar = b.build(start)
"""
from __future__ import annotations

from typing import Optional

from stencil.grammar.regex import ast as regex_ast
from stencil.grammar.regex import unicode
from stencil.grammar.ebnf.ast import (Alt, EbnfGrammar, JsonSchema, Node, Ref, Rep, Seq, Term, TokenRef,
                                  TokenTable, refs_of, resolve_tokens)
from stencil.grammar.ebnf.greedy import unsafe_lexemes
from stencil.grammar.regex.ast import first_chars
from stencil.grammar.regex.decide import can_run_into_all, intersects, intersects_all
from stencil.grammar.regex.unicode import ranges_intersect
from stencil.grammar.regex import build_regex
from stencil._core import GrammarError, Symbol

__all__ = ["emit_character_grammar", "ANY_TEXT"]

#: one or more characters: what a negated token reference ``!<...>`` stands for
ANY_TEXT = regex_ast.Repeat(regex_ast.CharClass(((0, 0xD7FF), (0xE000, unicode.MAX_CP))), 1, None)


class _Special(Node):
    def __init__(self, ids, name):
        super().__init__()
        self.ids, self.name = ids, name


class _Atomic(Node):
    """A rule that must stay one lexeme (XGrammar's ``lazy``, ``max_tokens``, ``max_chars``): never
    merged into a longer run nor split. The analysis reads ``regex``, a superset of its text when
    ``max_chars`` bounds it (which can only make it split other lexemes more, never less)."""

    def __init__(self, term: Term):
        super().__init__(pos=term.pos)
        self.regex, self.name = term.regex, term.name
        self.lazy, self.max_tokens, self.max_chars = term.lazy, term.max_tokens, term.max_chars


def _text(node):
    """The regex a lexeme's text is analysed with."""
    return node.regex if isinstance(node, _Atomic) else node


# --- step 0: token references -------------------------------------------------------------------

def _resolve(g: EbnfGrammar, node: Node, tokens: Optional[TokenTable]) -> Node:
    """A copy of ``node`` with token references replaced by special-token nodes and texts."""
    if isinstance(node, TokenRef):
        if node.negated:
            return Term(ANY_TEXT, pos=node.pos)
        specials, texts = resolve_tokens(g, node, tokens)
        name = node.shown()
        alts: list = [Term(regex_ast.literal(t), pos=node.pos) for t in texts]
        if specials:
            alts.append(_Special(tuple(specials), name))
        return alts[0] if len(alts) == 1 else Alt(alts, pos=node.pos)
    if isinstance(node, JsonSchema):
        raise g.error("%json is not part of GBNF", node.pos)
    if isinstance(node, Term) and (node.lazy or node.max_tokens or node.max_chars is not None):
        return _Atomic(node)
    if isinstance(node, (Seq, Alt)):
        return type(node)([_resolve(g, k, tokens) for k in node.items], pos=node.pos)
    if isinstance(node, Rep):
        return Rep(_resolve(g, node.item, tokens), node.min, node.max, pos=node.pos)
    return node


# --- step 1: regular rules ----------------------------------------------------------------------

def _sccs(graph: dict) -> list:
    """Strongly connected components, each listed after every component it reaches (Tarjan,
    without recursion)."""
    index: dict = {}
    low: dict = {}
    on: set = set()
    stack: list = []
    out: list = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph[w])))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


MAX_REGEX_DEPTH = 48


def _depth_visit(node, kids) -> int:
    return 1 + max(kids, default=0)


class _Regular:
    """Regex forms of nodes, where they have one. Concatenations and alternations are built
    without flattening nested ones: rules share their regexes as a DAG, and flattening would
    copy a long chain of rules over and over."""

    def __init__(self):
        self.rules: dict[str, object] = {}   # regular rule -> regex
        self._memo: dict[int, tuple[Node, object]] = {}   # id(node) -> (node, regex): the node kept alive
        self._depths: dict = {}                # postorder memo of regex depths

    def of(self, node: Node):
        key = id(node)
        if key in self._memo:
            return self._memo[key][1]
        r = self._compute(node)
        self._memo[key] = (node, r)
        return r

    def _compute(self, node: Node):
        if isinstance(node, Term):
            return node.regex
        if isinstance(node, Ref):
            return self.rules.get(node.name)
        if isinstance(node, Seq):
            parts = [self.of(k) for k in node.items]
            return None if any(p is None for p in parts) else regex_ast.concat(parts, flatten=False)
        if isinstance(node, Alt):
            parts = [self.of(k) for k in node.items]
            return None if any(p is None for p in parts) else regex_ast.alt(parts, flatten=False)
        if isinstance(node, Rep):
            p = self.of(node.item)
            return None if p is None else regex_ast.repeat(p, node.min, node.max)
        return None  # special tokens

    def linear(self, name: str, node: Node, left: bool):
        """(A, B) with node = A | B·name (left: A | name·B), or None."""
        mentions = lambda n: any(r.name == name for r in refs_of(n))  # noqa: E731
        if isinstance(node, Ref) and node.name == name:
            return regex_ast.NOTHING, regex_ast.EMPTY
        if not mentions(node):
            r = self.of(node)
            return None if r is None else (r, regex_ast.NOTHING)
        if isinstance(node, Seq):
            items = node.items
            edge, rest = (items[0], items[1:]) if left else (items[-1], items[:-1])
            if any(mentions(k) for k in rest):
                return None
            parts = [self.of(k) for k in rest]
            if any(p is None for p in parts):
                return None
            ab = self.linear(name, edge, left)
            if ab is None:
                return None
            fix = regex_ast.concat(parts, flatten=False)
            return tuple(regex_ast.concat([x, fix] if left else [fix, x], flatten=False) for x in ab)
        if isinstance(node, Alt):
            parts = [self.linear(name, k, left) for k in node.items]
            if any(p is None for p in parts):
                return None
            return regex_ast.alt([p[0] for p in parts], flatten=False), regex_ast.alt([p[1] for p in parts], flatten=False)
        if isinstance(node, Rep) and node.min == 0 and node.max == 1:
            ab = self.linear(name, node.item, left)
            return None if ab is None else (regex_ast.alt([regex_ast.EMPTY, ab[0]]), ab[1])
        return None

    def analyze(self, bodies: dict) -> None:
        graph = {n: list(dict.fromkeys(r.name for r in refs_of(body))) for n, body in bodies.items()}
        for comp in _sccs(graph):
            if len(comp) != 1:
                continue
            name = comp[0]
            body = bodies[name]
            if name not in graph[name]:
                r = self.of(body)
            else:
                r = None
                for left in (False, True):
                    ab = self.linear(name, body, left)
                    if ab is not None:
                        star = regex_ast.repeat(ab[1], 0, None)
                        r = regex_ast.concat([ab[0], star] if left else [star, ab[0]], flatten=False)
                        break
            # A rule nested too deeply as a regex stays a rule: deep regexes cost the core
            # (and the conflict analysis) time quadratic in their depth.
            if r is not None and regex_ast.postorder(r, _depth_visit, self._depths) <= MAX_REGEX_DEPTH:
                self.rules[name] = r
        self._memo.clear()


# --- steps 2 and 3: rules over lexemes ----------------------------------------------------------

def _single_char(node) -> bool:
    return isinstance(node, regex_ast.CharClass) or (isinstance(node, regex_ast.Literal) and len(node.text) == 1)


class _Cfg:
    """Rules over lexemes. Symbols: nonterminal i >= 0, lexeme k as ~k (negative)."""

    def __init__(self):
        self.alts: list[list[list[int]]] = []
        self.names: list[str] = []
        self.lex: list = []            # regex node, or _Special
        self.lex_names: list[str] = []
        self._lex_key: dict = {}
        self._split_nt: dict[int, int] = {}
        self._used_names: set[str] = set()

    def nt(self, name: str) -> int:
        # names must be unique: the builder merges rules of the same name
        if name in self._used_names:
            name = f"{name}~{len(self.alts)}"
        self._used_names.add(name)
        self.alts.append([])
        self.names.append(name)
        return len(self.alts) - 1

    def lexeme(self, node, name: str) -> int:
        key = node if _single_char(node) else ("special", node.ids) if isinstance(node, _Special) else id(node)
        k = self._lex_key.get(key)
        if k is None:
            k = len(self.lex)
            self.lex.append(node)
            self.lex_names.append(name)
            self._lex_key[key] = k
        return ~k

    def repeat(self, sym: int, lo: int, hi: Optional[int], owner: str) -> int:
        if hi is None:
            tail = self.nt(f"{owner}~star")
            self.alts[tail] = [[], [tail, sym]]   # left recursion suits Earley
        else:
            tail = self.nt(f"{owner}~rep")
            self.alts[tail] = [[]]
            for _ in range(hi - lo):
                t = self.nt(f"{owner}~rep")
                self.alts[t] = [[], [sym, tail]]
                tail = t
        if lo == 0:
            return tail
        n = self.nt(f"{owner}~rep")
        self.alts[n] = [[sym] * lo + [tail]]
        return n

    # -- splitting ------------------------------------------------------------------------------
    def piece(self, node, owner: str) -> list:
        """Symbols for the regex ``node`` as one lexeme ([] for the empty string)."""
        if isinstance(node, regex_ast.Empty):
            return []
        if isinstance(node, regex_ast.Nothing):
            return [self.nt(f"{owner}~nothing")]   # no alternative: pruned by build
        name = f'"{node.text}"' if isinstance(node, regex_ast.Literal) else f"{owner}~part"
        return [self.lexeme(node, name)]

    def one_level(self, node, owner: str) -> list:
        """Symbols for the regex ``node`` with its direct parts as lexemes."""
        if isinstance(node, regex_ast.Literal):
            return [self.lexeme(regex_ast.Literal(c), repr(c)) for c in node.text]
        if isinstance(node, regex_ast.Concat):
            return [s for k in node.items for s in self.piece(k, owner)]
        if isinstance(node, regex_ast.Alt):
            n = self.nt(f"{owner}~alt")
            self.alts[n] = [self.piece(k, owner) for k in node.items]
            return [n]
        if isinstance(node, regex_ast.Repeat):
            body = self.piece(node.item, owner)
            if not body:
                return []
            return [self.repeat(body[0], node.min, node.max, owner)]
        raise AssertionError(f"cannot split {type(node).__name__}")

    def split(self, k: int) -> None:
        """Replace lexeme k everywhere by rules over lexemes for its parts."""
        node = self.lex[k]
        if isinstance(node, _Atomic):
            raise GrammarError(f"GBNF grammar: rule '{node.name}' has lazy, max_tokens or max_chars, so it must "
                               "stay one lexeme, but then stencil's greedy lexer could not tell where it ends "
                               "next to the text around it (it could run on into what follows, as [^]* into "
                               "a closing tag); let it exclude the first character of what follows it, or use "
                               "the Lark form with stop=\"...\"")
        n = self._split_nt.get(k)
        if n is None:
            n = self.nt(f"{self.lex_names[k]}~split")
            self._split_nt[k] = n
            self.alts[n] = [self.one_level(self.lex[k], self.lex_names[k])]
        sym = ~k
        for alts in self.alts:
            for alt in alts:
                for i, s in enumerate(alt):
                    if s == sym:
                        alt[i] = n

    # -- analysis -------------------------------------------------------------------------------
    def analyze(self, start: int):
        """FIRST/FOLLOW at two levels: code points (``*_chars``) and lexeme ids (``*_lex``).

        Worklists, not sweeps to a fixpoint: a long chain of rules must not cost a sweep per
        link."""
        used = self.reachable(start)
        fs = _Firsts(self, used)
        lex_follow_c, lex_follow_l = fs.lexeme_follows(used)
        return fs.lex_first, lex_follow_c, lex_follow_l, fs.first_l[start], used

    def reachable(self, start: int) -> list:
        seen = {start}
        stack = [start]
        while stack:
            for alt in self.alts[stack.pop()]:
                for s in alt:
                    if s >= 0 and s not in seen:
                        seen.add(s)
                        stack.append(s)
        return sorted(seen)

    def _ask_compatible(self, lexemes: list, lex_first: list, cache: dict) -> None:
        """Ask the core at once, for the pairs of text lexemes that can start alike, whether they
        share a word (into ``cache``, which :meth:`_compatible` reads)."""
        text = sorted(k for k in lexemes if not isinstance(self.lex[k], _Special))
        pairs = [(x, y) for i, x in enumerate(text) for y in text[i + 1:]
                 if (x, y) not in cache and ranges_intersect(lex_first[x], lex_first[y])]
        cache.update(zip(pairs, intersects_all([(_text(self.lex[x]), _text(self.lex[y])) for x, y in pairs])))

    def _runs(self, triples: list, cache: dict) -> list:
        """can_run_into for each (x, chars, y) of lexeme ids, the new ones asked of the core at once."""
        new = [t for t in dict.fromkeys(triples) if t not in cache]
        cache.update(zip(new, can_run_into_all([(_text(self.lex[x]), c, _text(self.lex[y])) for x, c, y in new])))
        return [cache[t] for t in triples]

    def _compatible(self, x: int, y: int, cache: dict) -> bool:
        """Whether lexemes x and y can match the same text (then the parser gets both)."""
        a, b = self.lex[x], self.lex[y]
        if isinstance(a, _Special) or isinstance(b, _Special):
            return isinstance(a, _Special) and isinstance(b, _Special) and bool(set(a.ids) & set(b.ids))
        key = (min(x, y), max(x, y))
        if key not in cache:
            cache[key] = intersects(_text(a), _text(b))
        return cache[key]

    def make_greedy_safe(self, start: int) -> None:
        run_cache: dict = {}
        compat_cache: dict = {}
        in_context = True
        while True:
            lex_first, follow_c, follow_l, start_l, used = self.analyze(start)
            self._ask_compatible(sorted({~s for a in used for alt in self.alts[a] for s in alt if s < 0}),
                                 lex_first, compat_cache)
            # the context-aware analysis, until it once reaches its work limit (splits only grow
            # the grammar, so it would reach it again)
            to_split = None
            if in_context:
                to_split = self._unsafe_in_context(start, used, lex_first, run_cache, compat_cache)
                in_context = to_split is not None
            if to_split is None:
                to_split = self._unsafe_anywhere(start_l, used, lex_first, follow_c, follow_l,
                                                 run_cache, compat_cache)
            if not to_split:
                return
            for y in sorted(to_split):
                self.split(y)

    def _unsafe_in_context(self, start, used, lex_first, run_cache, compat_cache):
        lex_null = [False if isinstance(n, _Special) else first_chars(_text(n))[1] for n in self.lex]
        rules = [(a, tuple(alt)) for a in used for alt in self.alts[a]]

        def compat(x, y):
            return ranges_intersect(lex_first[x], lex_first[y]) and self._compatible(x, y, compat_cache) \
                if not (isinstance(self.lex[x], _Special) or isinstance(self.lex[y], _Special)) \
                else self._compatible(x, y, compat_cache)

        return unsafe_lexemes(rules, start, len(self.alts), lex_first, lex_null,
                              lambda k: not isinstance(self.lex[k], _Special),
                              lambda k: not isinstance(self.lex[k], _Special) and not _single_char(self.lex[k]),
                              compat, lambda triples: self._runs(triples, run_cache))

    def _unsafe_anywhere(self, start_l, used, lex_first, follow_c, follow_l, run_cache, compat_cache):
        """The context-free fallback: lexemes allowed together are over-approximated by FOLLOW."""
        live = sorted({~s for a in used for alt in self.alts[a] for s in alt if s < 0})
        # Lexemes the parser may allow at once: those that can start the text, and those
        # that can follow some lexeme Z or another lexeme matching the same text as Z.
        groups = [start_l]
        for z in live:
            group = set(follow_l[z])
            for z2 in live:
                if z2 != z and ranges_intersect(lex_first[z], lex_first[z2]) \
                        and self._compatible(z, z2, compat_cache):
                    group |= follow_l[z2]
            groups.append(frozenset(group))
        triples: dict = {}   # (x, chars after x, y) in the order met
        for group in set(groups):
            text = [k for k in group if not isinstance(self.lex[k], _Special)]
            multi = [k for k in text if not _single_char(self.lex[k])]
            for x in text:
                c = follow_c[x]
                if c:
                    triples.update(((x, c, y), None) for y in multi if ranges_intersect(lex_first[x], lex_first[y]))
        asked = list(triples)
        return {y for (_, _, y), runs in zip(asked, self._runs(asked, run_cache)) if runs}

    # -- emission -------------------------------------------------------------------------------
    def emit(self, b, start: int) -> Symbol:
        used = self.reachable(start)
        rule = {a: b.rule(self.names[a]) for a in used}
        lex_sym: dict[int, Symbol] = {}

        def sym(s: int) -> Symbol:
            if s >= 0:
                return rule[s]
            k = ~s
            if k not in lex_sym:
                node = self.lex[k]
                if isinstance(node, _Special):
                    lex_sym[k] = b.special_token(list(node.ids), node.name)
                elif isinstance(node, _Atomic):
                    e = build_regex(b, node.regex)
                    if node.max_chars is not None:
                        e = b.re_and([e, b.re_repeat(b.re_char_ranges([(0, 0x10FFFF)], False), 0, node.max_chars)])
                    lex_sym[k] = b.lexeme(e, node.name, node.lazy, node.max_tokens)
                else:
                    lex_sym[k] = b.lexeme(build_regex(b, node), self.lex_names[k])
            return lex_sym[k]

        for a in used:
            for alt in self.alts[a]:
                b.add_alternative(rule[a], [sym(s) for s in alt])
        return rule[start]


class _Firsts:
    """FIRST sets of a _Cfg's rules at two levels, code points (``first_c``) and lexeme ids
    (``first_l``), and which rules are nullable; then FOLLOW sets of its lexemes."""

    def __init__(self, cfg: "_Cfg", used: list):
        self.cfg = cfg
        self.lex_first, self.lex_null = [], []
        for node in cfg.lex:
            f, nul = ((), False) if isinstance(node, _Special) else first_chars(_text(node))
            self.lex_first.append(f)
            self.lex_null.append(nul)
        n = len(cfg.alts)
        self.null = [False] * n
        self.first_c: list = [()] * n
        self.first_l: list = [frozenset()] * n
        self._solve(used)

    def seq(self, alt, i: int) -> tuple:
        """(code points, lexemes, nullable) of what ``alt[i:]`` can start with."""
        chars, lexs = [], set()
        for sym in alt[i:]:
            if sym < 0:
                chars.extend(self.lex_first[~sym])
                lexs.add(~sym)
                if not self.lex_null[~sym]:
                    return chars, lexs, False
            else:
                chars.extend(self.first_c[sym])
                lexs |= self.first_l[sym]
                if not self.null[sym]:
                    return chars, lexs, False
        return chars, lexs, True

    def _solve(self, used: list) -> None:
        alts = self.cfg.alts
        users: dict[int, set] = {a: set() for a in used}
        for a in used:
            for alt in alts[a]:
                for sym in alt:
                    if sym >= 0:
                        users[sym].add(a)
        first_c, first_l, null = self.first_c, self.first_l, self.null
        work = list(used)
        queued = set(work)
        while work:
            a = work.pop()
            queued.discard(a)
            chars, lexs, nul = list(first_c[a]), set(first_l[a]), null[a]
            for alt in alts[a]:
                c, l, z = self.seq(alt, 0)
                chars.extend(c)
                lexs |= l
                nul = nul or z
            new_c, new_l = unicode.normalize(chars), frozenset(lexs)
            if new_c != first_c[a] or new_l != first_l[a] or nul != null[a]:
                first_c[a], first_l[a], null[a] = new_c, new_l, nul
                for u in users[a]:
                    if u not in queued:
                        queued.add(u)
                        work.append(u)

    def lexeme_follows(self, used: list) -> tuple[list, list]:
        """FOLLOW of every lexeme as (code points, lexeme ids): a fixed part (what the rest of
        each alternative can start with) plus what flows from the left-hand side through
        nullable rests (edges a -> symbol)."""
        alts, nl, n = self.cfg.alts, len(self.cfg.lex), len(self.cfg.alts)
        lex_c: list = [[] for _ in range(nl)]
        lex_l: list = [set() for _ in range(nl)]
        base_c: dict[int, list] = {a: [] for a in used}
        base_l: dict[int, set] = {a: set() for a in used}
        flows: dict[int, set] = {a: set() for a in used}   # a -> symbols whose FOLLOW gets FOLLOW(a)
        for a in used:
            for alt in alts[a]:
                for i, sym in enumerate(alt):
                    c, l, z = self.seq(alt, i + 1)
                    if sym < 0:
                        lex_c[~sym].extend(c)
                        lex_l[~sym] |= l
                    else:
                        base_c[sym].extend(c)
                        base_l[sym] |= l
                    if z:
                        flows[a].add(sym)
        follow_c: list = [()] * n
        follow_l: list = [frozenset()] * n
        for a in used:
            follow_c[a], follow_l[a] = unicode.normalize(base_c[a]), frozenset(base_l[a])
        _propagate_follows(used, flows, follow_c, follow_l)
        for a in used:
            for sym in flows[a]:
                if sym < 0:
                    lex_c[~sym].extend(follow_c[a])
                    lex_l[~sym] |= follow_l[a]
        return [unicode.normalize(c) for c in lex_c], [frozenset(l) for l in lex_l]


def _propagate_follows(used: list, flows: dict, follow_c: list, follow_l: list) -> None:
    """FOLLOW(a) flows into FOLLOW(sym) along each edge a -> sym, by worklist, to a fixpoint."""
    work = list(used)
    queued = set(work)
    while work:
        a = work.pop()
        queued.discard(a)
        for sym in flows[a]:
            if sym < 0:
                continue
            new_c = unicode.union(follow_c[sym], follow_c[a])
            new_l = follow_l[sym] | follow_l[a]
            if new_c != follow_c[sym] or new_l != follow_l[sym]:
                follow_c[sym], follow_l[sym] = new_c, new_l
                if sym not in queued:
                    queued.add(sym)
                    work.append(sym)


class _Converter:
    def __init__(self, cfg: _Cfg, reg: _Regular, bodies: dict):
        self.cfg, self.reg, self.bodies = cfg, reg, bodies
        self.rule_nt: dict[str, int] = {}
        self.pending: list[str] = []   # rules referenced but not converted yet (no recursion)
        self.counter = 0

    def rule(self, name: str) -> int:
        n = self.rule_nt.get(name)
        if n is None:
            n = self.cfg.nt(name)
            self.rule_nt[name] = n
            self.pending.append(name)
        return n

    def convert_all(self) -> None:
        while self.pending:
            name = self.pending.pop()
            n = self.rule_nt[name]
            body = self.bodies[name]
            reg = self.reg.rules.get(name)
            if reg is not None:
                self.cfg.alts[n] = [self.run_syms([reg], name)]
            else:
                items = body.items if isinstance(body, Alt) else [body]
                self.cfg.alts[n] = [self.seq(k, name) for k in items]

    def run_syms(self, run: list, owner: str) -> list:
        r = regex_ast.concat(run, flatten=False)
        if isinstance(r, regex_ast.Empty):
            return []
        self.counter += 1
        name = f'"{r.text}"' if isinstance(r, regex_ast.Literal) else f"{owner}:{self.counter}"
        return [self.cfg.lexeme(r, name)]

    def seq(self, node: Node, owner: str) -> list:
        items = node.items if isinstance(node, Seq) else [node]
        out: list = []
        run: list = []
        for it in items:
            r = self.reg.of(it)
            if r is not None:
                run.append(r)
                continue
            out.extend(self.run_syms(run, owner))
            run = []
            if isinstance(it, Seq):
                out.extend(self.seq(it, owner))
            else:
                out.append(self.sym(it, owner))
        out.extend(self.run_syms(run, owner))
        return out

    def sym(self, node: Node, owner: str) -> int:
        cfg = self.cfg
        if isinstance(node, Ref):
            return self.rule(node.name)
        if isinstance(node, (_Special, _Atomic)):
            return cfg.lexeme(node, node.name)
        if isinstance(node, (Alt, Seq)):
            n = cfg.nt(f"{owner}~group")
            items = node.items if isinstance(node, Alt) else [node]
            cfg.alts[n] = [self.seq(k, owner) for k in items]
            return n
        if isinstance(node, Rep):
            r = self.reg.of(node.item)
            if r is not None:
                item = self.run_syms([r], owner)
                item_sym = item[0] if item else None
            else:
                body = self.seq(node.item, owner)
                item_sym = body[0] if len(body) == 1 else None
                if item_sym is None:
                    item_sym = cfg.nt(f"{owner}~item")
                    cfg.alts[item_sym] = [body]
            if item_sym is None:   # repeating the empty string
                n = cfg.nt(f"{owner}~empty")
                cfg.alts[n] = [[]]
                return n
            return cfg.repeat(item_sym, node.min, node.max, owner)
        raise AssertionError(f"unexpected node {type(node).__name__}")


def emit_character_grammar(b, g: EbnfGrammar, tokens: Optional[TokenTable]) -> Symbol:
    """Emit a checked character-level grammar (GBNF) into builder ``b``; returns the start rule."""
    bodies = {name: _resolve(g, rd.body, tokens) for name, rd in g.rules.items()}
    reg = _Regular()
    reg.analyze(bodies)
    cfg = _Cfg()
    conv = _Converter(cfg, reg, bodies)
    start = conv.rule(g.start)
    conv.convert_all()
    cfg.make_greedy_safe(start)
    return cfg.emit(b, start)
