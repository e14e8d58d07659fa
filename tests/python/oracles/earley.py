"""The oracle side of a CFG: desugaring, the greedy-safety check, a character-level Earley
recognizer, and sampling."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from .cfg import (
    CFG, Choice, Cls, Delim, LEXEME_TYPES, Lit, Many, Opt, Plus, R, REGEX_LEXEME_EXCLUDED, Ref, RegexLex, Rep,
    SAMPLE_CHARS, Seq, Special, Star, StarCls, Word, _sym_str, random_regex_lexeme,
)
from .text import Language, MAX_CP, ranges_contain, representatives, sorted_boundaries


# ------------------------------------------------------------------ desugaring (oracle side)

def desugar(cfg: CFG):
    """Plain lexeme-level rules: ``(rules, start)`` with rules = list of (lhs, tuple rhs) where
    rhs symbols are nonterminal names (str) or lexeme / Special objects."""
    rules = []
    fresh = {}

    def sym(s):
        if isinstance(s, Ref):
            return s.name
        if isinstance(s, LEXEME_TYPES) or isinstance(s, Special):
            return s
        if isinstance(s, StarCls):
            return sym(Opt(Plus(s.ranges, s.negate)))
        if s in fresh:
            return fresh[s]
        n = f"_{len(fresh)}"
        fresh[s] = n
        if isinstance(s, Opt):
            rules.extend([(n, ()), (n, (sym(s.item),))])
        elif isinstance(s, Star):
            rules.extend([(n, ()), (n, (n, sym(s.item)))])
        elif isinstance(s, Many):
            x = sym(s.item)
            rules.extend([(n, (x,)), (n, (n, x))])
        elif isinstance(s, Rep):
            x = sym(s.item)
            if s.hi < 0:
                tail = sym(Star(s.item))
                rules.append((n, (x,) * s.lo + (tail,)))
            else:
                for k in range(s.lo, s.hi + 1):
                    rules.append((n, (x,) * k))
        elif isinstance(s, Seq):
            rules.append((n, tuple(sym(x) for x in s.items)))
        elif isinstance(s, Choice):
            for x in s.items:
                rules.append((n, (sym(x),)))
        else:
            raise TypeError(s)
        return n

    for name, alts in cfg.rules.items():
        for alt in alts:
            rules.append((name, tuple(sym(s) for s in alt)))
    return rules, cfg.start


def _nullable_and_first(rules):
    nts = {lhs for lhs, _ in rules}
    nullable = set()
    first = {n: set() for n in nts}   # lexeme-level FIRST (lexemes / Special)
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            all_null = True
            for s in rhs:
                add = first[s] if isinstance(s, str) else {s}
                if not add <= first[lhs]:
                    first[lhs] |= add
                    changed = True
                if not (isinstance(s, str) and s in nullable):
                    all_null = False
                    break
            if all_null and lhs not in nullable:
                nullable.add(lhs)
                changed = True
    return nullable, first


def productive_rules(rules):
    """Drop the rules that use a nonterminal deriving no terminal string."""
    productive = set()
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            if lhs not in productive and all(not isinstance(s, str) or s in productive for s in rhs):
                productive.add(lhs)
                changed = True
    kept = [(lhs, r) for lhs, r in rules if lhs in productive and all(not isinstance(s, str) or s in productive for s in r)]
    return kept, productive


def lexeme_follow(rules, start):
    """FOLLOW at the lexeme level: for each lexeme, the lexemes/specials that can come next
    ("$" for the end of input)."""
    nullable, first = _nullable_and_first(rules)
    follow = {}

    def fol(x):
        return follow.setdefault(x, set())

    fol(start).add("$")
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            for i, s in enumerate(rhs):
                acc = set()
                rest_null = True
                for t in rhs[i + 1:]:
                    acc |= first[t] if isinstance(t, str) else {t}
                    if not (isinstance(t, str) and t in nullable):
                        rest_null = False
                        break
                if rest_null:
                    acc |= fol(lhs)
                if not acc <= fol(s):
                    fol(s).update(acc)
                    changed = True
    return {k: v for k, v in follow.items() if not isinstance(k, str)}


def lexeme_nfa(lx):
    """(transitions, accepting): transitions[state] = list of (ranges, negate, next).

    A RegexLex is over-approximated by open [^<>«»]* close (its regex has none of the delimiter
    characters), which only makes greedy_safe more cautious (a larger language can only add
    extensions and first characters)."""
    if isinstance(lx, Word):
        lx = Plus(lx.ranges)  # a superset
    if isinstance(lx, RegexLex):
        n = len(lx.open)
        body = tuple((ord(c), ord(c)) for c in REGEX_LEXEME_EXCLUDED)
        c = ord(lx.close)
        trans = [[(((ord(ch), ord(ch)),), False, i + 1)] for i, ch in enumerate(lx.open)]
        trans.append([(body, True, n), (((c, c),), False, n + 1)])
        trans.append([])
        return trans, {n + 1}
    if isinstance(lx, Lit):
        trans = [[(((ord(c), ord(c)),), False, i + 1)] for i, c in enumerate(lx.text)] + [[]]
        return trans, {len(lx.text)}
    if isinstance(lx, Cls):
        return [[(lx.ranges, lx.negate, 1)], []], {1}
    if isinstance(lx, Plus):
        return [[(lx.ranges, lx.negate, 1)], [(lx.ranges, lx.negate, 1)]], {1}
    if isinstance(lx, Delim):
        n = len(lx.open)
        c = ord(lx.close)
        trans = [[(((ord(ch), ord(ch)),), False, i + 1)] for i, ch in enumerate(lx.open)]
        trans.append([(((c, c),), True, n), (((c, c),), False, n + 1)])
        trans.append([])
        return trans, {n + 1}
    raise TypeError(lx)


def _lexeme_edges(lx) -> set:
    out = set()
    if isinstance(lx, Lit):
        for c in lx.text:
            out.update((ord(c), ord(c) + 1))
    elif isinstance(lx, (Cls, Plus, Word)):
        for a, b in lx.ranges:
            out.update((a, b + 1))
        for w in getattr(lx, "exclude", ()):
            for c in w:
                out.update((ord(c), ord(c) + 1))
    elif isinstance(lx, (Delim, RegexLex)):
        for c in lx.open + lx.close + (REGEX_LEXEME_EXCLUDED if isinstance(lx, RegexLex) else ""):
            out.update((ord(c), ord(c) + 1))
    return out


def _nfa_step(nfa, states, cp):
    trans = nfa[0]
    return frozenset(t for s in states for ranges, neg, t in trans[s] if ranges_contain(ranges, neg, cp))


def greedy_safe(cfg: CFG) -> str | None:
    """None when greedy lexing cannot change the language of ``cfg`` (see the module docstring),
    else the reason."""
    rules, _ = productive_rules(desugar(cfg)[0])
    lexemes = {s for _, rhs in rules for s in rhs if isinstance(s, LEXEME_TYPES)}
    for lx in lexemes:
        if isinstance(lx, Lit) and not lx.text:
            return "empty literal"
        if isinstance(lx, Delim) and (len(lx.close) != 1 or not lx.open):
            return f"unsupported delimited lexeme {lx}"
    edges = set()
    for lx in lexemes:
        edges |= _lexeme_edges(lx)
    for a, b in cfg.ignore or ():
        edges.update((a, b + 1))
    reps = [cp for cp in representatives([(0, 0xD7FF), (0xE000, MAX_CP)], sorted_boundaries(edges))]
    nfas = {lx: lexeme_nfa(lx) for lx in lexemes}
    first_chars = {lx: {c for c in reps if _nfa_step(nfas[lx], {0}, c)} for lx in lexemes}
    ws = {c for c in reps if ranges_contain(cfg.ignore or (), False, c)}
    for lx in lexemes:
        if first_chars[lx] & ws:
            return f"ignored white space can start lexeme {_sym_str(lx)}"
    follow = lexeme_follow(rules, cfg.start)
    for x in lexemes:
        nx = nfas[x]
        ext = set()
        for y in lexemes:
            ny = nfas[y]
            seen = set()
            todo = [(frozenset({0}), frozenset({0}))]
            while todo:
                pair = todo.pop()
                if pair in seen:
                    continue
                seen.add(pair)
                xs, ys = pair
                if xs & nx[1]:
                    ext |= {c for c in reps if _nfa_step(ny, ys, c)}
                for c in reps:
                    a, b = _nfa_step(nx, xs, c), _nfa_step(ny, ys, c)
                    if a and b:
                        todo.append((a, b))
        if isinstance(x, Delim) and x.lazy and ext:
            return (f"lazy lexeme {_sym_str(x)} ends at once where another lexeme could go on "
                    f"with {chr(min(ext))!r}")
        starts = set(ws)
        for z in follow.get(x, ()):
            if isinstance(z, LEXEME_TYPES):
                starts |= first_chars[z]
        bad = ext & starts
        if bad:
            return (f"lexeme {_sym_str(x)} can be extended by {chr(min(bad))!r}, which can also start "
                    f"what follows it: greedy lexing would change the language")
    return None


# --------------------------------------------------------------------- character-level Earley

@dataclass(frozen=True)
class Term:
    ranges: tuple = ()
    negate: bool = False
    special: frozenset | None = None

    def matches(self, sym) -> bool:
        if self.special is not None:
            return not isinstance(sym, int) and sym[1] in self.special
        return isinstance(sym, int) and ranges_contain(self.ranges, self.negate, sym)


def _subtract(ranges, cps) -> tuple:
    pieces = list(ranges)
    for c in cps:
        pieces = [p for lo, hi in pieces for p in ((lo, min(hi, c - 1)), (max(lo, c + 1), hi)) if p[0] <= p[1]]
    return tuple(pieces)


class EarleyLanguage(Language):
    """A character-level Earley recognizer for a CFG description.

    State = tuple of Earley sets; each set is a frozenset of items (prod, dot, origin). A prefix
    is viable iff its last set is non-empty (all nonterminals are productive, every lexeme
    non-empty); it is complete iff the last set holds a finished start production from 0."""

    START = "$start"

    def __init__(self, cfg: CFG):
        rules, productive = productive_rules(desugar(cfg)[0])
        if cfg.start not in productive:
            raise ValueError(f"{cfg.name}: the start rule derives no string")
        prods = []
        lex_nt = {}
        ws_nt = None
        if cfg.ignore:
            ws_nt = "$W"
            prods.append((ws_nt, ()))
            prods.append((ws_nt, (ws_nt, Term(tuple(cfg.ignore)))))

        char_nt = {}

        def char_expr(e):
            """A character-level expression (Cls/Seq/Choice/Rep from regex_to_cfg) as rules."""
            if isinstance(e, Cls):
                return Term(e.ranges, e.negate)
            if e in char_nt:
                return char_nt[e]
            n = f"$C{len(char_nt)}"
            char_nt[e] = n
            if isinstance(e, Seq):
                prods.append((n, tuple(char_expr(x) for x in e.items)))
            elif isinstance(e, Choice):
                for x in e.items:
                    prods.append((n, (char_expr(x),)))
            elif isinstance(e, Rep):
                x = char_expr(e.item)
                if e.hi < 0:
                    star = n + "*"
                    prods.extend([(star, ()), (star, (star, x))])
                    prods.append((n, (x,) * e.lo + (star,)))
                else:
                    for k in range(e.lo, e.hi + 1):
                        prods.append((n, (x,) * k))
            else:
                raise TypeError(e)
            return n

        def lexeme_nt(lx):
            if lx in lex_nt:
                return lex_nt[lx]
            n = f"$L{len(lex_nt)}"
            lex_nt[lx] = n
            body = n + "b"
            if isinstance(lx, Special):
                prods.append((body, (Term(special=frozenset(lx.ids)),)))
            elif isinstance(lx, Lit):
                prods.append((body, tuple(Term(((ord(c), ord(c)),)) for c in lx.text)))
            elif isinstance(lx, Cls):
                prods.append((body, (Term(lx.ranges, lx.negate),)))
            elif isinstance(lx, Plus):
                t = Term(lx.ranges, lx.negate)
                prods.extend([(body, (t,)), (body, (body, t))])
            elif isinstance(lx, Delim):
                c = ord(lx.close)
                inner = n + "i"
                prods.extend([(inner, ()), (inner, (inner, Term(((c, c),), True)))])
                prods.append((body, tuple(Term(((ord(ch), ord(ch)),)) for ch in lx.open) + (inner, Term(((c, c),)))))
            elif isinstance(lx, Word):
                # states: prefixes of excluded words, then "free" (F) once no excluded word fits
                t_all = Term(lx.ranges)
                free = n + "F"
                prods.extend([(free, ()), (free, (free, t_all))])
                prefixes = {w[:k] for w in lx.exclude for k in range(len(w) + 1)
                            if all(ranges_contain(lx.ranges, False, ord(ch)) for ch in w[:k])}
                for p in prefixes:
                    nt = body if p == "" else f"{n}w{p}"
                    if p and p not in lx.exclude:
                        prods.append((nt, ()))
                    conts = sorted({q[len(p)] for q in prefixes if len(q) == len(p) + 1 and q.startswith(p)})
                    for ch in conts:
                        prods.append((nt, (Term(((ord(ch), ord(ch)),)), f"{n}w{p + ch}")))
                    rest = _subtract(lx.ranges, [ord(ch) for ch in conts])
                    if rest:
                        prods.append((nt, (Term(rest), free)))
            elif isinstance(lx, RegexLex):
                c = ord(lx.close)
                prods.append((body, tuple(Term(((ord(ch), ord(ch)),)) for ch in lx.open)
                              + (char_expr(lx.expr), Term(((c, c),)))))
            prods.append((n, (body, ws_nt) if ws_nt else (body,)))
            return n

        for lhs, rhs in rules:
            prods.append((lhs, tuple(s if isinstance(s, str) else lexeme_nt(s) for s in rhs)))
        prods.append((self.START, ((ws_nt,) if ws_nt else ()) + (cfg.start,)))
        self.prods = prods
        self.by_lhs = {}
        for i, (lhs, _) in enumerate(prods):
            self.by_lhs.setdefault(lhs, []).append(i)
        nullable = set()
        changed = True
        while changed:
            changed = False
            for lhs, rhs in prods:
                if lhs not in nullable and all(isinstance(s, str) and s in nullable for s in rhs):
                    nullable.add(lhs)
                    changed = True
        self.nullable = nullable
        edges = set()
        for _, rhs in prods:
            for s in rhs:
                if isinstance(s, Term) and s.special is None:
                    for a, b in s.ranges:
                        edges.update((a, b + 1))
        self.boundaries = sorted_boundaries(edges)
        self.start_prods = set(self.by_lhs[self.START])
        self._start = (self._close([(p, 0, 0) for p in self.start_prods], (), 0),)

    def _close(self, seed, chart, k):
        """The Earley set at position k from its scanned items ``seed``; ``chart`` = sets 0..k-1."""
        items = set()
        agenda = list(seed)
        prods, by_lhs, nullable = self.prods, self.by_lhs, self.nullable
        while agenda:
            it = agenda.pop()
            if it in items:
                continue
            items.add(it)
            p, d, o = it
            lhs, rhs = prods[p]
            if d == len(rhs):
                if o == k:
                    continue  # nullable completions are advanced at prediction time
                for (p2, d2, o2) in chart[o]:
                    r2 = prods[p2][1]
                    if d2 < len(r2) and r2[d2] == lhs:
                        agenda.append((p2, d2 + 1, o2))
            else:
                s = rhs[d]
                if isinstance(s, str):
                    for q in by_lhs.get(s, ()):
                        agenda.append((q, 0, k))
                    if s in nullable:
                        agenda.append((p, d + 1, o))
        return frozenset(items)

    def start(self):
        return self._start

    def step(self, chart, sym):
        last = chart[-1]
        seed = []
        for (p, d, o) in last:
            rhs = self.prods[p][1]
            if d < len(rhs):
                s = rhs[d]
                if isinstance(s, Term) and s.matches(sym):
                    seed.append((p, d + 1, o))
        if not seed:
            return None
        return chart + (self._close(seed, chart, len(chart)),)

    def accepting(self, chart) -> bool:
        return any(p in self.start_prods and o == 0 and d == len(self.prods[p][1]) for (p, d, o) in chart[-1])


# ------------------------------------------------------------------ CFG sampling and generation

def sample_cfg(cfg: CFG, rng: random.Random, max_depth: int = 6, ws_prob: float = 0.3) -> list:
    """A random string of the language as a list of segments: str text or ("special", id)."""
    rules = {}
    for lhs, rhs in productive_rules(desugar(cfg)[0])[0]:
        rules.setdefault(lhs, []).append(rhs)
    # height: the least derivation depth of each nonterminal, to steer towards termination
    height = {}
    changed = True
    while changed:
        changed = False
        for lhs, alts in rules.items():
            for rhs in alts:
                if all(not isinstance(s, str) or s in height for s in rhs):
                    h = 1 + max([height[s] for s in rhs if isinstance(s, str)], default=0)
                    if h < height.get(lhs, 1 << 30):
                        height[lhs] = h
                        changed = True
    out = []
    ws_chars = [chr(rng.randint(a, b)) for a, b in (cfg.ignore or ()) for _ in range(2)]

    def ws():
        if ws_chars and rng.random() < ws_prob:
            out.append("".join(rng.choice(ws_chars) for _ in range(rng.randint(1, 2))))

    def lexeme(lx):
        if isinstance(lx, Special):
            out.append(("special", rng.choice(lx.ids)))
        elif isinstance(lx, Lit):
            out.append(lx.text)
        elif isinstance(lx, Cls):
            out.append(_class_char(rng, lx.ranges, lx.negate))
        elif isinstance(lx, Plus):
            out.append("".join(_class_char(rng, lx.ranges, lx.negate) for _ in range(rng.randint(1, 3))))
        elif isinstance(lx, Delim):
            body = "".join(_class_char(rng, ((ord(lx.close), ord(lx.close)),), True) for _ in range(rng.randint(0, 3)))
            out.append(lx.open + body + lx.close)
        elif isinstance(lx, RegexLex):
            out.append(lx.open + lx.node.sample(rng, [4]) + lx.close)
        elif isinstance(lx, Word):
            w = rng.choice(list(lx.exclude)) if rng.random() < 0.3 else ""
            w = w[:rng.randint(0, len(w))] if w else w
            while not w or w in lx.exclude or rng.random() < 0.3:
                w += _class_char(rng, lx.ranges, False)
            out.append(w)
        ws()

    def expand(n, depth):
        alts = rules[n]
        if depth >= max_depth:
            best = min(1 + max([height[s] for s in rhs if isinstance(s, str)], default=0) for rhs in alts)
            alts = [rhs for rhs in alts
                    if 1 + max([height[s] for s in rhs if isinstance(s, str)], default=0) == best]
        for s in rng.choice(alts):
            if isinstance(s, str):
                expand(s, depth + 1)
            else:
                lexeme(s)

    ws()
    expand(cfg.start, 0)
    merged = []
    for seg in out:
        if isinstance(seg, str) and merged and isinstance(merged[-1], str):
            merged[-1] += seg
        else:
            merged.append(seg)
    return merged


def _class_char(rng: random.Random, ranges, negate: bool) -> str:
    if not negate and rng.random() < 0.8:
        a, b = rng.choice(ranges)
        cp = rng.randint(a, b)
        if not 0xD800 <= cp < 0xE000:
            return chr(cp)
    cands = [c for c in SAMPLE_CHARS if ranges_contain(ranges, negate, ord(c)) and c not in " \t\u3000"]
    return rng.choice(cands)


LEXEME_POOL = [
    Lit("a"), Lit("b"), Lit("("), Lit(")"), Lit("+"), Lit(","), Lit("if"), Lit("then"), Lit("é"), Lit("中文"),
    Lit("→"), Lit("😀"), Lit("xy"), Lit("xz"), Lit("ab"), Lit("a+"), Cls(R("0-9")), Cls(R("α-ω")), Cls(R("a-c")),
    Cls(R("a-z"), True), Plus(R("0-9")), Plus(R("α-ω")), Plus(R("a-z")), Delim('"', '"'), Delim("<!", ">", True),
    Delim("'", "'", True), StarCls(R("0-9")), StarCls(R("é")), Lit(";"), Lit("=="), Lit("="),
    Word(R("a-z"), ("if", "then", "a")), Word(R("α-ω"), ("αβ", "ω")),
]
IGNORE_POOL = [R(" "), R(" \t"), R(" \u3000")]


def random_cfg(rng: random.Random, index: int, specials: Sequence[int] = (), regex_lexemes: int = 0) -> CFG:
    """A random greedy-safe CFG over a few lexemes from LEXEME_POOL plus up to ``regex_lexemes``
    random regex lexemes (retries until safe)."""
    for _attempt in range(200):
        lexemes = rng.sample(LEXEME_POOL, rng.randint(2, 5))
        lexemes += [random_regex_lexeme(rng) for _ in range(rng.randint(0, regex_lexemes))]
        if specials and rng.random() < 0.25:
            lexemes.append(Special((rng.choice(specials),)))
        names = ["S", "A", "B", "C"][: rng.randint(2, 4)]
        rules = {}
        for n in names:
            alts = []
            for _ in range(rng.randint(1, 3)):
                alt = []
                for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 3])):
                    r = rng.random()
                    if r < 0.55:
                        alt.append(rng.choice(lexemes))
                    elif r < 0.88:
                        alt.append(Ref(rng.choice(names)))
                    else:
                        inner = rng.choice(lexemes) if rng.random() < 0.6 else Ref(rng.choice(names))
                        alt.append(rng.choice([Opt(inner), Star(inner), Many(inner), Rep(inner, 1, 2)]))
                alts.append(alt)
            rules[n] = alts
        ignore = rng.choice(IGNORE_POOL) if rng.random() < 0.4 else None
        cfg = CFG(f"random-cfg-{index}", rules, "S", ignore)
        prules, productive = productive_rules(desugar(cfg)[0])
        if "S" not in productive:
            continue
        # want a language with more than the empty string
        reach, todo = {"S"}, ["S"]
        while todo:
            n = todo.pop()
            for lhs, rhs in prules:
                if lhs == n:
                    for x in rhs:
                        if isinstance(x, str) and x not in reach:
                            reach.add(x)
                            todo.append(x)
        if not any(isinstance(x, (LEXEME_TYPES, Special)) for lhs, rhs in prules if lhs in reach for x in rhs):
            continue
        if greedy_safe(cfg) is None:
            return cfg
    raise RuntimeError("no greedy-safe random grammar found")


def remap_specials(cfg: CFG, mapping: dict) -> CFG:
    """The same grammar with its special-token ids renamed (to use it with another vocabulary)."""
    def m(s):
        if isinstance(s, Special):
            return Special(tuple(mapping.get(i, i) for i in s.ids))
        if isinstance(s, (Opt, Star, Many)):
            return type(s)(m(s.item))
        if isinstance(s, Rep):
            return Rep(m(s.item), s.lo, s.hi)
        if isinstance(s, (Seq, Choice)):
            return type(s)(tuple(m(x) for x in s.items))
        return s
    return CFG(cfg.name, {n: [[m(s) for s in alt] for alt in alts] for n, alts in cfg.rules.items()},
               cfg.start, cfg.ignore)


# -------------------------------------------------------------------------------- segments

def segments_to_units(segments) -> list:
    """Text/special segments -> list of bytes objects and ("special", id) items."""
    out = []
    for s in segments:
        out.append(s.encode("utf-8") if isinstance(s, str) else s)
    return out
