#include "cost/inner_steps.h"

#include <algorithm>
#include <unordered_map>

#include "lexer/lexer.h"
#include "support/deadline.h"
#include "support/work_limit.h"
#include "tokens/trie.h"
#include "tokens/walk_loops.h"
#include "support/token_bits.h"

namespace stencil {

namespace {

// The walk counts as work (support/work_limit.h) where a limit is in force (the token budget's
// searches): a unit per 16 nodes, about what a derivative unit costs, so that searches which
// walk the trie once per state they expand (a counted pattern: every token a state of its own)
// stop at the same limit as those that derive.
constexpr size_t kWalkChunk = 1024;
constexpr uint64_t kWalkChunkUnits = kWalkChunk / 16;

// A byte of the lowest ASCII bucket in `chars` (-1: none): a character the sub-trie holds.
int ascii_of(const CharSummary& chars) {
  for (int b = 0x09; b < 0x7F; ++b)
    if (CharSummary::ascii_text(static_cast<uint8_t>(b)) && chars.has(CharSummary::bucket_of(static_cast<uint8_t>(b))))
      return b;
  return -1;
}

class InsideWalk {
 public:
  InsideWalk(const Lexer& lexer, const MaskCache& cache, const TokenTrie& trie,
             const std::function<bool(uint32_t, uint32_t, uint32_t)>& visit)
      : lexer_(lexer), trie_(trie), loops_(cache, lexer), visit_(visit) {}

  // Whether every token of node i's sub-trie stays inside the lexeme from t (the state after the
  // node's byte, at a character boundary), each in a state that its character count fixes: t
  // loops on the sub-trie's characters (every token ends in t), or t counts characters
  // (Lexer::bounded_text_head: a string body with a length bound) with room for the sub-trie
  // and its relaxed state loops on them. Visits them.
  // `chars_before`: the characters the node's bytes start, its own included.
  bool visit_subtree(size_t i, uint32_t t, uint32_t chars_before) {
    const TrieNode& node = trie_.nodes()[i];
    const CharSummary& chars = trie_.summaries()[i];
    if (node.subtree_size <= 1 || chars.has(CharSummary::kPoison)) return false;
    int rep = -1;  // a character of the counted repetition, to advance t by
    if (!loops_.loops_over(t, chars, true)) {
      if (node.subtree_size < 16 || (rep = ascii_of(chars)) < 0) return false;
      uint32_t k = 0, relaxed = Lexer::kDead, rest = Lexer::kDead;
      Counted& c = counted_[t & (kSlots - 1)];
      if (c.state != t) c = {t, lexer_.bounded_text_head(t, &k, &relaxed, &rest), k, relaxed};
      if (!c.ok || node.height >= 255 || c.k < node.height || !loops_.loops_over(c.relaxed, chars, true)) return false;
    }
    const uint32_t start = trie_.tokens_before()[i], end = trie_.tokens_before()[i + node.subtree_size];
    const auto& starts = trie_.token_starts();
    const uint32_t base = chars_before;
    adv_.assign(1, t);
    auto advance = [&](uint32_t n) {  // t after n more characters
      if (rep < 0) return t;
      while (adv_.size() <= n) adv_.push_back(adv_.back() == Lexer::kDead ? Lexer::kDead : lexer_.next(adv_.back(), rep));
      return adv_[n];
    };
    const auto& cuts = trie_.cut_tokens();
    auto cut = std::lower_bound(cuts.begin(), cuts.end(), start, [](const CutToken& x, uint32_t v) { return x.index < v; });
    for (uint32_t j = start; j < end;) {
      if (cut != cuts.end() && cut->index == j) {  // ends inside a character: its bytes from there
        uint32_t u = advance(starts[j] - base - 1);  // the whole characters, then the cut one's bytes
        for (uint8_t b = 0; b < cut->count && u != Lexer::kDead; ++b) u = lexer_.next(u, cut->bytes[b]);
        if (u != Lexer::kDead && visit_(j, j + 1, u)) return stopped_ = true;
        ++cut;
        ++j;
        continue;
      }
      uint32_t e = j + 1;  // a run of tokens with as many characters, none cut
      const uint32_t limit = cut != cuts.end() && cut->index < end ? cut->index : end;
      while (e < limit && (rep < 0 || starts[e] == starts[j])) ++e;
      const uint32_t u = advance(starts[j] - base);
      if (u != Lexer::kDead && visit_(j, e, u)) return stopped_ = true;
      j = e;
    }
    return true;
  }

  bool stopped() const { return stopped_; }

 private:
  const Lexer& lexer_;
  const TokenTrie& trie_;
  WalkLoops loops_;
  const std::function<bool(uint32_t, uint32_t, uint32_t)>& visit_;
  bool stopped_ = false;
  struct Counted {
    uint32_t state = Lexer::kUnknown;
    bool ok = false;
    uint32_t k = 0, relaxed = Lexer::kDead;
  };
  static constexpr size_t kSlots = 64;
  Counted counted_[kSlots];
  std::vector<uint32_t> adv_;
};

}  // namespace

void walk_inside(const Lexer& lexer, const MaskCache& cache, const TokenTrie& trie, uint32_t state, bool ending,
                 const std::function<bool(uint32_t, uint32_t, uint32_t)>& visit, bool skip_loops, size_t* nodes_walked) {
  const auto& nodes = trie.nodes();
  const auto& before = trie.tokens_before();
  InsideWalk inside(lexer, cache, trie, visit);
  deadline::Ticker ticker;
  size_t walked = 0;
  std::vector<uint32_t> st(static_cast<size_t>(trie.max_depth()) + 2);
  std::vector<uint32_t> chars(st.size(), 0);  // per depth: the characters the path's bytes start
  st[0] = state;
  for (size_t i = 1; i < nodes.size();) {
    const TrieNode& node = nodes[i];
    ticker.tick();
    if (nodes_walked) ++*nodes_walked;
    if ((++walked & (kWalkChunk - 1)) == 0) work::spend(kWalkChunkUnits);
    const uint32_t t = lexer.next_tagged(st[node.depth - 1], node.byte);
    if (t == Lexer::kDead || (t & Lexer::kEndNowTag)) {
      if (t != Lexer::kDead && ending && node.token_id >= 0 && visit(before[i], before[i] + 1, t)) return;
      i += node.subtree_size;
      continue;
    }
    chars[node.depth] = chars[node.depth - 1] + ((node.byte & 0xC0) != 0x80 ? 1 : 0);
    // (the node's byte must end a character: ASCII, or the parent's state kept)
    if (skip_loops && (node.byte < 0x80 || t == st[node.depth - 1]) && inside.visit_subtree(i, t, chars[node.depth])) {
      if (inside.stopped()) return;
      i += node.subtree_size;
      continue;
    }
    if (node.token_id >= 0 && visit(before[i], before[i] + 1, t)) return;
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
              [&](uint32_t first, uint32_t end, uint32_t s) {
                found.push_back({first, end, s});
                return false;
              });
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
    if (t >= 0 && static_cast<size_t>(t >> 5) < need) token_bits::set(seen.data(), t);
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
    if (!token_bits::has_checked(seen.data(), need, a)) continue;
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
