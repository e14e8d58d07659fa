"""The dead-end walker of ``python -m benchmarks.dead_ends`` (issue 40), shared with the tests
(``test_json_schema_dead_end_walks.py``): the schemas (``suite_cases``, ``maskbench_cases``,
``unique_items_cases``), seeded random walks over a real vocabulary's masks (``Walker``), the
verdict on each ended output (``Judge``) and the counts (``Tally``). The command's docstring says
what a walk meets and how it is counted.

Example::

    walker, tally = Walker(Vocab(info)), Tally()
    run_case(unique_items_cases()[0], stencil.GrammarCompiler(info), walker, tally, walks=4)
"""
from __future__ import annotations

import collections
import functools
import glob
import hashlib
import json
import os
import random
import re
import time
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np

import stencil
from tests.support.datasets import JSON_SCHEMA_SUITE, MASKBENCH_SAMPLE
from stencil.bitmask import bitmask_to_bool

__all__ = ["Case", "Vocab", "Judge", "Walker", "Tally", "suite_cases", "maskbench_cases",
           "unique_items_cases", "load_cases", "run_case", "print_table", "print_findings"]

ORDERS = ("definition", "any")
WHITESPACES = ("compact", "flexible", 2)
CONFIGS = [(order, ws) for order in ORDERS for ws in WHITESPACES]
# (style, budget-aware): walk i takes STYLES[i % 6]
STYLES = [("repeat", False), ("close", True), ("uniform", False), ("repeat", True), ("close", False),
          ("uniform", True)]
DRAFTS = {"draft2020-12": "https://json-schema.org/draft/2020-12/schema",
          "draft2019-09": "https://json-schema.org/draft/2019-09/schema",
          "draft7": "http://json-schema.org/draft-07/schema#", "draft6": "http://json-schema.org/draft-06/schema#",
          "draft4": "http://json-schema.org/draft-04/schema#", "draft3": "http://json-schema.org/draft-03/schema#"}
FINDINGS = ("dead", "budget_dead", "wrong", "refused", "crash", "slow")
COLUMNS = ("walks", "ended", "wrong", "format", "undecided", "dead", "refused", "budget_dead", "over_budget", "cut",
           "slow", "crash")


@dataclass
class Case:
    source: str           # "suite", "maskbench" or "unique"
    name: str
    schema: object
    registry: dict | None = None


# ---------------------------------------------------------------------------------------------
# The schemas.


def suite_cases(root: str) -> list[Case]:
    """Every group of every draft folder of the suite at ``root`` (top level, optional/, its format/)."""
    from tests.support.json_schema_suite import suite_registry
    registry = suite_registry(root)
    out = []
    for draft_dir in sorted(glob.glob(os.path.join(root, "tests", "*"))):
        draft = os.path.basename(draft_dir)
        files = sorted(glob.glob(os.path.join(draft_dir, "**", "*.json"), recursive=True))
        for path in files:
            rel = os.path.relpath(path, draft_dir).replace(os.sep, "/")
            with open(path, encoding="utf-8") as f:
                groups = json.load(f)
            for i, group in enumerate(groups):
                schema = group["schema"]
                if draft != "draft2020-12" and isinstance(schema, dict) and "$schema" not in schema:
                    schema = {"$schema": DRAFTS.get(draft, DRAFTS["draft2020-12"]), **schema}
                out.append(Case("suite", f"{draft}/{rel}#{i} {group['description']}", schema, registry))
    return out


def maskbench_cases(root: str, count: int = 500) -> list[Case]:
    """The ``count`` MaskBench files at ``root`` with the smallest SHA-256 of their name."""
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(root, "*.json")))
    names = sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())[:count]
    out = []
    for name in names:
        with open(os.path.join(root, name), encoding="utf-8") as f:
            out.append(Case("maskbench", name, json.load(f)["schema"]))
    return out


def _arr(items, n: int, **extra) -> dict:
    return {"type": "array", "items": items, "uniqueItems": True, **extra, "minItems": n}


