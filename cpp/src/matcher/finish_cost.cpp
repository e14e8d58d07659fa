#include "matcher/finish_cost.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_set>

#include "matcher/lexer_epoch.h"
#include "support/heap_size.h"
#include "support/work_limit.h"
#include "tokens/plain_slice.h"

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
constexpr size_t kLexemeSearchStates = 1u << 15;  // per lexeme of the grammar, once
constexpr size_t kStateSearchStates = 1u << 12;   // per lexer state a walk reaches
// Trie nodes a search may walk (each state it expands walks the trie, unless an earlier search
// did: where every token leads to a state of its own, as with a pattern beside a length, a walk
// takes milliseconds); past them the path in single bytes (path_to_end) bounds the cost.
constexpr size_t kLexemeSearchWork = 1u << 21;
// Derivative work (support/work_limit.h) per lexeme search, once per lexer epoch: a 40,000-value
// enum of plain numbers needs 2.4 s (over 2^24 units); the most of 250 MaskBench schemas was
// 0.83M units. A lexer whose states each cost milliseconds (three counted patterns intersected:
// 1.5 us a unit) spent minutes here: the seconds bound it.
constexpr uint64_t kLexemeSearchDerivatives = 1u << 26;
constexpr double kLexemeSearchSeconds = 8;
constexpr size_t kStateSearchWork = 1u << 17;
}  // namespace

FinishTables::FinishTables(const Grammar& g, const Lexer& lexer, const MaskCache& cache,
                                   const Vocabulary& vocab)
    : lexer_(lexer), cache_(cache), vocab_(vocab), trie_(vocab.trie()) {
  const auto& nodes = trie_.nodes();
  for (size_t i = 1; i < nodes.size(); i += nodes[i].subtree_size)
    if (nodes[i].token_id >= 0) single_bytes_.push_back(nodes[i].byte);
  byte_steps_ = byte_steps();
  // Per class, not per byte: SmolLM2's vocabulary lacks 21 single bytes (six control bytes,
  // 0xF1 and 0xF2 beside 0xF3 in their class, bytes UTF-8 never uses), and asking for all 256
  // sent every counted string's budget masks down the token searches: 3 ms a mask, not 15 us.
  all_bytes_ = !byte_steps_.rep.empty();
  for (int c = 0; c < lexer.classes().count() && all_bytes_; ++c) all_bytes_ = byte_steps_.token_class[c] != 0;
  deadline::Ticker ticker;
  lexeme_min.assign(g.lexemes.size(), kInf);
  widest_.assign(g.lexemes.size(), 0);
  for (uint32_t l = 0; l < g.lexemes.size(); ++l) {
    if (g.lexemes[l].special) {
      lexeme_min[l] = g.lexemes[l].token_ids.empty() ? kInf : 1;
      continue;
    }
    try {  // (unknown past its work limit: no bound then goes through the lexeme)
      work::Limit limit(kLexemeSearchDerivatives, kLexemeSearchSeconds);
      lexeme_min[l] = tokens_to_end(lexer.start_state({l}), l, kLexemeSearchStates, kLexemeSearchWork, ticker);
    } catch (const WorkSpent&) {
      lexeme_min[l] = kInf;
    }
  }
  // Nonterminals: the least fixpoint of min over rules of the sum of their symbols.
  const size_t n_nt = g.nonterminal_names.size();
  std::vector<uint32_t> nt_min(n_nt, kInf);
  auto sym_cost = [&](Symbol s) { return is_terminal(s) ? lexeme_min[symbol_index(s)] : nt_min[s]; };
  for (bool changed = true; changed;) {
    changed = false;
    ticker.tick(static_cast<uint32_t>(std::min<size_t>(g.rules.size(), 1u << 20)));  // a chain takes a pass per link
    for (const Rule& r : g.rules) {
      uint32_t c = 0;
      for (Symbol s : r.rhs) c = add(c, sym_cost(s));
      if (c < nt_min[r.lhs]) {
        nt_min[r.lhs] = c;
        changed = true;
      }
    }
  }
  rest.assign(g.dotted.size(), 0);
  rule_at.assign(g.dotted.size(), 0);
  for (uint32_t r = 0; r < g.rules.size(); ++r) {
    const uint32_t b = g.rule_begin[r];
    const size_t n = g.rules[r].rhs.size();
    rule_at[b + n] = r;
    for (size_t i = n; i-- > 0;) {
      rest[b + i] = add(sym_cost(g.dotted[b + i]), rest[b + i + 1]);
      rule_at[b + i] = r;
    }
  }
  bytes_.fetch_add(heap::of(lexeme_min) + heap::of(rest) + heap::of(rule_at), std::memory_order_relaxed);
}

