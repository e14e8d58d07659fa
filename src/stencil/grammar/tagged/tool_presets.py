"""Tool-call formats of common model families, as structural tags (see
:mod:`stencil.grammar.tagged.structural_tag`): the exact text each family's chat template writes for a
tool call, with each tool's arguments constrained by its JSON Schema.

- ``llama3``: ``{"name": "NAME", "parameters": ARGS}``, also after ``<|python_tag|>``
  (Llama 3.1, 3.2); one call per turn, as if ``parallel=False`` (Llama 3.1's template refuses an
  assistant turn with two calls, so a second call would make the next request's prompt fail);
- ``qwen``: ``<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n</tool_call>`` (Qwen2.5, Qwen3);
- ``qwen-coder``: ``<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n...
  </function>\\n</tool_call>`` (Qwen3-Coder; see :mod:`stencil.grammar.tagged.xml_params`);
- ``deepseek``: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\n
  ARGS\\n```<｜tool▁call▁end｜>`` ... ``<｜tool▁calls▁end｜>`` (V3, R1; calls joined by a newline);
- ``deepseek-v3.1``: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS
  <｜tool▁call▁end｜>`` ... ``<｜tool▁calls▁end｜>``;
- ``kimi``: ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX
  <|tool_call_argument_begin|>ARGS<|tool_call_end|>`` ... ``<|tool_calls_section_end|>`` (K2);
- ``mistral``: ``[TOOL_CALLS][{"name": "NAME", "arguments": ARGS, "id": "ID"}, ...]`` (the id
  optional);
- ``harmony``: ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS<|call|>``
  (gpt-oss; also the template's ``to=`` first forms), messages joined by ``<|start|>assistant``.

ARGS is JSON valid for the tool's ``parameters`` schema (line breaks above are for reading only);
a custom tool's input takes the place of ARGS as the family's :class:`InputSlot` says
(``{"input": "..."}``; Qwen3-Coder: ``<parameter=input>`` raw text; see
:mod:`stencil.grammar.tagged.custom_tools`).
Free text may come before a call (``tool_choice="auto"``); several calls are allowed unless
``parallel=False`` (or the family takes one call per turn: ``Family.parallel``).
``reasoning=True`` puts the family's reasoning block first (``<think>...</think>``; harmony's
analysis channel); ``reasoning="opened"``: the prompt already opened it.

Example::

    spec = tool_call_format("qwen", tools, reasoning=True)   # a structural tag (a dict)
    g = compiler.compile_structural_tag(spec)                  # = compile_tool_calls(tools, format="qwen", ...)
"""
from __future__ import annotations

import json
import random
import string
from typing import Callable, NamedTuple, Optional, Union

from stencil._core import GrammarError
from stencil.grammar.tagged.custom_tools import CustomTool, InputSlot, input_format
from stencil.grammar.tagged.tool_reading import ALNUM_ID, DIGITS, NAME, QUOTED_NAME, WS, CallSyntax
from stencil.grammar.tagged.triggers import tool_specs

__all__ = ["tool_call_format", "FORMATS", "FAMILIES", "Family", "GENERIC", "call_syntax", "family_of_template"]

DS_CALLS_BEGIN, DS_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_CALL_BEGIN, DS_CALL_END, DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
KIMI_SECTION_BEGIN, KIMI_SECTION_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
HARMONY_END = ["<|end|>", "<|return|>"]
HARMONY_SEP = "<|start|>assistant"
#: a call's header in Harmony (NAME: the tool's), as gpt-oss writes it and as its template's
#: ``to=`` first forms do
HARMONY_HEADS = ("<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>",
                 "<|channel|>commentary to=functions.NAME<|constrain|>json<|message|>",
                 " to=functions.NAME<|channel|>commentary json<|message|>",
                 " to=functions.NAME<|channel|>commentary <|constrain|>json<|message|>")


#: a final message's header: free text, and a structured answer as gpt-oss writes it
HARMONY_FINAL_HEADS = ("<|channel|>final<|message|>", "<|channel|>final <|constrain|>json<|message|>")

#: Qwen3-Coder's raw-text parameter, where a custom tool's input goes (none of its text may be
#: ``</parameter>``, where the family's parser ends a value)
QWEN_CODER_INPUT = InputSlot("<parameter=input>\n", "\n</parameter>\n", raw=True, excludes=("</parameter>",))


def _json(schema) -> dict:
    return {"type": "json_schema", "json_schema": schema}


class _Input(NamedTuple):
    """A custom tool's arguments: the structural tag's format of its input in the family's slot."""
    content: dict


def _args(p) -> dict:
    """The arguments' format: a custom tool's input, or JSON valid for the schema ``p``."""
    return p.content if isinstance(p, _Input) else _json(p)


