"""The grammar side of ``benchmarks.vllm_backends`` without vLLM or a model: the same generated
schemas (tests.support.schema_generator), each with one output, replayed as one batch, step by step,
through each backend's calls as vLLM's scheduler makes them (fill the batch's bitmask, then accept
each row's token). A fast loop for the time per step the vLLM benchmark measures.

    python -m benchmarks.vllm_replay --count 24
    python -m benchmarks.vllm_replay --engines stencil --tokenizer deepseek
    python -m benchmarks.vllm_replay --speculate 0,4 --engines stencil,xgrammar --evict 512 --cpu

The outputs: a seeded random walk under stencil's own budgeted masks (at most 3 times the shortest
output + 60 tokens, so that they end well within max_tokens as a model's do), drawn from the
allowed tokens of printable ASCII (any allowed token where none is), so that strings and numbers
look like text; each is checked against its schema (jsonschema), and walked again (up to
``--tries``) until every engine compared accepts it: a schema without such an output is left out.

stencil runs through ``stencil.integrations.vllm.StencilBackend`` (one native fill per step on the
caller's thread, as on vLLM's CPU engine, each row under its request's budget); llguidance and
XGrammar through their MaskBench adapters (one fill per row), compiled with their defaults.
``cold``: the first replay after a cold compile (each lexer state met for the first time builds
its mask entry); ``warm``: a second replay of the same outputs on the same compiled grammars.
Times: ``ms/step`` (fill + accept of the whole batch, per step of the replay), ``us/mask`` (per
row), and ``compile`` (seconds over all schemas).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
import numpy as np

import stencil
from tests.support.schema_generator import generated_schemas

ENGINES = ("stencil", "llguidance", "xgrammar")
# The clock of every figure: wall time, or with --cpu the calling thread's CPU time (every call
# timed here runs on it: stencil's fill has one thread), which a machine shared with other work
# disturbs far less.
_now = time.perf_counter


def _text_tokens(info: stencil.TokenizerInfo) -> tuple[np.ndarray, np.ndarray]:
    """Whether each token is printable ASCII (one space at a time), what the walk prefers; and
    whether such a token holds a JSON closing character (`"`, `,`, `}`, `]`)."""
    ok = np.zeros(info.vocab_size, dtype=bool)
    closing = np.zeros(info.vocab_size, dtype=bool)
    for t in range(info.vocab_size):
        b = info.token_bytes(t)
        ok[t] = bool(b) and all(0x20 <= c < 0x7F for c in b) and b"  " not in b
        closing[t] = ok[t] and any(c in b for c in b'",}]')
    return ok, closing


def walk_output(backend, schema: dict, text: tuple[np.ndarray, np.ndarray], max_tokens: int,
                rng: random.Random) -> list[int]:
    """One output of ``schema``: random allowed tokens under stencil's budgeted masks until it ends;
    one step in four takes a token that closes something where one is allowed (a model's strings
    and lists end long before their maxLength and maxItems)."""
    grammar = backend.compile_grammar("json", json.dumps(schema), max_tokens=max_tokens)
    # A walk has no reason to close a free-form part (an e-mail's local part) and would run to the
    # budget, where a model ends long before it: its own budget is a few times the shortest output.
    grammar.max_tokens = min(max_tokens, 3 * (grammar.matcher.min_completion_tokens() or 0) + 60)
    bm = stencil.allocate_token_bitmask(1, backend.vocab_size)
    out: list[int] = []
    while not grammar.is_terminated() and len(out) < max_tokens:
        backend.fill_bitmasks(bm, [(grammar, 0, True)])
        allowed = np.flatnonzero(np.unpackbits(bm[0].view(np.uint8), bitorder="little")[:backend.vocab_size])
        nice, closing = allowed[text[0][allowed]], allowed[text[1][allowed]]
        pool = closing if len(closing) and rng.random() < 0.25 else nice if len(nice) else allowed
        pick = int(rng.choice(pool))
        if not grammar.accept_tokens("", [pick]):
            raise RuntimeError(f"stencil refused token {pick}, which its own mask allowed")
        out.append(pick)
    return out


def _decode(info: stencil.TokenizerInfo, tokens: list[int]) -> str:
    ends = set(info.eos_token_ids)
    return info.decode_bytes([t for t in tokens if t not in ends]).decode("utf-8")


def _stencil_replay(info, schemas, outputs, max_tokens):
    """Compile every schema (timed), then replay twice (cold, warm): per step, seconds and rows.
    ``max_tokens``: each request's budget (None: none)."""
    from stencil.integrations.vllm import StencilBackend
    backend = StencilBackend(tokenizer_info=info)
    backend.fill_threads = 1  # vLLM's CPU engine: the caller's thread alone
    t = _now()
    grammars = [backend.compile_grammar("json", json.dumps(s), max_tokens=max_tokens) for s in schemas]
    compile_s = _now() - t
    bm = stencil.allocate_token_bitmask(len(schemas), info.vocab_size)

    def step(live, k):
        backend.fill_bitmasks(bm, [(grammars[i], i, True) for i in live])
        for i in live:
            grammars[i].accept_tokens(str(i), [outputs[i][k]])
    return compile_s, [_replay(outputs, step, [g.reset for g in grammars]) for _ in range(2)]


