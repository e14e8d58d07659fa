"""Writes the C of the JSON Schema front-end compiled by mypyc, and the CMake that builds it.

Run by CMakeLists.txt at configure time (option STENCIL_MYPYC):
    python cmake/mypyc_generate.py SOURCE_DIR OUT_DIR
It compiles the modules of src/stencil/grammar/json/schema named by
``stencil.grammar.json.schema.native.compiled_modules`` into one group (a shared library
``stencil._schema__mypyc`` and a shim extension per module) and writes OUT_DIR/extensions.cmake:
a ``stencil_mypyc_extension(MODULE SOURCES... INCLUDE_DIRS ... FLAGS ...)`` call per extension,
and OUT_DIR/_native_build.py, the source hashes the build was made from (installed beside the
modules: ``native.py`` imports the sources instead when they changed since).

mypyc writes a C file only when its contents change, so an unchanged front-end recompiles nothing.
Why compiled: the front-end is ~97% of a large schema's time to first mask, and mypyc's native
classes and calls take ~28% off it (the tuning half's 124 slowest compiles, sum of each one's best
of 5: 662 -> 477-483 ms).
"""
from __future__ import annotations

import importlib.util
import os
import sys


def _cmake_list(items) -> str:
    return " ".join('"' + str(x).replace("\\", "/").replace('"', '\\"') + '"' for x in items)


def main(source_dir: str, out_dir: str) -> int:
    src = os.path.join(source_dir, "src")
    # native.py alone, by its path: the package's __init__ needs the extension, not built yet
    spec = importlib.util.spec_from_file_location(
        "_stencil_native", os.path.join(src, "stencil", "grammar", "json", "schema", "native.py"))
    native = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(native)

    from mypyc.build import mypycify

    modules = native.compiled_modules(os.path.join(src, "stencil", "grammar", "json", "schema"))
    paths = [os.path.relpath(path, src) for _, path in modules]
    os.makedirs(out_dir, exist_ok=True)
    cwd = os.getcwd()
    os.chdir(src)   # mypy names each module by its path below src/
    try:
        extensions = mypycify(
            ["--config-file", os.path.join(source_dir, "pyproject.toml"), "--no-warn-unused-ignores",
             "--no-site-packages", "--follow-imports", "silent",
             "--cache-dir", os.path.join(out_dir, "mypy_cache"), *paths],
            opt_level="3", debug_level="0", group_name=native.GROUP, target_dir=os.path.join(out_dir, "c"))
    finally:
        os.chdir(cwd)
    lines = []
    for ext in extensions:
        sources = [os.path.join(src, s) if not os.path.isabs(s) else s for s in ext.sources]
        includes = [os.path.join(src, d) if not os.path.isabs(d) else d for d in ext.include_dirs]
        # an install must not fail on another compiler's new warnings
        flags = [f for f in ext.extra_compile_args if f != "-Werror"]
        lines.append(f"stencil_mypyc_extension({ext.name} SOURCES {_cmake_list(sources)} "
                     f"INCLUDE_DIRS {_cmake_list(includes)} FLAGS {_cmake_list(flags)})")
    with open(os.path.join(out_dir, "extensions.cmake"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out_dir, "_native_build.py"), "w") as f:
        f.write('"""Written by cmake/mypyc_generate.py: the sources the compiled modules were built from."""\n')
        f.write(f"SOURCES = {native.source_hashes(modules)!r}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
