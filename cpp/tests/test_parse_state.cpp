// matcher/parse_state.h and tokens/trie_walk.h: ParseState is the one door to the frames and the
// parser's rows. Pushes, pops and restores keep the two in step; descend goes back to a trie
// node's parent with the parent's rows, or the rows of a lexeme end a sibling shared;
// walk_subtrie reaches exactly the tokens that byte-by-byte pushes accept (brute force, no
// shared ends), and leaves a state that restore brings back.
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "grammar/ir.h"
#include "lexer/lexer.h"
#include "matcher/parse_state.h"
#include "parse_fixture.h"
#include "stencil/grammar.h"
#include "tokens/trie.h"
#include "tokens/trie_walk.h"

using stencil::Frame;
using stencil::GrammarBuilder;
using stencil::ParseState;
using stencil::Symbol;

namespace {

// word ("," word)*, words [a-c]+, with optional spaces between lexemes.
struct Fixture : stencil_test::WordsGrammar {
  Fixture()
      : WordsGrammar([](GrammarBuilder& b, Symbol word) {
          const Symbol start = b.rule("start");
          b.add_alternative(start, {word, b.repeat(b.seq({b.literal(",", "comma"), word}), 0, -1)});
          return start;
        }) {}
};

using stencil_test::push_all;

size_t rows_of(const ParseState& ps) { return ps.parser().num_rows(); }

}  // namespace

TEST_CASE(parse_state_pushes_pops_and_restores_keep_rows_in_step) {
  Fixture f;
  ParseState ps(*f.grammar, *f.lexer);
  const Frame top0 = ps.frames().back();
  CHECK(push_all(ps, "ab"));
  CHECK_EQ(ps.frames().size(), size_t(3));
  CHECK(!ps.push_byte('x'));  // refused: nothing changes
  CHECK_EQ(ps.frames().size(), size_t(3));
  CHECK(push_all(ps, ",c"));  // the word ends at the comma: a parser row per lexeme end
  CHECK(rows_of(ps) > top0.rows);
  CHECK_EQ(rows_of(ps), size_t(ps.frames().back().rows));
  ps.pop_to(3);
  CHECK_EQ(ps.bytes(1, 3), std::string("ab"));
  CHECK_EQ(rows_of(ps), size_t(ps.frames().back().rows));
  ps.restore(0, top0);
  CHECK_EQ(ps.frames().size(), size_t(1));
  CHECK_EQ(rows_of(ps), size_t(top0.rows));
}

TEST_CASE(parse_state_walk_enters_boundaries_and_runs_over_the_root_then_restores_it) {
  // begin_walk keeps the root frame; enter_boundary(state, d) stands below a boundary at depth d
  // over the root's rows; a run pushes its byte once and puts that frame back for each boundary
  // (run_push, run_next, run_again), or ends the lexeme once (run_end, run_enter); end_walk
  // brings the root back.
  Fixture f;
  ParseState ps(*f.grammar, *f.lexer);
  CHECK(push_all(ps, "ab"));
  ps.begin_walk();
  const size_t root = ps.walk_root();
  const Frame top = ps.walk_top();
  CHECK_EQ(root, size_t(2));
  CHECK(push_all(ps, ",ca"));
  ps.enter_boundary(top.state, 1);
  CHECK_EQ(ps.frames().size(), root + 1);
  CHECK_EQ(ps.frames().back().serial, top.serial);
  CHECK_EQ(rows_of(ps), size_t(top.rows));
  CHECK(push_all(ps, ",c"));  // goes on from "ab" as a fresh push would
  CHECK_EQ(ps.bytes(1, 5), std::string("ab,c"));
  ps.enter_boundary(top.state, 3);  // two bytes of the token above the root, in its lexeme
  CHECK_EQ(ps.frames().size(), root + 3);
  CHECK_EQ(ps.frames().back().lex_start, top.lex_start);
  CHECK_EQ(rows_of(ps), size_t(top.rows));
  ps.place_prefix("bc");
  CHECK_EQ(ps.bytes(1, 5), std::string("abbc"));
  CHECK(ps.run_push(',', nullptr));  // ends the word and reads the comma
  const Frame pushed = ps.run_frame();
  CHECK_EQ(ps.frames().size(), root + 4);
  CHECK(pushed.rows > top.rows);
  CHECK(push_all(ps, "a"));
  ps.run_next(3);  // the next boundary of the run: its rows stay
  CHECK_EQ(ps.frames().size(), root + 3);
  ps.place_prefix("cb");
  ps.run_again();
  CHECK_EQ(ps.frames().size(), root + 4);
  CHECK_EQ(ps.frames().back().state, pushed.state);
  CHECK(ps.frames().back().serial != pushed.serial);  // the bytes below it changed
  CHECK_EQ(rows_of(ps), size_t(pushed.rows));
  CHECK(push_all(ps, "c"));
  CHECK_EQ(ps.bytes(1, 7), std::string("abcb,c"));
  CHECK(!ps.run_push('x', nullptr));  // refused: no frame is pushed
  ps.enter_boundary(top.state, 1);
  uint32_t q = 0;
  CHECK(ps.end_lexeme(top.state, &q));  // "ab" ends before the token's byte
  ps.run_end(q);
  CHECK(ps.run_frame().fresh);
  CHECK(ps.run_frame().rows > top.rows);
  CHECK(push_all(ps, " "));
  ps.run_enter(1);
  CHECK_EQ(ps.frames().size(), root + 1);
  CHECK_EQ(rows_of(ps), size_t(ps.run_frame().rows));
  CHECK(push_all(ps, ",a"));
  ps.end_walk();
  CHECK_EQ(ps.frames().size(), root + 1);
  CHECK_EQ(ps.frames().back().serial, top.serial);
  CHECK_EQ(ps.frames().back().state, top.state);
  CHECK_EQ(rows_of(ps), size_t(top.rows));
  CHECK(push_all(ps, "c,a"));
  CHECK_EQ(ps.bytes(1, 6), std::string("abc,a"));
}

