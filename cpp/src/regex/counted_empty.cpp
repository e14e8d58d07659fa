// The emptiness of a pattern beside a count of characters, `P & C{lo,hi}` (a string's pattern and
// its maxLength), off P's derivatives alone. Deriving the intersection makes an expression per
// (pattern state, count), and proving one empty searched every pair below it: an unanchored
// `[A-Z]{200}` beside a maxLength of 223 holds some 40,000, the first mask inside it took half a
// second. The fewest items of C in a word of P that is a string of C's decide it for every count
// at once: empty exactly when none is at most hi; not empty when that fewest is at least lo.
#include <deque>
#include <unordered_map>
#include <vector>

#include "regex/derivative.h"

namespace stencil {

int Deriver::counted_empty(ExprId e, bool explore) {
  const ExprNode n = store_.node(e);
  if (n.kind != ExprKind::And || n.args_len != 2 || reps_.empty()) return -1;
  for (int side = 0; side < 2; ++side) {
    const ExprId count = store_.args(n)[side], p = store_.args(n)[1 - side];
    const ExprNode c = store_.node(count);
    if (c.kind != ExprKind::Repeat || store_.node(c.a).nullable || store_.node(c.a).boolean || store_.node(p).boolean)
      continue;
    const uint32_t t = fewest_items(p, c.a, explore);
    if (t == kUnknownItems) return -1;
    if (t == kNoItems || (c.max != kUnbounded && t > c.max)) return 1;
    if (t >= c.min) return 0;
    return -1;  // (a minimum past the fewest: some word between may still fit)
  }
  return -1;
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
// explored once; then the fewest items to a word's end from each, over the edges reversed (an
// edge that begins an item weighs one), remembered for every pair between items: the later
// counts' patterns are derivatives of this one, and find their answer waiting.
uint32_t Deriver::fewest_items(ExprId p, ExprId c, bool explore) {
  constexpr size_t kMaxPairs = 20000;
  auto key = [c](ExprId x) { return uint64_t(x) << 32 | c; };
  if (auto it = fewest_items_.find(key(p)); it != fewest_items_.end()) return it->second;
  if (!explore) return kUnknownItems;
  if (fewest_items_.size() > (1u << 18)) fewest_items_.clear();  // a cache: bounded memory
  std::vector<std::pair<ExprId, ExprId>> pairs{{p, ExprStore::kEmpty}};
  std::unordered_map<uint64_t, uint32_t> index{{uint64_t(p) << 32 | ExprStore::kEmpty, 0}};
  std::vector<std::vector<std::pair<uint32_t, uint8_t>>> into(1);  // into[v]: (u, weight) of u -> v
  auto reach = [&](ExprId x, ExprId r, uint32_t from, uint8_t weight) {
    auto [it, fresh] = index.emplace(uint64_t(x) << 32 | r, static_cast<uint32_t>(pairs.size()));
    if (fresh) {
      pairs.emplace_back(x, r);
      into.emplace_back();
    }
    into[it->second].emplace_back(from, weight);
  };
  for (size_t h = 0; h < pairs.size(); ++h) {
    if (pairs.size() > kMaxPairs) return fewest_items_[key(p)] = kUnknownItems;  // (not explored again)
    const auto [x, r] = pairs[h];
    // (a unit per pair: the derivatives it looks up are mostly known, and those made are charged
    // as they are; a unit per byte charged a search's whole work to one exploration)
    burn(1);
    for (uint8_t b : reps_) {
      const ExprId x2 = derive(x, b);
      if (x2 == ExprStore::kNothing) continue;
      const ExprId r2 = derive(r == ExprStore::kEmpty ? c : r, b);
      if (r2 == ExprStore::kNothing) continue;
      const uint8_t weight = r == ExprStore::kEmpty ? 1 : 0;
      if (store_.nullable(r2)) reach(x2, ExprStore::kEmpty, static_cast<uint32_t>(h), weight);
      if (r2 != ExprStore::kEmpty) reach(x2, r2, static_cast<uint32_t>(h), weight);
    }
  }
  std::vector<uint32_t> fewest(pairs.size(), kNoItems);
  std::deque<uint32_t> queue;
  for (uint32_t v = 0; v < pairs.size(); ++v)
    if (pairs[v].second == ExprStore::kEmpty && store_.nullable(pairs[v].first)) {
      fewest[v] = 0;
      queue.push_back(v);
    }
  while (!queue.empty()) {
    const uint32_t v = queue.front();
    queue.pop_front();
    for (const auto& [u, weight] : into[v]) {
      if (fewest[v] + weight >= fewest[u]) continue;
      fewest[u] = fewest[v] + weight;
      weight ? queue.push_back(u) : queue.push_front(u);
    }
  }
  for (uint32_t v = 0; v < pairs.size(); ++v)
    if (pairs[v].second == ExprStore::kEmpty) fewest_items_.emplace(key(pairs[v].first), fewest[v]);
  return fewest[0];
}

}  // namespace stencil
