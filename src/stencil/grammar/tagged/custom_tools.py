"""OpenAI's custom tools: a tool whose input is raw text, free or in the language of a grammar
(``{"type": "custom", "name": ..., "format": {"type": "grammar", "syntax": "lark" | "regex",
"definition": ...}}``, ``"format": {"type": "text"}`` or none; chat nests the tool under
``"custom"`` and the grammar under ``"grammar"``), and how a call's input is carried in the
tool-call formats of :mod:`stencil.grammar.tagged.tool_presets`.

Lark is llguidance's dialect (stencil's Lark front-end; the grammar's ``%ignore`` applies inside
the input only, not before its first terminal unless ``allow_initial_skip``); a regex matches the
whole input and reads as Rust's regex crate does (llguidance's, as Lark terminals: Unicode
``\\d``, ``.`` stopping at ``\\n`` only).

Where the input goes, for each family (:class:`InputSlot`, a field of the family's
:class:`~stencil.grammar.tagged.tool_reading.CallSyntax`, so that one table row writes and
reads it):

- families whose call body is a JSON object (generic, llama3, qwen, deepseek, deepseek-v3.1,
  kimi, mistral, harmony's ``<|constrain|>json`` message): the arguments ``{"input": STRING}``,
  STRING a JSON string whose decoded text is in the grammar's language. The grammar's lexemes
  are built through :class:`~stencil.grammar.json.string_view.JsonStringBuilder` (the JSON
  Schema front-end's string encoding), so the JSON spellings of the accepted inputs are allowed
  and nothing else (every spelling of a regex or text input; ``json.dumps(s,
  ensure_ascii=False)``'s of a Lark input, whose escaped characters the view keeps apart from
  its raw runs for the lexer), and the reader decodes the string: no encoded lexeme holds the
  raw ``"`` that ends it, so the input read is the one the grammar took. The chat templates of these families
  show a custom tool as a function of one string parameter ``input`` (:func:`function_view`), so
  this is also the call the model expects to write.
- Qwen3-Coder: the family's raw-text parameter ``<parameter=input>\\nRAW\\n</parameter>\\n``, as
  its template and parser treat a string parameter. A raw input cannot contain ``</parameter>``
  (the family's parser ends the value at its first occurrence), so the input's language is
  intersected with "does not contain ``</parameter>``", exact for a regex or free text (one
  regular language). A Lark language is context-free: the core cannot intersect it with a
  regular one, and a cut at an occurrence spread over two terminals would read back a different
  input, so a Lark input is written there as a JSON string instead (``"..."`` between the same
  parameter tags).

Example::

    tools = [{"type": "custom", "name": "sql", "format": {"type": "grammar", "syntax": "regex",
              "definition": "SELECT [a-z]+ FROM [a-z]+"}}]
    g = compiler.compile_tool_calls(tools, format="qwen")   # <tool_call>{"name": "sql", "arguments": {"input": "..."}}
"""
from __future__ import annotations

import json
from typing import NamedTuple, Optional

from stencil._core import ExprId, GrammarError, Symbol
from stencil.grammar.ebnf.lark import build_lark, parse_lark
from stencil.grammar.json.string_view import JsonStringBuilder
from stencil.grammar.regex import build_regex, parse_regex

__all__ = ["CustomTool", "InputSlot", "JSON_SLOT", "SYNTAXES", "custom_tool", "custom_format", "check_definition",
           "input_style", "input_format", "build_json_string", "build_json_input", "input_regex", "write_input",
           "json_string_extent", "decode_json_body", "function_view"]

#: the syntaxes of a custom tool's input: OpenAI's two grammar syntaxes, and free text
SYNTAXES = ("lark", "regex", "text")


class CustomTool(NamedTuple):
    """A custom tool: its name, the syntax of its input ("lark", "regex" or "text": free), the
    grammar's definition ("" for text) and its description."""
    name: str
    syntax: str
    definition: str = ""
    description: str = ""

    def format(self) -> dict:
        """The input format in the Responses API's shape."""
        if self.syntax == "text":
            return {"type": "text"}
        return {"type": "grammar", "syntax": self.syntax, "definition": self.definition}