def unique_items_cases() -> list[Case]:
    """Arrays under ``uniqueItems`` whose items take few distinct values, each at ``minItems`` one
    below, at and (where marked ``over``) one above that number; ``maxItems`` left open or at the
    number of values. Names: ``unique/<items>/min<k>``."""
    boolean = {"type": "boolean"}
    obj2 = {"type": "object", "properties": {"a": boolean, "b": boolean}, "required": ["a", "b"],
            "additionalProperties": False}
    items = {   # name: (items schema, how many distinct values)
        "enum3": ({"enum": [1, "x", None]}, 3),
        "enum_num": ({"enum": [0, 1.5, 2]}, 3),
        "boolean": (boolean, 2),
        "bool_null": ({"type": ["boolean", "null"]}, 3),
        "int0-2": ({"type": "integer", "minimum": 0, "maximum": 2}, 3),
        "int-1-1": ({"type": "integer", "minimum": -1, "maximum": 1}, 3),
        "int_mult5": ({"type": "integer", "minimum": 0, "maximum": 10, "multipleOf": 5}, 3),
        "num_mult_half": ({"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.5}, 3),
        "const": ({"const": 7}, 1),
        "const_obj": ({"const": {"k": [1, 2]}}, 1),
        "str_max1": ({"type": "string", "maxLength": 1, "pattern": "^[ab]*$"}, 3),
        "str_enum": ({"type": "string", "enum": ["a", "ab", "b"]}, 3),
        "str_pattern": ({"type": "string", "pattern": "^[xy]$"}, 2),
        "obj2": (obj2, 4),
        "obj_enum": ({"type": "object", "properties": {"k": {"enum": ["p", "q"]}, "v": boolean},
                      "required": ["k", "v"], "additionalProperties": False}, 4),
        "obj_optional": ({"type": "object", "properties": {"a": boolean, "b": {"const": 1}},
                          "additionalProperties": False}, 6),
        "obj_required_one": ({"type": "object", "properties": {"a": boolean, "b": boolean}, "required": ["a"],
                              "additionalProperties": False}, 6),
        "arr_bool": ({"type": "array", "items": boolean, "maxItems": 1}, 3),
        "arr_bool2": ({"type": "array", "items": boolean, "minItems": 1, "maxItems": 2}, 6),
        "arr_unique_bool": ({"type": "array", "items": boolean, "uniqueItems": True}, 5),
        "arr_int": ({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 1}, "minItems": 2,
                     "maxItems": 2}, 4),
        "arr_obj": ({"type": "array", "items": {"type": "object", "properties": {"a": boolean}, "required": ["a"],
                                                "additionalProperties": False}, "maxItems": 1}, 3),
    }
    out = []
    for name, (item, n) in items.items():
        for k in sorted({max(n - 1, 1), n}):
            out.append(Case("unique", f"unique/{name}/min{k}", _arr(item, k)))
        out.append(Case("unique", f"unique/{name}/min{n}max{n}", _arr(item, n, maxItems=n)))
    more = {
        # untyped items: true, false and null are the only values of one token's spelling
        "untyped/min3": {"uniqueItems": True, "minItems": 3},
        "untyped/array": {"type": "array", "uniqueItems": True},
        "untyped/plain": {"uniqueItems": True},
        "prefix_enum/min3": {"type": "array", "prefixItems": [{"enum": [1, 2]}], "items": {"enum": [1, 2, 3]},
                             "uniqueItems": True, "minItems": 3},
        "prefix_bool/min3": {"type": "array", "prefixItems": [boolean, boolean], "items": {"type": "null"},
                             "uniqueItems": True, "minItems": 3},
        "prefix_obj/min4": {"type": "array", "prefixItems": [obj2], "items": obj2, "uniqueItems": True,
                            "minItems": 4},
        # nested: unique arrays of unique arrays, and an object holding a unique array
        "nested_arrays/min4": _arr(_arr(boolean, 0), 4),
        "nested_int/min3": _arr(_arr({"type": "integer", "minimum": 0, "maximum": 1}, 1), 3),
        "in_object/min3": {"type": "object", "properties": {"xs": _arr({"enum": ["a", "b", "c"]}, 3)},
                           "required": ["xs"], "additionalProperties": False},
        "obj_of_arr/min3": _arr({"type": "object", "properties": {"v": _arr(boolean, 0, maxItems=1)},
                                 "required": ["v"], "additionalProperties": False}, 3),
        # one over the number of values: no valid document (a compile error, or a dead end at once)
        "boolean/over3": _arr(boolean, 3),
        "int0-2/over4": _arr({"type": "integer", "minimum": 0, "maximum": 2}, 4),
    }
    out += [Case("unique", f"unique/{name}", schema) for name, schema in more.items()]
    return out


# ---------------------------------------------------------------------------------------------
# The vocabulary and the verdict.


class Vocab:
    """A ``TokenizerInfo``'s token bytes, its EOS ids, the closing tokens (made of ``"]}`` and
    white space), and the ids by their bytes (for the repeat style)."""

    def __init__(self, info: stencil.TokenizerInfo):
        self.info = info
        self.size = info.vocab_size
        self.eos = sorted(set(info.eos_token_ids))
        self.tokens = [info.token_bytes(i) if i < info.num_tokens else b"" for i in range(self.size)]
        self.by_bytes: dict = {}
        for i, b in enumerate(self.tokens):
            if b and i not in self.eos and not info.is_special(i):
                self.by_bytes.setdefault(b, i)
        self.closers = np.array([i for i, b in enumerate(self.tokens) if b.strip(b" \t\n\r") and
                                 set(b) <= set(b'"]} \t\n\r') and not info.is_special(i)], dtype=np.int64)


def _is_integer(_checker, x) -> bool:
    if isinstance(x, float):
        return x.is_integer()
    return not isinstance(x, bool) and (isinstance(x, int) or (isinstance(x, Decimal) and x.is_finite() and
                                                                x == x.to_integral_value()))


def _is_number(_checker, x) -> bool:
    return isinstance(x, (int, float, Decimal)) and not isinstance(x, bool)


def _number(text: str) -> Decimal:
    """A JSON number as a Decimal; a zero whatever its exponent (0E99999999999999999999 is 0)."""
    mantissa = re.split("[eE]", text)[0]
    return Decimal(0) if not mantissa.strip("-0.") else Decimal(text)


def _pairs(pairs):
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError("a repeated key")
    return dict(pairs)


def _refuse_constant(name):
    raise ValueError(f"{name} is no JSON")


# ECMA-262's character classes (Python's \s leaves out U+FEFF and takes U+001C-U+001F and U+0085;
# its \d and \w are Unicode)
_ECMA_CLASSES = {"s": "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff",
                 "d": "0-9", "w": "A-Za-z0-9_"}


@functools.lru_cache(maxsize=4096)
def ecma_regex(pattern: str):
    r"""``pattern`` read as ECMA-262 reads it (u flag), by the ``regex`` package: ``\d``, ``\w``
    and ``\s`` and their complements as ECMA's classes, ``\cX``, ``$`` only at the end,
    ``\p{...}`` as ``regex`` knows them."""
    import regex
    out, i, in_class = [], 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in _ECMA_CLASSES:
                out.append(_ECMA_CLASSES[nxt] if in_class else f"[{_ECMA_CLASSES[nxt]}]")
            elif nxt.lower() in _ECMA_CLASSES and not in_class:
                out.append(f"[^{_ECMA_CLASSES[nxt.lower()]}]")
            elif nxt == "c" and i + 2 < len(pattern) and pattern[i + 2].isalpha():
                out.append(f"\\x{ord(pattern[i + 2]) % 32:02x}")
                i += 1
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        elif ch == "$" and not in_class:
            ch = "\\Z"
        out.append(ch)
        i += 1
    return regex.compile("".join(out), regex.V0)


def _search(pattern: str, text: str) -> bool:
    return ecma_regex(pattern).search(text) is not None


def _pattern(validator, pattern, instance, _schema):
    from jsonschema import ValidationError
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, patterns, instance, _schema):
    if validator.is_type(instance, "object"):
        for pattern, sub in patterns.items():
            for k, v in instance.items():
                if _search(pattern, k):
                    yield from validator.descend(v, sub, path=k, schema_path=pattern)


