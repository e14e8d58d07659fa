"""The shapes of the constraint fields of OpenAI's chat and Responses APIs, as pydantic models:
``response_format`` (text, json_object, json_schema) and ``tools`` (function and custom tools). A
request's model (``server.request``) validates them, so that a malformed one is a 400 naming its
path (``tools[0].function.name``), and ``constraints.constraint_for`` reads checked shapes. Fields
OpenAI may add pass through as before (``extra="allow"``); the grammar of a custom tool is
parsed by ``constraints`` (its errors name lines and columns).

Example::

    ChatTool.model_validate({"type": "function", "function": {"name": "add"}}).function.name   # "add"
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

__all__ = ["ResponseFormat", "ChatTool", "ResponsesTool", "TOOL_NAME"]

#: OpenAI's rule for a tool's name: the call's text holds it, so a name such as ``</tool_call>``
#: would end the call it is written in
TOOL_NAME = r"^[A-Za-z0-9_.-]{1,64}$"
ToolName = Annotated[str, Field(pattern=TOOL_NAME)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


def _needs(model: Any, field: str) -> None:
    """The field its ``type`` names is there: a 400 naming the value that lacks it."""
    if getattr(model, field) is None:
        raise PydanticCustomError("missing", "type {kind} needs the field {field}", {"kind": model.type, "field": field})


# -- response_format ------------------------------------------------------------------------------
class JsonSchemaSpec(_Open):
    name: Optional[str] = None
    # (``schema`` would shadow BaseModel.schema: the alias is the field's name in the body)
    json_schema: Any = Field(alias="schema")
    strict: Optional[bool] = None
    description: Optional[str] = None


class ResponseFormat(_Open):
    """Chat's ``response_format``: text, any JSON object, or a JSON Schema's values."""
    type: Literal["text", "json_object", "json_schema"]
    json_schema: Optional[JsonSchemaSpec] = None

    @model_validator(mode="after")
    def _complete(self) -> ResponseFormat:
        if self.type == "json_schema":
            _needs(self, "json_schema")
        return self


# -- tools ------------------------------------------------------------------------------------------
def _an_object(params: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """A function's parameters: the call's arguments are an object, so a schema of another type
    can never be met (None or {}: no parameters)."""
    if params and params.get("type") != "object":
        raise ValueError("must be a JSON Schema of type object (the call's arguments are an object)")
    return params


Parameters = Annotated[Optional[dict[str, Any]], AfterValidator(_an_object)]


class FunctionSpec(_Open):
    name: ToolName
    description: Optional[str] = None
    parameters: Parameters = None
    strict: Optional[bool] = None


class CustomSpec(_Open):
    name: ToolName
    description: Optional[str] = None
    format: Any = None


class ChatTool(_Open):
    """A chat tool: ``{"type": "function", "function": {...}}`` or ``{"type": "custom", "custom": {...}}``."""
    type: Literal["function", "custom"]
    function: Optional[FunctionSpec] = None
    custom: Optional[CustomSpec] = None

    @model_validator(mode="after")
    def _complete(self) -> ChatTool:
        _needs(self, self.type)
        return self


class ResponsesTool(_Open):
    """A Responses API tool: a function or custom tool, not nested as chat's."""
    type: Literal["function", "custom"]
    name: ToolName
    description: Optional[str] = None
    parameters: Parameters = None
    strict: Optional[bool] = None
    format: Any = None
