"""Differential test against the reference validator (the ``jsonschema`` package): random mutations
of MaskBench's valid instances (keys dropped or added, items repeated or removed, values replaced
by values of other types) must be accepted by the compiled grammar exactly when jsonschema
validates them. ``format`` is left out on both sides (jsonschema's format checkers are looser
than RFC grammars, e.g. any string with an "@" is an email), and so are schemas without
``$schema`` that use pre-2020 keywords (``dependencies``, array ``items``), which stencil
understands and jsonschema's 2020-12 validator ignores."""
from __future__ import annotations

import copy
import json
import os
import random
import warnings

import pytest

import stencil
from data_paths import MASKBENCH, ON_SAMPLE
from tests.support.json_schema_suite import maskbench_files
from stencil.grammar.json.schema import json_schema_grammar
from tokenizers_zoo import get

jsonschema = pytest.importorskip("jsonschema")

# the sample's 65 schemas each get more mutations than every 24th of a full set's. On the sample
# (2,560 checks, no schema refused, no instance the validator cannot decide) the floor is 95% of
# the checks and no refusal is allowed: a front end that starts refusing schemas fails here
# instead of shrinking the sample; on a larger set, at most 5% of the schemas may be refused.
STEP, MUTATIONS, CHECKED = (1, 40, 2430) if ON_SAMPLE else (24, 8, 1500)
REFUSED_SHARE = 0.0 if ON_SAMPLE else 0.05
REPLACEMENTS = [None, True, 0, -1, 7, 2.5, "", "x", "abc", [], {}, 100000, "2020-01-01"]


def _strip_formats(x):
    if isinstance(x, dict):
        return {k: _strip_formats(v) for k, v in x.items() if not (k == "format" and isinstance(v, str))}
    if isinstance(x, list):
        return [_strip_formats(v) for v in x]
    return x


def _mutate(v, rnd):
    if isinstance(v, dict) and v and rnd.random() < 0.7:
        v = dict(v)
        k = rnd.choice(list(v))
        c = rnd.random()
        if c < 0.25:
            del v[k]
        elif c < 0.4:
            v["zz_extra"] = 1
        else:
            v[k] = _mutate(v[k], rnd)
        return v
    if isinstance(v, list) and v and rnd.random() < 0.7:
        v = list(v)
        i = rnd.randrange(len(v))
        c = rnd.random()
        if c < 0.25:
            del v[i]
        elif c < 0.45:
            v.append(copy.deepcopy(v[i]))
        else:
            v[i] = _mutate(v[i], rnd)
        return v
    return rnd.choice(REPLACEMENTS)


def test_mutated_instances_agree_with_jsonschema():
    files = maskbench_files(MASKBENCH, step=STEP)
    assert files, f"no MaskBench file in {MASKBENCH}"
    entry = get("deepseek")
    compiler = stencil.GrammarCompiler(entry.info, cache_size=4)
    rnd = random.Random(2024)
    checked, refused, undecided, mismatches = 0, [], 0, []
    for path in files:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        schema = _strip_formats(doc["schema"])
        text = json.dumps(schema)
        if isinstance(schema, dict) and "$schema" not in schema and (
                '"dependencies"' in text or '"additionalItems"' in text or '"items": [' in text):
            continue
        valid = [t["data"] for t in doc["tests"] if t["valid"]]
        if not valid:
            continue
        try:
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                validator = cls(schema)
        except jsonschema.exceptions.SchemaError:
            continue
        try:
            g = compiler.compile_grammar(json_schema_grammar(schema, property_order="any"))
        except (stencil.GrammarError, stencil.LimitError):
            refused.append(os.path.basename(path))
            continue
        for _ in range(MUTATIONS):
            inst = _mutate(rnd.choice(valid), rnd)
            try:
                expected = validator.is_valid(inst)
            except Exception:  # the reference cannot decide (e.g. a bad regex for Python's re)
                undecided += 1
                continue
            m = stencil.Matcher(g)
            ok = all(m.accept_token(t) for t in entry.hf.encode(json.dumps(inst, ensure_ascii=False),
                                                                 add_special_tokens=False).ids)
            checked += 1
            if (ok and m.is_accepting()) != expected:
                mismatches.append((os.path.basename(path), expected, json.dumps(inst)[:200]))
    print(f"checked {checked}, undecided {undecided}, refused {len(refused)}: {refused}")
    assert len(refused) <= REFUSED_SHARE * len(files), refused
    assert checked > CHECKED and undecided <= checked // 100, (checked, undecided)
    assert mismatches == []
