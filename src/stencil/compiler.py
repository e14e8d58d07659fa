"""GrammarCompiler: turns a grammar description into a CompiledGrammar for one tokenizer.

Compiled grammars are cached by the hash of their grammar IR, so compiling the same regex or
schema twice costs a lookup. Compilation itself is lazy: the lexer's automaton and the token
masks are built on first use, so compiling takes microseconds to milliseconds.

Example::

    compiler = stencil.GrammarCompiler(tok)
    g = compiler.compile_regex(r"\\d{4}-\\d{2}-\\d{2}")
    m = stencil.Matcher(g)
"""
from __future__ import annotations

import functools
import numbers
import pickle
import re
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar, cast

from stencil import _core
from stencil._core import GrammarBuilder, GrammarError
from stencil.grammar.deadline import compile_deadline
from stencil.grammar.gc_pause import gc_paused
from stencil.grammar.regex import build_regex, regex_error
from stencil.grammar.regex.unicode import lone_surrogate
from stencil.schema_options import GbnfOptions, JsonSchemaOptions, LarkOptions, SchemaInfo, ToolCallOptions
from stencil.tokenizer import TokenizerInfo

if TYPE_CHECKING:  # typing.Unpack is 3.11+; only the type checker reads it (annotations are strings)
    from typing_extensions import Unpack

__all__ = ["GrammarCompiler", "CompiledGrammar"]

CompiledGrammar = _core.CompiledGrammar

#: Default wall-clock limit of one compile_* call, in seconds. The slowest of the 7,880 MaskBench
#: schemas compiles in about 1.3 s on a 2-core machine.
DEFAULT_COMPILE_TIMEOUT = 5.0

#: the core's default limits (defined once, in C++: CompileLimits)
_LIMITS = _core.DEFAULT_LIMITS


#: The numeric options of GrammarCompiler: (smallest, largest) value. The core's limits are
#: unsigned 32/64-bit numbers; checked here so that a bad one is named when it is given, not met
#: later as a failed cache eviction or a signature mismatch of the core.
_COUNT_OPTIONS = {"cache_size": (0, 2**63 - 1), "max_lexer_states": (1, 2**32 - 1), "lexer_fuel": (1, 2**64 - 1),
                  "mask_cache_bytes": (0, 2**64 - 1), "lexer_memory_bytes": (1, 2**64 - 1),
                  "max_threads": (1, 1 << 16)}


def _check_counts(**values: Any) -> dict[str, int]:
    """The values as ints; TypeError or ValueError naming the first one out of its range."""
    for name, v in values.items():
        lo, hi = _COUNT_OPTIONS[name]
        ok = isinstance(v, numbers.Integral) and not isinstance(v, bool)
        if not ok or not lo <= v <= hi:
            got = type(v).__name__ if not ok else repr(v)
            raise (ValueError if ok else TypeError)(
                f"GrammarCompiler: {name} must be an int in [{lo}, {hi}], got {got}")
    return {name: int(v) for name, v in values.items()}


_Method = TypeVar("_Method", bound=Callable[..., Any])
_Result = TypeVar("_Result")


def _limited(method: _Method) -> _Method:
    """Run a compile_* method under the compiler's wall-clock limit (see stencil.grammar.deadline),
    with the garbage collector held off (stencil.grammar.gc_pause); typed as the method itself, so
    that a type checker still checks its callers' arguments."""
    @functools.wraps(method)
    def run(self: GrammarCompiler, *args: Any, **kwargs: Any) -> Any:
        with compile_deadline(self.compile_timeout, method.__name__), gc_paused():
            return method(self, *args, **kwargs)
    return cast(_Method, run)


