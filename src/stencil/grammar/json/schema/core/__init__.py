"""JSON Schema, phase 0: what every phase shares and nothing above it: the normalized schema
model (:mod:`.model`), number and string formulas (:mod:`.formulas`) with the languages their
atoms name (ECMA patterns, :mod:`.patterns`; formats, :mod:`.formats`), options and ``$ref``
resolution (:mod:`.resolve`). Imports nothing from ``lang``, ``read`` or ``emit``."""
