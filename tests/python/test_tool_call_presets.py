"""Tool-call presets (``compile_tool_calls(tools, format=...)``) against the text each model
family's chat template writes for tool calls, with real tokenizers of the zoo.

Mistral's calls are rendered and tokenized by mistral-common itself (the real thing, offline). No
other family's chat template ships in an installed package, so the assistant-turn part of each
official template (Llama 3.1, Qwen2.5/Qwen3, Qwen3-Coder, DeepSeek R1 and V3.1, Kimi K2, gpt-oss)
is written out in tool_templates.py from the model's published ``chat_template`` and rendered with transformers'
own chat-template renderer. Accepted: the rendered text, fed token by token (the mask agreeing
with every step), ends accepting. Rejected: a wrong tool name, arguments that break the schema,
a missing end marker.
"""
from __future__ import annotations

import json
import re

import pytest

import stencil
from grammar_oracle import encode_segments, feed
from tokenizers_zoo import get
from tool_templates import (BAD_ARGS, BAD_NAME, BAD_TYPE, CALL_1, CALL_2, FAMILIES, TOOLS, mistral_ids,
                            render)


@pytest.fixture(scope="module")
def compiled():
    cache = {}

    def get_compiled(fmt, **options):
        key = (fmt, tuple(sorted(options.items())))
        if key not in cache:
            entry = get(FAMILIES[fmt][1])
            compiler = stencil.GrammarCompiler(entry.info)
            cache[key] = (entry, compiler.compile_tool_calls(TOOLS, format=fmt, **options))
        return cache[key]
    return get_compiled


def segments(entry, text: str) -> list:
    """Text with the tokenizer's special tokens split out as ids (what the model emits)."""
    specials = {n: i for i, n in entry.info.special_token_names.items() if n}
    if not specials:
        return [text]
    out, pos = [], 0
    for m in re.finditer("|".join(re.escape(s) for s in sorted(specials, key=len, reverse=True)), text):
        out += [text[pos:m.start()], specials[m.group()]]
        pos = m.end()
    return out + [text[pos:]]


def accepts(entry, g, text: str) -> bool:
    ids = encode_segments(entry, segments(entry, text))
    bitmask = stencil.allocate_token_bitmask(1, entry.info.vocab_size)
    n, ok = feed(stencil.Matcher(g), ids, bitmask, entry.info.eos_token_ids[0])
    return n == len(ids) and ok


CASES = [(fmt, reasoning) for fmt in FAMILIES for reasoning in (False, True)]


@pytest.mark.parametrize("fmt,reasoning", CASES)
def test_rendered_calls_are_accepted(compiled, fmt, reasoning):
    entry, g = compiled(fmt, reasoning=reasoning)
    several = FAMILIES[fmt][3]
    for calls in [CALL_1] + ([CALL_2] if several else []):
        text = render(fmt, calls, reasoning)
        assert accepts(entry, g, text), text


@pytest.mark.parametrize("fmt", list(FAMILIES))
def test_malformed_calls_are_rejected(compiled, fmt):
    entry, g = compiled(fmt)
    for calls in (BAD_NAME, BAD_ARGS, BAD_TYPE):
        text = render(fmt, calls, False)
        assert not accepts(entry, g, text), text
    good = render(fmt, CALL_1, False)
    end = {"llama3": "}", "qwen": "</tool_call>", "qwen-coder": "</tool_call>", "deepseek": "<｜tool▁calls▁end｜>",
           "deepseek-v3.1": "<｜tool▁calls▁end｜>", "kimi": "<|tool_calls_section_end|>", "harmony": "<|call|>"}[fmt]
    assert good.endswith(end)
    assert not accepts(entry, g, good[:-len(end)]), "missing end marker accepted"


