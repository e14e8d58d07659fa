"""Which of the front-end's modules run compiled, and when their sources run instead.

The build compiles the JSON Schema front-end's modules with mypyc (CMakeLists.txt, option
STENCIL_MYPYC; cmake/mypyc_generate.py): native classes and calls take about a quarter off a large
schema's compile, nearly all of its time to first mask. The compiled modules are all or nothing:
compiled code calls the other compiled modules' functions directly, so a source module beside them
would be bypassed. They run only while they match their sources: after an edit to a source of an
editable install (or with ``STENCIL_PURE_PYTHON=1``, e.g. to profile the front-end with cProfile),
:func:`use_sources_if_stale` has every one of them imported from its source instead, with a warning
for the edit (reinstalling compiles them again).

Compiled, the front-end's recursion (documents nested up to ``MAX_SCHEMA_NESTING`` levels, schemas
read inside schemas up to ``read.context.MAX_READ_DEPTH``) runs on the C stack, about 1-2 KB a
level, which Python's recursion limit does not watch: the default 8 MB stacks of Linux threads
hold the deepest schema the front door lets through; a thread made with a smaller
``threading.stack_size`` (under 2 MB) should compile deep schemas with ``STENCIL_PURE_PYTHON=1``.

>>> from stencil.grammar.json.schema import native
>>> native.running_compiled() in (True, False)
True
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import sys
import warnings

#: the compiled group's shared library is GROUP + "__mypyc" (a module of the stencil package)
GROUP = "stencil._schema"
PACKAGE = "stencil.grammar.json.schema"
_HERE = os.path.dirname(os.path.abspath(__file__))
# not compiled: packages' __init__ (the front door and its imports), this module, and
# core/options.py (a class body mypyc does not take: the dataclass made from a TypedDict)
_SKIP = {"__init__.py", "native.py", "_native_build.py", os.path.join("core", "options.py")}


def compiled_modules(package_dir: str = _HERE) -> list[tuple[str, str]]:
    """(module name, source path) of each module the build compiles, sorted."""
    out = []
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(folder, name), package_dir)
            if name.endswith(".py") and rel not in _SKIP and name not in _SKIP:
                out.append((PACKAGE + "." + rel[:-3].replace(os.sep, "."), os.path.join(folder, name)))
    return out


def source_hashes(modules: list[tuple[str, str]]) -> dict[str, str]:
    """{module name: a hash of its source} (what the build records and the import compares)."""
    out = {}
    for name, path in modules:
        with open(path, "rb") as f:
            out[name] = hashlib.blake2b(f.read(), digest_size=16).hexdigest()
    return out


class _SourceFinder:
    """Imports the listed modules from their source files (ahead of the compiled extensions)."""

    def __init__(self, paths: dict[str, str]):
        self.paths = paths

    def find_spec(self, fullname, path=None, target=None):
        source = self.paths.get(fullname)
        return None if source is None else importlib.util.spec_from_file_location(fullname, source)


_state: dict = {}


def use_sources_if_stale() -> None:
    """Before the package imports its modules: where the build compiled them (its
    ``_native_build`` record is installed) and a source differs from what was compiled, or
    ``STENCIL_PURE_PYTHON`` is set to anything but 0, import every compiled module from its
    source instead. Idempotent."""
    if "compiled" in _state:
        return
    try:
        record = importlib.import_module(PACKAGE + "._native_build")   # (written by the build)
    except ImportError:   # built without mypyc: the sources are all there is
        _state["compiled"] = False
        return
    modules = compiled_modules()
    forced = os.environ.get("STENCIL_PURE_PYTHON", "0") not in ("", "0")
    if not forced:
        now = source_hashes(modules)
        changed = sorted(n for n in set(now) | set(record.SOURCES) if now.get(n) != record.SOURCES.get(n))
        if not changed:
            _state["compiled"] = True
            return
        warnings.warn(f"stencil: the JSON Schema front-end's sources changed since they were compiled "
                      f"({', '.join(changed[:3])}{', ...' if len(changed) > 3 else ''}): running the sources "
                      "(slower); reinstall (make install) to compile them again", RuntimeWarning, stacklevel=3)
    sys.meta_path.insert(0, _SourceFinder(dict(modules)))
    _state["compiled"] = False


def built_compiled() -> bool:
    """Whether the build compiled the front-end (False: built with STENCIL_MYPYC=OFF)."""
    return importlib.util.find_spec(PACKAGE + "._native_build") is not None


def running_compiled() -> bool:
    """Whether the front-end's modules run compiled: each one imported from an extension module."""
    use_sources_if_stale()
    names = [name for name, _ in compiled_modules()]
    for name in names:
        importlib.import_module(name)
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return all(str(getattr(sys.modules[name], "__file__", "")).endswith(suffixes) for name in names)