def _memoized(method: _Method) -> _Method:
    """Reuse the grammar an identical earlier call compiled (the same arguments, serialized by
    pickle: a fifth of json.dumps' time, and faithful to types and order): the front-end's work is
    skipped too, not only the core's (a 128-tool set's structural tag takes tens of milliseconds
    to build). The memo names the cache's entry, so what the cache evicts or drops is compiled
    afresh. A call given a SchemaInfo to fill, or arguments pickle cannot write, goes through as
    before."""
    @functools.wraps(method)
    def run(self: GrammarCompiler, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("info") is not None:
            return method(self, *args, **kwargs)
        try:
            key = (method.__name__, pickle.dumps((args, kwargs), protocol=5))
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):   # (too deep: the front-end says so)
            return method(self, *args, **kwargs)
        with self._lock:
            entry = self._requests.get(key)
            hit = self._cache.get(entry) if entry is not None else None
            if entry is not None and hit is not None and not hit.work_limit_reached:
                self._cache.move_to_end(entry)
                self._requests.move_to_end(key)
                return hit
        self._compiled.key = None
        compiled = method(self, *args, **kwargs)
        entry = getattr(self._compiled, "key", None)   # the cache entry the call ended in
        if entry is not None:
            with self._lock:
                self._requests[key] = entry
                while len(self._requests) > 4 * self._cache_size:
                    self._requests.popitem(last=False)
        return compiled
    return cast(_Method, run)