@pytest.mark.parametrize("fmt", list(FAMILIES))
def test_tool_choice_and_parallel(compiled, fmt):
    entry, g_req = compiled(fmt, tool_choice="required")
    _, g_one = compiled(fmt, tool_choice="add")
    text = render(fmt, CALL_1, False)
    assert accepts(entry, g_req, text)
    assert not accepts(entry, g_one, text)                         # only "add" may be called
    assert accepts(entry, g_one, render(fmt, [("add", {"a": 1, "b": 2})], False))
    # a call must come first: a reasoning block, not enabled, may not precede it
    assert not accepts(entry, g_req, render(fmt, CALL_1, True))
    if FAMILIES[fmt][3]:
        _, g_single = compiled(fmt, parallel=False)
        assert not accepts(entry, g_single, render(fmt, CALL_2, False))
        assert accepts(entry, g_single, render(fmt, CALL_1, False))
    if fmt != "harmony":
        # auto: plain text is an answer too, required: it is not
        _, g_auto = compiled(fmt)
        assert accepts(entry, g_auto, "The weather is fine.") and not accepts(entry, g_req, "The weather is fine.")


def test_llama3_writes_one_call_per_turn(compiled):
    """Llama 3.1's template refuses an assistant turn with two calls (the next request's prompt
    would fail): the family writes one, as parallel=False does."""
    from stencil.grammar.tagged.tool_presets import FAMILIES as PRESETS
    assert [f for f, p in PRESETS.items() if not p.parallel] == ["llama3"]
    entry, g = compiled("llama3")
    one, other = render("llama3", CALL_1, False), render("llama3", [("add", {"a": 1, "b": 2})], False)
    assert accepts(entry, g, one) and accepts(entry, g, other)
    for two in (one + other, one + " " + other, one + "<|python_tag|>" + other):
        assert not accepts(entry, g, two), two
    _, g_required = compiled("llama3", tool_choice="required")
    assert accepts(entry, g_required, one) and not accepts(entry, g_required, one + other)


def test_free_text_before_a_call_and_special_tokens(compiled):
    entry, g = compiled("qwen")
    assert accepts(entry, g, 'Let me check.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>')
    # with Qwen's tokenizer <tool_call> is a special token: its spelling in text does not start a call
    ids = encode_segments(entry, ["<tool_call>"])
    assert len(ids) > 1
    m = stencil.Matcher(g)
    assert m.accept_tokens(ids) == len(ids) and m.is_accepting()


# --- Mistral: rendered and tokenized by mistral-common -------------------------------------------------

@pytest.mark.parametrize("zoo_name,file", [("tekken", "tekken_240911.json"),
                                          ("mistral-sp-v3", "mistral_instruct_tokenizer_240323.model.v3")])
def test_mistral_calls_from_mistral_common(zoo_name, file):
    pytest.importorskip("PIL", reason="mistral-common needs pillow (make install)")
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
    from tokenizers_zoo import data_file
    tok = MistralTokenizer.from_file(data_file("mistral_common", "data", file))
    entry = get(zoo_name)
    compiler = stencil.GrammarCompiler(entry.info)
    g = compiler.compile_tool_calls(TOOLS, format="mistral")
    bitmask = stencil.allocate_token_bitmask(1, entry.info.vocab_size)
    eos = entry.info.eos_token_ids[0]
    for calls in (CALL_1, CALL_2):
        ids = mistral_ids(tok, calls)
        assert feed(stencil.Matcher(g), ids, bitmask, eos) == (len(ids), True), entry.info.decode_bytes(ids)
    for calls in (BAD_NAME, BAD_ARGS, BAD_TYPE):
        ids = mistral_ids(tok, calls)
        assert feed(stencil.Matcher(g), ids, bitmask, eos) != (len(ids), True)
    ids = mistral_ids(tok, CALL_1)
    assert feed(stencil.Matcher(g), ids[:-1], bitmask, eos) == (len(ids) - 1, False)     # no closing "]"
    one = compiler.compile_tool_calls(TOOLS, format="mistral", parallel=False)
    ids = mistral_ids(tok, CALL_2)
    assert feed(stencil.Matcher(one), ids, bitmask, eos) != (len(ids), True)


# --- the presets are structural tags; bad options are errors -----------------------------------------

def test_presets_are_structural_tags():
    from stencil.grammar.tagged.tool_presets import FORMATS, tool_call_format
    for fmt in FORMATS:
        spec = tool_call_format(fmt, TOOLS, reasoning=True)
        assert spec["type"] == "structural_tag" and json.loads(json.dumps(spec)) == spec