def custom_format(fmt, where: str = "format") -> tuple[str, str]:
    """(syntax, definition) of a custom tool's ``format``: None or ``{"type": "text"}`` (free
    text), or a grammar in the Responses shape (``{"type": "grammar", "syntax", "definition"}``)
    or chat's (``{"type": "grammar", "grammar": {"syntax", "definition"}}``)."""
    if fmt is None:
        return "text", ""
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "grammar"):
        got = fmt.get("type") if isinstance(fmt, dict) else type(fmt).__name__
        raise GrammarError(f"{where}.type must be 'text' or 'grammar', got {got!r}")
    if fmt["type"] == "text":
        return "text", ""
    inner, at = (fmt["grammar"], f"{where}.grammar") if isinstance(fmt.get("grammar"), dict) else (fmt, where)
    syntax, definition = inner.get("syntax"), inner.get("definition")
    if syntax not in ("lark", "regex"):
        raise GrammarError(f"{at}.syntax must be 'lark' or 'regex', got {syntax!r}")
    if not isinstance(definition, str) or not definition.strip():
        raise GrammarError(f"{at}.definition must be the {syntax} grammar's text, got {json.dumps(definition)[:40]}")
    return syntax, definition


def custom_tool(t) -> Optional[CustomTool]:
    """The :class:`CustomTool` of ``t`` (chat's ``{"type": "custom", "custom": {...}}`` or the
    Responses API's flat ``{"type": "custom", "name", ...}``), None for another kind of tool; a
    ``GrammarError`` for a malformed one."""
    if not isinstance(t, dict) or t.get("type") != "custom":
        return None
    spec = t["custom"] if isinstance(t.get("custom"), dict) else t
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise GrammarError("a custom tool needs a non-empty string 'name'")
    try:
        syntax, definition = custom_format(spec.get("format"))
    except GrammarError as e:
        raise GrammarError(f"custom tool {name!r}: {e}") from None
    description = spec.get("description")
    return CustomTool(name, syntax, definition, description if isinstance(description, str) else "")


def check_definition(tool: CustomTool) -> None:
    """Parse the tool's grammar (not compile it): a ``GrammarError`` naming the place in the
    definition (a Lark line and column, a regex position)."""
    if tool.syntax == "lark":
        parse_lark(tool.definition, unused="ignore")
    elif tool.syntax == "regex":
        parse_regex(tool.definition, dialect="rust")


# -- where a call's input goes ----------------------------------------------------------------------
class InputSlot(NamedTuple):
    """How a family writes a custom call's input: ``open`` + input + ``close`` in the place of
    the arguments. ``raw``: a regular input (regex, text) is raw text that contains none of
    ``excludes``; otherwise, and for Lark, a JSON string."""
    open: str
    close: str
    raw: bool = False
    excludes: tuple = ()


#: the arguments object ``{"input": "..."}`` of the families whose call body is JSON
JSON_SLOT = InputSlot('{"input": ', "}")


def input_style(slot: InputSlot, tool: CustomTool) -> str:
    """"raw" or "json_string": how ``slot`` writes ``tool``'s input."""
    return "raw" if slot.raw and tool.syntax != "lark" else "json_string"


def input_format(slot: InputSlot, tool: CustomTool) -> dict:
    """The structural tag's format of a call's input in ``slot`` (stencil's ``custom_input``
    format between the slot's texts)."""
    custom = {"type": "custom_input", "format": tool.format(), "style": input_style(slot, tool)}
    if custom["style"] == "raw" and slot.excludes:
        custom["excludes"] = list(slot.excludes)
    return {"type": "sequence", "elements": [{"type": "const_string", "value": slot.open}, custom,
                                             {"type": "const_string", "value": slot.close}]}


