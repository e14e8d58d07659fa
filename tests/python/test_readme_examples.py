"""Every ```python block of README.md runs as written, in order, in one fresh interpreter (as a
reader follows the README: later blocks go on from earlier ones), from an empty folder, with only
what `make install` installs. A block whose first line is ``# requires: WHAT (why)`` needs what
this environment does not have (an engine, a running server): it is only compiled, and reported
as a skip with that reason; there may be few of them. The ``stencil ...`` commands of the shell
blocks must parse, and the ``make`` targets they name must exist. The README sends readers to
public names only (exported, no underscore, not the command line's internals), and the flags it
names in its prose are the commands' own."""
from __future__ import annotations

import ast
import contextlib
import importlib
import io
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from stencil import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")
#: the most blocks that may be skipped (engines that `make test` does not install, a server)
MAX_SKIPPED = 4
REQUIRES = re.compile(r"#\s*requires:\s*(.+)")

RUNNER = r"""
import json, sys, time, traceback
blocks, out = json.load(sys.stdin), sys.argv[1]
ns, results = {"__name__": "__main__"}, {}
for line, code in blocks:
    t0 = time.perf_counter()
    try:
        exec(compile(code, f"README.md, block at line {line}", "exec"), ns)
        results[line] = None
    except BaseException:
        results[line] = traceback.format_exc(limit=-4)
    print(f"README block at line {line}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    with open(out, "w") as f:
        json.dump(results, f)
"""


def _blocks(lang: str, text: str | None = None) -> list[tuple[int, str]]:
    """(line of the block's first code line, code) of each fenced block in ``lang`` (of README.md
    or ``text``)."""
    text = open(README, encoding="utf-8").read() if text is None else text
    found = []
    for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.S | re.M):
        found.append((text.count("\n", 0, m.start(1)) + 1, m.group(1)))
    return found


PY_BLOCKS = _blocks("python")


def _requires(code: str) -> str | None:
    m = REQUIRES.match(code.lstrip().split("\n", 1)[0])
    return m.group(1).strip() if m else None


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    """{line: None or the traceback} for every block that is run, from one interpreter."""
    folder = tmp_path_factory.mktemp("readme")
    out = folder / "results.json"
    runnable = [(line, code) for line, code in PY_BLOCKS if _requires(code) is None]
    p = subprocess.run([sys.executable, "-c", RUNNER, str(out)], input=json.dumps(runnable), cwd=folder,
                       capture_output=True, text=True, timeout=900)
    assert out.exists(), p.stderr[-3000:]
    got = {int(k): v for k, v in json.loads(out.read_text()).items()}
    missing = [line for line, _ in runnable if line not in got]
    assert not missing, f"the interpreter stopped before the blocks at lines {missing}: {p.stderr[-3000:]}"
    return got


def test_readme_has_python_examples():
    assert len(PY_BLOCKS) >= 10
    skipped = [line for line, code in PY_BLOCKS if _requires(code)]
    assert len(skipped) <= MAX_SKIPPED, f"too many blocks marked '# requires:' (lines {skipped})"


@pytest.mark.parametrize("line,code", PY_BLOCKS, ids=[f"line-{line}" for line, _ in PY_BLOCKS])
def test_python_block_runs(line, code, request):
    compile(code, f"README.md, block at line {line}", "exec")  # every block is valid Python
    need = _requires(code)
    if need is not None:
        pytest.skip(f"README.md line {line} requires {need}")
    error = request.getfixturevalue("results")[line]
    assert error is None, f"the README block at line {line} fails:\n{error}"


def _shell_lines() -> list[tuple[int, str]]:
    """(line, command) of the commands in the README's indented and ```sh/bash blocks."""
    lines, found, in_fence = open(README, encoding="utf-8").read().split("\n"), [], None
    for i, text in enumerate(lines, 1):
        if text.startswith("```"):
            in_fence = None if in_fence is not None else text[3:].strip()
            continue
        if in_fence in ("sh", "bash", "shell", "console") or (in_fence is None and text.startswith("    ")
                                                               and (i < 2 or not lines[i - 2].strip()
                                                                    or lines[i - 2].startswith("    "))):
            cmd = text.strip().removeprefix("$ ").split("  #")[0].strip()
            if cmd.startswith(("stencil ", "make ")):
                found.append((i, cmd))
    return found


