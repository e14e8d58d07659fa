"""A deterministic corpus of test texts that stress tokenizers.

``generate_corpus(n, seed)`` returns ``n`` strings cycling through categories: English prose,
source code in several languages, JSON, CJK, emoji (ZWJ sequences, flags, skin tones, keycaps)
and other 4-byte characters, combining marks, runs of spaces/tabs/newlines, mixed scripts,
Arabic/Hebrew/Devanagari/Thai, control characters, and random code points. Every text is valid
Unicode (no lone surrogates), so ``text.encode("utf-8")`` works.
"""
from __future__ import annotations

import json
import random

WORDS = (
    "the of and to in is was that for it with as his on be at by had are but from or have an they "
    "which one you were all her she there would their we him been has when who will no more if out so "
    "said what up its about than into them can only other time new some could these two may first then "
    "do any like my now over such our man me even most made after also did many off before must well "
    "back through years much where your way down should because each just those people how too little "
    "state good very make world still see own men work long here get both between life being under "
    "never day same another know while last might us great old year since against go came right used "
    "take three himself few house use during without again place around however home small found "
    "Mrs thought went say part once general high upon school every don't does got united left number "
    "course war until always away something fact though water less public put think almost hand enough "
    "far took head yet government system better set told nothing night end why called didn't eyes find "
    "going look asked later knew point next city business give group toward young let room president "
    "side social present given several order national possible rather second face per among form "
    "important often things looked early white case John become large big need four within felt along "
    "children saw best church ever least power development light thing seemed family interest want "
    "members mind country area others done turned although open God service certain kind problem began "
    "different door thus help sense means whole matter perhaps itself York it's times law human line "
    "above name example action company hands local show whether five history gave today either act "
    "feet across taken past quite anything seen having death week experience body word half really field "
    "tokenizer grammar schema regex parser Earley lexer automaton derivative Brzozowski supercalifragilistic "
    "antidisestablishmentarianism naïve café résumé coöperate façade jalapeño Zürich São Paulo"
).split()

PUNCT = [".", ",", ";", ":", "!", "?", "...", " -", " —", "'s", "\"", "(", ")"]

PY_KEYWORDS = ["def", "class", "return", "if", "else", "elif", "for", "while", "in", "import", "from", "lambda", "yield", "with", "as", "try", "except", "raise", "None", "True", "False"]
IDENTS = ["x", "y", "idx", "value", "result", "buffer", "self", "tokenizer", "_private", "__init__", "camelCase", "snake_case_name", "HTTPServer", "i18n", "ÜberVar", "变量", "データ"]


def _ident(r: random.Random) -> str:
    return r.choice(IDENTS) + (str(r.randint(0, 99)) if r.random() < 0.2 else "")


def prose(r: random.Random) -> str:
    out = []
    for _ in range(r.randint(1, 4)):
        words = [r.choice(WORDS) for _ in range(r.randint(3, 25))]
        words[0] = words[0].capitalize()
        s = " ".join(words)
        if r.random() < 0.3:
            k = r.randrange(len(s))
            s = s[:k] + r.choice(PUNCT) + s[k:]
        out.append(s + r.choice([".", "!", "?", "...", ":"]))
    sep = r.choice([" ", "  ", "\n", "\n\n", " \n"])
    text = sep.join(out)
    if r.random() < 0.2:
        text = text.upper()
    if r.random() < 0.2:
        text = f"{r.randint(0, 10**r.randint(1, 12))} {text} {r.random():.{r.randint(1, 8)}f}"
    return text


