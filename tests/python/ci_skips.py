"""Under CI (the environment variable ``CI`` set, as ``.ci/run`` sets it) a skip is a failure,
except for the few that CI is expected to show. ``make test`` installs every package, tokenizer,
model and data file the suite reads, so a skip for one of them in CI means that what it guards
would pass unseen as "skipped" (a regression hidden by a skip). On a user's machine the same tests
still skip with their reason. The conftest imports the two hooks below; this is the one place that
decides, for every test file and for every kind of skip (``pytest.skip``, ``importorskip``, a
``skipif`` mark, a module-level skip at collection).

Run by hand: ``CI=true .venv/bin/python -m pytest tests/python/test_x.py``.
"""
from __future__ import annotations

import os

import pytest

#: The skips a CI run may show, by a phrase of their reason: what `make test` leaves out on
#: purpose (the engines of `make test-integrations`, the reference engines of the `bench` extra),
#: hardware the CI machine has not (CUDA), README blocks marked ``# requires:``.
EXPECTED_IN_CI = ("make test-integrations", "make bench-deps", "CUDA", "README.md line")


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _unexpected_skip(report) -> str | None:
    """The reason of a skip that CI must not show, else None."""
    if not report.skipped or hasattr(report, "wasxfail") or not under_ci():
        return None
    longrepr = report.longrepr
    reason = str(longrepr[-1] if isinstance(longrepr, tuple) else longrepr)
    return None if any(phrase in reason for phrase in EXPECTED_IN_CI) else reason


def _fail(report, reason: str) -> None:
    report.outcome = "failed"
    report.longrepr = (f"skipped under CI: {reason}\n`make test` installs what this test needs, so in CI "
                       "its absence is a failure (tests/python/ci_skips.py lists the skips CI may show)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    reason = _unexpected_skip(report)
    if reason is not None:
        _fail(report, reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    report = (yield).get_result()
    reason = _unexpected_skip(report)
    if reason is not None:
        _fail(report, reason)