uint32_t FinishCost::find(const Costs& c, uint32_t id) {
  auto it = std::lower_bound(c.begin(), c.end(), std::make_pair(id, 0u));
  return it != c.end() && it->first == id ? it->second : kInf;
}

// Breadth-first over the lexer's automaton from `state` with tokens as steps (each one a walk of
// the token trie that stays inside the lexeme), until each of `targets` (sorted) is accepting:
// the fewest tokens to end it. A shortest path, so a state at distance d > 0 has a token to one
// at d - 1; tokens that cross into the next lexeme are left out (the bound stays an upper one).
uint32_t FinishTables::bfs_to(uint32_t state, const std::vector<uint32_t>& targets, Costs* out,
                                  size_t max_states, deadline::Ticker& ticker) const {
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

std::shared_ptr<FinishTables> FinishTables::of(const LexerEpoch& epoch, const Grammar& g,
                                                       const Vocabulary& vocab) {
  std::lock_guard<std::mutex> lock(epoch.finish_mu);
  if (!epoch.finish) {
    epoch.finish = std::make_shared<FinishTables>(g, epoch.lexer, epoch.cache, vocab);
    epoch.finish_built.store(epoch.finish.get(), std::memory_order_release);
  }
  return epoch.finish;
}

std::shared_ptr<const InnerSteps> FinishTables::inner_steps(uint32_t state, const uint32_t* inner,
                                                                size_t need) {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = inner_steps_.find(state);
    if (it != inner_steps_.end()) return it->second;
  }
  auto steps = std::make_shared<const InnerSteps>(InnerSteps::of(lexer_, cache_, trie_, state, inner, need));
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto [it, fresh] = inner_steps_.emplace(state, steps);
  if (fresh) bytes_.fetch_add(steps->bytes() + heap::block(sizeof(void*) * 4), std::memory_order_relaxed);
  return it->second;
}

const std::vector<uint32_t>& FinishTables::reach(uint32_t state) {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = reach_.find(state);
    if (it != reach_.end()) return it->second;
  }
  // (a number's states never repeat: every digit makes new ones, here and beside white space
  // or another lexeme)
  for (const Pair& pair : pairs(state))
    if (lexer_.numbers_only(pair.alone)) return reach_of(state, {});
  constexpr size_t kMaxReach = 128;  // (a failed search makes as many lexer states)
  const std::vector<uint8_t>& bytes = lexer_.classes().representative;
  const uint32_t max_depth = static_cast<uint32_t>(trie_.max_depth());
  std::vector<uint32_t> found{state}, depth{0};
  std::unordered_set<uint32_t> seen{state};
  deadline::Ticker ticker;
  for (size_t h = 0; h < found.size(); ++h) {
    if (depth[h] >= max_depth) continue;
    for (uint8_t b : bytes) {
      ticker.tick();
      const uint32_t t = lexer_.next_tagged(found[h], b);
      if (t == Lexer::kDead || (t & Lexer::kEndNowTag) || !seen.insert(t).second) continue;
      if (found.size() == kMaxReach) {
        // Too many: the states found reach as many, or nearly (a pattern beside a length), so
        // none searches again.
        std::unique_lock<std::shared_mutex> lock(mu_);
        for (uint32_t f : found) reach_.emplace(f, std::vector<uint32_t>{});
        bytes_.fetch_add(found.size() * heap::block(sizeof(void*) * 5), std::memory_order_relaxed);
        lock.unlock();
        return reach_of(state, {});
      }
      found.push_back(t);
      depth.push_back(depth[h] + 1);
    }
  }
  return reach_of(state, std::move(found));
}

