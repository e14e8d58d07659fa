"""The typed front door (issue 29): the JSON Schema options of ``compile_json_schema`` and its
siblings are typed (``stencil.JsonSchemaOptions``), every one declared once there with its default
and what it does (``Options`` is built from it); an unknown option is a TypeError naming it, a
wrong value a GrammarError naming the option; every error stencil raises is a
``stencil.StencilError``."""
from __future__ import annotations

import ast
import dataclasses
import inspect
import typing

import numpy as np
import pytest

import stencil
import stencil.runtime
import stencil.schema_options
from stencil.grammar.json.schema.core.options import Options, dataclass_of

OPTION_NAMES = [f.name for f in dataclasses.fields(Options)]

#: the methods whose **options (or **json_options) are the JSON Schema options
TYPED_METHODS = ("compile_json_schema", "compile_json", "compile_pydantic", "compile_reasoning_json",
                 "compile_structural_tag")

#: a value of the wrong type for each option (a new option must add one here)
WRONG_TYPED = {
    "whitespace": 1.5, "max_whitespace_run": "32", "property_order": 0, "lenient": "yes", "max_depth": "32",
    "assert_content": 1, "key_spelling": None, "string_spelling": b"any", "number_spelling": 0,
    "whitespace_pattern": 3, "item_separator": 3, "key_separator": [","], "escapes": 3, "whitespace_around": "no",
}

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}


def test_every_option_is_declared_with_a_default_and_a_docstring():
    """JsonSchemaOptions is the one declaration (Options is built from it): each field says its
    default (Annotated[type, Default(value)]) and what it does (the docstring under it)."""
    hints = typing.get_type_hints(stencil.JsonSchemaOptions, include_extras=True)
    assert list(hints) == OPTION_NAMES
    for f in dataclasses.fields(Options):
        default, = [m for m in hints[f.name].__metadata__ if isinstance(m, stencil.schema_options.Default)]
        assert f.default == default.value and f.type == typing.get_args(hints[f.name])[0], f.name
    assert stencil.JsonSchemaOptions.__required_keys__ == frozenset()   # every option is optional
    tree = ast.parse(inspect.getsource(stencil.schema_options))
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "JsonSchemaOptions").body
    documented = [a.target.id for a, doc in zip(body, body[1:]) if isinstance(a, ast.AnnAssign)
                  and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)]
    assert documented == OPTION_NAMES


def test_an_option_without_a_default_is_refused_when_options_are_built():
    class Declared(typing.TypedDict, total=False):
        plain: int

    with pytest.raises(TypeError, match="Declared.plain has no Default"):
        dataclass_of(Declared)(type("Checked", (), {}))


@pytest.mark.parametrize("method", TYPED_METHODS)
def test_methods_type_their_options(method):
    fn = getattr(stencil.GrammarCompiler, method)
    assert fn.__wrapped__, "compile_* run under the compile deadline"
    params = inspect.signature(fn).parameters
    var_kw = [p for p in params.values() if p.kind is p.VAR_KEYWORD]
    assert [p.annotation for p in var_kw] == ["Unpack[JsonSchemaOptions]"]
    assert "JsonSchemaOptions" in inspect.getdoc(fn) or method == "compile_reasoning_json" \
        or method == "compile_structural_tag"


def test_registry_and_info_are_keyword_only_arguments(compiler):
    params = inspect.signature(stencil.GrammarCompiler.compile_json_schema).parameters
    assert params["registry"].kind is params["info"].kind is inspect.Parameter.KEYWORD_ONLY
    info = stencil.SchemaInfo()
    uri = "https://example.com/other.json"
    g = compiler.compile_json_schema({"$ref": f"{uri}#/$defs/n"}, registry={uri: {"$defs": {"n": {
        "type": "integer", "format": "x-mine"}}}}, info=info)
    assert list(info.unknown_formats) == ["x-mine"]
    m = stencil.Matcher(g)
    assert m.accept_string("42") and m.is_accepting()
    assert not stencil.Matcher(g).accept_string('"42"')   # the registry's integer, not any value


def test_defaults_come_from_options(compiler):
    """Each option given at Options's default compiles the same grammar as no option at all."""
    plain = compiler.compile_json_schema(SCHEMA)
    defaults = {name: getattr(Options(), name) for name in OPTION_NAMES}
    assert compiler.compile_json_schema(SCHEMA, **defaults) is plain   # the same cache entry: the same IR
    compact = compiler.compile_json_schema(SCHEMA, whitespace="compact")
    assert compact is not plain


