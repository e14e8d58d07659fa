#include "cost/inner_steps.h"

#include <algorithm>
#include <array>

#include "lexer/lexer.h"
#include "support/deadline.h"
#include "support/flat_map.h"
#include "support/token_bits.h"
#include "support/work_limit.h"
#include "tokens/trie.h"
#include "tokens/walk_loops.h"

namespace stencil {

namespace {

// The walk counts as work (support/work_limit.h) where a limit is in force (the token budget's
// searches): a unit per 16 nodes, about what a derivative unit costs, so that searches which
// walk the trie once per state they expand (a counted pattern: every token a state of its own)
// stop at the same limit as those that derive.
constexpr size_t kWalkChunk = 1024;
constexpr uint64_t kWalkChunkUnits = kWalkChunk / 16;

// The lowest ASCII byte of a bucket in `chars` (-1: none): a character the sub-trie holds. (Per
// bucket, its lowest byte, found once: asked at every sub-trie a walk tries to skip.)
int ascii_of(const CharSummary& chars) {
  static const std::array<int, CharSummary::kGroupBase> lowest = [] {
    std::array<int, CharSummary::kGroupBase> out;
    out.fill(0x100);
    for (int b = 0x7E; b >= 0x09; --b)
      if (CharSummary::ascii_text(static_cast<uint8_t>(b))) out[CharSummary::bucket_of(static_cast<uint8_t>(b))] = b;
    return out;
  }();
  int best = 0x100;
  for (int k = 1; k < CharSummary::kGroupBase; ++k)
    if (chars.has(k)) best = std::min(best, lowest[k]);
  return best == 0x100 ? -1 : best;
}

constexpr uint8_t kBroken = 0xFF;

// The continuation bytes a character still needs after `byte`, `before` needed before it.
uint8_t utf8_pending(uint8_t before, uint8_t byte) {
  if (byte < 0x80) return 0;
  if ((byte & 0xC0) == 0x80) return before == 0 || before == kBroken ? kBroken : before - 1;
  if ((byte & 0xE0) == 0xC0) return 1;
  if ((byte & 0xF0) == 0xE0) return 2;
  if ((byte & 0xF8) == 0xF0) return 3;
  return kBroken;
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
  // `chars_before`: the characters the node's bytes start, its own included. With `loop_only`
  // (a walk at a non-ASCII byte: many nodes, few states that loop), only where t is known to
  // loop already, asked at an ASCII byte: no count or chain is tried, no state explored.
  bool visit_subtree(size_t i, uint32_t t, uint32_t chars_before, bool loop_only = false) {
    const TrieNode& node = trie_.nodes()[i];
    const CharSummary& chars = trie_.summaries()[i];
    if (node.subtree_size <= 1 || chars.has(CharSummary::kPoison)) return false;
    int rep = -1;  // a character of the counted repetition, to advance t by
    adv_.assign(1, t);
    if (loop_only && !loops_.loops_over(t, chars, false)) return false;
    if (!loop_only && !loops_.loops_over(t, chars, true)) {
      if (node.subtree_size < 16 || node.height >= 255 || (rep = ascii_of(chars)) < 0) return false;
      uint32_t k = 0, relaxed = Lexer::kDead, rest = Lexer::kDead;
      Counted& c = counted_[t & (kSlots - 1)];
      if (c.state != t) c = {t, lexer_.bounded_text_head(t, &k, &relaxed, &rest), k, relaxed};
      const bool counted = c.ok && c.k >= node.height && loops_.loops_over(c.relaxed, chars, true);
      if (!counted && !uniform_chain(chars, rep, node.height)) return false;
    }
    const uint32_t start = trie_.tokens_before()[i], end = trie_.tokens_before()[i + node.subtree_size];
    const auto& starts = trie_.token_starts();
    const uint32_t base = chars_before;
    auto advance = [&](uint32_t n) {  // t after n more characters
      if (rep < 0) return t;
      while (adv_.size() <= n)
        adv_.push_back(adv_.back() == Lexer::kDead ? Lexer::kDead : lexer_.next(adv_.back(), rep));
      return adv_[n];
    };
    const auto& cuts = trie_.cut_tokens();
    auto cut =
        std::lower_bound(cuts.begin(), cuts.end(), start, [](const CutToken& x, uint32_t v) { return x.index < v; });
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
  // Whether every character of `chars` (ASCII only) leads adv_[0] to one state, and that state
  // to one state, for `height` characters (a pattern's count, `[\w-]{162}`, where no string
  // length bound is known): every token below then ends in the state its character count
  // fixes, found once per count instead of a lexer step per byte of every token. Fills adv_.
  bool uniform_chain(const CharSummary& chars, int rep, uint32_t height) {
    if (chars.bits & (CharSummary::kGroupBits | (1u << CharSummary::kPoison))) return false;
    while (adv_.size() <= height) {
      const uint32_t s = adv_.back();
      if (s == Lexer::kDead) return true;  // (every longer token dies: none is visited)
      const uint32_t u = lexer_.next_tagged(s, static_cast<uint8_t>(rep));
      if (u & Lexer::kEndNowTag) return false;
      for (int b = 1; b < CharSummary::kGroupBase; ++b)
        if (chars.has(b) && uniform_target(s, b) != u) return false;
      adv_.push_back(u);
    }
    return true;
  }

  // The state that each character of ASCII bucket k (CharSummary) leads s to (kUnknown where they
  // differ or one ends the lexeme at once). Per bucket asked, not for every bucket: each byte
  // derives a transition, and a state of a long count is new at every character (an e-mail
  // domain's labels beside a pattern: the other buckets' transitions were most of the walk).
  uint32_t uniform_target(uint32_t s, int k) {
    Uniform& u = uniform_[s & (kSlots - 1)];
    if (u.state != s) {
      u.state = s;
      u.known = 0;
    }
    if (u.known >> k & 1) return u.target[k];
    uint32_t target = Lexer::kDead;
    bool first = true;
    for (int b = 0; b < 0x80 && target != Lexer::kUnknown; ++b) {
      if (CharSummary::bucket_of(static_cast<uint8_t>(b)) != k) continue;
      uint32_t t = lexer_.next_tagged(s, static_cast<uint8_t>(b));
      if (t & Lexer::kEndNowTag) t = Lexer::kUnknown;
      if (first || target != t) target = first ? t : Lexer::kUnknown;
      first = false;
    }
    u.known |= uint32_t{1} << k;
    return u.target[k] = target;
  }
  struct Uniform {
    uint32_t state = Lexer::kUnknown;
    uint32_t known = 0;  // the buckets whose target is known
    uint32_t target[CharSummary::kGroupBase];
  };

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
  Uniform uniform_[kSlots];
  std::vector<uint32_t> adv_;
};

}  // namespace

void walk_inside(const Lexer& lexer, const MaskCache& cache, const TokenTrie& trie, uint32_t state, bool ending,
                 const std::function<bool(uint32_t, uint32_t, uint32_t)>& visit, bool skip_loops,
                 size_t* nodes_walked) {
  const auto& nodes = trie.nodes();
  const auto& before = trie.tokens_before();
  InsideWalk inside(lexer, cache, trie, visit);
  deadline::Ticker ticker;
  size_t walked = 0;
  std::vector<uint32_t> st(static_cast<size_t>(trie.max_depth()) + 2);
  std::vector<uint32_t> chars(st.size(), 0);  // per depth: the characters the path's bytes start
  // per depth: the continuation bytes the path's last character still needs (0: the path ends at
  // a character boundary; kBroken: not UTF-8)
  std::vector<uint8_t> pending(st.size(), 0);
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
    pending[node.depth] = utf8_pending(pending[node.depth - 1], node.byte);
    if (skip_loops) {
      // From the node's byte where it ends a character: ASCII (or the parent's state kept), or
      // the last byte of a multi-byte character; or from the parent, at a lead byte after a
      // character boundary, where the parent's state loops over the sub-trie's characters, this
      // one's included (a vocabulary's CJK tokens: every one was walked byte by byte).
      const bool ascii_end = node.byte < 0x80 || t == st[node.depth - 1];
      const bool char_end = !ascii_end && pending[node.depth] == 0;
      const bool lead = node.byte >= 0xC0 && pending[node.depth - 1] == 0;
      if ((ascii_end && inside.visit_subtree(i, t, chars[node.depth])) ||
          (char_end && inside.visit_subtree(i, t, chars[node.depth], true)) ||
          (lead && inside.visit_subtree(i, st[node.depth - 1], chars[node.depth - 1], true))) {
        if (inside.stopped()) return;
        i += node.subtree_size;
        continue;
      }
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
  walk_inside(lexer, cache, trie, state, false, [&](uint32_t first, uint32_t end, uint32_t s) {
    found.push_back({first, end, s});
    return false;
  });
  InnerSteps out{Lexer::kDead, {}, {}, true};
  // The distinct successors (a few hundred at most, against tens of thousands of runs: an open
  // table, not a node per insert) and how many tokens lead to each.
  FlatMap64 slot_of;  // state -> index into distinct
  std::vector<uint32_t> distinct;
  std::vector<size_t> count;
  std::vector<uint32_t> slot(found.size());
  for (size_t r = 0; r < found.size(); ++r) {
    const uint32_t* known = slot_of.find(found[r].state);
    if (!known) {
      slot_of.put(found[r].state, static_cast<uint32_t>(distinct.size()));
      distinct.push_back(found[r].state);
      count.push_back(0);
    }
    slot[r] = known ? *known : static_cast<uint32_t>(distinct.size() - 1);
    count[slot[r]] += found[r].end - found[r].first;
  }
  size_t most = 0, common = distinct.size();
  for (size_t k = 0; k < distinct.size(); ++k)
    if (count[k] > most || (count[k] == most && distinct[k] < out.common)) {
      most = count[k];
      out.common = distinct[k];
      common = k;
    }
  std::vector<uint32_t> index(distinct.size(), 0);  // slot -> into out.states
  for (size_t k = 0; k < distinct.size(); ++k) {
    if (k == common) continue;
    index[k] = static_cast<uint32_t>(out.states.size());
    out.states.push_back(distinct[k]);
  }
  const auto& ordered = trie.ordered_tokens();
  size_t others = 0;
  for (size_t r = 0; r < found.size(); ++r)
    if (slot[r] != common) others += found[r].end - found[r].first;
  out.tokens.reserve(others);
  std::vector<uint32_t> seen(need, 0u);
  auto mark = [&](int32_t t) {
    if (t >= 0 && static_cast<size_t>(t >> 5) < need) token_bits::set(seen.data(), t);
  };
  for (size_t r = 0; r < found.size(); ++r) {
    const Found& f = found[r];
    for (uint32_t j = f.first; j < f.end; ++j) {
      mark(ordered[j]);
      if (slot[r] != common) out.tokens.push_back({ordered[j], index[slot[r]]});
    }
  }
  // A duplicate (same bytes, another id) leads where its first id does: the first ids' steps
  // by id, in a scratch table as long as the vocabulary (no sort of the steps).
  if (!trie.duplicates().empty()) {
    thread_local std::vector<uint32_t> step_of;
    if (step_of.size() < need * 32) step_of.assign(need * 32, ~0u);
    const size_t n = step_of.size();
    for (const auto& [t, k] : out.tokens)
      if (static_cast<size_t>(t) < n) step_of[t] = k;
    std::vector<std::pair<int32_t, uint32_t>> dups;
    for (auto [a, b] : trie.duplicates()) {
      if (!token_bits::has_checked(seen.data(), need, a)) continue;
      mark(b);
      if (static_cast<size_t>(a) < n && step_of[a] != ~0u) dups.push_back({b, step_of[a]});
    }
    for (const auto& [t, k] : out.tokens)
      if (static_cast<size_t>(t) < n) step_of[t] = ~0u;
    out.tokens.insert(out.tokens.end(), dups.begin(), dups.end());
  }
  for (size_t w = 0; w < need && out.covered; ++w) out.covered = (inner[w] & ~seen[w]) == 0;
  out.tokens.shrink_to_fit();
  return out;
}

}  // namespace stencil
