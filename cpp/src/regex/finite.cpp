#include "regex/finite.h"

#include "support/heap_size.h"

namespace stencil {

bool FiniteLanguages::finite(const ExprStore& store, ExprId e) {
  auto known = finite_.find(e);
  if (known != finite_.end()) return known->second;
  const ExprNode& n = store.node(e);
  bool out = true;
  switch (n.kind) {
    case ExprKind::Nothing:
    case ExprKind::Empty:
    case ExprKind::Bytes:
      break;
    case ExprKind::Concat:
      out = finite(store, n.a) && finite(store, n.b);
      break;
    case ExprKind::Or:
      for (uint32_t k = 0; k < n.args_len && out; ++k) out = finite(store, store.args(n)[k]);
      break;
    case ExprKind::And:
      out = false;
      for (uint32_t k = 0; k < n.args_len && !out; ++k) out = finite(store, store.args(n)[k]);
      break;
    case ExprKind::Repeat:
      out = n.max != kUnbounded ? finite(store, n.a) : (n.a == ExprStore::kEmpty || n.a == ExprStore::kNothing);
      break;
    default:  // Not, Number
      out = false;
  }
  finite_.emplace(e, out);
  return out;
}

bool FiniteLanguages::may_reach_finite(const ExprStore& store, ExprId e) {
  if (e == ExprStore::kNothing || e == ExprStore::kEmpty) return false;
  return finite(store, e) || (proper(store, e, 0) & kSome);
}

// Derivatives as Deriver makes them (regex/derivative.cpp), by a non-empty string w:
// - Concat(a, b): d_w(a)·b, beside d_v(b) for each split w = u·v with u in a's language. Where
//   d_w(a) is alive, the whole is finite only if d_w(a) and b are; where it is dead, what is
//   left are d_v(b) with v non-empty (u = w would leave a alive).
// - Or: the alive children's derivatives, finite when all are; And: theirs, finite when one is
//   (ε when one is ε: ExprStore::conj), so finite and not ε only where a child's is.
// - an unbounded count of a non-empty item: d(a)·a{k,}, never finite, never ε.
// - Not(a) with no And/Not inside a: Not(d(a)) (or ~∅, ∅), never finite.
// Anything else (a bounded count of an infinite item, a complement over a complement, a number
// lexeme) may: both bits. Deep structures too (no unbounded recursion).
uint8_t FiniteLanguages::proper(const ExprStore& store, ExprId e, int depth) {
  constexpr uint8_t kMay = kLive | kSome;
  if (e == ExprStore::kNothing || e == ExprStore::kEmpty) return 0;
  // a finite e's derivatives are finite; a byte set's proper ones are ε
  if (finite(store, e)) return store.node(e).kind == ExprKind::Bytes ? kLive : kMay;
  if (depth > 200) return kMay;
  auto known = proper_.find(e);
  if (known != proper_.end()) return known->second;
  const ExprNode& n = store.node(e);
  uint8_t out = kMay;
  switch (n.kind) {
    case ExprKind::Concat: {
      const uint8_t head = finite(store, n.b) && (proper(store, n.a, depth + 1) & kLive) ? kMay : 0;
      out = head | proper(store, n.b, depth + 1);
      break;
    }
    case ExprKind::Or:
    case ExprKind::And: {
      out = 0;
      for (uint32_t k = 0; k < n.args_len && out != kMay; ++k) out |= proper(store, store.args(n)[k], depth + 1);
      break;
    }
    case ExprKind::Repeat:
      out = n.max == kUnbounded ? 0 : kMay;
      break;
    case ExprKind::Not:
      out = store.node(n.a).boolean ? kMay : 0;
      break;
    default:
      break;
  }
  proper_.emplace(e, out);
  return out;
}

size_t FiniteLanguages::memory_bytes() const { return heap::nodes(finite_) + heap::nodes(proper_); }

}  // namespace stencil
