"""Front-ends that turn user grammars (regex, JSON Schema, Lark, GBNF, ...) into the core's IR."""