const std::vector<uint32_t>& FinishTables::reach_of(uint32_t state, std::vector<uint32_t> found) {
  found.shrink_to_fit();
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto [it, fresh] = reach_.emplace(state, std::move(found));
  if (fresh) bytes_.fetch_add(it->second.capacity() * 4 + heap::block(sizeof(void*) * 5), std::memory_order_relaxed);
  return it->second;
}

// bfs_to for a state of one live lexeme, with what earlier searches found: a state found on the
// shortest path of a search (its distance is the rest of that path) ends the searches that reach
// it later, so walking a string or a date token by token searches about once per state instead
// of once per state and path. Each memoized distance is the length of a real token path to the
// lexeme's end through states whose distances are memoized alike, so the bound stays consistent.
uint32_t FinishTables::tokens_to_end(uint32_t state, uint32_t lexeme, size_t max_states, size_t max_work,
                                         deadline::Ticker& ticker) {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (auto it = to_end_.find(state); it != to_end_.end()) return it->second;
  }
  if (ends_lexeme(state, lexeme)) return 0;
  if (const uint32_t d = text_to_end(state, lexeme, ticker); d < kInf) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    remember(to_end_, state, d);
    return d;
  }
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
    if (path_bytes >= kInf) return found;
    std::vector<uint32_t> passed;
    const uint32_t d = path_to_end(state, path, &passed);
    if (d >= found) return found;
    std::unique_lock<std::shared_mutex> lock(mu_);
    for (uint32_t i = 0; i < passed.size(); ++i) remember(to_end_, passed[i], d - i);
    return d;
  };
  // Where every byte is a token, the fewest bytes to the end (when the search for them was
  // breadth-first) over the longest token's bytes: fewer tokens cannot end the lexeme, and past
  // one the walk for a token that ends it at once is saved.
  if (all_bytes_) find_path();
  const bool far = shortest && path_bytes > static_cast<uint32_t>(trie_.max_depth());
  size_t work = 0;
  if (!far && ends_in_one_token(state, lexeme, ticker, &work)) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    remember(to_end_, state, 1);
    return 1;
  }
  note_walk(lexeme, work);
  // No token ends it: the search must walk the successors of each state one token reaches. Where
  // one such walk in this lexeme took more than half the work allowed (a pattern counting a run
  // of letters and digits: each count a state of its own, each walk every such token, in
  // milliseconds), it cannot finish, and the path alone bounds the cost.
  if (2 * widest_walk(lexeme) > max_work) return by_path(kInf);
  return token_search(state, lexeme, max_states, max_work, by_path);
}

bool FinishTables::ends_lexeme(uint32_t state, uint32_t lexeme) const {
  const auto& acc = lexer_.state(state).accepting;
  return std::binary_search(acc.begin(), acc.end(), lexeme);
}

