// LexemeSearch's token searches: breadth-first over tokens, the one-token probe, the coin problem
// of counted string bodies, and the memo of distances they share (byte_search.cpp: the searches
// in single-byte tokens).
#include "cost/lexeme_search.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "cost/inner_steps.h"
#include "lexer/lexer.h"
#include "stencil/vocabulary.h"
#include "tokens/mask_cache.h"
#include "tokens/plain_slice.h"
#include "tokens/shared_cache.h"
#include "tokens/trie.h"

namespace stencil {

namespace {
// A filter of the states a walk of the successors met lately (most tokens lead to a few states:
// a walk of 100,000 tokens keeps each state about once, not once per token).
struct SeenStates {
  uint32_t recent[256] = {};  // (0 is Lexer::kDead, never a successor)
  bool add(uint32_t s) {
    uint32_t& slot = recent[(s * 2654435761u) >> 24];
    if (slot == s) return false;
    slot = s;
    return true;
  }
};
}  // namespace

LexemeSearch::LexemeSearch(const Lexer& lexer, const MaskCache& cache, const Vocabulary& vocab, size_t lexemes,
                           std::atomic<size_t>& bytes)
    : lexer_(lexer),
      cache_(cache),
      vocab_(vocab),
      trie_(vocab.trie()),
      bytes_(bytes),
      to_end_(bytes),
      successors_(bytes),
      successor_tokens_(bytes),
      next_token_(bytes),
      bytes_to_end_(bytes),
      relaxed_paths_(bytes),
      rest_paths_(bytes),
      widest_(new std::atomic<size_t>[lexemes]),
      relax_misses_(new std::atomic<uint32_t>[lexemes]),
      lexemes_(lexemes) {
  for (size_t l = 0; l < lexemes; ++l) {
    widest_[l].store(0, std::memory_order_relaxed);
    relax_misses_[l].store(0, std::memory_order_relaxed);
  }
  const auto& nodes = trie_.nodes();
  for (size_t i = 1; i < nodes.size(); i += nodes[i].subtree_size)
    if (nodes[i].token_id >= 0) single_bytes_.push_back(nodes[i].byte);
  byte_steps_ = find_byte_steps();
  // Per class, not per byte: SmolLM2's vocabulary lacks 21 single bytes (six control bytes,
  // 0xF1 and 0xF2 beside 0xF3 in their class, bytes UTF-8 never uses), and asking for all 256
  // sent every counted string's budget masks down the token searches: 3 ms a mask, not 15 us.
  all_bytes_ = !byte_steps_.rep.empty();
  for (int c = 0; c < lexer.classes().count() && all_bytes_; ++c) all_bytes_ = byte_steps_.token_class[c] != 0;
}

// Breadth-first over the lexer's automaton from `state` with tokens as steps (each one a walk of
// the token trie that stays inside the lexeme), until each of `targets` (sorted) is accepting:
// the fewest tokens to end it. A shortest path, so a state at distance d > 0 has a token to one
// at d - 1; tokens that cross into the next lexeme are left out (the bound stays an upper one).
uint32_t LexemeSearch::bfs_to(uint32_t state, const std::vector<uint32_t>& targets, cost::Costs* out, size_t max_states,
                              deadline::Ticker& ticker) const {
  out->clear();
  if (state == Lexer::kDead || targets.empty()) return 0;
  std::vector<std::pair<uint32_t, uint32_t>> queue{{state, 0}};
  std::unordered_map<uint32_t, bool> seen{{state, true}};
  std::vector<uint8_t> done(targets.size(), 0);
  size_t found = 0;
  auto reach = [&](uint32_t s, uint32_t d) {  // s reached in d tokens: the targets it ends
    for (uint32_t l : lexer_.state(s).accepting) {
      auto it = std::lower_bound(targets.begin(), targets.end(), l);
      if (it == targets.end() || *it != l || done[it - targets.begin()]) continue;
      done[it - targets.begin()] = 1;
      out->push_back({l, d});
      ++found;
    }
  };
  reach(state, 0);
  const auto& nodes = trie_.nodes();
  std::vector<uint32_t> st(static_cast<size_t>(trie_.max_depth()) + 2);
  for (size_t head = 0; head < queue.size() && found < targets.size(); ++head) {
    const auto [s, d] = queue[head];
    if (lexer_.state(s).end_now) continue;
    st[0] = s;
    for (size_t i = 1; i < nodes.size() && found < targets.size();) {
      const TrieNode& node = nodes[i];
      ticker.tick();
      const uint32_t t = lexer_.next_tagged(st[node.depth - 1], node.byte);
      if (t == Lexer::kDead) {
        i += node.subtree_size;
        continue;
      }
      const uint32_t u = t & ~Lexer::kEndNowTag;
      if (node.token_id >= 0) {
        if (seen.size() < max_states && seen.emplace(u, true).second) {
          queue.push_back({u, d + 1});
          reach(u, d + 1);
        }
      }
      if (t & Lexer::kEndNowTag) {  // the lexeme ends here: longer tokens cross into the next one
        i += node.subtree_size;
        continue;
      }
      st[node.depth] = u;
      ++i;
    }
  }
  std::sort(out->begin(), out->end());
  return static_cast<uint32_t>(found);
}

// bfs_to for a state of one live lexeme, with what earlier searches found: a state found on the
// shortest path of a search (its distance is the rest of that path) ends the searches that reach
// it later, so walking a string or a date token by token searches about once per state instead
// of once per state and path. Each memoized distance is the length of a real token path to the
// lexeme's end through states whose distances are memoized alike, so the bound stays consistent.
uint32_t LexemeSearch::tokens_to_end(uint32_t state, uint32_t lexeme, size_t max_states, size_t max_work,
                                     deadline::Ticker& ticker) {
  if (const uint32_t* known = to_end_.find(state)) return *known;
  if (ends_lexeme(state, lexeme)) return 0;
  if (const uint32_t d = word_to_end(state, lexeme, ticker); d < kInf) return d;
  if (const uint32_t d = text_to_end(state, lexeme, ticker); d < kInf) return to_end_.put(state, d);
  // A path another grammar's search found from a state alike (the same canonical expressions, so
  // the same language inside the lexeme): replayed here and memoized along its states as a search
  // of this lexer's would be. Grammars compiled for one tokenizer share formats, keys and string
  // bodies, and each lexeme's search walks the trie from every state it expands.
  std::string key = cache_.shares() ? lexer_.signature(state, kUnbounded) : std::string();
  if (!key.empty()) {
    if (auto shared = vocab_.shared().find_path(key)) {
      if (const uint32_t d = replay(state, lexeme, shared->tokens); d < kInf) return d;
    }
  }
  bool exact = false;
  const uint32_t d = search_to_end(state, lexeme, max_states, max_work, ticker, &exact);
  // Only the fewest tokens are shared: any search that ends finds that number too, so what a grammar
  // gets does not depend on which grammars came before (a bound where a search was cut short would).
  if (!key.empty() && exact) share_path(state, lexeme, d, std::move(key));
  return d;
}

uint32_t LexemeSearch::known_to_end(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker) {
  if (const uint32_t* known = to_end_.find(state)) return *known;
  if (ends_lexeme(state, lexeme)) return 0;
  return word_to_end(state, lexeme, ticker);
}

uint32_t LexemeSearch::read_token(uint32_t s, int32_t token) const {
  const std::string_view bytes = vocab_.token_bytes(token);
  for (size_t j = 0; j < bytes.size(); ++j) {
    if (s == Lexer::kDead || lexer_.state(s).end_now) return Lexer::kDead;
    const uint32_t t = lexer_.next_tagged(s, static_cast<uint8_t>(bytes[j]));
    // (a byte that ends the lexeme at once ends the token too: longer tokens cross into the next)
    if (t == Lexer::kDead || ((t & Lexer::kEndNowTag) && j + 1 < bytes.size())) return Lexer::kDead;
    s = t & ~Lexer::kEndNowTag;
  }
  return s;
}

// A path of `tokens` from `state` through this lexer, inside the lexeme to its end: its length,
// memoized along the states it passes (kInf where the tokens do not make one). Where it reaches a
// state whose distance is memoized already, it ends there, at that distance (*whole, where given,
// set false): the states before it are memoized through it, which keeps every distance one more
// than some token's successor's.
uint32_t LexemeSearch::replay(uint32_t state, uint32_t lexeme, const std::vector<int32_t>& tokens, bool* whole) {
  std::vector<uint32_t> passed{state};
  uint32_t s = state, d = static_cast<uint32_t>(tokens.size());
  bool to_end = true;  // (else ended at a memoized state)
  for (size_t i = 0; i < tokens.size(); ++i) {
    if ((s = read_token(s, tokens[i])) == Lexer::kDead) return kInf;
    if (i + 1 == tokens.size()) break;
    if (const uint32_t* known = to_end_.find(s)) {
      d = cost::add(static_cast<uint32_t>(i + 1), *known);
      to_end = false;
      break;
    }
    passed.push_back(s);
  }
  if ((to_end && !ends_lexeme(s, lexeme)) || d >= kInf) return kInf;
  if (whole) *whole = to_end;
  for (uint32_t i = 0; i < passed.size(); ++i) memo_step(passed[i], d - i, tokens[i]);
  return d;
}

// The tokens of the path of `d` tokens from `state` that the memo holds (each state on it at one
// token less than the one before); shorter where the memo breaks off (a distance found without
// its path: the coin problem of counted strings).
std::vector<int32_t> LexemeSearch::memo_path(uint32_t state, uint32_t lexeme, uint32_t d) {
  std::vector<int32_t> tokens;
  const std::vector<int32_t>& ordered = trie_.ordered_tokens();
  for (uint32_t s = state; d > 0; --d) {
    int32_t token = -1;
    uint32_t next = Lexer::kDead;
    walk_inside(
        lexer_, cache_, trie_, s, true,
        [&](uint32_t first, uint32_t, uint32_t t) {
          const uint32_t u = t & ~Lexer::kEndNowTag;
          const uint32_t* known = to_end_.find(u);
          if (d == 1 ? !ends_lexeme(u, lexeme) : !known || *known != d - 1) return false;
          token = ordered[first];
          next = u;
          return true;
        },
        false);
    if (token < 0) break;
    tokens.push_back(token);
    s = next;
  }
  return tokens;
}

// The memo's path of `d` tokens from `state`, shared for other grammars (nothing where it breaks off).
void LexemeSearch::share_path(uint32_t state, uint32_t lexeme, uint32_t d, std::string key) {
  auto entry = std::make_shared<SharedPathEntry>();
  entry->tokens = memo_path(state, lexeme, d);
  if (entry->tokens.size() != d) return;
  entry->tokens.shrink_to_fit();
  vocab_.shared().insert_path(std::move(key), std::move(entry));
}

// A length bound beside a pattern or a format (an e-mail of at most 1,024 characters) makes a
// lexer state of each count, and a token search from one expands hundreds of them, each with a
// walk of the trie (tens of milliseconds, then cut short to a looser bound in single bytes). The
// fewest tokens seldom come near such a bound: the search runs from the state with its bounds of
// kRelaxTokens or more lifted (one state for every count: searched, and its path read, once). Its
// language holds this state's, so its fewest tokens are at most this state's: its shortest path,
// replayed from `state` (every byte checked), is this state's shortest wherever it fits the bounds.
// kInf where it does not (a minLength it falls short of: the search then runs as before). Where a
// complement or an intersection keeps the bounds from being lifted alike on every walk
// (relaxed_state: raw text up to a marker beside a format and a length), the lifted state
// (Lexer::lifted_state, minimums kept) still holds this state's language, which is all this needs
// (taken only for a count of characters, which makes a state per count; other counts searched
// through a lifted state cost more than they saved on MaskBench's schemas).
uint32_t LexemeSearch::relaxed_to_end(uint32_t state, uint32_t lexeme, size_t max_states, size_t max_work,
                                      deadline::Ticker& ticker, bool* exact) {
  // A lexeme whose lifted paths keep missing (a minimum count: C{162} lifts to C{162,}, a state
  // of its own at each count, each searched in vain) is not relaxed again.
  if (!lexer_.state(state).bounded || lexeme >= lexemes_ ||
      relax_misses_[lexeme].load(std::memory_order_relaxed) >= kRelaxMisses)
    return kInf;
  for (uint32_t limit : kRelaxTokens) {
    uint32_t relaxed = lexer_.relaxed_state(state, limit, true);
    // (a complement beside a count of characters this limit lifts: the lifted state)
    const bool lifted = relaxed == Lexer::kDead && lexer_.char_count_bound(state) >= limit;
    if (lifted) relaxed = lexer_.lifted_state(state, limit, false);
    if (relaxed == Lexer::kDead) continue;  // (bounds of an intersection that cannot be lifted apart)
    if (relaxed == state) return kInf;
    const std::vector<int32_t>& tokens = relaxed_paths_.get(relaxed, [&] {
      // Only the fewest tokens of the relaxed state bound this state's from below; a path found
      // where its search was cut short may be far longer than this state's own search would find.
      // (with an eighth of the work: where the relaxed state still counts, as a minimum does, its
      // search is as dear as this one, and this one is still to run; a quarter for a lifted
      // state, raw text up to a marker beside a format, whose walks hold most text tokens: an
      // e-mail's search expands ~40 states of 8,000 trie nodes each)
      bool fewest = false;
      const size_t part = lifted ? 4 : 8;
      const uint32_t d = search_to_end(relaxed, lexeme, max_states / part, max_work / part, ticker, &fewest);
      std::vector<int32_t> path = fewest && d < kInf ? memo_path(relaxed, lexeme, d) : std::vector<int32_t>();
      if (path.size() != d) path.clear();
      return path;
    });
    const uint32_t d = tokens.empty() ? kInf : replay(state, lexeme, tokens, exact);
    if (d < kInf)
      relax_misses_[lexeme].store(0, std::memory_order_relaxed);
    else
      relax_misses_[lexeme].fetch_add(1, std::memory_order_relaxed);
    return d;
  }
  return kInf;
}

// tokens_to_end's own search, where no memo and no shared path answers.
uint32_t LexemeSearch::search_to_end(uint32_t state, uint32_t lexeme, size_t max_states, size_t max_work,
                                     deadline::Ticker& ticker, bool* exact) {
  // (exact: the relaxed state's fewest, replayed here whole)
  if (const uint32_t d = relaxed_to_end(state, lexeme, max_states, max_work, ticker, exact); d < kInf) return d;
  // The path in single bytes (found once), cut into tokens and memoized along its states: where
  // the search is cut short, or cannot be afforded.
  std::vector<uint8_t> path;
  uint32_t path_bytes = kInf;
  bool shortest = false, searched = false;
  auto find_path = [&] {
    if (!searched) path_bytes = byte_distance(state, lexeme, &path, &shortest);
    searched = true;
  };
  auto by_path = [&](uint32_t found) {
    find_path();
    return path_bytes >= kInf ? found : memo_path_to_end(state, path, found);
  };
  // Where every byte is a token, the fewest bytes to the end (when the search for them was
  // breadth-first) over the longest token's bytes: fewer tokens cannot end the lexeme, and past
  // one the walk for a token that ends it at once is saved.
  if (all_bytes_) find_path();
  const bool far = shortest && path_bytes > static_cast<uint32_t>(trie_.max_depth());
  size_t work = 0;
  if (!far && ends_in_one_token(state, lexeme, ticker, &work)) {
    *exact = true;
    return to_end_.put(state, 1);
  }
  note_walk(lexeme, work);
  // No token ends it: the search must walk the successors of each state one token reaches. Where
  // one such walk in this lexeme took more than half the work allowed (a pattern counting a run
  // of letters and digits: each count a state of its own, each walk every such token, in
  // milliseconds), it cannot finish, and the path alone bounds the cost.
  if (2 * widest_walk(lexeme) > max_work) return by_path(kInf);
  return token_search(state, lexeme, max_states, max_work, by_path, ticker, exact);
}

uint32_t LexemeSearch::memo_path_to_end(uint32_t state, const std::vector<uint8_t>& bytes, uint32_t found) {
  std::vector<uint32_t> passed;
  std::vector<int32_t> tokens;
  const uint32_t d = path_to_end(state, bytes, &passed, &tokens);
  if (d >= found) return found;
  for (uint32_t i = 0; i < passed.size(); ++i) memo_step(passed[i], d - i, i < tokens.size() ? tokens[i] : -1);
  return d;
}

uint32_t LexemeSearch::path_bound(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker) {
  if (const uint32_t d = known_to_end(state, lexeme, ticker); d < kInf) return d;
  std::vector<uint8_t> path;
  if (byte_distance(state, lexeme, &path) >= kInf) return kInf;
  return memo_path_to_end(state, path, kInf);
}

bool LexemeSearch::ends_lexeme(uint32_t state, uint32_t lexeme) const {
  const auto& acc = lexer_.state(state).accepting;
  return std::binary_search(acc.begin(), acc.end(), lexeme);
}

// tokens_to_end's breadth-first search over tokens, the best path found memoized along its states.
uint32_t LexemeSearch::token_search(uint32_t state, uint32_t lexeme, size_t max_states, size_t max_work,
                                    const std::function<uint32_t(uint32_t)>& cut_short, deadline::Ticker& ticker,
                                    bool* exact) {
  struct Node {
    uint32_t state, depth, parent;
    int32_t token;  // from the parent's state
  };
  std::vector<Node> queue{{state, 0, 0, -1}};
  std::unordered_map<uint32_t, bool> seen{{state, true}};
  uint32_t best = kInf, best_node = 0, best_state = Lexer::kDead, best_rest = 0;
  int32_t best_token = -1;
  size_t head = 0, work = 0;
  bool full = false;  // some state was left out (max_states)
  for (; head < queue.size() && work < max_work && queue[head].depth + 1 < best; ++head) {
    const Node h = queue[head];
    const size_t before = work;
    const std::vector<uint32_t>& next = token_successors(h.state, &work);
    const std::vector<int32_t>* tokens = successor_tokens_.find(h.state);
    note_walk(lexeme, work - before);
    for (size_t i = 0; i < next.size(); ++i) {
      const uint32_t u = next[i];
      const int32_t token = tokens && i < tokens->size() ? (*tokens)[i] : -1;
      if (seen.count(u)) continue;
      const uint32_t* known = to_end_.find(u);
      uint32_t rest = ends_lexeme(u, lexeme) ? 0 : known ? *known : kInf;
      // A counted string body (past a minLength string's opening quote): its coin problem
      // answers at once, where expanding each count would walk the trie (tens of them: 15 ms).
      if (rest >= kInf && (rest = text_to_end(u, lexeme, ticker)) < kInf) to_end_.put(u, rest);
      if (rest < kInf) {
        if (h.depth + 1 + rest < best) {
          best = h.depth + 1 + rest;
          best_node = static_cast<uint32_t>(head);
          best_state = u;
          best_rest = rest;
          best_token = token;
        }
      } else if (seen.size() < max_states) {
        seen.emplace(u, true);
        queue.push_back({u, h.depth + 1, static_cast<uint32_t>(head), token});
      } else {
        full = true;
      }
    }
  }
  // Cut short (each state searched walks the trie: where every token leads to a state of its
  // own, as a pattern beside a length, thousands of them cost seconds): the path along one in
  // single bytes, where it is shorter than what was found.
  const bool cut = full || (head < queue.size() && queue[head].depth + 1 < best);
  if (cut) {
    const uint32_t d = cut_short(best);
    if (d < best) return d;
  }
  if (best >= kInf) return kInf;
  // (breadth-first to its end: the fewest tokens, unless a distance memoized by another search, an
  // upper bound, made the rest of it)
  *exact = !cut && best_rest == 0;
  to_end_.put(best_state, best_rest);
  for (uint32_t n = best_node;; n = queue[n].parent) {
    memo_step(queue[n].state, best - queue[n].depth, best_token);
    best_token = queue[n].token;
    if (n == 0) break;
  }
  return best;
}

// Whether some token ends `lexeme` from `state`: a walk of the token trie that stops at the first
// (a string's closing quote comes early in byte order), where the successors' walk would visit
// every token (on a huge automaton, making a lexer state for each). A walk that finds none has
// seen every successor: they are kept as token_successors' (unless another search's are).
size_t LexemeSearch::widest_walk(uint32_t l) const {
  return l < lexemes_ ? widest_[l].load(std::memory_order_relaxed) : 0;
}

void LexemeSearch::note_walk(uint32_t l, size_t nodes) {
  if (l >= lexemes_) return;
  size_t was = widest_[l].load(std::memory_order_relaxed);
  while (nodes > was && !widest_[l].compare_exchange_weak(was, nodes, std::memory_order_relaxed)) {
  }
}

bool LexemeSearch::ends_in_one_token(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker, size_t* walked) {
  // One token that is a single byte ends it (a string's closing quote): no walk.
  std::vector<uint8_t> probed(256, 0);
  const ByteClasses& classes = lexer_.classes();
  for (uint8_t b : single_bytes_) {
    const uint16_t c = classes.class_of[b];
    if (c < 256 && probed[c]) continue;
    if (c < 256) probed[c] = 1;
    const uint32_t u = lexer_.next(state, b);
    if (u == Lexer::kDead) continue;
    if (ends_lexeme(u, lexeme)) return true;
  }
  if (successors_.contains(state)) return false;  // the search reads them: none ends it, or it finds it
  if (const uint32_t* d = to_end_.find(state); d && *d == 1) return true;
  // A count (a maxLength beside a pattern or the text a marker closes) makes a state per count,
  // each a walk of the whole trie: where no token ends the lexeme from the state with its counts
  // lifted and their minimums lowered (one state for every count), none ends it from this one,
  // whose language it holds. (With the minimums kept, the lifted state would be one per count
  // below a minimum: a walk as dear as this one's.)
  if (lexer_.state(state).bounded) {
    const uint32_t lifted = lexer_.lifted_state(state, kRelaxTokens[0], true);
    if (lifted != state && lifted != Lexer::kDead && !ends_in_one_token(lifted, lexeme, ticker, walked)) return false;
  }
  ticker.tick();
  bool ends = false;
  std::vector<std::pair<uint32_t, int32_t>> out;
  SeenStates seen;
  const std::vector<int32_t>& ordered = trie_.ordered_tokens();
  if (!lexer_.state(state).end_now)
    walk_inside(
        lexer_, cache_, trie_, state, true,
        [&](uint32_t first, uint32_t, uint32_t s) {
          const uint32_t u = s & ~Lexer::kEndNowTag;
          if (!seen.add(u)) return false;
          ends = ends_lexeme(u, lexeme);
          out.push_back({u, ordered[first]});
          return ends;
        },
        false, walked);
  if (ends) {
    memo_step(state, 1, out.back().second);
    return true;
  }
  keep_successors(state, std::move(out));
  return false;
}

// The distinct states one token leads `state` to inside its lexeme (a walk of the token trie
// with the lexer alone), memoized: the searches of neighbouring states expand the same states.
const std::vector<uint32_t>& LexemeSearch::token_successors(uint32_t state, size_t* work) {
  if (const std::vector<uint32_t>* known = successors_.find(state)) return *known;
  std::vector<std::pair<uint32_t, int32_t>> out;
  SeenStates seen;
  const std::vector<int32_t>& ordered = trie_.ordered_tokens();
  if (!lexer_.state(state).end_now)
    walk_inside(
        lexer_, cache_, trie_, state, true,
        [&](uint32_t first, uint32_t, uint32_t s) {
          if (seen.add(s & ~Lexer::kEndNowTag)) out.push_back({s & ~Lexer::kEndNowTag, ordered[first]});
          return false;
        },
        true, work);
  return keep_successors(state, std::move(out));
}

// Keeps the successors of `state` (sorted, each once, with a token to each); the ones kept first stay.
const std::vector<uint32_t>& LexemeSearch::keep_successors(uint32_t state,
                                                           std::vector<std::pair<uint32_t, int32_t>> out) {
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  out.erase(std::unique(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
            out.end());
  std::vector<uint32_t> states(out.size());
  std::vector<int32_t> tokens(out.size());
  for (size_t i = 0; i < out.size(); ++i) std::tie(states[i], tokens[i]) = out[i];
  // (tokens first: a reader that finds the states finds their tokens)
  successor_tokens_.put(state, std::move(tokens));
  return successors_.put(state, std::move(states));
}

void LexemeSearch::memo_step(uint32_t state, uint32_t d, int32_t token) {
  // (the token first, as above; a state memoized already keeps its distance, and its token)
  if (token >= 0 && !to_end_.contains(state)) next_token_.put(state, static_cast<uint32_t>(token));
  to_end_.put(state, d);
}

bool LexemeSearch::memo_tokens(uint32_t state, uint32_t lexeme, std::vector<int32_t>* out) const {
  out->clear();
  const uint32_t* d = to_end_.find(state);
  if (!d || *d >= kInf) return false;
  for (uint32_t s = state, left = *d; left > 0; --left) {
    const uint32_t* token = next_token_.find(s);
    if (!token || (s = read_token(s, static_cast<int32_t>(*token))) == Lexer::kDead) return false;
    out->push_back(static_cast<int32_t>(*token));
    // (each step one token nearer: the memo's distances, as its writers put them)
    const uint32_t* next = to_end_.find(s);
    if (left == 1 ? !ends_lexeme(s, lexeme) : !next || *next != left - 1) return false;
  }
  return true;
}

}  // namespace stencil
