// cost/lexeme_ceiling: a ceiling's exploration and a reach stop at their derivative work
// (LexemeCeiling::kExploreUnits, kReachUnits), not only at their caps on states, where every
// state they make costs many derivatives: a domain of labels of up to 63 characters beside a
// pattern of words, as an e-mail format beside a pattern (each label's count a state, each
// state an intersection of many alternatives). Past the work they fail as past their states, and
// the lexer they leave stays usable.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "cost/cost_tables.h"
#include "lexer/lexer.h"
#include "matcher/lexer_epoch.h"
#include "stencil/compiled_grammar.h"
#include "stencil/grammar.h"
#include "stencil/vocabulary.h"
#include "support/work_limit.h"

using stencil::ExprId;
using stencil::GrammarBuilder;
using stencil::LexemeCeiling;
using stencil::Lexer;

namespace {

// `[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.label)*` beside `\w+(\.\w{2,})+`, and alternatives of
// tags the domain must not end in (`~(.*tagN)`), each making the states' derivatives costlier.
std::shared_ptr<stencil::CompiledGrammar> domain_grammar(int tags) {
  GrammarBuilder b;
  const ExprId alnum = b.re_byte_ranges({{'a', 'z'}, {'0', '9'}});
  const ExprId word = b.re_byte_ranges({{'a', 'z'}, {'0', '9'}, {'_', '_'}});
  const ExprId inner = b.re_byte_ranges({{'a', 'z'}, {'0', '9'}, {'-', '-'}});
  const ExprId label = b.re_concat({alnum, b.re_repeat(b.re_concat({b.re_repeat(inner, 0, 61), alnum}), 0, 1)});
  const ExprId domain = b.re_concat({label, b.re_repeat(b.re_concat({b.re_literal("."), label}), 0, -1)});
  const ExprId pattern = b.re_concat(
      {b.re_repeat(word, 1, -1), b.re_repeat(b.re_concat({b.re_literal("."), b.re_repeat(word, 2, -1)}), 1, -1)});
  std::vector<ExprId> all{domain, pattern};
  for (int i = 0; i < tags; ++i)
    all.push_back(b.re_not(b.re_concat({b.re_any_byte_string(), b.re_literal("x" + std::to_string(i) + "-q")})));
  const stencil::Symbol x = b.lexeme(b.re_concat({b.re_and(all), b.re_literal("\"")}), "x", false);
  const stencil::Symbol start = b.rule("start");
  b.add_alternative(start, {x});
  std::vector<std::string> tokens{"<eos>", ".", "-", "_", "\"", "q", "ab", "abc", "x1", "mail", "example"};
  for (char c = 'a'; c <= 'z'; ++c) tokens.push_back(std::string(1, c));
  for (char c = '0'; c <= '9'; ++c) tokens.push_back(std::string(1, c));
  auto vocab = std::make_shared<stencil::Vocabulary>(tokens, std::vector<int32_t>{0}, std::vector<int32_t>{0},
                                                     static_cast<int32_t>(tokens.size()));
  return std::make_shared<stencil::CompiledGrammar>(b.build(start), std::move(vocab));
}

}  // namespace

TEST_CASE(ceiling_searches_stop_at_their_work) {
  size_t explorations_stopped = 0, reaches_stopped = 0;
  for (int tags : {0, 8, 128}) {
    auto grammar = domain_grammar(tags);
    auto tables = grammar->epoch()->cost_tables(grammar->grammar(), grammar->vocab());
    const Lexer& lx = tables->lexer();
    const std::string at = "with " + std::to_string(tags) + " tags: ";
    // From a few states into the domain (each a region of its own: the counts move).
    uint32_t s = lx.start_state({0});
    for (const char* text : {"", "a", "ab1", "mail.ex"}) {
      uint32_t u = s;
      for (const char* p = text; *p && u != Lexer::kDead; ++p) u = lx.next(u, static_cast<uint8_t>(*p));
      CHECK_MSG(u != Lexer::kDead, at + text);
      if (u == Lexer::kDead) continue;
      const uint64_t before = stencil::work::state.done;
      const uint32_t ceiling = tables->ceiling.state_ceiling(u);
      const uint64_t explored = stencil::work::state.done - before;
      const std::vector<uint32_t>& reach = tables->ceiling.reach(u);
      const uint64_t reached = stencil::work::state.done - before - explored;
      // (a derivative in flight may pass the limit by its own units: a few hundred at most)
      CHECK_MSG(explored <= LexemeCeiling::kExploreUnits + 1024, at + text + ": " + std::to_string(explored));
      CHECK_MSG(reached <= LexemeCeiling::kReachUnits + 1024, at + text + ": " + std::to_string(reached));
      if (explored > LexemeCeiling::kExploreUnits) {
        ++explorations_stopped;
        CHECK_MSG(ceiling == stencil::cost::kInf, at + text);
      }
      if (reached > LexemeCeiling::kReachUnits) {
        ++reaches_stopped;
        CHECK_MSG(reach.empty(), at + text);
      }
      // The lexer goes on: the rest of an address still reads.
      uint32_t v = u;
      for (const char* p = "x.com\""; *p && v != Lexer::kDead; ++p) v = lx.next(v, static_cast<uint8_t>(*p));
      CHECK_MSG(v != Lexer::kDead, at + text + " then x.com");
    }
  }
  // The costliest lexeme's searches are the ones the work stops (else this tests nothing): with
  // 128 tags, from the start and from inside a second label.
  CHECK_MSG(explorations_stopped > 0, "no exploration passed its work");
  CHECK_MSG(reaches_stopped > 0, "no reach passed its work");
}
