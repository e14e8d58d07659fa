"""JSON Schema, phase 1: scalar lexemes. Number and string constraints become regular expressions
in the core's builder (:mod:`.numbers`, :mod:`.strings`, :mod:`.scalars`). Imports only ``core``."""
