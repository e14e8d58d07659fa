"""llguidance's Lark dialect (guidance-ai/llguidance, docs/syntax.md), one test per section of
that document, the grammar text written from its examples. Each grammar is checked through the
Matcher with the DeepSeek tokenizer (strings accepted or rejected, the mask agreeing with
accept_token at every step) and, where the language is regular, whole masks against the
brute-force regex oracle. What stencil cannot mean the same way is refused with a precise error."""
from __future__ import annotations

import pytest

import stencil
from stencil.grammar.ebnf.ast import GrammarWarning
from dialect_helpers import env as _env


@pytest.fixture(scope="module")
def env():
    return _env()


def lark(env, text):
    return env.compiler.compile_lark(text)


# --- "Minor syntax changes": expr{M,N}, // and # comments, '-' in identifiers ---------------------

def test_bounded_repetition_on_rules_and_terminals(env):
    g = lark(env, '''
start: item-list            // a comment
item-list: ITEM{2,3}        # another comment
ITEM: "a"{1,2} ","
''')
    env.check(g, ["a,a,", "aa,a,aa,"], ["a,", "a,a,a,a,", "aaa,a,", "a,a"])
    n = env.check_masks(g, r"(?:a{1,2},){2,3}", ["", "a", "a,", "aa,a,", "a,a,a,"])
    assert n > 0
    for text, good, bad in [
        ('start: "x"{3}', ["xxx"], ["xx", "xxxx"]),
        ('start: "x"{2,}', ["xx", "xxxxx"], ["x"]),
        ('start: X\nX: "x"{,2}', ["", "x", "xx"], ["xxx"]),
        ('start: X{1,2} "!"\nX: /[0-9]/{2}', ["12!", "1234!"], ["1!", "123!"]),
    ]:
        env.check(lark(env, text), good, bad)


def test_repetition_errors_have_positions(env):
    with pytest.raises(stencil.GrammarError, match=r"line 1, column 11: repetition \{3,2\}"):
        lark(env, 'start: "x"{3,2}')
    with pytest.raises(stencil.GrammarError, match="templates"):
        lark(env, 'start: sep{"a", "b"}')


# --- "Special tokens": <name>, <[id]>, ranges, lists -----------------------------------------------

def test_special_tokens(env):
    g = lark(env, 'start: "a" <[0]>')       # DeepSeek's <｜begin▁of▁sentence｜>, a special token
    env.check(g, [["a", 0]], [["a"], ["a", 2]])
    # llguidance allows any <name>; DeepSeek's <think> is an ordinary token, so it means its text
    g = lark(env, 'start: <think> "x" </think>')
    env.check(g, ["<think>x</think>"], ["<think>x"])
    g = lark(env, 'start: "a" <[0-2,128000]>')
    env.check(g, [["a", 0], ["a", 128000]], [["a", 3]])


# --- "Lexeme options" and "Lazy lexemes" ----------------------------------------------------------

def test_lexeme_option_values(env):
    # stop/suffix take a string, a regex or a terminal name; capture, stop_capture and
    # temperature do not change the language
    for stop in ['"<end>"', "/<end>/", "END"]:
        g = lark(env, f'start: with_stop "!"\nwith_stop[capture, stop={stop}, stop_capture="s", '
                      f'temperature=0.7]: /[a-z<>]*/\nEND: "<end>"')
        env.check(g, ["foo<end>!", "<end>!"], ["foo!", "foo<end>bar<end>!", "foo<end>"])
    g = lark(env, 'start: a\na[suffix=/<\\/?end>/]: /[a-z]*/')
    env.check(g, ["ab<end>", "ab</end>"], ["ab<end>x", "ab"])


def test_lazy_lexemes_doc_example(env):
    g = lark(env, '''
start: outer_suffix | outer_lazy
with_suffix[capture, suffix="<end>"]: /.*/
outer_suffix[capture]: with_suffix
with_lazy[capture, lazy]: /.*<end>/
outer_lazy[capture]: with_lazy
''')
    # lazy: they match just the prefix up to the first <end>
    env.check(g, ["foo<end>", "<end>"], ["foo<end>bar<end>", "foo"])