// tokens_to_end's breadth-first search over tokens, the best path found memoized along its states.
uint32_t FinishTables::token_search(uint32_t state, uint32_t lexeme, size_t max_states, size_t max_work,
                                    const std::function<uint32_t(uint32_t)>& cut_short) {
  struct Node {
    uint32_t state, depth, parent;
  };
  std::vector<Node> queue{{state, 0, 0}};
  std::unordered_map<uint32_t, bool> seen{{state, true}};
  uint32_t best = kInf, best_node = 0, best_state = Lexer::kDead, best_rest = 0;
  size_t head = 0, work = 0;
  bool full = false;  // some state was left out (max_states)
  for (; head < queue.size() && work < max_work && queue[head].depth + 1 < best; ++head) {
    const Node h = queue[head];
    const size_t before = work;
    const std::vector<uint32_t>& next = token_successors(h.state, &work);
    note_walk(lexeme, work - before);
    std::shared_lock<std::shared_mutex> lock(mu_);
    for (uint32_t u : next) {
      if (seen.count(u)) continue;
      auto it = to_end_.find(u);
      const uint32_t rest = ends_lexeme(u, lexeme) ? 0 : it == to_end_.end() ? kInf : it->second;
      if (rest < kInf) {
        if (h.depth + 1 + rest < best) {
          best = h.depth + 1 + rest;
          best_node = static_cast<uint32_t>(head);
          best_state = u;
          best_rest = rest;
        }
      } else if (seen.size() < max_states) {
        seen.emplace(u, true);
        queue.push_back({u, h.depth + 1, static_cast<uint32_t>(head)});
      } else {
        full = true;
      }
    }
  }
  // Cut short (each state searched walks the trie: where every token leads to a state of its
  // own, as a pattern beside a length, thousands of them cost seconds): the path along one in
  // single bytes, where it is shorter than what was found.
  if (full || (head < queue.size() && queue[head].depth + 1 < best)) {
    const uint32_t d = cut_short(best);
    if (d < best) return d;
  }
  if (best >= kInf) return kInf;
  std::unique_lock<std::shared_mutex> lock(mu_);
  remember(to_end_, best_state, best_rest);
  for (uint32_t n = best_node;; n = queue[n].parent) {
    remember(to_end_, queue[n].state, best - queue[n].depth);
    if (n == 0) break;
  }
  return best;
}

// A string body counted in characters (a minLength or maxLength): each count is a state of its
// own, and the search expands each with a walk of the trie (a 50-character string at its
// opening quote: 50 walks, 0.2 s). Every plain token of whole characters leads a count to the
// count past its characters, the same for every count, so the fewest tokens to any count is a coin
// problem over the vocabulary's character counts, solved once; then the tokens that end `rest`.
// A real tokenization (the tokens that hold a few characters and the closing quote at once are
// left out: at most one token more), and consistent: a plain token leads to a count one token
// nearer.
uint32_t FinishTables::text_to_end(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker) {
  constexpr uint32_t kMaxCount = 1u << 16;  // (a longer minLength: searched as before)
  uint32_t k = 0, lo = 0, relaxed = Lexer::kDead, rest = Lexer::kDead;
  if (!cache_.admits_bounded_plain(lexer_, state, &k) || !lexer_.bounded_text_head(state, &k, &relaxed, &rest, &lo) ||
      lo > kMaxCount)
    return kInf;
  const uint32_t after = tokens_to_end(rest, lexeme, kStateSearchStates, kStateSearchWork, ticker);
  if (after >= kInf) return kInf;
  // The best count lies within the longest token's characters past lo (a sum past that, less
  // its last token, is still at least lo).
  const std::vector<uint32_t>& counts = vocab_.plain_slice().whole_counts;
  const uint32_t longest = counts.empty() ? 0 : counts.back();
  uint32_t best = kInf;
  for (uint32_t n = lo; n <= lo + longest && n <= k; ++n) best = std::min(best, plain_tokens_for(n));
  return add(best, after);
}

uint32_t FinishTables::plain_tokens_for(uint32_t n) {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (n < plain_tokens_.size()) return plain_tokens_[n];
  }
  const std::vector<uint32_t>& counts = vocab_.plain_slice().whole_counts;
  std::unique_lock<std::shared_mutex> lock(mu_);
  const size_t before = plain_tokens_.capacity();
  if (plain_tokens_.empty()) plain_tokens_.push_back(0);
  while (plain_tokens_.size() <= n) {
    const uint32_t m = static_cast<uint32_t>(plain_tokens_.size());
    uint32_t best = kInf;
    for (uint32_t c : counts) {
      if (c > m) break;
      best = std::min(best, add(plain_tokens_[m - c], 1));
    }
    plain_tokens_.push_back(best);
  }
  bytes_.fetch_add((plain_tokens_.capacity() - before) * 4, std::memory_order_relaxed);
  return plain_tokens_[n];
}

