"""A count of work for tests of how the front-end's work grows: Python function calls, which a
loaded host cannot stretch as it stretches seconds."""
from __future__ import annotations

import sys
from typing import Callable


def python_calls(fn: Callable[[], object]) -> int:
    """How many Python functions ``fn`` calls."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event == "call"
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count