def _additional_properties(validator, extra, instance, schema):
    from jsonschema import ValidationError
    if not validator.is_type(instance, "object"):
        return
    named, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    keys = [k for k in instance if k not in named and not any(_search(p, k) for p in patterns)]
    if validator.is_type(extra, "object"):
        for k in keys:
            yield from validator.descend(instance[k], extra, path=k)
    elif extra is False and keys:
        yield ValidationError(f"additional properties {keys!r}")


class Judge:
    """Whether an output is valid for a schema, by ``jsonschema`` (the draft of the schema's
    ``$schema``, else 2020-12) with numbers as ``Decimal`` (1.0 and 1e3 are integers, 0.1 is a
    tenth) and patterns read as ECMA-262 reads them (``ecma_regex``): ``(verdict, detail)``, the
    verdict "valid", "wrong", "format" (valid but for a format check) or "undecided".

    The ``$schema`` of the schema and of the registry's documents of the same draft is dropped
    once the draft is chosen: ``jsonschema`` would otherwise switch to its own validator class (and
    its float numbers) at every ``$ref`` into a document that names its draft."""

    def __init__(self, schema, registry: dict | None = None):
        import referencing
        import referencing.jsonschema
        from jsonschema import validators
        exact = json.loads(json.dumps(schema), parse_float=Decimal)
        base = validators.validator_for(exact, default=validators.Draft202012Validator)
        cls = validators.extend(base, validators={"pattern": _pattern, "patternProperties": _pattern_properties,
                                                  "additionalProperties": _additional_properties},
                                type_checker=base.TYPE_CHECKER.redefine_many({"integer": _is_integer,
                                                                             "number": _is_number}))
        spec = referencing.jsonschema.specification_with(base.META_SCHEMA.get("$schema", ""),
                                                         default=referencing.jsonschema.DRAFT202012)
        dialect = exact.get("$schema") if isinstance(exact, dict) else None
        resources = [(uri, referencing.Resource.from_contents(_without_dialect(doc, dialect), default_specification=spec))
                     for uri, doc in (registry or {}).items()]
        reg = referencing.Registry().with_resources(resources)
        exact = _without_dialect(exact, dialect)
        self.plain = cls(exact, registry=reg)
        self.formats = cls(exact, registry=reg, format_checker=base.FORMAT_CHECKER)

    def __call__(self, data: bytes) -> tuple[str, str]:
        import decimal
        with decimal.localcontext() as ctx:
            ctx.prec, ctx.Emax, ctx.Emin = 400, decimal.MAX_EMAX, decimal.MIN_EMIN
            try:
                value = json.loads(data.decode("utf-8"), parse_float=_number, parse_constant=_refuse_constant,
                                   object_pairs_hook=_pairs)
            except decimal.DecimalException as e:
                return "undecided", f"a number Decimal cannot hold: {type(e).__name__}"
            except (UnicodeDecodeError, ValueError) as e:
                return "wrong", f"not JSON: {e}"
            try:
                error = next(iter(self.plain.iter_errors(value)), None)
                if error is not None:
                    return "wrong", f"{error.message[:200]} at {error.json_path}"
                error = next(iter(self.formats.iter_errors(value)), None)
            except Exception as e:   # a number Decimal cannot reduce, a pattern not even regex reads, a lost $ref
                return "undecided", f"{type(e).__name__}: {str(e)[:200]}"
        if error is not None:
            return "format", f"{error.message[:200]} at {error.json_path}"
        return "valid", ""