def _peer_sessions(engine, schemas):
    """A MaskBench adapter's session per schema (None where it refuses one), and the seconds taken."""
    from benchmarks.maskbench.engines.base import CompileError
    sessions, t = [], _now()
    for s in schemas:
        try:
            sessions.append(engine.compile(s))
        except CompileError:
            sessions.append(None)
    return sessions, _now() - t


def _peer_replay(engine, schemas, outputs):
    """The same with a MaskBench adapter: one fill per row, as vLLM's backends for the peers."""
    sessions, compile_s = _peer_sessions(engine, schemas)

    def step(live, k):
        for i in live:
            sessions[i].fill()
            sessions[i].accept(outputs[i][k])
    return compile_s, [_replay(outputs, step, [s.reset for s in sessions]) for _ in range(2)]


def _replay(outputs, step, resets) -> list[tuple[float, int]]:
    """One replay of the batch from the start: per step, its seconds and live rows."""
    for reset in resets:
        reset()
    steps = []
    for k in range(max(len(o) for o in outputs)):
        live = [i for i, o in enumerate(outputs) if k < len(o)]
        t = _now()
        step(live, k)
        steps.append((_now() - t, len(live)))
    return steps


def _accepts(session, tokens: list[int]) -> bool:
    if session is None:
        return False
    session.reset()
    return all(session.accept(t) for t in tokens)