def code(r: random.Random) -> str:
    lang = r.choice(["python", "js", "c", "rust", "go", "sql", "html", "shell", "haskell", "latex"])
    a, b, c = _ident(r), _ident(r), _ident(r)
    n = r.randint(0, 1000)
    ind = r.choice(["    ", "  ", "\t", "        "])
    if lang == "python":
        body = [f"def {a}({b}, {c}={n}):", f'{ind}"""Docstring with {r.choice(WORDS)}."""',
                f"{ind}if {b} is None and {c} >= {n}:", f"{ind}{ind}return [{b} ** 2 for {b} in range({n})]",
                f"{ind}{r.choice(PY_KEYWORDS)} {a}.{b}({c!r})", f"{ind}return f'{{{b}!r}}:{{{c}:>10}}'  # comment"]
    elif lang == "js":
        body = [f"const {a} = async ({b}, ...{c}) => {{", f"{ind}await fetch(`/api/${{{b}}}?q=${n}`);",
                f"{ind}return {c}.map(x => x?.{a} ?? null).filter(Boolean);", "};", f"export default {{ {a} }};"]
    elif lang == "c":
        body = ["#include <stdio.h>", f"static int {a}(const char *{b}, size_t {c}) {{",
                f"{ind}for (size_t i = 0; i < {c}; ++i) {{ if ({b}[i] == '\\\\n') return -{n}; }}",
                f'{ind}printf("%s=%zu\\n", {b}, {c});', f"{ind}return {n} << 2 | 0x{n:x};", "}"]
    elif lang == "rust":
        body = [f"fn {a}<'a>({b}: &'a [u8]) -> Result<Vec<u32>, Box<dyn std::error::Error>> {{",
                f"{ind}let {c}: Vec<_> = {b}.iter().map(|&x| x as u32).collect();",
                f"{ind}match {c}.len() {{ 0 => Err(\"empty\".into()), _ => Ok({c}) }}", "}"]
    elif lang == "go":
        body = ["package main", "", 'import "fmt"', "", f"func {a}({b} []int) (int, error) {{",
                f"{ind}if len({b}) == 0 {{ return 0, fmt.Errorf(\"no %s\", \"{c}\") }}", f"{ind}return {b}[0] + {n}, nil", "}"]
    elif lang == "sql":
        body = [f"SELECT {a}, COUNT(*) AS n FROM {b} AS t", f"WHERE t.{c} >= {n} AND name LIKE '%{r.choice(WORDS)}%'",
                "GROUP BY 1 HAVING n > 1 ORDER BY n DESC;"]
    elif lang == "html":
        body = ["<!DOCTYPE html>", f'<div class="{a}" data-x="{n}">', f"{ind}<p>{r.choice(WORDS)} &amp; {r.choice(WORDS)} &lt;3</p>",
                f'{ind}<script>document.getElementById("{b}").innerHTML = "{c}";</script>', "</div>"]
    elif lang == "shell":
        body = ["#!/usr/bin/env bash", "set -euo pipefail", f'for f in "$@"; do echo "${{f%.*}}" | tr a-z A-Z >> {a}.log; done',
                f"[[ -d /tmp/{b} ]] && rm -rf /tmp/{b} || true"]
    elif lang == "haskell":
        body = [f"{a} :: [Int] -> Maybe Int", f"{a} [] = Nothing", f"{a} (x:xs) = Just $ foldr (\\y acc -> y + acc) x xs -- λ"]
    else:
        body = [r"\begin{equation}", rf"  \int_0^\infty e^{{-x^2}}\,dx = \frac{{\sqrt{{\pi}}}}{{2}} \quad \forall {a} \in \mathbb{{R}}", r"\end{equation}"]
    k = r.randint(1, len(body))
    start = r.randint(0, len(body) - k)
    return r.choice(["\n", "\r\n"]).join(body[start:start + k]) + ("\n" if r.random() < 0.5 else "")


def _json_value(r: random.Random, depth: int):
    t = r.random()
    if depth > 3 or t < 0.3:
        return r.choice([None, True, False, r.randint(-10**9, 10**9), r.uniform(-1e6, 1e6), 1e-7, 0,
                         r.choice(WORDS), "😀 emoji", "quote \" and \\ backslash", "tab\tnew\nline", "中文", ""])
    if t < 0.65:
        return [_json_value(r, depth + 1) for _ in range(r.randint(0, 4))]
    return {r.choice(WORDS) + str(i): _json_value(r, depth + 1) for i in range(r.randint(0, 4))}


def json_text(r: random.Random) -> str:
    v = {"id": r.randint(0, 10**6), "data": _json_value(r, 0)}
    indent = r.choice([None, None, 2, 4, "\t"])
    return json.dumps(v, indent=indent, ensure_ascii=r.random() < 0.3, separators=None if indent else r.choice([(",", ":"), (", ", ": ")]))


