// matcher/inner_steps.h: walk_inside visits the tokens that stay inside the lexeme, each with the
// state it ends in (against byte-by-byte lexer steps), and counts as work where a limit is in
// force: the token budget's searches walk the trie once per state they expand, so a limit on
// their derivative work alone let a counted pattern walk for a quarter of a second.
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "check.h"
#include "lexer/lexer.h"
#include "cost/inner_steps.h"
#include "stencil/grammar.h"
#include "support/work_limit.h"
#include "tokens/mask_cache.h"
#include "tokens/trie.h"

using stencil::GrammarBuilder;
using stencil::Lexer;
using stencil::Symbol;
namespace work = stencil::work;

namespace {

// One lexeme, ([a-h][i-p])* z: no state leads back to itself on a byte, so the walk takes no
// sub-trie at once. The vocabulary: every string of one to three letters of a..p, and z.
struct Fixture {
  std::shared_ptr<stencil::Grammar> grammar;
  std::unique_ptr<Lexer> lexer;
  stencil::MaskCache cache{1u << 20, false, false, true};
  std::vector<std::string> tokens;
  stencil::TokenTrie trie;
  Fixture() {
    GrammarBuilder b;
    const auto pair = b.re_concat({b.re_byte_ranges({{'a', 'h'}}), b.re_byte_ranges({{'i', 'p'}})});
    const Symbol word = b.lexeme(b.re_concat({b.re_repeat(pair, 0, -1), b.re_literal("z")}), "word", false);
    const Symbol start = b.rule("start");
    b.add_alternative(start, {word});
    grammar = b.build(start);
    lexer = std::make_unique<Lexer>(grammar->exprs, grammar->lexemes, stencil::LexerLimits{});
    for (char a = 'a'; a <= 'p'; ++a) {
      tokens.push_back(std::string(1, a));
      for (char c = 'a'; c <= 'p'; ++c) {
        tokens.push_back(std::string{a, c});
        for (char d = 'a'; d <= 'p'; ++d) tokens.push_back(std::string{a, c, d});
      }
    }
    tokens.push_back("z");
    std::vector<std::string_view> views(tokens.begin(), tokens.end());
    trie.build(views, std::vector<uint8_t>(tokens.size(), 0));
  }
  uint32_t start_state() const { return lexer->start_state({0}); }
  // The state after `bytes`, byte by byte (kDead where it dies or the lexeme must end).
  uint32_t after(uint32_t s, std::string_view bytes) const {
    for (char c : bytes) {
      const uint32_t t = lexer->next_tagged(s, static_cast<uint8_t>(c));
      if (t == Lexer::kDead || (t & Lexer::kEndNowTag)) return Lexer::kDead;
      s = t;
    }
    return s;
  }
};

std::set<std::tuple<std::string, uint32_t>> walked(const Fixture& f, uint32_t state) {
  std::set<std::tuple<std::string, uint32_t>> out;
  stencil::walk_inside(*f.lexer, f.cache, f.trie, state, false, [&](uint32_t first, uint32_t end, uint32_t s) {
    for (uint32_t j = first; j < end; ++j) out.insert({f.tokens[f.trie.ordered_tokens()[j]], s});
    return false;
  });
  return out;
}

}  // namespace

TEST_CASE(walk_inside_visits_the_tokens_that_stay_inside) {
  Fixture f;
  const uint32_t start = f.start_state();
  std::set<std::tuple<std::string, uint32_t>> want;
  for (const std::string& t : f.tokens)
    if (const uint32_t s = f.after(start, t); s != Lexer::kDead) want.insert({t, s});
  CHECK(want.size() > 64);  // ("a", "ai", "aia"...: a good part of the vocabulary)
  CHECK(walked(f, start) == want);
}

TEST_CASE(walk_inside_counts_as_work_under_a_limit) {
  Fixture f;
  const uint32_t start = f.start_state();
  walked(f, start);  // (the lexer's states made once, outside the counts below)
  // A unit per 16 nodes, spent per 1,024: this walk passes 16 + 8 * 16 + 64 * 16 nodes.
  const uint64_t before = work::done;
  walked(f, start);
  CHECK_EQ(work::done - before, uint64_t(64));
  bool stopped = false;
  try {
    work::Limit limit(63);
    walked(f, start);
  } catch (const stencil::WorkSpent&) {
    stopped = true;
  }
  CHECK(stopped);
  {
    work::Limit limit(64);
    walked(f, start);  // exactly its units: no stop
  }
}