def write_input(slot: InputSlot, tool: CustomTool, raw: str) -> str:
    """The text of a call's arguments carrying input ``raw`` as ``slot`` writes it (what the
    reading of :mod:`stencil.grammar.tagged.tool_reading` gives back as ``raw``)."""
    body = raw if input_style(slot, tool) == "raw" else json.dumps(raw, ensure_ascii=False)
    return slot.open + body + slot.close


# -- grammar ------------------------------------------------------------------------------------------
def build_json_string(b, syntax: str, definition: str, *, tokens=None, json_options: Optional[dict] = None) -> Symbol:
    """A symbol for a JSON string (quotes included) whose decoded text is in the language of
    ``definition`` (``syntax`` of :data:`SYNTAXES`). ``json_options``: ``string_spelling`` (the
    JSON spellings allowed, "any" by default) and the options of a Lark grammar's ``%json``."""
    opts = dict(json_options or {})
    what = "a custom tool's input (a JSON string)"
    if syntax == "lark":
        # spelled as json.dumps(ensure_ascii=False) writes it: escapes only where JSON needs them,
        # which the view's terminals keep apart from the raw text (JsonStringBuilder.term)
        view = JsonStringBuilder(b, "plain", what)
        rule = build_lark(view, definition, tokens=tokens, unused="ignore", json_options=opts, scoped=True)
        quote = b.literal('"', "quote")
        return b.seq([quote, rule, quote])
    view = JsonStringBuilder(b, opts.get("string_spelling", "any"), what)
    body = view.strings.any_body() if syntax == "text" else build_regex(view, definition, dialect="rust")
    return b.lexeme(view.strings.quoted(body), f"{syntax} input")


def build_json_input(b, tool: CustomTool, *, tokens=None, json_options: Optional[dict] = None) -> Symbol:
    """The arguments ``{"input": STRING}`` of a call of ``tool`` (:data:`JSON_SLOT`)."""
    string = build_json_string(b, tool.syntax, tool.definition, tokens=tokens, json_options=json_options)
    return b.seq([b.literal(JSON_SLOT.open), string, b.literal(JSON_SLOT.close)])


def input_regex(b, syntax: str, definition: str) -> ExprId:
    """The regular language of a raw input: the whole text matches the regex, or any text."""
    if syntax == "lark":
        raise GrammarError("a Lark input cannot be raw text before an end marker (a context-free language "
                           "cannot be kept free of the marker): use style json_string")
    return b.re_any_string() if syntax == "text" else build_regex(b, definition, dialect="rust")


# -- reading --------------------------------------------------------------------------------------
def json_string_extent(text: str, pos: int) -> tuple[int, bool]:
    """(end, closed): ``text[pos:end]`` is the longest run of whole characters and escapes of a
    JSON string body from ``pos`` (a surrogate pair's escapes together), and ``closed`` says
    whether an unescaped ``"`` is at ``end``."""
    i, n = pos, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return i, True
        if c != "\\":
            i += 1
            continue
        if i + 1 >= n:
            break
        width = 6 if text[i + 1] == "u" else 2
        if width == 6 and text[i + 2:i + 4].lower() in ("d8", "d9", "da", "db"):
            width = 12   # a high surrogate: its low half comes with it
        if i + width > n:
            break
        i += width
    return i, False


def decode_json_body(body: str) -> str:
    """The text of a JSON string body (whole characters and escapes)."""
    return json.loads('"' + body + '"')


def function_view(tool: CustomTool) -> dict:
    """``tool`` as a function of one string parameter ``input`` (its grammar in the
    description): how a chat template that knows only function tools shows it to the model, in
    the shape of the calls :data:`JSON_SLOT` writes."""
    what = {"lark": "this Lark grammar (llguidance's dialect)", "regex": "this regular expression (whole input)"}
    note = f"The input follows {what[tool.syntax]}:\n{tool.definition}" if tool.syntax != "text" else "Free text."
    return {"type": "function", "function": {
        "name": tool.name, "description": "\n".join(x for x in (tool.description, note) if x),
        "parameters": {"type": "object", "properties": {"input": {"type": "string", "description": "the raw input"}},
                       "required": ["input"], "additionalProperties": False}}}