CJK_PHRASES = ["你好，世界！", "今天天气很好。", "机器学习和自然语言处理", "こんにちは、世界。", "カタカナとひらがなと漢字",
               "東京都渋谷区", "안녕하세요 세계", "한국어 텍스트입니다", "繁體中文與简体中文", "「引用」『二重』【括弧】〜"]


def cjk(r: random.Random) -> str:
    parts = []
    for _ in range(r.randint(1, 6)):
        u = r.random()
        if u < 0.4:
            parts.append(r.choice(CJK_PHRASES))
        elif u < 0.6:
            parts.append("".join(chr(r.randint(0x4E00, 0x9FFF)) for _ in range(r.randint(1, 12))))
        elif u < 0.7:
            parts.append("".join(chr(r.randint(0x3041, 0x3096)) for _ in range(r.randint(1, 8))))
        elif u < 0.8:
            parts.append("".join(chr(r.randint(0xAC00, 0xD7A3)) for _ in range(r.randint(1, 8))))
        elif u < 0.9:  # CJK extension B: 4-byte UTF-8
            parts.append("".join(chr(r.randint(0x20000, 0x2A6DF)) for _ in range(r.randint(1, 5))))
        else:
            parts.append("ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３")
    return r.choice(["", " ", "\n"]).join(parts)


ZWJ = "\u200d"
EMOJI = ["😀", "😂", "🥲", "🤖", "🚀", "🎉", "❤️", "👍", "🙏🏽", "👋🏿", "🧑‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🏴‍☠️", "❤️‍🔥",
         "🇺🇸", "🇯🇵", "🇫🇷", "🇧🇷", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "1️⃣", "#️⃣", "©️", "™", "☀", "⚡", "🫠", "🦀", "🐍", "🧬",
         "👩🏽" + ZWJ + "🚀", "🧔🏻" + ZWJ + "♂️", "👁️‍🗨️"]
FOUR_BYTE = ["𝔸𝔹ℂ", "𝓗𝓮𝓵𝓵𝓸", "𝟘𝟙𝟚", "𝄞𝄢", "𐍈𐌰𐌿", "𓀀𓁐𓂀", "𒀀𒀁", "🀄🃏", "𝕏", "\U0010FFFD", "\U000E0041", "\U0001F9D1"]


def emoji(r: random.Random) -> str:
    parts = []
    for _ in range(r.randint(1, 8)):
        u = r.random()
        if u < 0.5:
            parts.append(r.choice(EMOJI) * r.randint(1, 3))
        elif u < 0.75:
            parts.append(r.choice(FOUR_BYTE))
        elif u < 0.85:
            parts.append(chr(r.randint(0x1F300, 0x1FAFF)))
        else:
            parts.append(r.choice(WORDS))
    return r.choice(["", " ", " ", "\n"]).join(parts)


COMBINING = [chr(c) for c in range(0x0300, 0x036F)] + ["\u20DD", "\u20E3", "\uFE0F", "\uFE0E", "\u0489"]


def combining(r: random.Random) -> str:
    out = []
    for ch in r.choice(WORDS) + " " + r.choice(WORDS) + " " + r.choice(["Åström", "ñandú", "Ελληνικά", "Кириллица", "Tiếng Việt"]):
        out.append(ch)
        if r.random() < 0.5:
            out.extend(r.choice(COMBINING) for _ in range(r.randint(1, 4 if r.random() < 0.8 else 12)))
    text = "".join(out)
    if r.random() < 0.3:  # decomposed (NFD) forms: e + U+0301 rather than é
        text += " e\u0301 a\u0308 n\u0303 o\u0302\u0323 \u1100\u1161\u11A8"
    return text


def whitespace(r: random.Random) -> str:
    pieces = []
    for _ in range(r.randint(1, 10)):
        u = r.random()
        if u < 0.35:
            pieces.append(" " * r.randint(1, 40))
        elif u < 0.5:
            pieces.append("\t" * r.randint(1, 8))
        elif u < 0.65:
            pieces.append("\n" * r.randint(1, 10))
        elif u < 0.75:
            pieces.append(r.choice(["\r\n", "\r", "\x0b", "\x0c", "\u00a0", "\u2003", "\u3000", "\u2028", "\u2029", "\u200b", "\u202f"]) * r.randint(1, 4))
        else:
            pieces.append(r.choice(WORDS))
    return "".join(pieces)