void FinishTables::remember(std::unordered_map<uint32_t, uint32_t>& memo, uint32_t state, uint32_t value) {
  if (memo.emplace(state, value).second)
    bytes_.fetch_add(heap::block(sizeof(void*) * 2 + 8) + sizeof(void*), std::memory_order_relaxed);  // node, bucket
}

// Whether some token ends `lexeme` from `state`: a walk of the token trie that stops at the first
// (a string's closing quote comes early in byte order), where the successors' walk would visit
// every token (on a huge automaton, making a lexer state for each). A walk that finds none has
// seen every successor: they are kept as token_successors' (unless another search's are).
size_t FinishTables::widest_walk(uint32_t l) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return l < widest_.size() ? widest_[l] : 0;
}

void FinishTables::note_walk(uint32_t l, size_t nodes) {
  if (nodes <= widest_walk(l)) return;
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (l < widest_.size()) widest_[l] = std::max(widest_[l], nodes);
}

bool FinishTables::ends_in_one_token(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker, size_t* walked) {
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
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (successors_.count(state)) return false;  // the search reads them: none ends it, or it finds it
  }
  ticker.tick();
  bool ends = false;
  std::vector<uint32_t> out;
  SeenStates seen;
  if (!lexer_.state(state).end_now)
    walk_inside(lexer_, cache_, trie_, state, true, [&](uint32_t, uint32_t, uint32_t s) {
      const uint32_t u = s & ~Lexer::kEndNowTag;
      if (!seen.add(u)) return false;
      ends = ends_lexeme(u, lexeme);
      out.push_back(u);
      return ends;
    }, false, walked);
  if (ends) return true;
  keep_successors(state, std::move(out));
  return false;
}

// The distinct states one token leads `state` to inside its lexeme (a walk of the token trie
// with the lexer alone), memoized: the searches of neighbouring states expand the same states.
const std::vector<uint32_t>& FinishTables::token_successors(uint32_t state, size_t* work) {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = successors_.find(state);
    if (it != successors_.end()) return it->second;
  }
  std::vector<uint32_t> out;
  SeenStates seen;
  if (!lexer_.state(state).end_now)
    walk_inside(lexer_, cache_, trie_, state, true, [&](uint32_t, uint32_t, uint32_t s) {
      if (seen.add(s & ~Lexer::kEndNowTag)) out.push_back(s & ~Lexer::kEndNowTag);
      return false;
    }, true, work);
  return keep_successors(state, std::move(out));
}

// Keeps the successors of `state` (sorted, each once); the ones kept first stay.
const std::vector<uint32_t>& FinishTables::keep_successors(uint32_t state, std::vector<uint32_t> out) {
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.shrink_to_fit();
  const size_t bytes = heap::of(out) + heap::block(sizeof(void*) * 2 + 8 + sizeof(out)) + sizeof(void*);
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto [it, added] = successors_.emplace(state, std::move(out));
  if (added) bytes_.fetch_add(bytes, std::memory_order_relaxed);
  return it->second;  // unordered_map entries never move
}