def _without_dialect(doc, dialect: str | None):
    """The document without its ``$schema`` where that names the root's draft (or none)."""
    if not isinstance(doc, dict) or str(doc.get("$schema", dialect)).rstrip("#") != str(dialect).rstrip("#"):
        return doc
    return {k: v for k, v in doc.items() if k != "$schema"}


# ---------------------------------------------------------------------------------------------
# The walks.


class Starts:
    """Where items, keys and values begin in the output written so far (after ``[``, ``{``, ``,``
    and ``:`` outside strings, white space skipped), fed token by token."""

    def __init__(self):
        self.out = bytearray()
        self.starts: list = []     # (position, the delimiter before it)
        self.in_string = self.escape = False
        self.pending: int | None = None

    def feed(self, data: bytes) -> None:
        for b in data:
            pos = len(self.out)
            self.out.append(b)
            if self.in_string:
                if self.escape:
                    self.escape = False
                elif b == 0x5C:
                    self.escape = True
                elif b == 0x22:
                    self.in_string = False
                continue
            if self.pending is not None and b not in b" \t\n\r":
                self.starts.append((pos, self.pending))
                self.pending = None
            if b == 0x22:
                self.in_string = True
            elif b in b"[{,:":
                self.pending = b

    def continuations(self) -> list[bytes]:
        """The bytes that followed each earlier start where the output now repeats it: the current
        item, key or value written so far (empty just after a delimiter) is what stood after an
        earlier start of the same kind (``:`` apart from the rest)."""
        if self.pending is not None:
            here, kind = len(self.out), self.pending
        elif self.starts:
            here, kind = self.starts[-1]
        else:
            return []
        cur = bytes(self.out[here:])
        colon = kind == 0x3A
        out = []
        for pos, k in self.starts:
            if pos >= here or (k == 0x3A) != colon:
                continue
            if self.out[pos:pos + len(cur)] == cur and pos + len(cur) < here:
                out.append(bytes(self.out[pos + len(cur):min(pos + len(cur) + 24, here)]))
        return out


