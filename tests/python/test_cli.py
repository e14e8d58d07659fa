"""The `stencil` command: bad input fails fast with a clear message and exit status 2, standard
output carries only the generated text, schema output is checked with jsonschema."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from stencil import cli
from generation_model import default_model, have_generation_stack

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------------- bad input, no model

def test_schema_not_json(tmp_path, capsys):
    p = tmp_path / "s.json"
    p.write_text('{"type": "object",\n  "properties": {,}}')
    code, out, err = run_cli(capsys, "generate", "--schema", str(p))
    assert code == 2 and out == ""
    assert "is not JSON" in err and "line 2" in err


def test_missing_files_and_model(tmp_path, capsys):
    code, out, err = run_cli(capsys, "generate", "--schema", str(tmp_path / "nope.json"))
    assert code == 2 and "does not exist" in err and out == ""
    code, out, err = run_cli(capsys, "generate", "--gbnf", str(tmp_path / "nope.gbnf"))
    assert code == 2 and "does not exist" in err
    code, out, err = run_cli(capsys, "generate", "--regex", "[0-9]+", "--model", str(tmp_path / "no-model"))
    assert code == 2 and "no-model" in err and "does not exist" in err and out == ""


def test_bad_grammar_fails_before_the_model_loads(capsys, monkeypatch):
    import stencil.runtime.models
    monkeypatch.setattr(stencil.runtime.models, "load_model", lambda *a, **k: pytest.fail("the model must not load"))
    code, out, err = run_cli(capsys, "generate", "--regex", "(ab")
    assert code == 2 and "regex" in err and "(ab" in err and out == ""
    code, out, err = run_cli(capsys, "generate", "--choices", " , ")
    assert code == 2 and "--choices" in err
    code, out, err = run_cli(capsys, "generate", "--pydantic", "no_colon_here")
    assert code == 2 and "module:Class" in err
    code, out, err = run_cli(capsys, "generate", "--pydantic", "surely_not_a_module_xyz:Model")
    assert code == 2 and "cannot import" in err
    code, out, err = run_cli(capsys, "generate", "--regex", "a", "--max-tokens", "0")
    assert code == 2 and "--max-tokens" in err


def test_unsupported_schema_keyword(tmp_path, capsys, monkeypatch):
    import stencil.runtime.models
    monkeypatch.setattr(stencil.runtime.models, "load_model", lambda *a, **k: pytest.fail("the model must not load"))
    p = tmp_path / "s.json"
    # Unknown keywords are annotations in 2020-12 (ignored); a lookahead in `pattern` is a
    # construct stencil cannot enforce, so it is refused with its JSON pointer.
    p.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=a)b"}}}))
    code, out, err = run_cli(capsys, "generate", "--schema", str(p))
    assert code == 2 and "/properties/a/pattern" in err and "lookahead" in err and out == ""


def test_parse_choices():
    assert cli.parse_choices("a, b ,c") == ["a", "b", "c"]
    assert cli.parse_choices(r"x\,y,z") == ["x,y", "z"]


def test_help_and_subcommands(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["generate", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--schema", "--pydantic", "--regex", "--lark", "--gbnf", "--choices", "--prompt", "--model",
                "--max-tokens", "--temperature", "--seed"):
        assert opt in out
    with pytest.raises(SystemExit) as e:
        cli.main(["generate", "--regex", "a", "--choices", "a,b"])  # one grammar input at a time
    assert e.value.code == 2


def test_check_subcommand(tmp_path, capsys):
    """`stencil check`: exit 0 and the report for a schema that compiles exactly; exit 1 (and what
    is not supported, where) for one that does not; --lenient: 0 when it compiles once that is
    ignored, still 1 when even that fails."""
    def check(schema, *flags):
        p = tmp_path / "s.json"
        p.write_text(json.dumps(schema))
        return run_cli(capsys, "check", *flags, str(p))

    code, out, err = check({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert code == 0 and err == "", err
    assert out.startswith("OK: the schema compiles exactly") and "enforced keywords: properties x1, type x2" in out
    unsupported = {"type": "object", "properties": {"a": {"type": "integer"},
                                                    "b": {"type": "string", "pattern": "(?=a)b"}}}
    code, out, _ = check(unsupported)
    assert code == cli.EXIT_INVALID == 1
    assert out.startswith("NOT SUPPORTED: pattern at /properties/b/pattern") and "lookahead" in out
    assert "with lenient=True it compiles" in out
    code, out, _ = check(unsupported, "--lenient")
    assert code == 0 and "not supported (ignored under lenient=True):\n  pattern at /properties/b/pattern" in out
    cycle = {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    code, out, _ = check(cycle, "--lenient")
    assert code == 1 and "even with lenient=True it does not compile: $ref at /$defs/a" in out
    code, out, _ = check({"$ref": "#/nowhere"}, "--lenient")
    assert code == 1 and "even with lenient=True it does not compile" in out


# ------------------------------------------------------------------------ with the real model

@pytest.fixture
def model_loaded_once(monkeypatch):
    """The real default model, loaded once for all CLI tests of this process."""
    lm = default_model()
    import stencil.runtime.models
    monkeypatch.setattr(stencil.runtime.models, "load_model", lambda *a, **k: lm)
    return lm


def test_choices_stdout_is_only_the_text(capsys, model_loaded_once):
    code, out, err = run_cli(capsys, "generate", "--choices", "red,green,blue", "--prompt", "What color is grass?")
    assert code == 0
    assert out.strip() in ("red", "green", "blue") and out.endswith("\n") and out.count("\n") == 1
    assert "tokens" in err and "stopped by" in err


def test_pydantic_model(tmp_path, capsys, monkeypatch, model_loaded_once):
    (tmp_path / "pets.py").write_text(textwrap.dedent("""
        from typing import Literal
        from pydantic import BaseModel, Field
        class Pet(BaseModel):
            name: str = Field(max_length=12)
            kind: Literal["cat", "dog", "fish"]
            age: int = Field(ge=0, le=30)
    """))
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "generate", "--pydantic", "pets:Pet", "--prompt", "Describe a pet.",
                             "--max-tokens", "60")
    assert code == 0, err
    v = json.loads(out)
    assert v["kind"] in ("cat", "dog", "fish") and "validates as Pet" in err


def test_schema_output_is_checked(tmp_path, capsys, model_loaded_once):
    code, out, err = run_cli(capsys, "generate", "--schema", os.path.join(ROOT, "examples", "person.schema.json"),
                             "--prompt", "Describe Marie Curie as a JSON object.", "--max-tokens", "120")
    assert code == 0, err
    value = json.loads(out)
    assert set(value) == {"name", "born", "field", "nobel_prizes"} and "valid under the schema" in err
    assert out.startswith('{\n  "name": ')  # the CLI's default 2-space layout


def test_prompt_longer_than_context(capsys, model_loaded_once):
    long_prompt = "word " * (model_loaded_once.context_length + 10)
    code, out, err = run_cli(capsys, "generate", "--regex", "[0-9]", "--prompt", long_prompt)
    assert code == 2 and "context" in err and out == ""


def test_max_tokens_too_small_exits_1(capsys, model_loaded_once):
    # Without the budget (which refuses this --max-tokens at the start: test_budget_generate.py).
    code, out, err = run_cli(capsys, "generate", "--regex", "[a-z]{20}", "--prompt", "Spell a long word.",
                             "--max-tokens", "2", "--no-budget")
    assert code == 1 and "incomplete" in err and len(out.strip()) > 0


@pytest.mark.skipif(not have_generation_stack(), reason="needs the hf extra")
def test_console_script_end_to_end():
    """The installed `stencil` script in a real pipeline: stdout is exactly the answer."""
    exe = shutil.which("stencil", path=os.path.dirname(sys.executable)) or shutil.which("stencil")
    if exe is None:
        pytest.skip("the stencil console script is not installed")
    default_model()  # skips when the model package is missing
    p = subprocess.run([exe, "generate", "--regex", "(yes|no)", "--prompt", "Is water wet? Answer yes or no."],
                       capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert p.stdout in ("yes\n", "no\n")
    assert "loaded" in p.stderr and "stopped by" in p.stderr
    # default_model() above converted the GGUF file in this process: the command reads the cache
    # (the session's $STENCIL_CACHE_DIR, inherited) instead of converting it again
    assert "converted earlier" in p.stderr, p.stderr


def test_progress_lines_and_spinner():
    import io
    import time as _time

    plain = io.StringIO()
    p = cli.Progress(plain)
    p.stage("loading the tokenizer")
    p.stage("loading the model")
    p.done("loaded in 1.0 s")
    assert plain.getvalue().splitlines() == ["stencil: loading the tokenizer ...", "stencil: loading the model ...",
                                             "stencil: loaded in 1.0 s"]

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    p = cli.Progress(term)
    p.stage("loading the model")
    # the spinner redraws every 0.1 s: wait for two redraws (a loaded machine may take longer
    # than 0.2 s to give its thread two turns; the deadline only bounds a spinner that never draws)
    deadline = _time.monotonic() + 30
    while term.getvalue().count("loading the model") < 2 and _time.monotonic() < deadline:
        _time.sleep(0.05)
    p.done("loaded")
    text = term.getvalue()
    assert "\rloading" not in text and "loading the model" in text and "\r\033[K" in text
    assert text.count("loading the model") >= 2  # redrawn with the elapsed time
    assert text.endswith("stencil: loaded\n")


def test_version(capsys):
    import stencil
    from importlib import metadata
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert stencil.__version__ == metadata.version("stencil-llm") != "0+unknown"
    assert capsys.readouterr().out == f"stencil {stencil.__version__} (stencil-llm)\n"


def test_summary_counts_and_rate():
    """The rate is over the time the line prints (it was the decode-only rate beside the total time:
    "1 tokens in 1.9 s (495.1 tokens/s)"), and one token is "1 token"."""
    from stencil.runtime.generate import GenerationResult
    one = GenerationResult("blue", [3], "grammar", 31, seconds=1.9, prefill_seconds=1.8)
    assert cli.summary(one) == ("1 token in 1.9 s (0.5 tokens/s; the 31-token prompt took 1.8 s), "
                                "stopped by the grammar's end")
    many = GenerationResult("x" * 40, list(range(40)), "eos", 52, seconds=8.0, prefill_seconds=1.2)
    assert cli.summary(many).startswith("40 tokens in 8.0 s (5.0 tokens/s; the 52-token prompt took 1.2 s)")


# ------------------------------------------- the generate and check options (issue 29, F2)

@pytest.fixture
def generate_calls(monkeypatch):
    """The keyword arguments of each stencil.runtime.generate call the CLI makes (the real generate runs)."""
    import stencil.runtime
    real, calls = stencil.runtime.generate, []

    def spy(*a, **k):
        calls.append(k)
        return real(*a, **k)
    monkeypatch.setattr(stencil.runtime, "generate", spy)
    return calls


@pytest.mark.parametrize("flag, text, pattern", [
    ("--lark", 'start: ANSWER\nANSWER: "yes" | "no"\n', r"yes|no"),
    ("--gbnf", 'root ::= [0-9] [0-9] [0-9] [0-9]\n', r"[0-9]{4}")])
def test_grammar_files(tmp_path, capsys, model_loaded_once, flag, text, pattern):
    import re
    p = tmp_path / "g.txt"
    p.write_text(text)
    code, out, err = run_cli(capsys, "generate", flag, str(p), "--prompt", "When did the Berlin wall fall?",
                             "--max-tokens", "8")
    assert code == 0 and re.fullmatch(pattern, out.rstrip("\n")), (out, err)


SMALL = {"type": "object", "properties": {"unit": {"enum": ["c", "f"]}, "n": {"type": "integer", "minimum": 0,
                                                                           "maximum": 99}},
         "required": ["unit", "n"], "additionalProperties": False}


@pytest.mark.parametrize("whitespace, layout", [("compact", dict(separators=(",", ":"))), ("4", dict(indent=4))])
def test_whitespace_layouts(tmp_path, capsys, model_loaded_once, whitespace, layout):
    """--whitespace compact|N gives that layout exactly (--no-system keeps the prompt short)."""
    p = tmp_path / "s.json"
    p.write_text(json.dumps(SMALL))
    code, out, err = run_cli(capsys, "generate", "--schema", str(p), "--whitespace", whitespace, "--no-system",
                             "--prompt", "The temperature in Oslo?", "--max-tokens", "24")
    assert code == 0, err
    assert out.rstrip("\n") == json.dumps(json.loads(out), **layout)


def test_sampling_options_reach_generate(capsys, model_loaded_once, generate_calls):
    """--temperature with --seed is reproducible; --no-jump-forward, --no-speculate (speculation is on
    by default), --repetition-penalty and --no-system reach the generation (the system message is
    left out of the prompt)."""
    argv = ["generate", "--choices", "red,green,blue,yellow,purple", "--prompt", "A colour?", "--max-tokens", "4"]
    first = run_cli(capsys, *argv, "--temperature", "1.5", "--seed", "7")
    again = run_cli(capsys, *argv, "--temperature", "1.5", "--seed", "7")
    assert first[0] == again[0] == 0 and first[1] == again[1]
    assert generate_calls[0]["seed"] == 7 and generate_calls[0]["temperature"] == 1.5
    assert generate_calls[0]["speculate"] is True
    code, _, err = run_cli(capsys, *argv, "--no-jump-forward", "--no-speculate", "--repetition-penalty", "1.0",
                           "--no-system")
    k = generate_calls[-1]
    assert code == 0 and k["jump_forward"] is False and k["draft"] is False and k["repetition_penalty"] == 1.0
    assert k["speculate"] is False
    decode = model_loaded_once.tokenizer_info.decode_bytes
    assert b"Answer with exactly one of: red" in decode(generate_calls[0]["input_ids"])
    assert b"Answer with exactly" not in decode(k["input_ids"]) and b"A colour?" in decode(k["input_ids"])


def test_serve_options_become_the_server_limits():
    """`stencil serve`'s limit options reach ServerLimits field by field (the subprocess test of the
    entry point, test_cli_device.py, starts it with the defaults); a bad value is refused by name."""
    pytest.importorskip("fastapi")
    import argparse

    from stencil.server.limits import ServerLimits
    from stencil.server.main import add_arguments, limits_from
    p = argparse.ArgumentParser()
    add_arguments(p)
    assert limits_from(p.parse_args([])) == ServerLimits()
    got = limits_from(p.parse_args(["--compile-timeout", "0.5", "--step-time-limit", "2", "--max-body-bytes", "1000",
                                    "--body-timeout", "7", "--max-waiting", "3", "--max-n", "2",
                                    "--max-tokens-limit", "64", "--memory-limit", "1.5", "--rss-limit", "4096",
                                    "--grammar-time-limit", "4"]))
    assert got == ServerLimits(compile_timeout=0.5, step_time_limit=2.0, max_body_bytes=1000, body_timeout=7.0,
                               max_waiting=3, max_n=2, max_tokens=64, memory_limit=3 << 19, rss_limit=4096 << 20,
                               grammar_time_limit=4.0)
    assert limits_from(p.parse_args(["--grammar-time-limit", "none"])).grammar_time_limit is None
    with pytest.raises(ValueError, match="grammar_time_limit"):
        limits_from(p.parse_args(["--grammar-time-limit", "0"]))
    with pytest.raises(ValueError, match="compile_timeout"):
        limits_from(p.parse_args(["--compile-timeout", "-1"]))
    with pytest.raises(ValueError, match="body_timeout"):
        limits_from(p.parse_args(["--body-timeout", "0"]))
