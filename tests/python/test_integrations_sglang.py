"""The SGLang grammar backend (stencil.integrations.sglang) at SGLang's interface: dispatch_*,
fill_vocab_mask, accept_token, rollback, copy, and jump-forward (try_jump_forward,
jump_forward_str_state, jump_and_retokenize) with SmolLM2's real tokenizer; masks equal stencil's
own Matcher step by step. register() needs SGLang itself: make test-integrations.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import stencil
import tokenizers_zoo
from stencil.integrations.sglang import StencilGrammarBackend, StencilGrammarObject, register

HAVE_SGLANG = importlib.util.find_spec("sglang") is not None

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Lima"]},
                                           "temp": {"type": "number"}},
          "required": ["city", "temp"], "additionalProperties": False}


@pytest.fixture(scope="module")
def zoo():
    return tokenizers_zoo.get("smollm2-hf")


@pytest.fixture(scope="module")
def backend(zoo):
    return StencilGrammarBackend(zoo.hf, zoo.info.vocab_size,
                                 json_options={"whitespace": "compact", "string_spelling": "plain"})


def ref_mask(m: stencil.Matcher, vocab: int) -> np.ndarray:
    bm = stencil.allocate_token_bitmask(1, vocab)
    m.fill_next_token_bitmask(bm, 0)
    return bm[0]


@pytest.mark.parametrize("kind,spec,text", [
    ("json", json.dumps(SCHEMA), '{"city":"Lima","temp":-3.5}'),
    ("regex", r"[A-Z][a-z]+ \d+", "Mar 2024"),
    ("ebnf", 'root ::= "<" ("a" | "b")+ ">"', "<abba>"),
])
def test_masks_equal_stencil_matcher_step_by_step(backend, zoo, kind, spec, text):
    g = getattr(backend, f"dispatch_{kind}")(spec).copy()
    assert isinstance(g, StencilGrammarObject)
    ref = stencil.Matcher(g.grammar)
    vocab = backend.tokenizer_info.vocab_size
    mask = StencilGrammarObject.allocate_vocab_mask(vocab, 3, "cpu")
    ids = zoo.encode_batch([text])[0] + [backend.tokenizer_info.eos_token_ids[0]]
    for step, t in enumerate(ids):
        StencilGrammarObject.reset_vocab_mask(mask)
        g.fill_vocab_mask(mask, 1)
        np.testing.assert_array_equal(mask[1].numpy(), ref_mask(ref, vocab), err_msg=f"step {step}")
        g.accept_token(t)
        assert ref.accept_token(t)
    assert g.is_terminated()
    logits = torch.zeros(3, vocab)
    StencilGrammarObject.apply_vocab_mask(logits, mask)   # the last step's mask
    bits = np.unpackbits(mask[1].numpy().view(np.uint8), bitorder="little")[:vocab].astype(bool)
    assert torch.equal(torch.isfinite(logits[1]), torch.from_numpy(bits)) and bits.sum() < vocab // 2
    assert torch.isfinite(logits[0]).all()      # a reset row (no grammar) allows every token


def test_jump_forward_from_forced_tokens(backend, zoo):
    """After '{"city":"' nothing is forced (two cities); after 'L' the rest of "Lima" and
    '","temp":' are forced: try_jump_forward returns that text and Matcher.forced_tokens, and
    following SGLang's retokenization leaves the grammar where the text says."""
    g = backend.dispatch_json(json.dumps(SCHEMA)).copy()
    g.accept_token(backend.tokenizer_info.token_id("{"))
    assert g.try_jump_forward(None) == ([backend.tokenizer_info.token_id('"')], '"city":"')  # one token forced
    for t in zoo.encode_batch(['"city":"'])[0]:
        g.accept_token(t)
    assert g.try_jump_forward(None) is None
    g = g.copy()
    prefix = zoo.encode_batch(['{"city":"L'])[0]
    for t in prefix:
        g.accept_token(t)
    ref = stencil.Matcher(g.grammar)
    assert ref.accept_tokens(prefix) == len(prefix)
    helper = g.try_jump_forward(None)
    assert helper is not None
    forced, text = helper
    assert forced == ref.forced_tokens() and text == 'ima","temp":'
    s, state = g.jump_forward_str_state(helper)
    assert s == text
    # SGLang retokenizes prefix + text: the last token of the prefix may merge with the new text
    new_ids = zoo.encode_batch(['{"city":"L' + text])[0]
    g.jump_and_retokenize(prefix, new_ids, state)
    ref2 = stencil.Matcher(g.grammar)
    assert ref2.accept_tokens(new_ids) == len(new_ids)
    vocab = backend.tokenizer_info.vocab_size
    mask = StencilGrammarObject.allocate_vocab_mask(vocab, 1, "cpu")
    g.fill_vocab_mask(mask, 0)
    np.testing.assert_array_equal(mask[0].numpy(), ref_mask(ref2, vocab))
    assert g.try_jump_forward(None) is None           # a number is free: nothing forced


