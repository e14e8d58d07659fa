// matcher/inner_steps.h: walk_inside visits the tokens that stay inside the lexeme, each with the
// state it ends in (against byte-by-byte lexer steps), and counts as work where a limit is in
// force: the token budget's searches walk the trie once per state they expand, so a limit on
// their derivative work alone let a counted pattern walk for a quarter of a second.
#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "check.h"
#include "cost/inner_steps.h"
#include "lexer/lexer.h"
#include "stencil/grammar.h"
#include "support/work_limit.h"
#include "tokens/mask_cache.h"
#include "tokens/trie.h"

using stencil::GrammarBuilder;
using stencil::Lexer;
using stencil::Symbol;
namespace work = stencil::work;

namespace {

// One lexeme (`expr` builds it) and a vocabulary of `tokens`.
struct Fixture {
  std::shared_ptr<stencil::Grammar> grammar;
  std::unique_ptr<Lexer> lexer;
  stencil::MaskCache cache{1u << 20, false, false, true};
  std::vector<std::string> tokens;
  stencil::TokenTrie trie;
  Fixture(const std::function<stencil::ExprId(GrammarBuilder&)>& expr, std::vector<std::string> vocabulary)
      : tokens(std::move(vocabulary)) {
    GrammarBuilder b;
    const Symbol word = b.lexeme(expr(b), "word", false);
    const Symbol start = b.rule("start");
    b.add_alternative(start, {word});
    grammar = b.build(start);
    lexer = std::make_unique<Lexer>(grammar->exprs, grammar->lexemes, stencil::LexerLimits{});
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

// Every string of one to three of `chars`.
std::vector<std::string> up_to_three(const std::string& chars) {
  std::vector<std::string> out;
  for (char a : chars) {
    out.push_back(std::string(1, a));
    for (char c : chars) {
      out.push_back(std::string{a, c});
      for (char d : chars) out.push_back(std::string{a, c, d});
    }
  }
  return out;
}

// One lexeme, ([a-h][i-p])* z: no state leads back to itself on a byte, so the walk takes no
// sub-trie at once. The vocabulary: every string of one to three letters of a..p, and z.
struct PairsFixture : Fixture {
  PairsFixture()
      : Fixture(
            [](GrammarBuilder& b) {
              const auto pair = b.re_concat({b.re_byte_ranges({{'a', 'h'}}), b.re_byte_ranges({{'i', 'p'}})});
              return b.re_concat({b.re_repeat(pair, 0, -1), b.re_literal("z")});
            },
            [] {
              std::vector<std::string> t = up_to_three("abcdefghijklmnop");
              t.push_back("z");
              return t;
            }()) {}
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
  PairsFixture f;
  const uint32_t start = f.start_state();
  std::set<std::tuple<std::string, uint32_t>> want;
  for (const std::string& t : f.tokens)
    if (const uint32_t s = f.after(start, t); s != Lexer::kDead) want.insert({t, s});
  CHECK(want.size() > 64);  // ("a", "ai", "aia"...: a good part of the vocabulary)
  CHECK(walked(f, start) == want);
}

TEST_CASE(walk_inside_counts_as_work_under_a_limit) {
  PairsFixture f;
  const uint32_t start = f.start_state();
  walked(f, start);  // (the lexer's states made once, outside the counts below)
  // A unit per 16 nodes, spent per 1,024: this walk passes 16 + 8 * 16 + 64 * 16 nodes.
  const uint64_t before = work::state.done;
  walked(f, start);
  CHECK_EQ(work::state.done - before, uint64_t(64));
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

namespace {

// One lexeme, ([a-f][a-f]){1,20} x: a count no state loops on, where every letter leads each
// state to one next state (the walk's uniform chains: a sub-trie of letters costs a lexer step
// per character count, not per byte of every token), and `x` or `q` elsewhere (sub-tries with
// them are walked byte by byte). The vocabulary: every string of one to three of a..f, x, q, and
// of four and five letters after ab, cd, ee.
struct CountFixture : Fixture {
  CountFixture()
      : Fixture(
            [](GrammarBuilder& b) {
              const auto letter = b.re_byte_ranges({{'a', 'f'}});
              return b.re_concat({b.re_repeat(b.re_concat({letter, letter}), 1, 20), b.re_literal("x")});
            },
            [] {
              std::vector<std::string> t = up_to_three("abcdefxq");
              for (const std::string p : {"ab", "cd", "ee"})  // sub-tries of letters alone: "aba" has 43 tokens
                for (char c = 'a'; c <= 'f'; ++c)
                  for (char d = 'a'; d <= 'f'; ++d) {
                    t.push_back(p + c + d);
                    for (char e = 'a'; e <= 'f'; ++e) t.push_back(p + c + d + e);
                  }
              t.push_back("abcdef");  // (a duplicate id below)
              t.push_back("abcdef");
              return t;
            }()) {}
};

}  // namespace

TEST_CASE(walk_inside_takes_a_count_by_its_characters) {
  CountFixture f;
  const uint32_t start = f.start_state();
  // From the start, midway, and near the bound (where the longer tokens die).
  for (const std::string& prefix :
       std::vector<std::string>{"", "a", "abcd", std::string(35, 'c'), std::string(38, 'e'), std::string(39, 'f')}) {
    const uint32_t s = f.after(start, prefix);
    CHECK(s != Lexer::kDead);
    std::set<std::tuple<std::string, uint32_t>> want, got;
    uint32_t longest = 0;  // run of tokens visited at once
    for (const std::string& t : f.tokens)
      if (const uint32_t u = f.after(s, t); u != Lexer::kDead) want.insert({t, u});
    stencil::walk_inside(*f.lexer, f.cache, f.trie, s, false, [&](uint32_t first, uint32_t end, uint32_t u) {
      for (uint32_t j = first; j < end; ++j) got.insert({f.tokens[f.trie.ordered_tokens()[j]], u});
      longest = std::max(longest, end - first);
      return false;
    });
    CHECK(got == want);
    // The chains were taken (byte by byte, every token is a run of its own), up to 35 letters
    // read (the longer tokens of "aba" die there: the chain ends dead); past 37 no sub-trie of
    // letters alone is alive.
    CHECK(prefix.size() > 37 || longest > 1);
    // InnerSteps: each token (both ids of the duplicate) where the lexer leads it.
    std::vector<uint32_t> inner((f.tokens.size() + 31) / 32, 0u);
    for (size_t t = 0; t < f.tokens.size(); ++t)
      if (f.after(s, f.tokens[t]) != Lexer::kDead) inner[t >> 5] |= 1u << (t & 31);
    const stencil::InnerSteps steps = stencil::InnerSteps::of(*f.lexer, f.cache, f.trie, s, inner.data(), inner.size());
    CHECK(steps.covered);
    size_t listed = 0;
    for (size_t t = 0; t < f.tokens.size(); ++t) {
      const uint32_t u = f.after(s, f.tokens[t]);
      if (u == Lexer::kDead) continue;
      uint32_t got_state = steps.common;
      for (const auto& [id, k] : steps.tokens)
        if (id == static_cast<int32_t>(t)) got_state = steps.states[k], ++listed;
      CHECK_EQ(got_state, u);
    }
    CHECK_EQ(listed, steps.tokens.size());
  }
}

namespace {

// One lexeme, a string body: any characters but `"` and `z`, then `"`. The vocabulary: two- and
// three-byte characters (é, 中, 文, 日) alone, in pairs and triples and before an ASCII letter,
// their lead bytes alone and with a continuation byte (tokens that end inside a character), é
// and 中 also before `"` or `z` (文 and 日, lead byte E6, head a sub-trie the body loops over),
// and a few broken sequences.
struct Utf8Fixture : Fixture {
  Utf8Fixture()
      : Fixture(
            [](GrammarBuilder& b) {
              const auto body = b.re_char_ranges({{'"', '"'}, {'z', 'z'}}, true);
              return b.re_concat({b.re_repeat(body, 0, -1), b.re_literal("\"")});
            },
            [] {
              const std::vector<std::string> chars = {"\xC3\xA9", "\xE4\xB8\xAD", "\xE6\x96\x87", "\xE6\x97\xA5"};
              std::vector<std::string> t = up_to_three("abz\"");
              for (const std::string& c : chars) {
                t.push_back(c);
                t.push_back(c.substr(0, 1));
                t.push_back(c.substr(0, 2));
                if (c[0] != '\xE6') {
                  t.push_back(c + "\"");
                  t.push_back(c + "z");
                }
                t.push_back("a" + c);
                t.push_back(" " + c + c.substr(0, 1));
                for (const std::string& d : chars) {
                  t.push_back(c + d);
                  t.push_back(c + d + "a");
                  t.push_back(c + d.substr(0, 2));
                  for (const std::string& e : chars) t.push_back(c + d + e);
                }
              }
              t.push_back("\xE4\xB8");        // (again: a duplicate)
              t.push_back("\x80\x80");        // continuation bytes alone
              t.push_back("\xE4\xB8\xAD\xAD");  // one too many
              t.push_back(
                  "\xE4"
                  "a");        // a lead byte cut short
              return t;
            }()) {}
};

}  // namespace

TEST_CASE(walk_inside_takes_multibyte_characters_whole) {
  Utf8Fixture f;
  const uint32_t start = f.start_state();
  for (const std::string& prefix : std::vector<std::string>{"", "a", "\xE4\xB8\xAD", "\xE4\xB8"}) {
    const uint32_t s = f.after(start, prefix);
    CHECK(s != Lexer::kDead);
    std::set<std::tuple<std::string, uint32_t>> want, got;
    size_t runs = 0, in_runs = 0;  // visits of tokens that start with a multi-byte character
    for (const std::string& t : f.tokens)
      if (const uint32_t u = f.after(s, t); u != Lexer::kDead) want.insert({t, u});
    stencil::walk_inside(*f.lexer, f.cache, f.trie, s, false, [&](uint32_t first, uint32_t end, uint32_t u) {
      for (uint32_t j = first; j < end; ++j) got.insert({f.tokens[f.trie.ordered_tokens()[j]], u});
      if (static_cast<uint8_t>(f.tokens[f.trie.ordered_tokens()[first]][0]) >= 0xC0) {
        ++runs;
        in_runs += end - first;
      }
      return false;
    });
    CHECK(got == want);
    // From a character boundary, runs: the sub-trie below lead byte E6 at once, and below the last
    // byte of a character (中文...) the tokens of whole characters together, not a token at a
    // time (118 visits for 118 tokens before).
    CHECK(prefix == "\xE4\xB8" || runs * 3 < in_runs);
  }
}
