"""XGrammar's grammar dialects (mlc-ai/xgrammar): its EBNF (docs/defining_structures/
ebnf_grammar.md) through compile_gbnf and its Lark dialect (docs/defining_structures/
lark_grammar.md) through compile_lark, one test per documented section, the grammar text written
from the documents' examples. Checked through the Matcher with the DeepSeek tokenizer (strings
accepted or rejected, the mask agreeing with accept_token at every step) and, where the language
is regular, whole masks against the brute-force regex oracle; what stencil cannot mean the same
way is refused with a precise error."""
from __future__ import annotations

import pytest

import stencil
from dialect_helpers import env as _env


@pytest.fixture(scope="module")
def env():
    return _env()


def ebnf(env, text):
    return env.compiler.compile_gbnf(text)


def lark(env, text):
    return env.compiler.compile_lark(text)


# ===================================== EBNF =========================================================

def test_ebnf_intro_example(env):
    g = ebnf(env, '''
root ::= expr ("=" expr)*
expr ::= term ([-+*/] term)*
term ::= num | "(" expr ")"
num  ::= [0-9]+
''')
    env.check(g, ["1+2", "(3*4)-5=7", "2=2=2"], ["1+", "=1", "(1"])


def test_grammar_structure(env):
    # names with '-', '_' and '.', comments, bodies over several lines, left recursion
    g = ebnf(env, '''
root ::= a.b |        # a comment
         "b" |
         my-rule_2
a.b ::= a.b "a" | "a"
my-rule_2 ::= "c"
''')
    env.check(g, ["a", "aaa", "b", "c"], ["", "ab"])
    # without a rule `x.y`, `x.y` stays llama.cpp's `x` `.` `y`
    g = ebnf(env, 'root ::= x.y\nx ::= "x"\ny ::= "y"')
    env.check(g, ["x-y", "xzy"], ["xy"])
    # `name: body`, as some XGrammar grammars write rules
    env.check(ebnf(env, 'root: "a" b\nb: "c"'), ["ac"], ["a"])


def test_string_escapes(env):
    g = ebnf(env, r'root ::= "\"\\\/\'\?" "\e[" "\t\v\f\a\b\r\n" "\x41\u00e9\U0001F600"')
    m = stencil.Matcher(g)
    assert m.accept_string("\"\\/'?\x1b[\t\v\f\a\b\r\nAé😀") and m.is_accepting()
    g = ebnf(env, r'root ::= "a\0b"')
    m = stencil.Matcher(g)
    assert m.accept_string("a\0b") and m.is_accepting()
    env.check(ebnf(env, 'root ::= "中文" "😀"'), ["中文😀"], ["中文"])


def test_character_classes(env):
    g = ebnf(env, r'root ::= [^] [a-zA-Z0-9] [\-\]\\] [^0-9] [\u4e00-\u9fff]')
    env.check(g, ["\nz-a中", "xA]a一"], ["xAAa中", "xA-5中"])


def test_repetition_and_groups(env):
    g = ebnf(env, 'root       ::= identifier ("," identifier){0,4}\n'
                  'identifier ::= [a-zA-Z_] [a-zA-Z0-9_]*')
    env.check(g, ["a", "a,b1,_c,d,e"], ["a,b,c,d,e,f", "1a", "a,"])
    env.check_masks(g, r"[a-zA-Z_][a-zA-Z0-9_]*(?:,[a-zA-Z_][a-zA-Z0-9_]*){0,4}", ["", "a", "a,b", "a,b,c,d,e"])
    for text, good, bad in [('root ::= "a"{3}', ["aaa"], ["aa"]), ('root ::= "a"{2,4}', ["aa", "aaaa"], ["aaaaa"]),
                            ('root ::= "a"{2,}', ["aaaaaa"], ["a"]), ('root ::= "a"{0} "b"', ["b"], ["ab"]),
                            ('root ::= ( ) "a"', ["a"], [""]), ('root ::= ("a"+)+', ["aaa"], [""])]:
        env.check(ebnf(env, text), good, bad)


def test_rule_options(env):
    # capture names spans and temperature is for sampling: neither changes the language
    g = ebnf(env, 'root ::= item ("," item)*\nitem[capture="number", temperature=0.7] ::= [0-9]+\n'
                  'other[capture] ::= "x"')
    env.check(g, ["1,22,333"], ["1,", ",1"])
    with pytest.raises(stencil.GrammarError, match="line 2, column 11: unknown rule option 'colour'"):
        ebnf(env, 'root ::= "<think>" reasoning "</think>"\nreasoning[colour=3] ::= [^]*')


