"""Default limits are defined once (the core's CompileLimits and BuilderLimits) and read by the
bindings and by Python: the compiler's defaults, and the front-ends' repetition limit."""
import inspect
import re

import pytest

import stencil
from stencil import _core
from stencil.grammar.ebnf import gbnf
from stencil.grammar.ebnf.lark import parser as lark_parser
from stencil.grammar.regex import parser as regex_parser

LIMITS = _core.DEFAULT_LIMITS


def test_default_limits_are_a_read_only_mapping():
    assert LIMITS["max_repeat"] > 0 and LIMITS["max_lexer_states"] > 0
    with pytest.raises(TypeError):
        LIMITS["max_repeat"] = 1


def test_compiled_grammar_defaults_are_the_core_limits():
    # nanobind writes the bound defaults into the signature line of the docstring
    sig = _core.CompiledGrammar.__init__.__doc__
    for name in ("max_lexer_states", "lexer_fuel", "mask_cache_bytes", "lexer_memory_bytes"):
        assert re.search(rf"\b{name}: int = {LIMITS[name]}\b", sig), name


def test_grammar_compiler_defaults_are_the_core_limits():
    params = inspect.signature(stencil.GrammarCompiler.__init__).parameters
    for name in ("max_lexer_states", "lexer_fuel", "mask_cache_bytes", "lexer_memory_bytes"):
        assert params[name].default == LIMITS[name], name


def test_front_end_repetition_limit_is_the_builders():
    limit = LIMITS["max_repeat"]
    assert gbnf.MAX_REPEAT == lark_parser.MAX_REPEAT == regex_parser.MAX_REPEAT == limit
    b = stencil.GrammarBuilder()
    item = b.lexeme(b.re_literal("a"))
    b.repeat(item, 0, limit)   # at the limit: accepted by the core
    with pytest.raises(stencil.BudgetError, match=str(limit)):   # the core's limit: a LimitError
        b.repeat(item, 0, limit + 1)
    # past it, each front-end refuses the count before the core sees it, naming the same limit
    with pytest.raises(stencil.GrammarError, match=f"limit of {limit}"):
        gbnf.gbnf_grammar(f'root ::= "a"{{0,{limit + 1}}}')
    with pytest.raises(stencil.GrammarError, match=str(limit)):
        stencil.grammar.regex.parse_regex(f"a{{0,{limit + 1}}}")
