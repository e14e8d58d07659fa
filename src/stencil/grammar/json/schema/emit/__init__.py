"""JSON Schema, phase 3: emitting normalized schemas as grammar rules (:mod:`.emitter`, with
:mod:`.arrays` and :mod:`.objects`). Imports ``core``, ``lang`` and ``read.disjoint``."""