const FinishTables::Costs& FinishTables::lexer_costs(uint32_t state) {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = state_costs_.find(state);
    if (it != state_costs_.end()) return it->second;
  }
  // Searched without the lock (another thread may search the same state meanwhile), one lexeme
  // at a time in the state holding it alone: a search for all of them at once would expand every
  // state of the free string beside a key until the key's last byte.
  Costs c;
  deadline::Ticker ticker;
  for (const Pair& pair : pairs(state)) {
    const uint32_t alone = pair.alone;
    Costs found;
    if (pair.lexeme != kNoLexeme) {
      // (at most the distance in single bytes: the bounds read off the expressions hold where
      // the search stops short)
      const uint32_t d = std::min(tokens_to_end(alone, pair.lexeme, kStateSearchStates, kStateSearchWork, ticker), pair.shortest);
      if (d < kInf) found.push_back({pair.lexeme, d});
    } else {
      bfs_to(alone, lexer_.live_lexemes(alone), &found, kStateSearchStates, ticker);
    }
    for (const auto& f : found) {
      auto it = std::lower_bound(c.begin(), c.end(), std::make_pair(f.first, 0u));
      if (it != c.end() && it->first == f.first)
        it->second = std::min(it->second, f.second);
      else
        c.insert(it, f);
    }
  }
  const size_t bytes = heap::of(c) + heap::block(sizeof(void*) * 3 + sizeof(Costs)) + sizeof(void*);  // node, bucket
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto [it, added] = state_costs_.emplace(state, std::move(c));
  if (added) bytes_.fetch_add(bytes, std::memory_order_relaxed);
  return it->second;  // unordered_map entries never move
}

const std::vector<FinishTables::Pair>& FinishTables::pairs(uint32_t state) {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = pairs_.find(state);
    if (it != pairs_.end()) return it->second;
  }
  const std::vector<Lexer::PairBytes> bytes = lexer_.pair_bytes(state, static_cast<uint32_t>(trie_.max_depth()));
  std::vector<Pair> out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const uint32_t alone = lexer_.probe_state(state, i);
    const std::vector<uint32_t> live = lexer_.live_lexemes(alone);
    Pair pair{alone, live.size() == 1 ? live[0] : kNoLexeme, kInf, kInf};
    if (all_bytes_ && pair.lexeme == bytes[i].lexeme) {  // (in single bytes, each a token)
      pair.shortest = std::min(bytes[i].shortest, kInf);
      pair.ceiling = std::min(bytes[i].ceiling, kInf);
    }
    out.push_back(pair);
  }
  const size_t size = heap::of(out) + heap::block(sizeof(void*) * 2 + 8 + sizeof(out)) + sizeof(void*);
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto [it, added] = pairs_.emplace(state, std::move(out));
  if (added) bytes_.fetch_add(size, std::memory_order_relaxed);
  return it->second;  // unordered_map entries never move
}

const FinishCost::Costs& FinishCost::lexer_costs(uint32_t state) {
  return states_.get(state, [&] { return &t_->lexer_costs(state); });
}

const std::vector<FinishTables::Pair>& FinishCost::pairs(uint32_t state) {
  return pairs_.get(state, [&] { return &t_->pairs(state); });
}

// The cost of an item once the symbols from its dot on (costing `rest`) are read: its rule
// completes, and then whatever waits on its nonterminal at its origin goes on.
uint32_t FinishCost::finish_item(const EarleyParser& p, const EarleyItem& it, uint32_t rest) {
  const uint32_t rule = t_->rule_at[it.pos];
  if (rule == 0) return rest;  // the start rule: the parse is complete
  return add(rest, find(row_costs(p, it.origin).up, g_.rules[rule].lhs));
}

