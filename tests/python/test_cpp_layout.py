"""The C++ core's layout rules (ARCHITECTURE.md): short functions, public headers that stand alone.

Read from the sources (nothing is compiled): comments, strings and character literals are blanked,
then braces are matched. A brace opens a function body when the text before it, since the last
``;``, ``{`` or ``}`` outside a function, ends a parameter list (``) const {``, ``) override {``,
``) -> T {``) or a constructor's initializer list. Run as a script to list the longest functions:
``python tests/python/test_cpp_layout.py [limit]``.
"""
from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CPP_SRC = ROOT / "cpp" / "src"
PUBLIC = ROOT / "cpp" / "include" / "stencil"

#: A function body in the core may span at most this many lines (braces included). The bindings'
#: module-registration functions are lists of .def calls and are not held to it.
MAX_FUNCTION_LINES = 80
CHECKED_DIRS = ("cost", "grammar", "json", "lexer", "logits", "matcher", "parser", "regex", "support", "tokens")
#: The C++ unit tests (``make test-cpp``) are held to the same limit.
CPP_TESTS = ROOT / "cpp" / "tests"

_SIGNATURE_END = re.compile(
    r"\)\s*(?:(?:const|override|final|noexcept|mutable)\s*)*(?:->\s*[\w:<>,\s*&]+)?$"
)
_CTOR_INIT = re.compile(r"\)\s*(?:noexcept\s*)?:(?!:)")  # `Foo(...) : a_(x)`, not `::`


