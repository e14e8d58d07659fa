"""Lark front-end through the Matcher with the DeepSeek tokenizer: arithmetic, a SQL SELECT subset,
a Python-like language with significant indentation, XML with a fixed set of tags, CSV with a
fixed column count, dates and phone numbers, embedded JSON Schemas, special tokens, %regex and
stop/lazy rules, Lark and GBNF versions of the same languages, and errors with positions.

Sampled strings (with white space between all terminals) must be accepted; mutated strings must
get the character-level oracle's verdict, both ways (valid mutants accepted, invalid ones
rejected), so that neither a completeness nor a soundness bug of the Lark front end hides."""
from __future__ import annotations

import random
import re

import pytest

import stencil
from grammar_oracle import accepts, CharEarley, encode_segments, feed
from oracle_grammars import alphabet, mutate, sample
from oracle_grammars import parse_gbnf as read_gbnf   # the oracle's own parsers
from oracle_lark import lark as read_lark


def check_language(env, text: str, good: list, bad: list, *, samples: int = 15, mutants: int = 40,
                   seed: int = 0, ignore_prob: float = 1.0, max_len: int = 120):
    """Hand-written good/bad strings, then sampled strings and oracle-checked mutants, both ways.
    The oracle knows no lexer: this holds for grammars whose terminals cannot run into each other
    (``A: "a"+`` before ``B: "ab"`` refuses "aab" in Lark and stencil alike, not in the oracle)."""
    _, compiler, _ = env
    compiled = compiler.compile_lark(text)
    for s in good:
        assert accepts(env, compiled, s), f"rejected valid {s!r}"
    for s in bad:
        assert not accepts(env, compiled, s), f"accepted invalid {s!r}"
    ast = read_lark(text)
    oracle = CharEarley(ast)
    rng = random.Random(seed)
    chars = alphabet(ast) + " \n"
    rejected = kept = 0
    for _ in range(samples):
        s = "".join(sample(ast, rng, ignore_prob=ignore_prob, max_len=max_len))
        assert oracle.run(list(s)) == (len(s), True)
        assert accepts(env, compiled, s), f"rejected sampled {s!r}"
        for _ in range(mutants // samples + 1):
            m = mutate(s, rng, chars)
            valid = oracle.run(list(m)) == (len(m), True)
            assert accepts(env, compiled, m) == valid, f"{m!r}: the oracle says {valid}"
            rejected += not valid
            kept += valid
    assert rejected >= mutants // 4
    print(f"{samples} samples, {rejected} mutants rejected, {kept} accepted, as the oracle says")
    return compiled


ARITH = r'''
start: expr
?expr: term (ADD term)*
?term: factor (MUL factor)*
?factor: NUMBER | "-" factor | "(" expr ")" | NAME "(" [expr ("," expr)*] ")"
ADD: "+" | "-"
MUL: "*" | "/" | "%"
NAME: /[a-z]+/
%import common.NUMBER
%import common.WS_INLINE
%ignore WS_INLINE
'''


def test_arithmetic(env):
    check_language(env, ARITH,
                   ["1+2", "(1 + 2) * 3", "-(3.5e2)/4 % 2", "max(1, 2 * x(3))", "f()", "1.5 - -2"],
                   ["1+", "1 2", "((1)", "1 + * 2", "f(1,)", "x", "1..2", ""])


SQL = r'''
start: select ";"?
select: "SELECT"i ["DISTINCT"i] columns "FROM"i table where? order? limit?
columns: "*" | column ("," column)*
column: (ref | func "(" (ref | "*") ")") ["AS"i NAME]
func: "COUNT"i | "SUM"i | "AVG"i | "MIN"i | "MAX"i
table: NAME ("JOIN"i NAME "ON"i comparison)*
where: "WHERE"i condition
condition: comparison (("AND"i | "OR"i) comparison)*
comparison: operand CMP operand | "(" condition ")"
operand: ref | NUMBER | STRING
ref: NAME ("." NAME)?
order: "ORDER"i "BY"i ref ("ASC"i | "DESC"i)?
limit: "LIMIT"i INT
CMP: "=" | "!=" | "<>" | "<" | ">" | "<=" | ">="
NAME: /[a-z_][a-z0-9_]*/
STRING: /'([^'\n]|'')*'/
%import common (INT, NUMBER, WS)
%ignore WS
'''


def test_sql_select(env):
    check_language(env, SQL, [
        "SELECT * FROM users",
        "select name, age as years from users where age >= 18 and name != 'bob' order by age desc limit 10;",
        "SELECT COUNT(*) FROM orders",
        "SELECT DISTINCT u.name FROM users JOIN orders ON users.id = orders.user_id WHERE (a = 1 OR b <> 'x''y')",
        "SELECT max(price) AS top FROM items LIMIT 1",
    ], [
        "SELECT FROM users",
        "SELECT * users",
        "SELECT * FROM users WHERE",
        "SELECT * FROM users LIMIT ten",
        "SELECT * FROM users ORDER age",
        "SELECT name FROM t WHERE name = 'unterminated",
        "DELETE FROM users",
        "SELECT * FROM users;;",
    ])


def python_like(depth: int = 3) -> str:
    """A Python-like language whose blocks are marked by indentation, written for a bounded
    depth: block_d holds statements indented by 4*d spaces, and a compound statement at depth
    d opens block_(d+1). Exact for programs nested at most ``depth`` levels."""
    lines = ["start: block_0"]
    for d in range(depth + 1):
        ind = f'"{"    " * d}" ' if d else ""
        lines.append(f"block_{d}: stmt_{d}+")
        alts = [f"{ind}simple NL"]
        if d < depth:
            alts.append(f'{ind}header ":" NL block_{d + 1}')
            alts.append(f'{ind}"if" SP expr ":" NL block_{d + 1} ({ind}"else" ":" NL block_{d + 1})?')
        lines.append(f"stmt_{d}: " + "\n    | ".join(alts))
    lines.append(r'''
simple: NAME SP "=" SP expr | "pass" | "return" (SP expr)? | call
call: NAME "(" [expr ("," SP expr)*] ")"
header: "while" SP expr | "for" SP NAME SP "in" SP expr | "def" SP NAME "(" [NAME ("," SP NAME)*] ")"
expr: term (SP OP SP term)*
term: NAME | NUMBER | call | "(" expr ")"
OP: "+" | "-" | "*" | "<" | ">" | "=="
NAME: /[a-z_][a-z0-9_]*/
NUMBER: /[0-9]+/
SP: " "
NL: "\n"
''')
    return "\n".join(lines)


def test_python_like_indentation(env):
    good = [
        "x = 1\n",
        "def f(a, b):\n    if a < b:\n        return a\n    else:\n        return b\nprint(f(1, 2))\n",
        "for i in range(10):\n    while i > 0:\n        i = i - 1\n        if i == 3:\n            pass\n    total = total + i\n",
        "if x:\n    pass\nelse:\n    y = (x + 1) * 2\n",
    ]
    bad = [
        "x = 1",                                   # no final newline
        "if x:\npass\n",                           # block not indented
        "if x:\n    pass\n  y = 1\n",              # dedent to a level that does not exist
        "x = 1\n    y = 2\n",                      # indent without a header
        "def f(a):\n    return a\n        x = 1\n",  # indent after a simple statement
        "if x\n    pass\n",                        # missing colon
        "else:\n    pass\n",                       # else without if
        "a:\n    b:\n        c:\n            d:\n                pass\n",   # not a header
        "while a:\n    while b:\n        while c:\n            while d:\n                pass\n",  # depth 4
    ]
    check_language(env, python_like(3), good, bad, samples=10, mutants=40, ignore_prob=0.0, max_len=200)


XML = r'''
start: note
note: "<note" ATTR* ">" (to | from | heading | body | TEXT)* "</note>"
to: "<to>" TEXT? "</to>"
from: "<from>" TEXT? "</from>"
heading: "<heading>" TEXT? "</heading>"
body: "<body>" (TEXT | b | i)* "</body>"
b: "<b>" (TEXT | i)* "</b>"
i: "<i>" (TEXT | b)* "</i>"
ATTR: /\s+[a-z]+="[^"<&]*"/
TEXT: /([^<&]|&(amp|lt|gt|quot|apos);)+/
'''


def test_xml_fixed_tags(env):
    check_language(env, XML, [
        '<note><to>Tove</to><from>Jani</from><heading>Reminder</heading><body>Don\'t forget <b>me</b> '
        'this <i>week<b>end</b></i> &amp; after!</body></note>',
        '<note id="1" lang="en">\n  <to></to>\n</note>',
    ], [
        "<note><to>Tove</from></note>",
        "<note><p>x</p></note>",
        "<note><body>a & b</body></note>",
        "<note><body><b>x</i></b></body></note>",
        "<note>",
        '<note id=1></note>',
    ], ignore_prob=0.0)


CSV = r'''
start: header row*
header: NAME "," NAME "," NAME NL
row: field "," field "," field NL
field: PLAIN | QUOTED
NAME: /[A-Za-z_]+/
PLAIN: /[^,"\n]*/
QUOTED: /"([^"]|"")*"/
NL: "\n"
'''


def test_csv_fixed_columns(env):
    check_language(env, CSV, [
        "name,age,city\n",
        "name,age,city\nAda,36,London\n\"Lovelace, Ada\",,\"said \"\"hi\"\"\"\n",
    ], [
        "name,age\n",
        "name,age,city\nAda,36\n",
        "name,age,city\nAda,36,London,UK\n",
        "name,age,city\n\"unclosed,1,2\n",
        "name,age,city\nAda,36,London",
    ], ignore_prob=0.0)


def test_dates_and_phone_numbers(env):
    _, compiler, _ = env
    date = compiler.compile_regex(r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])")
    for s in ["2024-02-29", "1999-12-31", "0001-01-01"]:
        assert accepts(env, date, s)
    for s in ["2024-13-01", "2024-00-10", "2024-1-01", "2024-01-32", "24-01-01", "2024-01-01T"]:
        assert not accepts(env, date, s)
    phone = compiler.compile_regex(r"(\+1[ -]?)?(\(\d{3}\)|\d{3})[ -]?\d{3}-\d{4}")
    for s in ["+1 (555) 123-4567", "555-123-4567", "(555)123-4567", "+1-555 123-4567"]:
        assert accepts(env, phone, s)
    for s in ["555-1234", "+2 555 123-4567", "(555 123-4567", "555-123-45678", "phone"]:
        assert not accepts(env, phone, s)
    # the same as Lark terminals inside a rule
    lark = compiler.compile_lark(r'''
        start: entry ("\n" entry)*
        entry: NAME ": " (DATE | PHONE)
        NAME: /[A-Z][a-z]+/
        DATE: /\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])/
        PHONE: /(\+1[ -]?)?(\(\d{3}\)|\d{3})[ -]?\d{3}-\d{4}/
    ''')
    assert accepts(env, lark, "Born: 1815-12-10\nCall: +1 (555) 123-4567")
    assert not accepts(env, lark, "Born: 1815-13-10")
    assert not accepts(env, lark, "Call: 555-12-4567")


