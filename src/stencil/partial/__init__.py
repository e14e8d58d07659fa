"""Validated partial results of JSON outputs while they are generated (issue 45).

Under a JSON Schema grammar every prefix of the output is a prefix of a valid output, so what is
written is settled exactly: which values are complete and final, which one is being written, which
required properties are still to come. :class:`PartialTracker` reads the accepted bytes as they
come (never the whole text again) and gives a :class:`PartialResult` at any point; no heuristic
repair of half-written JSON is involved.

- :mod:`stencil.partial.result`: :class:`PartialResult` (``value``, ``complete_paths``,
  ``open_path``, ``missing_required``);
- :mod:`stencil.partial.tracker`: :class:`PartialTracker`, the incremental reader;
- :mod:`stencil.partial.schema`: what a snapshot reads of the schema (required properties per path);
- :mod:`stencil.partial.typed`: partial Pydantic objects;
- :mod:`stencil.runtime.stream`: :func:`~stencil.runtime.stream.stream_partial`, a generation
  as an iterator of partial Pydantic objects.

``stencil.runtime.generate(..., on_partial=callback, schema=schema)`` calls ``callback`` with a snapshot
after every step, and ``stencil serve`` streams them with ``stream_options: {"include_partial": true}``.

Example::

    t = stencil.PartialTracker({"type": "object", "required": ["name", "born"]})
    t.feed(b'{"name": "Ma')
    p = t.snapshot()
    p.value, p.open_path, p.missing_required     # {'name': 'Ma'}, ('name',), (('born',),)
"""
from stencil.partial.result import PartialResult, Path
from stencil.partial.tracker import PartialTracker

__all__ = ["PartialResult", "PartialTracker", "Path"]
