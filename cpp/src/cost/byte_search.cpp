// LexemeSearch's searches in single-byte tokens (bytes that are tokens of their own): a path in
// them is a real tokenization, so its length bounds the fewest tokens, and cut into the longest
// tokens along it (path_to_end) it bounds them more tightly where a token search cannot be
// afforded.
#include <algorithm>
#include <cctype>
#include <string>
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

uint32_t LexemeSearch::bytes_entry(uint32_t alone) {
  return bytes_to_end_.get(alone, [&] {
    const std::vector<uint32_t> live = lexer_.live_lexemes(alone);
    bool shortest = false;
    std::vector<uint8_t> path;
    const uint32_t d = live.size() == 1 ? byte_distance(alone, live[0], &path, &shortest) : kInf;
    if (shortest && d < kInf) memo_byte_path(alone, live[0], path);
    return d | (shortest || d >= kInf ? 0 : kNotShortest);
  });
}

// A shortest path's suffix is shortest from each state it passes: their distances, for the
// searches from the states nearby (a budget bounds every state one token reaches from a lexer
// state, most of them a few bytes apart on such paths: bytes of a class lead alike). Replayed
// from `alone` (a search from its relaxed state found it) and kept only where it reads to the end.
void LexemeSearch::memo_byte_path(uint32_t alone, uint32_t l, const std::vector<uint8_t>& path) {
  std::vector<uint32_t> passed{alone};
  for (uint8_t b : path) {
    const uint32_t t = lexer_.next(passed.back(), b);
    if (t == Lexer::kDead) return;
    passed.push_back(t);
  }
  if (!ends_lexeme(passed.back(), l)) return;
  for (size_t i = 1; i < passed.size(); ++i)
    if (lexer_.live_lexemes(passed[i]).size() == 1)
      bytes_to_end_.put(passed[i], static_cast<uint32_t>(path.size() - i));
}

uint32_t LexemeSearch::state_bytes(uint32_t alone) { return bytes_entry(alone) & ~kNotShortest; }

uint32_t LexemeSearch::shortest_bytes(uint32_t alone) {
  const uint32_t d = bytes_entry(alone);
  return d & kNotShortest ? kInf : d;
}