SCRIPTS = {
    "arabic": ["مرحبا بالعالم", "اللغة العربية جميلة", "السلام عليكم ورحمة الله", "١٢٣٤٥٦٧٨٩٠", "كِتَابٌ"],
    "hebrew": ["שלום עולם", "עברית היא שפה", "בְּרֵאשִׁית בָּרָא"],
    "devanagari": ["नमस्ते दुनिया", "हिन्दी भाषा", "क्षत्रिय ज्ञान श्री", "०१२३४५६७८९"],
    "thai": ["สวัสดีชาวโลก", "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ", "๑๒๓"],
    "greek": ["Καλημέρα κόσμε", "αβγδεζηθ ΑΒΓΔ"],
    "cyrillic": ["Привет, мир!", "Съешь же ещё этих мягких французских булок"],
    "other": ["ሰላም ልዑል", "გამარჯობა", "Բարեւ", "ᏣᎳᎩ", "ꦗꦮ", "ᠮᠣᠩᠭᠣᠯ", "தமிழ்", "ಕನ್ನಡ", "ລາວ", "བོད་ཡིག", "ᚠᚢᚦᚨᚱᚲ"],
}


def scripts(r: random.Random) -> str:
    keys = list(SCRIPTS)
    return r.choice([" ", "", "\n", ", "]).join(r.choice(SCRIPTS[r.choice(keys)]) for _ in range(r.randint(1, 5)))


def mixed(r: random.Random) -> str:
    gens = [prose, cjk, emoji, scripts, combining]
    return "".join(r.choice(gens)(r)[: r.randint(1, 40)] for _ in range(r.randint(2, 6)))


def controls(r: random.Random) -> str:
    ctl = [chr(c) for c in range(0, 32)] + ["\x7f", "\x85", "\u200e", "\u200f", "\u202e", "\u2066", "\ufeff", "\ufffd", "\ufff9", "\U000E0001"]
    out = []
    for _ in range(r.randint(1, 10)):
        out.append(r.choice(ctl) * r.randint(1, 3) if r.random() < 0.6 else r.choice(WORDS))
    return "".join(out)


def random_codepoints(r: random.Random) -> str:
    out = []
    for _ in range(r.randint(1, 30)):
        c = r.choice([r.randint(0x20, 0x7E), r.randint(0xA0, 0x7FF), r.randint(0x800, 0xFFFF), r.randint(0x10000, 0x10FFFF)])
        if 0xD800 <= c <= 0xDFFF:  # no lone surrogates
            c = 0xFFFD
        out.append(chr(c))
    return "".join(out)


GENERATORS = [prose, prose, code, code, json_text, cjk, emoji, combining, whitespace, scripts, mixed, controls, random_codepoints]

FIXED = [
    "", " ", "  ", "\n", "\t", "a", "Hello, world!", " leading space", "trailing space ", "\n\nleading newlines",
    "<|endoftext|> is not special when it is text", "</s> <s> [INST] look like special tokens",
    "<0x41> looks like a byte token", "▁ is a lower one eighth block", "Ġ and Ċ are GPT-2's space and newline",
    "\x00", "\x00\x01\x02", "\ud7ff\ue000\uffff", "\U0001F468\u200d\U0001F469\u200d\U0001F467", "🇺🇳🇪🇺",
    "e\u0301" * 30, " " * 200, "\t\n" * 50, "a" * 500, "0123456789" * 20, "🙂" * 60,
]


def generate_corpus(n: int = 2000, seed: int = 20240611) -> list[str]:
    """``n`` texts: a few fixed edge cases, then generated ones, deterministic for a seed."""
    r = random.Random(seed)
    texts = list(FIXED[:n])
    i = 0
    while len(texts) < n:
        texts.append(GENERATORS[i % len(GENERATORS)](r))
        i += 1
    return texts


if __name__ == "__main__":  # pragma: no cover - eyeballing helper
    for t in generate_corpus(40):
        print(repr(t)[:160])
