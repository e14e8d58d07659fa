"""The package's structure (ARCHITECTURE.md): stages import one way, functions stay short.

The import graph of src/stencil is read with ``ast`` (nothing is imported): an edge for every
import of a stencil module, function-local ones included. The graph must have no cycle, not even
one closed by a function-local import (such imports were how cycles stayed hidden); a
function-local import of a stencil module is allowed only where :data:`LOCAL_IMPORTS` says why.
JSON Schema's phases import downwards only: core <- lang <- read <- emit. No function of
src/stencil is over :data:`MAX_FUNCTION_LINES` lines: a long one is split into named steps. Tests and integrations read no private attribute of a stencil object (they use
``stencil.testing`` and the public API); the benchmarks live beside the package, not in it.
"""
from __future__ import annotations

import ast
import importlib.util
import pathlib
import subprocess
import sys

import pytest

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"

# (importing module or its package prefix, imported module or prefix) -> why the import is local
LOCAL_IMPORTS = {
    ("stencil.cli", "stencil"):
        "each command imports its stage when it runs, so `stencil --help` starts fast",
    ("stencil.server.main", "stencil"):
        "the server stack (fastapi, uvicorn) loads only for `stencil serve`",
    ("stencil.command_options", "stencil.runtime.models"):
        "torch loads only when a command resolves --device / --dtype, not for `stencil --help`",
    ("stencil.compiler", "stencil.grammar"):
        "each front-end loads on the first compile_* of its kind, not on `import stencil`",
    ("stencil.bitmask", "stencil.kernels.torch"):
        "torch is optional: its kernels load only when a torch tensor is passed",
    ("stencil.kernels.torch", "stencil.kernels.triton"):
        "triton is optional and slow to import: it loads only for the first CUDA logits",
    ("stencil.grammar.ebnf.lark.emit", "stencil.grammar.json.schema"):
        "%json blocks only: a Lark grammar without one does not load the JSON Schema front-end",
    ("stencil.partial.schema", "stencil.grammar.json.schema"):
        "the JSON Schema front-end's resolver loads only when a partial result reads a schema (`import stencil` stays light)",
    # Under concurrent edit on another branch when the package was split: hoisted after that merge.
}

#: the most lines a function of src/stencil may span after its ``def`` line (nested ones included)
MAX_FUNCTION_LINES = 80

#: "path/under/src.py:function" -> why it reads better whole (empty: every long one was split)
LONG_FUNCTIONS: dict = {}

#: JSON Schema phases, lowest first: a module may import its own phase or lower ones only
#: (emit may use read's disjointness test; read never imports emit).
JSON_PHASES = ("core", "lang", "read", "emit")

#: The layers of the package (issue 42): the library (tokenizers, compiler, matchers, bitmasks,
#: errors: ``stencil``) is imported by the runtime (``stencil.runtime``: generation over a model),
#: never the other way. These modules may import the runtime: it and its users (the integrations:
#: transformers' re-exports ``tokenizer_info_for``).
RUNTIME_USERS = ("stencil.runtime", "stencil.server", "stencil.cli", "stencil.command_options", "stencil.integrations")