// A length bound beside a pattern makes states of each count (a search from each of them makes
// hundreds of lexer states): searched from the state with its bounds of kRelaxLimit or more
// lifted instead, the same on every path shorter than that, and shared by the counts.
uint32_t LexemeSearch::byte_distance(uint32_t start, uint32_t l, std::vector<uint8_t>* path, bool* shortest) const {
  const uint32_t relaxed = lexer_.state(start).bounded ? lexer_.relaxed_state(start, kRelaxLimit, true) : Lexer::kDead;
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
  if (const uint32_t d = candidate_to_end(start, l, path); d < kInf) {
    if (shortest) *shortest = true;
    return d;
  }
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

// The shortest word read off the state's expression (ExprStore::shortest_candidate), where the
// lexer reads it to the lexeme's end in single-byte tokens (each byte as its class's token): a
// shortest path, found without a search. An intersection's states (an e-mail beside a pattern)
// mostly end by their most demanding operand's shortest word, where the breadth-first search made
// every state a byte or two away, each a derivative of the whole intersection.
uint32_t LexemeSearch::candidate_to_end(uint32_t start, uint32_t l, std::vector<uint8_t>* path) const {
  constexpr size_t kMaxCandidate = 256;
  std::string word;
  if (!lexer_.shortest_candidate(start, l, &word, kMaxCandidate)) return kInf;
  const ByteSteps& steps = byte_steps_;
  const ByteClasses& classes = lexer_.classes();
  std::vector<uint8_t> bytes;
  uint32_t s = start;
  for (char ch : word) {
    const uint16_t c = classes.class_of[static_cast<uint8_t>(ch)];
    if (c >= 256 || steps.rep[c] < 0 || !steps.token_class[c] || lexer_.state(s).end_now) return kInf;
    const uint8_t b = static_cast<uint8_t>(steps.rep[c]);
    if ((s = lexer_.next(s, b)) == Lexer::kDead) return kInf;
    bytes.push_back(b);
  }
  if (!ends_lexeme(s, l)) return kInf;
  if (path) *path = std::move(bytes);
  return static_cast<uint32_t>(word.size());
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

namespace {
// Down the trie along `bytes` (n of them): visit(len, token) for each token whose bytes are the
// first len of them, shortest first.
template <class Visit>
void tokens_along(const TokenTrie& trie, const uint8_t* bytes, size_t n, Visit visit) {
  const auto& nodes = trie.nodes();
  for (size_t node = 0, len = 0; len < n;) {
    size_t j = node + 1;
    const size_t end = node + nodes[node].subtree_size;
    while (j < end && nodes[j].byte != bytes[len]) j += nodes[j].subtree_size;
    if (j >= end) return;
    node = j;
    ++len;
    if (nodes[node].token_id >= 0) visit(len, nodes[node].token_id);
  }
}
}  // namespace

// The bytes of a path in single bytes (byte_distance), cut into tokens longest first (every byte is a
// token: byte_steps_ walks only such bytes). A real token path inside the lexeme, so an upper
// bound on the fewest tokens, which stays consistent where the states it passes keep their
// rest of it (tokens_to_end memoizes them). Stops at a state whose distance is memoized.
uint32_t LexemeSearch::path_to_end(uint32_t state, const std::vector<uint8_t>& bytes, std::vector<uint32_t>* passed,
                                   std::vector<int32_t>* tokens) {
  passed->clear();
  if (tokens) tokens->clear();
  uint32_t s = state, count = 0;
  for (size_t at = 0; at < bytes.size(); ++count) {
    passed->push_back(s);
    if (const uint32_t* known = to_end_.find(s)) return count + *known;
    size_t best = 0;  // the longest token along the bytes
    int32_t best_token = -1;
    tokens_along(trie_, bytes.data() + at, bytes.size() - at, [&](size_t len, int32_t token) {
      best = len;
      best_token = token;
    });
    if (best == 0) return kInf;  // (a byte that is no token: byte_steps_ walks none)
    if (tokens) tokens->push_back(best_token);
    for (const size_t end = at + best; at < end; ++at) s = lexer_.next(s, bytes[at]);
  }
  return count;
}

// A state whose rest is one string (a key, a keyword): the fewest tokens that spell it, by one pass
// over its bytes from the end (at each position, the tokens that start there), exact, in
// microseconds where a token search walks the trie from each state it expands (a hundred
// microseconds a key: most of a schema's bound tables). Replayed from `state` (every byte
// checked) and memoized along the states it passes; kInf for other states.
uint32_t LexemeSearch::word_to_end(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker) {
  constexpr size_t kMaxWord = 4096;  // (a pass costs the word's bytes times the deepest token's)
  std::string word;
  if (!lexer_.word_of(state, lexeme, &word, kMaxWord) || word.empty()) return kInf;
  const size_t n = word.size();
  std::vector<uint32_t> best(n + 1, kInf),
      step(n + 1, 0);  // per position: fewest tokens to the end, first token's bytes
  std::vector<int32_t> first(n + 1, -1);
  best[n] = 0;
  const auto* bytes = reinterpret_cast<const uint8_t*>(word.data());
  for (size_t i = n; i-- > 0;) {
    ticker.tick();
    tokens_along(trie_, bytes + i, n - i, [&](size_t len, int32_t token) {
      if (best[i + len] < kInf && best[i + len] + 1 <= best[i]) {  // (<=: the longest of equals)
        best[i] = best[i + len] + 1;
        first[i] = token;
        step[i] = static_cast<uint32_t>(len);
      }
    });
  }
  if (best[0] >= kInf) return kInf;
  std::vector<int32_t> path;
  for (size_t i = 0; i < n; i += step[i]) path.push_back(first[i]);
  return replay(state, lexeme, path);
}

}  // namespace stencil