def _blank(text: str) -> str:
    """The text with comments, string and character literals replaced by spaces (lines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            delim = text[i + 2:text.index("(", i)]
            j = text.index(")" + delim + '"', i) + len(delim) + 2
        elif c == '"' or (c == "'" and not (i and text[i - 1].isalnum())):  # not a digit separator
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            out.append(c)
            i += 1
            continue
        out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
        i = j
    return "".join(out)


def functions(path: pathlib.Path) -> list:
    """(first line, last line, header) of each function body in one file."""
    text = _blank(path.read_text())
    found = []
    stack = []  # per open brace: "function", "init" (a brace initializer in an init list) or "scope"
    header_start = 0
    for i, c in enumerate(text):
        if c == ";" and "function" not in stack:
            header_start = i + 1
        elif c == "{":
            if "function" in stack:
                stack.append("scope")
                continue
            header = " ".join(text[header_start:i].split())
            if _CTOR_INIT.search(header) and re.search(r"[\w>]$", header):
                stack.append("init")  # `b_{y}` inside `Foo() : a_(x), b_{y} {`
                continue
            if _SIGNATURE_END.search(header) or (_CTOR_INIT.search(header) and header.endswith(")")):
                stack.append("function")
                found.append([text.count("\n", 0, i) + 1, None, header])
            else:
                stack.append("scope")
                header_start = i + 1
        elif c == "}" and stack:
            kind = stack.pop()
            if kind == "function" and "function" not in stack:
                found[-1][1] = text.count("\n", 0, i) + 1
            if kind != "init" and "function" not in stack:
                header_start = i + 1
    return [tuple(f) for f in found if f[1] is not None]


def long_functions(limit: int = MAX_FUNCTION_LINES) -> list:
    """(lines, file, first line, header) of each core function longer than `limit` lines."""
    out = []
    for folder in [CPP_SRC / d for d in CHECKED_DIRS] + [CPP_TESTS]:
        for path in sorted(folder.rglob("*")):
            if path.suffix not in (".h", ".cpp"):
                continue
            for first, last, header in functions(path):
                lines = last - first + 1
                if lines > limit:
                    out.append((lines, str(path.relative_to(ROOT)), first, header[-80:]))
    return sorted(out, reverse=True)


def test_scanner_finds_functions(tmp_path):
    src = tmp_path / "x.cpp"
    src.write_text(
        "namespace a {\n"
        "struct S { int f() const { return 1; } int x{2}; };\n"
        "S::S(int v) : x_{v}, y_(v) {\n  if (v) { g(\"}\"); }\n}\n"
        "auto h() -> int {\n  // }\n  return '}';\n}\n"
        "int k[] = {1'000, 2};\n"
        "}\n"
    )
    assert [(first, last) for first, last, _ in functions(src)] == [(2, 2), (3, 5), (6, 9)]


def test_core_functions_are_short():
    long = long_functions()
    assert not long, "functions over %d lines (split them into named steps):\n%s" % (
        MAX_FUNCTION_LINES, "\n".join("  %4d  %s:%d  %s" % f for f in long))


def test_cpp_tests_are_scanned():
    # `make test-cpp` builds every cpp/tests/*.cpp; the length rule must see their test cases.
    found = [header for path in CPP_TESTS.glob("test_*.cpp") for _, _, header in functions(path)]
    assert len([h for h in found if h.startswith("TEST_CASE(")]) >= 20


def test_public_headers_include_nothing_private():
    # A C++ user includes cpp/include alone: a public header may include the standard library and
    # other public headers, never a header of cpp/src.
    bad = []
    for path in sorted(PUBLIC.glob("*.h")):
        for no, line in enumerate(path.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
            if m and not m.group(1).startswith("stencil/"):
                bad.append("%s:%d includes %s" % (path.relative_to(ROOT), no, m.group(1)))
    assert not bad, "\n".join(bad)


@pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler")
def test_public_headers_compile_alone(tmp_path):
    # With cpp/include alone on the include path: each public header, and a builder in use.
    src = tmp_path / "user.cpp"
    src.write_text("".join('#include "stencil/%s"\n' % h.name for h in sorted(PUBLIC.glob("*.h")))
                   + "int main() { stencil::GrammarBuilder b; return b.re_empty() == 1 ? 0 : 1; }\n")
    done = subprocess.run(["c++", "-std=c++17", "-fsyntax-only", "-I", str(ROOT / "cpp" / "include"), str(src)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


if __name__ == "__main__":
    for row in long_functions(int(sys.argv[1]) if len(sys.argv) > 1 else MAX_FUNCTION_LINES):
        print("%4d  %s:%d  %s" % row)


#: The core's rooms from the ground floor up: a file includes only its own room, the public
#: headers (stencil/...) and rooms below it. logits/ (the bitmask kernels) stands apart on the
#: ground floor; json/ (JSON numbers and canonical values: its README) is below regex/, whose
#: expressions include the number ranges.
ROOM_ORDER = ("support", "logits", "json", "regex", "grammar", "lexer", "tokens", "parser", "cost", "matcher", "bindings")


def _room_includes():
    """(file, its room, the included room) for every include of another room of cpp/src."""
    for path in sorted(CPP_SRC.rglob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        room = path.relative_to(CPP_SRC).parts[0]
        for target in re.findall(r'#include "([a-z_]+)/', path.read_text()):
            if target != room and target != "stencil":
                yield path.relative_to(ROOT), room, target


def test_rooms_include_only_the_floors_below():
    rooms = {p.name for p in CPP_SRC.iterdir() if p.is_dir()}
    assert rooms == set(ROOM_ORDER), "a new room of cpp/src needs its floor in ROOM_ORDER"
    floor = {r: i for i, r in enumerate(ROOM_ORDER)}
    upward = [f"{path}: {room} includes {target}/" for path, room, target in _room_includes()
              if floor[target] >= floor[room] and not {room, target} <= {"support", "logits"}]
    assert upward == []


#: ParseState is the one door to where a generation stands: outside matcher/parse_state.* no code
#: writes its frames (a mutable `std::vector<Frame>&`, a resize/push/pop of `frames()`, an
#: assignment through `frames()`) or truncates its parser; the walkers ask it (`descend`,
#: `enter_boundary`, `restore`, ...). The parser's own rooms (parser/) may truncate their rows.
_FRAME_WRITES = (
    (re.compile(r"(?<!const )std::vector<Frame>\s*&"), "a mutable reference to the frames"),
    (re.compile(r"frames\(\)\s*\.\s*(?:resize|push_back|emplace_back|pop_back|clear|assign|swap|erase|insert)\b"),
     "a change of frames()"),
    (re.compile(r"frames\(\)\s*(?:\.\s*back\(\)|\[[^\]]*\])\s*(?:\.\s*\w+\s*)?(?:[-+*/|&]?=(?!=)|\+\+|--)"),
     "an assignment through frames()"),
    (re.compile(r"(?<!const )Frame\s*&\s*\w+\s*=\s*[^;]*frames\(\)"), "a mutable reference to a frame"),
    (re.compile(r"\bparser(?:_|\(\))?\s*(?:\.|->)\s*truncate\s*\("), "a truncation of the parser"),
)


def rule_faults(files, rules, root=ROOT) -> list:
    """'file:line: what' for each line of `files` a rule (regex, what[, file stem it holds in]) finds."""
    bad = []
    for path in files:
        for no, line in enumerate(_blank(path.read_text()).splitlines(), 1):
            bad += ["%s:%d: %s" % (path.relative_to(root), no, rule[1]) for rule in rules
                    if (len(rule) < 3 or path.stem == rule[2]) and rule[0].search(line)]
    return bad


def frame_writes(files, root=ROOT) -> list:
    """'file:line: what' for each write of ParseState's frames or parser rows in `files`."""
    return rule_faults(files, _FRAME_WRITES, root)