# --- extensions ---------------------------------------------------------------------------------

def test_json_schema_embedding(env):
    _, compiler, _ = env
    g = compiler.compile_lark(r'''
        start: "Answer: " (point | label) "."
        point: %json {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                      "required": ["x", "y"], "additionalProperties": false}
        label: %json {"enum": ["red", "green"]}
    ''')
    assert accepts(env, g, 'Answer: {"x": 1, "y": -2}.')
    assert accepts(env, g, 'Answer: "green".')
    assert not accepts(env, g, 'Answer: {"x": 1}.')
    assert not accepts(env, g, 'Answer: {"x": 1, "y": 2, "z": 3}.')
    assert not accepts(env, g, 'Answer: "blue".')
    # the schema's white space stays inside its value: the Lark rules around it keep theirs
    assert accepts(env, g, 'Answer: {\n  "x" : 1 ,"y":2\n}.')
    assert not accepts(env, g, 'Answer:  {"x": 1, "y": 2}.') and not accepts(env, g, 'Answer: "red" .')
    g = compiler.compile_lark('start: "x" "y" v\nv: %json {"type": "array"}')
    assert accepts(env, g, "xy[ ]") and not accepts(env, g, "x y[]") and not accepts(env, g, "xy []")
    g = compiler.compile_lark('start: "x" "y" v\nv: %json {"type": "array"}\n%ignore " "')
    assert accepts(env, g, "x y [ 1 ]")   # unless the Lark grammar ignores it itself
    with pytest.raises(stencil.GrammarError, match=r"line 2, column 4: in the %json schema: minimum"):
        compiler.compile_lark('start: x\nx: %json {"type": "integer", "minimum": "x"}')
    with pytest.raises(stencil.GrammarError, match="line 1, column 22: bad JSON"):
        compiler.compile_lark('start: %json {"type" "object"}')


