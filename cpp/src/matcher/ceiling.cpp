// Lexeme ceilings (FinishTables::state_ceiling): the most tokens that any state reachable from
// a lexer state needs to end its lexeme. A budget-aware mask bounds the cost after every token
// that stays inside the current lexeme by it, and costs those tokens one by one only where that
// bound does not fit the budget.
//
// Distances are counted in single-byte tokens (bytes that are tokens of their own), so each is the
// length of a real tokenization: the token searches behind the costs (tokens_to_end) never
// return more.
#include <algorithm>
#include <cctype>

#include "matcher/finish_cost.h"

namespace stencil {

namespace {
constexpr size_t kMaxStates = 1024;  // per breadth-first search to a lexeme's end
// explored per lexeme region (exploring makes lexer states; a length beside a pattern makes counts
// times pattern states, past any cap: a failed exploration of 256 cost about 5 ms)
constexpr size_t kMaxExplored = 64;
constexpr uint32_t kRelaxLimit = 64;  // byte_distance's searches: bounds from it up lifted
}  // namespace

FinishTables::ByteSteps FinishTables::byte_steps() const {
  ByteSteps out;
  out.rep.assign(256, -1);
  out.token_class.assign(256, 1);
  std::vector<uint8_t> single(256, 0);
  for (uint8_t b : single_bytes_) single[b] = 1;
  const ByteClasses& classes = lexer_.classes();
  // A class's byte is a token of its own where one is (a class's bytes lead alike, so walking
  // by it is walking by single-byte tokens); among those, letters and digits first: a path in
  // single bytes (path_to_end) then reads as words, which longer tokens cover.
  auto rank = [&](int b) { return (single[b] ? 0 : 512) + (std::isalnum(b) ? b : 256 + b); };
  for (int b = 0; b < 256; ++b) {
    const uint16_t c = classes.class_of[b];
    if (c >= 256) return {};
    if (out.rep[c] < 0 || rank(b) < rank(out.rep[c])) out.rep[c] = b;
  }
  for (int c = 0; c < 256; ++c) out.token_class[c] = out.rep[c] >= 0 && single[out.rep[c]];
  return out;
}

uint32_t FinishTables::state_ceiling(uint32_t alone) {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = ceilings_.find(alone);
    if (it != ceilings_.end()) return it->second;
  }
  uint32_t c = kInf;
  const std::vector<uint32_t> live = lexer_.live_lexemes(alone);
  uint32_t k = 0, relaxed = Lexer::kDead, rest = Lexer::kDead;
  if (live.size() == 1 && all_bytes_ && lexer_.bounded_text_head(alone, &k, &relaxed, &rest)) {
    // A counted string body `C{lo,k} rest`: each state after n whole characters needs at most
    // what `alone` needs (fewer characters left to the lower bound); one inside a character (or
    // an escape) needs at most the bytes that finish it more, and one inside `rest` at most what
    // rest needs: both at most the ceiling of the relaxed state `C* rest`, which reaches them all.
    const uint32_t from = byte_distance(alone, live[0]);
    const uint32_t loose = from < kInf ? explore_ceilings(relaxed, live[0]) : kInf;
    if (loose < kInf) c = from + loose;
  } else if (live.size() == 1 && !lexer_.numbers_only(alone) && !beyond_search(alone)) {
    // (a number's search never ends; nor does one from a state an earlier search passed on
    // its way past kMaxExplored: its region is as large, or nearly)
    c = explore_ceilings(alone, live[0]);  // memoizes every state it explores
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  remember(ceilings_, alone, c);
  return c;
}

uint32_t FinishTables::state_bytes(uint32_t alone) {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = bytes_to_end_.find(alone);
    if (it != bytes_to_end_.end()) return it->second;
  }
  const std::vector<uint32_t> live = lexer_.live_lexemes(alone);
  const uint32_t d = live.size() == 1 ? byte_distance(alone, live[0]) : kInf;
  std::unique_lock<std::shared_mutex> lock(mu_);
  remember(bytes_to_end_, alone, d);
  return d;
}

// A length bound beside a pattern makes states of each count (a search from each of them makes
// hundreds of lexer states): searched from the state with its bounds of kRelaxLimit or more
// lifted instead, the same on every path shorter than that, and shared by the counts.
uint32_t FinishTables::byte_distance(uint32_t start, uint32_t l, std::vector<uint8_t>* path, bool* shortest) const {
  const uint32_t relaxed = lexer_.state(start).bounded ? lexer_.relaxed_state(start, kRelaxLimit) : Lexer::kDead;
  if (relaxed != Lexer::kDead && relaxed != start) {
    const uint32_t d = byte_search(relaxed, l, path, shortest);
    if (d < kRelaxLimit) return d;
  }
  return byte_search(start, l, path, shortest);
}

