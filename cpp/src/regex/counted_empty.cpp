// The emptiness of a pattern beside a count of characters, `P & C{lo,hi}` (a string's pattern and
// its maxLength), off P's derivatives alone. Deriving the intersection makes an expression per
// (pattern state, count), and proving one empty searched every pair below it: an unanchored
// `[A-Z]{200}` beside a maxLength of 223 holds some 40,000, the first mask inside it took half a
// second. The counts of items of C that P's words made of C's take decide it for every count at
// once: the fewest (empty when it is past hi, not when it is at least lo), and where lo is past
// it (an exact length beside an unanchored pattern), which counts below kCountedItems occur.
#include <algorithm>
#include <deque>
#include <unordered_map>
#include <vector>

#include "regex/derivative.h"

namespace stencil {

namespace {

// Whether x is a few alternatives of byte strings, as the rest of a character begun is (a
// pattern's own concatenation, `.*[A-Z]{200}.*`, is not: read as a count it costs a search).
bool item_rest(const ExprStore& store, ExprId x, int& budget) {
  if (--budget < 0) return false;
  const ExprNode& n = store.node(x);
  switch (n.kind) {
    case ExprKind::Bytes:
    case ExprKind::Empty:
      return true;
    case ExprKind::Concat:
      return item_rest(store, n.a, budget) && item_rest(store, n.b, budget);
    case ExprKind::Or:
      for (uint32_t i = 0; i < n.args_len; ++i)
        if (!item_rest(store, store.args(n)[i], budget)) return false;
      return true;
    default:
      return false;
  }
}

}  // namespace

int Deriver::counted_empty(ExprId e, bool explore) {
  const ExprNode n = store_.node(e);
  if (n.kind != ExprKind::And || n.args_len != 2 || reps_.empty()) return -1;
  // A side `C{lo,hi}` first; then `r C{lo,hi}`, inside an item (a multi-byte character or an
  // escape begun): concatenations nest to the right, r is every part before the count. (Inside
  // an item only where is_empty asks first, not from within a search, which asks every state it
  // reaches: the paths through r cost more there than they save.)
  for (int form = 0; form < (explore ? 1 : 2); ++form)
    for (int side = 0; side < 2; ++side) {
      const ExprId count = store_.args(n)[side], p = store_.args(n)[1 - side];
      ExprId r = ExprStore::kEmpty, reps = count;
      if ((store_.node(count).kind == ExprKind::Concat) != (form == 1)) continue;
      if (form == 1) {
        std::vector<ExprId> parts;
        int budget = 64;
        for (; store_.node(reps).kind == ExprKind::Concat; reps = store_.node(reps).b) {
          parts.push_back(store_.node(reps).a);
          if (!item_rest(store_, parts.back(), budget)) break;
        }
        if (budget < 0 || store_.node(reps).kind == ExprKind::Concat) continue;
        r = parts.size() == 1 ? parts[0] : store_.concat(parts);
      }
      const ExprNode c = store_.node(reps);
      if (c.kind != ExprKind::Repeat || store_.node(c.a).nullable || store_.node(c.a).boolean || store_.node(p).boolean)
        continue;
      // (inside an item, only a count with a long way to go: below that a witness, tried next,
      // is short and answers at once, where the paths through r are new for every state of a
      // pattern with its own count, `(\S+\s+){0,99}`; and a star is no count: a pattern's own
      // `r X*` read so makes p the length's side)
      if (form == 1 && c.min < inside_from_) continue;
      // Where no exploration answers yet, the fewest found forward decides a count that it meets
      // (a length beside a format: the count's minimum at most the pattern's fewest).
      const ItemCounts* known = form == 0 ? item_counts(p, c.a, false) : nullptr;
      if (form == 0 && explore && !known) {
        const uint32_t fewest = fewest_items(p, c.a, c.max);
        if (fewest == kNoItems) return 1;
        if (fewest != kUnknownItems && fewest >= c.min) return 0;
      }
      ItemCounts inside;
      const ItemCounts* t = form == 1 ? counts_inside_item(p, r, c.a, inside)
                            : known   ? known
                                      : item_counts(p, c.a, explore);
      if (!t && form == 1) continue;  // (the other side may be the count)
      if (!t) return -1;
      if (t->fewest == kNoItems || (c.max != kUnbounded && t->fewest > c.max)) return 1;
      if (t->fewest >= c.min) return 0;
      // A minimum past the fewest (an exact length beside an unanchored pattern): the counts
      // below kCountedItems are known one by one.
      const uint32_t top = c.max == kUnbounded ? kCountedItems - 1 : std::min(c.max, kCountedItems - 1);
      for (uint32_t k = c.min; k <= top; ++k)
        if (t->has(k)) return 0;
      if (c.max != kUnbounded && c.max < kCountedItems) return 1;
      return -1;  // (counts past those known: some word there may still fit)
    }
  return -1;
}

template <class Reach, class Dies>
bool Deriver::item_steps(ExprId x, ExprId r, ExprId c, Reach&& reach, Dies&& dies) {
  for (uint8_t b : reps_) {
    const ExprId r2 = derive(r == ExprStore::kEmpty ? c : r, b);
    if (r2 == ExprStore::kNothing) continue;
    const ExprId x2 = derive(x, b);
    if (x2 == ExprStore::kNothing) {
      if (!dies()) return false;
      continue;
    }
    if (store_.nullable(r2)) reach(x2, ExprStore::kEmpty);
    if (r2 != ExprStore::kEmpty) reach(x2, r2);
  }
  return true;
}

uint32_t Deriver::fewest_items(ExprId p, ExprId c, uint32_t most) {
  const uint64_t key = uint64_t(p) << 32 | c;
  if (auto it = fewest_.find(key); it != fewest_.end()) {
    const auto [fewest, asked] = it->second;
    if (fewest == kUnknownItems) return fewest;
    if (fewest != kNoItems) return fewest <= most ? fewest : kNoItems;
    if (asked >= most) return kNoItems;  // (none within a larger `most`: none within this one)
  }
  if (fewest_.size() > (1u << 16)) fewest_.clear();  // a cache: bounded memory
  // Pairs as explore_items makes them: (pattern, rest of the item begun; kEmpty between items),
  // an edge weighing one where it begins an item. Dijkstra with weights 0 and 1: a deque, each
  // pair's distance final when it leaves it.
  std::vector<std::pair<ExprId, ExprId>> pairs{{p, ExprStore::kEmpty}};
  std::vector<uint32_t> dist{0};
  std::unordered_map<uint64_t, uint32_t> index{{uint64_t(p) << 32 | ExprStore::kEmpty, 0}};
  std::deque<uint32_t> queue{0};
  uint32_t answer = kNoItems;
  while (!queue.empty()) {
    const uint32_t v = queue.front();
    queue.pop_front();
    const auto [x, r] = pairs[v];
    const uint32_t d = dist[v];
    if (d > most) break;  // (every pair left is as far: no word within `most`)
    if (r == ExprStore::kEmpty && store_.nullable(x)) {
      answer = d;
      break;
    }
    if (pairs.size() > kFewestPairs) {
      answer = kUnknownItems;
      break;
    }
    burn(1);
    const uint32_t weight = r == ExprStore::kEmpty ? 1 : 0;
    auto reach = [&](ExprId x2, ExprId r2) {
      auto [it, fresh] = index.emplace(uint64_t(x2) << 32 | r2, static_cast<uint32_t>(pairs.size()));
      if (fresh) {
        pairs.emplace_back(x2, r2);
        dist.push_back(kNoItems);
      }
      const uint32_t u = it->second;
      if (d + weight >= dist[u]) return;
      dist[u] = d + weight;
      weight ? queue.push_back(u) : queue.push_front(u);
    };
    item_steps(x, r, c, reach, [] { return true; });
  }
  fewest_[key] = {answer, most};
  return answer;
}

// Inside an item: the patterns at the item's end, reached by r's few strings (by byte class),
// each answered by what explorations between items left (none is begun here: a pattern whose
// exploration gives up would be explored afresh at every character begun). The ends depend on
// (p, r) alone, not on the count: remembered, as every count inside the same character asks.
const Deriver::ItemCounts* Deriver::counts_inside_item(ExprId p, ExprId r, ExprId c, ItemCounts& out) {
  if (!explored_items_.count(c)) return nullptr;  // (nothing to look up: the common case)
  const uint64_t key = uint64_t(p) << 32 | r;
  auto it = item_ends_.find(key);
  if (it == item_ends_.end()) {
    if (item_ends_.size() > (1u << 16)) item_ends_.clear();  // a cache: bounded memory
    it = item_ends_.emplace(key, item_ends(p, r)).first;
  }
  const std::vector<ExprId>& ends = it->second;
  if (ends.size() == 1 && ends[0] == ExprStore::kNothing) return nullptr;  // (item_ends gave up)
  out = ItemCounts();
  for (ExprId x : ends) {
    const ItemCounts* t = item_counts(x, c, false);
    if (!t) return nullptr;
    out.fewest = std::min(out.fewest, t->fewest);
    for (size_t w = 0; w < kCountedItems / 64; ++w) out.below[w] |= t->below[w];
  }
  return &out;
}

// The patterns p reaches by the strings of r, byte class by byte class (none: p dies on all of
// them); {kNothing} where there are too many, or r is long (the rest of a character is a few bytes).
std::vector<ExprId> Deriver::item_ends(ExprId p, ExprId r) {
  constexpr size_t kMaxPaths = 256;
  std::vector<std::pair<ExprId, ExprId>> level{{p, r}};
  std::vector<ExprId> ends;
  for (int depth = 0; !level.empty(); ++depth) {
    std::vector<std::pair<ExprId, ExprId>> next;
    for (const auto& [x, rest] : level) {
      if (store_.nullable(rest)) ends.push_back(x);
      if (depth == 8) return {ExprStore::kNothing};
      for (uint8_t b : reps_) {
        const ExprId rest2 = derive(rest, b);
        if (rest2 == ExprStore::kNothing) continue;
        const ExprId x2 = derive(x, b);
        if (x2 == ExprStore::kNothing) continue;
        next.emplace_back(x2, rest2);
        if (next.size() + ends.size() > kMaxPaths) return {ExprStore::kNothing};
      }
    }
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    level.swap(next);
  }
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  return ends;
}

int Deriver::quick_empty(ExprId e) {
  if (e == ExprStore::kNothing) return 1;
  const ExprNode n = store_.node(e);
  if (n.nullable || !n.boolean) return 0;
  if (auto it = empty_cache_.find(e); it != empty_cache_.end()) return it->second;
  if (depth_ > 200) return -1;
  ++depth_;
  int r = -1;
  if (n.kind == ExprKind::Concat) {
    const int a = quick_empty(n.a), b = a == 1 ? 1 : quick_empty(n.b);
    r = a == 1 || b == 1 ? 1 : (a == 0 && b == 0 ? 0 : -1);
  } else if (n.kind == ExprKind::Or) {
    r = 1;
    for (uint32_t i = 0; i < n.args_len && r != 0; ++i) {
      const int k = quick_empty(store_.args(n)[i]);  // (n a copy: its args read afresh)
      r = k == 0 ? 0 : (k == -1 ? -1 : r);
    }
  } else if (n.kind == ExprKind::Repeat) {
    r = quick_empty(n.a);
  } else if (n.kind == ExprKind::And) {
    r = counted_empty(e, true);
  }
  --depth_;
  if (r >= 0) empty_cache_.emplace(e, r == 1);
  return r;
}

// The pairs (p', r) that words from p reach, r the rest of the item of c begun (ε between items),
// explored once; then, over the edges reversed (an edge that begins an item weighs one), the
// fewest items to a word's end from each pair and which counts below kCountedItems occur,
// remembered for every pair between items: the later counts' patterns are derivatives of this
// one, and find their answer waiting.
const Deriver::ItemCounts* Deriver::item_counts(ExprId p, ExprId c, bool explore, size_t max_pairs, bool for_slack) {
  auto key = [c](ExprId x) { return uint64_t(x) << 32 | c; };
  if (auto it = item_counts_.find(key(p)); it != item_counts_.end())
    return it->second.fewest == kUnknownItems ? nullptr : &it->second;
  if (!explore) return nullptr;
  if (item_counts_.size() > (1u << 17)) item_counts_.clear();  // a cache: bounded memory
  ItemGraph g;
  if (!explore_items(p, c, max_pairs, for_slack, g)) {
    if (!(for_slack && g.dies) && max_pairs == kMaxItemPairs)  // (too many pairs: not explored again)
      item_counts_[key(p)].fewest = kUnknownItems;
    return nullptr;
  }
  explored_items_.insert(c);
  std::vector<ItemCounts> counts = count_items(g);
  const uint32_t slack = slack_of(counts, g.dies);
  for (uint32_t v = 0; v < g.pairs.size(); ++v)
    if (g.pairs[v].second == ExprStore::kEmpty) {
      counts[v].slack = slack;
      item_counts_.emplace(key(g.pairs[v].first), counts[v]);
    }
  return &item_counts_.find(key(p))->second;
}

bool Deriver::explore_items(ExprId p, ExprId c, size_t max_pairs, bool for_slack, ItemGraph& g) {
  g.pairs.assign(1, {p, ExprStore::kEmpty});
  g.into.assign(1, {});
  std::unordered_map<uint64_t, uint32_t> index{{uint64_t(p) << 32 | ExprStore::kEmpty, 0}};
  auto reach = [&](ExprId x, ExprId r, uint32_t from, uint8_t weight) {
    auto [it, fresh] = index.emplace(uint64_t(x) << 32 | r, static_cast<uint32_t>(g.pairs.size()));
    if (fresh) {
      g.pairs.emplace_back(x, r);
      g.into.emplace_back();
    }
    g.into[it->second].emplace_back(from, weight);
  };
  for (size_t h = 0; h < g.pairs.size(); ++h) {
    if (g.pairs.size() > max_pairs) return false;
    const auto [x, r] = g.pairs[h];
    // (a unit per pair: the derivatives it looks up are mostly known, and those made are charged
    // as they are; a unit per byte charged a search's whole work to one exploration)
    burn(1);
    const uint8_t weight = r == ExprStore::kEmpty ? 1 : 0;
    const bool whole = item_steps(
        x, r, c, [&](ExprId x2, ExprId r2) { reach(x2, r2, static_cast<uint32_t>(h), weight); },
        [&] {
          g.dies = true;  // (a string of c's that p refuses: no slack)
          return !for_slack;
        });
    if (!whole) return false;
  }
  return true;
}

std::vector<Deriver::ItemCounts> Deriver::count_items(const ItemGraph& g) const {
  const size_t n = g.pairs.size();
  std::vector<ItemCounts> counts(n);
  std::deque<uint32_t> queue;
  for (uint32_t v = 0; v < n; ++v)
    if (g.pairs[v].second == ExprStore::kEmpty && store_.nullable(g.pairs[v].first)) {
      counts[v].fewest = 0;
      counts[v].below[0] = 1;
      queue.push_back(v);
    }
  // The fewest: a shortest path with weights 0 and 1 (0-1 breadth-first).
  while (!queue.empty()) {
    const uint32_t v = queue.front();
    queue.pop_front();
    for (const auto& [u, weight] : g.into[v]) {
      if (counts[v].fewest + weight >= counts[u].fewest) continue;
      counts[u].fewest = counts[v].fewest + weight;
      weight ? queue.push_back(u) : queue.push_front(u);
    }
  }
  // The counts: the least fixpoint of counts(u) ⊇ counts(v) + weight over edges u -> v. Each
  // set only grows, within kCountedItems bits, so every pair is requeued at most that often.
  constexpr size_t kWords = kCountedItems / 64;
  std::vector<uint8_t> queued(n, 0);
  std::vector<uint32_t> work;
  for (uint32_t v = 0; v < n; ++v)
    if (counts[v].fewest == 0) work.push_back(v), queued[v] = 1;
  while (!work.empty()) {
    const uint32_t v = work.back();
    work.pop_back();
    queued[v] = 0;
    for (const auto& [u, weight] : g.into[v]) {
      bool grew = false;
      for (size_t w = kWords; w-- > 0;) {
        uint64_t add = counts[v].below[w];
        if (weight) add = add << 1 | (w > 0 ? counts[v].below[w - 1] >> 63 : 0);
        if (add & ~counts[u].below[w]) counts[u].below[w] |= add, grew = true;
      }
      if (grew && !queued[u]) work.push_back(u), queued[u] = 1;
    }
  }
  return counts;
}

// The slack over every pair reached, between items or inside one: each pair from p is among
// them, so it bounds theirs too.
uint32_t Deriver::slack_of(const std::vector<ItemCounts>& counts, bool dies) {
  if (dies) return kNoSlack;
  uint32_t slack = 0;
  for (const ItemCounts& t : counts) {
    bool closed = t.fewest < kCountedItems;
    for (uint32_t k = t.fewest; closed && k < kCountedItems; ++k) closed = t.has(k);
    if (!closed) return kNoSlack;
    slack = std::max(slack, t.fewest);
  }
  return slack;
}

uint32_t Deriver::item_slack(ExprId p, ExprId c) {
  // A light exploration, which stops at the first string p refuses: asked of every counted
  // string's pattern, most of which have no slack (anchored ones die on some character) and some
  // of which have many pairs (a count of 200 words). What it finds stays for counted_empty.
  constexpr size_t kSlackPairs = 512;
  const uint64_t key = uint64_t(p) << 32 | c;
  if (auto it = item_counts_.find(key); it != item_counts_.end())
    return it->second.fewest == kUnknownItems ? kNoSlack : it->second.slack;
  if (no_slack_.count(key)) return kNoSlack;
  const ItemCounts* t = item_counts(p, c, true, kSlackPairs, true);
  if (t) return t->slack;
  if (no_slack_.size() > (1u << 16)) no_slack_.clear();  // a cache: bounded memory
  no_slack_.insert(key);
  return kNoSlack;
}

uint32_t Deriver::alive_slack(ExprId p, ExprId c, size_t max_pairs) {
  const uint64_t key = uint64_t(p) << 32 | c;
  if (auto it = alive_slack_.find(key); it != alive_slack_.end()) return it->second;
  if (alive_slack_.size() > (1u << 16)) alive_slack_.clear();  // a cache: bounded memory
  // (the exploration goes on past strings p refuses, and their deaths do not count: slack_of
  // still needs every pair explored, each alive, to take every count from its fewest up)
  ItemGraph g;
  if (!explore_items(p, c, max_pairs, false, g)) return alive_slack_[key] = kNoSlack;
  const uint32_t slack = slack_of(count_items(g), false);
  for (const auto& [x, r] : g.pairs)
    if (r == ExprStore::kEmpty) alive_slack_.emplace(uint64_t(x) << 32 | c, slack);
  return slack;
}

}  // namespace stencil
