"""The fields a request may hold, as pydantic models: a field the server does not know is a 400
naming it (it might change the output, and the server would ignore it), a new field of the wrong
type or range a 400 naming it with pydantic's reason.

Fields typed ``Any`` here are checked by the service's own checks (``protocol.number``, ``flag``,
``stop_list``, ``constraints``), whose messages the clients already rely on; the models list them
so that only unknown fields are refused.

Example::

    req = parse_request(ChatRequest, {"messages": [...], "top_k": 40})   # RequestError on a bad one
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stencil.aligned import DEFAULT_PARTICLES, MAX_PARTICLES
from stencil.server.protocol import RequestError

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
    # checked by the service (protocol.number/flag/stop_list), with their own messages
    max_tokens: Any = None
    temperature: Any = None
    top_p: Any = None
    seed: Any = None
    stop: Any = None
    n: Any = None
    stream: Any = None
    repetition_penalty: Any = None  # vLLM's
    ignore_eos: Any = None  # vLLM's
    # constraints, checked by constraints.constraint_for
    response_format: Any = None
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
    #: (``stencil.aligned``, over ``particles`` rows per choice) instead of the masked one
    sampling: Optional[Literal["plain", "aligned"]] = None
    particles: Optional[int] = Field(None, ge=1, le=MAX_PARTICLES)


class ChatRequest(_Request):
    """``/v1/chat/completions``."""

    messages: Any = None  # checked as the prompt is built (the messages' own paths in errors)
    max_completion_tokens: Any = None
    tools: Any = None
    tool_choice: Any = None
    parallel_tool_calls: Any = None
    logprobs: Optional[bool] = None
    top_logprobs: Optional[int] = Field(None, ge=0, le=20)
    #: stencil's own: the tool-call format ("auto": the model family's; "generic": <tool_call> JSON)
    tool_format: Optional[str] = None


class CompletionRequest(_Request):
    """``/v1/completions``."""

    prompt: Any = None
    logprobs: Optional[int] = Field(None, ge=0, le=5)  # the number of top log-probabilities
    echo: Optional[Literal[False]] = None
    suffix: Optional[Literal[""]] = None
    #: stencil's own: token healing of the prompt (its end generated again; the choice's healed_prefix)
    heal: Optional[bool] = None


def parse_request(model: type[_Strict], body: dict) -> Any:
    """``body`` as ``model``; the first error as a RequestError naming its field."""
    try:
        return model.model_validate(body)
    except ValidationError as e:
        err = e.errors()[0]
        param = _path(err["loc"])
        if err["type"] == "extra_forbidden":
            raise RequestError(f"{param} is not supported by this server (it would change the output, and stencil "
                               "does not implement it)", param=param, code="unsupported_parameter") from None
        raise RequestError(f"{param}: {err['msg']}, got {err.get('input')!r}", param=param) from None


def _path(loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def logprobs_count(req) -> Optional[int]:
    """How many top log-probabilities each token reports (None: no log-probabilities)."""
    if isinstance(req, ChatRequest):
        if req.top_logprobs is not None and not req.logprobs:
            raise RequestError("top_logprobs needs logprobs: true", param="top_logprobs")
        return (req.top_logprobs or 0) if req.logprobs else None
    return req.logprobs


def logit_bias(req, vocab_size: int) -> Optional[dict[int, float]]:
    """``logit_bias`` with token ids as ints, each checked against the vocabulary."""
    if not req.logit_bias:
        return None
    out = {}
    for k, v in req.logit_bias.items():
        # ASCII digits, few of them: int() refuses "²" (a digit to isdigit) and 5,000-digit strings
        if not (k.isascii() and k.isdigit() and len(k) <= 12) or int(k) >= vocab_size:
            raise RequestError(f"logit_bias key {k!r} is not a token id of this model (0 to {vocab_size - 1})",
                               param=f"logit_bias.{k}")
        out[int(k)] = v
    return out


def aligned_particles(req, p: dict) -> Optional[int]:
    """``sampling: "aligned"``: the particles of each choice (None: plain sampling), or a
    RequestError for a parameter it does not combine with (``p``: the request's checked
    parameters). Its target is the model's distribution at the temperature, after penalties and
    ``logit_bias``, conditioned on the constraint: truncations would change it, log-probabilities
    and drafts belong to one token at a time."""
    if req is None or req.sampling != "aligned":
        if req is not None and req.particles is not None:
            raise RequestError('particles needs sampling: "aligned"', param="particles")
        return None
    refused = [name for name, on in (
        ("temperature: 0", p["temperature"] <= 0.0), ("top_p", p["top_p"] < 1.0),
        ("top_k", req.top_k not in (None, 0, -1)), ("min_p", bool(req.min_p)),
        ("logprobs", p["logprobs"] is not None), ("speculate: true", req.speculate),
        ("ignore_eos", p["ignore_eos"]), ("heal", getattr(req, "heal", None))) if on]
    if refused:
        raise RequestError(f'sampling: "aligned" does not combine with {", ".join(refused)}', param="sampling")
    return req.particles or DEFAULT_PARTICLES