def test_case_insensitive_stop_and_suffix_strings(env):
    # "END"i keeps its flag as a stop or suffix marker, as it does as a terminal
    stop = lark(env, 'start: note "!"\nnote[stop="END"i]: /[a-z ]*/')
    env.check(stop, ["to doEND!", "to doend!", "xEnD!"], ["to do!", "to doEND more!"])
    suffix = lark(env, 'start: note "!"\nnote[suffix="end"i]: /[a-z ]*/')
    env.check(suffix, ["to doEND!", "to doeNd!", "xend!"], ["to do!", "to doEND more!", "to doeNdx!"])
    plain = lark(env, 'start: note "!"\nnote[suffix="end"]: /[a-zA-Z ]*/')
    env.check(plain, ["to doend!"], ["to doEND!"])


def _token_limit_step(info, state, tok, n: int, chars: str):
    """One token of llguidance's max_tokens on `start: "<" r ">"`, `r[max_tokens=n]: /[chars]+/`:
    the next state, or None. When a token ends inside r and r has then spanned n tokens, r ends
    there (">" must follow). State: (phase, letters in r, tokens r spans)."""
    phase, letters, spanned = state
    raw = info.token_bytes(tok)
    if not raw or tok in info.special_token_ids:
        return None
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        return None
    touched = False
    for ch in text:
        if phase == "open" and ch == "<":
            phase, letters, spanned = "r", 0, 0
        elif phase == "r" and ch in chars:
            letters += 1
            spanned += not touched
            touched = True
        elif phase in ("r", "ended") and ch == ">" and letters:
            phase = "done"
        else:
            return None
    if phase == "r" and letters and spanned >= n:
        phase = "ended"
    return phase, letters, spanned


def _oracle_mask(info, seq, n: int, chars: str, relevant):
    """The oracle's mask after ``seq``: ``relevant`` are the only tokens that could pass (made of
    "<", ">" and ``chars``); end of sequence once the output is complete."""
    import numpy as np

    want = np.zeros(info.vocab_size, dtype=bool)
    state = ("open", 0, 0)
    for t in seq:
        state = _token_limit_step(info, state, t, n, chars)
    for t in relevant:
        want[t] = _token_limit_step(info, state, t, n, chars) is not None
    for e in info.eos_token_ids:
        want[e] = state[0] == "done"
    return want


def _relevant(info, chars: str) -> list:
    allowed = set(("<>" + chars).encode())
    return [t for t in range(info.vocab_size) if t not in info.special_token_ids and info.token_bytes(t)
            and set(info.token_bytes(t)) <= allowed]


def _mask_of(info, m, bitmask):
    import numpy as np

    m.fill_next_token_bitmask(bitmask, 0)
    return np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[: info.vocab_size].astype(bool)


def test_max_tokens_masks_match_the_token_oracle(env):
    import numpy as np
    info = env.info
    g = lark(env, 'start: "<" r ">"\nr[max_tokens=2]: /[a-z]+/')
    chars = "abcdefghijklmnopqrstuvwxyz"
    relevant = _relevant(info, chars)
    lt, a, b, ab = info.token_id("<"), info.token_id("a"), info.token_id("b"), info.token_id("ab")
    for prefix in [[lt], [lt, a], [lt, a, b], [lt, ab], [lt, ab, a]]:
        m = stencil.Matcher(g)
        assert m.accept_tokens(prefix) == len(prefix)
        got, want = _mask_of(info, m, env.bitmask), _oracle_mask(info, prefix, 2, chars, relevant)
        assert np.array_equal(got, want), [info.token_bytes(int(t)) for t in np.flatnonzero(got != want)[:5]]
        assert got.sum() >= 1
    # after two tokens the lexeme has ended: only ">" (or tokens starting with it) may follow
    env.check(g, [[lt, a, b, info.token_id(">")], [lt, ab, ">"]], [[lt, a, b, a], [lt, a, b]])
    # rollback and forks keep the count right
    m = stencil.Matcher(g, max_rollback=4)
    assert m.accept_tokens([lt, a, b]) == 3 and not m.accept_token(a)
    m.rollback(1)
    assert m.accept_token(ab) and not m.accept_token(a) and m.accept_token(info.token_id(">"))