def _row(steps: list[tuple[float, int]]) -> tuple[float, float]:
    """ms per step and us per row."""
    total = sum(s for s, _ in steps)
    return 1000 * total / max(1, len(steps)), 1e6 * total / max(1, sum(n for _, n in steps))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--count", type=int, default=24, help="generated schemas (one output each)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the schema generator and of the walks")
    ap.add_argument("--tokenizer", default="smollm2", help="tests.support.tokenizers name (default: the default model's)")
    ap.add_argument("--max-tokens", type=int, default=400)
    ap.add_argument("--no-budget", action="store_true",
                    help="stencil's masks without the requests' max_tokens (vLLM's backend always has it)")
    ap.add_argument("--cpu", action="store_true", help="time by the thread's CPU time instead of wall time")
    ap.add_argument("--tries", type=int, default=8, help="walks per schema to find an output every engine accepts")
    ap.add_argument("--speculate", default=None, metavar="K[,K...]",
                    help="replay vLLM's n-gram speculation on extraction requests instead, drafting K tokens "
                         "(0: none), stencil and XGrammar (benchmarks.vllm_spec_replay)")
    ap.add_argument("--evict", type=int, default=0, metavar="MB",
                    help="with --speculate: read MB megabytes before each step (a forward pass's weights: "
                         "the grammar's calls then start with cold caches, as in vLLM)")
    ap.add_argument("--texts", default=None, metavar="FILE:RUN",
                    help="with --speculate: replay the outputs of run RUN (e.g. stencil/0) of "
                         "benchmarks.vllm_backends --workload extraction --output FILE instead of the answers")
    args = ap.parse_args(argv)
    global _now
    _now = time.thread_time if args.cpu else time.perf_counter
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if set(engines) - set(ENGINES):
        ap.error(f"unknown engines {sorted(set(engines) - set(ENGINES))}; expected some of {', '.join(ENGINES)}")
    import jsonschema
    from benchmarks.maskbench.engines import make_engine
    from tests.support.tokenizers import load_tokenizer
    from stencil.integrations.vllm import StencilBackend
    if args.speculate is not None:
        from benchmarks.vllm_spec_replay import SPEC_ENGINES, spec_replay
        try:
            ks = [int(k) for k in args.speculate.split(",")]
        except ValueError:
            ap.error(f"--speculate: comma-separated draft lengths, got {args.speculate!r}")
        if min(ks) < 0 or set(engines) - set(SPEC_ENGINES):
            ap.error(f"--speculate: draft lengths >= 0 and engines among {', '.join(SPEC_ENGINES)}")
        from benchmarks.vllm_spec_replay import model_texts
        texts = model_texts(*args.texts.rsplit(":", 1)) if args.texts else None
        info, encode = load_tokenizer(args.tokenizer)
        spec_replay(info, encode, engines, args.count, ks, _now, args.max_tokens, args.evict, texts)
        return 0
    info = load_tokenizer(args.tokenizer)[0]
    schemas = [c.schema for c in generated_schemas(args.count, seed=args.seed)]
    peers = {name: make_engine(name, args.tokenizer, info) for name in engines if name != "stencil"}
    checks = {name: _peer_sessions(engine, schemas)[0] for name, engine in peers.items()}
    # the walks on a vocabulary of their own: its masks shared between grammars stay out of the replay
    walker = StencilBackend(tokenizer_info=load_tokenizer(args.tokenizer)[0])
    text, rng = _text_tokens(info), random.Random(args.seed)
    # outputs every engine's language holds: no property the schema does not list (XGrammar's
    # strict mode), at most one space around punctuation
    walker.json_options = {"whitespace_pattern": " ?", "close": True}
    cases = []   # (schema, output) where every engine accepts the output
    for i, schema in enumerate(schemas):
        for _ in range(args.tries):
            out = walk_output(walker, schema, text, args.max_tokens, rng)
            jsonschema.validate(json.loads(_decode(info, out)), schema, format_checker=jsonschema.FormatChecker())
            if all(_accepts(c[i], out) for c in checks.values()):
                cases.append((schema, out))
                break
    del walker, checks
    schemas, outputs = [c[0] for c in cases], [c[1] for c in cases]
    print(f"{args.count} generated schemas (seed {args.seed}); {len(cases)} with a walked output (valid) that "
          f"{', '.join(engines)} all accept: {sum(map(len, outputs))} tokens; tokenizer {args.tokenizer}, "
          f"max_tokens {args.max_tokens}; {'thread CPU' if args.cpu else 'wall'} time")
    print(f"{'engine':10} {'compile':>8} {'+ cold':>8} | {'cold ms/step':>12} {'us/mask':>8} | "
          f"{'warm ms/step':>12} {'us/mask':>8}")
    for name in engines:
        if name == "stencil":
            compile_s, runs = _stencil_replay(info, schemas, outputs, None if args.no_budget else args.max_tokens)
        else:
            compile_s, runs = _peer_replay(peers[name], schemas, outputs)
        (cold_step, cold_mask), (warm_step, warm_mask) = _row(runs[0]), _row(runs[1])
        cold_s = compile_s + sum(t for t, _ in runs[0])
        print(f"{name:10} {compile_s:7.2f}s {cold_s:7.2f}s | {cold_step:12.3f} {cold_mask:8.1f} | {warm_step:12.3f} {warm_mask:8.1f}")
    print("compile: seconds over all schemas (the peers' include their matchers), + cold: and the cold replay; ms/step: fill + accept of every "
          "live row, per step; us/mask: per row")
    return 0


if __name__ == "__main__":
    sys.exit(main())
