#include "regex/derivative.h"

#include <deque>
#include <unordered_set>

#include "stencil/errors.h"

namespace stencil {

void Deriver::burn(uint64_t amount) {
  if (fuel_ < amount)
    throw BudgetError("regular expression work budget exhausted while computing derivatives "
                      "(the pattern is too complex; raise the lexer fuel limit to allow it)");
  fuel_ -= amount;
}

ExprId Deriver::derive(ExprId e, uint8_t b) {
  if (e <= ExprStore::kEmpty) return ExprStore::kNothing;
  if (e == ExprStore::kAnyByteStar) return e;
  uint64_t key = (uint64_t(e) << 8) | b;
  if (const uint32_t* hit = cache_.find(key)) return *hit;
  burn(1);
  // Nesting (not length) drives recursion; a bound keeps the stack safe.
  struct DepthGuard {
    int& d;
    ~DepthGuard() { --d; }
  } guard{++depth_};
  if (depth_ > 20000) throw BudgetError("regular expression nests too deeply to compute its derivatives");
  ExprId r = derive_uncached(e, b);
  cache_.put(key, r);
  return r;
}

ExprId Deriver::derive_uncached(ExprId e, uint8_t b) {
  const ExprNode n = store_.node(e);
  switch (n.kind) {
    case ExprKind::Nothing:
    case ExprKind::Empty: return ExprStore::kNothing;
    case ExprKind::Bytes: return store_.byteset(n.a).has(b) ? ExprStore::kEmpty : ExprStore::kNothing;
    case ExprKind::Concat: {
      ExprId head = store_.concat(derive(n.a, b), n.b);
      if (!store_.nullable(n.a)) return head;
      return store_.alt({head, derive(n.b, b)});
    }
    case ExprKind::Or:
    case ExprKind::And: {
      // The children are copied first (deriving them may grow the store and move its args),
      // into a buffer kept per recursion depth: no allocation once warm.
      if (scratch_.size() <= static_cast<size_t>(depth_)) scratch_.resize(depth_ + 1);
      std::vector<ExprId>& buf = scratch_[depth_];
      buf.assign(store_.args(n), store_.args(n) + n.args_len);
      burn(buf.size());
      // Children the byte cannot enter are left out underived: in a large alternation of keys
      // or enum values most are, and deriving (and caching) each would cost more than the test.
      constexpr size_t kFilterFrom = 8;
      const bool filter = n.kind == ExprKind::Or && buf.size() >= kFilterFrom;
      for (ExprId& k : buf) k = filter && !first_bytes(k).has(b) ? ExprStore::kNothing : derive(k, b);
      return n.kind == ExprKind::Or ? store_.alt(buf) : store_.conj(buf);
    }
    case ExprKind::Not: return store_.negate(derive(n.a, b));
    case ExprKind::Repeat: {
      uint32_t min = n.min > 0 ? n.min - 1 : 0;
      uint32_t max = n.max == kUnbounded ? kUnbounded : n.max - 1;
      return store_.concat(derive(n.a, b), store_.repeat(n.a, min, max));
    }
  }
  return ExprStore::kNothing;
}

ByteSet Deriver::first_bytes(ExprId e, int depth) {
  if (const uint32_t* hit = first_index_.find(e)) return firsts_[*hit];
  ByteSet all;
  all.add_range(0, 255);
  if (depth > 200) return all;  // deep nesting: any byte, uncached (sound, rare)
  const ExprNode n = store_.node(e);
  ByteSet out;
  switch (n.kind) {
    case ExprKind::Nothing:
    case ExprKind::Empty: break;
    case ExprKind::Bytes: out = store_.byteset(n.a); break;
    case ExprKind::Concat:
      out = first_bytes(n.a, depth + 1);
      if (store_.nullable(n.a)) out = out | first_bytes(n.b, depth + 1);
      break;
    case ExprKind::Or:
    case ExprKind::And: {
      // Copied: the recursion may grow firsts_, and the store's args stay put (no new nodes).
      const ExprId* args = store_.args(n);
      out = n.kind == ExprKind::And ? all : ByteSet{};
      for (uint32_t i = 0; i < n.args_len; ++i) {
        const ByteSet f = first_bytes(args[i], depth + 1);
        out = n.kind == ExprKind::And ? out & f : out | f;
      }
      break;
    }
    case ExprKind::Not: out = all; break;
    case ExprKind::Repeat:
      if (n.max > 0) out = first_bytes(n.a, depth + 1);
      break;
  }
  first_index_.put(e, static_cast<uint32_t>(firsts_.size()));
  firsts_.push_back(out);
  return out;
}

bool Deriver::is_empty(ExprId e) {
  if (e == ExprStore::kNothing) return true;
  const ExprNode& n = store_.node(e);
  if (n.nullable) return false;
  if (!n.boolean) return false;  // simplification leaves no structurally empty non-∅ term
  auto it = empty_cache_.find(e);
  if (it != empty_cache_.end()) return it->second;
  // Breadth-first search for a nullable derivative.
  std::unordered_set<ExprId> seen{e};
  std::deque<ExprId> queue{e};
  bool empty = true;
  while (!queue.empty() && empty) {
    ExprId cur = queue.front();
    queue.pop_front();
    for (uint8_t rep : reps_) {
      ExprId d = derive(cur, rep);
      if (d == ExprStore::kNothing || !seen.insert(d).second) continue;
      if (store_.nullable(d) || !store_.node(d).boolean) {
        empty = false;
        break;
      }
      burn(1);
      queue.push_back(d);
    }
  }
  empty_cache_.emplace(e, empty);
  return empty;
}

bool Deriver::can_extend(ExprId e) {
  const ExprNode& n = store_.node(e);
  if (e <= ExprStore::kEmpty) return false;
  if (!n.boolean) return true;
  for (uint8_t rep : reps_)
    if (!is_empty(derive(e, rep))) return true;
  return false;
}

}  // namespace stencil