FinishCost::RowCosts& FinishCost::row_costs(const EarleyParser& p, uint32_t row) {
  const uint64_t serial = p.row(row).serial;
  // One slot per row index: the parser's rows are a stack, and a slot holds the costs of the row
  // with its serial (walks push and pop many short-lived rows: the slots' vectors are reused).
  if (rows_.size() < p.num_rows()) rows_.resize(p.num_rows() * 2);  // (nested calls ask lower rows)
  if (rows_[row].serial == serial) return rows_[row].costs;
  // Rows below first, lowest first: each needs only rows under it, so no deep recursion
  // (a long list written as right recursion chains its items through every earlier row).
  std::vector<uint32_t> missing;
  for (uint32_t r = row; r-- > 0 && rows_[r].serial != p.row(r).serial;) missing.push_back(r);
  for (size_t i = missing.size(); i-- > 0;) row_costs(p, missing[i]);
  // up[A]: items of this row waiting on A, each either finishing through a lower row (a base
  // cost) or through another nonterminal completing at this same row (an edge): Dijkstra.
  const EarleyRow& r = p.row(row);
  ticker_.tick(r.end - r.begin + 1);
  // Scratch kept across rows (a walk costs many short-lived rows): distances per nonterminal
  // with the ones touched, the edges, the heap.
  if (dist_.size() < g_.nonterminal_names.size()) dist_.assign(g_.nonterminal_names.size(), kInf);
  for (uint32_t nt : touched_) dist_[nt] = kInf;  // (a run cut short by a limit left them set)
  touched_.clear();
  edges_.clear();  // (lhs, waited-on, rest)
  heap_.clear();   // (cost, nonterminal), a min-heap
  auto relax = [&](uint32_t nt, uint32_t c) {
    if (c >= kInf || dist_[nt] <= c) return;
    if (dist_[nt] == kInf) touched_.push_back(nt);
    dist_[nt] = c;
    heap_.push_back({c, nt});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  };
  for (uint32_t j = r.begin; j < r.end; ++j) {
    const EarleyItem it = p.item(j);
    const Symbol sym = g_.dotted[it.pos];
    if (is_terminal(sym) || Grammar::is_end(sym)) continue;
    const uint32_t rule = t_->rule_at[it.pos];
    const uint32_t rest = t_->rest[it.pos + 1];
    if (rule != 0 && it.origin == row)
      edges_.emplace_back(g_.rules[rule].lhs, sym, rest);
    else
      relax(sym, finish_item(p, it, rest));
  }
  std::sort(edges_.begin(), edges_.end());
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const auto [c, nt] = heap_.back();
    heap_.pop_back();
    ticker_.tick();
    if (dist_[nt] != c) continue;
    for (auto e = std::lower_bound(edges_.begin(), edges_.end(), std::make_tuple(nt, 0u, 0u));
         e != edges_.end() && std::get<0>(*e) == nt; ++e)
      relax(std::get<1>(*e), add(c, std::get<2>(*e)));
  }
  RowSlot& slot = rows_[row];
  slot.serial = serial;
  RowCosts& rc = slot.costs;
  rc.up.clear();
  rc.scan.clear();
  rc.has_fresh = false;
  rc.fresh = kInf;
  for (uint32_t nt : touched_) {
    rc.up.push_back({nt, dist_[nt]});
    dist_[nt] = kInf;
  }
  std::sort(rc.up.begin(), rc.up.end());
  return rc;
}

uint32_t FinishCost::fresh_cost(const EarleyParser& p, uint32_t row) {
  RowCosts& rc = row_costs(p, row);
  if (rc.has_fresh) return rc.fresh;
  const EarleyRow& r = p.row(row);
  uint32_t best = kInf;
  for (uint32_t j = r.begin; j < r.end; ++j) {
    const EarleyItem it = p.item(j);
    best = std::min(best, finish_item(p, it, t_->rest[it.pos]));
  }
  rc.fresh = best;
  rc.has_fresh = true;
  return best;
}

uint32_t FinishCost::scan_cost(const EarleyParser& p, uint32_t row, uint32_t lexeme) {
  RowCosts& rc = row_costs(p, row);
  for (const auto& [l, c] : rc.scan)
    if (l == lexeme) return c;
  const EarleyRow& r = p.row(row);
  const Symbol want = lexeme | kTerminalBit;
  uint32_t best = kInf;
  for (uint32_t j = r.begin; j < r.end; ++j) {
    const EarleyItem it = p.item(j);
    if (g_.dotted[it.pos] == want) best = std::min(best, finish_item(p, it, t_->rest[it.pos + 1]));
  }
  rc.scan.push_back({lexeme, best});
  return best;
}