def test_retokenize_with_a_changed_tail_rolls_back(backend, zoo):
    g = backend.dispatch_regex("abcdef").copy()
    one_by_one = [backend.tokenizer_info.token_id(c) for c in "abc"]
    for t in one_by_one:
        g.accept_token(t)
    merged = zoo.encode_batch(["abcdef"])[0]
    g.jump_and_retokenize(one_by_one, merged, -1)
    g.accept_token(backend.tokenizer_info.eos_token_ids[0])
    assert g.is_terminated()
    g.rollback(1)   # undoes EOS; outside the raises block, so only the retokenize below may raise
    assert not g.is_terminated()
    with pytest.raises(ValueError, match="not allowed"):
        g.jump_and_retokenize([], [backend.tokenizer_info.token_id("z")], -1)


def test_rejected_token_and_bad_request(backend):
    g = backend.dispatch_regex("a+").copy()
    with pytest.raises(ValueError, match="not allowed by the grammar"):
        g.accept_token(backend.tokenizer_info.token_id("b"))
    if HAVE_SGLANG:   # with SGLang a bad request becomes its InvalidGrammarObject, carrying the message
        from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject
        bad = backend.dispatch_structural_tag('{"format": {}}')
        assert isinstance(bad, InvalidGrammarObject) and "$.format: unknown format type" in bad.error_message
    else:
        with pytest.raises(stencil.GrammarError, match=r"\$\.format: unknown format type"):
            backend.dispatch_structural_tag('{"format": {}}')


def test_copy_is_a_fresh_state(backend, zoo):
    g = backend.dispatch_regex("xy").copy()
    g.accept_token(backend.tokenizer_info.token_id("x"))
    h = g.copy()
    vocab = backend.tokenizer_info.vocab_size
    a = StencilGrammarObject.allocate_vocab_mask(vocab, 2, "cpu")
    g.fill_vocab_mask(a, 0)
    h.fill_vocab_mask(a, 1)
    assert not np.array_equal(a[0].numpy(), a[1].numpy())


needs_sglang = pytest.mark.skipif(not HAVE_SGLANG, reason="needs SGLang: make test-integrations")

# SGLang's JSON white-space options as its ServerArgs names them (sglang 0.5.23,
# srt/arg_groups/fields/serving.py); test_real_server_args_reach_the_backend runs the same on
# SGLang's own ServerArgs where SGLang is installed. text -> verdict per column of WS_CASES.
WS_TEXTS = {'{"city":"Lima","temp":1}': (True, True, True, True),
            '{"city": "Lima", "temp": 1}': (True, False, True, True),
            '{ "city" : "Lima" , "temp" : 1 }': (True, False, True, True),
            '{"city":"Lima",\n  "temp":1}': (True, False, False, False)}
WS_CASES = [{}, {"constrained_json_disable_any_whitespace": True},
            {"constrained_json_whitespace_pattern": "[ ]?"}, {"constrained_json_max_whitespace_cnt": 1}]


def server_args(**kw):
    fields = dict(constrained_json_whitespace_pattern=None, constrained_json_disable_any_whitespace=False,
                  constrained_json_max_whitespace_cnt=None, grammar_backend="stencil")
    return SimpleNamespace(**{**fields, **kw})


def _ws_verdicts(backend, zoo) -> dict:
    out = {}
    for text in WS_TEXTS:
        g = backend.dispatch_json(json.dumps(SCHEMA))
        ids = zoo.encode_batch([text])[0]
        out[text] = all(g.matcher.accept_token(t) for t in ids) and g.matcher.is_accepting()
    return out


@pytest.mark.parametrize("column", range(len(WS_CASES)))
def test_server_args_whitespace_options_reach_json_requests(zoo, column):
    b = StencilGrammarBackend.from_server_args(server_args(**WS_CASES[column]), None, zoo.info.vocab_size,
                                               tokenizer_info=zoo.info)
    assert _ws_verdicts(b, zoo) == {t: v[column] for t, v in WS_TEXTS.items()}
    assert b.dispatch_regex("a b").matcher.accept_tokens(zoo.encode_batch(["a b"])[0]) > 0   # JSON only