def _tag(begin, content, end) -> dict:
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def _const(value: str) -> dict:
    return {"type": "const_string", "value": value}


def _triggered(triggers, tags, choice, parallel) -> dict:
    return {"type": "triggered_tags", "triggers": triggers, "tags": tags,
            "at_least_one": choice != "auto", "stop_after_first": not parallel}


def _section(begin: str, end: str, calls: list, sep: str, choice, parallel) -> dict:
    """Calls inside one section ``begin ... end`` (DeepSeek, Kimi): the section starts the tool calls."""
    inner = {"type": "tags_with_separator", "tags": calls, "separator": sep, "at_least_one": True,
             "stop_after_first": not parallel}
    return _triggered([begin], [_tag(begin, inner, end)], choice, False)


def _llama3(tools, choice, parallel):
    tags = []
    for prefix in ("", "<|python_tag|>"):
        tags += [_tag(f'{prefix}{{"name": {json.dumps(n, ensure_ascii=False)}, "parameters": ', _args(p), "}")
                 for n, p in tools]
    return _triggered(['{"name": ', "<|python_tag|>"], tags, choice, parallel)


def _qwen(tools, choice, parallel):
    tags = [_tag(f'<tool_call>\n{{"name": {json.dumps(n, ensure_ascii=False)}, "arguments": ', _args(p),
                 "}\n</tool_call>") for n, p in tools]
    return _triggered(["<tool_call>"], tags, choice, parallel)


def _qwen_coder(tools, choice, parallel):
    tags = [_tag(f"<tool_call>\n<function={n}>\n", p.content if isinstance(p, _Input) else {**_json(p), "style": "qwen_xml"},
                 "</function>\n</tool_call>")
            for n, p in tools]
    return _triggered(["<tool_call>"], tags, choice, parallel)


def _deepseek(tools, choice, parallel):
    calls = [_tag(f"{DS_CALL_BEGIN}function{DS_SEP}{n}\n```json\n", _args(p), f"\n```{DS_CALL_END}") for n, p in tools]
    return _section(DS_CALLS_BEGIN, DS_CALLS_END, calls, "\n", choice, parallel)


def _deepseek_v31(tools, choice, parallel):
    calls = [_tag(f"{DS_CALL_BEGIN}{n}{DS_SEP}", _args(p), DS_CALL_END) for n, p in tools]
    return _section(DS_CALLS_BEGIN, DS_CALLS_END, calls, "", choice, parallel)


def _kimi(tools, choice, parallel):
    calls = [_tag(f"<|tool_call_begin|>functions.{n}:", {"type": "sequence", "elements": [
        {"type": "regex", "pattern": "[0-9]+"}, _const("<|tool_call_argument_begin|>"), _args(p)]},
        "<|tool_call_end|>") for n, p in tools]
    return _section(KIMI_SECTION_BEGIN, KIMI_SECTION_END, calls, "", choice, parallel)


def _mistral(tools, choice, parallel):
    # mistral-common writes each call with its 9-character id; a model may leave it out
    call_id = {"type": "optional", "content": {"type": "regex", "pattern": ', "id": "[A-Za-z0-9]{9}"'}}
    calls = [_tag(f'{{"name": {json.dumps(n, ensure_ascii=False)}, "arguments": ',
                  {"type": "sequence", "elements": [_args(p), call_id]}, "}") for n, p in tools]
    listed = {"type": "tags_with_separator", "tags": calls, "separator": ", ", "at_least_one": True,
              "stop_after_first": not parallel}
    # the SentencePiece tokenizers put a space after [TOOL_CALLS]
    content = {"type": "sequence", "elements": [{"type": "regex", "pattern": " ?\\["}, listed]}
    return _triggered(["[TOOL_CALLS]"], [_tag("[TOOL_CALLS]", content, "]")], choice, False)


def _harmony_calls(tools) -> list:
    return [_tag(begin.replace("NAME", n), _args(p), "<|call|>") for n, p in tools for begin in HARMONY_HEADS]


def _harmony(specs, choice, parallel, reasoning, answer=None) -> dict:
    """Harmony messages after the prompt's ``<|start|>assistant``: an analysis message (reasoning),
    tool calls on the commentary channel, a final answer; messages joined by ``<|start|>assistant``.
    ``answer``: the final message's content format (free text by default); gpt-oss heads a
    structured answer ``<|channel|>final <|constrain|>json<|message|>``, and its text may not hold
    the message's ends (a reader finds the end by searching for it)."""
    calls = _harmony_calls(specs)
    analysis = _tag("<|channel|>analysis<|message|>", {"type": "any_text"}, HARMONY_END)
    if answer is None:
        finals = [_tag(HARMONY_FINAL_HEADS[0], {"type": "any_text"}, HARMONY_END)]
    else:
        finals = [_tag(h, {**answer, "excludes": HARMONY_END}, HARMONY_END) for h in HARMONY_FINAL_HEADS]
    messages = {"type": "tags_with_separator", "tags": calls + (finals if choice == "auto" else []),
                "separator": HARMONY_SEP, "at_least_one": True, "stop_after_first": not parallel}
    if not reasoning:
        return messages
    return {"type": "sequence", "elements": [analysis, _const(HARMONY_SEP), messages]}