SHELL = _shell_lines()


def test_readme_shows_commands():
    assert any(c.startswith("stencil ") for _, c in SHELL) and any(c.startswith("make ") for _, c in SHELL)


@pytest.mark.parametrize("line,command", SHELL, ids=[f"line-{line}" for line, _ in SHELL])
def test_shell_command_parses(line, command):
    words = shlex.split(command)
    if words[0] == "make":
        makefile = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read()
        for target in (w for w in words[1:] if "=" not in w and not w.startswith("-")):
            assert re.search(rf"^{re.escape(target)}:", makefile, re.M), f"README.md line {line}: no make target {target}"
        return
    try:
        args = cli.build_parser().parse_args(words[1:])
    except SystemExit as e:  # 0 after --version or --help; 2 for a bad command line
        assert e.code == 0, f"README.md line {line}: `{command}` does not parse"
        return
    assert callable(args.func), f"README.md line {line}: {command}"


# ------------------------------------------------------------------ public names, real flags

#: modules a reader is not sent to: the command line's internals and the benchmark harness
NOT_API = ("stencil.cli", "stencil.bench", "benchmarks")
#: flags the README names that are not the `stencil` command's -> the file that defines them (None:
#: another program's)
OTHER_FLAGS = {"--equal-lengths": "benchmarks/serve.py", "--structured-outputs-config": None,  # (vLLM's)
               # SGLang's server options, which StencilGrammarBackend.from_server_args reads
               "--constrained-json-whitespace-pattern": None, "--constrained-json-disable-any-whitespace": None,
               "--constrained-json-max-whitespace-cnt": None}
PACKAGE = os.path.join(ROOT, "src", "stencil")


def _module_file(name: str) -> str | None:
    base = os.path.join(PACKAGE, *name.split(".")[1:])
    return next((f for f in (base + ".py", os.path.join(base, "__init__.py")) if os.path.isfile(f)), None)


def _exports(module: str) -> set:
    """A module's ``__all__``, or (without one) the names it defines at the top without an underscore."""
    tree, names = ast.parse(open(_module_file(module), encoding="utf-8").read()), set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(x, ast.Name) and x.id == "__all__" for x in targets):
            try:
                return set(ast.literal_eval(node.value))
            except ValueError:  # computed (`list(_ast.__all__)`): the module's own answer
                return set(importlib.import_module(module).__all__)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        names.update(x.id for x in targets if isinstance(x, ast.Name))
    return {n for n in names if not n.startswith("_")}


def _not_public(dotted: str) -> str | None:
    """Why ``stencil.a.b.c`` is not public API (read from the sources: optional engines need not
    be installed), or None."""
    parts = dotted.split(".")
    cut = max(i for i in range(1, len(parts) + 1) if _module_file(".".join(parts[:i])))
    module, rest = ".".join(parts[:cut]), parts[cut:]
    if any(p.startswith("_") for p in parts[1:cut]) or any(module == m or module.startswith(m + ".") for m in NOT_API):
        return f"{dotted}: {module} is not a public module"
    if rest and rest[0] not in _exports(module):
        return f"{dotted}: {module} does not export {rest[0]}"
    if any(p.startswith("_") and not p.endswith("__") for p in rest[1:]):
        return f"{dotted}: a private attribute"
    return None


def _public_names() -> set:
    """What the public modules export: a ``Class.attr`` in the prose must start with one of these."""
    out = set()
    for folder, _, files in os.walk(PACKAGE):
        for f in files:
            rel = os.path.relpath(os.path.join(folder, f), os.path.dirname(PACKAGE))[:-3].replace(os.sep, ".")
            name = rel.removesuffix(".__init__")
            if f.endswith(".py") and not _not_public(name):
                out |= _exports(name)
    return out


