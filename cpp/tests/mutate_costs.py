"""The mutation check of the cost room's tests: plants one off-by-one in each bound of cpp/src/cost
(and in the budget's use of them), rebuilds the C++ tests, and runs test_costs.cpp's cases; every
planted fault must fail them. Restores each file after its run (also on Ctrl-C).

Run with ``make mutate-costs`` (after ``make test-cpp`` has configured build/cpp-tests); about 15
rebuilds of one file each. Exit status 1 when a mutation survives.
"""
from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "cpp-tests"

# (what the fault does, file, text, the text with the fault)
MUTATIONS = [
    ("a token search counts one token less", "cpp/src/cost/lexeme_search.cpp",
     "if (h.depth + 1 + rest < best) {\n          best = h.depth + 1 + rest;",
     "if (h.depth + rest < best) {\n          best = h.depth + rest;"),
    ("a one-token end counts two", "cpp/src/cost/lexeme_search.cpp",
     "return to_end_.put(state, 1);", "return to_end_.put(state, 2);"),
    ("a lifted count's path taken without replaying it", "cpp/src/cost/lexeme_search.cpp",
     "const uint32_t d = tokens.empty() ? kInf : replay(state, lexeme, tokens, exact);",
     "const uint32_t d = tokens.empty() ? kInf : static_cast<uint32_t>(tokens.size());"),
    ("raw text's coin sum one less", "cpp/src/cost/text_search.cpp",
     "return cost::add(fewest_plain_tokens(h.lo, h.k, h.avoid), static_cast<uint32_t>(tail.size()));",
     "return cost::add(fewest_plain_tokens(h.lo, h.k, h.avoid), static_cast<uint32_t>(tail.size())) - 1;"),
    ("raw text counted from one below its minimum", "cpp/src/cost/text_search.cpp",
     "fewest_plain_tokens(h.lo, h.k, h.avoid)", "fewest_plain_tokens(h.lo - 1, h.k, h.avoid)"),
    ("raw text's rest one less where the count may stop", "cpp/src/cost/text_search.cpp",
     "if (h.lo == 0) return replay(state, lexeme, tail);",
     "if (h.lo == 0) return static_cast<uint32_t>(tail.size()) - 1;"),
    ("a sum of plain tokens one less", "cpp/src/cost/text_search.cpp",
     "best = std::min(best, cost::add(c.fewest[m - k], 1));", "best = std::min(best, c.fewest[m - k]);"),
    ("a single-byte distance one less", "cpp/src/cost/byte_search.cpp",
     "    if (shortest) *shortest = true;\n    return depth[h];",
     "    if (shortest) *shortest = true;\n    return depth[h] - (depth[h] > 0);"),
    ("a path cut into tokens one less", "cpp/src/cost/byte_search.cpp",
     "  return count;\n}", "  return count - (count > 0);\n}"),
    ("a word spelled longest token first", "cpp/src/cost/byte_search.cpp",
     "if (best[i + len] < kInf && best[i + len] + 1 <= best[i]) {",
     "if (best[i + len] < kInf) {"),
    ("a word's tokens one less", "cpp/src/cost/byte_search.cpp",
     "return replay(state, lexeme, path);", "return replay(state, lexeme, path) - 1;"),
    ("a lexeme's minimum one more", "cpp/src/cost/grammar_costs.cpp",
     "kLexemeSearchWork, ticker);", "kLexemeSearchWork, ticker) + 1;"),
    ("a rule's rest one less", "cpp/src/cost/grammar_costs.cpp",
     "rest[b + i] = add(sym_cost(g.dotted[b + i]), rest[b + i + 1]);",
     "rest[b + i] = add(sym_cost(g.dotted[b + i]), rest[b + i + 1]) - (rest[b + i + 1] > 0);"),
    ("an explored ceiling's distance one less", "cpp/src/cost/lexeme_ceiling.cpp",
     "dist[from] = dist[queue[h]] + 1;", "dist[from] = dist[queue[h]];"),
    ("an expression's shortest one less", "cpp/src/cost/lexeme_ceiling.cpp",
     "pair.shortest = std::min(bytes[i].shortest, kInf);",
     "pair.shortest = std::min(bytes[i].shortest, kInf) - (bytes[i].shortest > 0 && bytes[i].shortest < kInf);"),
    ("an expression's ceiling one less", "cpp/src/cost/lexeme_ceiling.cpp",
     "pair.ceiling = std::min(bytes[i].ceiling, kInf);",
     "pair.ceiling = std::min(bytes[i].ceiling, kInf) - (bytes[i].ceiling > 0 && bytes[i].ceiling < kInf);"),
    ("a row's edge one less", "cpp/src/cost/row_costs.cpp",
     "relax(edges_[e].waited, add(c, edges_[e].rest));",
     "relax(edges_[e].waited, add(c, edges_[e].rest) - (edges_[e].rest > 0));"),
    ("a fresh row's cost one less", "cpp/src/cost/row_costs.cpp",
     "best = std::min(best, finish_item(p, it, t_->grammar.rest[it.pos]));",
     "best = std::min(best, finish_item(p, it, t_->grammar.rest[it.pos]) - 1);"),
    ("a fresh row's cost from its predictions alone", "cpp/src/cost/row_costs.cpp",
     "if (row > 0 && it.origin == row) continue;", "if (row > 0 && it.origin != row) continue;"),
    ("a scanned lexeme one less", "cpp/src/cost/row_costs.cpp",
     "best = std::min(best, finish_item(p, it, t_->grammar.rest[it.pos + 1]));",
     "best = std::min(best, finish_item(p, it, t_->grammar.rest[it.pos + 1]) - 1);"),
    ("the inner ceiling one less", "cpp/src/cost/row_costs.cpp",
     "    most = std::max(most, add(up, after));", "    most = std::max(most, add(up, after) - 1);"),
    ("the byte bound one less", "cpp/src/cost/row_costs.cpp",
     "    best = std::min(best, add(d, after));", "    best = std::min(best, add(d, after) - 1);"),
    ("the budget keeps a token one over (walk)", "cpp/src/matcher/budget.cpp",
     "if (had(t)) token_bits::put(words, t, c <= left);", "if (had(t)) token_bits::put(words, t, c <= left + 1);"),
    ("the whole-trie walk keeps a token one over", "cpp/src/matcher/trie_costs.cpp",
     "      if (after_[t] > left)", "      if (after_[t] > left + 1)"),
    ("a looping sub-trie costed one less (whole-trie walk)", "cpp/src/matcher/trie_costs.cpp",
     "cost_range(i, i + node.subtree_size, cost.at(ps.parser(), state, false, search_));",
     "cost_range(i, i + node.subtree_size, cost.at(ps.parser(), state, false, search_) - 1);"),
    ("the budget keeps an inner token one over (steps)", "cpp/src/cost/inner_costs.cpp",
     "token_bits::put(words, t, step_costs_[k] <= left);", "token_bits::put(words, t, step_costs_[k] <= left + 1);"),
    ("the inner tokens' byte bounds one less", "cpp/src/cost/inner_costs.cpp",
     "most_ = std::max(most_, rows.bytes_bound(p, s));", "most_ = std::max(most_, rows.bytes_bound(p, s) - 1);"),
    ("a byte bound taken one over the budget (walk reports)", "cpp/src/cost/row_costs.cpp",
     "if (bound <= limit)", "if (bound <= limit + 1)"),
    ("a known successor's byte bound one less", "cpp/src/cost/inner_costs.cpp",
     "    uint32_t c = rows.bytes_bound(p, s);\n    if (c > left)",
     "    uint32_t c = rows.bytes_bound(p, s) - 1;\n    if (c > left)"),
    ("a known successor over the budget counted as free", "cpp/src/cost/inner_costs.cpp",
     "    uint32_t c = rows.bytes_bound(p, s);\n    if (c > left) c = rows.at(p, s, false);",
     "    uint32_t c = rows.bytes_bound(p, s);\n    if (c > left) c = 0;"),
]