@dataclass
class WalkResult:
    how: str            # "ended", "dead", "refused", "cut", "slow"
    text: bytes
    tokens: list        # the ids written
    detail: str = ""
    # ("budget_dead" or "over_budget", text then): where a budget-aware walk went on without its budget
    budget_events: list = field(default_factory=list)


class Walker:
    """Random walks over one vocabulary: ``walk(grammar, rng, style, budget_aware, max_tokens)``."""

    def __init__(self, vocab: Vocab, time_limit: float = 2.0):
        self.vocab = vocab
        self.bm = stencil.allocate_token_bitmask(1, vocab.size)
        self.time_limit = time_limit

    def allowed(self, m: stencil.Matcher, remaining: int | None) -> np.ndarray:
        m.fill_next_token_bitmask(self.bm, 0, remaining_tokens=remaining)
        return bitmask_to_bool(self.bm, self.vocab.size)[0]

    def walk(self, grammar, rng: random.Random, style: str, budget_aware: bool, max_tokens: int) -> WalkResult:
        """One walk. A budget-aware one whose budget mask is empty (``budget_dead`` where the plain
        mask is not, ``over_budget`` where the budget is spent and the output unfinished) goes on
        with plain masks, so that a dead end behind it is still found."""
        m = stencil.Matcher(grammar, time_limit=self.time_limit)
        starts = Starts()
        written: list = []
        events: list = []
        cap, budget = max_tokens, None
        stop = {"close": 0.9, "uniform": 0.5, "repeat": 0.2}[style]

        def result(how: str, detail: str = "") -> WalkResult:
            return WalkResult(how, bytes(starts.out), written, detail, events)

        try:
            least = m.min_completion_tokens() if budget_aware else None
            budget = None if least is None else least + rng.randint(0, 48)
            while True:
                remaining = None if budget is None else budget - len(written)
                mask = self.allowed(m, remaining)
                eos = bool(mask[self.vocab.eos].any())
                mask[self.vocab.eos] = False
                ids = np.flatnonzero(mask)
                if len(ids) == 0 and not eos:
                    if remaining is None or (remaining > 0 and not self.allowed(m, None).any()):
                        return result("dead")
                    events.append(("over_budget" if remaining == 0 else "budget_dead", bytes(starts.out)))
                    budget, cap = None, len(written) + max_tokens
                    continue
                if eos and (len(ids) == 0 or rng.random() < stop):
                    return result("ended")
                if budget is None and len(written) >= cap:
                    return result("cut")
                late = budget is None and len(written) >= cap - max_tokens // 4
                t = self.choose(mask, ids, starts, rng, "close" if late else style)
                if not m.accept_token(t):
                    return result("refused", f"the mask allowed {self.vocab.tokens[t]!r}, accept_token refused it")
                starts.feed(self.vocab.tokens[t])
                written.append(t)
        except stencil.TimeLimitExceeded as e:
            return result("slow", str(e).split(" exceeded")[0])

    def explain(self, grammar, r: WalkResult) -> str:
        """Where a dead end begins: the last tokens written, and the shortest prefix of the text
        after which the plain mask is empty when it is fed one byte at a time (or where those
        bytes are refused, or that they are not dead that way: the tokens' path only)."""
        last = "|".join(self.vocab.tokens[t].decode("utf-8", "backslashreplace") for t in r.tokens[-6:])
        m = stencil.Matcher(grammar, time_limit=self.time_limit)
        where = "fed byte by byte, never empty: a dead end of this token path only"
        try:
            for i in range(len(r.text)):
                if not m.accept_bytes(r.text[i:i + 1]):
                    where = f"byte by byte, byte {i} is refused"
                    break
                if not self.allowed(m, None).any():
                    where = f"byte by byte, dead after {i + 1} bytes: {r.text[:i + 1].decode('utf-8', 'replace')!r}"
                    break
        except stencil.TimeLimitExceeded:
            where = "byte by byte, a mask over the time limit"
        return f"last tokens {'...|' + last!r}; {where}"

    def choose(self, mask: np.ndarray, ids: np.ndarray, starts: Starts, rng: random.Random, style: str) -> int:
        if style == "repeat" and rng.random() < 0.85:
            found = []
            for tail in starts.continuations():
                for k in range(1, len(tail) + 1):
                    t = self.vocab.by_bytes.get(tail[:k])
                    if t is not None and mask[t]:
                        found.append(t)
            if found:
                return rng.choice(found)
        if rng.random() < (0.8 if style == "close" else 0.25):
            closers = self.vocab.closers[mask[self.vocab.closers]]
            if len(closers):
                return int(closers[rng.randrange(len(closers))])
        return int(ids[rng.randrange(len(ids))])