def _plain(build):
    """A writer of a family whose calls follow free text (all but Harmony): a call that must come
    first may follow a little ASCII white space (templates write "\n" before it, and models a
    blank line after </think>; a run of Unicode spaces is only tokens spent), and ``reasoning``
    puts the family's ``<think>`` block first."""
    def write(tools, choice, parallel, reasoning):
        calls = build(tools, choice, parallel)
        if choice != "auto":
            calls = {"type": "sequence", "elements": [{"type": "regex", "pattern": "[ \\t\\r\\n]{0,8}"}, calls]}
        if not reasoning:
            return calls
        think = _tag("<think>" if reasoning is True else "", {"type": "any_text"}, "</think>")
        return {"type": "sequence", "elements": [think, calls]}
    return write


def _mistral_id(name: str, index: int, captured: Optional[str]) -> str:
    # mistral-common's templates refuse ids that are not 9 alphanumeric characters
    return "".join(random.choice(string.ascii_letters + string.digits) for _ in range(9))


def _kimi_id(name: str, index: int, captured: Optional[str]) -> str:
    return f"functions.{name}:{captured if captured is not None else index}"


class Family(NamedTuple):
    """A model family's tool calls: how they are written (``write``: the structural tag's format
    for (tools, tool_choice, parallel, reasoning)) and read back (``read``); the texts of a chat
    template that tell the family (``marks``, all of them); and how the template takes a past
    call's arguments (``history_arguments``: "object", or "text" for templates that concatenate
    the JSON text); whether its template takes several calls in one assistant turn (``parallel``;
    False: the calls are written one per turn, as ``parallel=False`` asks)."""
    write: Callable
    read: CallSyntax
    marks: tuple
    history_arguments: str = "object"
    parallel: bool = True


_DS_SECTION = (((DS_CALLS_BEGIN,),), ((DS_CALLS_END,),))
_HARMONY_MESSAGE_ENDS = tuple(HARMONY_END)
#: every family: one row writes and reads its calls, so none can be written and not read
FAMILIES: dict[str, Family] = {
    "llama3": Family(_plain(_llama3), CallSyntax(
        opens=('{"name": ', "<|python_tag|>"),
        heads=(('{"name": ', QUOTED_NAME, ', "parameters": '),
               ('<|python_tag|>{"name": ', QUOTED_NAME, ', "parameters": ')),
        closes=(("}",),)), ("<|python_tag|>",), parallel=False),
    "qwen": Family(_plain(_qwen), CallSyntax(
        opens=("<tool_call>",), heads=(('<tool_call>\n{"name": ', QUOTED_NAME, ', "arguments": '),),
        closes=(("}\n</tool_call>",),)), ("<tool_call>",)),
    "qwen-coder": Family(_plain(_qwen_coder), CallSyntax(
        opens=("<tool_call>",), heads=(("<tool_call>\n<function=", NAME, ">\n"),),
        closes=(("</function>\n</tool_call>",),), args="xml", input_slot=QWEN_CODER_INPUT),
        ("<tool_call>", "<function=")),
    "deepseek": Family(_plain(_deepseek), CallSyntax(
        opens=(DS_CALLS_BEGIN,), section=_DS_SECTION, separator=("\n",),
        heads=((f"{DS_CALL_BEGIN}function{DS_SEP}", NAME, "\n```json\n"),),
        closes=((f"\n```{DS_CALL_END}",),)), (DS_CALLS_BEGIN, "```json"), "text"),
    "deepseek-v3.1": Family(_plain(_deepseek_v31), CallSyntax(
        opens=(DS_CALLS_BEGIN,), section=_DS_SECTION, heads=((DS_CALL_BEGIN, NAME, DS_SEP),),
        closes=((DS_CALL_END,),)), (DS_CALLS_BEGIN,), "text"),
    "kimi": Family(_plain(_kimi), CallSyntax(
        opens=(KIMI_SECTION_BEGIN,), section=(((KIMI_SECTION_BEGIN,),), ((KIMI_SECTION_END,),)),
        heads=(("<|tool_call_begin|>functions.", NAME, ":", DIGITS, "<|tool_call_argument_begin|>"),),
        closes=(("<|tool_call_end|>",),), call_id=_kimi_id), (KIMI_SECTION_BEGIN,)),
    "mistral": Family(_plain(_mistral), CallSyntax(
        opens=("[TOOL_CALLS]",), section=((("[TOOL_CALLS][",), ("[TOOL_CALLS] [",)), (("]",),)),
        separator=(", ",), heads=(('{"name": ', QUOTED_NAME, ', "arguments": '),),
        closes=((', "id": "', ALNUM_ID, '"}'), ("}",)), call_id=_mistral_id), ("[TOOL_CALLS]",)),
    "harmony": Family(_harmony, CallSyntax(
        heads=tuple((h.split("NAME")[0], NAME, h.split("NAME")[1]) for h in HARMONY_HEADS),
        closes=(("<|call|>",),), message_separator=(HARMONY_SEP,),
        spans=((("<|channel|>analysis<|message|>",), "reasoning", _HARMONY_MESSAGE_ENDS),
               *(((h,), "content", _HARMONY_MESSAGE_ENDS) for h in HARMONY_FINAL_HEADS))), ("<|channel|>",)),
}
FORMATS = tuple(FAMILIES)

