"""What the budget tests share: a vocabulary of single bytes (with a few longer tokens) and the
tokens a budgeted mask keeps."""
from __future__ import annotations

import numpy as np

import stencil

EOS = 256


SPECIALS = (b"<|sep|>", b"<|end|>")


def byte_vocab(extra: tuple[bytes, ...] = ()) -> stencil.TokenizerInfo:
    """ids 0-255: the single bytes; 256: EOS; then ``extra`` multi-byte tokens, then the special
    tokens ``<|sep|>`` and ``<|end|>`` (which a grammar names to take them)."""
    specials = range(257 + len(extra), 257 + len(extra) + len(SPECIALS))
    return stencil.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b"<eos>"] + list(extra)
                                            + list(SPECIALS), eos_token_ids=EOS, special_token_ids=specials)


def allowed(m: stencil.Matcher, bm: np.ndarray, k: int | None = None) -> list[int]:
    m.fill_next_token_bitmask(bm, 0, remaining_tokens=k)
    bits = np.unpackbits(bm[0].view(np.uint8), bitorder="little")
    return [int(i) for i in np.nonzero(bits)[0]]