def test_rule_options_that_make_one_lexeme(env):
    # "Committed-Shortest Matching": name[lazy] takes one letter
    g = ebnf(env, 'root ::= "<" name ">" rest\nname[lazy] ::= [a-z]+\nrest ::= [a-z]+')
    env.check(g, ["<a>bc"], ["<ab>c"])
    # "Character Budgets", with a body that ends before the closing tag
    g = ebnf(env, 'root ::= "<think>" reasoning "</think>" answer\nreasoning[max_chars=5] ::= [a-z ]*\n'
                  'answer ::= [0-9]+')
    env.check(g, ["<think>abc</think>1", "<think></think>1", "<think>ab de</think>1"], ["<think>abcdef</think>1"])
    env.check_masks(g, r"<think>[a-z ]{0,5}</think>[0-9]+", ["", "<think>", "<think>abcd", "<think>abcde"])
    # "Token Budgets": after two tokens the rule has ended
    a = env.info.token_id("a")
    g = ebnf(env, 'root ::= "<" r ">"\nr[max_tokens=2, capture] ::= [a-z]+')
    env.check(g, [["<", a, a, ">"], ["<", a, ">"]], [["<", a, a, a, ">"]])
    # the documents' `reasoning[max_tokens=512] ::= [^]*` before "</think>": one greedy lexeme
    # of [^]* would read on into "</think>", so stencil says so instead of changing the language
    with pytest.raises(stencil.GrammarError, match="rule 'reasoning' has lazy, max_tokens or max_chars"):
        ebnf(env, 'root ::= "<think>" reasoning "</think>" answer\nreasoning[max_tokens=512] ::= [^]*\n'
                  'answer ::= [0-9]+')
    for text, msg in [('root ::= r\nr[lazy] ::= "a" root', "line 2, column 17: rule 'r' has lazy, so its body must"),
                      ('root ::= r\nr[max_tokens=0] ::= "a"', "line 2, column 3: max_tokens takes a positive integer"),
                      ('root ::= r\nr[lazy, lazy] ::= "a"', "rule option 'lazy' is given twice")]:
        with pytest.raises(stencil.GrammarError, match=msg):
            ebnf(env, text)


def test_macros(env):
    env.check(ebnf(env, 'root ::= "ID-" Regex("[0-9]{5}")'), ["ID-12345"], ["ID-1234", "ID-123456"])
    env.check_masks(ebnf(env, 'root ::= "ID-" Regex("[0-9]{5}")'), r"ID-[0-9]{5}", ["", "ID-", "ID-123"])
    # with flags, `.` is the usual one (no newline unless s); without, the pattern is verbatim
    g = ebnf(env, 'root ::= Regex("hello, world.", flags="is")')
    env.check(g, ["HELLO, World\n", "hello, world!"], ["hello, world"])
    env.check(ebnf(env, 'root ::= Regex("a.", flags="i")'), ["Ab"], ["a\n"])
    env.check(ebnf(env, 'root ::= Regex("a.")'), ["a\n", "ab"], ["a"])
    g = ebnf(env, 'root ::= "\\"" Regex("\\\\S+", json_string=true) "\\""')
    env.check(g, ['"abc"', '"a\u00e9"'], ['"a"b"', '"a\\b"', '""'])
    g = ebnf(env, 'root ::= Substring("abc", "de", "fg")')
    env.check(g, ["", "abc", "de", "abcde", "defg", "abcdefg"], ["ab", "cde", "abcfg"])
    chunks = ["abc", "de", "fg"]
    every = {"".join(chunks[i:j]) for i in range(4) for j in range(i, 4)}
    env.check_masks(g, "|".join(sorted(every)), ["", "de", "abcde"])
    g = ebnf(env, 'root ::= Token(0) content\ncontent ::= [a-z]+')
    env.check(g, [[0, "abc"]], [["abc"], [128000, "abc"]])
    ebnf(env, 'root ::= "a" ExcludeToken(0, 2)')
    with pytest.raises(stencil.GrammarError, match=r"line 1, column 10: TagDispatch\(...\): not supported"):
        ebnf(env, 'root ::= TagDispatch(("<tool>", tool), loop_after_dispatch=false)\ntool ::= "get_weather"')
    with pytest.raises(stencil.GrammarError, match=r"Regex\(...\): unknown argument pattern="):
        ebnf(env, 'root ::= Regex("a", pattern="b")')
    with pytest.raises(stencil.GrammarError, match=r"Substring\(...\): every chunk must be a string"):
        ebnf(env, 'root ::= Substring("a", 3)')


