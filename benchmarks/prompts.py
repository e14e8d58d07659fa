"""What the generation benchmarks share with ``stencil generate``, so that they measure what it
does: the JSON layout of a schema's output and the system message that gives the model the schema.
(The command line is not imported: the benchmarks use the library's public API only.)"""
from __future__ import annotations

import json
from typing import Any

#: the indentation ``stencil generate`` lays JSON Schema output out with by default
INDENT = 2


def schema_system_message(schema: Any) -> str:
    """The system message ``stencil generate`` gives the model for ``schema``."""
    return "Answer with JSON that follows this JSON Schema:\n" + json.dumps(schema)