def test_unknown_option_is_a_type_error_naming_it(compiler):
    for method, args in (("compile_json_schema", (SCHEMA,)), ("compile_json", ())):
        with pytest.raises(TypeError, match="unknown JSON Schema option.*whitespaces"):
            getattr(compiler, method)(*args, whitespaces="compact")


@pytest.mark.parametrize("name", OPTION_NAMES)
def test_wrong_typed_option_is_a_grammar_error_naming_it(compiler, name):
    assert name in WRONG_TYPED, f"add a wrong-typed value of the new option {name}"
    extra = {"string_spelling": "controls"} if name == "escapes" else {}
    with pytest.raises(stencil.GrammarError, match=rf"\b{name} must be"):
        compiler.compile_json_schema(SCHEMA, **{name: WRONG_TYPED[name]}, **extra)


@pytest.mark.parametrize("name", ["property_order", "key_spelling", "string_spelling", "number_spelling"])
def test_a_literal_option_takes_exactly_its_type_s_values(name):
    """The values are written once, in the option's Literal type (stencil.schema_options): the check
    and its message follow it."""
    values = typing.get_args(typing.get_type_hints(stencil.JsonSchemaOptions)[name])
    assert len(values) >= 2
    for v in values:
        assert getattr(Options.make(**{name: v}), name) == v
    with pytest.raises(stencil.GrammarError) as e:
        Options.make(**{name: "nope"})
    assert str(e.value) == f"{name} must be {', '.join(map(repr, values[:-1]))} or {values[-1]!r}, got 'nope'"


def test_bool_options_refuse_truthy_values(compiler):
    """lenient="no" would have been truthy: a bool option takes True or False only."""
    with pytest.raises(stencil.GrammarError, match="lenient must be True or False, got 'no'"):
        compiler.compile_json_schema({"type": "string", "contentSchema": {}}, lenient="no")


def test_checked_options_are_kept_by_their_values_and_types():
    """Options.make keeps what it checked: the same arguments give the same (frozen) options, and a
    value equal to a valid one but of another type is still checked (True == 1, 1.0 == 1)."""
    from stencil.grammar.json.schema.core.options import Options
    a = Options.make(whitespace=2, property_order="any")
    assert Options.make(property_order="any", whitespace=2) is a
    assert a.indent == 2 and a.property_order == "any"
    for wrong in (True, 2.0):
        with pytest.raises(stencil.GrammarError, match="whitespace must be"):
            Options.make(whitespace=wrong, property_order="any")
    assert Options.make(whitespace=2, property_order="any") is a
    with pytest.raises(stencil.GrammarError, match="escapes must be"):
        Options.make(escapes=["n"], string_spelling="controls")   # (unhashable: checked, not kept)


# -- errors ------------------------------------------------------------------------------------

def _exported_exceptions():
    return {name: getattr(stencil, name) for name in stencil.__all__
            if isinstance(getattr(stencil, name), type) and issubclass(getattr(stencil, name), BaseException)}


def test_every_exported_error_derives_from_stencil_error():
    errors = _exported_exceptions()
    assert {"StencilError", "GrammarError", "BudgetError", "TimeLimitExceeded", "CompileTimeout", "UsageError",
            "ConcurrentUseError"} <= set(errors)
    assert [n for n, e in errors.items() if not issubclass(e, stencil.StencilError)] == []
    assert issubclass(stencil.runtime.ModelError, stencil.StencilError)   # the runtime's (stencil.runtime)
    # the builtin bases stay: code that caught ValueError or RuntimeError still does
    assert issubclass(stencil.GrammarError, ValueError) and issubclass(stencil.UsageError, ValueError)
    assert issubclass(stencil.ConcurrentUseError, RuntimeError)
    assert stencil.StencilError.__module__ == "stencil._core"


def test_every_core_error_is_exported():
    core = {n for n in dir(stencil._core) if isinstance(getattr(stencil._core, n), type)
            and issubclass(getattr(stencil._core, n), BaseException)}
    assert core - set(stencil.__all__) == set()


def test_stencil_error_catches_a_grammar_error_from_a_bad_schema(compiler):
    with pytest.raises(stencil.StencilError) as e:
        compiler.compile_json_schema({"type": "strnig"})
    assert type(e.value) is stencil.GrammarError and "strnig" in str(e.value)


def test_stencil_error_catches_a_budget_error():
    b = stencil.GrammarBuilder()
    with pytest.raises(stencil.StencilError) as e:
        b.repeat(b.literal("a"), 0, 10**9)
    assert type(e.value) is stencil.BudgetError and "repetition count" in str(e.value)


LIMITS = (stencil.BudgetError, stencil.TimeLimitExceeded, stencil.CompileTimeout)