#: the server's own format (``stencil.grammar.tagged.triggers.tool_calls`` writes it): a
#: ``<tool_call>`` JSON object with "name" and "arguments", announced in a system message
GENERIC = CallSyntax(
    opens=("<tool_call>",),
    heads=(("<tool_call>", WS, "{", WS, '"name"', WS, ":", WS, QUOTED_NAME, WS, ",", WS, '"arguments"', WS, ":", WS),),
    closes=((WS, "}", WS, "</tool_call>"),))


def call_syntax(format: str) -> CallSyntax:
    """How the calls of ``format`` (a family of :data:`FORMATS`, or "generic") are read back."""
    return GENERIC if format == "generic" else FAMILIES[format].read


def family_of_template(template: str) -> Optional[str]:
    """The family whose tool-call texts a chat template's source writes (the most specific
    match), or None."""
    found = [(len(f.marks), name) for name, f in FAMILIES.items() if all(m in template for m in f.marks)]
    return max(found)[1] if found else None


def tool_call_format(format: str, tools, *, reasoning: Union[bool, str] = False, tool_choice: str = "auto",
                     parallel: bool = True, answer: Optional[dict] = None) -> dict:
    """The structural tag (a dict) of ``format``'s tool calls for ``tools`` (OpenAI-style
    ``{"type": "function", "function": {...}}`` or ``{"name", "parameters"}`` dicts, and custom
    tools ``{"type": "custom", ...}``).

    ``tool_choice``: "auto" (text, calls or both), "required" (the output starts with a call, after
    white space at most), or
    a tool name (exactly that tool). ``parallel``: several calls may follow each other (never in a
    family whose template takes one call per turn: ``FAMILIES[format].parallel``).
    ``reasoning``: False, True (the model writes the whole reasoning block), or "opened" (the
    prompt opened it: the output starts inside it).
    ``answer``: a JSON Schema for the answer beside the calls (harmony only: its final message,
    as gpt-oss answers under a response format; the other families' answers are free text before
    their calls).
    """
    if format not in FORMATS:
        raise GrammarError(f"unknown tool-call format {format!r}; expected one of {', '.join(FORMATS)}")
    if reasoning not in (False, True, "opened"):
        raise GrammarError(f"reasoning must be False, True or 'opened', got {reasoning!r}")
    slot = FAMILIES[format].read.input_slot
    parallel = parallel and FAMILIES[format].parallel
    # (harmony without tools: its messages, an analysis and a final answer)
    listed = tool_specs(tools) if tools or format != "harmony" or tool_choice != "auto" else []
    specs = [(n, _Input(input_format(slot, p)) if isinstance(p, CustomTool) else p) for n, p in listed]
    choice = tool_choice
    if choice not in ("auto", "required"):
        if not isinstance(choice, str) or choice not in dict(specs):
            raise GrammarError(f"tool_choice must be 'auto', 'required' or a tool name of {[n for n, _ in specs]}, "
                               f"got {tool_choice!r}")
        specs, choice, parallel = [(n, p) for n, p in specs if n == tool_choice], "required", False
    if format == "harmony" and reasoning == "opened":
        raise GrammarError("harmony: reasoning is the analysis channel, which the model opens; use reasoning=True")
    if answer is None:
        return {"type": "structural_tag", "format": FAMILIES[format].write(specs, choice, parallel, reasoning)}
    if format != "harmony":
        raise GrammarError(f"{format}: an answer schema beside tool calls is written only for harmony (the final "
                           "message); the other families answer in free text before their calls")
    return {"type": "structural_tag", "format": _harmony(specs, choice, parallel, reasoning, _json(answer))}
