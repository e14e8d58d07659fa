"""Benchmarks: ``python -m stencil.bench.trie`` (token trie build time and memory)."""