@pytest.mark.parametrize("limit", LIMITS)
def test_a_limit_is_a_limit_error_and_no_grammar_error(limit):
    """Time (TimeLimitExceeded, CompileTimeout), work and memory (BudgetError) limits: one branch
    under StencilError beside GrammarError (issue 42); still ValueErrors, as they were."""
    assert issubclass(limit, stencil.LimitError) and issubclass(limit, stencil.StencilError)
    assert issubclass(limit, ValueError) and not issubclass(limit, stencil.GrammarError)
    assert not issubclass(stencil.GrammarError, stencil.LimitError)
    assert issubclass(stencil.TimeLimitExceeded, stencil.BudgetError) is False   # a time limit is no work limit


def test_limit_error_catches_the_core_s_limits(compiler):
    """Raised for real: a work limit of the builder, a matcher's time limit, a compile's deadline;
    an ``except GrammarError`` catches none of them."""
    b = stencil.GrammarBuilder()
    slow = compiler.compile_json_schema({"enum": list(range(0, 140_000, 7))})
    timed = stencil.GrammarCompiler(compiler.tokenizer_info, compile_timeout=0.05)
    many = {"type": "object", "properties": {f"p{i}": {"type": "string", "pattern": f"^x{i}[a-z]*$"}
                                             for i in range(20_000)}}
    bm = stencil.allocate_token_bitmask(1, compiler.tokenizer_info.vocab_size)
    calls = [(stencil.BudgetError, lambda: b.repeat(b.literal("a"), 0, 10**9)),
             (stencil.TimeLimitExceeded, lambda: stencil.Matcher(slow, time_limit=0.001).fill_next_token_bitmask(bm, 0)),
             (stencil.CompileTimeout, lambda: timed.compile_json_schema(many))]
    for kind, call in calls:
        try:
            try:
                call()
            except stencil.GrammarError:
                pytest.fail(f"{kind.__name__} was caught as a GrammarError")
        except stencil.LimitError as e:
            assert type(e) is kind
        else:
            pytest.fail(f"no {kind.__name__}")


def test_stencil_error_catches_a_usage_error(compiler):
    m = stencil.Matcher(compiler.compile_regex("[0-9]+"))
    bitmask = stencil.allocate_token_bitmask(2, compiler.tokenizer_info.vocab_size)
    with pytest.raises(stencil.StencilError) as e:
        stencil.fill_next_token_bitmasks([m, m], bitmask)
    assert isinstance(e.value, stencil.UsageError) and "twice" in str(e.value)
    assert np.asarray(bitmask).shape[0] == 2


def test_model_error_is_a_stencil_error(tmp_path):
    from stencil.runtime.models import load_model
    with pytest.raises(stencil.StencilError) as e:
        load_model(str(tmp_path / "missing.gguf"))
    assert isinstance(e.value, stencil.runtime.ModelError)


def _keyword_params(fn, leave=()) -> set:
    return {n for n, p in inspect.signature(fn).parameters.items()
            if p.kind is p.KEYWORD_ONLY and n not in leave}


def test_lark_gbnf_and_tool_call_options_name_what_the_front_ends_take():
    """LarkOptions, GbnfOptions and ToolCallOptions (the ``**options`` of compile_lark, compile_gbnf
    and compile_tool_calls) hold exactly the keywords their front-ends take, none forgotten, none
    made up; a wrong one is still a TypeError naming it."""
    from stencil.grammar.ebnf.gbnf import gbnf_grammar
    from stencil.grammar.ebnf.lark import lark_grammar
    from stencil.grammar.tagged.tool_presets import tool_call_format
    from stencil.grammar.tagged.triggers import tool_calls
    assert set(stencil.LarkOptions.__annotations__) == _keyword_params(lark_grammar, {"tokens"})
    assert set(stencil.GbnfOptions.__annotations__) == _keyword_params(gbnf_grammar, {"tokens"})
    trigger = _keyword_params(tool_calls, {"trigger", "end", "name"})
    assert set(stencil.ToolCallOptions.__annotations__) == trigger | _keyword_params(tool_call_format) | {"reasoning"}
    for method, typed in (("compile_lark", "LarkOptions"), ("compile_gbnf", "GbnfOptions"),
                          ("compile_tool_calls", "ToolCallOptions")):
        params = inspect.signature(getattr(stencil.GrammarCompiler, method)).parameters
        assert [p.annotation for p in params.values() if p.kind is p.VAR_KEYWORD] == [f"Unpack[{typed}]"]
    with pytest.raises(TypeError, match="strat"):
        stencil.GrammarCompiler(stencil.TokenizerInfo.from_vocab([b"a", b"</s>"], eos_token_ids=[1])).compile_lark(
            'start: "a"', strat="start")