class GrammarCompiler:
    """Compiles grammars for one tokenizer, with a cache keyed by the grammar's hash (and a memo
    of the compile calls' arguments, so that a repeated call skips the front-end too).

    Limits guard against pathological input: ``max_lexer_states`` (lexer automaton states),
    ``lexer_fuel`` (derivative steps) and ``mask_cache_bytes`` (memory for cached masks per
    grammar). Exceeding them raises ``BudgetError`` (a ``LimitError``), never hangs. The lazy
    lexer is a cache: when it passes half of its state or fuel limit, or ``lexer_memory_bytes``,
    it is started afresh with its masks and rebuilt on demand
    (``CompiledGrammar.num_lexer_renewals``), so a long generation under a pattern with a huge
    automaton keeps flat memory and never runs out.
    ``compile_timeout`` (seconds, default 5; None for none) bounds the wall-clock time of each
    ``compile_*`` call, front-end included: past it the call raises ``stencil.CompileTimeout``
    (a ``LimitError``, no ``GrammarError``), caches nothing, and the compiler keeps working.

    Compilation is lazy, and ``compile_timeout`` does not cover what comes after it: the first
    mask of each matcher state builds the lexer states and mask entries it needs, and
    ``min_completion_tokens()`` its cost tables, which for a hostile grammar (an ``allOf`` of
    ``^(.{p})*$`` patterns, a 100,000-value enum, a 100,000-rule chain) takes seconds. Bound that
    work per call with ``Matcher(g, time_limit=seconds)``: past it a call raises
    ``stencil.TimeLimitExceeded`` (``CompileTimeout`` is one too, so one ``except`` catches both)
    and leaves the matcher as it was::

        g = compiler.compile_json_schema(schema)        # CompileTimeout past compile_timeout
        m = stencil.Matcher(g, time_limit=0.5)
        try:
            m.fill_next_token_bitmask(bitmask, 0)       # the first mask: the lazy work
        except stencil.TimeLimitExceeded:
            ...                                          # too expensive: refuse the request
    """

    def __init__(self, tokenizer_info: TokenizerInfo, *, cache_size: int = 256,
                 max_lexer_states: int = _LIMITS["max_lexer_states"], lexer_fuel: int = _LIMITS["lexer_fuel"],
                 mask_cache_bytes: int = _LIMITS["mask_cache_bytes"],
                 lexer_memory_bytes: int = _LIMITS["lexer_memory_bytes"], max_threads: int = 4,
                 mask_optimizations: dict[str, bool] | None = None,
                 compile_timeout: float | None = DEFAULT_COMPILE_TIMEOUT):
        if not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError(f"GrammarCompiler needs a stencil.TokenizerInfo, got {type(tokenizer_info).__name__}")
        self.tokenizer_info = tokenizer_info
        if compile_timeout is not None and not (isinstance(compile_timeout, (int, float)) and compile_timeout >= 0):
            raise ValueError(f"compile_timeout must be None or a number of seconds >= 0, got {compile_timeout!r}")
        self.compile_timeout = compile_timeout
        counts = _check_counts(cache_size=cache_size, max_threads=max_threads, max_lexer_states=max_lexer_states,
                               lexer_fuel=lexer_fuel, mask_cache_bytes=mask_cache_bytes,
                               lexer_memory_bytes=lexer_memory_bytes)
        cache_size, max_threads = counts.pop("cache_size"), counts.pop("max_threads")
        self._limits = counts
        # Switches for measuring the mask optimizations one by one (all on by default):
        # plain_slice, shared_masks, boundary_runs, repeat_memo, loop_skip.
        for name, on in (mask_optimizations or {}).items():
            if name not in ("plain_slice", "shared_masks", "boundary_runs", "repeat_memo", "loop_skip"):
                raise ValueError(f"unknown mask optimization {name!r}")
            self._limits[name] = bool(on)
        # keyed by the grammar's hash, with what it does not enforce where that is not empty
        self._cache: OrderedDict[int | tuple[int, tuple[Any, ...]], CompiledGrammar] = OrderedDict()
        self._cache_size = cache_size
        # (method, arguments pickled) -> its entry in _cache (see _memoized)
        self._requests: OrderedDict[tuple[str, bytes], int | tuple[int, tuple[Any, ...]]] = OrderedDict()
        self._compiled = threading.local()   # .key: the cache entry this thread's last _compile used
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._max_threads = max_threads

    # -- entry points ---------------------------------------------------------------------------
    @_limited
    def compile_grammar(self, grammar: _core.Grammar) -> CompiledGrammar:
        """Compile a grammar built with ``stencil.GrammarBuilder``.

        Example::

            b = stencil.GrammarBuilder()
            start = b.rule("start")
            b.add_alternative(start, [b.literal("yes")])
            g = compiler.compile_grammar(b.build(start))
        """
        if not isinstance(grammar, _core.Grammar):
            raise TypeError(f"compile_grammar needs a stencil Grammar (GrammarBuilder.build), got {type(grammar).__name__}")
        return self._compile(grammar)

    def _compile(self, grammar: _core.Grammar, not_enforced: tuple[Any, ...] = ()) -> CompiledGrammar:
        """The cached compiled grammar; one that enforces less than it was given is cached apart
        (``not_enforced`` is in its key), so each reports its own."""
        key = (grammar.hash(), not_enforced) if not_enforced else grammar.hash()
        self._compiled.key = key
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit.work_limit_reached:
                # The lexer's work limits are over a compiled grammar's life: one that ran out would
                # fail every later request, so it is dropped and compiled afresh.
                del self._cache[key]
                hit = None
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        compiled = _core.CompiledGrammar(grammar, self.tokenizer_info.vocabulary, **self._limits,  # type: ignore[arg-type]
                                         not_enforced=list(not_enforced))
        with self._lock:
            self._cache[key] = compiled
            # Over the process's memory limit (stencil.memory), the least recently used grammars
            # go too: their rules and expressions count against it and no eviction frees them.
            while len(self._cache) > self._cache_size or (len(self._cache) > 1 and _core.memory_over_limit()):
                self._cache.popitem(last=False)
        return compiled

    @_memoized
    @_limited
    def compile_regex(self, pattern: str, *, flags: str = "") -> CompiledGrammar:
        """The whole output must match ``pattern`` (ECMA-262 syntax, Python forms accepted).

        Example::

            g = compiler.compile_regex(r"(yes|no)")
        """
        if not isinstance(pattern, str):
            raise TypeError(f"compile_regex needs a str pattern, got {type(pattern).__name__}")
        return self.compile_grammar(regex_grammar(pattern, flags=flags))

    @_memoized
    @_limited
    def compile_json_schema(self, schema: dict[str, Any] | bool | str | bytes, *, registry: dict[str, Any] | None = None,
                            info: SchemaInfo | None = None, **options: Unpack[JsonSchemaOptions]) -> CompiledGrammar:
        """JSON texts valid for ``schema`` (a dict, a bool or JSON text; Draft 2020-12 and older).

        ``registry``: ``{uri: schema}`` of other documents that ``$ref`` may point into. ``info``: a
        ``stencil.SchemaInfo`` to fill with what was ignored, unknown keywords and formats.

        Options: keyword-only, the fields of ``stencil.JsonSchemaOptions``, where each is declared
        with its type, its default and what it does (``whitespace``, ``property_order``, the
        spellings of keys, strings and numbers, ``lenient``, ...).

        An unknown option raises TypeError naming it; a wrong value, GrammarError naming the option.
        Unsupported keywords raise GrammarError naming the keyword and JSON pointer; with
        ``lenient=True`` they are ignored and listed in the result's ``not_enforced``.

        Example::

            g = compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "integer"}}})
            g = compiler.compile_json_schema({"type": "string", "format": "x-custom", "contentSchema": {}},
                                             lenient=True)
            g.not_enforced   # [("contentSchema", "#", "...")]: what the grammar does not check
        """
        from stencil.grammar.json.schema import json_schema_grammar
        info = info if info is not None else SchemaInfo()
        grammar = json_schema_grammar(schema, registry=registry, info=info, **options)
        return self._compile(grammar, tuple((str(k), str(w), str(why)) for k, w, why in info.ignored))

    @_limited
    def compile_pydantic(self, model: Any, **options: Unpack[JsonSchemaOptions]) -> CompiledGrammar:
        """JSON texts that validate as a pydantic model (or any type pydantic can describe), with the
        options of ``compile_json_schema`` (``stencil.JsonSchemaOptions``).

        Example::

            g = compiler.compile_pydantic(MyModel, whitespace="compact")
        """
        from stencil.grammar.pydantic import pydantic_grammar
        return self.compile_grammar(pydantic_grammar(model, **options))  # type: ignore[no-untyped-call]

    @_memoized
    @_limited
    def compile_json(self, **options: Unpack[JsonSchemaOptions]) -> CompiledGrammar:
        """Any JSON value (RFC 8259; no repeated key in an object), with the options of
        ``compile_json_schema`` (``stencil.JsonSchemaOptions``).

        Example::

            g = compiler.compile_json(whitespace="compact")
        """
        from stencil.grammar.json.schema import json_schema_grammar
        return self.compile_grammar(json_schema_grammar(True, **options))

    # -- grammar front-ends: Lark, GBNF, choices, reasoning and tool-call formats --------------
    @_memoized
    @_limited
    def compile_lark(self, text: str, **options: Unpack[LarkOptions]) -> CompiledGrammar:
        """A grammar in Lark syntax, with stencil's extensions: special tokens ``<|name|>`` and
        ``<[id]>``, ``%json {schema}``, ``%regex {options}``, ``name[lazy]`` and
        ``name[stop="..."]`` rules (see ``stencil.grammar.ebnf.lark``). Options: ``start``,
        ``unused`` ("warn", "error" or "ignore"), ``json_options``.

        Example::

            g = compiler.compile_lark('start: "yes" | "no"')
        """
        from stencil.grammar.ebnf.lark import lark_grammar
        return self.compile_grammar(lark_grammar(text, tokens=self._token_table(), **cast("dict[str, Any]", options)))

    @_memoized
    @_limited
    def compile_gbnf(self, text: str, **options: Unpack[GbnfOptions]) -> CompiledGrammar:
        """A grammar in llama.cpp's GBNF (or XGrammar's EBNF); the start rule is ``root``.
        Options: ``start``, ``unused`` ("warn", "error" or "ignore").

        Example::

            g = compiler.compile_gbnf('root ::= [0-9]+ ("." [0-9]+)?')
        """
        from stencil.grammar.ebnf.gbnf import gbnf_grammar
        return self.compile_grammar(gbnf_grammar(text, tokens=self._token_table(), **options))

    @_memoized
    @_limited
    def compile_choice(self, choices: Sequence[str]) -> CompiledGrammar:
        """The whole output is exactly one of ``choices`` (strings).

        Example::

            g = compiler.compile_choice(["yes", "no", "maybe"])
        """
        from stencil.grammar.choice import choice_grammar
        return self.compile_grammar(choice_grammar(choices))

    @_memoized
    @_limited
    def compile_reasoning_json(self, schema: dict[str, Any] | bool | str | bytes, *, begin: str | int | None = "<think>",
                               end: str | int = "</think>", optional: bool = False,
                               **json_options: Unpack[JsonSchemaOptions]) -> CompiledGrammar:
        """Free reasoning between ``begin`` and ``end``, then JSON valid for ``schema``.

        ``begin``/``end`` are strings or special-token ids; a string that is the text of a special
        token of this tokenizer stands for that token. ``begin=None`` when the prompt already opened
        the reasoning block; ``optional``: the model may also answer without reasoning.

        Example::

            g = compiler.compile_reasoning_json({"type": "object"}, end="</think>")
        """
        from stencil.grammar.ebnf.ast import Namespaced
        from stencil.grammar.tagged.triggers import reasoning_then
        from stencil.grammar.json.schema import build_json_schema
        b = GrammarBuilder()
        answer = build_json_schema(Namespaced(b, "answer/"), schema, **json_options)
        rule = reasoning_then(b, answer, begin=self._marker(begin), end=self._marker(end), optional=optional)
        return self.compile_grammar(b.build(rule))

    @_memoized
    @_limited
    def compile_structural_tag(self, spec: dict[str, Any] | str, **json_options: Unpack[JsonSchemaOptions]) -> CompiledGrammar:
        """An XGrammar structural tag (a dict or JSON text): ``{"type": "structural_tag", "format":
        {...}}``, a bare format, or the legacy ``{"structures": [...], "triggers": [...]}`` form.
        Formats: const_string, json_schema (styles json, qwen_xml), regex, grammar (GBNF),
        any_text, sequence, or, optional, plus, star, repeat, tag, triggered_tags,
        tags_with_separator, dispatch, token, any_tokens, token_triggered_tags, token_dispatch (see
        ``stencil.grammar.tagged.structural_tag``).
        Text that is a special token's text stands for that token. ``json_options`` apply to every
        json_schema format. A bad spec raises GrammarError naming its JSON path.

        Example::

            g = compiler.compile_structural_tag({"type": "structural_tag", "format": {
                "type": "triggered_tags", "triggers": ["<function="], "tags": [{"type": "tag",
                "begin": "<function=add>", "content": {"type": "json_schema", "json_schema": {
                "type": "object"}}, "end": "</function>"}]}})
        """
        from stencil.grammar.tagged.structural_tag import build_structural_tag
        b = GrammarBuilder()
        rule = build_structural_tag(b, spec, tokens=self._token_table(), specials=self._specials(),
                                    json_options=dict(json_options))
        return self.compile_grammar(b.build(rule))

    def _tool_error(self, err: GrammarError, format: str, tools: Sequence[dict[str, Any]], options: dict[str, Any],
                    json_options: dict[str, Any]) -> GrammarError:
        """``err`` naming the tool whose schema failed (the structural tag's path names a tag): each
        tool's calls are built alone until one fails (only on this error path)."""
        from stencil.grammar.tagged.structural_tag import build_structural_tag
        from stencil.grammar.tagged.tool_presets import tool_call_format
        from stencil.grammar.tagged.triggers import tool_specs
        for i, tool in enumerate(tools):
            try:
                name = tool_specs([tool])[0][0]
                spec = tool_call_format(format, [tool], **{**options, "tool_choice": "auto"})
                build_structural_tag(GrammarBuilder(), spec, tokens=self._token_table(), specials=self._specials(),
                                     json_options=dict(json_options))
            except GrammarError as e:
                reason = re.sub(r"^structural tag: \$\S*: ", "", str(e))
                return GrammarError(f"tool {name!r} (tools[{i}]): {reason}")
        return err

    @_memoized
    @_limited
    def compile_tool_calls(self, tools: Sequence[dict[str, Any]], *, trigger: str | int = "<tool_call>",
                           end: str | int | None = "</tool_call>", format: str | None = None,
                           **options: Unpack[ToolCallOptions]) -> CompiledGrammar:
        """Free text, then after ``trigger`` a JSON object ``{"name": ..., "arguments": ...}`` whose
        arguments are valid for the named tool's ``parameters`` schema, then ``end``.

        ``format``: a model family's own tool-call text instead ("llama3", "qwen", "qwen-coder",
        "deepseek", "deepseek-v3.1", "kimi", "mistral", "harmony"; see
        ``stencil.grammar.tagged.tool_presets``), with options ``reasoning`` (True: a leading reasoning
        block in the family's form; "opened": the prompt already opened it), ``tool_choice``
        ("auto", "required" or a tool name), ``parallel`` (more than one call) and
        ``json_options``; ``trigger`` and ``end`` do not apply then.

        ``tools``: OpenAI-style ``{"type": "function", "function": {...}}`` or ``{"name",
        "parameters"}`` dicts, and OpenAI's custom tools ``{"type": "custom", "name", "format"}``
        (a Lark grammar, a regex or free text; see ``stencil.grammar.tagged.custom_tools``). ``trigger``/``end``: strings or special-token ids (a string that is
        a special token's text stands for the token). Options (see
        ``stencil.grammar.tagged.triggers.tool_calls``): ``text_before``, ``require_call``, ``max_calls``,
        ``name_key``, ``args_key``, ``json_options``, and ``reasoning=(begin, end)`` to put a
        reasoning block first.

        Example::

            g = compiler.compile_tool_calls([{"name": "add", "parameters": {...}}], trigger="<tool_call>")
            g = compiler.compile_tool_calls(tools, format="qwen", reasoning=True)
        """
        opts: dict[str, Any] = dict(options)   # (each branch passes on its own subset)
        if format is not None:
            from stencil.grammar.tagged.tool_presets import tool_call_format
            if (trigger, end) != ("<tool_call>", "</tool_call>"):
                raise TypeError(f"compile_tool_calls: trigger and end do not apply with format={format!r} "
                                "(the format fixes the call text)")
            json_options = opts.pop("json_options", None) or {}
            try:
                return self.compile_structural_tag(tool_call_format(format, tools, **opts), **json_options)
            except GrammarError as e:
                raise self._tool_error(e, format, tools, opts, json_options) from None
        from stencil.grammar.tagged.triggers import reasoning_then, tool_calls
        reasoning = opts.pop("reasoning", None)
        b = GrammarBuilder()
        rule = tool_calls(b, tools, trigger=self._marker(trigger), end=self._marker(end), **opts)
        if reasoning is not None:
            r_begin, r_end = reasoning
            rule = reasoning_then(b, rule, begin=self._marker(r_begin), end=self._marker(r_end))
        return self.compile_grammar(b.build(rule))

    def _token_table(self) -> Any:
        from stencil.grammar.ebnf.ast import TokenTable
        tok = self.tokenizer_info
        return TokenTable(lookup=tok.token_id, is_special=tok.is_special, text=tok.token_bytes,
                          vocab_size=tok.vocab_size)

    def _specials(self) -> dict[str, int]:
        """{text: id} of the tokenizer's special tokens."""
        return {name: i for i, name in self.tokenizer_info.special_token_names.items() if name}

    def _marker(self, m: Any) -> Any:
        """A string that is the text of a special token becomes that token's id."""
        if isinstance(m, str):
            try:
                t = self.tokenizer_info.token_id(m)
            except KeyError:
                return m
            if self.tokenizer_info.is_special(t):
                return t
        return m

    def compile_async(self, fn: Callable[..., _Result], *args: Any, **kwargs: Any) -> Future[_Result]:
        """Run ``fn(*args, **kwargs)`` (a ``compile_*`` method, or a function that calls one) on a worker thread.

        Example::

            fut = compiler.compile_async(compiler.compile_regex, r"[a-z]+")
            g = fut.result()
        """
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._max_threads, thread_name_prefix="stencil-compile")
        return self._pool.submit(fn, *args, **kwargs)

    @property
    def num_cached_grammars(self) -> int:
        """How many compiled grammars the cache holds now (at most ``cache_size``)."""
        with self._lock:
            return len(self._cache)

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()
            self._requests.clear()

    def discard(self, grammar: CompiledGrammar) -> bool:
        """Drop ``grammar`` from the cache; True where it was there. A server refusing a grammar
        (too expensive) drops it so that its lazy state (lexer, masks) is freed with its last
        matcher, not kept until later grammars push it out of the cache.

        Example::

            g = compiler.compile_regex("[a-z]+")
            compiler.discard(g)         # True: the next compile_regex("[a-z]+") builds afresh
        """
        with self._lock:
            for key, cached in self._cache.items():
                if cached is grammar:
                    del self._cache[key]
                    return True
        return False


def regex_grammar(pattern: str, *, flags: str = "") -> _core.Grammar:
    """The grammar whose language is the regex ``pattern`` (matched as a whole)."""
    b = GrammarBuilder()
    expr = build_regex(b, pattern, anchored=True, flags=flags)
    start = b.rule("start")
    if b.re_nullable(expr):
        b.add_alternative(start, [])
    b.add_alternative(start, [b.lexeme(expr, "regex")])
    try:
        return b.build(start)
    except GrammarError as e:
        # a lone surrogate matches nothing; where that empties the language, it is the news
        bad = lone_surrogate(pattern)
        if bad is None or "language is empty" not in str(e):
            raise
        raise regex_error(pattern, bad, f"the pattern holds a lone surrogate U+{ord(pattern[bad]):04X} (no UTF-8 text "
                          "holds one, so nothing matches)") from None
