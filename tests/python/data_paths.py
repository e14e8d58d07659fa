"""Where the tests find their reference data: ``tests/data`` in the repository (see its READMEs;
the paths the benchmarks share are ``tests.support.datasets``'), so that a fresh clone runs every
data test. ``STENCIL_MASKBENCH`` names a larger MaskBench folder
instead, e.g. ``STENCIL_MASKBENCH=../shared/data/maskbench-dev make test`` (the full development
set: the exactness test then takes every 16th of its 7,880 schemas, the generic-JSON test every
valid instance), which takes minutes more."""
from __future__ import annotations

import os

from tests.support.datasets import JSON_SCHEMA_SUITE, MASKBENCH_SAMPLE, REPO_DATA as DATA  # noqa: F401 (names of this module)

GBNF = os.path.join(DATA, "gbnf")
MASKBENCH = os.environ.get("STENCIL_MASKBENCH") or MASKBENCH_SAMPLE
#: True when the tests run on the repository's sample (the thresholds of a few tests depend on it)
ON_SAMPLE = os.path.abspath(MASKBENCH) == MASKBENCH_SAMPLE