@pytest.mark.parametrize("n", [0, 1, 3])
def test_max_whitespace_cnt_takes_n_and_refuses_n_plus_one(zoo, n):
    """XGrammar's count is the longest run: at every gap of the object a run of exactly n white-space
    characters passes and n + 1 does not (0: compact)."""
    b = StencilGrammarBackend.from_server_args(server_args(constrained_json_max_whitespace_cnt=n), None,
                                               zoo.info.vocab_size, tokenizer_info=zoo.info)
    gaps = '{%s"city"%s:%s"Lima"%s,%s"temp"%s:%s1%s}'
    k = gaps.count("%s")
    for size, verdict in ((n, True), (n + 1, False)):
        for i in range(k):
            text = gaps % tuple((" \n\t" * size)[:size] if j == i else "" for j in range(k))
            g = b.dispatch_json(json.dumps(SCHEMA))
            ok = all(g.matcher.accept_token(t) for t in zoo.encode_batch([text])[0]) and g.matcher.is_accepting()
            assert ok == verdict, f"a run of {size} at gap {i}: {text!r}"


@needs_sglang
def test_real_server_args_reach_the_backend(zoo):
    from sglang.srt.server_args import ServerArgs
    for column, kw in enumerate(WS_CASES):
        args = ServerArgs(model_path="unused", **kw)
        b = StencilGrammarBackend.from_server_args(args, zoo.hf, zoo.info.vocab_size)
        assert _ws_verdicts(b, zoo) == {t: v[column] for t, v in WS_TEXTS.items()}, kw


@needs_sglang
def test_register_with_sglang(zoo):
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    from sglang.srt.constrained import base_grammar_backend as bgb
    register("stencil-test")
    register("stencil-test")                     # idempotent
    make = bgb.GRAMMAR_BACKEND_REGISTRY.pop("stencil-test")
    assert GRAMMAR_BACKEND_CHOICES.count("stencil-test") == 1
    GRAMMAR_BACKEND_CHOICES.remove("stencil-test")
    b = make(None, zoo.hf, zoo.info.vocab_size, None)
    assert isinstance(b, bgb.BaseGrammarBackend) and isinstance(b.dispatch_regex("a"), bgb.BaseGrammarObject)


# What SGLang's launcher and its spawned scheduler do, each in a fresh process: load the
# sglang.srt.plugins entry points (SGLang's own loader), then parse the command line / build the
# grammar backend by name. Nothing of stencil is imported or registered by hand.
_FRESH_PROCESS = """
import json, sys
from sglang.srt.plugins import load_plugins
load_plugins()
from sglang.srt.server_args import prepare_server_args
args = prepare_server_args(["--model-path", sys.argv[1], "--grammar-backend", "stencil", "--device", "cpu"])
from sglang.srt.constrained.base_grammar_backend import GRAMMAR_BACKEND_REGISTRY
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
backend = GRAMMAR_BACKEND_REGISTRY[args.grammar_backend](args, tok, len(tok), {tok.eos_token_id})
g = backend.dispatch_json(json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}))
ok = all(g.matcher.accept_token(t) for t in tok.encode('{"a": 12}', add_special_tokens=False))
print(json.dumps({"backend": type(backend).__name__, "grammar": type(g).__name__, "ok": ok,
                  "accepting": g.matcher.is_accepting()}))
"""


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    from stencil.runtime.models import save_model_folder
    return save_model_folder(str(tmp_path_factory.mktemp("smollm2")))


@needs_sglang
def test_plugin_entry_point_registers_in_a_fresh_process(model_folder):
    """SGLang's plugin loader, as its launcher and spawned scheduler run it, registers stencil:
    `--grammar-backend stencil` parses and the backend compiles requests, in a process that never
    imported stencil itself."""
    run = subprocess.run([sys.executable, "-c", _FRESH_PROCESS, model_folder], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out == {"backend": "StencilGrammarBackend", "grammar": "StencilGrammarObject", "ok": True,
                   "accepting": True}


@needs_sglang
def test_sglang_server_entry_point_accepts_the_backend(model_folder):
    """`python -m sglang.launch_server ... --grammar-backend stencil`: SGLang's own server entry
    point gets past its argument parser (before the plugin entry point it refused the name) and on
    to starting the engine, as far as SGLang's build on this machine goes (a CPU machine without
    SGLang's GPU stack stops there); the command is ended after 120 s at most."""
    cmd = [sys.executable, "-m", "sglang.launch_server", "--model-path", model_folder, "--grammar-backend",
           "stencil", "--device", "cpu", "--port", "30917"]
    # a session of its own: SGLang's children (scheduler, detokenizer) are ended with it
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    log = None
    try:
        log, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:   # still starting (or serving): the arguments were accepted
        pass
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # the server and whatever it started
        except ProcessLookupError:
            pass
    if log is None:
        log, _ = proc.communicate()
    assert "invalid choice: 'stencil'" not in log, log[-3000:]
    # past prepare_server_args: the server is starting (timed out), or stopped later, in run_server
    # (here: SGLang's configs import torchvision, which this venv leaves out)
    assert proc.returncode == -signal.SIGKILL or "run_server(server_args)" in log, log[-3000:]
