// Brzozowski derivatives over bytes, with a cache, a work limit ("fuel")
// and an emptiness check for expressions that use And/Not.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "regex/expr.h"
#include "support/flat_map.h"

namespace stencil {

class Deriver {
 public:
  explicit Deriver(ExprStore& store, uint64_t fuel = 50'000'000) : store_(store), fuel_(fuel) {}

  // The derivative of e by byte b: the strings w such that b·w is in e.
  ExprId derive(ExprId e, uint8_t b);
  // Whether e's language is empty. Exact for every expression: structural
  // when e has no And/Not, a bounded search over derivatives otherwise.
  bool is_empty(ExprId e);
  // Whether e's language holds a non-empty string.
  bool can_extend(ExprId e);
  // Bytes that stand for every byte class (one per class), set by the lexer.
  void set_class_representatives(std::vector<uint8_t> reps) { reps_ = std::move(reps); }
  uint64_t fuel_left() const { return fuel_; }
  size_t memory_bytes() const;  // the caches
  size_t cache_entries() const { return cache_.size(); }
  // A cap on the derivative cache (entries): past it the cache starts afresh. It only saves
  // work, and a large alternation (an enum of many values) fills it with the derivatives of
  // every member at every state.
  void set_cache_cap(size_t entries) { cache_cap_ = entries; }
  // Inside an item begun, emptiness beside a count is read off the item counts only from this
  // minimum up (below it a witness is short and cheaper); tests lower it to reach small counts.
  void set_inside_from(uint32_t items) { inside_from_ = items; }
  // Whether the fuel ran out once: work limits are over the deriver's life, so it stays out.
  bool exhausted() const { return exhausted_; }
  // The most items of c that p, or any derivative of p by a string of c's, still needs to end a
  // word made of c's, where each of them takes every count of items from its fewest up to
  // kCountedItems: then k items in all fit every string of at most k - slack items that p is
  // read by. kNoSlack otherwise (a string of c's that p refuses, one after which p cannot end,
  // a count skipped, or too many pairs).
  // An unanchored `[0-9a-f]+` over a string's characters: 1.
  static constexpr uint32_t kNoSlack = 0xFFFFFFFFu, kCountedItems = 256;
  uint32_t item_slack(ExprId p, ExprId c);
  // item_slack where strings of c's may kill p: the most items that p, or any derivative of p by
  // a string of c's that leaves it alive, still needs to end a word, each taking every count from
  // its fewest up to kCountedItems (`(\S+\s+){0,9}\S+`, which too many words or a leading space
  // kill: 1). A string of at most k - slack items that leaves p alive then fits in k.
  // (a count of 50 words explores about 1,400 pairs, once: its result is kept for each pair at an
  // item's end, the states its later words reach, whose own slack is at most it; kNoSlack past
  // max_pairs, kept too)
  static constexpr size_t kSlackPairs = 4096;
  uint32_t alive_slack(ExprId p, ExprId c, size_t max_pairs = kSlackPairs);
  // The fewest items of c in a word of p, found forward (a 0-1 breadth-first search over the
  // pairs of explore_items that stops at the first word's end): it reads only the pairs nearer
  // than the answer, where item_counts reads every pair p reaches, once (an e-mail's: 350 pairs
  // of its IPv6 literal, 6 ms, for an answer of three characters). kNoItems where no word has at
  // most `most` items, kUnknownItems where it would read more than kFewestPairs.
  static constexpr size_t kFewestPairs = 64;
  uint32_t fewest_items(ExprId p, ExprId c, uint32_t most);
  static constexpr uint32_t kNoItems = 0xFFFFFFFFu;
  static constexpr uint32_t kUnknownItems = 0xFFFFFFFEu;  // (an ItemCounts' fewest too: gave up)
  // False when e starts with a byte set (literal text does) that lacks b: its derivative is empty.
  bool may_start(ExprId e, uint8_t b) const {
    const ExprNode& n = store_.node(e);
    if (n.kind == ExprKind::Bytes) return store_.byteset(n.a).has(b);
    if (n.kind != ExprKind::Concat) return true;
    const ExprNode& head = store_.node(n.a);
    return head.kind != ExprKind::Bytes || store_.byteset(head.a).has(b);
  }

