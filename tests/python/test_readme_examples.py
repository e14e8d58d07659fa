"""Every ```python block of README.md runs as written, in order, in one fresh interpreter (as a
reader follows the README: later blocks go on from earlier ones), from an empty folder, with only
what `make install` installs. A block whose first line is ``# requires: WHAT (why)`` needs what
this environment does not have (an engine, a running server): it is only compiled, and reported
as a skip with that reason; there may be few of them. The ``stencil ...`` commands of the shell
blocks must parse, and the ``make`` targets they name must exist."""
from __future__ import annotations

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


def _blocks(lang: str) -> list[tuple[int, str]]:
    """(line of the block's first code line, code) of each fenced block in ``lang``."""
    text = open(README, encoding="utf-8").read()
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
