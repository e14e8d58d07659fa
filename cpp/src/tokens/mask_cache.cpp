#include "tokens/mask_cache.h"

#include <algorithm>
#include <mutex>
#include <tuple>

#include "lexer/lexer.h"
#include "stencil/errors.h"
#include "stencil/vocabulary.h"
#include "support/memory_limit.h"
#include "support/token_bits.h"
#include "tokens/plain_slice.h"
#include "tokens/walk_loops.h"

namespace stencil {

// A bound of this many bytes or more never binds inside one token: bounds no token reaches.
static uint32_t past_longest_token(const Vocabulary& vocab) {
  return static_cast<uint32_t>(vocab.trie().max_depth()) + 1;
}

// The inner walk: tokens that stay inside the current lexeme, and the nodes
// where a lexeme ends (or must end) inside a token.
void MaskCache::inner_walk(const Lexer& lexer, const TokenTrie& trie, uint32_t tag, uint32_t state,
                           std::vector<uint32_t>& inner, std::vector<Boundary>& boundaries, uint32_t min_depth) const {
  if (min_depth == 0)
    walk_from<false, false>(lexer, trie, tag, state, inner, boundaries, 0);
  else
    walk_from<true, false>(lexer, trie, tag, state, inner, boundaries, min_depth);
}

// (The walk's hot loop in three forms: a whole walk, as every entry's is, tests no depth and
// counts nothing; the sandwich's walks count the nodes they find alive.)
template <bool kDeepOnly, bool kCount>
uint64_t MaskCache::walk_from(const Lexer& lexer, const TokenTrie& trie, uint32_t tag, uint32_t state,
                              std::vector<uint32_t>& inner, std::vector<Boundary>& boundaries,
                              uint32_t min_depth) const {
  constexpr uint32_t kRelaxFrom = 16;  // sub-trie nodes worth a lifted state
  constexpr uint32_t kPartsFrom = 64;  // sub-trie nodes worth asking for loop-shaped parts
  const auto& nodes = trie.nodes();
  const auto& summaries = trie.summaries();
  const int32_t* ordered = trie.ordered_tokens().data();
  const uint32_t* before = trie.tokens_before().data();
  WalkLoops loops(*this, lexer);
  std::vector<uint32_t> st(static_cast<size_t>(trie.max_depth()) + 2, 0);
  std::vector<uint32_t> path(st.size(), 0);  // path[k]: the node at depth k above (0: the root)
  st[0] = state;
  uint64_t alive = 0;
  const size_t n = nodes.size();
  for (size_t i = 1; i < n;) {
    const TrieNode& node = nodes[i];
    // The next sibling is visited after this sub-trie, which is often skipped at once: fetch it
    // now (a walk that skips much is bound by memory latency, not work).
    __builtin_prefetch(nodes.data() + i + node.subtree_size);
    __builtin_prefetch(summaries.data() + i + node.subtree_size);
    if (kDeepOnly && uint32_t(node.depth) + node.height - 1 < min_depth) {  // no token of min_depth bytes below
      i += node.subtree_size;
      continue;
    }
    uint32_t p = st[node.depth - 1];
    uint32_t t = lexer.next_tagged(p, node.byte);
    if (t == Lexer::kDead) {
      if (!lexer.state(p).accepting.empty() && (!kDeepOnly || node.depth >= min_depth))
        boundaries.push_back({static_cast<uint32_t>(i) | tag, p, path[node.depth - 1] | tag});
      i += node.subtree_size;
      continue;
    }
    if (t & Lexer::kEndNowTag) {
      if (!kDeepOnly || node.depth >= min_depth)
        boundaries.push_back({static_cast<uint32_t>(i) | tag, p, path[node.depth - 1] | tag});
      i += node.subtree_size;
      continue;
    }
    // A bound no deeper than the longest token below (a count, a maxLength) makes every byte a
    // new state, which never loops. With the sub-trie's height under the bound, the bound lifted
    // gives a state alike on every walk of it, where states loop: walk the sub-trie from there.
    // (Its boundaries then carry lifted states, alike for the bytes left.) Heights are rounded
    // up to powers of two, so that a few lifted states serve all sub-tries.
    if (loop_skip_ && t != p && node.subtree_size >= kRelaxFrom && lexer.state(p).bounded) {
      uint32_t limit = 2;
      while (limit <= node.height) limit <<= 1;
      const uint32_t r = loops.relaxed(p, limit);
      const uint32_t rt = r != Lexer::kDead && r != p ? lexer.next_tagged(r, node.byte) : Lexer::kDead;
      if (rt != Lexer::kDead && !(rt & Lexer::kEndNowTag)) {
        p = r;
        t = rt;
      }
    }
    // A sub-trie of characters that each lead t (after an ASCII byte) or p (at a lead byte)
    // back to itself never leaves the lexeme or ends it: all its tokens are inner. (A
    // continuation byte is inside a character: never here.) A state is asked for its loop
    // characters where it shows a loop: t == p, or, at a large sub-trie, t looping on this byte
    // (the first character of `[^/]+` moves to the state that loops).
    const bool ascii = node.byte < 0x80;
    if (loop_skip_ && node.subtree_size > 1 &&
        ((ascii && (t == p || (node.subtree_size >= kPartsFrom && lexer.next(t, node.byte) == t)) &&
          loops.loops_over(t, summaries[i], true)) ||
         (node.byte >= 0xC0 && loops.loops_over(p, summaries[i], false)) ||
         (node.subtree_size >= kPartsFrom && loops.part_loops_over(p, summaries[i])))) {
      for (uint32_t j = before[i], end = before[i + node.subtree_size]; j < end; ++j)
        token_bits::set(inner.data(), ordered[j]);
      if (kCount) alive += node.subtree_size;
      i += node.subtree_size;
      continue;
    }
    st[node.depth] = t;
    path[node.depth] = static_cast<uint32_t>(i);
    if (node.token_id >= 0) token_bits::set(inner.data(), node.token_id);
    if (kCount) ++alive;
    ++i;
  }
  return alive;
}

CharSummary MaskCache::loop_chars(const Lexer& lexer, uint32_t state, bool groups) const {
  const uint64_t key = uint64_t(state) << 1 | groups;
  {
    std::lock_guard<std::mutex> lock(admit_mu_);
    auto it = loop_memo_.find(key);
    if (it != loop_memo_.end()) return it->second;
  }
  const CharSummary chars = stencil::loop_chars(lexer, state, groups, 64);
  std::lock_guard<std::mutex> lock(admit_mu_);
  loop_memo_.emplace(key, chars);
  return chars;
}

// Trie order is how the walk finds boundaries; the matcher wants boundaries that end a lexeme
// alike next to each other (same lexer state, trie, depth and byte), those under one parent
// together, so that its runs share one parser scan among as many as can; and the runs of one
// byte at every depth together, by depth (MergedRuns).
void MaskCache::order_for_runs(const Lexer& lexer, const Vocabulary& vocab, std::vector<Boundary>& boundaries) {
  // Keyed by (lexer state, trie, byte, depth) packed into one word, then (node, index): a sort
  // of 16-byte pairs (a tuple beside each boundary was a fifth of a resolved entry's time).
  std::vector<std::pair<uint64_t, uint64_t>> keyed;
  keyed.reserve(boundaries.size());
  for (size_t i = 0; i < boundaries.size(); ++i) {
    Boundary& b = boundaries[i];
    const TrieNode& n = trie_of(vocab, b.node).nodes()[b.node & ~kRestTrieBit];
    b.depth = n.depth;
    b.byte = n.byte;
    // Dead bytes end the lexeme before them, whatever they are: one run; a byte that completes
    // the lexeme is pushed, and runs share it. Within a group, trie order.
    const uint64_t byte = lexer.next(b.lexer_state, n.byte) == Lexer::kDead ? 0 : uint64_t(n.byte) + 1;
    const uint64_t group =
        uint64_t(b.lexer_state) << 32 | uint64_t((b.node & kRestTrieBit) != 0) << 31 | byte << 16 | n.depth;
    keyed.emplace_back(group, uint64_t(b.node) << 32 | i);
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<Boundary> ordered;
  ordered.reserve(boundaries.size());
  for (size_t i = 0; i < keyed.size(); ++i) {
    ordered.push_back(boundaries[keyed[i].second & 0xFFFFFFFFu]);
    ordered.back().joins = i > 0 && keyed[i].first == keyed[i - 1].first;
  }
  boundaries.swap(ordered);
}

const TokenTrie& MaskCache::trie_of(const Vocabulary& vocab, uint32_t tagged_node) {
  return (tagged_node & kRestTrieBit) ? vocab.plain_slice().rest : vocab.trie();
}

std::string_view MaskCache::bytes_above(const Vocabulary& vocab, uint32_t tagged_node) {
  const auto& nodes = trie_of(vocab, tagged_node).nodes();
  const size_t node = tagged_node & ~kRestTrieBit;
  size_t n = node;
  while (nodes[n].token_id < 0) ++n;
  return vocab.token_bytes(nodes[n].token_id).substr(0, nodes[node].depth - 1);
}

bool MaskCache::explore_plain(const Lexer& lexer, uint32_t state, size_t max_pairs, uint32_t max_states) const {
  {
    std::lock_guard<std::mutex> lock(admit_mu_);
    auto it = admit_memo_.find(uint64_t(state) << 32 | max_pairs);
    if (it != admit_memo_.end()) return it->second;
  }
  bool gave_up = false;
  bool ok = admits_plain_text(lexer, state, max_pairs, max_states, &gave_up);
  if (gave_up) return false;  // (not an answer: with the states built by then, a later one may be yes)
  std::lock_guard<std::mutex> lock(admit_mu_);
  admit_memo_.emplace(uint64_t(state) << 32 | max_pairs, ok);
  return ok;
}

bool MaskCache::loops_on_plain(const Lexer& lexer, uint32_t state) const {
  constexpr uint64_t kLoopKey = 0xFFFFFFFFu;  // beside (state, limit) keys: limits are small
  const uint64_t key = uint64_t(state) << 32 | kLoopKey;
  {
    std::lock_guard<std::mutex> lock(admit_mu_);
    auto it = admit_memo_.find(key);
    if (it != admit_memo_.end()) return it->second;
  }
  bool ok = lexer.loops_on_plain(state, 64);
  std::lock_guard<std::mutex> lock(admit_mu_);
  admit_memo_.emplace(key, ok);
  return ok;
}

// A state admits plain text when one of its lexemes loops on it (Lexer::loops_on_plain), when
// the whole state does, or, with no lazy lexeme in it, when one of its lexemes alone does: that
// lexeme then stays alive and extendable after any plain text, so the state never dies or must
// end (keys of known names beside a free key lexeme, for instance).
bool MaskCache::admits_plain(const Lexer& lexer, uint32_t state, uint32_t max_token_bytes) const {
  if (loops_on_plain(lexer, state)) return true;
  const bool probes = !lexer.has_lazy(state);
  // The exploration's cost is the lexer states it builds; no answer is worth more than a few
  // dozen of them, since a no costs only the entry's walk of the whole trie (which builds the
  // states the tokens reach, not those of every count a bounded repetition has: a pattern of 1
  // to 255 characters beside a free key explored 300 states, 10 ms, to say no).
  constexpr uint32_t kExploreStates = 48;
  const uint32_t max_states = lexer.num_states() + kExploreStates;
  // Keys split into classes by unanchored patterns make a state of every class's derivative, a
  // product no exploration exhausts; their cover (the string of any key: Lexer::cover_state)
  // holds a subset of the state's words in a state or two.
  if (probes) {
    const uint32_t cover = lexer.cover_state(state);
    if (cover != Lexer::kDead && cover != state && explore_plain(lexer, cover, 64, max_states)) return true;
  }
  // A count under a complement (the keys that match no pattern property, beside those of a
  // pattern of 1 to 255 characters) is a new state at every byte, which no exploration exhausts,
  // nor lifts (lifting it shrinks the complement). A subset of the state's words without such
  // counts (Lexer::shrunk_state: the complement's count lifted, the pattern's cut to its
  // minimum) that stays alive on all plain text proves the state does: its states are few, and
  // one for every count (a key's each byte asks again). Before the probes below, whose steps
  // from the state itself build a state per count and byte.
  constexpr uint32_t kShrinkFrom = 16;
  if (probes && lexer.state(state).bounded) {
    const uint32_t shrunk = lexer.shrunk_state(state, kShrinkFrom);
    if (shrunk != Lexer::kDead && shrunk != state && explore_plain(lexer, shrunk, 64, max_states)) return true;
  }
  if (plain_probe_leaves(lexer, state, max_token_bytes)) return false;
  // A bounded repetition (a string's maxLength) makes every character a new state, which the
  // exploration cannot exhaust. Tokens are shorter than max_token_bytes + 1, so bounds of that
  // size or more never bind inside one: explore the state with them lifted instead.
  const uint32_t relaxed = lexer.relaxed_state(state, max_token_bytes + 1);
  // Small limits first: a lexeme that admits plain text (a free string) does so in a few
  // pairs, while exploring one that does not (a pattern with a complement) builds costly states.
  for (size_t limit : {size_t(32), size_t(256)}) {
    if (explore_plain(lexer, state, std::min<size_t>(limit, 64), max_states)) return true;
    if (relaxed != Lexer::kDead && relaxed != state && explore_plain(lexer, relaxed, limit, max_states)) return true;
    if (!probes) continue;
    for (size_t i = 0;; ++i) {
      uint32_t probe = lexer.probe_state(state, i);
      if (probe == Lexer::kDead) break;
      if (probe != state && explore_plain(lexer, probe, limit, max_states)) return true;
    }
  }
  return false;
}

// `C{lo,k} rest` (Lexer::bounded_text_head) where C* rest admits plain text and rest cannot
// start with plain text: exactly the plain tokens of at most k characters stay inside, and no
// plain token can end the lexeme (rest is not nullable).
bool MaskCache::admits_bounded_plain(const Lexer& lexer, uint32_t state, uint32_t* k) const {
  uint32_t relaxed, rest;
  return lexer.bounded_text_head(state, k, &relaxed, &rest) && plain_stays_in_head(lexer, relaxed, rest);
}

bool MaskCache::admits_slack_plain(const Lexer& lexer, uint32_t state, SlackHead* h) const {
  uint32_t relaxed, rest;
  return lexer.slack_text_head(state, &h->k, &relaxed, &rest, &h->slack, &h->filter, &h->alive) &&
         plain_stays_in_head(lexer, relaxed, rest);
}

bool MaskCache::plain_stays_in_head(const Lexer& lexer, uint32_t relaxed, uint32_t rest) const {
  for (int b = 0; b < 256; ++b)
    if (plain_text_step(0, static_cast<uint8_t>(b)) >= 0 && lexer.next(rest, static_cast<uint8_t>(b)) != Lexer::kDead)
      return false;
  // (no relaxed state: a count of a byte class, which holds every string of its bytes)
  return relaxed == Lexer::kDead || explore_plain(lexer, relaxed, 256, UINT32_MAX);
}

std::shared_ptr<const MaskEntry> MaskCache::compute(const Lexer& lexer, const Vocabulary& vocab, uint32_t state,
                                                    bool* borrowed) const {
  // A count of words far from its bound (`(\S+\s+){0,49}`) makes every word a new state, and
  // each would be explored and walked: where the count lowered and lifted give one entry, it
  // serves every count between (first the bounds no token reaches lifted, as below).
  constexpr uint32_t kCountClamp = 8;
  if (loop_skip_ && lexer.state(state).bounded && !lexer.has_lazy(state) && lexer.counts_words(state, kCountClamp)) {
    uint32_t base = lexer.relaxed_state(state, past_longest_token(vocab)), lo, hi;
    if (lexer.count_sandwich(base == Lexer::kDead ? state : base, kCountClamp, &lo, &hi))
      if (auto lo_entry = sandwiched(lexer, vocab, lo, hi)) {
        *borrowed = true;
        return lo_entry;
      }
  }
  auto e = std::make_shared<MaskEntry>();
  auto shared = std::make_shared<SharedMaskEntry>();
  // The structural test first: exploring a string state with a character count fails slowly.
  if (SlackHead head; plain_slice_ && admits_slack_plain(lexer, state, &head)) {
    counted_slice(lexer, vocab, state, head, *e, *shared);
  } else if (auto part = loop_skip_ && lexer.state(state).bounded ? partly_relaxed(lexer, vocab, state) : nullptr) {
    return part;
  } else if (auto lifted = loop_skip_ ? relaxed_entry(lexer, vocab, state) : nullptr) {
    *borrowed = true;
    return lifted;
  } else if (plain_slice_ && admits_plain(lexer, state, static_cast<uint32_t>(vocab.trie().max_depth()))) {
    // Every plain token stays inside: take the slice, walk only the rest.
    const PlainSlice& slice = vocab.plain_slice();
    shared->inner = slice.bits;
    inner_walk(lexer, slice.rest, kRestTrieBit, state, shared->inner, e->boundaries);
  } else {
    shared->inner.assign(token_bits::words_for(vocab.vocab_size()), 0);
    inner_walk(lexer, vocab.trie(), 0, state, shared->inner, e->boundaries);
  }
  return finish(lexer, vocab, std::move(e), std::move(shared));
}

// Bounds no token reaches (a long maxLength, a count of 200 words) make every byte or word a new
// state, which never loops back to itself: the state with them lifted behaves alike on every
// token's bytes, so its entry (cached: the states of a long string share it) serves as it is,
// boundaries and all. Asked before admits_plain, whose exploration of each new state (every
// word of a count of 200 words) cost 0.3 ms to find what the lifted state's entry already says.
// (Replaying each boundary's bytes from `state` instead built a counting state per trie node
// above a boundary, and a second copy of the entry in the cache's bytes.)
std::shared_ptr<const MaskEntry> MaskCache::relaxed_entry(const Lexer& lexer, const Vocabulary& vocab,
                                                          uint32_t state) const {
  if (!lexer.state(state).bounded) return nullptr;
  const uint32_t relaxed = lexer.relaxed_state(state, past_longest_token(vocab));
  if (relaxed == Lexer::kDead || relaxed == state) return nullptr;
  std::shared_ptr<const MaskEntry> keep;
  const MaskEntry* r = get(lexer, vocab, relaxed, &keep);
  return keep ? keep : r->shared_from_this();
}

// A string with k characters left: the plain tokens of at most k characters stay inside (longer
// ones die and cannot end the lexeme), the rest is walked.
void MaskCache::counted_slice(const Lexer& lexer, const Vocabulary& vocab, uint32_t state, const SlackHead& h,
                              MaskEntry& e, SharedMaskEntry& shared) const {
  const PlainSlice& slice = vocab.plain_slice();
  const uint32_t k = h.k, slack = h.slack;
  if (k == kUnbounded || slack == 0) {
    shared.inner = k == kUnbounded ? slice.bits : slice.at_most_chars(k);
  } else {
    // Beside a pattern within `slack` characters of a word: those of at most k - slack do
    shared.inner.assign(slice.bits.size(), 0);
    if (k >= slack) shared.inner = slice.at_most_chars(k - slack);
  }
  // (of those, beside a pattern that some plain text kills, the ones that leave it alive: the
  // inner tokens of the state with the count lifted, one entry for every count)
  std::shared_ptr<const MaskEntry> keep;
  std::vector<uint32_t> alive_words;
  if (h.alive != Lexer::kDead) alive_words = get(lexer, vocab, h.alive, &keep)->inner();
  const std::vector<uint32_t>* alive = h.alive == Lexer::kDead ? nullptr : &alive_words;
  if (alive)
    for (size_t w = 0; w < shared.inner.size(); ++w) shared.inner[w] &= (*alive)[w];
  if (k != kUnbounded && slack != 0) {
    const uint32_t from = k >= slack ? k - slack + 1 : 1;
    if (alive) {
      // The ones of k - slack + 1 to k characters that leave it alive, each read from the state
      // (walking the sub-tries of the longer tokens instead reads nearly the whole trie at small k)
      for (uint32_t c = from; c <= k && c < slice.by_count.size(); ++c)
        for (const int32_t id : slice.by_count[c]) {
          if (!token_bits::has(alive->data(), id)) continue;
          uint32_t t = state;
          for (const char ch : vocab.token_bytes(id))
            if ((t = lexer.next_tagged(t, static_cast<uint8_t>(ch))) == Lexer::kDead || (t & Lexer::kEndNowTag)) break;
          if (t != Lexer::kDead && !(t & Lexer::kEndNowTag)) token_bits::set(shared.inner.data(), id);
        }
    } else {
      // the longer ones, of more than k - slack bytes, walked in the sub-tries that hold them
      // (their walk's ends are the rest's too, walked below)
      std::vector<uint32_t> deep(slice.bits.size(), 0);
      std::vector<Boundary> ends;
      inner_walk(lexer, vocab.trie(), 0, state, deep, ends, from);
      for (size_t w = 0; w < deep.size(); ++w) shared.inner[w] |= deep[w] & slice.bits[w];
    }
  }
  // (a plain token with a byte the class refuses dies there: the lexeme cannot end on plain text)
  if (!h.filter.empty()) {
    const auto kept = slice.avoiding(h.filter);
    for (size_t w = 0; w < kept->size(); ++w) shared.inner[w] &= (*kept)[w];
  }
  inner_walk(lexer, slice.rest, kRestTrieBit, state, shared.inner, e.boundaries);
}

// The entry with its boundaries in the shared part (by node, in walk order) and ordered for runs.
std::shared_ptr<MaskEntry> MaskCache::finish(const Lexer& lexer, const Vocabulary& vocab, std::shared_ptr<MaskEntry> e,
                                             std::shared_ptr<SharedMaskEntry> shared) {
  e->boundaries.shrink_to_fit();
  shared->boundary_nodes.reserve(e->boundaries.size());
  shared->boundary_parents.reserve(e->boundaries.size());
  for (const Boundary& b : e->boundaries) {
    shared->boundary_nodes.push_back(b.node);
    shared->boundary_parents.push_back(b.parent);
  }
  order_for_runs(lexer, vocab, e->boundaries);
  shared->index();
  e->shared = std::move(shared);
  return e;
}

// A bound some tokens reach (a maxLength of 100 beside a pattern) makes every byte a new state,
// each walked over the whole trie. Lifted at `limit`, the state is alike on every walk of fewer
// than `limit` bytes (Lexer::relaxed_state), and that relaxed state is one for all of a long
// string's counts: its entry serves the tokens shorter than `limit` (their bits, the boundaries
// above that depth), and only the sub-tries that hold a longer token are walked from `state`.
// Null where no limit of 16 or more can be lifted, or the state's bounds are all past every token.
std::shared_ptr<const MaskEntry> MaskCache::partly_relaxed(const Lexer& lexer, const Vocabulary& vocab,
                                                           uint32_t state) const {
  const TokenTrie& trie = vocab.trie();
  const uint32_t horizon = static_cast<uint32_t>(trie.max_depth()) + 1;
  // (a bound of 16 to 23 may lift at 16 when the rest of the lexeme needs few bytes: a string's
  // last characters before its maxLength, each count a whole walk otherwise)
  if (lexer.char_count_bound(state) < 16) return nullptr;  // (memoized per expression: a few new nodes a state)
  const uint32_t full = lexer.relaxed_state(state, horizon);
  if (full != Lexer::kDead && full != state) return nullptr;  // compute's borrow serves every token
  // (Only long counts: a relaxed state of its own for a short one, `[a-z]{2,10}`, costs more than
  // the walk it would save.)
  for (uint32_t limit : {64u, 48u, 32u, 24u, 16u}) {
    if (limit >= horizon) continue;
    const uint32_t relaxed = lexer.relaxed_state(state, limit);
    if (relaxed == Lexer::kDead || relaxed == state) continue;
    std::shared_ptr<const MaskEntry> keep;
    const MaskEntry* r = get(lexer, vocab, relaxed, &keep);
    const std::vector<uint32_t>& longer = tokens_of_at_least(vocab, limit);
    auto e = std::make_shared<MaskEntry>();
    auto shared = std::make_shared<SharedMaskEntry>();
    std::vector<uint32_t> deep(longer.size(), 0);
    inner_walk(lexer, trie, 0, state, deep, e->boundaries, limit);
    shared->inner = r->inner();
    for (size_t w = 0; w < longer.size(); ++w)
      shared->inner[w] = (shared->inner[w] & ~longer[w]) | (deep[w] & longer[w]);
    for (const Boundary& b : r->boundaries)
      if (trie_of(vocab, b.node).nodes()[b.node & ~kRestTrieBit].depth < limit) e->boundaries.push_back(b);
    return finish(lexer, vocab, std::move(e), std::move(shared));
  }
  return nullptr;
}

const std::vector<uint32_t>& MaskCache::tokens_of_at_least(const Vocabulary& vocab, uint32_t bytes) const {
  std::lock_guard<std::mutex> lock(admit_mu_);
  auto it = long_tokens_.find(bytes);
  if (it != long_tokens_.end()) return it->second;
  // (down the trie only where a token that long lies below: a few thousand nodes, not the vocabulary)
  std::vector<uint32_t> bits(token_bits::words_for(vocab.vocab_size()), 0);
  const TokenTrie& trie = vocab.trie();
  const auto& nodes = trie.nodes();
  const int32_t* ordered = trie.ordered_tokens().data();
  const uint32_t* before = trie.tokens_before().data();
  for (size_t i = 1; i < nodes.size();) {
    const TrieNode& n = nodes[i];
    if (uint32_t(n.depth) + n.height - 1 < bytes) {
      i += n.subtree_size;
    } else if (n.depth >= bytes) {
      for (uint32_t j = before[i]; j < before[i + n.subtree_size]; ++j) token_bits::set(bits.data(), ordered[j]);
      i += n.subtree_size;
    } else {
      ++i;
    }
  }
  return long_tokens_.emplace(bytes, std::move(bits)).first->second;
}

// Sound because emptiness is decided exactly (Deriver::is_empty) and every flag a walk reads of a
// state moves one way as its language grows: a node alive from lo is alive from a state between
// and from hi, so equal alive counts mean equal alive nodes, equal boundaries mean equal dead
// ends, and the lexer states the mask walker reads at each boundary (the lexeme that ends there,
// the one a closing byte ends) agree in what it reads of them.
std::shared_ptr<const MaskEntry> MaskCache::sandwiched(const Lexer& lexer, const Vocabulary& vocab, uint32_t lo,
                                                       uint32_t hi) const {
  const uint64_t key = uint64_t(lo) << 32 | hi;
  bool known = false, ok = false;
  {
    std::lock_guard<std::mutex> lock(admit_mu_);
    if (auto it = sandwich_memo_.find(key); it != sandwich_memo_.end()) known = true, ok = it->second;
  }
  if (!known) {
    // Every grammar of the vocabulary with these states shares the verdict (their signatures
    // say how they walk), unless a key lexeme takes part: the walks compare key flags that
    // signatures do not hold.
    std::string shared_key;
    if (shared_masks_ && !lexer.has_key(lo)) {
      const uint32_t horizon = past_longest_token(vocab);
      const std::string a = lexer.signature(lo, horizon), b = lexer.signature(hi, horizon);
      if (!a.empty() && !b.empty()) shared_key = std::to_string(a.size()) + ':' + a + b;
    }
    if (auto v = shared_key.empty() ? nullptr : vocab.shared().find_verdict(shared_key)) {
      ok = v->yes;
    } else {
      // (walks that count the nodes they find alive: an entry's own walk counts nothing, and may
      // take a plain slice where the other end's walks the trie)
      ok = alike(lexer, vocab, walked(lexer, vocab, lo), walked(lexer, vocab, hi));
      if (!shared_key.empty()) {
        auto verdict = std::make_shared<SharedVerdict>();
        verdict->yes = ok;
        vocab.shared().insert_verdict(std::move(shared_key), std::move(verdict));
      }
    }
    std::lock_guard<std::mutex> lock(admit_mu_);
    sandwich_memo_.emplace(key, ok);
  }
  if (!ok) return nullptr;
  std::shared_ptr<const MaskEntry> keep;
  const MaskEntry* a = get(lexer, vocab, lo, &keep);
  return keep ? keep : a->shared_from_this();
}

MaskCache::WalkFacts MaskCache::walked(const Lexer& lexer, const Vocabulary& vocab, uint32_t state) const {
  WalkFacts f{0, std::vector<uint32_t>(token_bits::words_for(vocab.vocab_size()), 0), {}};
  std::vector<Boundary> bounds;
  f.alive = walk_from<false, true>(lexer, vocab.trie(), 0, state, f.inner, bounds, 0);
  for (const Boundary& bd : bounds) f.bounds.emplace_back(bd.node, bd.lexer_state);
  std::sort(f.bounds.begin(), f.bounds.end());
  return f;
}

bool MaskCache::alike(const Lexer& lexer, const Vocabulary& vocab, const WalkFacts& x, const WalkFacts& y) {
  if (x.alive != y.alive || x.bounds.size() != y.bounds.size() || x.inner != y.inner) return false;
  auto same = [&](uint32_t s, uint32_t t) {
    if ((s == Lexer::kDead) != (t == Lexer::kDead)) return false;
    if (s == Lexer::kDead) return true;
    const LexState &u = lexer.state(s), &v = lexer.state(t);
    return u.accepting == v.accepting && u.live == v.live && u.end_now == v.end_now && !u.any_ignore_only &&
           !v.any_ignore_only && u.key_finite == v.key_finite && lexer.key_may_finite(s) == lexer.key_may_finite(t) &&
           u.key_closed == v.key_closed && u.key_end_checked == v.key_end_checked;
  };
  for (size_t i = 0; i < x.bounds.size(); ++i) {
    const auto [node, s] = x.bounds[i];
    const uint32_t t = y.bounds[i].second;
    if (node != y.bounds[i].first || !same(s, t)) return false;
    const uint8_t byte = trie_of(vocab, node).nodes()[node & ~kRestTrieBit].byte;
    if (!same(lexer.next(s, byte), lexer.next(t, byte))) return false;
  }
  return true;
}

std::shared_ptr<MaskEntry> MaskCache::resolve(const Lexer& lexer, const Vocabulary& vocab, uint32_t state,
                                              std::shared_ptr<const SharedMaskEntry> shared) {
  auto e = std::make_shared<MaskEntry>();
  e->boundaries.reserve(shared->boundary_nodes.size());
  // The state before each node's byte: replay the bytes above it, which the inner walk proved
  // stay inside the lexeme. Boundaries come in trie order, so consecutive ones share most of
  // their prefix: only the bytes after the common part are replayed.
  std::string_view last;
  std::vector<uint32_t> states{state};  // states[k]: after k bytes of `last`
  for (size_t i = 0; i < shared->boundary_nodes.size(); ++i) {
    const uint32_t tagged = shared->boundary_nodes[i];
    const std::string_view prefix = bytes_above(vocab, tagged);
    const size_t need = prefix.size();
    size_t common = 0;
    const size_t limit = std::min(prefix.size(), last.size());
    while (common < limit && prefix[common] == last[common]) ++common;
    states.resize(common + 1);
    for (size_t k = common; k < need; ++k) states.push_back(lexer.next(states.back(), static_cast<uint8_t>(prefix[k])));
    last = prefix;
    e->boundaries.push_back({tagged, states[need], shared->boundary_parents[i]});
  }
  order_for_runs(lexer, vocab, e->boundaries);
  e->shared = std::move(shared);
  return e;
}

const MaskEntry* MaskCache::get(const Lexer& lexer, const Vocabulary& vocab, uint32_t state,
                                std::shared_ptr<const MaskEntry>* keep) const {
  const uint32_t blk = state >> kSlotBits, idx = state & ((1u << kSlotBits) - 1);
  if (blk >= kSlotBlocks) throw BudgetError("mask cache: lexer state id out of range");
  if (SlotBlock* block = slots_[blk].load(std::memory_order_acquire))
    if (const MaskEntry* hit = block->slot[idx].load(std::memory_order_acquire)) return hit;
  std::shared_ptr<const MaskEntry> e;
  bool borrowed = false;  // e is another state's entry, already counted in the cache's bytes
  // Bounded repetitions count down at every byte; clamping them at the longest
  // token lets a long string's states share one entry while they are far
  // from their bound.
  const uint32_t horizon = past_longest_token(vocab);
  const std::string key = shared_masks_ ? lexer.signature(state, horizon) : std::string();
  auto shared = key.empty() ? nullptr : vocab.shared().find_mask(key);
  if (shared) {
    e = resolve(lexer, vocab, state, std::move(shared));
  } else {
    auto fresh = compute(lexer, vocab, state, &borrowed);
    if (!key.empty()) vocab.shared().insert_mask(key, fresh->shared);
    e = std::move(fresh);
  }
  std::lock_guard<std::mutex> lock(mu_);
  SlotBlock* block = slots_[blk].load(std::memory_order_relaxed);
  if (block) {
    if (const MaskEntry* hit = block->slot[idx].load(std::memory_order_relaxed)) return hit;  // another thread won
  }
  const size_t added = borrowed ? 0 : e->bytes();
  MemoryLimit& process = MemoryLimit::get();
  if (bytes_ + added > std::min(capacity_, process.limit())) {
    *keep = std::move(e);
    return keep->get();
  }
  if (!block) {
    blocks_.push_back(std::make_unique<SlotBlock>());
    block = blocks_.back().get();
    slots_[blk].store(block, std::memory_order_release);
  }
  bytes_ += added;
  process.charge(kMaskMemory, static_cast<int64_t>(added));
  owned_.push_back(e);
  block->slot[idx].store(e.get(), std::memory_order_release);
  return e.get();
}

const MergedRuns* MaskCache::merged_runs(const Lexer& lexer, const Vocabulary& vocab, const MaskEntry& e) const {
  if (const MergedRuns* m = e.merged.load(std::memory_order_acquire)) return m;
  // (one thread builds it: the one whose walk is the kMergeAt-th; the others walk by runs meanwhile.
  // At the first walk, where every class's trie is shared already, merging is a few lookups.)
  const uint32_t walk = e.walks.fetch_add(1, std::memory_order_relaxed) + 1;
  SharedCache* shared = shared_masks_ ? &vocab.shared() : nullptr;
  if (walk != kMergeAt && !(walk == 1 && shared)) return nullptr;
  auto merged = std::make_unique<MergedRuns>();
  if (!merge_runs(lexer, vocab, e.boundaries, shared, walk != kMergeAt, merged.get())) return nullptr;
  const MergedRuns* expected = nullptr;
  if (!e.merged.compare_exchange_strong(expected, merged.get(), std::memory_order_acq_rel)) return expected;
  const MergedRuns* m = merged.release();
  std::lock_guard<std::mutex> lock(mu_);
  bytes_ += m->bytes();
  MemoryLimit::get().charge(kMaskMemory, static_cast<int64_t>(m->bytes()));
  return m;
}

MaskCache::~MaskCache() { MemoryLimit::get().charge(kMaskMemory, -static_cast<int64_t>(bytes_)); }

size_t MaskCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return owned_.size();
}

size_t MaskCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace stencil