// Breadth-first over single-byte tokens from `start` to the first end of lexeme l (each state
// judged as it is made: the rest of its level, derivatives that may cost milliseconds each in an
// intersection, is not made); past kMaxStates states, depth-first (a path, not the shortest:
// where states branch at each byte, as `[ab]*a[ab]{12}`, the breadth of the search grows as
// 2^depth).
uint32_t FinishTables::byte_search(uint32_t start, uint32_t l, std::vector<uint8_t>* path, bool* shortest) const {
  const ByteSteps& steps = byte_steps_;
  if (shortest) *shortest = false;
  if (steps.rep.empty()) return kInf;
  std::unordered_map<uint32_t, uint32_t> index{{start, 0}};
  std::vector<uint32_t> queue{start}, depth{0}, parent{0};
  std::vector<uint8_t> via{0};  // the byte into queue[h]
  auto found = [&](size_t h) {
    if (path) {
      path->resize(depth[h]);
      for (size_t k = h; k != 0; k = parent[k]) (*path)[depth[k] - 1] = via[k];
    }
    if (shortest) *shortest = true;
    return depth[h];
  };
  if (ends_lexeme(start, l)) return found(0);
  deadline::Ticker ticker;
  for (size_t h = 0; h < queue.size(); ++h) {
    const uint32_t s = queue[h];
    if (lexer_.state(s).end_now) continue;
    for (int c = 0; c < 256; ++c) {
      if (steps.rep[c] < 0 || !steps.token_class[c]) continue;
      ticker.tick();
      const uint32_t t = lexer_.next(s, static_cast<uint8_t>(steps.rep[c]));
      if (t == Lexer::kDead || !index.emplace(t, static_cast<uint32_t>(queue.size())).second) continue;
      if (queue.size() >= kMaxStates) return byte_dive(start, l, path);
      queue.push_back(t);
      depth.push_back(depth[h] + 1);
      parent.push_back(static_cast<uint32_t>(h));
      via.push_back(static_cast<uint8_t>(steps.rep[c]));
      if (ends_lexeme(t, l)) return found(queue.size() - 1);
    }
  }
  return kInf;
}

// Depth-first over single-byte tokens from `start` to an end of lexeme l, each state once (kInf
// past kMaxStates states).
uint32_t FinishTables::byte_dive(uint32_t start, uint32_t l, std::vector<uint8_t>* path) const {
  const ByteSteps& steps = byte_steps_;
  std::unordered_map<uint32_t, bool> seen{{start, true}};
  std::vector<std::pair<uint32_t, int>> stack{{start, 0}};  // (state, next class to try)
  std::vector<uint8_t> bytes;
  deadline::Ticker ticker;
  while (!stack.empty()) {
    auto& [s, c] = stack.back();
    if (c == 0 && ends_lexeme(s, l)) {
      if (path) *path = bytes;
      return static_cast<uint32_t>(bytes.size());
    }
    while (c < 256 && (steps.rep[c] < 0 || !steps.token_class[c] || lexer_.state(s).end_now)) ++c;
    if (c >= 256) {
      stack.pop_back();
      if (!bytes.empty()) bytes.pop_back();
      continue;
    }
    ticker.tick();
    const uint8_t b = static_cast<uint8_t>(steps.rep[c++]);
    const uint32_t t = lexer_.next(s, b);
    if (t == Lexer::kDead || !seen.emplace(t, true).second) continue;
    if (seen.size() >= kMaxStates) return kInf;
    stack.push_back({t, 0});  // (s and c are not used past this)
    bytes.push_back(b);
  }
  return kInf;
}

// The bytes of a path in single bytes (byte_distance), cut into tokens longest first (every byte is a
// token: byte_steps_ walks only such bytes). A real token path inside the lexeme, so an upper
// bound on the fewest tokens, which stays consistent where the states it passes keep their
// rest of it (tokens_to_end memoizes them). Stops at a state whose distance is memoized.
uint32_t FinishTables::path_to_end(uint32_t state, const std::vector<uint8_t>& bytes, std::vector<uint32_t>* passed) {
  passed->clear();
  const auto& nodes = trie_.nodes();
  uint32_t s = state, count = 0;
  for (size_t at = 0; at < bytes.size(); ++count) {
    passed->push_back(s);
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      if (auto it = to_end_.find(s); it != to_end_.end()) return count + it->second;
    }
    size_t node = 0, len = 0, best = 0;  // down the trie along the bytes: the longest token
    uint32_t u = s, best_state = Lexer::kDead;
    while (at + len < bytes.size()) {
      size_t j = node + 1;
      const size_t end = node + nodes[node].subtree_size;
      while (j < end && nodes[j].byte != bytes[at + len]) j += nodes[j].subtree_size;
      if (j >= end) break;
      node = j;
      u = lexer_.next(u, bytes[at + len++]);
      if (nodes[node].token_id >= 0) {
        best = len;
        best_state = u;
      }
    }
    if (best == 0) return kInf;  // (a byte that is no token: byte_steps_ walks none)
    at += best;
    s = best_state;
  }
  return count;
}

