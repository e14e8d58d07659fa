"""``python -m benchmarks.mask_contexts``: mask time by JSON context, per tokenizer side by side."""
from __future__ import annotations

import re

from benchmarks import mask_contexts


def contexts_of(text: str) -> list[str]:
    """The context before each character of text."""
    ctx = mask_contexts.JsonContext()
    out = []
    for ch in text:
        out.append(ctx.name())
        ctx.feed(ch)
    return out


def test_json_context_names_keys_strings_and_what_came_last():
    text = '{"a\\"b": ["x,y", 12, true], "c": {"d": null}}'
    names = contexts_of(text)
    at = {i: names[i] for i in range(len(text))}
    assert at[0] == "start"
    assert at[text.index('a')] == "in key" and at[text.index('b"')] == "in key"  # an escaped quote stays inside
    assert at[text.index(':')] == 'after key"'
    assert at[text.index('[')] == "after :"
    assert at[text.index('x,y') + 1] == "in string"  # a comma inside a string value
    assert at[text.index('12')] == "after ,"
    assert at[text.index(', true')] == "after number"
    assert at[text.index(']')] == "after literal"
    assert at[text.index('"c"') + 1] == "in key" and at[text.index('"d"') + 1] == "in key"
    assert at[text.index('null') + 4] == "after literal"
    assert at[len(text) - 1] == "after }"


def test_mask_contexts_command_prints_each_tokenizer_side_by_side(capsys):
    assert mask_contexts.main(["--limit", "6", "--tokenizers", "smollm2,gemma3", "--split", "all"]) == 0
    out = capsys.readouterr().out
    assert "6 schemas (all), smollm2, gemma3" in out
    rows = {line.split("|")[0].strip(): line for line in out.splitlines() if "|" in line}
    assert any(k.startswith("in key") for k in rows) and any(k.startswith("in string") for k in rows)
    # the total row: masks per tokenizer, and the ratio of the means
    total = [line for line in out.splitlines() if line.startswith("all ")][0]
    cells = [c.split() for c in total.split("|")[1:3]]
    assert all(int(c[0].replace(",", "")) > 50 and float(c[1]) > 0 for c in cells), total
    assert re.search(r"\d+\.\d\dx$", total)