# ---------------------------------------------------------------------------------------------
# One schema under the six configurations.


@dataclass
class Tally:
    """Counts per (source, configuration), counts per source of what did not compile, and the
    findings (kind, case, options, style, text, detail)."""
    counts: dict = field(default_factory=lambda: collections.defaultdict(collections.Counter))
    schemas: dict = field(default_factory=lambda: collections.defaultdict(collections.Counter))
    findings: list = field(default_factory=list)


def config_name(order: str, ws) -> str:
    return f"{order}/{ws if isinstance(ws, str) else f'indent{ws}'}"


def _seed(*parts) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "little")


def run_case(case: Case, compiler: stencil.GrammarCompiler, walker: Walker, tally: Tally, *, walks: int,
             max_tokens: int = 160, seconds: float | None = None, seed: int = 0, configs=CONFIGS) -> None:
    """Every configuration of ``case``: compile, walk ``walks`` times (while the schema's
    ``seconds`` last: each configuration gets its share, and one walk at least), judge, tally."""
    t0 = time.perf_counter()
    judge = None
    for n, (order, ws) in enumerate(configs):
        where = (case.source, config_name(order, ws))
        share = None if seconds is None else t0 + seconds * (n + 1) / len(configs)
        if share is not None and time.perf_counter() > t0 + 2 * seconds:
            tally.schemas[case.source]["configs left out (time)"] += len(configs) - n
            return
        try:
            g = compiler.compile_json_schema(case.schema, registry=case.registry, whitespace=ws, property_order=order)
        except stencil.CompileTimeout:
            tally.schemas[case.source]["compile timeout"] += n == 0
            return
        except (stencil.GrammarError, stencil.BudgetError):   # (a work limit: counted as before)
            tally.schemas[case.source]["unsupported"] += n == 0
            return
        except Exception as e:   # a crash of the compiler is a finding of its own
            tally.schemas[case.source]["crash"] += n == 0
            tally.findings.append(("crash", case, config_name(order, ws), "", b"", f"{type(e).__name__}: {e}"))
            return
        tally.schemas[case.source]["compiled"] += n == 0
        rng = random.Random(_seed(case.name, order, ws, seed))
        for i in range(walks):
            if i and share is not None and time.perf_counter() > share:
                tally.counts[where]["walks left out"] += walks - i
                break
            style, budget_aware = STYLES[i % len(STYLES)]
            try:
                r = walker.walk(g, rng, style, budget_aware, max_tokens)
            except Exception as e:   # an error of the engine is a finding of its own
                r = WalkResult("crash", b"", [], f"{type(e).__name__}: {e}")
            if r.how == "dead":
                r.detail = walker.explain(g, r)
            judge = record(tally, case, config_name(order, ws), f"{style}/{'budget' if budget_aware else 'plain'}",
                           r, judge)


