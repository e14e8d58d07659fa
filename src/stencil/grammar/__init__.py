"""Front-ends that turn user grammars (regex, JSON Schema, Lark, GBNF, ...) into the core's IR.

Layout, one folder per family of syntaxes: ``regex/`` (the regex front-end and the regex tools
the others share), ``ebnf/`` (the grammar AST, GBNF and Lark), ``json/`` (generic JSON values and
JSON Schema); ``choice`` and ``pydantic`` are single modules. ``tagged/`` holds the compositions of
those syntaxes: ``triggers`` (free text, then a constrained part), ``structural_tag`` (with
``xml_params``) and ``tool_presets``.
"""
