"""A generation as an iterator of typed partial Pydantic objects: :func:`stream_partial`.

The model's JSON Schema is compiled (with the spellings ``stencil generate`` uses: compact, plain
strings and numbers) and ``stencil.runtime.generate`` runs on a thread of its own with ``on_partial``; the
iterator yields a partial object (:func:`stencil.partial.typed.partial_object`: fields not written
yet are None) each time its fields change, and last, when the output is complete, the
object validated by the model (``model_validate_json`` of the whole text). Leaving the loop early
(``close()``, the end of a ``with`` block, or a ``break`` out of a loop over a stream no name
holds) stops the generation at its next step.

Example::

    class Person(pydantic.BaseModel):
        name: str
        born: int

    stream = stencil.runtime.stream_partial(lm, Person, "Describe Marie Curie as JSON.", max_tokens=40)
    for person in stream:
        print(person)                 # Person(name='Ma', born=None) ... Person(name='Marie Curie', born=1867)
    stream.result.finish_reason       # the GenerationResult; stream.snapshot: the last PartialResult
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Optional

from stencil.compiler import GrammarCompiler
from stencil.partial.result import PartialResult
from stencil.partial.typed import partial_object
from stencil.runtime.generate import GenerationResult, generate

__all__ = ["stream_partial", "PartialStream", "STREAM_OPTIONS"]

#: the JSON Schema options ``stream_partial`` compiles with by default (those of ``stencil generate``)
STREAM_OPTIONS = {"whitespace": "compact", "string_spelling": "plain", "number_spelling": "plain"}

_SNAPSHOT, _DONE, _ERROR = "snapshot", "done", "error"


class _Stopped(Exception):
    """Raised inside the generation when the iterator was closed."""


def stream_partial(lm: Any, model: Any, prompt: Optional[str] = None, *, compiler: Optional[GrammarCompiler] = None,
                   schema_options: Optional[dict] = None, **generate_options: Any) -> PartialStream:
    """Generate an instance of the Pydantic model class ``model`` from ``lm`` and iterate over it
    as it is written: partial objects, then the validated one (see the module's docstring).

    ``compiler``: a ``GrammarCompiler`` for ``lm``'s tokenizer (its cache is reused; default a
    new one); ``schema_options``: the JSON Schema options (default :data:`STREAM_OPTIONS`); the
    other keyword arguments go to ``stencil.runtime.generate`` (``max_tokens``, ``temperature``,
    ``messages``, ...).

    Example::

        for obj in stencil.runtime.stream_partial(lm, Person, "Describe Ada Lovelace as JSON."):
            print(obj.name)             # None, then the name as it grows
    """
    if not (isinstance(model, type) and hasattr(model, "model_json_schema")):
        raise TypeError(f"stream_partial needs a Pydantic model class, got {model!r}")
    schema = model.model_json_schema()
    compiler = compiler or GrammarCompiler(lm.tokenizer_info)
    grammar = compiler.compile_json_schema(schema, **(STREAM_OPTIONS if schema_options is None else schema_options))
    return PartialStream(model, lambda on_partial: generate(lm, grammar, prompt, on_partial=on_partial,
                                                            partial_schema=schema, **generate_options))


class PartialStream:
    """The iterator :func:`stream_partial` returns. ``result``: the ``GenerationResult`` once the
    generation ended (None before, or when closed early); ``snapshot``: the latest
    :class:`PartialResult`. A context manager: its end closes it."""

    def __init__(self, model: Any, run: Any):
        self.model = model
        self.result: Optional[GenerationResult] = None
        self.snapshot: Optional[PartialResult] = None
        self._run = run
        self._queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._ended = False
        self._last: Any = None

    def __iter__(self) -> PartialStream:
        return self

    def __next__(self) -> Any:
        if self._thread is None:
            # (the thread holds the queue and the event, not the stream: a stream dropped early stops it)
            self._thread = threading.Thread(target=_work, args=(self._run, self._queue, self._stop),
                                            name="stencil-stream-partial", daemon=True)
            self._thread.start()
        while not self._ended:
            kind, item = self._queue.get()
            if kind == _SNAPSHOT:
                self.snapshot = item
                if item.value is None or item.complete:
                    continue   # (the complete value comes validated, below)
                obj = partial_object(self.model, item.value)
                if obj == self._last:
                    continue   # nothing new in the model's fields
                self._last = obj
                return obj
            self._ended = True
            if kind == _ERROR:
                raise item
            self.result = item
            if item is not None and item.complete:
                return self.model.model_validate_json(item.text)
        raise StopIteration

    def close(self) -> None:
        """Stop the generation (at its next step) and wait for its thread."""
        self._stop.set()
        self._ended = True
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> PartialStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self._stop.set()   # (a stream left without close(): its generation stops at its next step)


def _work(run: Any, out: queue.Queue, stop: threading.Event) -> None:
    """The generation's thread: each snapshot into ``out``, then the result or the error."""
    def on_partial(snap: PartialResult) -> None:
        if stop.is_set():
            raise _Stopped
        out.put((_SNAPSHOT, snap))
    try:
        out.put((_DONE, run(on_partial)))
    except _Stopped:
        out.put((_DONE, None))
    except BaseException as e:  # noqa: BLE001 - raised again in the iterating thread
        out.put((_ERROR, e))
