"""Tool-call texts as each model family's chat template writes them, for the tool-call tests
(writing: test_tool_call_presets; reading: test_tool_reading).

Mistral's calls are rendered and tokenized by mistral-common itself (the real thing, offline). No
other family's chat template ships in an installed package, so the assistant-turn part of each
official template (Llama 3.1, Qwen2.5/Qwen3, Qwen3-Coder, DeepSeek R1 and V3.1, Kimi K2, gpt-oss)
is written out below from the model's published ``chat_template`` and rendered with transformers'
own chat-template renderer.
"""
from __future__ import annotations

import json

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "minLength": 1},
                                            "unit": {"enum": ["celsius", "fahrenheit"]},
                                            "days": {"type": "integer", "minimum": 1},
                                            "hourly": {"type": "boolean"}},
           "required": ["city"], "additionalProperties": False}
ADD = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
       "required": ["a", "b"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", "parameters": WEATHER}},
         {"type": "function", "function": {"name": "add", "description": "a + b", "parameters": ADD}}]

CALL_1 = [("get_weather", {"city": "San Francisco", "unit": "celsius", "days": 3, "hourly": True})]
CALL_2 = [("get_weather", {"city": "Zürich"}), ("add", {"a": 1.5, "b": -2})]
BAD_NAME = [("get_wether", {"city": "Paris"})]
BAD_ARGS = [("get_weather", {"city": "Paris", "unit": "kelvin"})]
BAD_TYPE = [("add", {"a": "one", "b": 2})]

# --- the assistant-turn parts of the official chat templates ---------------------------------------
# Llama 3.1 / 3.2 (meta-llama/Llama-3.1-8B-Instruct chat_template, custom tool call; one call per turn)
LLAMA3 = """{%- set tool_call = messages[-1].tool_calls[0].function -%}
{{- '{"name": "' + tool_call.name + '", ' }}{{- '"parameters": ' }}{{- tool_call.arguments | tojson }}{{- "}" }}"""
# Qwen2.5 / Qwen3 (Qwen/Qwen3-8B chat_template), after the generation prompt "<|im_start|>assistant\n"
QWEN = """{%- set message = messages[-1] -%}
{%- if message.reasoning_content -%}{{- '<think>\\n' + message.reasoning_content.strip('\\n') + '\\n</think>\\n\\n' }}{%- endif -%}
{%- if message.content %}{{- message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
    {%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
    {%- if (loop.first and message.content) or (not loop.first) %}{{- '\\n' }}{%- endif %}
    {{- '<tool_call>\\n{"name": "' }}{{- tool_call.name }}{{- '", "arguments": ' }}
    {%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}
    {{- '}\\n</tool_call>' }}
{%- endfor %}"""
# Qwen3-Coder (Qwen/Qwen3-Coder-30B-A3B-Instruct chat_template)
QWEN_CODER = """{%- set message = messages[-1] -%}
{%- if message.content %}{{- message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
    {%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
    {{- '\\n<tool_call>\\n<function=' + tool_call.name + '>\\n' }}
    {%- if tool_call.arguments is defined %}
        {%- for args_name, args_value in tool_call.arguments|items %}
            {{- '<parameter=' + args_name + '>\\n' }}
            {%- set args_value = args_value | tojson | safe if args_value is mapping or (args_value is sequence and args_value is not string) else args_value | string %}
            {{- args_value }}
            {{- '\\n</parameter>\\n' }}
        {%- endfor %}
    {%- endif %}
    {{- '</function>\\n</tool_call>' }}
{%- endfor %}"""
# DeepSeek-R1 / V3-0324 (deepseek-ai/DeepSeek-R1-0528 tokenizer_config.json chat_template; arguments are JSON text)
DEEPSEEK = """{%- set ns = namespace(is_first=true) -%}
{%- for tool in messages[-1].tool_calls -%}
{%- if ns.is_first -%}{{- '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments'] + '\\n' + '```' + '<｜tool▁call▁end｜>' -}}{%- set ns.is_first = false -%}
{%- else -%}{{- '\\n' + '<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments'] + '\\n' + '```' + '<｜tool▁call▁end｜>' -}}
{%- endif -%}
{%- endfor -%}{{- '<｜tool▁calls▁end｜>' -}}"""
# DeepSeek-V3.1 (deepseek-ai/DeepSeek-V3.1 tokenizer_config.json chat_template)
DEEPSEEK_V31 = """{%- set ns = namespace(is_first=true) -%}
{%- for tool in messages[-1].tool_calls -%}
{%- if ns.is_first -%}{{- '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['function']['name'] + '<｜tool▁sep｜>' + tool['function']['arguments'] + '<｜tool▁call▁end｜>' -}}{%- set ns.is_first = false -%}
{%- else -%}{{- '<｜tool▁call▁begin｜>' + tool['function']['name'] + '<｜tool▁sep｜>' + tool['function']['arguments'] + '<｜tool▁call▁end｜>' -}}
{%- endif -%}
{%- endfor -%}{{- '<｜tool▁calls▁end｜>' -}}"""
# Kimi K2 (moonshotai/Kimi-K2-Instruct chat_template.jinja; ids are functions.NAME:INDEX)
KIMI = """{%- set message = messages[-1] -%}
{{- message.content or '' }}<|tool_calls_section_begin|>
{%- for tool_call in message['tool_calls'] -%}
{%- set formatted_id = tool_call['id'] -%}
<|tool_call_begin|>{{ formatted_id }}<|tool_call_argument_begin|>{% if tool_call['function']['arguments'] is string %}{{ tool_call['function']['arguments'] }}{% else %}{{ tool_call['function']['arguments'] | tojson }}{% endif %}<|tool_call_end|>
{%- endfor -%}
<|tool_calls_section_end|>"""
# gpt-oss (openai/gpt-oss-20b chat_template.jinja), after the generation prompt "<|start|>assistant"
HARMONY = """{%- set message = messages[-1] -%}
{%- if message.thinking %}{{- "<|start|>assistant<|channel|>analysis<|message|>" + message.thinking + "<|end|>" }}{%- endif %}
{%- for tool_call in message.tool_calls -%}
{%- set tool_call = tool_call.function -%}
{{- "<|start|>assistant to=" }}{{- "functions." + tool_call.name + "<|channel|>commentary " }}
{{- (tool_call.content_type if tool_call.content_type is defined else "json") + "<|message|>" }}
{{- tool_call.arguments|tojson }}{{- "<|call|>" }}
{%- endfor -%}"""