def run_cases() -> tuple[bool, str]:
    """(built and the cases passed, the last line the test binary printed)."""
    build = subprocess.run(["cmake", "--build", str(BUILD), "--target", "stencil_cpp_tests", "-j", "2"],
                           capture_output=True, text=True)
    if build.returncode != 0:
        return False, "build failed: " + (build.stdout + build.stderr).strip().splitlines()[-1]
    out = subprocess.run([str(BUILD / "stencil_cpp_tests"), "costs"], capture_output=True, text=True)
    lines = (out.stdout + out.stderr).strip().splitlines()
    summary = [line for line in lines if line.startswith("C++ unit tests:")]
    return out.returncode == 0, (summary or lines or [""])[-1]


def main() -> int:
    if not (BUILD / "CMakeCache.txt").exists():
        print(f"{BUILD} is not configured: run make test-cpp first", file=sys.stderr)
        return 2
    ok, line = run_cases()
    if not ok:
        print(f"the cases fail without a mutation: {line}", file=sys.stderr)
        return 2
    survived = 0
    for what, rel, text, fault in MUTATIONS:
        path = ROOT / rel
        original = path.read_text()
        if original.count(text) != 1:
            print(f"{what}: the text to mutate is not once in {rel} (the code moved: update MUTATIONS)")
            survived += 1
            continue
        try:
            path.write_text(original.replace(text, fault))
            passed, line = run_cases()
        finally:
            path.write_text(original)
        survived += passed
        print(f"{'SURVIVED' if passed else 'caught  '}  {what} ({rel}): {line}")
    run_cases()  # the binary built from the files as they are
    print(f"{len(MUTATIONS) - survived} of {len(MUTATIONS)} mutations caught")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