def test_special_tokens(env):
    entry, compiler, bitmask = env
    tok = entry.info
    eos_name = tok.special_token_names[1]
    g = compiler.compile_lark(f'start: <[128000]> TEXT <[128001,128002]> {eos_name}\nTEXT: /[a-z ]+/')
    assert feed(stencil.Matcher(g), [128000] + encode_segments(entry, ["hello there"]) + [128002, 1], bitmask)[1]
    assert feed(stencil.Matcher(g), [128000] + encode_segments(entry, ["hello"]) + [128003], bitmask)[0] == 2
    # <|name|> that is ordinary text in this tokenizer stands for that text
    with pytest.raises(stencil.GrammarError, match="no token <\\|im_end\\|>"):
        compiler.compile_lark("start: <|im_end|>")
    with pytest.raises(stencil.GrammarError, match="needs a tokenizer"):
        from stencil.grammar.ebnf.lark import lark_grammar
        lark_grammar("start: <|im_end|>")


def test_stop_and_lazy_rules(env):
    entry, compiler, bitmask = env
    g = compiler.compile_lark(r'''
        start: think ANSWER
        think[stop="</think>"]: "<think>" /(.|\n)*/
        ANSWER: /\s*[0-9]+/
    ''')
    assert accepts(env, g, "<think>Maybe 4? 5 </thin no, </think>\n42")
    assert not accepts(env, g, "<think>x</think> 4 </think> 4")
    g = compiler.compile_lark(r'''
        start: text "!"
        text[lazy]: /[a-z]+/
    ''')
    assert accepts(env, g, "a!") and not accepts(env, g, "ab!")   # lazy: ends after one letter
    g = compiler.compile_lark('start: free "x"\nfree[stop=<[128001]>]: /[a-z ]*/')
    assert feed(stencil.Matcher(g), encode_segments(entry, ["some text"]) + [128001] + encode_segments(entry, ["x"]),
                bitmask)[1]