@pytest.mark.parametrize("tokenizer,n", [("cl100k", 1), ("deepseek", 3)])
def test_max_tokens_random_walks(tokenizer, n):
    """Random generations under `r[max_tokens=n]: /[a-z ]+/`, each step's whole mask against the
    token-level oracle."""
    import random

    import numpy as np
    from tokenizers_zoo import get

    info = get(tokenizer).info
    compiler = stencil.GrammarCompiler(info)
    g = compiler.compile_lark(f'start: "<" r ">"\nr[max_tokens={n}]: /[a-z ]+/')
    bitmask = stencil.allocate_token_bitmask(1, info.vocab_size)
    chars = "abcdefghijklmnopqrstuvwxyz "
    relevant = _relevant(info, chars)
    rng = random.Random(n)
    steps = 0
    for _ in range(2):
        m, seq = stencil.Matcher(g), []
        while not m.is_terminated() and len(seq) < 10:
            got, want = _mask_of(info, m, bitmask), _oracle_mask(info, seq, n, chars, relevant)
            assert np.array_equal(got, want), (seq, [info.token_bytes(int(t)) for t in np.flatnonzero(got != want)[:5]])
            choice = int(rng.choice(np.flatnonzero(got)))
            assert m.accept_token(choice)
            seq.append(choice)
            steps += 1
    assert steps >= 6


def test_max_tokens_doc_example_and_errors(env):
    # "Lexeme options": mygen[stop="\n", max_tokens=10, temperature=0.7]: /.*/
    g = lark(env, 'start: mygen "!"\nmygen[stop="\\n", max_tokens=3, temperature=0.7]: /.*/')
    a = env.info.token_id("a")
    env.check(g, ["ab\n!", [a, a, "\n!"]], [[a, a, a, a, "\n!"]])
    with pytest.raises(stencil.GrammarError, match=r"line 2, column 3: max_tokens takes a positive integer"):
        lark(env, 'start: m\nm[max_tokens=0]: /a+/')
    with pytest.raises(stencil.GrammarError, match=r"'m' must be made of strings, regexes and terminals"):
        lark(env, 'start: m\nm[max_tokens=3]: r\nr: "a"')


# --- "Tool calling" ----------------------------------------------------------------------------------

def test_tool_calling_doc_example(env):
    g = lark(env, r'''
start: ( f_foo | f_bar )* f_end
f_end: TEXT
TEXT: /(.|\n)*/
f_foo_hd[lazy]: TEXT "<function"
f_foo: f_foo_hd "=foo>" %json { "type": "object" } "</function>"
f_bar_hd[lazy]: TEXT "<function"
f_bar: f_bar_hd "=bar>" /[0-9]+/ "</function>"
''')
    env.check(g, ["no call at all", "hi <function=bar>12</function> bye",
                  'x<function=foo>{"a": 1}</function>y<function=bar>3</function>'],
              ["hi <function=baz>1</function>", "<function=bar>x</function>", "<function=foo>[]</function>"])


# --- "And/Not operators in regexes" ------------------------------------------------------------------

def test_and_not_doc_example(env):
    g = lark(env, 'start: ASCII_LINES\nASCII_LINES: /[a-zA-Z \\n]*/ & ~/(?s:.*)\\n\\n(?s:.*)/')
    env.check(g, ["ab\ncd\n", "", "a b"], ["a\n\nb", "\n\n", "a1"])
    env.check_masks(g, r"(?:[a-zA-Z ]|\n[a-zA-Z ])*\n?", ["", "ab", "ab\n", "x\ny"])
    g = lark(env, 'start: A\nA: /(?s:.*)/ & ~/(?s:.*)AAA(?s:.*)/')
    env.check(g, ["AAbAA", "héllo"], ["xAAAx", "AAA"])
    env.check_masks(g, r"(?s)(?:[^A]|A[^A]|AA[^A])*A{0,2}", ["", "A", "AA", "xAAb"])