def _dotted(node) -> str | None:
    """``stencil.a.b`` for an attribute chain on the name ``stencil``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join(["stencil", *reversed(parts)]) if isinstance(node, ast.Name) and node.id == "stencil" else None


def _names_used(code: str) -> tuple[list, list]:
    """(the stencil names a block imports or reads, its private attributes and keyword arguments)."""
    used, private = [], []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            used += [a.name for a in node.names if a.name.split(".")[0] == "stencil"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "stencil":
            used += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Attribute):
            used += [d for d in [_dotted(node)] if d]
            if node.attr.startswith("_") and not node.attr.endswith("__"):
                private.append(f".{node.attr}")
        elif isinstance(node, ast.keyword) and (node.arg or "").startswith("_"):
            private.append(f"{node.arg}=")
    return used, private


def _help(words: list) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.build_parser().parse_args([*words, "--help"])
    return out.getvalue()


def _flag_problems(spans: list) -> list:
    """The `stencil SUB --flag` spans whose command or flag the parser lacks, and the lone `--flag`
    spans that no subcommand (nor OTHER_FLAGS) has."""
    subs = re.search(r"{([\w,-]+)}", _help([])).group(1).split(",")
    helps = {s: _help([s]) for s in subs}

    def has(text, flag):
        return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None

    bad = []
    for span in spans:
        words = span.split()
        if words[0] == "stencil" and len(words) > 1 and not words[1].startswith("-"):
            if words[1] not in helps:
                bad.append(f"`{span}`: no subcommand {words[1]}")
                continue
            bad += [f"`{span}`: stencil {words[1]} has no {w}" for w in words[2:]
                    if w.startswith("--") and not has(helps[words[1]], w.split("=")[0])]
        elif re.fullmatch(r"--[\w-]+( \S+)?", span) and not any(has(h, words[0]) for h in helps.values()):
            where = OTHER_FLAGS.get(words[0], "")
            if where == "" or (where and f'"{words[0]}"' not in open(os.path.join(ROOT, where), encoding="utf-8").read()):
                bad.append(f"`{span}`: no command has {words[0]}")
    return bad


def _public_problems(text: str) -> list:
    """Non-public stencil names of a README's python blocks and prose, and flags no command has."""
    bad = []
    for line, code in _blocks("python", text):
        used, private = _names_used(code)
        bad += [f"line {line}: {why}" for why in map(_not_public, used) if why]
        bad += [f"line {line}: private {p}" for p in private]
    spans = [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))]
    bad += [why for span in spans for why in map(_not_public, re.findall(r"\bstencil(?:\.\w+)+", span)) if why]
    public = _public_names()
    bad += [f"`{span}`: {span.split('.')[0]} is no public name" for span in spans
            if re.match(r"[A-Z]\w*\.[a-z_]\w*", span) and span.split(".")[0] not in public]
    return bad + _flag_problems(spans)


def test_readme_uses_public_names_and_real_flags():
    assert _public_problems(open(README, encoding="utf-8").read()) == []


def test_public_name_check_can_fail():
    """The check above sees each kind of planted slip, and passes the public names beside them."""
    text = ("```python\nimport stencil\nfrom stencil._core import Vocabulary\nfrom stencil.cli import main\n"
            "from stencil.runtime.models import _store_converted, load_model\nstencil.GrammarCompiler(tok)._cache\n"
            "stencil.runtime.generate(lm, _x=1)\nstencil.runtime.tokenizer_info_for(t, m)\n```\n"
            "See `stencil._core.Vocabulary`, `stencil.testing.vocab_stats`, `stencil.kernels.torch.PinnedBitmask`, "
            "`stencil serve --port 8000`, `stencil serve --no-such-flag`, `stencil launch`, `--max-batch N`, "
            "`--nowhere`, `--equal-lengths`, `Vocabulary.shared_mask_bytes`, `ServerLimits.rss_limit`.\n")
    assert _public_problems(text) == [
        "line 2: stencil._core.Vocabulary: stencil does not export _core",
        "line 2: stencil.cli.main: stencil.cli is not a public module",
        "line 2: stencil.runtime.models._store_converted: stencil.runtime.models does not export _store_converted",
        "line 2: private ._cache", "line 2: private _x=",
        "stencil._core.Vocabulary: stencil does not export _core",
        "`Vocabulary.shared_mask_bytes`: Vocabulary is no public name",
        "`stencil serve --no-such-flag`: stencil serve has no --no-such-flag",
        "`stencil launch`: no subcommand launch", "`--nowhere`: no command has --nowhere"]