# format: (template, zoo tokenizer, arguments as JSON text, several calls per turn, reasoning)
FAMILIES = {
    "llama3": (LLAMA3, "cl100k", False, False, "<think>\nWeather first.\n</think>\n\n"),
    "qwen": (QWEN, "qwen3_6", False, True, None),          # the template writes reasoning_content
    "qwen-coder": (QWEN_CODER, "qwen3_6", False, True, "<think>\nLet me call it.\n</think>\n\n"),
    "deepseek": (DEEPSEEK, "deepseek", True, True, "<think>\nThe user wants weather.\n</think>\n\n"),
    "deepseek-v3.1": (DEEPSEEK_V31, "deepseek", True, True, "<think>\nok\n</think>"),
    "kimi": (KIMI, "deepseek", False, True, "<think>I should call get_weather.</think>"),
    "harmony": (HARMONY, "cl100k", False, True, None),      # the template writes the analysis message
}


def render(fmt: str, calls, reasoning: bool) -> str:
    from transformers.utils.chat_template_utils import render_jinja_template
    template, _, as_text, _, prefix = FAMILIES[fmt]
    message = {"role": "assistant", "content": "", "tool_calls": [
        {"id": f"functions.{n}:{i}", "type": "function",
         "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False) if as_text else a}}
        for i, (n, a) in enumerate(calls)]}
    if reasoning and fmt == "qwen":
        message["reasoning_content"] = "\nThe user asks for the weather; get_weather fits.\n"
    if reasoning and fmt == "harmony":
        message["thinking"] = "User wants weather. Call get_weather."
    text = render_jinja_template([[{"role": "user", "content": "hi"}, message]], tools=TOOLS, chat_template=template)[0]
    if isinstance(text, list):
        text = text[0]
    if reasoning and prefix is not None:
        text = prefix + text
    if fmt == "harmony":
        # the output follows the generation prompt "<|start|>assistant"
        assert text.startswith("<|start|>assistant")
        text = text[len("<|start|>assistant"):]
    return text


def mistral_ids(tok, calls):
    """The token ids of the assistant's tool-call turn, as mistral-common encodes a conversation."""
    from mistral_common.protocol.instruct.messages import AssistantMessage, ToolMessage, UserMessage
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.protocol.instruct.tool_calls import Function, FunctionCall, Tool, ToolCall
    ids = [f"call{i:05d}" for i in range(len(calls))]
    req = ChatCompletionRequest(
        tools=[Tool(function=Function(name=t["function"]["name"], description=t["function"]["description"],
                                      parameters=t["function"]["parameters"])) for t in TOOLS],
        messages=[UserMessage(content="weather?"),
                  AssistantMessage(content=None, tool_calls=[ToolCall(id=i, function=FunctionCall(name=n, arguments=json.dumps(a)))
                                                             for i, (n, a) in zip(ids, calls)]),
                  *[ToolMessage(content="ok", tool_call_id=i) for i in ids]])
    tokens = tok.encode_chat_completion(req).tokens
    inner = tok.instruct_tokenizer.tokenizer
    start = tokens.index(inner.get_special_token("[TOOL_CALLS]"))
    return tokens[start:tokens.index(inner.eos_id, start)]