 private:
  ExprId derive_uncached(ExprId e, uint8_t b);
  bool search_empty(ExprId e);  // is_empty's search over derivatives
  void burn(uint64_t amount);
  // A shortest string of e's language read off its structure, when e has no And/Not: the
  // candidate an intersection's emptiness test tries before searching.
  bool witness(ExprId e, std::string& out);
  // A pattern beside a count of characters (counted_empty.cpp): whether the intersection e of a
  // pattern and a count is empty (1), not (0), or not decided so (-1); quick_empty, the same for
  // any e through its alternatives and concatenations (no search); item_counts, the counts of
  // items of c that the words of p made of c's take (null: gave up, or not explored).
  // (`explore`: P's pairs explored where not yet; else only what earlier explorations left)
  int counted_empty(ExprId e, bool explore);
  int quick_empty(ExprId e);
  struct ItemCounts {
    uint32_t fewest = kNoItems;  // the fewest (any size; kNoItems: no word)
    uint32_t slack = kNoSlack;   // at most item_slack's (that of the exploration that found it)
    uint64_t below[kCountedItems / 64] = {};  // exactly which counts under kCountedItems occur
    bool has(uint32_t k) const { return k < kCountedItems && (below[k / 64] >> (k % 64) & 1); }
  };
  // (at most max_pairs pairs; for_slack: none where some string of c's kills p, and nothing
  // kept of an exploration cut short)
  static constexpr size_t kMaxItemPairs = 20000;
  const ItemCounts* item_counts(ExprId p, ExprId c, bool explore, size_t max_pairs = kMaxItemPairs,
                                bool for_slack = false);
  // The same from inside an item, r the rest of it begun, off what item_counts left (null where
  // it left nothing); `out` holds the answer.
  const ItemCounts* counts_inside_item(ExprId p, ExprId r, ExprId c, ItemCounts& out);
  std::vector<ExprId> item_ends(ExprId p, ExprId r);
  // item_counts' steps: the pairs (p', rest of an item) that words from p reach, with the edges
  // into each (weight 1: the edge begins an item); false where it stopped (more than max_pairs,
  // or for_slack and a string of c's that p refuses, which `dies` says either way).
  struct ItemGraph {
    std::vector<std::pair<ExprId, ExprId>> pairs;
    std::vector<std::vector<std::pair<uint32_t, uint8_t>>> into;  // into[v]: (u, weight) of u -> v
    bool dies = false;
  };
  bool explore_items(ExprId p, ExprId c, size_t max_pairs, bool for_slack, ItemGraph& g);
  // The steps of both explorations (fewest_items' and explore_items'): from the pair (x, r) by
  // each byte class, reach(x', kEmpty) where the item may end there and reach(x', r') where it
  // goes on (an item of c begun where r is kEmpty); dies() where the item takes the byte and x
  // refuses it, false from it stops them (then so does item_steps).
  template <class Reach, class Dies>
  bool item_steps(ExprId x, ExprId r, ExprId c, Reach&& reach, Dies&& dies);
  // Then over the edges reversed: the fewest items to a word's end and the counts that occur.
  std::vector<ItemCounts> count_items(const ItemGraph& g) const;
  static uint32_t slack_of(const std::vector<ItemCounts>& counts, bool dies);

  ExprStore& store_;
  uint64_t fuel_;
  uint32_t ticks_ = 0;  // burns since the last look at the clock
  bool exhausted_ = false;
  int depth_ = 0;
  FlatMap64 cache_;  // (expr << 8 | byte) -> derivative
  size_t cache_cap_ = ~size_t(0);
  std::deque<std::vector<ExprId>> scratch_;  // per recursion depth: Or/And children, reused
  std::unordered_map<ExprId, bool> empty_cache_;
  std::unordered_map<ExprId, std::pair<bool, std::string>> witness_cache_;
  std::unordered_map<uint64_t, ItemCounts> item_counts_;   // (p << 32 | c) -> item_counts
  std::unordered_map<uint64_t, std::vector<ExprId>> item_ends_;  // (p << 32 | r) -> item_ends
  // (p << 32 | c) -> fewest_items' answer and the `most` it was asked under (kNoItems: none
  // within it; kUnknownItems: gave up, not tried again)
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> fewest_;
  uint32_t inside_from_ = 8;  // set_inside_from
  std::unordered_set<ExprId> explored_items_;  // the items c of an item_counts explored
  std::unordered_set<uint64_t> no_slack_;  // (p << 32 | c): item_slack's light exploration said none
  std::unordered_map<uint64_t, uint32_t> alive_slack_;  // (p << 32 | c) -> alive_slack
  std::vector<uint8_t> reps_;
};

}  // namespace stencil
