"""The reference data the suite reads is in the repository (tests/data), complete and licensed, and
no test reaches outside the checkout for it (a fresh clone must run every data test, not skip)."""
from __future__ import annotations

import ast
import collections
import glob
import json
import os

from data_paths import GBNF, JSON_SCHEMA_SUITE, MASKBENCH_SAMPLE

HERE = os.path.dirname(os.path.abspath(__file__))


def test_each_data_folder_has_its_licence_and_readme():
    for folder in (JSON_SCHEMA_SUITE, MASKBENCH_SAMPLE, GBNF):
        assert os.path.isfile(os.path.join(folder, "LICENSE")), folder
        assert os.path.isfile(os.path.join(folder, "README.md")), folder


def test_json_schema_suite_copy_holds_what_the_suite_test_reads():
    names = {os.path.basename(p) for p in glob.glob(os.path.join(JSON_SCHEMA_SUITE, "tests", "draft2020-12", "*.json"))}
    assert len(names) == 44 and {"ref.json", "refRemote.json", "dynamicRef.json"} <= names
    assert not names & {"format.json", "content.json"}  # left out by the coverage run, so not carried
    assert os.path.isfile(os.path.join(JSON_SCHEMA_SUITE, "remotes", "draft2020-12", "subSchemas.json"))


def test_maskbench_sample_spans_every_category_with_instances():
    by_category = collections.Counter()
    for path in glob.glob(os.path.join(MASKBENCH_SAMPLE, "*.json")):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        assert isinstance(doc["schema"], (dict, bool)) and any(t["valid"] for t in doc["tests"]), path
        name = os.path.basename(path).split("---")[0]
        by_category[name.rsplit("_", 1)[0] if name.endswith(".json") else name] += 1
    assert sum(by_category.values()) == 65
    assert len(by_category) == 21, sorted(by_category)


def _outside_paths(tree):
    """"shared" as a component of an os.path.join, or a string naming ../shared."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "join":
            if any(isinstance(a, ast.Constant) and a.value == "shared" for a in node.args):
                yield ast.unparse(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "../shared/" in node.value:
            if "\n" not in node.value:  # docstrings may name the larger data set
                yield node.value


def test_no_test_reads_data_beside_the_checkout():
    offenders = []
    for path in sorted(glob.glob(os.path.join(HERE, "*.py"))):
        if os.path.basename(path) == os.path.basename(__file__):
            continue  # this test names what it looks for
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        offenders += [(os.path.basename(path), s) for s in _outside_paths(tree)]
    assert offenders == []
