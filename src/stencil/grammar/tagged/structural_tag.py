"""XGrammar's structural tags: a JSON tree of formats (free text, constant strings, JSON Schema,
regexes, grammars, tags, triggered tags ...) built into one stencil grammar.

Accepted input: ``{"type": "structural_tag", "format": {...}}``, a bare format object, or the
legacy ``{"structures": [{"begin", "schema", "end"}], "triggers": [...]}`` form (vLLM, SGLang).
Format types: ``const_string``, ``json_schema`` (styles ``json`` and ``qwen_xml``), ``regex``,
``grammar`` (GBNF), ``any_text``, ``sequence``, ``or``, ``optional``, ``plus``, ``star``,
``repeat``, ``tag``, ``triggered_tags``, ``tags_with_separator``, ``dispatch``, and the
token-level ``token``, ``any_tokens``, ``token_triggered_tags`` and ``token_dispatch``
(``exclude_token``, exactly one token of text, is not expressible over bytes). A bad spec raises
``GrammarError`` naming the JSON path of the bad part. stencil's own ``custom_input`` is an
OpenAI custom tool's input (``format``: its ``{"type": "grammar", "syntax": "lark" | "regex",
"definition"}`` or ``{"type": "text"}``): with ``style`` "json_string" (the default) a JSON string
whose decoded text is in the language, with "raw" the text itself (regex or text), which then
reads up to an end as ``any_text`` does and contains none of its ``excludes``
(:mod:`stencil.grammar.tagged.custom_tools`). stencil's ``excludes`` on a ``json_schema`` (style
json): texts that no string of the value holds unescaped (a reader that finds the value's end by
searching for it, as Harmony's final message, would cut the value there).

Free text is exact: it ends at the first occurrence of what may end it (the enclosing tag's
``end``, a trigger), and text that contains a trigger enters the tag. Formats that read any
amount of text (``any_text``, ``triggered_tags``, ``dispatch``, ``any_tokens``) therefore need
an end: the enclosing tag's ``end``, a ``const_string`` or a tag with a string ``begin`` right
after them in a sequence (its first occurrence ends the text), or the end of the output; any
other place is an error. Only where a dispatcher's free text follows (a tag with an empty end
inside triggered tags), string-level ones with ``excludes`` read as much text as holds no
excluded string and leave the rest to that free text. A string that contains the text of one of the tokenizer's special tokens
stands for that token there (a model emits the token, never its spelling as text). A marker
that ends free text and starts with text but goes on with a special token (rare) keeps that text
out of the free text altogether.

Example::

    spec = {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<function="],
            "tags": [{"type": "tag", "begin": "<function=get_weather>",
                      "content": {"type": "json_schema", "json_schema": {"type": "object"}},
                      "end": "</function>"}]}}
    g = compiler.compile_structural_tag(spec)
"""
from __future__ import annotations

import json
import re
from typing import Optional

from stencil._core import ExprId, GrammarError, Symbol
from stencil.grammar.ebnf.ast import Excluding, Namespaced, TokenTable, without_texts
from stencil.grammar.ebnf.gbnf import build_gbnf
from stencil.grammar.json.schema import MAX_SCHEMA_NESTING, build_json_schema
from stencil.grammar.json.schema.core.document import check_document
from stencil.grammar.regex import build_regex
from stencil.grammar.tagged.custom_tools import build_json_string, custom_format, input_regex
from stencil.grammar.tagged.xml_params import build_xml_parameters

__all__ = ["build_structural_tag", "load_structural_tag", "MAX_DEPTH"]

#: Formats nested deeper than this are refused (before Python's recursion limit is reached).
MAX_DEPTH = 200
_UNLIMITED = ("any_text", "triggered_tags", "dispatch", "any_tokens", "token_triggered_tags", "token_dispatch")
_FIELDS = {
    "const_string": ({"value"}, set()),
    "json_schema": ({"json_schema"}, {"style", "any_order", "max_whitespace_cnt", "excludes"}),
    "qwen_xml_parameter": ({"json_schema"}, {"any_order", "max_whitespace_cnt"}),
    "regex": ({"pattern"}, set()),
    "grammar": ({"grammar"}, set()),
    "any_text": (set(), {"excludes", "max_chars", "max_tokens"}),
    "sequence": ({"elements"}, set()),
    "or": ({"elements"}, set()),
    "optional": ({"content"}, set()),
    "plus": ({"content"}, set()),
    "star": ({"content"}, set()),
    "repeat": ({"content", "min", "max"}, set()),
    "tag": ({"begin", "content", "end"}, set()),
    "triggered_tags": ({"triggers", "tags"}, {"at_least_one", "stop_after_first", "excludes"}),
    "tags_with_separator": ({"tags", "separator"}, {"at_least_one", "stop_after_first"}),
    "dispatch": ({"rules"}, {"loop", "excludes"}),
    "token": ({"token"}, set()),
    "any_tokens": (set(), {"exclude_tokens", "max_tokens"}),
    "token_triggered_tags": ({"trigger_tokens", "tags"}, {"exclude_tokens", "at_least_one", "stop_after_first"}),
    "token_dispatch": ({"rules"}, {"loop", "exclude_tokens"}),
    "custom_input": ({"format"}, {"style", "excludes"}),
}