def _modules(src: pathlib.Path = SRC) -> dict:
    mods = {}
    for path in (src / "stencil").rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _targets(mods: dict, module: str, path: pathlib.Path, node) -> list:
    """The stencil modules one import statement loads (current names)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            pkg = pkg[:len(pkg) - node.level + 1]
            base = ".".join(pkg + ([base] if base else []))
        names = []
        for a in node.names:   # `from pkg import submodule` loads the submodule
            full = f"{base}.{a.name}"
            names.append(full if full in mods or full == "stencil._core" else base)
    out = []
    for name in names:
        if name == "stencil" or name.startswith("stencil."):
            out.append(name)
    return out


def _is_type_checking(node) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _walk(mods: dict, module: str, path: pathlib.Path, node, local: bool):
    for child in ast.iter_child_nodes(node):
        if _is_type_checking(child):
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            for target in _targets(mods, module, path, child):
                yield module, target, local, child.lineno
        inner = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from _walk(mods, module, path, child, inner)


def _imports(mods: dict):
    """(module, target, local, line) for every import of a stencil module."""
    for module, path in sorted(mods.items()):
        yield from _walk(mods, module, path, ast.parse(path.read_text(), str(path)), False)


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _cycles(edges: dict) -> list:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(edges.get(w, ()))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in edges.get(v, ()):
                    out.append(sorted(comp))
    return out


def _edges(mods: dict, found) -> dict:
    """module -> the stencil modules it imports, at module level or inside a function."""
    edges: dict = {}
    for module, target, _, _ in found:
        if target in mods:
            edges.setdefault(module, set()).add(target)
    return edges


def test_import_graph_has_no_cycle():
    mods = _modules()
    edges = _edges(mods, _imports(mods))
    assert len(edges) > 50, "the graph reader found too few imports: is SRC right?"
    assert _cycles(edges) == []


def test_function_local_imports_have_a_reason():
    mods = _modules()
    unexplained = [f"{module}:{line} imports {target}" for module, target, local, line in _imports(mods)
                   if local and not any(_under(module, m) and _under(target, t) for m, t in LOCAL_IMPORTS)]
    assert unexplained == []


def test_json_schema_phases_import_downwards():
    base = "stencil.grammar.json.schema."

    def phase(name):
        rest = name[len(base):].split(".") if name.startswith(base) else []
        return JSON_PHASES.index(rest[0]) if rest and rest[0] in JSON_PHASES else None

    upward = []
    for module, target, _, line in _imports(_modules()):
        p, q = phase(module), phase(target)
        if p is not None and q is not None and q > p:
            upward.append(f"{module}:{line} imports {target}")
    assert upward == []


def _library_uses_of_runtime(found) -> list:
    """"module:line imports target" for each import of stencil.runtime outside RUNTIME_USERS."""
    return [f"{module}:{line} imports {target}" for module, target, _, line in found
            if _under(target, "stencil.runtime") and not any(_under(module, u) for u in RUNTIME_USERS)]


def test_library_does_not_import_the_runtime():
    """``import stencil`` loads no generation code: the library is usable without the runtime, and
    the runtime is one room above it (ARCHITECTURE.md's table)."""
    assert _library_uses_of_runtime(_imports(_modules())) == []
    assert "stencil.runtime" in _modules() and "stencil.runtime.generate" in _modules()


def test_runtime_check_can_fail(tmp_path):
    pkg = tmp_path / "stencil"
    (pkg / "runtime").mkdir(parents=True)
    for name in ("__init__.py", "runtime/__init__.py", "runtime/generate.py"):
        (pkg / name).write_text("")
    (pkg / "compiler.py").write_text("def f():\n    from stencil.runtime import generate\n")
    (pkg / "runtime" / "models.py").write_text("import stencil.compiler\nfrom stencil.runtime import generate\n")
    mods = _modules(tmp_path)
    assert _library_uses_of_runtime(_imports(mods)) == ["stencil.compiler:2 imports stencil.runtime.generate"]


def test_checker_sees_a_cycle_and_a_local_import(tmp_path):
    """The checks above can fail: a planted cycle, a planted local import and a cycle that only a
    local import closes are found."""
    pkg = tmp_path / "stencil"
    (pkg / "grammar" / "ebnf").mkdir(parents=True)
    for init in ("", "grammar/", "grammar/ebnf/"):
        (pkg / f"{init}__init__.py").write_text("")
    (pkg / "grammar" / "ebnf" / "gbnf.py").write_text("")
    (pkg / "a.py").write_text("from stencil import b\n")
    (pkg / "b.py").write_text("import stencil.a\n\n\ndef f():\n    from stencil.grammar.ebnf import gbnf\n")
    # c imports d at module level, d imports c only inside a function (as cli and server.main did)
    (pkg / "c.py").write_text("from stencil.d import serve\n")
    (pkg / "d.py").write_text("def serve():\n    from stencil.c import main\n")
    mods = _modules(tmp_path)
    found = list(_imports(mods))
    assert _cycles(_edges(mods, found)) == [["stencil.a", "stencil.b"], ["stencil.c", "stencil.d"]]
    assert ("stencil.b", "stencil.grammar.ebnf.gbnf", True, 5) in found


def _long_functions(src: pathlib.Path = SRC) -> dict:
    """"path:function" -> "line L spans N lines" for each function over MAX_FUNCTION_LINES."""
    out = {}
    for path in sorted((src / "stencil").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                span = node.end_lineno - node.lineno
                if span > MAX_FUNCTION_LINES:
                    out[f"{path.relative_to(src).as_posix()}:{node.name}"] = f"line {node.lineno} spans {span} lines"
    return out


def test_functions_are_short():
    long = _long_functions()
    assert {name: why for name, why in long.items() if name not in LONG_FUNCTIONS} == {}
    assert [name for name in LONG_FUNCTIONS if name not in long] == [], "LONG_FUNCTIONS lists a short function"


def test_length_check_sees_long_functions(tmp_path):
    """The check above can fail: a planted long method and a long nested function are found,
    a function of exactly MAX_FUNCTION_LINES lines is not."""
    pkg = tmp_path / "stencil"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (pkg / "ok.py").write_text("def fits():\n" + body)
    nested = "".join("    " + line + "\n" for line in ("def inner():\n" + body + "    return 1").splitlines())
    (pkg / "long.py").write_text("class C:\n    def method(self):\n        y = 0\n" + body.replace("    ", "        ")
                                 + "\n\nasync def outer():\n    pass\n" + nested)
    found = _long_functions(tmp_path)
    assert sorted(found) == ["stencil/long.py:inner", "stencil/long.py:method", "stencil/long.py:outer"]
    assert found["stencil/long.py:method"] == f"line 2 spans {MAX_FUNCTION_LINES + 1} lines"


MAX_FILE_LINES = 800
CODE_FOLDERS = ("src", "cpp", "tests", "benchmarks", "fuzz", "examples")


def _long_files(root: pathlib.Path | None = None, limit: int = MAX_FILE_LINES) -> dict:
    """"path" -> lines, for each Python or C++ file of the code folders over `limit` lines (the
    reference data under a `data` folder left out)."""
    root = root or SRC.parent
    out = {}
    for folder in CODE_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".py", ".cpp", ".h") and path.is_file() and "data" not in path.parts:
                lines = len(path.read_text(encoding="utf-8").splitlines())
                if lines > limit:
                    out[path.relative_to(root).as_posix()] = lines
    return out


def test_files_are_small():
    """No source or test file over MAX_FILE_LINES lines: split one by idea (tests/python/oracles/,
    test_budget_real_vocabularies.py) rather than let it grow."""
    assert _long_files() == {}


def test_file_length_check_can_fail(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "long.py").write_text("x = 1\n" * (MAX_FILE_LINES + 1))
    (tmp_path / "tests" / "fits.h").write_text("//\n" * MAX_FILE_LINES)
    assert _long_files(tmp_path) == {"tests/long.py": MAX_FILE_LINES + 1}


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is in the dev extra")
def test_tree_passes_ruff():
    """pyproject.toml's ruff configuration holds for the whole tree."""
    root = SRC.parent
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests", "fuzz", "examples", "benchmarks"],
                         cwd=root, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_one_name_per_module():
    """Modules have one name, where they live: the names from before grammar/ was split by syntax
    (stencil.grammar.gbnf, .lark, .json_schema, .regex_ast, ...) are gone, not aliased."""
    import importlib

    for old in ("stencil.grammar.gbnf", "stencil.grammar.lark", "stencil.grammar.json_schema",
                "stencil.grammar.regex_ast", "stencil.grammar.json_value", "stencil.grammar.formats",
                # moved into stencil.kernels and stencil.grammar.tagged (issue 29)
                "stencil.bitmask_torch", "stencil.bitmask_triton", "stencil.grammar.triggers",
                "stencil.grammar.structural_tag", "stencil.grammar.tool_presets", "stencil.grammar.xml_params"):
        with pytest.raises(ImportError):
            importlib.import_module(old)
    from stencil.grammar.ebnf.lark import parser
    assert parser.__name__ == parser.__spec__.name == "stencil.grammar.ebnf.lark.parser"


def test_memo_tables_are_declared():
    """Memo tables are fields their class declares (``Context.empty_memo``), not attributes that
    a helper plants with ``obj.__dict__.setdefault`` where a reader of the class cannot see them."""
    planted = [f"{path.relative_to(SRC)}:{n}" for path in sorted((SRC / "stencil").rglob("*.py"))
               for n, line in enumerate(path.read_text().splitlines(), 1) if "__dict__.setdefault" in line]
    assert planted == []


# ------------------------------------------------------------------ private attributes, the lab

ROOT = SRC.parent

#: (file under the repository root, or "*", private name) -> why reading it is genuine
PRIVATE_READS = {
    ("*", "_core"): "stencil._core, the extension module itself: tests of its bindings, stubs, kernels and errors",
    ("tests/python/test_regex_frontend.py", "_getframe"): "sys._getframe: Python's stack depth, not stencil's",
    ("tests/python/test_bitmask_triton.py", "_apply_bitmask_kernel"):
        "whether Triton's interpreter wrapped the kernel (the skip condition), Triton's own type",
    ("tests/python/test_models.py", "_store_converted"):
        "two writers racing on one cache entry: load_model writes an entry once, so the race needs the writer",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_reads(path: pathlib.Path, root: pathlib.Path = ROOT, allowed=PRIVATE_READS) -> list:
    """"file:line name" for each ``x._name`` (x not self or cls) and each ``from stencil... import
    _name`` in one file, but those ``allowed`` lists."""
    rel = path.relative_to(root).as_posix()
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            names = [node.attr]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "stencil":
            names = [a.name for a in node.names if _private(a.name)]
        else:
            continue
        out += [f"{rel}:{node.lineno} {n}" for n in names
                if (rel, n) not in allowed and ("*", n) not in allowed]
    return out


def _private_reads_under(root: pathlib.Path, folders=("tests", "src/stencil/integrations")) -> list:
    return [r for folder in folders for path in sorted((root / folder).rglob("*.py")) for r in _private_reads(path, root)]


def test_tests_and_integrations_read_no_private_attribute():
    """Tests and integrations use stencil's public API and ``stencil.testing``, not ``x._name``:
    a private attribute may change without notice, and a test that reads one tests the layout."""
    assert _private_reads_under(ROOT) == []
    stale = [f"{rel} {name}" for rel, name in PRIVATE_READS if rel != "*" and not any(
             r.endswith(" " + name) for r in _private_reads(ROOT / rel, allowed={}))]
    assert stale == [], "PRIVATE_READS lists a read that is gone"


def test_private_read_check_can_fail(tmp_path):
    """The check above sees a planted read, a private import and a chained read; not self._x,
    dunders, or an allowed name."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        "import stencil\nfrom stencil.models import _store_converted, load_model\n\n\n"
        "class C:\n    def f(self, info):\n        return self._x, info.__class__, stencil._core, info._vocab.trie_nodes\n\n\n"
        "def g(c):\n    return c.matcher._state\n")
    assert sorted(_private_reads_under(tmp_path, ("tests",))) == [
        "tests/test_x.py:11 _state", "tests/test_x.py:2 _store_converted", "tests/test_x.py:7 _vocab"]


#: Private names of other packages that the package reads, with why.
FOREIGN_PRIVATE = {
    ("src/stencil/tokenizer.py", "_mergeable_ranks"): "tiktoken.Encoding keeps its ranks there (no public accessor)",
    ("src/stencil/tokenizer.py", "_special_tokens"): "tiktoken.Encoding's special tokens (no public accessor)",
}


def _defined_privates(tree: ast.AST) -> set[str]:
    """Private names a module defines: functions, classes, assigned names and attributes."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return {n for n in out if _private(n)}


def _cross_module_private_reads(root: pathlib.Path) -> list:
    """"file:line name" for each ``x._name`` in src/stencil whose ``_name`` the file does not define
    itself: a module reading another module's private attribute."""
    out = []
    for path in sorted((root / "src" / "stencil").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(), str(path))
        own = _defined_privates(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                    and (rel, node.attr) not in FOREIGN_PRIVATE and ("*", node.attr) not in PRIVATE_READS):
                out.append(f"{rel}:{node.lineno} {node.attr}")
    return out


def test_modules_read_no_private_attribute_of_another_module():
    """Inside the package too, a module reads another's state through its public names (issue 42):
    ``info._vocab`` in the compiler became ``info.vocabulary``. A planted read is seen."""
    assert _cross_module_private_reads(ROOT) == []


def test_cross_module_private_read_check_can_fail(tmp_path):
    (tmp_path / "src" / "stencil").mkdir(parents=True)
    (tmp_path / "src" / "stencil" / "a.py").write_text(
        "class A:\n    def __init__(self):\n        self._mine = 1\n\n    def f(self, other):\n"
        "        return self._mine, other._mine, other._theirs\n")
    assert _cross_module_private_reads(tmp_path) == ["src/stencil/a.py:6 _theirs"]


def test_benchmarks_are_not_in_the_package():
    """The benchmark harness lives at the repository root (``python -m benchmarks.X`` from the
    checkout): it is not under src/, the wheel holds src/stencil only, and it imports no private
    module or name of stencil, nor the command line (``stencil.cli``)."""
    assert (ROOT / "benchmarks" / "__init__.py").is_file()
    assert not (SRC / "stencil" / "bench").exists() and not list(SRC.rglob("benchmarks"))
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["tool"]["scikit-build"]["wheel"]["packages"] == ["src/stencil"]
    bad = []
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "stencil":
                mods = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                mods, names = [a.name for a in node.names if a.name.split(".")[0] == "stencil"], []
            else:
                continue
            private = [m for m in mods if any(_private(part) for part in m.split(".")) or _under(m, "stencil.cli")]
            private += [n for n in names if _private(n)]
            bad += [f"{path.relative_to(ROOT).as_posix()}:{node.lineno} {x}" for x in private]
    assert bad == []


def _benchmark_imports(root) -> list[str]:
    """Imports of ``benchmarks`` under ``root/tests``, as ``path:line module``, but in the tests of
    a benchmark command (``test_bench_*.py``, whose subject it is)."""
    bad = []
    for path in sorted((root / "tests").rglob("*.py")):
        if path.name.startswith("test_bench_"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = [node.module]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            else:
                continue
            bad += [f"{path.relative_to(root).as_posix()}:{node.lineno} {m}" for m in mods
                    if m.split(".")[0] == "benchmarks"]
    return bad


def test_tests_do_not_import_the_benchmarks():
    """What the tests share with the benchmarks lives in ``tests/support`` and the benchmarks
    import it from there (issue 42): a test runs from its own tree, a change to a benchmark's
    command cannot break it, and a benchmark's cases stay one copy. Only the tests of a benchmark
    command (``test_bench_*.py``) import the benchmark they run."""
    assert (ROOT / "tests" / "__init__.py").is_file() and (ROOT / "tests" / "support" / "__init__.py").is_file()
    assert _benchmark_imports(ROOT) == []


def test_benchmark_import_check_can_fail(tmp_path):
    (tmp_path / "tests" / "python").mkdir(parents=True)
    (tmp_path / "tests" / "support").mkdir()
    (tmp_path / "tests" / "python" / "test_x.py").write_text("import os\n\ndef f():\n    from benchmarks import trie\n")
    (tmp_path / "tests" / "support" / "zoo.py").write_text("import benchmarks.tokenizers as t\nfrom . import other\n")
    (tmp_path / "tests" / "python" / "test_bench_trie.py").write_text("from benchmarks import trie\n")
    assert _benchmark_imports(tmp_path) == ["tests/python/test_x.py:4 benchmarks",
                                            "tests/support/zoo.py:1 benchmarks.tokenizers"]


# ------------------------------------------------------------------ ARCHITECTURE.md, name by name

#: folders whose files ARCHITECTURE.md may name (a path there is one of these files' paths or its tail)
DOC_TREES = ("src", "cpp", "tests/python", "tests/support", "tests/data", "benchmarks", "docs", "examples", "fuzz", ".ci")
#: paths the page names that a build makes, not the repository
BUILT_PATHS = {"build/cpp-tests": "`make test-cpp`'s build folder"}
_DOC_SUFFIXES = (".py", ".h", ".cpp", ".md", ".toml", ".txt")


def _code_spans(text: str) -> list:
    """The inline code spans of a Markdown text (fenced blocks left out), white space collapsed."""
    import re

    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", prose)]


def _repo_paths(root: pathlib.Path) -> set:
    """Every file and folder under DOC_TREES and at the top, as a path relative to root."""
    out = {p.name for p in root.iterdir()} | set(DOC_TREES)
    for tree in DOC_TREES:
        out.update(p.relative_to(root).as_posix() for p in (root / tree).rglob("*") if "__pycache__" not in p.parts)
    return out


def _source_words(root: pathlib.Path) -> set:
    """Every identifier written in the sources, build files and tests."""
    import re

    files = [root / n for n in ("Makefile", "CMakeLists.txt", "pyproject.toml")]
    for tree, pattern in (("src", "*.py"), ("cpp", "*.h"), ("cpp", "*.cpp"), ("cpp", "*.md"), ("tests/python", "*.py"),
                          ("benchmarks", "*.py")):
        files += sorted((root / tree).rglob(pattern))
    return {w for f in files for w in re.findall(r"[A-Za-z_]\w*", f.read_text(encoding="utf-8"))}


def _doc_problems(text: str, root: pathlib.Path = ROOT) -> list:
    """What a Markdown page names in backticks that the repository does not have: a path (with a
    `/`, or a file name with a source suffix) that is no file or folder (nor the tail of one), a
    ``stencil.x`` name that does not import, a ``benchmarks.x`` module without its file, a `make`
    target the Makefile lacks, an identifier no source file spells."""
    import fnmatch
    import importlib
    import re

    paths, words, bad = _repo_paths(root), _source_words(root), []
    makefile = (root / "Makefile").read_text(encoding="utf-8")
    for span in _code_spans(text):
        if span.startswith("make "):
            bad += [f"make target {t}" for t in span.split()[1:] if not re.search(rf"^{re.escape(t)}:", makefile, re.M)]
            continue
        for word in span.replace("(", " ").replace(")", " ").replace(",", " ").split():
            word = word.rstrip(".:;'\"")
            if word.startswith(("stencil.", "benchmarks.")) and "<" not in word:
                bad += [word] if not _name_imports(word, root, importlib) else []
            elif ("/" in word and not word.startswith("/")) or word.endswith(_DOC_SUFFIXES):
                tail = word.rstrip("/")
                if tail not in BUILT_PATHS and not any(fnmatch.fnmatch(p, tail) or fnmatch.fnmatch(p, "*/" + tail)
                                                       for p in paths):
                    bad.append(word)
        if " " not in span and not re.search(r"[<*/]", span) and not span.endswith(_DOC_SUFFIXES):
            bad += [f"{span}: {w}" for w in re.findall(r"[A-Za-z_]\w*", span) if w not in words]
    return bad


def _name_imports(name: str, root: pathlib.Path, importlib) -> bool:
    """Whether ``stencil.a.b`` imports (its longest module prefix, then attributes), or
    ``benchmarks.x`` has its file (the harness is not imported: it pulls in other engines)."""
    parts = name.split(".")
    if parts[0] == "benchmarks":
        base = root.joinpath(*parts)
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_architecture_names_what_exists():
    """Every path, module, make target and identifier ARCHITECTURE.md writes in backticks is in the
    repository: a renamed file, class or function must take the page with it."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert len(_code_spans(text)) > 200, "the span reader found too few names: is the page there?"
    assert _doc_problems(text) == []


def test_architecture_check_can_fail():
    """The check above sees a planted wrong path, a file name, a folder, a module, an attribute,
    a benchmark, a make target and an identifier; not the real ones beside them."""
    verb = "no_such" + "_verb"  # spelled whole nowhere, not even in this file
    planted = ("`cpp/src/matcher/nowhere.h`, `gone_module.py`, `cpp/src/attic/`, `stencil.no_such_module`, "
               "`stencil.GrammarCompiler.compile_nothing`, `python -m benchmarks.no_bench`, `make no-target`, "
               f"`MaskWalker::{verb}`; real: `read/common.py`, `cpp/src/tokens/`, `stencil.testing`, "
               "`tests/python/test_json_schema_*.py`, `make test-cpp`, `EarleyParser::truncate`, `build/cpp-tests`\n"
               "```\nfenced/not_checked.py\n```\n")
    assert _doc_problems(planted) == [
        "cpp/src/matcher/nowhere.h", "gone_module.py", "cpp/src/attic/", "stencil.no_such_module",
        "stencil.GrammarCompiler.compile_nothing", "benchmarks.no_bench", "make target no-target",
        f"MaskWalker::{verb}: {verb}"]
