"""The messages of OpenAI's chat API and the input items of its Responses API, as pydantic models.
A route's model (``ChatRequest.messages``, ``ResponsesRequest.input``) validates them, so that a
malformed one is a 400 naming its path (``messages[1].tool_calls[0].function.arguments``), and
the prompt is built from checked values (``ChatMessage.for_template``). The server reads text
only: a part of another type (an image, audio, a file) is refused as ``unsupported_parameter``
naming it, since dropped, the model would answer a prompt without it. Fields OpenAI may add pass
through unread (``extra="allow"``): clients send back the assistant messages they were given.

Example::

    ChatMessage.model_validate({"role": "user", "content": [{"type": "text", "text": "hi"}]}).text()   # "hi"
"""
from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Optional, Union, get_args

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, field_validator, model_validator
from pydantic_core import PydanticCustomError, core_schema

from stencil.server.protocol import UNSUPPORTED, refuse_at

__all__ = ["ChatMessage", "InputItem", "ROLES", "content_text"]

#: the chat message roles the server reads (OpenAI's, less the deprecated "function")
Role = Literal["system", "developer", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = get_args(Role)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class StringOr:
    """A field's schema: a string as it is (and null where ``nullable``), else the list ``items``
    (``what``: its items in words).
    Declared as a ``Union``, pydantic would name the union's members in a list's error paths
    (``content.list[ChatPart].1.type``); this way they read ``content[1].type``."""

    def __init__(self, items: Any, what: str, nullable: bool = True):
        self.items, self.what, self.nullable = items, what, nullable

    def __get_pydantic_core_schema__(self, _source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def check(v: Any, validate: core_schema.ValidatorFunctionWrapHandler) -> Any:
            if isinstance(v, str) or (v is None and self.nullable):
                return v
            if not isinstance(v, list):
                raise PydanticCustomError("string_or_list", "must be a string or a list of {what}", {"what": self.what})
            return validate(v)
        return core_schema.no_info_wrap_validator_function(check, handler.generate_schema(self.items))


class _TextPart(_Open):
    #: the part types of the route (the text it reads)
    KINDS: ClassVar[tuple[str, ...]]
    type: str
    text: str

    @field_validator("type")
    @classmethod
    def _readable(cls, kind: str) -> str:
        if kind not in cls.KINDS:
            refuse_at((), f"{kind!r} is not supported here: this server reads text only (parts of type "
                          f"{' or '.join(cls.KINDS)})", UNSUPPORTED)
        return kind


class ChatPart(_TextPart):
    """A part of a chat message's content: ``{"type": "text", "text": ...}``."""
    KINDS = ("text",)


class InputPart(_TextPart):
    """A part of a Responses item: input, output, summary or reasoning text (which goes where:
    ``InputItem``)."""
    KINDS = ("input_text", "output_text", "summary_text", "reasoning_text")


def content_text(content: Union[str, list[ChatPart], list[InputPart], None]) -> str:
    """A checked content's text: the string, or its parts' text joined ("" for null)."""
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(p.text for p in content)


def _needs(model: BaseModel, fields: tuple[str, ...], what: str) -> None:
    """Each of ``fields`` is there: a 400 naming the first missing one."""
    for f in fields:
        if getattr(model, f) is None:
            refuse_at((f,), f"{what} needs {f}")


# -- chat ----------------------------------------------------------------------------------------
class FunctionCall(_Open):
    name: str
    arguments: str   # JSON text, as the model wrote it


class CustomCall(_Open):
    name: str
    input: str


class ToolCall(_Open):
    """A past call in an assistant message: ``{"id", "type": "function", "function": {"name",
    "arguments"}}`` or a custom tool's ``{"id", "type": "custom", "custom": {"name", "input"}}``."""
    id: str
    type: Literal["function", "custom"]
    function: Optional[FunctionCall] = None
    custom: Optional[CustomCall] = None

    @model_validator(mode="after")
    def _complete(self) -> ToolCall:
        _needs(self, (self.type,), f"a call of type {self.type}")
        return self


Content = Annotated[Union[str, list[ChatPart], None], StringOr(list[ChatPart], "parts")]


class ChatMessage(_Open):
    """A chat message: a role, its content (a string or text parts; null in an assistant's turn),
    an assistant's ``tool_calls``, a tool result's ``tool_call_id``, a ``name``, and the
    ``reasoning_content`` of a past answer (vLLM's and DeepSeek's field)."""
    role: Role
    content: Content = None
    name: Optional[str] = None
    tool_call_id: Optional[str] = None
    reasoning_content: Optional[str] = None
    tool_calls: Optional[list[ToolCall]] = None

    @model_validator(mode="after")
    def _complete(self) -> ChatMessage:
        if self.role != "assistant":   # (an assistant that only called tools may have no content)
            _needs(self, ("content",), f"a {self.role} message")
            if self.tool_calls is not None:
                refuse_at(("tool_calls",), "only an assistant message has tool_calls")
        if self.role == "tool":
            _needs(self, ("tool_call_id",), "a tool message")
        return self

    def text(self) -> str:
        """The content's text."""
        return content_text(self.content)

    def for_template(self) -> dict:
        """The message as the chat template takes it: role, text, and the tool history."""
        msg: dict[str, Any] = {"role": self.role, "content": self.text()}
        for k in ("tool_call_id", "name", "reasoning_content"):
            if getattr(self, k) is not None:
                msg[k] = getattr(self, k)
        if self.role == "assistant" and self.reasoning_content is not None:
            msg["thinking"] = self.reasoning_content   # (what gpt-oss's template reads)
        if self.tool_calls:
            msg["tool_calls"] = [c.model_dump(exclude_unset=True) for c in self.tool_calls]
        return msg


# -- Responses -------------------------------------------------------------------------------------
#: the input items the server reads, and the fields each needs
ITEMS: dict[str, tuple[str, ...]] = {
    "message": ("role",), "reasoning": (), "function_call": ("call_id", "name", "arguments"),
    "custom_tool_call": ("call_id", "name", "input"), "function_call_output": ("call_id",),
    "custom_tool_call_output": ("call_id",)}

ItemContent = Annotated[Union[str, list[InputPart], None], StringOr(list[InputPart], "parts")]


class InputItem(_Open):
    """A Responses input item: a message (``type`` may be left out), a past answer's reasoning, a
    function or custom tool call, or a call's output. One model with the fields of each type,
    which says the fields it needs (``ITEMS``) and the part types of each place."""
    type: str = "message"
    role: Optional[Literal["user", "assistant", "system", "developer"]] = None
    content: ItemContent = None
    summary: Optional[list[InputPart]] = None
    call_id: Optional[str] = None
    name: Optional[str] = None
    arguments: Optional[str] = None
    input: Optional[str] = None
    output: ItemContent = None

    @field_validator("type")
    @classmethod
    def _known(cls, kind: str) -> str:
        if kind not in ITEMS:
            refuse_at((), f"{kind!r} is not supported ({', '.join(ITEMS)} are)", UNSUPPORTED)
        return kind

    @model_validator(mode="after")
    def _complete(self) -> InputItem:
        _needs(self, ITEMS[self.type], f"an item of type {self.type}")
        if self.type == "reasoning" and isinstance(self.content, str):
            refuse_at(("content",), "a reasoning item's content is a list of reasoning_text parts")
        for field, kinds in self._part_kinds().items():
            parts = getattr(self, field)
            for k, part in enumerate(parts if isinstance(parts, list) else ()):
                if part.type not in kinds:
                    refuse_at((field, k, "type"), f"{part.type!r} is not supported here (parts of type "
                                                  f"{' or '.join(kinds)})", UNSUPPORTED)
        return self

    def _part_kinds(self) -> dict[str, tuple[str, ...]]:
        """The part types each of this item's fields takes."""
        if self.type == "message":
            return {"content": ("output_text", "input_text") if self.role == "assistant" else ("input_text",)}
        if self.type == "reasoning":
            return {"summary": ("summary_text",), "content": ("reasoning_text",)}
        return {"output": ("input_text",)}

    def thought(self) -> str:
        """A reasoning item's text: its summary parts (and reasoning text parts) joined."""
        return "\n\n".join(p.text for parts in (self.summary, self.content) if isinstance(parts, list) for p in parts)

    def call(self) -> dict:
        """A call item as a chat message's tool call."""
        if self.type == "function_call":
            return {"id": self.call_id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}
        return {"id": self.call_id, "type": "custom", "custom": {"name": self.name, "input": self.input}}