@pytest.mark.parametrize("options, message", [
    ({"format": "gemma"}, "unknown tool-call format 'gemma'"),
    ({"format": "qwen", "tool_choice": "nope"}, "tool_choice must be 'auto', 'required' or a tool name"),
    ({"format": "qwen", "reasoning": "maybe"}, "reasoning must be False, True or 'opened'"),
    ({"format": "harmony", "reasoning": "opened"}, "harmony: reasoning is the analysis channel"),
])
def test_bad_options(options, message):
    compiler = stencil.GrammarCompiler(get("deepseek").info)
    with pytest.raises(stencil.GrammarError, match=re.escape(message)):
        compiler.compile_tool_calls(TOOLS, **options)


def test_qwen_coder_string_keywords_on_raw_text(compiled):
    entry = get("deepseek")
    compiler = stencil.GrammarCompiler(entry.info)
    tools = [{"name": "f", "parameters": {"type": "object", "properties": {
        "s": {"type": "string", "format": "date"}, "t": {"type": "string", "format": "x-unknown"}}}}]
    g = compiler.compile_tool_calls(tools, format="qwen-coder")

    def call(value):
        return f"<tool_call>\n<function=f>\n<parameter=s>\n{value}\n</parameter>\n</function>\n</tool_call>"
    assert accepts(entry, g, call("2024-02-29"))
    assert not accepts(entry, g, call("2023-02-29")) and not accepts(entry, g, call("tomorrow"))
    assert accepts(entry, g, call("2024-02-29").replace("<parameter=s>", "<parameter=t>").replace("2024-02-29", "x"))
    for sub, word in (({"type": "string", "not": {"const": "x"}}, "not"), ({"type": "string", "format": "regex"}, "regex")):
        tools = [{"name": "f", "parameters": {"type": "object", "properties": {"s": sub}}}]
        with pytest.raises(stencil.GrammarError, match=rf"/properties/s.*{word}"):
            compiler.compile_tool_calls(tools, format="qwen-coder")


def test_format_options_are_checked():
    entry = get("deepseek")
    compiler = stencil.GrammarCompiler(entry.info)
    with pytest.raises(TypeError, match="trigger and end do not apply"):
        compiler.compile_tool_calls(TOOLS, format="qwen", trigger="<call>")
    with pytest.raises(TypeError):
        compiler.compile_tool_calls(TOOLS, format="qwen", max_calls=2)
    compact = compiler.compile_tool_calls(TOOLS, format="qwen", json_options={"whitespace": "compact"})
    call = '<tool_call>\n{"name": "add", "arguments": %s}\n</tool_call>'
    assert accepts(entry, compact, call % '{"a":1,"b":2}') and not accepts(entry, compact, call % '{"a": 1, "b": 2}')


def _tool(name, **props):
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": props, "required": list(props)}}}


S = {"type": "string"}
# Each family's documented example of a call (model cards, vendors' tool-calling guides), the tools
# it calls, and the tokenizer to feed it with.
DOCUMENTED = {
    "llama3": ("deepseek", [_tool("get_current_conditions", location=S, unit={"enum": ["Celsius", "Fahrenheit"]})],
               '{"name": "get_current_conditions", "parameters": {"location": "San Francisco, CA", "unit": "Fahrenheit"}}'),
    "qwen": ("qwen3_6", [_tool("get_current_temperature", location=S),
                         _tool("get_temperature_date", location=S, date={"type": "string", "format": "date"})],
             '<tool_call>\n{"name": "get_current_temperature", "arguments": {"location": "San Francisco, CA, USA"}}\n'
             '</tool_call>\n<tool_call>\n{"name": "get_temperature_date", "arguments": {"location": "San Francisco, CA, '
             'USA", "date": "2024-10-01"}}\n</tool_call>'),
    "qwen-coder": ("qwen3_6", [_tool("get_weather", city=S, days={"type": "integer"})],
                   "<tool_call>\n<function=get_weather>\n<parameter=city>\nTokyo\n</parameter>\n<parameter=days>\n2\n"
                   "</parameter>\n</function>\n</tool_call>"),
    "deepseek": ("deepseek", [_tool("get_weather", location=S)],
                 '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"location": '
                 '"Hangzhou"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'),
    "deepseek-v3.1": ("deepseek", [_tool("get_weather", location=S)],
                      '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"location": "Hangzhou"}'
                      '<｜tool▁call▁end｜><｜tool▁calls▁end｜>'),
    "kimi": ("deepseek", [_tool("get_weather", city=S)],
             '<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>'
             '{"city": "Beijing"}<|tool_call_end|><|tool_calls_section_end|>'),
    "mistral": ("tekken", [_tool("get_current_weather", location=S, format={"enum": ["celsius", "fahrenheit"]})],
                '[TOOL_CALLS][{"name": "get_current_weather", "arguments": {"location": "Paris, France", "format": '
                '"celsius"}}]'),
    "harmony": ("cl100k", [_tool("get_weather", location=S)],
                "<|channel|>analysis<|message|>Need to use function get_weather.<|end|><|start|>assistant<|channel|>"
                'commentary to=functions.get_weather <|constrain|>json<|message|>{"location":"San Francisco"}<|call|>'),
}


