"""The collector held off while a grammar compiles (stencil.grammar.gc_pause)."""
from __future__ import annotations

import gc
import threading

import stencil
from stencil.grammar.gc_pause import gc_paused


def test_pause_holds_off_the_collector_and_restores_it():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()   # the inner one's end does not resume it
    assert gc.isenabled()


def test_pause_leaves_a_collector_that_was_off_off():
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_on_two_threads_resume_once_the_last_ends():
    inside, leave = threading.Event(), threading.Event()

    def other():
        with gc_paused():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    with gc_paused():
        t.start()
        inside.wait(10)
    assert not gc.isenabled()   # this thread's pause ended, the other's goes on
    leave.set()
    t.join(10)
    assert gc.isenabled()


def test_a_schema_compiles_with_the_collector_off(monkeypatch, ascii_tokenizer):
    import stencil.grammar.json.schema as front

    seen = []
    original = front.json_schema_grammar

    def watched(*args, **kwargs):
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(front, "json_schema_grammar", watched)
    compiler = stencil.GrammarCompiler(ascii_tokenizer)
    compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert seen == [False] and gc.isenabled()
    # a failing compile resumes it too
    try:
        compiler.compile_json_schema({"type": "object", "minProperties": "x"})
    except stencil.GrammarError:
        pass
    assert seen == [False, False] and gc.isenabled()
