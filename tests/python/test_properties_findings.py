"""Findings of the fuzz targets and property tests, kept as regression tests.

json_schema fuzz target (fuzz/fuzz_json_schema.py): a number constant such as `{"const": 1000}`,
`{"const": 1e5}` or `{"type": "number", "minimum": 100000, "maximum": 100000}` gave a first mask
that allowed every digit 1-9 while accept_token refused all but "1": the range [v, v] is an
intersection of two bounded repetitions, and relaxing both for the walk made it non-empty (fixed
in ca182f7 and 1960de1).
"""
from __future__ import annotations

import pytest

import stencil

_TOKS = [bytes([c]) for c in range(256)] + [b"<eos>"]
TOK = stencil.TokenizerInfo.from_vocab(_TOKS, eos_token_ids=[256])


def _first_mask_promises_kept(schema: str) -> tuple[bytes, bytes]:
    """(first bytes the mask allows, those of them accept_token refuses)."""
    m = stencil.Matcher(stencil.GrammarCompiler(TOK).compile_json_schema(schema))
    bm = stencil.allocate_token_bitmask(1, TOK.vocab_size)
    m.fill_next_token_bitmask(bm, 0)
    allowed = [t for t in range(256) if (int(bm[0, t >> 5]) >> (t & 31)) & 1]
    return bytes(allowed), bytes(t for t in allowed if not m.fork().accept_token(t))


@pytest.mark.parametrize("schema", ['{"const": 10}', '{"type": "integer", "minimum": 100000, "maximum": 100000}'])
def test_number_constant_mask_matches_accept(schema):
    allowed, refused = _first_mask_promises_kept(schema)
    assert b"1" in allowed and refused == b""


@pytest.mark.parametrize("schema", ['{"const": 1000}', '{"const": 1e5}', '{"const": 100000}', '{"enum": [9007199254740990.0]}',
                                    '{"type": "number", "minimum": 100000, "maximum": 100000}'])
def test_large_number_constant_mask_matches_accept(schema):
    allowed, refused = _first_mask_promises_kept(schema)
    assert refused == b"", f"mask allows {allowed!r}, accept_token refuses {refused!r}"


@pytest.mark.xfail(strict=True, reason="open (issue 17): under property_order='any' the object_keys check vetoes a "
                                       "repeated or surplus key only when the object closes, so the mask leads into "
                                       "a dead end; json_schema fuzz finding at 31d0df8+")
@pytest.mark.parametrize("prefix", ['{"a": 21, ', '{"a": 21, "a": 2.1e1'])
def test_const_object_in_any_order_has_no_dead_end(prefix):
    """fuzz/findings json_schema-crash-2a5e17d7: `{"allOf": [{"enum": [{"a": 21}]}, ...]}` walked
    into `{"\\u0061": 21, "a": 2.10e1` and an empty mask. Every prefix the mask allows must still
    be completable: here only `}` (after the first member) could end the object."""
    g = stencil.GrammarCompiler(TOK).compile_json_schema('{"const": {"a": 21}}', property_order="any")
    m = stencil.Matcher(g)
    assert m.accept_string(prefix) is False or m.fork().accept_string("}")
