"""Partial results in streams, stencil's extension (issue 45): with ``stream_options:
{"include_partial": true}`` a streamed chat completion carries, on each choice of a chunk that
holds content, ``"partial"``: what is settled of the JSON answer so far (``stencil.PartialResult``
as JSON: ``value``, ``complete_paths``, ``open_path``, ``missing_required``), and so does each
``response.output_text.delta`` and ``.done`` event of a streamed Responses answer. A client reads
the object from it without parsing any text. The choice's last chunk (the one with its
``finish_reason``) carries the final one.

It is computed from the answer's bytes as the grammar accepted them (``stencil.partial``), and
only for a JSON answer (``response_format`` ``json_schema`` or ``json_object``, or
``structured_outputs`` ``json``, with or without ``reasoning``); asked for elsewhere it is a 400
naming ``stream_options.include_partial``.

Example (the ``openai`` client)::

    stream = client.chat.completions.create(model=m, messages=..., response_format=fmt, stream=True,
                                            stream_options={"include_partial": True})
    for chunk in stream:
        partial = chunk.choices[0].model_extra.get("partial")   # {"value": {...}, "open_path": [...], ...}
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from stencil.partial import PartialTracker
from stencil.server.protocol import RequestError

__all__ = ["PARAM", "partial_schema", "ChoicePartials", "job_complete"]

log = logging.getLogger("stencil.server")

PARAM = "stream_options.include_partial"

#: the compile calls of a JSON answer, whose first argument is its schema
_JSON_ANSWERS = ("compile_json_schema", "compile_reasoning_json")


def partial_schema(req: Any, c: Any) -> Any:
    """The JSON Schema of the answer where the request asks for partial results, else None; a
    RequestError naming the field where the answer is not JSON."""
    opts = getattr(req, "stream_options", None)
    if opts is None or not opts.include_partial:
        return None
    if not getattr(req, "stream", False):
        raise RequestError(f"{PARAM} is only allowed with stream: true", param=PARAM)
    if c.tools or getattr(c.fn, "__name__", None) not in _JSON_ANSWERS:
        raise RequestError(f"{PARAM} needs a JSON answer: response_format json_schema or json_object, or "
                           "structured_outputs json (partial results are read from the JSON being written)",
                           param=PARAM, code="unsupported_parameter")
    return c.args[0]


def job_complete(job: Any) -> bool:
    """Whether a finished job's text is its grammar's whole output ("stop" without stop strings:
    EOS, the grammar's end, or the budget closing it), so that a number at its very end is final."""
    return job.result.finish_reason == "stop" and not job.params.stop and not job.result.error


class ChoicePartials:
    """One choice's partial results as its content grows: ``feed(content)`` returns the snapshot
    after it as JSON; ``end(complete)`` the final one (a number at the very end settles when the
    output is ``complete``)."""

    def __init__(self, schema: Any):
        self.tracker: Optional[PartialTracker] = PartialTracker(schema)

    def feed(self, content: str) -> Optional[dict]:
        return self._snapshot(lambda t: t.feed(content))

    def end(self, complete: bool) -> Optional[dict]:
        return self._snapshot(lambda t: t.finish() if complete and not t.done else None)

    def _snapshot(self, step) -> Optional[dict]:
        t = self.tracker
        if t is None:
            return None
        try:
            step(t)
        except ValueError:   # (the grammar holds the text to JSON: this would be a bug; the stream goes on)
            log.exception("partial results stopped: the answer is not read as JSON")
            self.tracker = None
            return None
        return t.snapshot().to_json()