// A token that stays inside the lexeme leads each (lexeme, expression) pair of `state` to one
// reachable from it, whose cost is at most that pair's ceiling plus what follows its lexeme; the
// cost after the token is the least over the pairs still alive, so at most the largest such sum.
// That sum is loose where the pair of the largest ceiling dies, or gives way, on the bytes that
// make it large (a key pattern `.*[0-9a-f]{32}.*` beside the keys that do not match it: a byte
// that resets the pattern's count keeps the other key alive), or where an expression's bound
// is (its ceiling is the largest over a union's alternatives, `.*` among them once the pattern
// matched): the states one token reaches, each with the least of its pairs, are then searched.
uint32_t FinishCost::inner_ceiling(const EarleyParser& p, uint32_t state, uint32_t limit) {
  const uint32_t row = static_cast<uint32_t>(p.num_rows() - 1);
  const std::vector<FinishTables::Pair>& all = pairs(state);
  uint32_t most = 0;
  for (const FinishTables::Pair& pair : all) {
    // A lexeme vetoed at the row (a key written already) takes no token: the mask leaves out
    // those that lead to it alone.
    if (pair.lexeme == FinishTables::kNoLexeme) {  // (no ceiling is known for several lexemes)
      const std::vector<uint32_t> live = t_->lexer().live_lexemes(pair.alone);
      if (std::all_of(live.begin(), live.end(), [&](uint32_t l) { return p.vetoed(row, l); })) continue;
      most = kInf;
      break;
    }
    if (p.vetoed(row, pair.lexeme)) continue;
    const uint32_t after = g_.lexemes[pair.lexeme].ignore ? fresh_cost(p, row) : scan_cost(p, row, pair.lexeme);
    uint32_t up = after >= kInf ? kInf : pair.ceiling;
    if (add(up, after) > limit && after < kInf) up = std::min(up, t_->state_ceiling(pair.alone));  // the search, where it may fit
    most = std::max(most, add(up, after));
    if (most >= kInf) break;
  }
  if (most <= limit) return most;
  uint32_t joint = 0;
  const std::vector<uint32_t>& reach = t_->reach(state);
  for (size_t i = 0; i < reach.size() && joint < most; ++i) joint = std::max(joint, bytes_bound(p, reach[i]));
  return reach.empty() ? most : std::min(most, joint);
}

uint32_t FinishCost::bytes_bound(const EarleyParser& p, uint32_t state, bool search) {
  const uint32_t row = static_cast<uint32_t>(p.num_rows() - 1);
  uint32_t best = kInf;
  for (const FinishTables::Pair& pair : pairs(state)) {
    if (pair.lexeme == FinishTables::kNoLexeme || p.vetoed(row, pair.lexeme)) continue;
    const uint32_t d = pair.shortest < kInf || !search ? pair.shortest : t_->state_bytes(pair.alone);
    if (d >= best) continue;
    const uint32_t after = g_.lexemes[pair.lexeme].ignore ? fresh_cost(p, row) : scan_cost(p, row, pair.lexeme);
    best = std::min(best, add(d, after));
  }
  return best;
}

uint32_t FinishCost::at(const EarleyParser& p, uint32_t state, bool fresh) {
  const uint32_t row = static_cast<uint32_t>(p.num_rows() - 1);
  if (fresh) return fresh_cost(p, row);
  uint32_t best = kInf;
  for (const auto& [l, c] : lexer_costs(state)) {
    if (c >= best) continue;
    // An ignored lexeme (white space) ends back where it started: the row's fresh cost.
    const uint32_t after = g_.lexemes[l].ignore ? fresh_cost(p, row) : scan_cost(p, row, l);
    best = std::min(best, add(c, after));
  }
  return best;
}

}  // namespace stencil
