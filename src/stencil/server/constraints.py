"""A request's constraint (``response_format``, ``tools``/``tool_choice``, vLLM's
``structured_outputs``) -> a compile call for ``GrammarCompiler.compile_async``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from stencil._core import GrammarError, LimitError
from stencil.grammar.tagged.custom_tools import check_definition, custom_tool
from stencil.grammar.tagged.tool_presets import tool_call_format
from stencil.server.protocol import RequestError
from stencil.server.toolcalls import END, TRIGGER, tool_name

#: JSON without layout whitespace, as OpenAI answers: a small model given "flexible" spends its
#: token budget on newlines; numbers in plain spelling (no exponent, integers without a fraction),
#: always valid, and a small model cannot run on in `2000.000...` under `maximum: 5`
JSON = {"whitespace": "compact", "number_spelling": "plain"}


@dataclass
class Constraint:
    """What to compile (``fn(*args, **kwargs)``; fn None: free text) and how to read the output."""

    fn: Callable | None = None
    args: tuple = ()
    kwargs: dict | None = None
    tools: list | None = None  # the tools whose calls the output holds, written in tool_format
    tool_format: str = "generic"
    # the output starts with a <think> block (True), or inside one the prompt opened ("opened")
    reasoning: bool | str = False


def request_tools(body: dict) -> list[dict] | None:
    """The tools (functions and custom tools) of a request body its model checked (their shapes:
    ``server.shapes``), when the output may call them (None: no tools, or ``tool_choice`` "none");
    a RequestError naming the field of a custom tool's malformed grammar or of a ``tool_choice``,
    and for a ``tool_choice`` that requires a call with no tools."""
    choice = body.get("tool_choice")
    if not (choice in (None, "none", "auto", "required") or isinstance(choice, dict)):
        raise RequestError("tool_choice must be none, auto, required, a function or allowed_tools", param="tool_choice")
    tools = body.get("tools")
    if tools is None or tools == []:
        if choice == "required" or isinstance(choice, dict):
            raise RequestError(f"tool_choice {choice!r} requires a tool call, but the request has no tools",
                               param="tool_choice")
        return None
    for i, t in enumerate(tools):
        _check_tool(t, f"tools[{i}]")
    return None if choice == "none" else tools


def callable_tools(body: dict, tools: list[dict]) -> tuple[list[dict], bool]:
    """(the tools the output may call, whether it must call one) under ``tool_choice``: "auto",
    "required", a named function or custom tool (that one, required), or OpenAI's
    ``allowed_tools`` (a subset, ``mode`` auto or required; the prompt still lists every tool)."""
    choice = body.get("tool_choice") or "auto"
    if not isinstance(choice, dict):
        return tools, choice == "required"
    by_name = {tool_name(t): t for t in tools}
    if choice.get("type") == "allowed_tools":
        allowed = choice.get("allowed_tools")
        if not (isinstance(allowed, dict) and allowed.get("mode") in ("auto", "required")
                and isinstance(allowed.get("tools"), list) and allowed["tools"]):
            raise RequestError("tool_choice.allowed_tools must be {'mode': 'auto' or 'required', 'tools': "
                               "[{'type': 'function', 'function': {'name': ...}}, ...]}", param="tool_choice.allowed_tools")
        names = []
        for i, t in enumerate(allowed["tools"]):
            # chat nests the name ({"type": "custom", "custom": {"name"}}), the Responses API does not
            spec = t.get(t.get("type", "function"), t) if isinstance(t, dict) else None
            name = spec.get("name") if isinstance(spec, dict) else None
            if name not in by_name:
                raise RequestError(f"tool_choice.allowed_tools.tools[{i}] names no tool of the request: {name!r}",
                                   param=f"tool_choice.allowed_tools.tools[{i}]")
            names.append(name)
        return [by_name[n] for n in dict.fromkeys(names)], allowed["mode"] == "required"
    kind = choice.get("type") or "function"
    fn = choice.get(kind) if kind in ("function", "custom") else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise RequestError("tool_choice must be {'type': 'function', 'function': {'name': ...}}, {'type': 'custom', "
                           "'custom': {'name': ...}} or {'type': 'allowed_tools', ...}", param=f"tool_choice.{kind}")
    named = by_name.get(fn["name"])
    if named is None or named["type"] != kind:
        raise RequestError(f"tool_choice names an unknown {kind} tool {fn['name']!r}", param="tool_choice")
    return [named], True


#: ``stencil serve --tool-strict``: which tools' arguments the grammar holds to their schema
#: (the others: any JSON object); "all" also holds tools the request marks ``strict: false``. A
#: custom tool's grammar is the request's own word (it has no ``strict`` flag): held unless "off",
#: which leaves its input free text
TOOL_STRICT = ("all", "requested", "off")


def strictly(tools: list[dict], policy: str) -> list[dict]:
    """The tools as compiled under ``policy`` (:data:`TOOL_STRICT`)."""
    def held(t):
        if t["type"] == "custom":
            return policy != "off"
        return policy == "all" or (policy == "requested" and t["function"].get("strict") is True)

    def loose(t):
        if t["type"] == "custom":
            return {"type": "custom", "custom": {**t["custom"], "format": {"type": "text"}}}
        return {"type": "function", "function": {**t["function"], "parameters": {"type": "object"}}}
    return [t if held(t) else loose(t) for t in tools]


def _check_custom(t: dict, where: str) -> None:
    """A custom tool's grammar parsed: a 400 naming the tool and the place in its definition (line
    and column, or the regex position) where it is malformed."""
    try:
        tool = custom_tool(t)
    except (GrammarError, LimitError) as e:
        raise RequestError(f"{where}: {e}", param=f"{where}.custom.format") from None
    assert tool is not None   # (a custom tool's type)
    try:
        check_definition(tool)
    except (GrammarError, LimitError) as e:   # (a limit too: the definition is the request's)
        raise RequestError(f"{where}: custom tool {tool.name!r}: invalid {tool.syntax} definition: {e}",
                           param=f"{where}.custom.format") from None


def _check_tool(t: dict, where: str) -> None:
    if t["type"] == "custom":
        return _check_custom(t, where)
    fn = t["function"]
    if fn.get("parameters") is None or fn["parameters"] == {}:  # no parameters: an empty object
        fn["parameters"] = {"type": "object"}


#: the body fields that each set the output's constraint: a request may use one of them
_SOURCES = ("response_format", "structured_outputs", "guided", "grammar", "json_schema", "tools")


def _sources(body: dict) -> list[str]:
    rf = body.get("response_format")
    used = [k for k in _SOURCES if body.get(k) is not None and not (k == "tools" and not body[k])]
    if isinstance(rf, dict) and rf.get("type") == "text":
        used.remove("response_format")
    if "tools" in used and body.get("tool_choice") == "none":
        used.remove("tools")
    return used


#: what opens a reasoning block in the prompt's end, and closes it in the output
THINK, THINK_END = "<think>", "</think>"


def prompt_opens_reasoning(tokenizer_info, prompt_ids: list[int] | None) -> bool:
    """Whether a rendered prompt ends inside an open ``<think>`` block: the chat template's
    generation prompt starts the model's reasoning (DeepSeek-R1/V3's ``<｜Assistant｜><think>\n``),
    so the output starts inside it (white space may follow the opening)."""
    if not prompt_ids:
        return False
    tail = tokenizer_info.decode_bytes(prompt_ids[-16:]).decode("utf-8", "replace")
    return tail.rstrip().endswith(THINK)


def constraint_for(compiler, body: dict, tool_format: str = "generic", tool_strict: str = "all",
                   prompt_ids: list[int] | None = None) -> Constraint:
    """The Constraint of a chat/completions request body; RequestError on a malformed one.
    ``tool_format``: how tool calls are written ("generic" or a preset of ``toolcalls.FORMATS``);
    ``tool_strict``: which tools' arguments follow their schema (:data:`TOOL_STRICT`);
    ``prompt_ids``: the rendered prompt, whose end may open the reasoning the output continues
    (:func:`prompt_opens_reasoning`: tool calls then come after its ``</think>``)."""
    reasoning = bool(body.get("reasoning"))
    used = _sources(body)
    answer = None
    if tool_format == "harmony" and "response_format" in used:
        # (gpt-oss answers in its final message, under the format, beside its calls)
        answer = _response_schema(body["response_format"])
        used.remove("response_format")
    if len(used) > 1:
        if used[:2] == ["response_format", "tools"]:
            raise RequestError(f"response_format and tools both constrain the output: with tool format {tool_format!r} "
                               "give one of them (harmony's final message takes a response_format beside tools)",
                               param="tools")
        raise RequestError(f"{used[0]} and {used[1]} both constrain the output: give one of them", param=used[1])
    so = body.get("structured_outputs") or body.get("guided") or None
    rf = body.get("response_format")
    tool_choice = body.get("tool_choice", "auto")
    if so is not None:
        return _structured(compiler, so, reasoning)
    if body.get("grammar") is not None or body.get("json_schema") is not None:  # llama-server's fields
        return _structured(compiler, {"grammar": body["grammar"]} if body.get("grammar") is not None
                           else {"json": body["json_schema"]}, reasoning, prefix="")
    tools = request_tools(body)
    if tools is not None:
        tools, required = callable_tools(body, tools)
        tools = strictly(tools, tool_strict)
        named = isinstance(tool_choice, dict) and tool_choice.get("type") != "allowed_tools"
        parallel = body.get("parallel_tool_calls", True) is not False and not named   # (a named function: one call)
        kw: dict[str, Any] = dict(trigger=TRIGGER, end=END, require_call=required, text_before=not required,
                                  max_calls=None if parallel else 1, json_options=dict(JSON))
        think: bool | str = reasoning
        if tool_format != "harmony" and prompt_opens_reasoning(compiler.tokenizer_info, prompt_ids):
            think = "opened"   # (the prompt opened it: the output thinks first, asked or not)
        if think:
            kw["reasoning"] = (None if think == "opened" else THINK, THINK_END)
        if tool_format != "generic":  # the family's own call text
            kw = dict(format=tool_format, tool_choice="required" if required else "auto", parallel=parallel,
                      json_options=dict(JSON), reasoning=think)
            if answer is not None:
                kw["answer"] = answer
        return Constraint(compiler.compile_tool_calls, (tools,), kw, tools=tools, tool_format=tool_format,
                          reasoning=think if tool_format != "harmony" else False)
    if answer is not None:   # harmony: the answer is the final message (after the analysis, if asked)
        spec = tool_call_format("harmony", [], reasoning=reasoning, answer=answer)
        return Constraint(compiler.compile_structural_tag, (spec,), dict(JSON), tools=[], tool_format="harmony")
    if rf is None or (isinstance(rf, dict) and rf.get("type") == "text"):
        return _thought_then_text(compiler, tool_format) if reasoning else Constraint()
    schema = _response_schema(rf)
    if reasoning:
        return Constraint(compiler.compile_reasoning_json, (schema,), dict(JSON), reasoning=True)
    return Constraint(compiler.compile_json_schema, (schema,), dict(JSON))


def _response_schema(rf: dict) -> Any:
    """The JSON Schema a ``response_format`` (json_object or json_schema; its shape checked by the
    request's model) asks for: json_object, any object. strict true follows OpenAI's subset, which
    stencil's full JSON Schema contains; strict false takes any schema stencil supports. Both
    compile the same way."""
    return {"type": "object"} if rf["type"] == "json_object" else rf["json_schema"]["schema"]


#: free text after a <think> block (a reasoning request without tools or a schema)
THINK_THEN_TEXT = {"type": "structural_tag", "format": {"type": "sequence", "elements": [
    {"type": "tag", "begin": THINK, "content": {"type": "any_text"}, "end": THINK_END}, {"type": "any_text"}]}}


def _thought_then_text(compiler, tool_format: str) -> Constraint:
    """Reasoning, then free text: Harmony's analysis message then its final one (read as a tool
    format without tools), or a ``<think>`` block then text."""
    if tool_format == "harmony":
        spec = tool_call_format("harmony", [], reasoning=True)
        return Constraint(compiler.compile_structural_tag, (spec,), {}, tools=[], tool_format="harmony")
    return Constraint(compiler.compile_structural_tag, (THINK_THEN_TEXT,), {}, reasoning=True)


def _structured(compiler, so: Any, reasoning: bool, prefix: str = "structured_outputs.") -> Constraint:
    """vLLM's ``structured_outputs`` (``prefix`` names the fields in errors; "" for llama-server's)."""
    if not isinstance(so, dict):
        raise RequestError("structured_outputs must be an object", param="structured_outputs")
    if so.get("json_object"):
        so = {"json": {"type": "object"}}
    if "json" in so:
        if reasoning:
            return Constraint(compiler.compile_reasoning_json, (so["json"],), dict(JSON), reasoning=True)
        return Constraint(compiler.compile_json_schema, (so["json"],), dict(JSON))
    if reasoning:
        raise RequestError("reasoning is only supported with json schemas and tools", param="reasoning")
    if "regex" in so:
        return Constraint(compiler.compile_regex, (so["regex"],), {})
    if "choice" in so:
        choices = so["choice"]
        if not (isinstance(choices, list) and choices and all(isinstance(c, str) for c in choices)):
            raise RequestError("structured_outputs.choice must be a non-empty list of strings",
                               param="structured_outputs.choice")
        return Constraint(compiler.compile_choice, (choices,), {})
    if "grammar" in so:
        text = so["grammar"]
        if not isinstance(text, str):
            raise RequestError(f"{prefix}grammar must be a string", param=f"{prefix}grammar")
        fn = compiler.compile_gbnf if "::=" in text else compiler.compile_lark
        return Constraint(fn, (text,), {})
    if "structural_tag" in so:
        spec = so["structural_tag"]  # vLLM sends it as JSON text; the compiler takes text or a dict
        if not isinstance(spec, (str, dict)):
            raise RequestError("structured_outputs.structural_tag must be an object or its JSON text",
                               param="structured_outputs.structural_tag")
        return Constraint(compiler.compile_structural_tag, (spec,), dict(JSON))
    raise RequestError("structured_outputs needs one of json, json_object, regex, choice, grammar, structural_tag",
                       param="structured_outputs")
