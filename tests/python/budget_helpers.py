"""What the budget tests share: a vocabulary of single bytes (with a few longer tokens). (The tokens
a budgeted mask keeps: ``tests.support.tight_walks.allowed``.)"""
from __future__ import annotations

import stencil

EOS = 256


SPECIALS = (b"<|sep|>", b"<|end|>")


def byte_vocab(extra: tuple[bytes, ...] = ()) -> stencil.TokenizerInfo:
    """ids 0-255: the single bytes; 256: EOS; then ``extra`` multi-byte tokens, then the special
    tokens ``<|sep|>`` and ``<|end|>`` (which a grammar names to take them)."""
    specials = range(257 + len(extra), 257 + len(extra) + len(SPECIALS))
    return stencil.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b"<eos>"] + list(extra)
                                            + list(SPECIALS), eos_token_ids=EOS, special_token_ids=specials)