def record(tally: Tally, case: Case, config: str, how: str, r: WalkResult, judge: Judge | None) -> Judge | None:
    """Counts one walk (and judges its output where it ended); returns the case's judge, made
    at its first output."""
    c = tally.counts[(case.source, config)]
    c["walks"] += 1
    for event, text in r.budget_events:
        c[event] += 1
        tally.findings.append((event, case, config, how, text, ""))
    if r.how != "ended":
        c[r.how] += 1
        if r.how in FINDINGS:
            tally.findings.append((r.how, case, config, how, r.text, r.detail))
        return judge
    c["ended"] += 1
    verdict, detail = "undecided", "jsonschema cannot read the schema"
    try:
        judge = judge or Judge(case.schema, case.registry)
        verdict, detail = judge(r.text)
    except Exception as e:
        detail = f"{type(e).__name__}: {str(e)[:200]}"
    if verdict != "valid":
        c[verdict] += 1
        if verdict in ("wrong", "format", "undecided"):
            tally.findings.append((verdict, case, config, how, r.text, detail))
    return judge


# ---------------------------------------------------------------------------------------------
# Report.


def print_table(tally: Tally, elapsed: float) -> None:
    print(f"\n{'source':10s} {'configuration':18s}" + "".join(f" {c:>11s}" for c in COLUMNS))
    total: collections.Counter = collections.Counter()
    for (source, config), c in sorted(tally.counts.items()):
        total.update(c)
        print(f"{source:10s} {config:18s}" + "".join(f" {c[k]:>11d}" for k in COLUMNS))
    print(f"{'all':10s} {'':18s}" + "".join(f" {total[k]:>11d}" for k in COLUMNS))
    left = sum(c["walks left out"] for c in tally.counts.values())
    print(f"\nwalks left out for time: {left}")
    for source, c in sorted(tally.schemas.items()):
        print(f"{source}: " + ", ".join(f"{v} {k}" for k, v in sorted(c.items())))
    print(f"run time {elapsed:.0f} s")


def print_findings(tally: Tally, kinds=("dead", "refused", "wrong", "crash", "budget_dead", "format", "undecided"),
                   briefly=("over_budget", "slow")) -> None:
    """Every finding of ``kinds`` with its text (the same text of one schema and configuration
    once, with a count), each schema printed once; those of ``briefly`` as counts per schema."""
    printed: set = set()
    for kind in kinds:
        # grouped by schema and configuration, the shortest text first (the best reproducer)
        rows = sorted((f for f in tally.findings if f[0] == kind), key=lambda f: (f[1].name, f[2], len(f[4])))
        if rows:
            print(f"\n== {kind}: {len(rows)}")
        seen: collections.Counter = collections.Counter((f[1].name, f[2], f[4]) for f in rows)
        for _, case, config, style, text, detail in rows:
            key = (case.name, config, text)
            n = seen.pop(key, 0)
            if not n:
                continue
            times = f" (x{n})" if n > 1 else ""
            print(f"- {case.source} {case.name!r} {config} {style}{times}{': ' + detail if detail else ''}")
            if case.name not in printed:
                printed.add(case.name)
                schema = json.dumps(case.schema)
                print(f"    schema {schema if len(schema) <= 300 else schema[:300] + '...'}")
            print(f"    text   {text.decode('utf-8', 'backslashreplace')!r}")
    for kind in briefly:
        per = collections.Counter(f[1].name for f in tally.findings if f[0] == kind)
        if per:
            print(f"\n== {kind}: {sum(per.values())} walks, per schema: "
                  + ", ".join(f"{n} {k}" for k, n in per.most_common()))


def load_cases(data: str, sources: list[str], limit: int | None, match: str | None, maskbench_count: int) -> list:
    suite = os.path.join(data, "json-schema-test-suite")
    mb = os.path.join(data, "maskbench-dev")
    cases: list = []
    if "unique" in sources:
        cases += unique_items_cases()[:limit]
    if "suite" in sources:
        cases += suite_cases(suite if os.path.isdir(suite) else JSON_SCHEMA_SUITE)[:limit]
    if "maskbench" in sources:
        cases += maskbench_cases(mb if os.path.isdir(mb) else MASKBENCH_SAMPLE, maskbench_count)[:limit]
    if match:
        cases = [c for c in cases if re.search(match, c.name)]
    return cases
