"""The test suite (``tests/python``, run by pytest) and ``tests.support``, what the tests and the
benchmarks share; a package so that ``python -m benchmarks.<name>`` from the repository root
imports ``tests.support``."""
