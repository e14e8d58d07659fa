"""Merged runs (cpp/src/tokens/merged_runs.h) against the walk without runs, on a real vocabulary.

The second walk of a mask cache entry merges the boundaries whose byte completes a lexeme alike at
every depth (a string's closing quote after `a`, `abc`, `"hello`) into one trie of the bytes after
that byte, pushed and walked once. Each state's mask is filled twice (the repeat memo off, so the
second fill walks again, merged) and must equal the mask of a compiler whose boundaries are walked
one by one (``boundary_runs`` off): plain masks, and budget masks, whose costs after each token the
merged walk reports once per trie node. A class's trie is shared by the vocabulary's grammars:
another grammar's entries take it at their first walk. The schemas hold what makes a token's verdict depend on the
bytes before the quote: keys (free, named, written before), enums and consts (completion checks
that read the string), unique items, patterns and lengths."""
from __future__ import annotations

import json
import threading

import numpy as np
import pytest

import stencil
from stencil.bitmask import bitmask_to_bool
from stencil.testing import vocab_stats

CASES = [
    ({"type": "object"}, {"ab": "x", "ac": "xy", "a": "", "abc": "long value here"}),
    ({"type": "object", "properties": {"name": {"type": "string"}, "nick": {"type": "string"}},
      "additionalProperties": {"type": "string"}}, {"nick": "n", "name": "Ann", "names": "more", "na": "x"}),
    ({"type": "object", "properties": {"color": {"enum": ["red", "green", "re", "r\"ed"]},
                                       "kind": {"const": "apple"}}, "required": ["color"]},
     {"kind": "apple", "color": "r\"ed"}),
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, ["a", "ab", "abc", "b", "ba"]),
    ({"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]{2,5}$"},
                                       "tag": {"type": "string", "minLength": 2, "maxLength": 6}}},
     {"id": "abcd", "tag": "hello"}),
    ({"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}},
                                 "additionalProperties": False}}, [{"k": "v"}, {"k": "vv"}, {}]),
]


def masks_along(g, text: bytes, vocab_size: int, fills: int, budget: int | None) -> list[np.ndarray]:
    m = stencil.Matcher(g)
    bm = stencil.allocate_token_bitmask(1, vocab_size)
    out = []
    for i in range(len(text) + 1):
        if i and not m.accept_bytes(text[i - 1:i]):
            raise AssertionError(f"refused {text[:i]!r}")
        for _ in range(fills):
            if budget is None:
                m.fill_next_token_bitmask(bm, 0)
            else:
                m.fill_next_token_bitmask(bm, 0, remaining_tokens=budget)
        out.append(bitmask_to_bool(bm, vocab_size)[0].copy())
    return out


@pytest.mark.parametrize("budget", [None, 12, 40])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_merged_run_masks_equal_masks_walked_boundary_by_boundary(deepseek, case, budget):
    schema, instance = CASES[case]
    info = deepseek.info
    text = json.dumps(instance, ensure_ascii=False).encode()
    merged = stencil.GrammarCompiler(info, mask_optimizations={"repeat_memo": False})
    single = stencil.GrammarCompiler(info, mask_optimizations={"repeat_memo": False, "boundary_runs": False})
    got = masks_along(merged.compile_json_schema(schema, property_order="any"), text, info.vocab_size, 2, budget)
    want = masks_along(single.compile_json_schema(schema, property_order="any"), text, info.vocab_size, 1, budget)
    wrong = [(text[:i], [info.token_bytes(int(t)) for t in np.nonzero(a != b)[0][:5]])
             for i, (a, b) in enumerate(zip(got, want)) if not np.array_equal(a, b)]
    assert wrong == []
    # (the states hold tokens that close a string after bytes of it: what a merged run walks)
    closing = [t for t in range(info.vocab_size) if info.token_bytes(t)[1:].endswith(b'"')]
    assert any(g[closing].any() for g in got)


def test_class_tries_shared_across_grammars_merge_at_the_first_walk():
    """A class's trie follows from its boundary nodes alone: one grammar's entries build them into
    the vocabulary's shared cache at their second walk, and another grammar's entries with the same
    classes find them there and merge at their first walk. Those first-walk masks must equal the
    masks walked boundary by boundary, and the second grammar must have built no trie of its own."""
    info = stencil.TokenizerInfo.from_vocab(
        [bytes([i]) for i in range(256)] + [b'a"', b'ab"', b'b",', b'"}', b'x",', b'xy"', b'\\""', b'c":', b"<eos>"],
        eos_token_ids=[264])
    schema, instance = CASES[1]
    text = json.dumps(instance).encode()
    options = {"repeat_memo": False}
    first = stencil.GrammarCompiler(info, mask_optimizations=options).compile_json_schema(schema, property_order="any")
    masks_along(first, text, info.vocab_size, 2, None)
    built = vocab_stats(info)
    assert built.shared_class_entries > 0
    # (another compiler: a grammar of its own, the vocabulary's shared cache in common)
    second = stencil.GrammarCompiler(info, mask_optimizations=options).compile_json_schema(schema, property_order="any")
    got = masks_along(second, text, info.vocab_size, 1, None)
    after = vocab_stats(info)
    assert after.shared_class_entries == built.shared_class_entries
    assert after.shared_class_hits > built.shared_class_hits
    single = stencil.GrammarCompiler(info, mask_optimizations={**options, "boundary_runs": False})
    want = masks_along(single.compile_json_schema(schema, property_order="any"), text, info.vocab_size, 1, None)
    assert [i for i, (a, b) in enumerate(zip(got, want)) if not np.array_equal(a, b)] == []


def test_class_tries_shared_by_grammars_on_threads(deepseek):
    """Grammars of their own on four threads over one vocabulary: entries merge at their first walk
    from tries other threads built, or build them at their second while another thread looks them
    up; every mask equals the one walked boundary by boundary."""
    info = deepseek.info
    single = stencil.GrammarCompiler(info, mask_optimizations={"repeat_memo": False, "boundary_runs": False})
    texts = [json.dumps(instance, ensure_ascii=False).encode() for _, instance in CASES]
    want = [masks_along(single.compile_json_schema(schema, property_order="any"), text, info.vocab_size, 1, None)
            for (schema, _), text in zip(CASES, texts)]
    wrong, errors = [], []

    def work(seed: int) -> None:
        try:
            for rep in range(2):
                compiler = stencil.GrammarCompiler(info, mask_optimizations={"repeat_memo": False})
                order = list(range(len(CASES)))[::1 if seed % 2 else -1]
                for i in order:
                    g = compiler.compile_json_schema(CASES[i][0], property_order="any")
                    got = masks_along(g, texts[i], info.vocab_size, 1 + (seed + rep) % 2, None)
                    wrong.extend((seed, rep, i, k) for k, (a, b) in enumerate(zip(got, want[i]))
                                 if not np.array_equal(a, b))
        except Exception as e:  # (reported below: a thread's exception would pass unseen)
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and wrong == []
    assert vocab_stats(info).shared_class_hits > 0
