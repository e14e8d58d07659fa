"""Tool calls read back from the text a model family's format wrote: the other half of
:mod:`stencil.grammar.tagged.tool_presets`, whose table gives every family a writer (the grammar)
and a :class:`CallSyntax` (this reading). The reader follows the same literal texts the grammar
writes, so a text the grammar accepted is read without guessing; it reads as the text grows
(streaming) and never takes back what it has said: content, reasoning, a call's start (name and
id), its argument text in pieces that join to the final arguments (a custom tool's raw input,
decoded as its family's :class:`~stencil.grammar.tagged.custom_tools.InputSlot` wrote it), and
its end.

Example::

    syntax = CallSyntax(opens=("<tool_call>",), heads=(("<tool_call>\\n{\\"name\\": ", QUOTED_NAME,
                        ", \\"arguments\\": "),), closes=(("}\\n</tool_call>",),))
    reader = CallReader(syntax, tools)
    events = reader.feed(text_so_far)          # [("content", "..."), ("call", name, id), ("args", "{\\"c")...]
    events += reader.feed(whole_text, final=True)
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Callable, NamedTuple, Optional

from stencil.grammar.tagged.custom_tools import (JSON_SLOT, CustomTool, InputSlot, decode_json_body, input_style,
                                                 json_string_extent, write_input)
from stencil.grammar.tagged.triggers import tool_specs
from stencil.grammar.tagged.xml_params import read_xml_value, value_end, write_xml_parameters, writes_json

__all__ = ["CallSyntax", "CallReader", "Piece", "NAME", "QUOTED_NAME", "DIGITS", "WS", "ALNUM_ID", "read_calls",
           "write_calls"]


class Piece(NamedTuple):
    """A variable part of a call's text: one of the tools' names (as written, or as a JSON
    string), a run of digits, optional white space, or a 9-character alphanumeric call id."""
    kind: str


NAME, QUOTED_NAME, DIGITS, WS, ALNUM_ID = (Piece(k) for k in ("name", "quoted", "digits", "ws", "id"))
_WS = " \t\n\r"
FULL, PARTIAL, NONE = 2, 1, 0
_PARAM, _PARAM_END, _FUNCTION_END = "<parameter=", "</parameter>", "</function>"


class CallSyntax(NamedTuple):
    """How one family writes its calls; every text is a tuple of literal strings and :class:`Piece`\\ s,
    every place with alternatives a tuple of such texts.

    ``opens``: strings in free text that start the calls (the grammar's triggers); ``heads``: a
    call's text before its arguments; ``closes``: after them; ``section``: (opening texts, closing
    texts) around a list of calls, which ``separator`` joins; ``args``: "json" or "xml" (Qwen3-Coder's
    parameters); ``spans``: for formats without free text (Harmony), (opening text, "content" or
    "reasoning", ending strings) of the messages that are not calls, with ``message_separator``
    between messages; ``call_id``: how a call's id is made when it starts, from its name, its
    index and the digits its head captured (Kimi's ``functions.NAME:IDX``); by default OpenAI's
    ``call_`` and 24 hex digits. (An id written after the arguments, as Mistral's, comes too late
    for the first streamed delta and is not taken.) ``input_slot``: where a custom tool's input
    goes in place of the arguments."""
    opens: tuple = ()
    heads: tuple = ()
    closes: tuple = ()
    section: Optional[tuple] = None
    separator: tuple = ()
    args: str = "json"
    spans: tuple = ()
    message_separator: tuple = ()
    call_id: Optional[Callable[[str, int, Optional[str]], str]] = None
    input_slot: InputSlot = JSON_SLOT


def openai_call_id(name: str, index: int, captured: Optional[str]) -> str:
    return "call_" + uuid.uuid4().hex[:24]


def _match(pieces: tuple, text: str, pos: int, names: list, final: bool, caps: dict) -> tuple:
    """(FULL, end, captures), (PARTIAL, ...) when the text ends before it is decided, or (NONE, ...)."""
    if not pieces:
        return FULL, pos, caps
    p, rest = pieces[0], pieces[1:]
    if isinstance(p, str):
        if text.startswith(p, pos):
            return _match(rest, text, pos + len(p), names, final, caps)
        return (PARTIAL if not final and p.startswith(text[pos:]) else NONE), pos, caps
    if p is NAME or p is QUOTED_NAME:
        best = NONE
        for n in names:
            spelled = json.dumps(n, ensure_ascii=False) if p is QUOTED_NAME else n
            if text.startswith(spelled, pos):
                r = _match(rest, text, pos + len(spelled), names, final, {**caps, "name": n})
                if r[0] == FULL:
                    return r
                best = max(best, r[0])
            elif not final and spelled.startswith(text[pos:]):
                best = PARTIAL
        return best, pos, caps
    end = pos
    if p is WS:
        while end < len(text) and text[end] in _WS:
            end += 1
        if end == len(text) and not final:
            return PARTIAL, pos, caps
        return _match(rest, text, end, names, final, caps)
    accept = str.isdigit if p is DIGITS else (lambda c: c.isascii() and c.isalnum())
    limit = len(text) if p is DIGITS else min(len(text), pos + 9)
    while end < limit and accept(text[end]):
        end += 1
    if end == len(text) and not final and (p is DIGITS or end - pos < 9):
        return PARTIAL, pos, caps
    if end == pos or (p is ALNUM_ID and end - pos != 9):
        return NONE, pos, caps
    return _match(rest, text, end, names, final, {**caps, p.kind: text[pos:end]})


def _first(alternatives, text: str, pos: int, names: list, final: bool) -> tuple:
    """(status, index of the alternative, end, captures): FULL only when no other alternative may
    still match a longer text."""
    found, partial = None, False
    for i, pieces in enumerate(alternatives):
        status, end, caps = _match(pieces, text, pos, names, final, {})
        if status == FULL and found is None:
            found = (FULL, i, end, caps)
        partial |= status == PARTIAL
    if partial and not final:
        return PARTIAL, -1, pos, {}
    return found or (NONE, -1, pos, {})


def _held(text: str, pos: int, ends: tuple) -> int:
    """Where text from pos may be given out up to: before the earliest occurrence of an end, else
    before a tail that may be the start of one."""
    hold = len(text)
    for e in ends:
        for k in range(min(len(e) - 1, len(text) - pos), 0, -1):
            if e.startswith(text[len(text) - k:]):
                hold = min(hold, len(text) - k)
                break
    return hold


class _JsonExtent:
    """Where a JSON value written from the start ends, read a piece at a time."""

    def __init__(self):
        self.depth, self.string, self.escape, self.started, self.scalar = 0, False, False, False, False

    def take(self, text: str, pos: int, final: bool) -> tuple[int, bool]:
        """(position read up to, whether the value ended there)."""
        i = pos
        while i < len(text):
            c = text[i]
            if not self.started:
                if c in _WS:
                    i += 1
                    continue
                self.started, self.scalar = True, c not in '{["'
            if self.scalar:
                if c in ",}]" + _WS or c == "<":
                    return i, True
                i += 1
                continue
            i += 1
            if self.string:
                if self.escape:
                    self.escape = False
                elif c == "\\":
                    self.escape = True
                elif c == '"':
                    self.string = False
                    if self.depth == 0:
                        return i, True
            elif c == '"':
                self.string = True
            elif c in "{[":
                self.depth += 1
            elif c in "}]":
                self.depth -= 1
                if self.depth == 0:
                    return i, True
        return i, final and self.started


class CallReader:
    """Reads one output of a family's format as it grows. ``feed(text, final)`` takes the whole
    text so far and returns the events since the last call: ``("content", s)``, ``("reasoning", s)``,
    ``("call", name, id)``, ``("args", s)`` (pieces of the current call's arguments, as JSON text),
    ``("input", s)`` (pieces of a custom tool's raw input instead), ``("end",)``. ``calls`` holds the
    calls read so far (type "function" or "custom", name, id, arguments text or input, ended)."""

    def __init__(self, syntax: CallSyntax, tools):
        self.syntax = syntax
        # (a custom tool's entry: its CustomTool; no tools: Harmony's messages read without calls)
        self.schemas = dict(tool_specs(tools)) if tools else {}
        self.customs = {n: p for n, p in self.schemas.items() if isinstance(p, CustomTool)}
        self.names = sorted(self.schemas, key=len, reverse=True)
        self.pos, self.state = 0, "text" if syntax.opens or not syntax.spans else "message"
        self.calls: list[dict[str, Any]] = []
        self._extent: Optional[_JsonExtent] = None
        self._open: Optional[tuple] = None   # the span being read
        self._xml_sent = 0   # parameters given out (Qwen3-Coder)
        self._quoted = False   # a custom input's JSON string has opened
        self._messages = 0

    def feed(self, text: str, final: bool = False) -> list[tuple]:
        out: list[tuple] = []
        while True:
            before = (self.pos, self.state)
            getattr(self, "_" + self.state)(text, final, out)
            if (self.pos, self.state) == before:
                return out

    # --- free text and messages -----------------------------------------------------------------
    def _text(self, text, final, out):
        opens = self.syntax.opens
        hits = [i for i in (text.find(o, self.pos) for o in opens) if i >= 0]
        if hits:
            at = min(hits)
            self._give(out, "content", text[self.pos:at])
            self.pos, self.state = at, "section" if self.syntax.section else "head"
            return
        end = len(text) if final else _held(text, self.pos, opens)
        self._give(out, "content", text[self.pos:end])
        self.pos = max(self.pos, end)

    def _message(self, text, final, out):
        """A format whose output is all messages (Harmony): a call or a content/reasoning span."""
        sep = (self.syntax.message_separator,) if self._messages else ((),)
        heads = [s + h for s in sep for h in self.syntax.heads]
        spans = [s + span[0] for s in sep for span in self.syntax.spans]
        status, i, end, caps = _first(heads + spans, text, self.pos, self.names, final)
        if status != FULL:
            if status == NONE and self.pos < len(text):   # not of the format: kept as content
                self._give(out, "content", text[self.pos:])
                self.pos, self.state = len(text), "message"
            return
        self._messages += 1
        self.pos = end
        if i < len(heads):
            self._start_call(out, caps)
        else:
            self._open, self.state = self.syntax.spans[(i - len(heads)) % len(self.syntax.spans)], "spanned"

    def _spanned(self, text, final, out):
        kind, ends = self._open[1], self._open[2]
        hits = [(i, e) for i, e in ((text.find(e, self.pos), e) for e in ends) if i >= 0]
        if hits:
            at, e = min(hits)
            self._give(out, kind, text[self.pos:at])
            self.pos, self.state = at + len(e), "message"
            return
        end = len(text) if final else _held(text, self.pos, ends)
        self._give(out, kind, text[self.pos:end])
        self.pos = max(self.pos, end)

    # --- calls ------------------------------------------------------------------------------------
    def _section(self, text, final, out):
        status, _, end, _ = _first(self.syntax.section[0], text, self.pos, self.names, final)
        if status == FULL:
            self.pos, self.state = end, "head"
        elif status == NONE:
            self._not_a_call(text, out)

    def _head(self, text, final, out):
        status, _, end, caps = _first(self.syntax.heads, text, self.pos, self.names, final)
        if status == FULL:
            self.pos = end
            self._start_call(out, caps)
        elif status == NONE:
            self._not_a_call(text, out)

    def _not_a_call(self, text, out):
        """An opener that starts no call (only in text the grammar did not write): its first
        character is content, and the reading goes on after it."""
        self._give(out, "content", text[self.pos])
        self.pos, self.state = self.pos + 1, "text" if self.syntax.opens else "message"

    def _start_call(self, out, caps):
        name = caps["name"]
        make = self.syntax.call_id or openai_call_id
        call = {"type": "function", "name": name, "id": make(name, len(self.calls), caps.get("digits")),
                "arguments": "", "ended": False}
        self.calls.append(call)
        out.append(("call", name, call["id"]))
        self._extent, self._xml_sent, self.state = _JsonExtent(), 0, "args" if self.syntax.args == "json" else "xml"
        if name in self.customs:
            call.update(type="custom", input="")
            self._quoted, self.state = False, "input_open"

    # --- a custom tool's input, in the family's slot ------------------------------------------------
    def _slot_text(self, which: str, then: str, text, final):
        """Read the slot's ``open`` or ``close`` text, then go to state ``then``."""
        status, _, end, _ = _first(((getattr(self.syntax.input_slot, which),),), text, self.pos, self.names, final)
        if status == FULL:
            self.pos, self.state = end, then
        elif status == NONE:
            self.state = "broken"

    def _input_open(self, text, final, out):
        raw = input_style(self.syntax.input_slot, self.customs[self.calls[-1]["name"]]) == "raw"
        self._slot_text("open", "input_raw" if raw else "input_json", text, final)

    def _input_json(self, text, final, out):
        """The input as a JSON string: given out decoded, a whole character or escape at a time."""
        p = self.pos
        if not self._quoted:
            if p == len(text):
                return
            if text[p] != '"':
                self.state = "broken"
                return
            p, self._quoted = p + 1, True
        end, closed = json_string_extent(text, p)
        try:
            self._input_piece(out, decode_json_body(text[p:end]))
        except ValueError:   # (not a JSON string: only in text the grammar did not write)
            self.state = "broken"
            return
        self.pos = end + (1 if closed else 0)
        if closed:
            self.state = "input_close"

    def _input_raw(self, text, final, out):
        """The input as raw text, up to the slot's close (which the input cannot contain)."""
        close = self.syntax.input_slot.close
        at = text.find(close, self.pos)
        if at >= 0:
            self._input_piece(out, text[self.pos:at])
            self.pos, self.state = at, "input_close"
            return
        end = len(text) if final else _held(text, self.pos, (close,))
        self._input_piece(out, text[self.pos:end])
        self.pos = max(self.pos, end)

    def _input_close(self, text, final, out):
        self._slot_text("close", "close", text, final)

    def _input_piece(self, out, piece: str):
        if piece:
            self.calls[-1]["input"] += piece
            out.append(("input", piece))

    def _args(self, text, final, out):
        start = self.pos
        while start < len(text) and text[start] in _WS and not self._extent.started:
            start += 1
        end, done = self._extent.take(text, start, final)
        self._arg_piece(out, text[start:end])
        self.pos = end
        if done:
            self.state = "close"

    def _xml(self, text, final, out):
        """Qwen3-Coder's ``<parameter=KEY>VALUE</parameter>`` list, given out as a JSON object one
        complete parameter at a time (a parameter's value is known only at its end)."""
        schema, p = self.schemas[self.calls[-1]["name"]], self.pos
        while True:
            q = p
            while q < len(text) and text[q] in _WS:
                q += 1
            if text.startswith(_PARAM, q):
                gt = text.find(">", q)
                key = text[q + len(_PARAM):gt] if gt >= 0 else ""
                # (a JSON value's strings may hold </parameter>: its end is the first outside them)
                shut = value_end(text, gt + 1, writes_json(schema, key)) if gt >= 0 else -1
                if shut < 0 and final and gt >= 0:   # (a rendered history's raw string, quotes unpaired)
                    shut = value_end(text, gt + 1, False)
                if shut < 0:
                    break
                value = read_xml_value(schema, key, text[gt + 1:shut])
                self._arg_piece(out, ("{" if not self._xml_sent else ", ") + json.dumps(key, ensure_ascii=False)
                                + ": " + json.dumps(value, ensure_ascii=False))
                self._xml_sent += 1
                p = shut + len(_PARAM_END)
                continue
            if text.startswith(_FUNCTION_END, q):
                self._arg_piece(out, "}" if self._xml_sent else "{}")
                self.pos, self.state = q, "close"
                return
            if not (q == len(text) or _FUNCTION_END.startswith(text[q:]) or _PARAM.startswith(text[q:])):
                self.state = "broken"
            break
        self.pos = p

    def _arg_piece(self, out, piece: str):
        if piece:
            self.calls[-1]["arguments"] += piece
            out.append(("args", piece))

    def _close(self, text, final, out):
        status, _, end, caps = _first(self.syntax.closes, text, self.pos, self.names, final)
        if status == FULL:
            # (an id written after the arguments, as Mistral's, is not taken: the call's id was
            # given out when it started)
            self.calls[-1]["ended"] = True
            out.append(("end",))
            self.pos = end
            self.state = "between" if self.syntax.section else "text" if self.syntax.opens else "message"
        elif status == NONE:
            self.state = "broken"   # the call cannot end: nothing more is read

    def _between(self, text, final, out):
        """After a call inside a section: the next call (after the separator) or the section's end."""
        heads = [self.syntax.separator + h for h in self.syntax.heads]
        status, i, end, caps = _first(list(self.syntax.section[1]) + heads, text, self.pos, self.names, final)
        if status != FULL:
            if status == NONE:
                self.state = "broken"
            return
        self.pos = end
        if i < len(self.syntax.section[1]):
            self.state = "text"
        else:
            self._start_call(out, caps)

    def _broken(self, text, final, out):
        pass

    def _give(self, out, kind: str, s: str):
        if s:
            out.append((kind, s))


def read_calls(syntax: CallSyntax, tools, text: str) -> tuple[str, str, list[dict]]:
    """(content, reasoning, calls) of a whole output; calls as ``{"type": "function", "name",
    "id", "arguments"}`` or ``{"type": "custom", "name", "id", "input"}``, only those that ended (a
    call cut by max_tokens is left out) and whose arguments are JSON."""
    r = CallReader(syntax, tools)
    events = r.feed(text, final=True)
    content = "".join(e[1] for e in events if e[0] == "content")
    reasoning = "".join(e[1] for e in events if e[0] == "reasoning")
    calls = []
    for c in r.calls:
        if not c["ended"]:
            continue
        if c["type"] == "custom":
            calls.append({"type": "custom", "name": c["name"], "id": c["id"], "input": c["input"]})
            continue
        try:
            json.loads(c["arguments"])
        except json.JSONDecodeError:
            continue
        calls.append({"type": "function", "name": c["name"], "id": c["id"], "arguments": c["arguments"]})
    return content, reasoning, calls


def _spelled(pieces: tuple, name: str, index: int) -> str:
    out = []
    for p in pieces:
        if isinstance(p, str):
            out.append(p)
        elif p is NAME:
            out.append(name)
        elif p is QUOTED_NAME:
            out.append(json.dumps(name, ensure_ascii=False))
        elif p is DIGITS:
            out.append(str(index))
        # (WS: none; an id piece is only in an alternative that has a plainer sibling, written instead)
    return "".join(out)


def write_calls(syntax: CallSyntax, calls: list, tools=None) -> str:
    """The text of ``calls`` ([(name, arguments as a JSON value)]; for a custom tool of ``tools``,
    (name, its raw input)) as the family writes them, each place with alternatives taken in its
    plainest form (the last close, the first head): what :func:`read_calls` reads back to the
    same calls. For prompts whose chat template does not write tool calls itself."""
    specs = dict(tool_specs(tools)) if tools else {}
    customs = {n: p for n, p in specs.items() if isinstance(p, CustomTool)}

    def one(i, name, args):
        if name in customs:
            body = write_input(syntax.input_slot, customs[name], args)
        elif syntax.args == "xml":
            body = write_xml_parameters(args, specs.get(name))
        else:
            body = json.dumps(args, ensure_ascii=False)
        return _spelled(syntax.heads[0], name, i) + body + _spelled(syntax.closes[-1], name, i)
    parts = [one(i, n, a) for i, (n, a) in enumerate(calls)]
    if syntax.section:
        sep = _spelled(syntax.separator, "", 0)
        return _spelled(syntax.section[0][0], "", 0) + sep.join(parts) + _spelled(syntax.section[1][0], "", 0)
    if syntax.message_separator:
        return _spelled(syntax.message_separator, "", 0).join(parts)
    return "".join(parts)