// Every state reachable from `start` (over any byte: tokens of several bytes reach them too), its
// distance to an end of l over single-byte tokens, then per strongly connected component (in the
// order Tarjan's algorithm closes them: successors first) the largest distance it or any state
// after it has. Memoizes the ceiling of every state explored; kInf past kMaxExplored states.
uint32_t FinishTables::explore_ceilings(uint32_t start, uint32_t l) {
  const ByteSteps& steps = byte_steps_;
  if (steps.rep.empty()) return kInf;
  std::unordered_map<uint32_t, uint32_t> index{{start, 0}};
  std::vector<uint32_t> states{start};
  std::vector<std::vector<uint32_t>> out{{}}, into{{}};  // all bytes; token bytes reversed
  deadline::Ticker ticker;
  for (size_t k = 0; k < states.size(); ++k) {
    if (lexer_.state(states[k]).end_now) continue;
    for (int c = 0; c < 256; ++c) {
      if (steps.rep[c] < 0) continue;
      ticker.tick();
      const uint32_t t = lexer_.next(states[k], static_cast<uint8_t>(steps.rep[c]));
      if (t == Lexer::kDead) continue;
      auto [it, fresh] = index.emplace(t, static_cast<uint32_t>(states.size()));
      if (fresh) {
        if (states.size() >= kMaxExplored) return too_many(states);
        states.push_back(t);
        out.emplace_back();
        into.emplace_back();
      }
      out[k].push_back(it->second);
      if (steps.token_class[c]) into[it->second].push_back(static_cast<uint32_t>(k));
    }
  }
  std::vector<uint32_t> dist(states.size(), kInf), queue;
  for (size_t k = 0; k < states.size(); ++k) {
    if (ends_lexeme(states[k], l)) {
      dist[k] = 0;
      queue.push_back(static_cast<uint32_t>(k));
    }
  }
  for (size_t h = 0; h < queue.size(); ++h)
    for (uint32_t from : into[queue[h]])
      if (dist[from] == kInf) {
        dist[from] = dist[queue[h]] + 1;
        queue.push_back(from);
      }
  const std::vector<uint32_t> ceiling = most_after(out, dist);
  std::unique_lock<std::shared_mutex> lock(mu_);
  for (size_t k = 0; k < states.size(); ++k) remember(ceilings_, states[k], ceiling[k]);
  return ceiling[0];
}

// A search that passed kMaxExplored states: each state it explored reaches many of them too (the
// region around a pattern beside a maxLength, counts times pattern states), so no search starts
// from them again (the budget then costs the successors of the tokens instead).
uint32_t FinishTables::too_many(const std::vector<uint32_t>& explored) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  for (uint32_t s : explored) remember(no_search_, s, 0);
  return kInf;
}

bool FinishTables::beyond_search(uint32_t alone) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return no_search_.count(alone) != 0;
}

// Per node of the graph `out`: the largest `value` over the nodes it reaches, itself included
// (Tarjan's strongly connected components, iteratively: a component closes after every component
// it reaches).
std::vector<uint32_t> FinishTables::most_after(const std::vector<std::vector<uint32_t>>& out,
                                                   const std::vector<uint32_t>& value) {
  const size_t n = out.size();
  std::vector<uint32_t> order(n, kInf), low(n, 0), most(n, 0), stack;
  std::vector<uint8_t> on_stack(n, 0);
  std::vector<std::pair<uint32_t, size_t>> calls;  // (node, next edge)
  uint32_t counter = 0;
  for (uint32_t root = 0; root < n; ++root) {
    if (order[root] != kInf) continue;
    calls.push_back({root, 0});
    while (!calls.empty()) {
      auto& [v, e] = calls.back();
      if (e == 0 && order[v] == kInf) {
        order[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = 1;
      }
      if (e < out[v].size()) {
        const uint32_t w = out[v][e++];
        if (order[w] == kInf)
          calls.push_back({w, 0});
        else if (on_stack[w])
          low[v] = std::min(low[v], order[w]);
        continue;
      }
      if (low[v] == order[v]) {  // v closes a component: its members and what they reach
        size_t top = stack.size();
        uint32_t m = 0;
        do {
          const uint32_t w = stack[--top];
          m = std::max(m, value[w]);
          for (uint32_t x : out[w])
            if (!on_stack[x] || order[x] < order[v]) m = std::max(m, most[x]);
        } while (stack[top] != v);
        for (size_t i = top; i < stack.size(); ++i) {
          most[stack[i]] = m;
          on_stack[stack[i]] = 0;
        }
        stack.resize(top);
      }
      const uint32_t done = v;
      calls.pop_back();
      if (!calls.empty()) low[calls.back().first] = std::min(low[calls.back().first], low[done]);
    }
  }
  return most;
}

}  // namespace stencil