def test_regex_options(env):
    _, compiler, _ = env
    g = compiler.compile_lark('start: "name: " NAME\nNAME: %regex {"pattern": "[A-Za-z ]+", "max_length": 8, '
                              '"not_containing": ["  "]}')
    assert accepts(env, g, "name: Ada Byro")
    assert not accepts(env, g, "name: Ada Byron")      # 9 characters
    assert not accepts(env, g, "name: Ada  B")         # two spaces
    with pytest.raises(stencil.GrammarError, match="unknown %regex option"):
        compiler.compile_lark('start: X\nX: %regex {"substring": "abc"}')


def test_terminal_composition_and_syntax(env):
    _, compiler, _ = env
    g = compiler.compile_lark(r'''
        // comments, priorities, aliases, templates of common Lark grammars
        ?start: pair ("," pair)*        -> items
        pair.2: KEY "=" value
        !value: HEX | "true"i | "a".."f" ~ 2..3 | ESC
        KEY: LETTER (LETTER | DIGIT | "_")*
        HEX.3: "0x" HEXDIGIT ~ 2 | "0X" HEXDIGIT ~ 4
        ESC: "\"" ("\\" /./ | /[^"\\]/)* "\""
        %import common (LETTER, DIGIT, HEXDIGIT)
        %import common.WS -> SPACE
        %ignore SPACE
    ''')
    assert accepts(env, g, 'a1=0xff, b_2 = TRUE, c=abc, d="q\\"x"')
    for bad in ["a=0xf", "a=0XFFF", "a=g", "a=abcd", "1a=true", 'a="\\"']:
        assert not accepts(env, g, bad), bad