def test_complete_examples(env):
    g = ebnf(env, r'''
root   ::= "\"" char* "\""
char   ::= [^"\\\x00-\x1f] | "\\" escape
escape ::= ["\\/bfnrt] | "u" [0-9A-Fa-f]{4}
''')
    env.check(g, ['"hello"', '"line1\\nline2"', '"\\u00e9"'], ['"abc', '"\\x"', '"\\u12"'])
    env.check_masks(g, r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4}))*"', ['', '"', '"a\\', '"\\u0'])
    g = ebnf(env, r'''
root ::= basic_array | basic_object
basic_any ::= basic_number | basic_string | basic_boolean | basic_null | basic_array | basic_object
basic_number ::= ("0" | "-"? [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?
basic_string ::= (([\"] basic_string_1 [\"]))
basic_string_1 ::= "" | [^"\\\x00-\x1F] basic_string_1 | "\\" escape basic_string_1
escape ::= ["\\/bfnrt] | "u" [A-Fa-f0-9] [A-Fa-f0-9] [A-Fa-f0-9] [A-Fa-f0-9]
basic_boolean ::= "true" | "false"
basic_null ::= "null"
basic_array ::= "[" ("" | ws basic_any (ws "," ws basic_any)*) ws "]"
basic_object ::= "{" ("" | ws basic_string ws ":" ws basic_any ( ws "," ws basic_string ws ":" ws basic_any)*) ws "}"
ws ::= [ \n\t]*
''')
    env.check(g, ['{"a": [1, 2.5e3, true, null]}', "[]", '[{"k":"v"}]'], ['{"a" 1}', "[1,]", "1"])


# ===================================== Lark =========================================================

def test_lark_intro_and_structure(env):
    g = lark(env, '%import common.INT\n%import common.WS\n%ignore WS\nstart: item ("," item)*\nitem: "id=" INT')
    env.check(g, ["id=1", "id=1, id=42", "id=1 ,id=2 , id=3"], ["id=", "id=1,", "id = 1x"])
    g = lark(env, 'start: value (";" value)*\nvalue: INT | NAME | "(" value ")"\nINT: /[0-9]+/\nNAME: /[a-z]+/\n'
                  '?alias: "a" -> first')
    env.check(g, ["1;ab;(2)"], ["1;", "(1"])


def test_lark_literals_and_regex_flags(env):
    env.check(lark(env, 'start: "yes"i'), ["yes", "YES", "yEs"], ["y"])
    env.check(lark(env, 'start: "α".."γ"'), ["β"], ["δ"])
    env.check(lark(env, 'start: /a.b/'), ["acb", "a😀b"], ["a\nb"])
    env.check(lark(env, 'start: /a.b/s'), ["a\nb"], ["ab"])
    # XGrammar folds ASCII letters only; stencil's `i` folds as Python's re and llguidance's Rust
    # regex do (Unicode), so it also takes "σk": a superset there, the documented cases agree
    env.check(lark(env, 'start: /Σk+/i'), ["Σk", "ΣKK"], ["Σ", "Σkx"])


def test_lark_repetition_table(env):
    for form, good, bad in [("~3", ["xxx"], ["xx"]), ("~2..4", ["xx", "xxxx"], ["x", "xxxxx"]),
                            ("{3}", ["xxx"], ["xxxx"]), ("{2,4}", ["xxxx"], ["xxxxx"]),
                            ("{2,}", ["xxxxxxx"], ["x"]), ("{,4}", ["", "xxxx"], ["xxxxx"]), ("{0}", [""], ["x"])]:
        env.check(lark(env, f'start: "x"{form}'), good, bad)
    with pytest.raises(stencil.GrammarError, match="the maximum is below the minimum"):
        lark(env, 'start: "x"{4,2}')


def test_lark_grammar_options(env):
    g = lark(env, '%grammar_options {"allow_initial_skip": true}\n%import common.WS\n%ignore WS\nstart: "a" "b"')
    # %grammar_options marks XGrammar's Lark dialect: a skip may also follow the last lexeme
    env.check(g, ["ab", " a b", "a \n b "], ["a b c"])
    # XGrammar's default: %ignore content may not come before the first lexeme
    g = lark(env, '%grammar_options {"allow_initial_skip": false}\n%import common.WS\n%ignore WS\nstart: "a" "b"')
    env.check(g, ["ab", "a \n b "], [" a b", "\nab"])
    with pytest.raises(stencil.GrammarError, match="unknown %grammar_options option 'allow_skip'"):
        lark(env, '%grammar_options {"allow_skip": true}\nstart: "a"')
    with pytest.raises(stencil.GrammarError, match="takes true or false"):
        lark(env, '%grammar_options {"allow_initial_skip": 1}\nstart: "a"')


