"""Benchmarks: ``python -m benchmarks.trie`` (token trie build time and memory)."""
