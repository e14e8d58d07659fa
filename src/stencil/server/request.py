"""One pydantic model per route, whose values are checked once, here: types, ranges (some of them
the server's: ``RequestBounds``, the validation context), finite numbers, and the fields that
must go together. The service then reads checked values (``generation_params``,
``sampling_params``, ``template_messages``), never the raw body again; the constraint's fields
(``response_format``, ``tools``, ...: ``constraints.constraint_for``) are read from the body,
the shapes of ``response_format`` and ``tools`` checked here (``server.shapes``), as are the
messages (``server.messages``).

A field the server does not know is a 400 naming it, ``unsupported_parameter`` (it might change
the output, and the server would ignore it); a bad value a 400 naming its field, with the
messages clients rely on ("temperature must be between 0.0 and 2.0, got 3").

Example::

    bounds = RequestBounds(max_tokens=4096, max_n=8, vocab_size=49152)
    req = parse_request(ChatRequest, {"messages": [...], "top_k": 40}, bounds)   # RequestError on a bad one
    req.generation_params(bounds.default_max_tokens).max_tokens, req.sampling_params().top_k
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NoReturn, Optional, Union

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, ValidationError,
                      ValidationInfo, field_validator, model_validator)
from pydantic_core import PydanticCustomError, PydanticUseDefault

from stencil.runtime.aligned import DEFAULT_PARTICLES, MAX_PARTICLES
from stencil.server.messages import ChatMessage
from stencil.server.params import GenerationParams, SamplingParams
from stencil.server.protocol import PLACED, UNSUPPORTED, RequestError
from stencil.server.shapes import ChatTool, ResponseFormat

__all__ = ["ChatRequest", "CompletionRequest", "RequestBounds", "StreamOptions", "parse_request"]

#: the error type of the checks below: its message is the whole message, ``param`` (where given) the field
_REFUSED = "stencil_refused"


@dataclass(frozen=True)
class RequestBounds:
    """The server's side of the checks: the largest ``max_tokens`` (None: none), the most choices
    (``n``) and the model's vocabulary (``logit_bias`` keys)."""

    max_tokens: Optional[int]
    max_n: int
    vocab_size: int

    @property
    def default_max_tokens(self) -> int:
        """``max_tokens`` of a request that gives none."""
        return min(256, self.max_tokens or 256)


def _bounds(info: ValidationInfo) -> RequestBounds:
    """The server's bounds ``parse_request`` validates with."""
    assert isinstance(info.context, RequestBounds), "parse_request gives the bounds"
    return info.context


def _refuse(message: str, param: Optional[str] = None) -> NoReturn:
    """A validation error whose ``message`` ``parse_request`` answers as it is (``param``: the field
    it names where it is not the one validated)."""
    raise PydanticCustomError(_REFUSED, "{message}", {"message": message, "param": param})


def _number(lo, hi, kind: type = float) -> PlainValidator:
    """A number of type ``kind`` within [lo, hi] (``hi`` a name: that ``RequestBounds`` field);
    null: the field's default."""
    def check(v, info: ValidationInfo):
        if v is None:
            raise PydanticUseDefault()
        key, top = info.field_name, getattr(_bounds(info), hi) if isinstance(hi, str) else hi
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and not isinstance(v, int)):
            _refuse(f"{key} must be a {'integer' if kind is int else 'number'}, got {v!r}")
        if isinstance(v, float) and not math.isfinite(v):  # json reads NaN and Infinity; NaN passes every comparison
            _refuse(f"{key} must be a finite number, got {v!r}")
        if (lo is not None and v < lo) or (top is not None and v > top):   # (before float(): 10**400 overflows it)
            _refuse(f"{key} must be between {lo} and {top}, got {v}")
        return kind(v)
    return PlainValidator(check)


def _flag(v, info: ValidationInfo) -> bool:
    """true or false; null: the field's default."""
    if v is None:
        raise PydanticUseDefault()
    if not isinstance(v, bool):
        _refuse(f"{info.field_name} must be true or false, got {v!r}")
    return v


def _stops(v) -> tuple[str, ...]:
    """A string or a list of at most 4 (empty strings dropped: they would stop at once)."""
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    if isinstance(v, list) and all(isinstance(s, str) for s in v) and len(v) <= 4:
        return tuple(s for s in v if s)
    _refuse("stop must be a string or a list of at most 4 strings")