def test_and_not_precedence(env):
    # `&` binds tighter than `|`: (A & B) | C
    g = lark(env, 'start: X\nX: /[a-z]+/ & /a.*/ | "7"')
    env.check(g, ["abc", "a", "7"], ["bc", "a7"])
    # `~` binds tighter than `+`: ~A+ is (~A)+, which takes "aa" (itself not "a") but not "a"
    g = lark(env, 'start: X\nX: ~"a"+ & /[ab]*/')
    env.check(g, ["aa", "", "b", "ab"], ["a"])
    g = lark(env, 'start: X\nX: ~("a"+) & /[ab]*/')
    env.check(g, ["", "b", "ab"], ["a", "aa"])
    with pytest.raises(stencil.GrammarError, match="the operands of '&'"):
        lark(env, 'start: r & "a"\nr: "a"')


# --- "Structured %regex": substring_chunks / _words / _chars ----------------------------------------

SUBSTRINGS = ["", "abc", "de", "fg", "abcde", "defg", "abcdefg"]


def test_substring_chunks_doc_example(env):
    g = lark(env, 'start: %regex { "substring_chunks": ["abc", "de", "fg"] }')
    env.check(g, SUBSTRINGS, ["ab", "cde", "abcfg", "fgde"])
    env.check_masks(g, "|".join(s for s in SUBSTRINGS if s) + "|", ["", "abc", "de"])


def test_substring_words_and_chars(env):
    words = lark(env, 'start: %regex { "substring_words": "foo bar. baz" }')
    chunks = lark(env, 'start: %regex { "substring_chunks": ["foo", " ", "bar", ".", " ", "baz"] }')
    for s in ["", "foo bar", "bar. baz", " ", "foo bar. baz", ". "]:
        assert env.accepts(words, s) and env.accepts(chunks, s), s
    for s in ["fo", "oo bar", "foo baz", "ar."]:
        assert not env.accepts(words, s) and not env.accepts(chunks, s), s
    g = lark(env, 'start: ABC\nABC: %regex { "substring_chars": "ab c" }')
    env.check(g, ["", "b c", "ab c", " "], ["ac", "abc", "c b"])
    # the spelling the document proposes
    g = lark(env, 'start: %regex {"type": "substring", "chunks": ["a", "b", "c"]}')
    env.check(g, ["ab", "bc", ""], ["ac"])
    with pytest.raises(stencil.GrammarError, match="cannot be combined"):
        lark(env, 'start: %regex {"substring_chars": "ab", "pattern": "a"}')


# --- "Grammar options": %llguidance ---------------------------------------------------------------

def test_llguidance_options(env):
    # ignore_once: the %ignore regex describes the whole skipped span, so its bound holds
    once = lark(env, '%llguidance { "ignore_once": true }\n%ignore /[ \\t]{1,8}/\nstart: "A" "!"')
    env.check(once, ["A!", "A        !", "A\t!"], ["A         !"])
    # by default an %ignore regex matches repeatedly at the same position
    many = lark(env, '%llguidance {}\n%ignore /[ \\t]{1,8}/\nstart: "A" "!"')
    env.check(many, ["A!", "A" + " " * 20 + "!"], ["A x!"])
    # allow_initial_skip (false by default in llguidance): %ignore only after the first lexeme
    no_skip = lark(env, '%llguidance {}\n%ignore /[ \\t]+/\nstart: "A" "!"')
    # ... nor after the last one: llguidance 1.9.1 refuses "A! " (a skip comes before a lexeme)
    env.check(no_skip, ["A !"], [" A!", "\tA !", "A! "])
    env.check_masks(no_skip, r"A[ \t]*!", ["", "A", "A !"])
    skip = lark(env, '%llguidance { "no_forcing": true, "allow_initial_skip": true }\n%ignore " "\nstart: "A" "!"')
    env.check(skip, [" A !", "A!"], ["A!!"])
    # a grammar without %llguidance follows the same rule (llguidance and XGrammar agree)
    env.check(lark(env, '%ignore " "\nstart: "A" "!"'), ["A !"], [" A !", "  A!", "A! "])
    with pytest.raises(stencil.GrammarError, match="unknown %llguidance option 'ignore_twice'"):
        lark(env, '%llguidance { "ignore_twice": true }\nstart: "a"')
    # allow_invalid_utf8 is accepted with a warning: the output stays UTF-8, a subset of what it allows
    with pytest.warns(GrammarWarning, match="allow_invalid_utf8 \\(line 1, column 13\\)"):
        utf8 = lark(env, '%llguidance { "allow_invalid_utf8": true }\nstart: /[a-zé]+/')
    env.check(utf8, ["abé"], ["A"])


