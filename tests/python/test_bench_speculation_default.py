"""`python -m benchmarks.speculation_default`: a --max-tokens under a grammar's shortest output is
raised for that grammar (generate refuses a budget under it) and said, not an error."""
from __future__ import annotations

import stencil
from benchmarks.speculation_default import ROOM, _prompts, _room
from tests.support.tokenizers import load_tokenizer


def test_a_max_tokens_under_the_shortest_output_is_raised_to_it(capsys):
    info, _ = load_tokenizer("smollm2")
    (prompt, grammar), = _prompts("extraction", 1, stencil.GrammarCompiler(info))
    need = stencil.Matcher(grammar).min_completion_tokens()
    assert need > 8
    assert _room(grammar, 8, "extraction prompt 0") == need + ROOM
    assert f"extraction prompt 0: max_tokens {need + ROOM} (its shortest output needs {need} tokens, over 8)" \
        in capsys.readouterr().err
    assert _room(grammar, need, "x") == need and _room(None, 8, "x") == 8   # room enough, or free text
    assert capsys.readouterr().err == ""
