// Lexeme ceilings (CompletionTables::state_ceiling): the most tokens that any state reachable from
// a lexer state needs to end its lexeme. A budget-aware mask bounds the cost after every token
// that stays inside the current lexeme by it, and costs those tokens one by one only where that
// bound does not fit the budget.
//
// Distances are counted in single-byte tokens (bytes that are tokens of their own), so each is the
// length of a real tokenization: the token searches behind the costs (tokens_to_end, exact on so
// few states) never return more.
#include <algorithm>

#include "matcher/completion.h"
#include "support/heap_size.h"

namespace stencil {

uint32_t CompletionTables::state_ceiling(uint32_t alone) {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = ceilings_.find(alone);
    if (it != ceilings_.end()) return it->second;
  }
  constexpr size_t kMaxStates = 256;  // exploring makes lexer states: keep it small
  uint32_t c = kInf;
  const std::vector<uint32_t> live = lexer_.live_lexemes(alone);
  uint32_t k = 0, relaxed = Lexer::kDead, rest = Lexer::kDead, from = kInf;
  if (live.size() != 1) {
    c = kInf;
  } else if (all_bytes_ && lexer_.bounded_text_head(alone, &k, &relaxed, &rest)) {
    // A counted string body `C{lo,k} rest`: each state after n whole characters needs at most
    // what `alone` needs (fewer characters left to the lower bound); one inside a character (or
    // an escape) needs at most the bytes that finish it more, and one inside `rest` at most what
    // rest needs: both at most the ceiling of the relaxed state `C* rest`, which reaches them all.
    explore_ceiling(alone, live[0], 4 * kMaxStates, true, &from);
    const uint32_t loose = explore_ceiling(relaxed, live[0], kMaxStates, false, nullptr);
    if (from <= kMaxStates && loose < kInf) c = from + loose;
  } else {
    c = explore_ceiling(alone, live[0], kMaxStates, false, nullptr);
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (ceilings_.emplace(alone, c).second)
    bytes_.fetch_add(heap::block(sizeof(void*) * 2 + 8) + sizeof(void*), std::memory_order_relaxed);
  return c;
}

uint32_t CompletionTables::explore_ceiling(uint32_t start, uint32_t l, size_t max_states, bool first_end,
                                           uint32_t* from_start) const {
  const ByteClasses& classes = lexer_.classes();
  std::vector<int> rep(256, -1);  // per class: a byte of it
  // per class: each of its bytes is a single-byte token (then its representative's paths are real)
  std::vector<uint8_t> token_class(256, 1);
  std::vector<uint8_t> single(256, 0);
  for (uint8_t b : single_bytes_) single[b] = 1;
  for (int b = 0; b < 256; ++b) {
    const uint16_t c = classes.class_of[b];
    if (c >= 256) return kInf;
    if (rep[c] < 0) rep[c] = b;
    if (!single[b]) token_class[c] = 0;
  }
  auto ends = [&](uint32_t s) {
    const auto& acc = lexer_.state(s).accepting;
    return std::binary_search(acc.begin(), acc.end(), l);
  };
  std::unordered_map<uint32_t, uint32_t> index{{start, 0}};
  std::vector<uint32_t> states{start};
  std::vector<std::vector<uint32_t>> into{{}};  // per state: states with a token byte into it
  std::vector<uint32_t> depth{0};               // (first_end: breadth-first over token bytes)
  deadline::Ticker ticker;
  for (size_t k = 0; k < states.size(); ++k) {
    const uint32_t s = states[k];
    if (first_end && ends(s)) {
      if (from_start) *from_start = depth[k];
      return depth[k];
    }
    if (lexer_.state(s).end_now) continue;
    for (int c = 0; c < 256; ++c) {
      if (rep[c] < 0 || (first_end && !token_class[c])) continue;
      ticker.tick();
      const uint32_t t = lexer_.next(s, static_cast<uint8_t>(rep[c]));
      if (t == Lexer::kDead) continue;
      auto [it, fresh] = index.emplace(t, static_cast<uint32_t>(states.size()));
      if (fresh) {
        if (states.size() >= max_states) return kInf;
        states.push_back(t);
        into.emplace_back();
        depth.push_back(depth[k] + 1);
      }
      if (token_class[c]) into[it->second].push_back(static_cast<uint32_t>(k));
    }
  }
  if (first_end) return kInf;
  std::vector<uint32_t> dist(states.size(), kInf);
  std::vector<uint32_t> queue;
  for (size_t k = 0; k < states.size(); ++k)
    if (ends(states[k])) {
      dist[k] = 0;
      queue.push_back(static_cast<uint32_t>(k));
    }
  for (size_t h = 0; h < queue.size(); ++h)
    for (uint32_t from : into[queue[h]])
      if (dist[from] == kInf) {
        dist[from] = dist[queue[h]] + 1;
        queue.push_back(from);
      }
  if (from_start) *from_start = dist[0];
  return *std::max_element(dist.begin(), dist.end());
}

}  // namespace stencil