# --- "Multiple grammars": @name --------------------------------------------------------------------

def test_grammar_references_are_refused_precisely(env):
    with pytest.raises(stencil.GrammarError, match=r"line 2, column 10: @fcall: references to other grammars"):
        lark(env, 'start: /(.|\\n)*/ | fun\nfun: "<" @fcall ">"')


# --- strings: \e and the other escapes ----------------------------------------------------------------

def test_escapes(env):
    g = lark(env, 'start: "\\e[0m" "\\x41\\u00e9"')
    env.check(g, ["\x1b[0mAé"], ["[0mAé"])


# --- "Recursive rules" and "Terminals vs rules" --------------------------------------------------------

def test_performance_section_examples(env):
    g = lark(env, '''
start: expr
expr: expr "+" term | term
term: term "*" factor | factor
factor: "(" expr ")" | NUMBER
NUMBER: /[0-9]+/
''')
    env.check(g, ["1+2*3", "(1+2)*3"], ["1+", "()"])
    g = lark(env, 'start: IDENTIFIER\nID_START: /[a-zA-Z_]/\nID_CHAR: /[a-zA-Z0-9_]/\n'
                  'IDENTIFIER: ID_START ID_CHAR*')
    env.check(g, ["_a1", "x"], ["1a", "a-b"])
    env.check_masks(g, r"[a-zA-Z_][a-zA-Z0-9_]*", ["", "a"])
    g = lark(env, 'start: INT\nINT: "-"? UINT\nUINT: DIGIT+\nDIGIT: /[0-9]/')
    env.check(g, ["-12", "7"], ["-", "1-2"])


def test_token_limits_and_initial_skip_survive_serialization(env):
    # the core keeps max_tokens and "not before the first lexeme" in the serialized grammar
    from stencil.grammar.ebnf.lark import lark_grammar
    g = lark_grammar('%llguidance {}\n%ignore " "\nstart: "<" r ">"\nr[max_tokens=2]: /[a-z]+/')
    again = stencil.Grammar.deserialize(g.serialize())
    assert again.serialize() == g.serialize() and again.hash() == g.hash()
    plain = lark_grammar('%ignore " "\nstart: "<" r ">"\nr: /[a-z]+/')
    assert plain.hash() != g.hash()
    compiled = env.compiler.compile_grammar(again)
    a, b = env.info.token_id("a"), env.info.token_id("b")
    env.check(compiled, [["<", a, b, ">"], "< ab >"], [[" <", a, ">"], ["<", a, b, a, ">"]])


