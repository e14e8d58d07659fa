"""The read-only Python view of a built Grammar (Grammar.nonterminals, start, rules, lexemes,
checks) shows the one IR the core compiles: checked against the core's own printout (str(g)) on
grammars from each front-end, and on what only the view can tell apart."""
import pytest

import stencil
from stencil.grammar.ebnf.gbnf import gbnf_grammar
from stencil.grammar.json.schema import json_schema_grammar
from stencil.grammar.tagged.triggers import reasoning_then


def _printed(g) -> list[str]:
    """The rule and lexeme lines of str(g), rebuilt from the view in the printer's format."""
    names, lexemes = g.nonterminals, g.lexemes
    lines = []
    for lhs, rhs in g.rules:
        body = [names[i] if kind == "rule" else lexemes[i]["name"] for kind, i in rhs]
        lines.append(f"{names[lhs]} ->" + ("".join(" " + s for s in body) if body else " ε"))
    for lex in lexemes:
        flags = (" (ignored)" if lex["ignore"] else "") + (" (lazy)" if lex["lazy"] else "")
        value = "special tokens" + "".join(f" {t}" for t in lex["token_ids"]) if lex["special"] else lex["regex"]
        lines.append(f"{lex['name']}{flags} = {value}")
    return lines


GRAMMARS = {
    "gbnf": lambda: gbnf_grammar('root ::= "a" root | [0-9]+ ("," [0-9]+)*'),
    "json schema": lambda: json_schema_grammar({"type": "array", "uniqueItems": True,
                                                "items": {"type": "object", "required": ["k"],
                                                          "properties": {"k": {"enum": ["x", "y"]}}}}),
    "regex": lambda: _regex_grammar(r"[a-z]{2,5}@(com|org)"),
}


def _regex_grammar(pattern):
    from stencil.grammar.regex import build_regex
    b = stencil.GrammarBuilder()
    start = b.rule("start")
    b.add_alternative(start, [b.lexeme(build_regex(b, pattern), "re")])
    return b.build(start)


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_view_matches_the_core_printout(name):
    g = GRAMMARS[name]()
    printed = [line for line in str(g).splitlines() if not line.startswith("check ")]
    assert _printed(g) == printed
    assert len(g.rules) == g.num_rules and len(g.lexemes) == g.num_lexemes


def test_start_rule_and_symbol_indices():
    g = gbnf_grammar('root ::= "a" root | "b"')
    (lhs, rhs), = [r for r in g.rules if r[0] == g.start]
    assert g.nonterminals[lhs] == "__start" and len(rhs) == 1 and rhs[0][0] == "rule"
    for _, body in g.rules:
        for kind, i in body:
            assert 0 <= i < (len(g.nonterminals) if kind == "rule" else len(g.lexemes))


def test_checks_and_lexeme_flags():
    g = json_schema_grammar({"type": "array", "uniqueItems": True, "items": {"type": "integer"}})
    kinds = {c["kind"] for c in g.checks}
    assert "unique_item" in kinds
    assert all(g.nonterminals[c["rule"]] for c in g.checks)
    assert any(lex["ignore"] for lex in g.lexemes)      # flexible white space
    objects = json_schema_grammar({"type": "object", "properties": {"a": {}}, "required": ["a"]},
                                  property_order="any")
    keys = [c for c in objects.checks if c["kind"] == "object_keys"]
    assert keys and keys[0]["names"] == [b"a"] and keys[0]["min"] == 0


def test_special_token_lexemes(deepseek):
    think_end = deepseek.info.special_token_ids[0]
    b = stencil.GrammarBuilder()
    answer = b.rule("answer")
    b.add_alternative(answer, [b.literal("ok", "ok")])
    g = b.build(reasoning_then(b, answer, begin=None, end=think_end))
    specials = [lex for lex in g.lexemes if lex["special"]]
    assert specials and specials[0]["regex"] is None and specials[0]["token_ids"] == [think_end]
    assert not any(lex["special"] for lex in GRAMMARS["gbnf"]().lexemes)