Flag = Annotated[bool, PlainValidator(_flag)]
Penalty = Annotated[float, Field(ge=-2.0, le=2.0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class StreamOptions(_Strict):
    include_usage: Optional[bool] = None
    #: stencil's own: each chunk's choice carries ``partial``, the settled JSON so far (server.partials)
    include_partial: Optional[bool] = None


class _Unchanging(_Strict):
    """Fields every route takes that change nothing in the output (the model is checked by name)."""

    model: Any = None
    user: Any = None
    metadata: Any = None
    store: Any = None
    service_tier: Any = None
    prompt_cache_key: Any = None
    safety_identifier: Any = None


class _Request(_Unchanging):
    stream: Flag = False
    max_tokens: Annotated[Optional[int], _number(0, "max_tokens", int)] = None
    temperature: Annotated[float, _number(0.0, 2.0)] = 0.0
    top_p: Annotated[float, _number(0.0, 1.0)] = 1.0
    seed: Annotated[Optional[int], _number(0, 2**63 - 1, int)] = None
    stop: Annotated[tuple[str, ...], PlainValidator(_stops)] = ()
    #: vLLM's: > 1 keeps small models out of loops inside strings
    repetition_penalty: Annotated[float, _number(0.5, 2.0)] = 1.0
    #: vLLM's: the end-of-sequence token is never sampled, so an unconstrained row runs to
    #: max_tokens (or a stop string), as benchmarks at equal lengths need
    ignore_eos: Flag = False
    n: Annotated[int, _number(1, "max_n", int)] = 1
    # the constraint's description, read by constraints.constraint_for (paths inside named in its errors)
    response_format: Optional[ResponseFormat] = None
    structured_outputs: Any = None  # vLLM's
    guided: Any = None
    reasoning: Any = None
    grammar: Optional[str] = None  # llama-server's GBNF
    json_schema: Union[dict, bool, None] = None  # llama-server's
    # sampling
    top_k: Optional[int] = Field(None, ge=-1)  # 0 or -1: off (vLLM, llama.cpp)
    min_p: Optional[float] = Field(None, ge=0.0, le=1.0)
    frequency_penalty: Optional[Penalty] = None
    presence_penalty: Optional[Penalty] = None
    logit_bias: Optional[dict[str, Annotated[float, Field(ge=-100.0, le=100.0)]]] = None
    stream_options: Optional[StreamOptions] = None
    #: stencil's own: speculative decoding for this request (None: the server's ``--speculate``)
    speculate: Optional[bool] = None
    #: stencil's own: "aligned" samples from the model's distribution conditioned on the constraint
    #: (``stencil.runtime.aligned``, over ``particles`` rows per choice) instead of the masked one
    sampling: Optional[Literal["plain", "aligned"]] = None
    particles: Optional[int] = Field(None, ge=1, le=MAX_PARTICLES)

    @field_validator("logit_bias")
    @classmethod
    def _token_ids(cls, bias, info: ValidationInfo):
        """Each key a token id of the model's vocabulary."""
        vocab_size = _bounds(info).vocab_size
        for k in bias or ():
            # ASCII digits, few of them: int() refuses "²" (a digit to isdigit) and 5,000-digit strings
            if not (k.isascii() and k.isdigit() and len(k) <= 12) or int(k) >= vocab_size:
                _refuse(f"logit_bias key {k!r} is not a token id of this model (0 to {vocab_size - 1})",
                        f"logit_bias.{k}")
        return bias

    @model_validator(mode="after")
    def _together(self):
        """The fields that go together: stream options with a stream, log-probabilities (each
        route's), aligned sampling with what it combines with."""
        if self.stream_options is not None and not self.stream:
            _refuse("stream_options is only allowed with stream: true", "stream_options")
        self.logprobs_count()
        self.particles_per_choice()
        return self

    def logprobs_count(self) -> Optional[int]:
        """How many top log-probabilities each token reports (None: no log-probabilities)."""
        raise NotImplementedError   # each route's model says

    def particles_per_choice(self) -> Optional[int]:
        """``sampling: "aligned"``: the particles of each choice (None: plain sampling), refused
        with a parameter it does not combine with. Its target is the model's distribution at the
        temperature, after penalties and ``logit_bias``, conditioned on the constraint: truncations
        would change it, log-probabilities and drafts belong to one token at a time."""
        if self.sampling != "aligned":
            if self.particles is not None:
                _refuse('particles needs sampling: "aligned"', "particles")
            return None
        refused = [name for name, on in (
            ("temperature: 0", self.temperature <= 0.0), ("top_p", self.top_p < 1.0),
            ("top_k", self.top_k not in (None, 0, -1)), ("min_p", bool(self.min_p)),
            ("logprobs", self.logprobs_count() is not None), ("speculate: true", self.speculate),
            ("ignore_eos", self.ignore_eos), ("heal", getattr(self, "heal", None))) if on]
        if refused:
            _refuse(f'sampling: "aligned" does not combine with {", ".join(refused)}', "sampling")
        return self.particles or DEFAULT_PARTICLES

    def generation_params(self, default_max_tokens: int) -> GenerationParams:
        """How long each choice runs and what it reports (``default_max_tokens``: where the request
        gives no limit)."""
        limit = self.max_tokens if self.max_tokens is not None else getattr(self, "max_completion_tokens", None)
        return GenerationParams(max_tokens=default_max_tokens if limit is None else limit, stop=self.stop,
                                ignore_eos=self.ignore_eos, logprobs=self.logprobs_count(), speculate=self.speculate,
                                aligned=self.particles_per_choice())

    def sampling_params(self) -> SamplingParams:
        """How each choice's tokens are drawn (``seed``: the first choice's; the engine's jobs add
        their index)."""
        bias = {int(k): v for k, v in self.logit_bias.items()} if self.logit_bias else None
        return SamplingParams(temperature=self.temperature, seed=self.seed, top_p=self.top_p,
                              top_k=self.top_k if self.top_k and self.top_k > 0 else 0, min_p=self.min_p or 0.0,
                              repetition_penalty=self.repetition_penalty,
                              frequency_penalty=self.frequency_penalty or 0.0,
                              presence_penalty=self.presence_penalty or 0.0, logit_bias=bias)

    def include_usage(self) -> bool:
        """``stream_options.include_usage``: a last chunk holds the usage."""
        return bool(self.stream_options and self.stream_options.include_usage)


def _some_messages(v: Any) -> Any:
    if not (isinstance(v, list) and v):
        _refuse("messages must be a non-empty list")
    return v


class ChatRequest(_Request):
    """``/v1/chat/completions``."""

    messages: Annotated[list[ChatMessage], BeforeValidator(_some_messages)] = Field(None, validate_default=True)
    max_completion_tokens: Annotated[Optional[int], _number(0, "max_tokens", int)] = None
    tools: Optional[list[ChatTool]] = None
    tool_choice: Any = None
    parallel_tool_calls: Flag = True
    logprobs: Optional[bool] = None
    top_logprobs: Optional[int] = Field(None, ge=0, le=20)
    #: stencil's own: the tool-call format ("auto": the model family's; "generic": <tool_call> JSON)
    tool_format: Optional[str] = None

    def logprobs_count(self) -> Optional[int]:
        if self.top_logprobs is not None and not self.logprobs:
            _refuse("top_logprobs needs logprobs: true", "top_logprobs")
        return (self.top_logprobs or 0) if self.logprobs else None

    def template_messages(self) -> list[dict]:
        """The messages as the chat template takes them (``ChatMessage.for_template``)."""
        return [m.for_template() for m in self.messages]


def _prompt(v) -> str:
    if not isinstance(v, str) or not v:
        _refuse("prompt must be a non-empty string")
    return v


class CompletionRequest(_Request):
    """``/v1/completions``."""

    prompt: Annotated[str, PlainValidator(_prompt)] = Field(None, validate_default=True)
    logprobs: Optional[int] = Field(None, ge=0, le=5)  # the number of top log-probabilities
    echo: Optional[Literal[False]] = None
    suffix: Optional[Literal[""]] = None
    #: stencil's own: token healing of the prompt (its end generated again; the choice's healed_prefix)
    heal: Optional[bool] = None

    def logprobs_count(self) -> Optional[int]:
        return self.logprobs


def parse_request(model: type[_Strict], body: dict, bounds: RequestBounds) -> Any:
    """``body`` as ``model``, its values checked against ``bounds`` (the server's); the first error
    as a RequestError naming its field (an unknown field first: ``unsupported_parameter``)."""
    try:
        return model.model_validate(body, context=bounds)
    except ValidationError as e:
        errors = e.errors()
        err = next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])
        param = _path(err["loc"])
        if err["type"] == "extra_forbidden":
            raise RequestError(f"{param} is not supported by this server (it would change the output, and stencil "
                               "does not implement it)", param=param, code=UNSUPPORTED) from None
        if err["type"] == _REFUSED:
            raise RequestError(err["msg"], param=err["ctx"]["param"] or param) from None
        if err["type"] == PLACED:   # (protocol.refuse_at: a place under the value validated)
            param = _path(err["loc"] + err["ctx"]["at"])
            raise RequestError(f"{param}: {err['msg']}", param=param, code=err["ctx"]["code"]) from None
        # (a missing field's input is the object that lacks it)
        got = "" if err["type"] == "missing" else f", got {err.get('input')!r}"
        raise RequestError(f"{param}: {err['msg']}{got}", param=param) from None


def _path(loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
