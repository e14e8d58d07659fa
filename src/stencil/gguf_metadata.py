"""The key-value metadata at the head of a GGUF model file, read without the ``gguf`` package.

``gguf.GGUFReader`` maps the whole file and builds a numpy view for every part of every field:
a 262k-token vocabulary (Gemma 3) took 79 s in it, 786k calls for a few megabytes of strings.
This reader walks the metadata once (GGUF versions 2 and 3, either byte order), keeps the keys
asked for and skips the others, tensors included, by their sizes.

    meta = read_gguf_metadata("model.gguf", prefix="tokenizer.ggml.")
    meta["tokenizer.ggml.model"]        # 'llama'
    len(meta["tokenizer.ggml.tokens"])  # 262144 (a list of bytes)
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from array import array
from typing import Any

# GGUF value types: (struct format, size) of the fixed-size ones
_FIXED = {0: ("B", 1), 1: ("b", 1), 2: ("H", 2), 3: ("h", 2), 4: ("I", 4), 5: ("i", 4), 6: ("f", 4),
          7: ("?", 1), 10: ("Q", 8), 11: ("q", 8), 12: ("d", 8)}
_STRING, _ARRAY = 8, 9
_MAX_NESTING = 16  # arrays of arrays: real files nest one deep; a corrupt one must not recurse without end


class GGUFFormatError(ValueError):
    """The file is not GGUF, or its metadata is truncated or corrupt (``where`` says at which key)."""


def read_gguf_metadata(path: str | os.PathLike, prefix: str = "") -> dict[str, Any]:
    """The metadata of the GGUF file at ``path`` whose keys start with ``prefix``: strings as
    ``str`` (UTF-8, undecodable bytes replaced), numbers and booleans as Python scalars, arrays as
    lists (of ``bytes`` for arrays of strings, which tokenizers need as written).

    Raises ``GGUFFormatError`` for a file that is not GGUF, an unsupported version, or metadata
    that is truncated or corrupt, naming the key it was reading."""
    with open(path, "rb") as f:
        head = f.read(24)
        if head[:4] != b"GGUF":
            raise GGUFFormatError(f"not a GGUF file (starts with {head[:4]!r}, expected b'GGUF')")
        if len(head) < 24:
            raise GGUFFormatError("shorter than a GGUF header (24 bytes): the GGUF file is truncated or corrupt")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _Reader(buf, prefix).metadata()


class _Reader:
    def __init__(self, buf: mmap.mmap, prefix: str):
        self.buf, self.prefix, self.size = buf, prefix.encode("utf-8"), len(buf)
        version = struct.unpack_from("<I", buf, 4)[0]
        # a big-endian file's version reads as a multiple of 2**16 in little-endian order
        self.order = "<" if version & 0xFFFF else ">"
        self.version = struct.unpack_from(self.order + "I", buf, 4)[0]
        if self.version not in (2, 3):
            raise GGUFFormatError(f"GGUF version {self.version} is not supported (2, 3 are)")
        self.u32 = struct.Struct(self.order + "I").unpack_from
        self.u64 = struct.Struct(self.order + "Q").unpack_from
        self.where = "the header"

    def metadata(self) -> dict[str, Any]:
        count = self._u64(16)
        off, out = 24, {}
        # each key-value takes at least 8 (key length) + 4 (type) + 1 bytes
        self._fits(off, count, 13)
        for _ in range(count):
            key, off = self._string(off)
            self.where = f"key {key[:200]!r}"
            vtype = self._u32(off)
            off += 4
            if key.startswith(self.prefix):
                value, off = self._value(vtype, off)
                out[key.decode("utf-8", "replace")] = value
            else:
                off = self._skip(vtype, off)
        return out

    def _fail(self, what: str):
        raise GGUFFormatError(f"{what} at byte {self.size} reading {self.where}: the GGUF file is truncated or corrupt")

    def _fits(self, off: int, count: int, size: int) -> None:
        if count < 0 or off + count * size > self.size:
            self._fail(f"{count} items of at least {size} bytes from byte {off} run past the end")

    def _u32(self, off: int) -> int:
        self._fits(off, 1, 4)
        return self.u32(self.buf, off)[0]

    def _u64(self, off: int) -> int:
        self._fits(off, 1, 8)
        return self.u64(self.buf, off)[0]

    def _string(self, off: int) -> tuple[bytes, int]:
        n = self._u64(off)
        self._fits(off + 8, n, 1)
        return self.buf[off + 8:off + 8 + n], off + 8 + n

    def _value(self, vtype: int, off: int, depth: int = 0) -> tuple[Any, int]:
        if vtype in _FIXED:
            fmt, size = _FIXED[vtype]
            self._fits(off, 1, size)
            return struct.unpack_from(self.order + fmt, self.buf, off)[0], off + size
        if vtype == _STRING:
            s, off = self._string(off)
            return s.decode("utf-8", "replace"), off
        if vtype != _ARRAY:
            self._fail(f"unknown value type {vtype}")
        etype, n = self._u32(off), self._u64(off + 4)
        off += 12
        if etype in _FIXED:
            fmt, size = _FIXED[etype]
            self._fits(off, n, size)
            if fmt == "?":
                return [b != 0 for b in self.buf[off:off + n]], off + n
            items = array(fmt, self.buf[off:off + n * size])
            if (self.order == ">") != (sys.byteorder == "big"):
                items.byteswap()
            return items.tolist(), off + n * size
        if etype == _STRING:
            self._fits(off, n, 8)
            buf, u64, end = self.buf, self.u64, self.size
            strings: list[bytes] = []
            for _ in range(n):
                length = u64(buf, off)[0] if off + 8 <= end else -1
                if length < 0 or off + 8 + length > end:
                    self._fail(f"string {len(strings)} of {n} runs past the end")
                strings.append(buf[off + 8:off + 8 + length])
                off += 8 + length
            return strings, off
        if etype == _ARRAY:
            self._nest(depth)
            self._fits(off, n, 12)
            arrays = []
            for _ in range(n):
                item, off = self._value(_ARRAY, off, depth + 1)
                arrays.append(item)
            return arrays, off
        self._fail(f"unknown array element type {etype}")
        raise AssertionError  # unreachable: _fail raises

    def _nest(self, depth: int) -> None:
        if depth >= _MAX_NESTING:
            self._fail(f"arrays nested more than {_MAX_NESTING} deep")

    def _skip(self, vtype: int, off: int, depth: int = 0) -> int:
        if vtype in _FIXED:
            return off + _FIXED[vtype][1]
        if vtype == _STRING:
            return off + 8 + self._u64(off)
        if vtype != _ARRAY:
            self._fail(f"unknown value type {vtype}")
        etype, n = self._u32(off), self._u64(off + 4)
        off += 12
        if etype in _FIXED:
            self._fits(off, n, _FIXED[etype][1])
            return off + n * _FIXED[etype][1]
        if etype == _ARRAY:
            self._nest(depth)
        self._fits(off, n, 8)
        for _ in range(n):  # strings and nested arrays have their sizes inside
            off = self._skip(etype, off, depth + 1)
            if off > self.size:
                self._fail("an array item runs past the end")
        return off