@pytest.mark.parametrize("text,message", [
    ('start: "a"{x}', "line 1, column 11: expected a repetition count"),
    ('start: "a" %lark { start: "b"', "line 1, column 18: '%lark {' is never closed"),
    ('start: %lark { other: "a" }', "there is no start rule 'start'"),
    ("start: " + "%lark { start: " * 30 + '"a"' + " }" * 30, "%lark blocks nest deeper than 20 levels"),
    ('%llguidance {"ignore_once": 1}\nstart: "a"', "line 1, column 13: %llguidance option 'ignore_once' takes true or false"),
    ('start: r\nr[stop=3]: /a/', "line 2, column 3: stop= takes a string, a /regex/"),
    ('start: r\nr[capture=1]: /a/', "line 2, column 3: capture takes a string"),
    ('start: r\nr[temperature="hot"]: /a/', "temperature takes a number"),
    ('start: r\nr[max_tokens=99999999999]: /a/', "max_tokens is too large"),
    ('start: r\nr[stop="a", suffix="b"]: /x/', "line 2, column 13: a rule has at most one stop or suffix"),
    ('start: X\nX: "a" & <[1]>', "line 2, column 10: a special token cannot be part of 'X'"),
    ('start: %regex {"substring_words": ["a"]}', "%regex: substring_words is a string"),
    ('start: %regex {"substring_chars": "' + "a" * 100_001 + '"}', "longer than the limit of 100000"),
])
def test_dialect_errors(env, text, message):
    with pytest.raises(stencil.GrammarError, match=message):
        lark(env, text)


def test_long_negation_runs_collapse(env):
    # ~~A is A: a long run of `~` is read in a loop, and an even one cancels out
    env.check(lark(env, 'start: X\nX: ' + "~" * 5000 + '"a" & /[ab]/'), ["a"], ["b"])
    env.check(lark(env, 'start: X\nX: ' + "~" * 5001 + '"a" & /[ab]/'), ["b"], ["a"])


# --- "regexes use Rust regex crate syntax": what the escapes mean in terminals ----------------------

def test_terminal_regexes_mean_what_rust_regex_says(env):
    # \d \w \s are Unicode, "." stops at "\n" only, [[:alpha:]] and \x{...} exist; JSON Schema's
    # patterns (ECMA) keep their ASCII \d \w and their "." that stops at every line terminator
    for pattern, good, bad in [
        (r"/\d+/", ["42", "٣٤", "४"], ["x", "½"]),
        (r"/\w+/", ["a_1", "été", "٣", "e\u0301"], ["-", " ", "é!"]),
        (r"/\D/", ["x", "-"], ["5", "٣"]),
        (r"/\W/", ["-", " "], ["é", "_"]),
        (r"/a.b/", ["axb", "a\rb", "a\u2028b", "aéb"], ["a\nb"]),
        (r"/a.b/s", ["a\nb"], []),
        (r"/\s/", ["\u00a0", "\u2028", "\x85"], ["\ufeff"]),
        (r"/[[:alpha:]]+[[:digit:]]/", ["ab1"], ["é1", "a٣"]),
        (r"/[[:^digit:]]/", ["a", "٣"], ["7"]),
        (r"/\x{48}\x{1F600}/", ["H😀"], ["H"]),
    ]:
        g = lark(env, "start: X\nX: " + pattern)
        env.check(g, good, bad)
    env.check(lark(env, r'start: %regex {"pattern": "\\w{2}"}'), ["éa"], ["é"])
    g = env.compiler.compile_json_schema({"type": "string", "pattern": r"^\w\d.$"})
    assert env.accepts(g, '"a1x"') and not env.accepts(g, '"é1x"') and not env.accepts(g, '"a٣x"')
    assert not env.accepts(g, '"a1\\r"')   # ECMA's "." stops at "\r"
    with pytest.raises(stencil.GrammarError, match=r"unknown ASCII class \[:alfa:\]"):
        lark(env, "start: /[[:alfa:]]/")


@pytest.mark.parametrize("escape", [r"\.", r"\-", r"\[", r"\ ", r"\$"])
def test_string_escapes_that_lark_and_llguidance_read_apart_are_refused(env, escape):
    # Lark keeps the backslash ("\." is two characters there), llguidance refuses the escape
    with pytest.raises(stencil.GrammarError, match="Lark reads a backslash"):
        lark(env, f'start: "x{escape}"')


def test_json_escapes_in_strings_are_kept(env):
    env.check(lark(env, r'start: "a\"b\\c\/d\u00e9"'), ['a"b\\c/dé'], ["a/b"])