def test_lark_nested_grammar(env):
    g = lark(env, '''
start: "[" %lark {
  %import common.WS
  %ignore WS
  start: item ":" %json {"type": "integer"}
  item: "x" | "(" item ")"
} "]"
''')
    env.check(g, ["[x:1]", "[ ( x ) :5]", "[((x)):-3]"], ["[x]", "[x:1.5]", "[y:1]"])
    # names inside are its own: `item` here differs from the outer `item`
    g = lark(env, 'start: item %lark { start: item\nitem: "b" }\nitem: "a"')
    env.check(g, ["ab"], ["aa", "bb"])
    # the block's own %ignore at its edges too (before its first terminal and after its last), never
    # outside it: the outer grammar has none
    g = lark(env, 'start: "<" %lark {\nstart: "a" "b"\n%ignore " "\n} ">" "!"')
    env.check(g, ["<ab>!", "< a b >!", "<  ab>!", "<ab  >!"], ["<ab> !", " <ab>!", "<ab>! ", "<a_b>!"])
    with pytest.raises(stencil.GrammarError, match="differs from the enclosing grammar's"):
        lark(env, '%ignore " "\nstart: "a" %lark {\n%ignore "_"\nstart: "b" "c"\n}')
    with pytest.raises(stencil.GrammarError, match="never closed"):
        lark(env, 'start: "a" %lark { start: "b"')


def test_lark_substring(env):
    env.check(lark(env, 'start: %regex {"substring_chunks": ["abc", "de", "fg"]}'), ["abcde", ""], ["cde"])
    g = lark(env, 'start: A\nA: %regex {"substring_chars": "abc"}')
    env.check(g, ["a", "bc", "abc", ""], ["ac", "cb"])


def test_lark_special_tokens(env):
    env.check(lark(env, 'start: "a" <[128000-128002]>'), [["a", 128001]], [["a", 128003]])
    env.check(lark(env, 'start: "a" <[0,128000-128001]>'), [["a", 0]], [["a", 128002]])
    # <[^ids]> and <[*]>: as GBNF's !<[ids]>, text that is not those tokens
    env.check(lark(env, 'start: "a" <[^0]>'), ["ab", "a xyz"], ["a", ["a", 0]])
    env.check(lark(env, 'start: "a" <[*]>'), ["ab"], ["a"])


def test_lark_rule_options(env):
    g = lark(env, 'start: "<" name ">" rest\nname[lazy]: /[a-z]+/\nrest: /[a-z]+/')
    env.check(g, ["<a>bc"], ["<ab>c"])
    g = lark(env, 'start: field "?"\nfield[suffix="!", stop_capture="marker"]: /[a-z]*/')
    env.check(g, ["ab!?", "!?"], ["ab?", "a!b!?"])
    env.check(lark(env, 'start: "answer:" value\nvalue[temperature=0.7]: /[a-z]+/'), ["answer:abc"], ["answer:"])
    # max_chars: at most N code points, stated on the lexeme by intersection
    g = lark(env, 'start: "<" v ">"\nv[max_chars=5, capture="v"]: /[a-zé]+/')
    env.check(g, ["<a>", "<abcdé>"], ["<abcdef>", "<>"])
    env.check_masks(g, r"<[a-zé]{1,5}>", ["", "<", "<abc", "<abcdé"])
    # max_tokens: a body that can end anywhere ends once its budget is spent (see also
    # test_dialect_llguidance.test_max_tokens_masks_match_the_token_oracle)
    g = lark(env, 'start: "<think>" reasoning "</think>" answer\nreasoning[max_tokens=3, capture="reasoning"]: TEXT\n'
                  'answer: /[0-9]+/\nTEXT: /(.|\\n)*/')
    a, b, c, d = (env.info.token_id(x) for x in "abcd")
    think, end = env.info.token_id("<think>"), env.info.token_id("</think>")
    # (TEXT is greedy: it would take "</think>" too, so the budget is what ends it here)
    env.check(g, [[think, a, b, c, end, "42"]], [[think, a, b, c, d], [think, a, b, c, "x"], [think, a, b, c]])
    with pytest.raises(stencil.GrammarError, match="max_chars takes a non-negative integer"):
        lark(env, 'start: r\nr[max_chars="5"]: /a*/')


def test_lark_tool_call_dispatch(env):
    g = lark(env, r'''
start: tool* tail
tail: TEXT
tool_head[lazy]: TEXT "<tool_call>"
tool: tool_head %json {
  "type": "object",
  "properties": {"x": {"type": "integer"}},
  "required": ["x"],
  "additionalProperties": false
} "</tool_call>"
TEXT: /(\n|.)*/
''')
    env.check(g, ["plain text", 'a<tool_call>{"x": 1}</tool_call>b', "partial <tool_cal",
                  '<tool_call>{"x":1}</tool_call><tool_call>{"x":2}</tool_call>'],
              ['<tool_call>{"y": 1}</tool_call>', '<tool_call>{"x": 1}'])
    g = lark(env, 'start: head "x"\nhead[suffix="<tool>"]: TEXT\nTEXT: /(\\n|.)*/')
    env.check(g, ["abc<tool>x"], ["abc<tool>"])
