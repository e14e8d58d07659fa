"""Tagged formats: compositions of the syntaxes of ``grammar/``, text with markers around
constrained parts, rather than syntaxes of their own.

- ``triggers``: free text, then a constrained part (reasoning, then an answer; text with tool calls);
- ``structural_tag``: XGrammar's structural tags (tagged regions, sequences, tool calls);
- ``xml_params``: a JSON Schema object written as ``<parameter=name>`` blocks (Qwen3-Coder);
- ``tool_presets``: each model family's tool-call text, as a structural tag.

Each builds on the bound ``GrammarBuilder`` and calls the JSON Schema, regex and GBNF front-ends
for its parts. (Not ``grammar/formats``: that was the old name of JSON Schema's string formats,
``json/schema/core/formats.py``, and one word keeps one meaning.)
"""
