// Lexer::pair_bytes: bounds on the bytes a lexeme still needs, read off its expression's structure.
// Budget-aware masks bound the cost after a token by them (FinishTables::pairs), where a
// search over the lazy automaton would make lexer states (a uri format has about 200 of them).
//
// For an expression e: shortest(e) >= the length of its shortest word, ceiling(e) >= the
// shortest word of every derivative of e whose language is not empty (every state a walk from e
// reaches, e itself included), longest(e) >= the length of its longest word. A derivative's
// words are no longer than e's, so ceiling(e) <= longest(e) always, and where a language is not
// empty its shortest word is at most its longest (fit(e) = min(shortest, longest) below, usable
// only where the language is known not to be empty: inside a ceiling).
//   bytes:        shortest 1, ceiling 1, longest 1
//   a b:          shortest(a) + shortest(b); max(ceiling(a) + fit(b), ceiling(b)): a derivative
//                 is d(a) b, or a derivative of b once a word of a is read; longest(a) + longest(b)
//   a | b:        min of the shortest, max of the ceilings and of the longest
//   a{lo,hi}:     lo * shortest(a); ceiling(a) + (lo - 1) * fit(a): the item in progress, then
//                 at most lo - 1 items still required; hi * longest(a)
//   a & b:        shortest unknown (the languages' interplay decides, the intersection may be
//                 empty); longest and ceiling: the least longest of the operands (a pattern
//                 beside a maxLength: the length's)
//   ~a:           longest unknown; shortest and ceiling: longest(a) + 1 (a derivative ~d(a)
//                 holds every word longer than d(a)'s longest)
//   number range: the number search's shortest when it ends within a few hundred states; no
//                 ceiling (its states never repeat)
#include <algorithm>

#include "lexer/lexer.h"

namespace stencil {

namespace {
constexpr uint64_t kNone = Lexer::kUnknown;  // no bound known
constexpr int kMaxDepth = 2000;
constexpr size_t kNumberStates = 256;
uint64_t sum(uint64_t a, uint64_t b) { return std::min(a + b, kNone); }
uint64_t times(uint64_t a, uint64_t n) { return a == 0 || n == 0 ? 0 : (a >= kNone / n ? kNone : a * n); }
// A bound on the shortest word where the language is known not to be empty.
uint64_t fit(const Lexer::ExprBytes& x) { return std::min(x.shortest, x.longest); }
}  // namespace

std::vector<Lexer::PairBytes> Lexer::pair_bytes(uint32_t s) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Pairs& p = state_pairs_[s];
  std::vector<PairBytes> out;
  for (size_t i = 0; i + 1 < p.size(); i += 2) {
    const ExprBytes b = expr_bytes(p[i + 1], 0);
    out.push_back({p[i], b.shortest, b.ceiling});
  }
  return out;
}

Lexer::ExprBytes Lexer::expr_bytes(ExprId e, int depth) const {
  if (depth > kMaxDepth) return {};
  if (auto it = expr_bytes_.find(e); it != expr_bytes_.end()) return it->second;
  const ExprNode& n = store_.node(e);
  uint64_t shortest = kNone, ceiling = kNone, longest = kNone;
  auto of = [&](ExprId x) { return expr_bytes(x, depth + 1); };
  switch (n.kind) {
    case ExprKind::Nothing:  // no word: nothing to bound
    case ExprKind::Empty:
      shortest = n.kind == ExprKind::Empty ? 0 : kNone;
      ceiling = longest = 0;
      break;
    case ExprKind::Bytes:
      shortest = ceiling = longest = 1;
      break;
    case ExprKind::Concat: {
      const ExprBytes a = of(n.a), b = of(n.b);
      shortest = sum(a.shortest, b.shortest);
      ceiling = std::max<uint64_t>(sum(a.ceiling, fit(b)), b.ceiling);
      longest = sum(a.longest, b.longest);
      break;
    }
    case ExprKind::Or:
    case ExprKind::And: {
      const bool both = n.kind == ExprKind::And;
      ceiling = longest = both ? kNone : 0;
      for (uint32_t i = 0; i < n.args_len; ++i) {
        const ExprBytes k = of(store_.args(n)[i]);
        if (both) {
          longest = std::min<uint64_t>(longest, k.longest);
        } else {
          shortest = std::min<uint64_t>(shortest, k.shortest);
          ceiling = std::max<uint64_t>(ceiling, k.ceiling);
          longest = std::max<uint64_t>(longest, k.longest);
        }
      }
      break;
    }
    case ExprKind::Not: {
      const ExprBytes a = of(n.a);
      shortest = ceiling = sum(a.longest, 1);
      break;
    }
    case ExprKind::Repeat: {
      const ExprBytes a = of(n.a);
      const uint64_t lo = n.min == 0 ? 0 : n.min - 1;  // items still required after the first
      shortest = n.min == 0 ? 0 : sum(a.shortest, times(a.shortest, lo));
      ceiling = sum(a.ceiling, times(fit(a), lo));
      longest = n.max == kUnbounded ? (a.longest == 0 ? 0 : kNone) : times(a.longest, n.max);
      break;
    }
    case ExprKind::Number: {
      bool exact = false;
      const int d = number_min_accept_bytes(store_.number_state(n.a), kNumberStates, &exact);
      if (exact && d >= 0) shortest = static_cast<uint64_t>(d);
      break;
    }
  }
  // Every non-empty derivative's shortest word is at most its longest, at most e's longest.
  ceiling = std::min(ceiling, longest);
  const ExprBytes b{static_cast<uint32_t>(std::min(shortest, kNone)), static_cast<uint32_t>(ceiling),
                    static_cast<uint32_t>(std::min(longest, kNone))};
  expr_bytes_.emplace(e, b);
  return b;
}

}  // namespace stencil
