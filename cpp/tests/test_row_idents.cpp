// cost/row_idents.h and tokens/shared_cache.h's sparse inner masks: what the hot paths key and
// copy by content must equal what they stand for. A row pushed again over the same rows (a new
// serial) gets the id it had; one id always names the same items, vetoes and rows below, over
// random texts; a sparse inner mask writes the words of the dense one, at every density.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "check.h"
#include "cost/row_idents.h"
#include "lexer/lexer.h"
#include "matcher/parse_state.h"
#include "parse_fixture.h"
#include "stencil/grammar.h"
#include "test_rng.h"
#include "tokens/shared_cache.h"

using stencil::EarleyParser;
using stencil::GrammarBuilder;
using stencil::ParseState;
using stencil::RowIdents;
using stencil::Symbol;
using stencil_test::Rng;

namespace {

// (word | num) ((, | ;) (word | num))*, with a ";" only before a num: rows at one index differ
// by what the last separator was.
struct Fixture : stencil_test::WordsGrammar {
  Fixture()
      : WordsGrammar([](GrammarBuilder& b, Symbol word) {
          const Symbol num = b.lexeme(b.re_repeat(b.re_byte_ranges({{'0', '2'}}), 1, -1), "num", false);
          const Symbol item = b.rule("item");
          b.add_alternative(item, {word});
          b.add_alternative(item, {num});
          const Symbol more = b.rule("more");
          b.add_alternative(more, {b.literal(",", "comma"), item});
          b.add_alternative(more, {b.literal(";", "semi"), num});
          const Symbol start = b.rule("start");
          b.add_alternative(start, {item, b.repeat(more, 0, -1)});
          return start;
        }) {}
};

using stencil_test::push_all;

std::vector<uint64_t> ids_of(RowIdents& ids, const ParseState& ps) {
  std::vector<uint64_t> v;
  for (uint32_t r = 0; r < ps.parser().num_rows(); ++r) v.push_back(ids.at(ps.parser(), r));
  return v;
}

// A row's content as the costs read it: its items, its vetoes, and the id of the row below.
using Content = std::tuple<std::vector<std::pair<uint32_t, uint32_t>>, std::vector<uint32_t>, uint64_t>;

Content content_of(RowIdents& ids, const EarleyParser& p, uint32_t r) {
  const stencil::EarleyRow& row = p.row(r);
  std::vector<std::pair<uint32_t, uint32_t>> items;
  for (uint32_t j = row.begin; j < row.end; ++j) items.emplace_back(p.item(j).pos, p.item(j).origin);
  const uint32_t* v = p.vetoes_of(r);
  return {items, std::vector<uint32_t>(v, v + (row.veto_end - row.veto_begin)), r > 0 ? ids.at(p, r - 1) : 0};
}

}  // namespace

TEST_CASE(row_idents_follow_content_not_serials) {
  Fixture f;
  ParseState ps(*f.grammar, *f.lexer);
  RowIdents ids;
  CHECK(push_all(ps, "ab,1;2,"));
  const std::vector<uint64_t> first = ids_of(ids, ps);
  const uint64_t serial = ps.parser().top().serial;
  ps.pop_to(1);
  // Other words, the same lexemes: the same items row for row, new serials.
  CHECK(push_all(ps, "ca,20;1,"));
  CHECK(ps.parser().top().serial != serial);
  CHECK(ids_of(ids, ps) == first);
  ps.pop_to(1);
  // ";" where "," was: that row and every row above it differ.
  CHECK(push_all(ps, "ab,1,2,"));
  const std::vector<uint64_t> other = ids_of(ids, ps);
  REQUIRE_EQ(other.size(), first.size());
  size_t same = 0;
  while (same < other.size() && other[same] == first[same]) ++same;
  CHECK(same > 0 && same < other.size());
  for (size_t r = same; r < other.size(); ++r) CHECK(other[r] != first[r]);
}

TEST_CASE(row_idents_name_one_content_each_over_random_texts) {
  Fixture f;
  ParseState ps(*f.grammar, *f.lexer);
  RowIdents ids;
  Rng rng{7};
  std::map<uint64_t, Content> seen;
  size_t repeats = 0;
  const std::string bytes = "ab01,; ";
  for (int text = 0; text < 400; ++text) {
    ps.pop_to(1);
    for (int k = 0, n = 1 + static_cast<int>(rng.below(12)); k < n; ++k) {
      if (!ps.push_byte(static_cast<uint8_t>(bytes[rng.below(static_cast<uint32_t>(bytes.size()))]))) continue;
      const EarleyParser& p = ps.parser();
      for (uint32_t r = 0; r < p.num_rows(); ++r) {
        const uint64_t id = ids.at(p, r);
        const Content c = content_of(ids, p, r);
        auto [it, fresh] = seen.emplace(id, c);
        if (!fresh) {
          ++repeats;
          CHECK(it->second == c);
        }
      }
    }
  }
  CHECK(repeats > 1000);  // (the test means something only where ids repeat)
}

TEST_CASE(sparse_inner_masks_write_the_dense_words) {
  Rng rng{11};
  for (int round = 0; round < 300; ++round) {
    stencil::SharedMaskEntry e;
    const size_t n = 1 + rng.below(3000);
    const uint32_t base = rng.below(2) ? ~0u : 0u;
    const uint32_t odd_in = 1 + rng.below(40);  // one word in odd_in differs from base, about
    for (size_t i = 0; i < n; ++i) {
      const uint32_t pick = rng.below(odd_in);
      e.inner.push_back(pick ? base : (rng.below(3) == 0 ? ~base : rng.below(0xffffffffu)));
    }
    const std::vector<uint32_t> inner = e.inner;
    e.index();
    if (odd_in >= 16 && n >= 400) CHECK(e.sparse);  // (about n / odd_in odd words, under an eighth)
    if (e.sparse) CHECK(e.inner.empty());  // (the odd words hold it)
    CHECK(e.dense() == inner);
    for (size_t need : {n, n / 2, size_t(0)}) {
      std::vector<uint32_t> words(n + 1, 0x5a5a5a5au);
      e.write(words.data(), need);
      for (size_t i = 0; i < need; ++i) CHECK_EQ(words[i], inner[i]);
      CHECK_EQ(words[need], 0x5a5a5a5au);  // nothing past need
    }
  }
}
