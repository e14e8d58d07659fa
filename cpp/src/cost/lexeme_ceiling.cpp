// Lexeme ceilings (see lexeme_ceiling.h). Distances are counted in single-byte tokens (bytes
// that are tokens of their own), so each is the length of a real tokenization: the token
// searches behind the costs (LexemeSearch::tokens_to_end) never return more.
#include "cost/lexeme_ceiling.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "lexer/lexer.h"
#include "support/deadline.h"
#include "support/work_limit.h"
#include "tokens/mask_cache.h"
#include "tokens/trie.h"

namespace stencil {

namespace {
// explored per lexeme region (exploring makes lexer states; a length beside a pattern makes counts
// times pattern states, past any cap: a failed exploration of 256 cost about 5 ms)
constexpr size_t kMaxExplored = 64;
}  // namespace

LexemeCeiling::LexemeCeiling(LexemeSearch& search, std::atomic<size_t>& bytes)
    : search_(search),
      lexer_(search.lexer()),
      ceilings_(bytes),
      no_search_(bytes),
      reach_(bytes),
      failed_(bytes),
      pairs_(bytes),
      short_pairs_(bytes) {}

uint32_t LexemeCeiling::state_ceiling(uint32_t alone) {
  if (const uint32_t* known = ceilings_.find(alone)) return *known;
  uint32_t c = kInf;
  const std::vector<uint32_t> live = lexer_.live_lexemes(alone);
  uint32_t k = 0, lo = 0, relaxed = Lexer::kDead, rest = Lexer::kDead;
  if (live.size() == 1 && search_.all_bytes() && lexer_.bounded_text_head(alone, &k, &relaxed, &rest, &lo)) {
    // A counted string body `C{lo,k} rest`: each state after n whole characters needs at most
    // what `alone` needs (fewer characters left to the lower bound); one inside a character (or
    // an escape) needs at most the bytes that finish it more, and one inside `rest` at most what
    // rest needs: both at most the ceiling of the relaxed state `C* rest`, which reaches them all.
    const uint32_t from = search_.byte_distance(alone, live[0]);
    const uint32_t loose = from < kInf ? explore_ceilings(relaxed, live[0]) : kInf;
    if (loose < kInf) c = from + loose;
    // In tokens: a state after n whole characters takes plain tokens to the count's bounds (at
    // most most_plain_tokens over n), then rest (within `loose`); one inside a character or an
    // escape finishes it in bytes first, within `loose` too. (50 characters of a token string
    // are a few tokens, not 50.)
    if (loose < kInf && search_.cache().admits_bounded_plain(lexer_, alone, &k))
      c = std::min(c, cost::add(search_.most_plain_tokens(lo, k), loose));
  } else if (live.size() == 1 && !lexer_.numbers_only(alone) && !beyond_search(alone)) {
    // (a number's search never ends; nor does one from a state an earlier search passed on
    // its way past kMaxExplored, or from one of a shape whose search failed: its region is as
    // large, or nearly)
    const uint32_t shape = shape_of(alone);
    if (!failed_.contains(uint64_t{shape} << 1)) {
      c = explore_ceilings(alone, live[0]);  // memoizes every state it explores
      if (beyond_search(alone) && shape != Lexer::kDead) failed_.put(uint64_t{shape} << 1, 0);
    }
  }
  return ceilings_.put(alone, c);  // (the exploration's value where it found one first)
}

// Every state reachable from `start` (over any byte: tokens of several bytes reach them too), its
// distance to an end of l over single-byte tokens, then per strongly connected component (in the
// order Tarjan's algorithm closes them: successors first) the largest distance it or any state
// after it has. Memoizes the ceiling of every state explored; kInf past kMaxExplored states.
uint32_t LexemeCeiling::explore_ceilings(uint32_t start, uint32_t l) {
  const LexemeSearch::ByteSteps& steps = search_.byte_steps();
  if (steps.rep.empty()) return kInf;
  std::unordered_map<uint32_t, uint32_t> index{{start, 0}};
  std::vector<uint32_t> states{start};
  std::vector<std::vector<uint32_t>> out{{}}, into{{}};  // all bytes; token bytes reversed
  deadline::Ticker ticker;
  bool over = false;
  const bool within = work::within(kExploreUnits, [&] {
    for (size_t k = 0; k < states.size(); ++k) {
      if (lexer_.state(states[k]).end_now) continue;
      for (int c = 0; c < 256; ++c) {
        if (steps.rep[c] < 0) continue;
        ticker.tick();
        const uint32_t t = lexer_.next(states[k], static_cast<uint8_t>(steps.rep[c]));
        if (t == Lexer::kDead) continue;
        auto [it, fresh] = index.emplace(t, static_cast<uint32_t>(states.size()));
        if (fresh) {
          if ((over = states.size() >= kMaxExplored)) return;
          states.push_back(t);
          out.emplace_back();
          into.emplace_back();
        }
        out[k].push_back(it->second);
        if (steps.token_class[c]) into[it->second].push_back(static_cast<uint32_t>(k));
      }
    }
  });
  if (over || !within) return too_many(states);
  std::vector<uint32_t> dist(states.size(), kInf), queue;
  for (size_t k = 0; k < states.size(); ++k) {
    if (search_.ends_lexeme(states[k], l)) {
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
  for (size_t k = 0; k < states.size(); ++k) ceilings_.put(states[k], ceiling[k]);
  return ceiling[0];
}

// A search that passed kMaxExplored states: each state it explored reaches many of them too (the
// region around a pattern beside a maxLength, counts times pattern states), so no search starts
// from them again (the budget then costs the successors of the tokens instead).
uint32_t LexemeCeiling::too_many(const std::vector<uint32_t>& explored) {
  for (uint32_t s : explored) no_search_.put(s, 0);
  return kInf;
}

bool LexemeCeiling::beyond_search(uint32_t alone) const { return no_search_.contains(alone); }

// A state whose counts move at every byte (a label of up to 63 characters beside a pattern) is
// new at every token, and so is each search's region from it: the state with its long counts
// lifted keys them all, so that a search that failed from one is not tried again from its
// siblings. (kDead: no count to lift, and no key.)
uint32_t LexemeCeiling::shape_of(uint32_t state) const {
  if (!lexer_.state(state).bounded) return Lexer::kDead;
  const uint32_t shape = lexer_.lifted_state(state, kShapeCounts, true);
  return shape == state ? Lexer::kDead : shape;
}

// Per node of the graph `out`: the largest `value` over the nodes it reaches, itself included
// (Tarjan's strongly connected components, iteratively: a component closes after every component
// it reaches).
std::vector<uint32_t> LexemeCeiling::most_after(const std::vector<std::vector<uint32_t>>& out,
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

const std::vector<uint32_t>& LexemeCeiling::reach(uint32_t state) {
  if (const std::vector<uint32_t>* known = reach_.find(state)) return *known;
  // (a number's states never repeat: every digit makes new ones, here and beside white space
  // or another lexeme)
  for (const Pair& pair : pairs(state))
    if (lexer_.numbers_only(pair.alone)) return reach_of(state, {});
  const uint32_t shape = shape_of(state);
  if (failed_.contains(uint64_t{shape} << 1 | 1)) return reach_of(state, {});
  constexpr size_t kMaxReach = 128;  // (a failed search makes as many lexer states)
  const std::vector<uint8_t>& bytes = lexer_.classes().representative;
  const uint32_t max_depth = static_cast<uint32_t>(search_.trie().max_depth());
  std::vector<uint32_t> found{state}, depth{0};
  std::unordered_set<uint32_t> seen{state};
  deadline::Ticker ticker;
  bool over = false;
  const bool within = work::within(kReachUnits, [&] {
    for (size_t h = 0; h < found.size(); ++h) {
      if (depth[h] >= max_depth) continue;
      for (uint8_t b : bytes) {
        ticker.tick();
        const uint32_t t = lexer_.next_tagged(found[h], b);
        if (t == Lexer::kDead || (t & Lexer::kEndNowTag) || !seen.insert(t).second) continue;
        if ((over = found.size() == kMaxReach)) return;
        found.push_back(t);
        depth.push_back(depth[h] + 1);
      }
    }
  });
  if (over || !within) {
    // Too many, or too costly: the states found reach as many, or nearly (a pattern beside a
    // length), so none searches again.
    for (uint32_t f : found) reach_.put(f, {});
    if (shape != Lexer::kDead) failed_.put(uint64_t{shape} << 1 | 1, 0);
    return reach_of(state, {});
  }
  return reach_of(state, std::move(found));
}

const std::vector<uint32_t>& LexemeCeiling::reach_of(uint32_t state, std::vector<uint32_t> found) {
  found.shrink_to_fit();
  return reach_.put(state, std::move(found));
}

const std::vector<LexemeCeiling::Pair>& LexemeCeiling::pairs(uint32_t state) {
  if (const std::vector<Pair>* known = pairs_.find(state)) return *known;
  return pairs_of(state, static_cast<uint32_t>(search_.trie().max_depth()), nullptr);
}

const std::vector<LexemeCeiling::Pair>& LexemeCeiling::pairs_within(uint32_t state, uint32_t reach) {
  if (const std::vector<Pair>* known = short_pairs_.find(uint64_t{state} << 32 | reach)) return *known;
  return pairs_of(state, reach, &short_pairs_);
}

const std::vector<LexemeCeiling::Pair>& LexemeCeiling::pairs_of(uint32_t state, uint32_t reach,
                                                                cost::Memo<uint64_t, std::vector<Pair>>* memo) {
  const std::vector<Lexer::PairBytes> bytes = lexer_.pair_bytes(state, reach);
  std::vector<Pair> out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const uint32_t alone = lexer_.probe_state(state, i);
    const std::vector<uint32_t> live = lexer_.live_lexemes(alone);
    Pair pair{alone, live.size() == 1 ? live[0] : kNoLexeme, kInf, kInf};
    if (search_.all_bytes() && pair.lexeme == bytes[i].lexeme) {  // (in single bytes, each a token)
      pair.shortest = std::min(bytes[i].shortest, kInf);
      pair.ceiling = std::min(bytes[i].ceiling, kInf);
    }
    out.push_back(pair);
  }
  cover(state, out);
  out.shrink_to_fit();
  return memo ? memo->put(uint64_t{state} << 32 | reach, std::move(out)) : pairs_.put(state, std::move(out));
}

// (pairs of several lexemes, and states of many pairs, are left as they are: a few pairs, each
// asked once per state)
void LexemeCeiling::cover(uint32_t state, std::vector<Pair>& pairs) const {
  constexpr size_t kMaxPairs = 16;
  if (pairs.size() < 2 || pairs.size() > kMaxPairs) return;
  for (uint32_t i = 0; i < pairs.size(); ++i) {
    if (pairs[i].lexeme == kNoLexeme) continue;
    for (uint32_t j = 0; j < pairs.size() && pairs[i].within == kNoPair; ++j) {
      if (j == i || pairs[j].lexeme == kNoLexeme || !lexer_.pair_within(state, i, j)) continue;
      if (j > i && lexer_.pair_within(state, j, i)) continue;  // (equal: the first serves)
      pairs[i].within = j;
    }
  }
}

}  // namespace stencil