TEST_CASE(parse_state_descend_keeps_a_shared_end) {
  Fixture f;
  ParseState ps(*f.grammar, *f.lexer);
  CHECK(push_all(ps, "ab"));
  CHECK(ps.push_byte(',', true));  // ends "ab": the rows of that end stay shared in frame 2
  const uint32_t end_rows = ps.frames()[2].end_rows;
  REQUIRE(end_rows != 0 && end_rows != ParseState::kEndFails);
  CHECK(end_rows > ps.frames()[2].rows);
  ps.descend(3);  // back to the comma's parent: its shared end's rows stay on the parser
  CHECK_EQ(ps.frames().size(), size_t(3));
  CHECK_EQ(rows_of(ps), size_t(end_rows));
  CHECK(ps.push_byte(' ', true));  // a sibling of the comma ends the word the same way
  ps.descend(3);
  CHECK_EQ(rows_of(ps), size_t(end_rows));
  ps.descend_unshared(3);
  CHECK_EQ(rows_of(ps), size_t(ps.frames()[2].rows));
  CHECK_EQ(ps.frames()[2].end_rows, 0u);
  CHECK(ps.push_byte(',', true));  // computed afresh
  CHECK_EQ(ps.frames()[2].end_rows, end_rows);
  ps.reset_shared_end(2);
  CHECK_EQ(ps.frames()[2].end_rows, 0u);
  ps.trim_rows();
  CHECK_EQ(rows_of(ps), size_t(ps.frames().back().rows));
}

TEST_CASE(walk_subtrie_matches_byte_by_byte_pushes) {
  Fixture f;
  const std::vector<std::string> tokens = {"a",   "ab", "abc", ",",  ",a",  "b,",  "c,,", "x",
                                           "a,b", "ba", " ",   " ,", ", c", "cc ", "a x", "bb,cc"};
  std::vector<std::string_view> views(tokens.begin(), tokens.end());
  stencil::TokenTrie trie;
  trie.build(views, std::vector<uint8_t>(tokens.size(), 0));
  struct Collect {
    std::set<int32_t> found;
    bool took(size_t, const stencil::TrieNode&) { return false; }
    void token(const stencil::TrieNode& node) { found.insert(node.token_id); }
  };
  for (std::string prefix : {"", "a", "ab ", "a,", "a,b"}) {
    ParseState ps(*f.grammar, *f.lexer);
    REQUIRE(push_all(ps, prefix));
    const size_t root = ps.frames().size() - 1;
    const Frame top = ps.frames().back();
    Collect walk;
    ps.reset_shared_end(root);
    const auto& nodes = trie.nodes();
    for (size_t c = 1; c < nodes.size(); c += nodes[c].subtree_size) stencil::walk_subtrie(ps, nodes, c, root, walk);
    ps.restore(root, top);
    CHECK_EQ(ps.frames().size(), root + 1);
    CHECK_EQ(rows_of(ps), size_t(top.rows));
    std::set<int32_t> brute;
    for (size_t t = 0; t < tokens.size(); ++t) {
      ParseState copy(ps);
      if (push_all(copy, tokens[t])) brute.insert(static_cast<int32_t>(t));
    }
    CHECK_MSG(walk.found == brute, "after \"" + prefix + "\"");
    CHECK(!brute.empty());
  }
}
