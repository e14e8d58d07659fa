// LexemeSearch's searches in single-byte tokens (bytes that are tokens of their own): a path in
// them is a real tokenization, so its length bounds the fewest tokens, and cut into the longest
// tokens along it (path_to_end) it bounds them more tightly where a token search cannot be
// afforded.
#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "cost/lexeme_search.h"
#include "lexer/lexer.h"
#include "tokens/trie.h"

namespace stencil {

namespace {
constexpr size_t kMaxStates = 1024;   // per breadth-first search to a lexeme's end
constexpr uint32_t kRelaxLimit = 64;  // byte_distance's searches: bounds from it up lifted
}  // namespace

LexemeSearch::ByteSteps LexemeSearch::find_byte_steps() const {
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

uint32_t LexemeSearch::state_bytes(uint32_t alone) {
  return bytes_to_end_.get(alone, [&] {
    const std::vector<uint32_t> live = lexer_.live_lexemes(alone);
    return live.size() == 1 ? byte_distance(alone, live[0]) : kInf;
  });
}

// A length bound beside a pattern makes states of each count (a search from each of them makes
// hundreds of lexer states): searched from the state with its bounds of kRelaxLimit or more
// lifted instead, the same on every path shorter than that, and shared by the counts.
uint32_t LexemeSearch::byte_distance(uint32_t start, uint32_t l, std::vector<uint8_t>* path, bool* shortest) const {
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
uint32_t LexemeSearch::byte_search(uint32_t start, uint32_t l, std::vector<uint8_t>* path, bool* shortest) const {
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
uint32_t LexemeSearch::byte_dive(uint32_t start, uint32_t l, std::vector<uint8_t>* path) const {
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
uint32_t LexemeSearch::path_to_end(uint32_t state, const std::vector<uint8_t>& bytes, std::vector<uint32_t>* passed) {
  passed->clear();
  const auto& nodes = trie_.nodes();
  uint32_t s = state, count = 0;
  for (size_t at = 0; at < bytes.size(); ++count) {
    passed->push_back(s);
    if (const uint32_t* known = to_end_.find(s)) return count + *known;
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

}  // namespace stencil
