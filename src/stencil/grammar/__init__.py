"""Front-ends that turn user grammars (regex, JSON Schema, Lark, GBNF, ...) into the core's IR.

Layout, one folder per family of syntaxes: ``regex/`` (the regex front-end and the regex tools
the others share), ``ebnf/`` (the grammar AST, GBNF and Lark), ``json/`` (generic JSON values and
JSON Schema); ``choice``, ``pydantic`` and ``triggers`` (free text, then a constrained part) are
single modules.
"""
