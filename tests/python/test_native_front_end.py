"""The JSON Schema front-end compiled by mypyc (CMakeLists.txt, STENCIL_MYPYC;
src/stencil/grammar/json/schema/native.py): this install runs it compiled, its grammars are the
sources' bit for bit, and where a source changed since the build (or STENCIL_PURE_PYTHON is set)
every compiled module is imported from its source instead, with a warning for the edit."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest
from data_paths import JSON_SCHEMA_SUITE, MASKBENCH

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# prints whether the modules run compiled, then a grammar hash per schema (json lines on stdin)
HASHES = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        import stencil
        from stencil.grammar.json.schema import json_schema_grammar, native
    print(json.dumps([native.running_compiled(), [str(w.message) for w in caught]]))
    for line in sys.stdin:
        try:
            print(json_schema_grammar(json.loads(line), whitespace="compact").hash())
        except stencil.GrammarError as e:
            print("error: " + str(e))
""")


def _schemas(count: int) -> list:
    """Schemas of every kind: MaskBench's (the repository's sample, or STENCIL_MASKBENCH's), the
    JSON Schema Test Suite's, and some written here."""
    out = [{"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}, "b": {"enum": ["x", 1, None]}},
            "required": ["a"], "additionalProperties": {"type": "string", "pattern": "^[a-f]{2,5}$"}},
           {"type": "array", "items": {"oneOf": [{"type": "string", "format": "email"}, {"type": "number"}]},
            "uniqueItems": True, "maxItems": 300},
           {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}],
            "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}},
           {"type": "string", "not": {"const": "a"}, "minLength": 1, "maxLength": 4},
           {"type": "object", "minProperties": 2, "propertyNames": {"pattern": "^k"}},
           {"allOf": [{"type": "integer"}, {"not": {"multipleOf": 3}}]}]
    files = sorted(glob.glob(os.path.join(MASKBENCH, "*.json")))
    for path in files[:: max(1, len(files) // count)][:count]:
        with open(path) as f:
            out.append(json.load(f)["schema"])
    for path in sorted(glob.glob(os.path.join(JSON_SCHEMA_SUITE, "tests", "draft2020-12", "*.json"))):
        with open(path) as f:
            out += [case["schema"] for case in json.load(f)]
    return out[:count + 6]


def _run(env_extra: dict, schemas: list, prelude: str = ""):
    env = {**os.environ, **env_extra}
    p = subprocess.run([sys.executable, "-c", prelude + HASHES], input="\n".join(json.dumps(s) for s in schemas),
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    head, *hashes = p.stdout.splitlines()
    compiled, warned = json.loads(head)
    return compiled, warned, hashes


@pytest.fixture(scope="module")
def built():
    from stencil.grammar.json.schema import native
    if not native.built_compiled():
        pytest.skip("this install was built without mypyc (STENCIL_MYPYC=OFF, or mypy missing at build time)")


def test_the_install_runs_the_front_end_compiled(built):
    from stencil.grammar.json.schema import native
    assert native.running_compiled()
    import stencil.grammar.json.schema.emit.objects as objects
    assert not objects.__file__.endswith(".py")


def test_compiled_and_source_grammars_are_the_same(built):
    schemas = _schemas(300)
    compiled, warned, native_hashes = _run({"STENCIL_PURE_PYTHON": "0"}, schemas)
    assert compiled and not warned
    pure, warned, source_hashes = _run({"STENCIL_PURE_PYTHON": "1"}, schemas)
    assert not pure and not warned   # (asked for: no warning)
    assert len(native_hashes) == len(schemas)
    assert native_hashes == source_hashes
    assert sum(h.startswith("error") for h in native_hashes) < len(schemas) // 2


def test_a_changed_source_runs_every_module_from_its_source(built):
    # the build's record says objects.py was another text: as after an edit of an editable install
    prelude = textwrap.dedent("""
        import sys, types, importlib.util, os
        sys.path.insert(0, os.environ["STENCIL_TEST_SRC"])
        spec = importlib.util.spec_from_file_location(
            "_n", os.path.join(os.environ["STENCIL_TEST_SRC"], "stencil/grammar/json/schema/native.py"))
        n = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(n)
        sys.path.pop(0)
        record = n.source_hashes(n.compiled_modules(os.path.dirname(spec.origin)))
        record["stencil.grammar.json.schema.emit.objects"] = "0" * 32
        sys.modules["stencil.grammar.json.schema._native_build"] = types.SimpleNamespace(SOURCES=record)
    """)
    schemas = _schemas(20)
    compiled, warned, hashes = _run({"STENCIL_TEST_SRC": os.path.join(ROOT, "src"), "STENCIL_PURE_PYTHON": "0"},
                                    schemas, prelude)
    assert not compiled
    assert len(warned) == 1 and "emit.objects" in warned[0] and "make install" in warned[0], warned
    _, _, native_hashes = _run({"STENCIL_PURE_PYTHON": "0"}, schemas)
    assert hashes == native_hashes