def _reads_text(fmt) -> bool:
    """Whether ``fmt`` reads text up to what follows it (it needs an end after it)."""
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    return kind in _UNLIMITED or (kind == "custom_input" and fmt.get("style") == "raw")


def load_structural_tag(spec) -> dict:
    """The format object of a structural tag given as a dict or JSON text (any accepted form);
    the legacy structures/triggers form becomes the equivalent ``triggered_tags`` format."""
    return _load(spec)[0]


def _json_path(path: list) -> str:
    """The structural tag's own path notation ($.format.tags[0])."""
    text = "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)
    return text if len(text) <= 120 else f"{text[:50]}...{text[-60:]}"


def _load(spec) -> tuple[dict, str, bool]:
    """(format object, its JSON path in the spec, whether its schemas need no check of their own:
    the spec's check covered them, no deeper than a schema may nest)."""
    if isinstance(spec, (str, bytes)):
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError as e:
            raise GrammarError(f"structural tag: not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
        except RecursionError:
            raise GrammarError(f"structural tag: nested deeper than {MAX_DEPTH} levels") from None
    if not isinstance(spec, dict):
        raise GrammarError(f"structural tag: expected a JSON object, got {type(spec).__name__}")
    # a spec of Python objects may contain itself: refused before anything walks it (a format
    # nests up to 2 levels of JSON, and the schemas inside have their own limit)
    checked = check_document(spec, 2 * MAX_DEPTH + MAX_SCHEMA_NESTING, "structural tag", _json_path) \
        <= MAX_SCHEMA_NESTING
    if "structures" in spec:
        return _legacy(spec), "$(structures as triggered_tags)", checked
    if spec.get("type") == "structural_tag" or ("format" in spec and "type" not in spec):
        if "format" not in spec:
            raise GrammarError("structural tag: $ has no 'format'")
        return spec["format"], "$.format", checked
    return spec, "$", checked


def _legacy(spec: dict) -> dict:
    structures, triggers = spec["structures"], spec.get("triggers")
    if not isinstance(structures, list) or not structures:
        raise GrammarError("structural tag: $.structures must be a non-empty list")
    tags = []
    for i, s in enumerate(structures):
        missing = [k for k in ("begin", "schema", "end") if not isinstance(s, dict) or k not in s]
        if missing:
            raise GrammarError(f"structural tag: $.structures[{i}] has no {', '.join(missing)}")
        tags.append({"type": "tag", "begin": s["begin"], "end": s["end"],
                     "content": {"type": "json_schema", "json_schema": s["schema"]}})
    if triggers is None:
        triggers = sorted({t["begin"] for t in tags})
    return {"type": "triggered_tags", "triggers": triggers, "tags": tags}


def build_structural_tag(b, spec, *, tokens: Optional[TokenTable] = None, specials: Optional[dict] = None,
                         json_options: Optional[dict] = None) -> Symbol:
    """Add the grammar of structural tag ``spec`` (any form ``load_structural_tag`` accepts) to
    builder ``b`` and return its start rule. ``specials`` maps special-token texts to ids;
    ``tokens`` resolves token names in embedded GBNF grammars; ``json_options`` are
    ``build_json_schema`` options for every ``json_schema`` format."""
    fmt, path, checked = _load(spec)
    root = b.rule("structural_tag")
    b.add_alternative(root, [_Builder(b, tokens, specials or {}, json_options or {}, checked).build(fmt, path, _EOS)])
    return root


class _Follow:
    """What follows a format when it is not an end marker."""

    def __init__(self, what: str):
        self.what = what


_EOS = _Follow("the end of the output")
_FREE = _Follow("free text")     # a dispatcher's loop: free text reads whatever comes next


def _markers(end) -> list:
    """The end markers in ``end`` (none for None and the _Follow cases)."""
    return [] if end is None or isinstance(end, _Follow) else end


class _Builder:
    def __init__(self, b, tokens, specials: dict, json_options: dict, checked: bool = False):
        self.b, self.tokens, self.json_options = b, tokens, json_options
        self.checked = checked   # the spec's schemas need no check of their own (see _load)
        self.specials = {k: v for k, v in specials.items() if k}
        # by first character, the lengths of the specials starting with it (longest first): a scan
        # costs the text's length times the lengths tried, not the number of specials (Gemma's
        # vocabulary has 6,249: an alternation of all of them cost 28 us a marker there, 18 at DeepSeek's 1,230,
        # against 5 and 8 us)
        lengths: dict[str, set[int]] = {}
        for k in self.specials:
            lengths.setdefault(k[0], set()).add(len(k))
        self._lengths = {c: sorted(ls, reverse=True) for c, ls in lengths.items()}
        self._firsts = re.compile("[" + "".join(re.escape(c) for c in self._lengths) + "]") if lengths else None
        self._pieces: dict[str, list] = {}
        self._n = 0
        # one rule per (style, schema, options): a tool's arguments appear in several tags (Llama's
        # two call forms, Harmony's four headers) and are built once
        self._schemas: dict[str, int] = {}
        self._schema_texts: dict[int, tuple] = {}   # id(schema) -> (schema, its JSON text)
        self._shared: dict = {}   # the views' shared memos (Namespaced.shared)

    # -- strings: text and special tokens --------------------------------------------------------
    def pieces(self, s: str) -> list:
        """``s`` as text pieces (str) and special-token ids (int): at each place, the longest
        special that starts there."""
        made = self._pieces.get(s)
        if made is not None:
            return list(made)
        out: list = []
        pos = start = 0
        while self._firsts is not None:
            m = self._firsts.search(s, pos)
            if m is None:
                break
            at = m.start()
            found = next((s[at:at + n] for n in self._lengths[s[at]] if s[at:at + n] in self.specials), None)
            if found is None:
                pos = at + 1
                continue
            if at > start:
                out.append(s[start:at])
            out.append(self.specials[found])
            pos = start = at + len(found)
        if start < len(s):
            out.append(s[start:])
        self._pieces[s] = out
        return list(out)

    def literal(self, pieces: list) -> list[Symbol]:
        return [self.b.special_token([p], f"token-{p}") if isinstance(p, int) else self.b.literal(p, json.dumps(p))
                for p in pieces]

    def name(self, what: str) -> str:
        self._n += 1
        return f"st{self._n}-{what}"

    def ns(self) -> Namespaced:
        return Namespaced(self.b, self.name("") + "/", self._shared)

    # -- free text ------------------------------------------------------------------------------
    def body(self, banned: list[str], max_chars: Optional[int] = None) -> ExprId:
        """Text (possibly empty) that contains none of the ``banned`` strings."""
        b = self.b
        parts = [b.re_any_string()]
        texts = [x for x in banned if x]
        if texts:
            parts.append(without_texts(b, texts))
        if max_chars is not None:
            parts.append(b.re_repeat(b.re_char_ranges([(0, 0x10FFFF)], False), 0, max_chars))
        return parts[0] if len(parts) == 1 else b.re_and(parts)

    def text_then(self, body: ExprId, stop: list, what: str) -> list[Symbol]:
        """Symbols for free text ending with marker ``stop`` (pieces), marker included. A text
        marker ends the text at its first occurrence (one lazy lexeme "text, then marker"); a
        marker that starts with a special token follows text that cannot contain it."""
        b = self.b
        head, rest = stop[0], stop[1:]
        if isinstance(head, int):
            return [self.maybe_text(body, what), *self.literal(stop)]
        return [b.lexeme(b.re_concat([body, b.re_literal(head)]), self.name(what), True), *self.literal(rest)]

    def maybe_text(self, body: ExprId, what: str) -> Symbol:
        """A rule for text of ``body`` (empty text included)."""
        b = self.b
        rule = b.rule(self.name(what))
        b.add_alternative(rule, [])
        b.add_alternative(rule, [b.lexeme(b.re_and([body, b.re_not(b.re_empty())]), self.name(what))])
        return rule

    def free_until(self, banned: list[str], end, what: str, max_chars: Optional[int] = None) -> Symbol:
        """Free text up to ``end`` (a list of markers, each a piece list, or _EOS), end included;
        with ``end`` None or _FREE, as much text as holds no banned string."""
        if not _markers(end):
            return self.maybe_text(self.body(banned, max_chars), what)
        heads = [m[0] for m in end if isinstance(m[0], str)]
        body = self.body(banned + heads, max_chars)
        return self.alt([self.text_then(body, m, what) for m in end], what)

    def alt(self, alternatives: list[list[Symbol]], what: str) -> Symbol:
        rule = self.b.rule(self.name(what))
        for a in alternatives:
            self.b.add_alternative(rule, a)
        return rule

    def seq(self, syms: list[Symbol]) -> Symbol:
        return self.b.seq(syms) if syms else self.b.empty()

    # -- checks ---------------------------------------------------------------------------------
    @staticmethod
    def err(path: str, msg: str) -> GrammarError:
        return GrammarError(f"structural tag: {path}: {msg}")

    def check(self, fmt, path: str) -> str:
        if not isinstance(fmt, dict):
            raise self.err(path, f"a format is a JSON object, got {type(fmt).__name__}")
        kind = fmt.get("type")
        if kind not in _FIELDS:
            known = ", ".join(sorted(_FIELDS))
            hint = (" (exactly one token of text is not expressible: stencil constrains bytes)"
                    if kind == "exclude_token" else "")
            raise self.err(path, f"unknown format type {kind!r}{hint}; expected one of {known}")
        required, optional = _FIELDS[kind]
        missing = sorted(required - fmt.keys())
        if missing:
            raise self.err(path, f"{kind} needs {', '.join(missing)}")
        extra = sorted(fmt.keys() - required - optional - {"type"})
        if extra:
            raise self.err(path, f"{kind} has unknown field(s) {', '.join(extra)}")
        return kind

    def strings(self, v, path: str, *, allow_empty_list: bool = True) -> list[str]:
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v) or (not v and not allow_empty_list):
            raise self.err(path, f"expected a string or a list of strings, got {json.dumps(v)[:80]}")
        return v

    def flag(self, fmt: dict, key: str, path: str) -> bool:
        v = fmt.get(key, False)
        if not isinstance(v, bool):
            raise self.err(f"{path}.{key}", f"expected true or false, got {json.dumps(v)[:40]}")
        return v

    def count(self, fmt: dict, key: str, path: str, *, lo: int = 0, null: bool = True) -> Optional[int]:
        v = fmt.get(key)
        if v is None and null:
            return None
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise self.err(f"{path}.{key}", f"expected an integer >= {lo}, got {json.dumps(v)[:40]}")
        return v

    def marker(self, v, path: str) -> list:
        """A begin/end marker: a string (pieces) or a ``token`` format (one special token)."""
        if isinstance(v, dict):
            if self.check(v, path) != "token":
                raise self.err(path, "a marker is a string or a token format")
            return [self.token_id(v["token"], f"{path}.token")]
        if not isinstance(v, str):
            raise self.err(path, f"a marker is a string or a token format, got {json.dumps(v)[:80]}")
        return self.pieces(v)

    def token_id(self, t, path: str) -> int:
        if isinstance(t, int) and not isinstance(t, bool):
            if t < 0 or (self.tokens is not None and t >= self.tokens.vocab_size):
                raise self.err(path, f"token id {t} is out of range")
            return t
        if isinstance(t, str):
            if t in self.specials:
                return self.specials[t]
            raise self.err(path, f"{t!r} is not a special token of this tokenizer")
        raise self.err(path, f"a token is an id or a special token's text, got {json.dumps(t)[:40]}")

    # -- formats --------------------------------------------------------------------------------
    def build(self, fmt, path: str, end) -> Symbol:
        """A symbol for ``fmt`` followed by ``end``: None (something else follows), _EOS, _FREE,
        or a list of markers (piece lists), one of which closes the enclosing tag."""
        kind = self.check(fmt, path)
        if path.count(".") > MAX_DEPTH:
            raise self.err(path[:80] + "...", f"formats nested deeper than {MAX_DEPTH} levels")
        if _reads_text(fmt):
            if end is _FREE and kind in ("any_text", "triggered_tags", "dispatch") and fmt.get("excludes"):
                # free text follows and reads what this text leaves: the text runs up to (not into) an
                # excluded string (XGrammar's tag with an empty end inside triggered tags)
                return getattr(self, "_" + kind)(fmt, path, None)
            if end is None or end is _FREE:
                raise self.err(path, f"{kind} reads text up to an end: put it last in a tag's content, before "
                                     "a const_string or a tag with a string begin in a sequence, or at the end "
                                     "of the output")
            return getattr(self, "_" + kind)(fmt, path, end)
        if kind in ("sequence", "or", "tag", "optional", "plus", "star", "repeat", "tags_with_separator"):
            return getattr(self, "_" + kind)(fmt, path, end)
        sym = getattr(self, "_" + kind)(fmt, path)
        return self.close(sym, end)

    def close(self, sym: Symbol, end) -> Symbol:
        """``sym`` then one of the end markers."""
        if not _markers(end):
            return sym
        if len(end) == 1:
            return self.seq([sym, *self.literal(end[0])])
        return self.seq([sym, self.alt([self.literal(m) for m in end], "end")])

    def _const_string(self, fmt, path):
        if not isinstance(fmt["value"], str):
            raise self.err(f"{path}.value", "expected a string")
        return self.seq(self.literal(self.pieces(fmt["value"])))

    def _json_schema(self, fmt, path, style_default="json"):
        style = fmt.get("style", style_default)
        opts = dict(self.json_options)
        if self.flag(fmt, "any_order", path):
            opts["property_order"] = "any"
        ws = self.count(fmt, "max_whitespace_cnt", path)
        if ws is not None:
            opts["max_whitespace_run"] = ws
        schema = fmt["json_schema"]
        if style not in ("json", "qwen_xml"):
            raise self.err(f"{path}.style", f"style {style!r} is not supported (supported: json, qwen_xml)")
        banned = self.strings(fmt.get("excludes", []), f"{path}.excludes")
        if banned and style != "json":
            raise self.err(f"{path}.excludes", "excludes applies to style json (qwen_xml values exclude their end)")
        key = self._schema_key(style, schema, opts, banned)
        if key is not None and key in self._schemas:
            return self._schemas[key]
        try:
            if style == "json":
                # (excluded texts, e.g. the end a reader finds by searching, appear only escaped)
                view = Excluding(self.ns(), banned, f"{path}.json_schema") if banned else self.ns()
                rule = build_json_schema(view, schema, checked=self.checked, **opts)
            else:
                rule = build_xml_parameters(self.ns(), schema, any_order=opts.get("property_order") == "any",
                                            json_options=opts, checked=self.checked)
        except GrammarError as e:
            raise self.err(f"{path}.json_schema", str(e)) from None
        if key is not None:
            self._schemas[key] = rule
        return rule

    def _schema_key(self, style: str, schema, opts: dict, banned: list[str]) -> Optional[str]:
        """The key of a built schema rule, or None for a schema JSON cannot write (the builder then
        says why). A schema object met again (Harmony's four headers of one tool) is written once."""
        memo = self._schema_texts.get(id(schema))
        if memo is None or memo[0] is not schema:
            try:
                text = json.dumps(schema)
            except (TypeError, ValueError, RecursionError):   # (a schema nested too deeply, say)
                return None
            memo = self._schema_texts[id(schema)] = (schema, text)   # (the schema kept: its id stays its own)
        return json.dumps([style, opts, banned]) + memo[1]

    def _custom_input(self, fmt, path, end=None):
        """An OpenAI custom tool's input: a JSON string of its language, or (``style`` "raw") its
        text up to ``end``, holding none of ``excludes`` nor the end's texts."""
        style = fmt.get("style", "json_string")
        if style not in ("json_string", "raw"):
            raise self.err(f"{path}.style", f"expected json_string or raw, got {json.dumps(style)[:40]}")
        try:
            syntax, definition = custom_format(fmt["format"], "format")
        except GrammarError as e:
            raise self.err(path, str(e)) from None
        banned = self.strings(fmt.get("excludes", []), f"{path}.excludes")
        try:
            if style == "json_string":
                return build_json_string(self.ns(), syntax, definition, tokens=self.tokens,
                                         json_options=self.json_options)
            language = input_regex(self.b, syntax, definition)
        except GrammarError as e:   # (a Lark input has no raw style)
            raise self.err(f"{path}.style" if syntax == "lark" else f"{path}.format.definition", str(e)) from None
        heads = [m[0] for m in _markers(end) if isinstance(m[0], str)]
        body = self.b.re_and([language, self.body(banned + heads)])
        if not _markers(end):
            return self.maybe_text(body, "input")
        return self.alt([self.text_then(body, m, "input") for m in end], "input")

    def _qwen_xml_parameter(self, fmt, path):
        return self._json_schema({**fmt, "type": "json_schema"}, path, style_default="qwen_xml")

    def _regex(self, fmt, path):
        if not isinstance(fmt["pattern"], str):
            raise self.err(f"{path}.pattern", "expected a string")
        try:
            expr = build_regex(self.b, fmt["pattern"], anchored=True)
        except GrammarError as e:
            raise self.err(f"{path}.pattern", str(e)) from None
        if self.b.re_nullable(expr):
            return self.alt([[], [self.b.lexeme(self.b.re_and([expr, self.b.re_not(self.b.re_empty())]),
                                                self.name("regex"))]], "regex")
        return self.b.lexeme(expr, self.name("regex"))

    def _grammar(self, fmt, path):
        if not isinstance(fmt["grammar"], str):
            raise self.err(f"{path}.grammar", "expected GBNF text")
        try:
            return build_gbnf(self.b, fmt["grammar"], tokens=self.tokens, unused="ignore", prefix=self.name("g") + "/")
        except GrammarError as e:
            raise self.err(f"{path}.grammar", str(e)) from None

    def _token(self, fmt, path):
        return self.b.special_token([self.token_id(fmt["token"], f"{path}.token")], self.name("token"))

    def _any_text(self, fmt, path, end):
        if self.count(fmt, "max_tokens", path) is not None:
            raise self.err(f"{path}.max_tokens", "not supported: stencil constrains text, not token counts "
                                                 "(use max_chars)")
        banned = self.strings(fmt.get("excludes", []), f"{path}.excludes")
        max_chars = self.count(fmt, "max_chars", path)
        if end is None:
            return self.maybe_text(self.body(banned, max_chars), "text")
        return self.free_until(banned, end, "text", max_chars)

    def _any_tokens(self, fmt, path, end):
        """Text and special tokens, except ``exclude_tokens`` and the enclosing end's tokens."""
        if self.count(fmt, "max_tokens", path) is not None:
            raise self.err(f"{path}.max_tokens", "not supported: stencil constrains text, not token counts")
        return self.tokens_until(self.token_ids(fmt, path), end)

    def token_ids(self, fmt, path, key: str = "exclude_tokens") -> set:
        v = fmt.get(key, [])
        if not isinstance(v, list):
            raise self.err(f"{path}.{key}", "expected a list of token ids or special tokens' texts")
        return {self.token_id(t, f"{path}.{key}[{i}]") for i, t in enumerate(v)}

    def tokens_free(self, excluded: set, end) -> Symbol:
        """Text and special tokens other than ``excluded`` and the end's, possibly none: what
        comes before a trigger token. Text never holds a special token, so text and tokens
        alternate: (text, special token)* text."""
        end_tokens = {m[0] for m in _markers(end) if isinstance(m[0], int)}
        allowed = sorted(set(self.specials.values()) - excluded - end_tokens)
        text_heads = [m[0] for m in _markers(end) if isinstance(m[0], str)]
        text = self.maybe_text(self.body(text_heads), "tokens-text")
        if not allowed:
            return text
        unit = self.seq([text, self.b.special_token(allowed, self.name("any-token"))])
        return self.seq([self.b.repeat(unit, 0, -1), text])

    def tokens_until(self, excluded: set, end) -> Symbol:
        """Text and special tokens other than ``excluded`` up to the end, end included."""
        end_tokens = {m[0] for m in _markers(end) if isinstance(m[0], int)}
        allowed = sorted(set(self.specials.values()) - excluded - end_tokens)
        tail = self.free_until([], end, "tokens-text")
        if not allowed:
            return tail
        text_heads = [m[0] for m in _markers(end) if isinstance(m[0], str)]
        unit = self.seq([self.maybe_text(self.body(text_heads), "tokens-text"),
                         self.b.special_token(allowed, self.name("any-token"))])
        return self.seq([self.b.repeat(unit, 0, -1), tail])

    def _sequence(self, fmt, path, end):
        elements = fmt["elements"]
        if not isinstance(elements, list) or not elements:
            raise self.err(f"{path}.elements", "expected a non-empty list of formats")
        syms, i = [], 0
        while i < len(elements):
            e, p = elements[i], f"{path}.elements[{i}]"
            last = i == len(elements) - 1
            nxt = None if last else elements[i + 1]
            lead = self.leading_string(nxt)
            if not last and _reads_text(e) and lead:
                # free text up to the string the next element starts with: its first occurrence ends
                # the text and is read with it; the next element goes on after it
                syms.append(self.build(e, p, [self.pieces(lead)]))
                i += 1
                if nxt["type"] == "const_string":
                    i += 1
                    if i == len(elements):
                        return self.close(self.seq(syms), end)
                    continue
                elements = elements[:i] + [{**nxt, "begin": ""}] + elements[i + 1:]
                continue
            syms.append(self.build(e, p, end if last else None))
            i += 1
        return self.seq(syms)

    @staticmethod
    def leading_string(fmt) -> str:
        """The string a const_string or a tag with a string begin starts with ("" otherwise)."""
        if isinstance(fmt, dict) and fmt.get("type") == "const_string" and isinstance(fmt.get("value"), str):
            return fmt["value"]
        if isinstance(fmt, dict) and fmt.get("type") == "tag" and isinstance(fmt.get("begin"), str):
            return fmt["begin"]
        return ""

    def _or(self, fmt, path, end):
        elements = fmt["elements"]
        if not isinstance(elements, list) or not elements:
            raise self.err(f"{path}.elements", "expected a non-empty list of formats")
        return self.alt([[self.build(e, f"{path}.elements[{i}]", end)] for i, e in enumerate(elements)], "or")

    def _repeat(self, fmt, path, end):
        lo = self.count(fmt, "min", path, null=False)
        hi = fmt["max"]
        if not isinstance(hi, int) or isinstance(hi, bool) or (hi != -1 and hi < lo):
            raise self.err(f"{path}.max", f"expected -1 (no bound) or an integer >= min, got {json.dumps(hi)[:40]}")
        return self.repeated(fmt, path, end, lo, hi)

    def _optional(self, fmt, path, end):
        return self.repeated(fmt, path, end, 0, 1)

    def _plus(self, fmt, path, end):
        return self.repeated(fmt, path, end, 1, -1)

    def _star(self, fmt, path, end):
        return self.repeated(fmt, path, end, 0, -1)

    def repeated(self, fmt, path, end, lo, hi):
        item = self.build(fmt["content"], f"{path}.content", None)
        return self.close(self.b.repeat(item, lo, hi), end)

    def _tag(self, fmt, path, end):
        begin = self.marker(fmt["begin"], f"{path}.begin")
        ends = fmt["end"]
        if isinstance(ends, list):
            if not ends:
                raise self.err(f"{path}.end", "expected at least one end marker")
            markers = [self.marker(e, f"{path}.end[{i}]") for i, e in enumerate(ends)]
        else:
            markers = [self.marker(ends, f"{path}.end")]
        if any(not m for m in markers):
            # an empty end: the content just stops (formats that read text then need what follows)
            if len(markers) > 1:
                raise self.err(f"{path}.end", "an empty end marker cannot be one of several")
            content = self.build(fmt["content"], f"{path}.content", end)
            return self.seq(self.literal(begin) + [content])
        content = self.build(fmt["content"], f"{path}.content", markers)
        return self.close(self.seq(self.literal(begin) + [content]), end)

    def tag_list(self, tags, path: str) -> list[dict]:
        if not isinstance(tags, list) or not tags:
            raise self.err(path, "expected a non-empty list of tag formats")
        # XGrammar lets a tag in these lists leave out "type"
        tags = [{"type": "tag", **t} if isinstance(t, dict) and "type" not in t else t for t in tags]
        for i, t in enumerate(tags):
            if self.check(t, f"{path}[{i}]") != "tag":
                raise self.err(f"{path}[{i}]", f"expected a tag format, got {t.get('type')!r}")
        return tags

    def _triggered_tags(self, fmt, path, end):
        tags = self.tag_list(fmt["tags"], f"{path}.tags")
        triggers = self.strings(fmt["triggers"], f"{path}.triggers", allow_empty_list=False)
        if not all(triggers):
            raise self.err(f"{path}.triggers", "a trigger is a non-empty string")
        rules = []
        for i, t in enumerate(tags):
            tp = f"{path}.tags[{i}]"
            if not isinstance(t["begin"], str):
                raise self.err(f"{tp}.begin", "tags of triggered_tags begin with a string")
            hits = [x for x in triggers if t["begin"].startswith(x)]
            if len(hits) != 1:
                raise self.err(f"{tp}.begin", f"{t['begin']!r} must start with exactly one trigger of "
                                              f"{triggers!r} (it starts with {len(hits)})")
            rules.append((hits[0], {**t, "begin": t["begin"][len(hits[0]):]}, tp))
        unused = [x for x in triggers if not any(r[0] == x for r in rules)]
        if unused:
            raise self.err(f"{path}.triggers", f"trigger(s) {unused!r} start no tag")
        return self.dispatcher(rules, fmt, path, end, loop=not self.flag(fmt, "stop_after_first", path),
                               at_least_one=self.flag(fmt, "at_least_one", path))

    def _token_triggered_tags(self, fmt, path, end):
        tags = self.tag_list(fmt["tags"], f"{path}.tags")
        triggers = self.token_ids(fmt, path, "trigger_tokens")
        if not triggers:
            raise self.err(f"{path}.trigger_tokens", "expected at least one trigger token")
        rules = []
        for i, t in enumerate(tags):
            tp = f"{path}.tags[{i}]"
            begin = self.marker(t["begin"], f"{tp}.begin") if isinstance(t["begin"], dict) else None
            if begin is None or begin[0] not in triggers:
                raise self.err(f"{tp}.begin", "tags of token_triggered_tags begin with a token format naming one of "
                                              "trigger_tokens")
            rules.append((begin[0], {**t, "begin": ""}, tp))
        return self.dispatcher(rules, fmt, path, end, loop=not self.flag(fmt, "stop_after_first", path),
                               at_least_one=self.flag(fmt, "at_least_one", path), token_level=True)

    def _token_dispatch(self, fmt, path, end):
        rules = fmt["rules"]
        if not isinstance(rules, list) or not rules:
            raise self.err(f"{path}.rules", "expected a non-empty list of [token, format] pairs")
        out = []
        for i, r in enumerate(rules):
            if not (isinstance(r, (list, tuple)) and len(r) == 2):
                raise self.err(f"{path}.rules[{i}]", "expected a [token, format] pair")
            out.append((self.token_id(r[0], f"{path}.rules[{i}][0]"), r[1], f"{path}.rules[{i}][1]"))
        return self.dispatcher(out, fmt, path, end, loop=fmt.get("loop", True) is not False, at_least_one=False,
                               token_level=True)

    def _dispatch(self, fmt, path, end):
        rules = fmt["rules"]
        if not isinstance(rules, list) or not rules:
            raise self.err(f"{path}.rules", "expected a non-empty list of [pattern, format] pairs")
        out = []
        for i, r in enumerate(rules):
            if not (isinstance(r, (list, tuple)) and len(r) == 2 and isinstance(r[0], str) and r[0]):
                raise self.err(f"{path}.rules[{i}]", "expected a [pattern string, format] pair")
            out.append((r[0], r[1], f"{path}.rules[{i}][1]"))
        return self.dispatcher(out, fmt, path, end, loop=fmt.get("loop", True) is not False, at_least_one=False)

    def dispatcher(self, rules, fmt, path, end, *, loop: bool, at_least_one: bool, token_level: bool = False) -> Symbol:
        """Free text; at each trigger, the format of that trigger; then free text again (``loop``)
        or the end. The text ends at the first trigger or end marker it contains. ``rules`` are
        (trigger, format, path); triggers are strings, or token ids when ``token_level`` (the
        free part is then text and special tokens, as any_tokens)."""
        triggers = list(dict.fromkeys(r[0] for r in rules))
        # what follows a dispatched format: free text again (loop), or the end
        follow = _FREE if loop else end
        after = {trig: self.alt([[self.build(f, p, follow)] for t, f, p in rules if t == trig], "dispatch")
                 for trig in triggers}
        if token_level:
            excluded = self.token_ids(fmt, path) | set(triggers)
            trig_syms = {t: [self.b.special_token([t], self.name("trigger"))] for t in triggers}
            free = self.tokens_free(excluded, end)
            text_to = {t: [free, *trig_syms[t]] for t in triggers}
            tail = self.tokens_until(excluded, end)
        else:
            excludes = self.strings(fmt.get("excludes", []), f"{path}.excludes")
            trig_pieces = {t: self.pieces(t) for t in triggers}
            trig_syms = {t: self.literal(trig_pieces[t]) for t in triggers}
            text_triggers = [p[0] for p in trig_pieces.values() if isinstance(p[0], str)]
            ends_heads = [m[0] for m in _markers(end) if isinstance(m[0], str)]
            body = self.body(excludes + text_triggers + ends_heads)
            text_to = {t: self.text_then(body, trig_pieces[t], "text") for t in triggers}
            tail = self.free_until(excludes + text_triggers, end, "text")
        one = self.alt([text_to[t] + [after[t]] for t in triggers], "call")
        first = self.alt([trig_syms[t] + [after[t]] for t in triggers], "first-call")
        if at_least_one:
            # the first tag comes right away: no free text before it
            return self.seq([first, self.b.repeat(one, 0, -1), tail] if loop else [first])
        if loop:
            return self.seq([self.b.repeat(one, 0, -1), tail])
        return self.alt([[tail], [one]], "at-most-one")     # the dispatched format reads the end

    def _tags_with_separator(self, fmt, path, end):
        tags = self.tag_list(fmt["tags"], f"{path}.tags")
        sep = fmt["separator"]
        if not isinstance(sep, str):
            raise self.err(f"{path}.separator", "expected a string")
        one = self.alt([[self.build(t, f"{path}.tags[{i}]", None)] for i, t in enumerate(tags)], "tag")
        if self.flag(fmt, "stop_after_first", path):
            body = one
        else:
            more = self.seq(self.literal(self.pieces(sep)) + [one])
            body = self.seq([one, self.b.repeat(more, 0, -1)])
        if not self.flag(fmt, "at_least_one", path):
            body = self.alt([[], [body]], "tags")
        return self.close(body, end)