def _outside_parse_state() -> list:
    """The C++ sources and tests but ParseState's and the parser's own."""
    return [p for p in sorted(CPP_SRC.rglob("*")) + sorted(CPP_TESTS.rglob("*"))
            if p.suffix in (".h", ".cpp") and p.stem != "parse_state" and p.parent.name != "parser"]


def test_frame_write_rule_sees_writes(tmp_path):
    src = tmp_path / "x.cpp"
    src.write_text("std::vector<Frame>& frames = ps.frames();\nps.frames().back().end_rows = 0;\n"
                   "ps_->parser().truncate(top.rows);\nparser.truncate(1);\nps.frames().resize(3);\n"
                   "Frame& parent = ps.frames()[root];\n"
                   "const std::vector<Frame>& ok = ps.frames();  // parser.truncate( in a comment\n"
                   "const Frame& top = ps.frames()[root];\nif (ps.frames().back().rows == 1) {}\n")
    found = frame_writes([src], tmp_path)
    assert [int(f.split(":")[1]) for f in found] == [1, 2, 3, 4, 5, 6]


#: ParseState as a recognizer: outside parser/ and matcher/parse_state.* no code holds the parser
#: mutably (its rows move through ParseState, its memoizing queries through ParseState::checks()),
#: and the mask walk (matcher/mask_walker.*) builds no Frame of its own: it enters boundaries and
#: runs through ParseState's verbs and only reads frames (`const Frame&`).
_WALKER_RULES = (
    (re.compile(r"(?<!const )\bEarleyParser\s*[&*]"), "a mutable EarleyParser"),
    (re.compile(r"\bFrame\s*(?:\{|\(|[A-Za-z_]\w*\s*[={(;])"), "a Frame built by the mask walk", "mask_walker"),
)


def walker_faults(files, root=ROOT) -> list:
    """'file:line: what' for each break of the recognizer rules in `files`."""
    return rule_faults(files, _WALKER_RULES, root)


@pytest.mark.parametrize("faults, why", [
    (frame_writes, "ParseState's frames and parser rows written outside it (give it a verb)"),
    (walker_faults, "the parser held mutably, or a Frame built by the mask walk (ask ParseState)"),
], ids=["frames_written_only_by_parse_state", "walkers_read_the_parser_and_build_no_frames"])
def test_parse_state_is_the_one_door(faults, why):
    bad = faults(_outside_parse_state())
    assert bad == [], why + ":\n" + "\n".join(bad)


def test_walker_rules_see_faults(tmp_path):
    src = tmp_path / "mask_walker.cpp"
    src.write_text("EarleyParser& parser = ps_->parser();\nconst Frame top = ps.frames().back();\n"
                   "Frame back{s, top.rows, false, 0};\nEarleyParser* p = nullptr;\n"
                   "const EarleyParser& ok = ps.parser();  // EarleyParser& in a comment\n"
                   "const Frame& top = ps.walk_top();\nbool memo_holds(const Frame& top, uint64_t serial) const;\n")
    other = tmp_path / "budget.cpp"
    other.write_text("const Frame top = ps.frames().back();\nEarleyParser& p = x;\n")
    found = walker_faults([src, other], tmp_path)
    assert found == ["mask_walker.cpp:1: a mutable EarleyParser", "mask_walker.cpp:2: a Frame built by the mask walk",
                     "mask_walker.cpp:3: a Frame built by the mask walk", "mask_walker.cpp:4: a mutable EarleyParser",
                     "budget.cpp:2: a mutable EarleyParser"]
