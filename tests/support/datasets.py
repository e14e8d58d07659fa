"""Where the benchmarks (and the tests' runners shared with them) find their reference data when no
folder is named.

A checkout carries what the tests need in ``tests/data`` (the JSON Schema Test Suite's draft
2020-12 files, a MaskBench sample, llama.cpp's example GBNF grammars). The benchmarks measure the
whole MaskBench development set where it lies beside the checkout (``../shared/data/maskbench-dev``)
and fall back to the sample otherwise, so that every command also runs from a fresh clone.

Example::

    from tests.support.datasets import default_maskbench, JSON_SCHEMA_SUITE
    files = list_files([default_maskbench()], limit=10)
"""
from __future__ import annotations

import os

_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
REPO_DATA = os.path.join(_ROOT, "tests", "data")
SHARED_DATA = os.path.normpath(os.path.join(_ROOT, "..", "shared", "data"))

#: the official suite's draft 2020-12 files and remotes, as vendored (tests/data/.../README.md)
JSON_SCHEMA_SUITE = os.path.join(REPO_DATA, "json-schema-test-suite")
MASKBENCH_SAMPLE = os.path.join(REPO_DATA, "maskbench-sample")
MASKBENCH_FULL = os.path.join(SHARED_DATA, "maskbench-dev")

__all__ = ["JSON_SCHEMA_SUITE", "MASKBENCH_SAMPLE", "MASKBENCH_FULL", "default_maskbench"]


def default_maskbench() -> str:
    """The full development set when it is beside the checkout, else the repository's sample
    (from an installed wheel, where neither is, the full set's path: the error then names it)."""
    if os.path.isdir(MASKBENCH_FULL) or not os.path.isdir(MASKBENCH_SAMPLE):
        return MASKBENCH_FULL
    return MASKBENCH_SAMPLE