# --- Lark and GBNF versions of the same language ------------------------------------------------

SAME = {
    "arithmetic": (
        r'''
        start: expr
        expr: term (("+" | "-") term)*
        term: factor (("*" | "/") factor)*
        factor: NUMBER | "(" expr ")" | "-" factor
        NUMBER: /[0-9]+(\.[0-9]+)?/
        ''',
        r'''
        root ::= expr
        expr ::= term (("+" | "-") term)*
        term ::= factor (("*" | "/") factor)*
        factor ::= number | "(" expr ")" | "-" factor
        number ::= [0-9]+ ("." [0-9]+)?
        '''),
    "key-value list": (
        r'''
        start: "[" [pair (", " pair)*] "]"
        pair: KEY ": " (VALUE | start)
        KEY: /[a-z]+/
        VALUE: /"[^"]*"/ | /-?[0-9]+/
        ''',
        r'''
        root ::= "[" (pair (", " pair)*)? "]"
        pair ::= key ": " (value | root)
        key ::= [a-z]+
        value ::= "\"" [^"]* "\"" | "-"? [0-9]+
        '''),
    "csv": (CSV, r'''
        root ::= header row*
        header ::= name "," name "," name "\n"
        row ::= field "," field "," field "\n"
        field ::= [^,"\n]* | "\"" ([^"] | "\"\"")* "\""
        name ::= [A-Za-z_]+
        '''),
}


@pytest.mark.parametrize("name", sorted(SAME))
def test_lark_and_gbnf_agree(env, name):
    _, compiler, _ = env
    lark_text, gbnf_text = SAME[name]
    lark_g, gbnf_g = compiler.compile_lark(lark_text), compiler.compile_gbnf(gbnf_text)
    lark_ast, gbnf_ast = read_lark(lark_text), read_gbnf(gbnf_text)
    oracle = CharEarley(gbnf_ast)
    rng = random.Random(11)
    chars = alphabet(gbnf_ast) + " x"
    agree = rejected = 0
    for k in range(60):
        base = "".join(sample(lark_ast if k % 2 else gbnf_ast, rng, max_len=60))
        for s in (base, mutate(base, rng, chars), mutate(mutate(base, rng, chars), rng, chars)):
            a = stencil.Matcher(lark_g)
            b = stencil.Matcher(gbnf_g)
            va = a.accept_string(s) and a.is_accepting()
            vb = b.accept_string(s) and b.is_accepting()
            assert va == vb == (oracle.run(list(s)) == (len(s), True)), f"{name}: {s!r} lark={va} gbnf={vb}"
            agree += 1
            rejected += not va
    assert rejected >= 30
    print(f"{name}: {agree} strings, same verdict from Lark, GBNF and the oracle ({rejected} rejected)")


# --- errors -------------------------------------------------------------------------------------

