#include "matcher/inner_steps.h"

#include <algorithm>
#include <unordered_map>

#include "lexer/lexer.h"
#include "support/deadline.h"
#include "tokens/trie.h"
#include "tokens/walk_loops.h"

namespace stencil {

void walk_inside(const Lexer& lexer, const MaskCache& cache, const TokenTrie& trie, uint32_t state, bool ending,
                 const std::function<void(uint32_t, uint32_t, uint32_t)>& visit) {
  const auto& nodes = trie.nodes();
  const auto& summaries = trie.summaries();
  const auto& before = trie.tokens_before();
  const auto& cuts = trie.cut_tokens();
  WalkLoops loops(cache, lexer);
  deadline::Ticker ticker;
  std::vector<uint32_t> st(static_cast<size_t>(trie.max_depth()) + 2);
  st[0] = state;
  for (size_t i = 1; i < nodes.size();) {
    const TrieNode& node = nodes[i];
    ticker.tick();
    const uint32_t t = lexer.next_tagged(st[node.depth - 1], node.byte);
    if (t == Lexer::kDead || (t & Lexer::kEndNowTag)) {
      if (t != Lexer::kDead && ending && node.token_id >= 0) visit(before[i], before[i] + 1, t);
      i += node.subtree_size;
      continue;
    }
    // Characters that each lead t back to itself (the node's own byte among them, which ends a
    // character: ASCII, or the parent's state kept): every token from this node down ends in t,
    // but those cut inside a character, which end where its bytes lead.
    const CharSummary& chars = summaries[i];
    if (node.subtree_size > 1 && !chars.has(CharSummary::kPoison) &&
        (node.byte < 0x80 || t == st[node.depth - 1]) && loops.loops_over(t, chars, true)) {
      uint32_t first = before[i];
      const uint32_t end = before[i + node.subtree_size];
      if (chars.has_groups()) {
        auto c = std::lower_bound(cuts.begin(), cuts.end(), first,
                                  [](const CutToken& x, uint32_t v) { return x.index < v; });
        for (; c != cuts.end() && c->index < end; ++c) {
          if (c->index > first) visit(first, c->index, t);
          uint32_t u = t;
          for (uint8_t k = 0; k < c->count && u != Lexer::kDead; ++k) u = lexer.next(u, c->bytes[k]);
          if (u != Lexer::kDead) visit(c->index, c->index + 1, u);
          first = c->index + 1;
        }
      }
      if (first < end) visit(first, end, t);
      i += node.subtree_size;
      continue;
    }
    if (node.token_id >= 0) visit(before[i], before[i] + 1, t);
    st[node.depth] = t;
    ++i;
  }
}

namespace {

// A run of inner tokens that all lead to one state.
struct Found {
  uint32_t first, end;  // ordered_tokens() range
  uint32_t state;
};

}  // namespace

InnerSteps InnerSteps::of(const Lexer& lexer, const MaskCache& cache, const TokenTrie& trie, uint32_t state,
                          const uint32_t* inner, size_t need) {
  std::vector<Found> found;
  walk_inside(lexer, cache, trie, state, false,
              [&](uint32_t first, uint32_t end, uint32_t s) { found.push_back({first, end, s}); });
  InnerSteps out{Lexer::kDead, {}, {}, true};
  std::unordered_map<uint32_t, size_t> count;
  for (const Found& f : found) count[f.state] += f.end - f.first;
  size_t most = 0;
  for (const auto& [s, n] : count)
    if (n > most || (n == most && s < out.common)) {
      most = n;
      out.common = s;
    }
  const auto& ordered = trie.ordered_tokens();
  std::vector<uint32_t> seen(need, 0u);
  std::unordered_map<uint32_t, uint32_t> index;  // state -> into out.states
  auto mark = [&](int32_t t) {
    if (t >= 0 && static_cast<size_t>(t >> 5) < need) seen[t >> 5] |= 1u << (t & 31);
  };
  for (const Found& f : found) {
    const bool common = f.state == out.common;
    uint32_t k = 0;
    if (!common) {
      auto [it, fresh] = index.emplace(f.state, static_cast<uint32_t>(out.states.size()));
      if (fresh) out.states.push_back(f.state);
      k = it->second;
    }
    for (uint32_t j = f.first; j < f.end; ++j) {
      mark(ordered[j]);
      if (!common) out.tokens.push_back({ordered[j], k});
    }
  }
  // A duplicate (same bytes, another id) leads where its first id does.
  std::sort(out.tokens.begin(), out.tokens.end());
  std::vector<std::pair<int32_t, uint32_t>> dups;
  for (auto [a, b] : trie.duplicates()) {
    if (a < 0 || static_cast<size_t>(a >> 5) >= need || !((seen[a >> 5] >> (a & 31)) & 1)) continue;
    mark(b);
    auto it = std::lower_bound(out.tokens.begin(), out.tokens.end(), std::make_pair(a, 0u));
    if (it != out.tokens.end() && it->first == a) dups.push_back({b, it->second});
  }
  if (!dups.empty()) {
    out.tokens.insert(out.tokens.end(), dups.begin(), dups.end());
    std::sort(out.tokens.begin(), out.tokens.end());
  }
  for (size_t w = 0; w < need && out.covered; ++w) out.covered = (inner[w] & ~seen[w]) == 0;
  out.tokens.shrink_to_fit();
  return out;
}

}  // namespace stencil