@pytest.mark.parametrize("fmt", list(DOCUMENTED))
def test_documented_examples(fmt):
    zoo_name, tools, text = DOCUMENTED[fmt]
    entry = get(zoo_name)
    compiler = stencil.GrammarCompiler(entry.info)
    g = compiler.compile_tool_calls(tools, format=fmt, reasoning=fmt == "harmony")
    assert accepts(entry, g, text)
    name = tools[0]["function"]["name"]
    head, _, tail = text.rpartition(name)          # the name in the call (not in the reasoning)
    assert not accepts(entry, g, head + name + "s" + tail)


def test_reasoning_opened_by_the_prompt(compiled):
    entry, g = compiled("qwen", reasoning="opened")
    call = render("qwen", CALL_1, False)
    assert accepts(entry, g, "The user wants the weather.\n</think>\n\n" + call)
    assert accepts(entry, g, "\n</think>\n\nIt is sunny.")
    assert not accepts(entry, g, "<think>\nagain\n</think>\n\n" + call)       # the block is already open
    assert not accepts(entry, g, call)                                          # and must be closed first


def test_harmony_answers_under_a_schema_beside_its_calls():
    """gpt-oss under a response format: the final message (headed as gpt-oss writes a structured
    answer, or plainly) holds JSON valid for the schema, whose strings never hold a message's end
    unescaped (the reader finds the end by searching); calls stay as they were; other families
    refuse an answer schema."""
    from stencil.grammar.tagged.tool_presets import call_syntax
    from stencil.grammar.tagged.tool_reading import read_calls
    entry = get("cl100k")
    compiler = stencil.GrammarCompiler(entry.info)
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
              "required": ["city", "days"], "additionalProperties": False}
    tools = [_tool("get_weather", location={"type": "string"})]
    g = compiler.compile_tool_calls(tools, format="harmony", reasoning=True, answer=schema)
    think = "<|channel|>analysis<|message|>Answer in JSON.<|end|><|start|>assistant"
    good = '{"city":"Paris","days":3}'
    for head in ("<|channel|>final <|constrain|>json<|message|>", "<|channel|>final<|message|>"):
        assert accepts(entry, g, f"{think}{head}{good}<|return|>")
        assert not accepts(entry, g, f'{think}{head}{{"city":"Paris"}}<|return|>')         # days required
        assert not accepts(entry, g, f"{think}{head}It is sunny.<|return|>")
    assert not accepts(entry, g, f'{think}<|channel|>final<|message|>{{"city":"a<|end|>","days":1}}<|return|>')
    escaped = '{"city":"a<\\u007cend|>","days":1}'   # the same text, escaped: read back whole
    assert accepts(entry, g, f"{think}<|channel|>final<|message|>{escaped}<|return|>")
    content, _, _ = read_calls(call_syntax("harmony"), tools, f"{think}<|channel|>final<|message|>{escaped}<|return|>")
    assert json.loads(content)["city"] == "a<|end|>"
    call = ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location":"Paris"}<|call|>')
    assert accepts(entry, g, think + call)
    content, reasoning, calls = read_calls(call_syntax("harmony"), tools,
                                           f"{think}<|channel|>final <|constrain|>json<|message|>{good}<|return|>")
    assert json.loads(content) == {"city": "Paris", "days": 3} and reasoning == "Answer in JSON." and not calls
    with pytest.raises(stencil.GrammarError, match="only for harmony"):
        compiler.compile_tool_calls(tools, format="qwen", answer=schema)