ERRORS = [
    ("start: foo", "line 1, column 8: rule 'foo' is used but never defined"),
    ("start: FOO", "line 1, column 8: terminal FOO is used but never defined"),
    ('start: A\nA: "x" b\nb: "y"', "line 2, column 8: 'A' must be made of strings, regexes and terminals, but refers to the rule 'b'"),
    ('start: A\nA: "x" B\nB: A', "terminal A is defined in terms of itself (A -> B -> A)"),
    ('start: "abc', "line 1, column 8: string is not closed"),
    ("start: /ab", "line 1, column 8: regular expression /.../ is not closed"),
    ('start: ("a" | "b"', "line 1, column 8: '(' is never closed"),
    ('start: "a" ]', "line 1, column 12: unbalanced ']'"),
    ('start: ("a"]', "line 1, column 12: ']' does not match the '('"),
    ('start: "a"\n%frobnicate', "line 2, column 1: unknown directive %frobnicate"),
    ('start: "a"\n%declare FOO', "line 2, column 1: %declare is not supported"),
    ('start: "\\q"', "line 1, column 9: bad escape '\\q'"),
    ('start: "\\u12"', "line 1, column 9: bad escape '\\u'"),
    ("start: /a(b/", "line 1, column 8: in /a(b/"),
    ("start: /^a/", "anchors"),
    ("start: /a/m", "line 1, column 8: unsupported regex flag 'm'"),
    ('start: a\na: "x" a', "line 2, column 1: rule 'a' can never complete"),
    ("start: start", "the grammar's language is empty"),
    ('start: _sep{"a"}', "templates such as _sep{...} are not supported"),
    ("start: X\n%import common.NOPE -> X", "the common library has no terminal NOPE"),
    ("start: X\n%import other.X", "only the `common` library"),
    ('start: "a"\nstart: "b"', "line 2, column 1: 'start' is defined twice"),
    ('start[max_tokens=0]: "a"', "max_tokens takes a positive integer"),
    ('start[colour=5]: "a"', "unknown attribute 'colour'"),
    ('start: * "a"', "line 1, column 8: '*' has nothing to repeat"),
    ('start: "a" ~ 3..1', "maximum is below the minimum"),
    ('start: "b".."a"', "bad range"),
    ('other: "a"', "there is no start rule 'start'"),
    ("start: a\n  a", "expected ':' after the rule name 'a'"),
    ("start: <[x]>", "bad token id list"),
    ("start: " + '("a" ' * 500 + ')*' * 500, "brackets nest deeper than 100 levels"),
    ('start: "a" | \n| | "b" @', "line 2, column 9: unexpected character '@'"),
]


@pytest.mark.parametrize("text,message", ERRORS)
def test_errors_have_positions(env, text, message):
    _, compiler, _ = env
    with pytest.raises(stencil.GrammarError, match=re.escape(message)):
        compiler.compile_lark(text)


def test_left_recursion(env):
    g = check_language(env, r'''
        start: list
        list: list "," item | item
        item: WORD | "[" list "]"
        %import common.WORD
        %ignore " "
    ''', ["a", "a, b", "[a, b], c, [[d]]"], ["a,", ",a", "[a", "a b"], samples=8, mutants=16)
    assert g is not None


def test_unused_rules_and_terminals_are_reported(env):
    from stencil.grammar.ebnf import GrammarWarning
    _, compiler, _ = env
    with pytest.warns(GrammarWarning) as record:
        compiler.compile_lark('start: "a"\nspare: "b"\nB: "b"')
    messages = sorted(str(w.message) for w in record)
    assert any("line 2, column 1: rule 'spare' is never used" in m for m in messages), messages
    assert any("line 3, column 1: terminal B is never used" in m for m in messages), messages
    with pytest.raises(stencil.GrammarError, match=re.escape("line 2, column 1: terminal B is never used")):
        compiler.compile_lark('start: "a"\nB: "b"', unused="error")


@pytest.mark.parametrize("ops, same_as", [("+++", "+"), ("+*", "*"), ("*+", "*"), ("?*", "*"), ("+?", "*"),
                                          ("??", "?"), ("?+", "*")])
def test_nested_repetitions_fold_to_one(ops, same_as):
    """A repetition of a repetition is one repetition of the same language: (x+)+ is x+. Nested
    as written, every split of a run is a parse (the fuzzer's x+++... a hundred deep took 33 s
    a walk); folded, masks and verdicts are those of the single operator."""
    import stencil
    tok = stencil.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)] + [b"<eos>"], eos_token_ids=[256])
    compiler = stencil.GrammarCompiler(tok)
    nested = compiler.compile_lark('start: "<" X' + ops + ' ">"\nX: "ab"')
    single = compiler.compile_lark('start: "<" X' + same_as + ' ">"\nX: "ab"')
    for text in ["<>", "<ab>", "<abab>", "<ababab>", "<aba>", "<abb>"]:
        verdicts = []
        for g in (nested, single):
            m = stencil.Matcher(g)
            verdicts.append(all(m.accept_token(b) for b in text.encode()) and m.is_accepting())
        assert verdicts[0] == verdicts[1], (ops, text)
    deep = compiler.compile_lark('start: "<" X' + "+" * 100 + ' ">"\nX: "ab"')
    m = stencil.Matcher(deep, time_limit=5)
    assert all(m.accept_token(b) for b in b"<" + b"ab" * 50 + b">") and m.is_accepting()
