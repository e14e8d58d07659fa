"""Tool calling in every family's format (issue 44), on tool sets no engine was tuned on
(``tests.support.schema_generator``'s records as tools' parameters):

- compile: a set of 1, 8 and 128 tools compiled cold (a fresh compiler over the same tokenizer)
  and again (the compiler's cache), then the first mask; XGrammar's
  ``get_model_structural_tag`` compiled for the same set where it has the family;
- calls: random walks under each family's grammar (tokens drawn at random among those the
  budget-aware mask allows: what a model with random weights writes, so every call is the
  grammar's doing), half with ``tool_choice`` auto and half required; each output read back
  through the family's reading (``tool_presets.FAMILIES``): calls that end, arguments valid for
  their tool (jsonschema), and the same calls read at random cut points (streaming); and the
  time of those budget-aware masks (mean per token; the largest, and the most of any one walk:
  the first walk over each grammar fills its cost memos cold).

    python -m benchmarks.tool_calls --walks 200
    python -m benchmarks.tool_calls --tokenizer qwen --families qwen,qwen-coder --walks 50
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from typing import Any

import stencil
from benchmarks.maskbench.engines.xgrammar_engine import XGrammarEngine
from tests.support.schema_generator import tool_set
from tests.support.tokenizers import load_tokenizer
from stencil.grammar.tagged.tool_presets import FORMATS, call_syntax
from stencil.grammar.tagged.tool_reading import CallReader
from stencil.testing import random_walk

#: stencil's family -> XGrammar's model name for get_model_structural_tag (where it has one)
XGRAMMAR_MODELS = {"llama3": "llama", "qwen": "qwen_3", "qwen-coder": "qwen_3_coder", "deepseek": "deepseek_r1",
                   "deepseek-v3.1": "deepseek_v3_1", "kimi": "kimi", "harmony": "harmony"}
JSON = {"whitespace": "compact", "number_spelling": "plain"}   # as stencil serve writes arguments


def compile_tools(compiler, fmt: str, tools, choice: str = "auto"):
    if fmt == "generic":
        return compiler.compile_tool_calls(tools, require_call=choice == "required", text_before=choice == "auto",
                                           max_calls=None, json_options=JSON)
    return compiler.compile_tool_calls(tools, format=fmt, tool_choice=choice, json_options=JSON)


#: wall time, or (``--cpu``) the calling thread's CPU time: steadier on a shared machine, and the
#: whole of a compile or a first mask (both run on the calling thread)
CLOCK = time.perf_counter


def _ms(f, *args) -> tuple[float, Any]:
    t = CLOCK()
    out = f(*args)
    return (CLOCK() - t) * 1e3, out


def compile_times(info, fmt: str, tools, repeats: int) -> dict:
    """Median cold and cached compile and first-mask milliseconds (or the compile error)."""
    cold, cached, first = [], [], []
    mask = stencil.allocate_token_bitmask(1, info.vocab_size)
    for _ in range(repeats):
        compiler = stencil.GrammarCompiler(info)
        try:
            ms, g = _ms(compile_tools, compiler, fmt, tools)
        except (stencil.GrammarError, stencil.LimitError) as e:
            return {"error": str(e).splitlines()[0][:120]}
        cold.append(ms)
        cached.append(_ms(compile_tools, compiler, fmt, tools)[0])
        first.append(_ms(stencil.Matcher(g).fill_next_token_bitmask, mask, 0)[0])
    return {"cold_ms": statistics.median(cold), "cached_ms": statistics.median(cached),
            "first_mask_ms": statistics.median(first)}


def xgrammar_times(tokenizer, fmt: str, tools, repeats: int):
    """XGrammar's compile of its own structural tag for the family, cold and cached (None where it
    has no such family or is not installed)."""
    if fmt not in XGRAMMAR_MODELS:
        return None
    try:
        import xgrammar as xgr
    except ImportError:
        return None
    tag = xgr.get_model_structural_tag(XGRAMMAR_MODELS[fmt], tools=tools, reasoning=False)
    cold, cached = [], []
    for _ in range(repeats):
        compiler = xgr.GrammarCompiler(tokenizer)
        try:
            cold.append(_ms(compiler.compile_structural_tag, tag)[0])
        except Exception as e:   # noqa: BLE001 - the peer's own error, reported as is
            return {"error": str(e).splitlines()[0][:120]}
        cached.append(_ms(compiler.compile_structural_tag, tag)[0])
    return {"cold_ms": statistics.median(cold), "cached_ms": statistics.median(cached)}


class _TimedMasks:
    """A matcher whose budget-aware masks are timed (the walk asks them through it)."""

    def __init__(self, matcher: stencil.Matcher, times: list):
        self._m, self._times = matcher, times

    def fill_next_token_bitmask(self, *args):
        t = time.perf_counter()
        self._m.fill_next_token_bitmask(*args)
        self._times.append(time.perf_counter() - t)

    def __getattr__(self, name: str):
        return getattr(self._m, name)


def walk_calls(info, fmt: str, tools, walks: int, budget: int, seed: int) -> dict:
    """Random walks under the family's grammar, each read back whole and at cut points."""
    import jsonschema
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    compiler = stencil.GrammarCompiler(info)
    grammars = {c: compile_tools(compiler, fmt, tools, c) for c in ("auto", "required")}
    rng = random.Random(seed)
    out = {"outputs": 0, "ended": 0, "calls": 0, "parsed": 0, "valid": 0, "streamed_equal": 0, "required_without": 0}
    times: list = []
    walk_ms = []
    for k in range(walks):
        choice = "required" if k % 2 else "auto"
        m = stencil.Matcher(grammars[choice])
        before = len(times)
        text = info.decode_bytes(random_walk(_TimedMasks(m, times), info, rng, budget)).decode("utf-8", "replace")
        walk_ms.append(1e3 * sum(times[before:]))
        out["outputs"] += 1
        out["ended"] += m.is_accepting()
        whole = CallReader(call_syntax(fmt), tools)
        whole.feed(text, final=True)
        cut = CallReader(call_syntax(fmt), tools)
        for at in sorted(rng.sample(range(len(text) + 1), min(8, len(text) + 1))):
            cut.feed(text[:at])
        cut.feed(text, final=True)
        out["calls"] += len(whole.calls)
        out["required_without"] += choice == "required" and not whole.calls
        for c in whole.calls:
            if not c["ended"]:
                continue
            try:
                args = json.loads(c["arguments"])
            except json.JSONDecodeError:
                continue
            out["parsed"] += 1
            try:
                jsonschema.validate(args, schemas[c["name"]])
                out["valid"] += 1
            except jsonschema.ValidationError:
                pass
        out["streamed_equal"] += [(c["name"], c["arguments"]) for c in cut.calls] == \
            [(c["name"], c["arguments"]) for c in whole.calls]
    out["mask_ms"] = {"mean": 1e3 * statistics.fmean(times) if times else 0.0, "max": 1e3 * max(times, default=0.0),
                      "walk_max": max(walk_ms, default=0.0), "masks": len(times)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer", default="deepseek")
    ap.add_argument("--families", default=",".join(("generic",) + FORMATS))
    ap.add_argument("--sizes", default="1,8,128", help="tool set sizes for the compile times")
    ap.add_argument("--walks", type=int, default=200, help="random walks per family (half auto, half required)")
    ap.add_argument("--walk-tools", type=int, default=8, help="tools in the walks' set")
    ap.add_argument("--budget", type=int, default=200, help="max tokens of a walk")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", help="write the figures as JSON here")
    ap.add_argument("--cpu", action="store_true", help="time by the thread's CPU time, not wall time")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.thread_time if args.cpu else time.perf_counter
    info, _ = load_tokenizer(args.tokenizer)
    families = [f for f in args.families.split(",") if f]
    unknown = [f for f in families if f not in ("generic",) + FORMATS]
    if unknown:
        ap.error(f"unknown families {unknown}; known: generic, {', '.join(FORMATS)}")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    try:   # XGrammar over the same vocabulary, as MaskBench builds it
        xgr_tok = XGrammarEngine(args.tokenizer, info).tokenizer
    except ImportError:
        xgr_tok = None
    results: dict = {"tokenizer": args.tokenizer, "families": {}}
    print(f"tokenizer {args.tokenizer} ({info.vocab_size} tokens); tool sets from schema_generator (seed {args.seed})")
    print("\n| family | tools | stencil cold ms | cached ms | first mask ms | XGrammar cold ms | cached ms |")
    print("|---|---|---|---|---|---|---|")
    for fmt in families:
        row = results["families"].setdefault(fmt, {"compile": {}})
        for n in sizes:
            tools = tool_set(n, args.seed)
            st = compile_times(info, fmt, tools, args.repeats)
            xg = xgrammar_times(xgr_tok, fmt, tools, args.repeats) if xgr_tok is not None else None
            row["compile"][n] = {"stencil": st, "xgrammar": xg}
            s_cells = (f"{st['cold_ms']:.1f} | {st['cached_ms']:.3f} | {st['first_mask_ms']:.2f}" if "error" not in st
                       else f"error: {st['error']} | | ")
            x_cells = ("- | -" if xg is None else f"error: {xg['error']} |" if "error" in xg
                       else f"{xg['cold_ms']:.1f} | {xg['cached_ms']:.3f}")
            print(f"| {fmt} | {n} | {s_cells} | {x_cells} |", flush=True)
    print("\n| family | walks | ended accepting | calls | parsed | valid | streamed = whole | required without a call "
          "| budget mask ms: mean / max / most in a walk |")
    print("|---|---|---|---|---|---|---|---|---|")
    for fmt in families:
        w = walk_calls(info, fmt, tool_set(args.walk_tools, args.seed + 1), args.walks, args.budget, args.seed)
        results["families"][fmt]["walks"] = w
        ms = w["mask_ms"]
        print(f"| {fmt} | {w['outputs']} | {w['ended']} | {w['calls']} | {w['parsed']} | {w['valid']} | "
              f"{w['streamed_equal']} | {w['required_without']} | {ms['mean']:.3f} / {ms['max']:.1f} / "
              f"{ms['walk_max']:.0f} |", flush=True)
    if args.output:
        with open(args.output, "w") as f:
            json.dump(results, f, indent=1)
    bad = [f for f, r in results["families"].items()
           if r["walks"]["valid"] != r["walks"]["calls"] or r["walks"]["ended"] != r["walks"]["outputs"]
           or r["walks"]["streamed_equal"] != r["walks"]["outputs"] or r["walks"]["required_without"]]
    if bad:
        print(f"\nNOT ALL CALLS READ BACK VALID: {bad}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
