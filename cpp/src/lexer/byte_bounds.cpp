// Lexer::pair_bytes: bounds on the bytes a lexeme still needs, read off its expression's structure.
// Budget-aware masks bound the cost after a token by them (CompletionTables::pairs), where a
// search over the lazy automaton would make lexer states (a uri format has about 200 of them).
//
// For an expression e: shortest(e) >= the length of its shortest word, and ceiling(e) >= the
// shortest word of every derivative of e whose language is not empty (every state a walk from e
// reaches, e itself included):
//   bytes:        shortest 1, ceiling 1
//   a b:          shortest(a) + shortest(b); max(ceiling(a) + shortest(b), ceiling(b)): a
//                 derivative is d(a) b, or a derivative of b once a word of a is read
//   a | b:        min of the shortest, max of the ceilings
//   a{lo,hi}:     lo * shortest(a); ceiling(a) + (lo - 1) * shortest(a): the item in progress,
//                 then at most lo - 1 items still required
//   a & b, ~a:    unknown (the languages' interplay decides)
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
uint64_t pack(uint64_t shortest, uint64_t ceiling) { return shortest << 32 | ceiling; }
}  // namespace

std::vector<Lexer::PairBytes> Lexer::pair_bytes(uint32_t s) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Pairs& p = state_pairs_[s];
  std::vector<PairBytes> out;
  for (size_t i = 0; i + 1 < p.size(); i += 2) {
    const uint64_t b = expr_bytes(p[i + 1], 0);
    out.push_back({p[i], static_cast<uint32_t>(b >> 32), static_cast<uint32_t>(b & 0xFFFFFFFFu)});
  }
  return out;
}

uint64_t Lexer::expr_bytes(ExprId e, int depth) const {
  if (depth > kMaxDepth) return pack(kNone, kNone);
  if (auto it = expr_bytes_.find(e); it != expr_bytes_.end()) return it->second;
  const ExprNode& n = store_.node(e);
  uint64_t shortest = kNone, ceiling = kNone;
  auto of = [&](ExprId x, uint64_t* sh, uint64_t* ce) {
    const uint64_t b = expr_bytes(x, depth + 1);
    *sh = b >> 32;
    *ce = b & 0xFFFFFFFFu;
  };
  switch (n.kind) {
    case ExprKind::Nothing:  // no word: nothing to bound
    case ExprKind::Empty:
      shortest = n.kind == ExprKind::Empty ? 0 : kNone;
      ceiling = 0;
      break;
    case ExprKind::Bytes:
      shortest = ceiling = 1;
      break;
    case ExprKind::Concat: {
      uint64_t sa, ca, sb, cb;
      of(n.a, &sa, &ca);
      of(n.b, &sb, &cb);
      shortest = sum(sa, sb);
      ceiling = std::max(sum(ca, sb), cb);
      break;
    }
    case ExprKind::Or:
      ceiling = 0;
      for (uint32_t i = 0; i < n.args_len; ++i) {
        uint64_t sk, ck;
        of(store_.args(n)[i], &sk, &ck);
        shortest = std::min(shortest, sk);
        ceiling = std::max(ceiling, ck);
      }
      break;
    case ExprKind::Repeat: {
      uint64_t sa, ca;
      of(n.a, &sa, &ca);
      const uint64_t more = n.min == 0 ? 0 : (sa >= kNone ? kNone : std::min<uint64_t>(sa * (n.min - 1), kNone));
      shortest = n.min == 0 ? 0 : sum(sa, more);
      ceiling = sum(ca, more);
      break;
    }
    case ExprKind::Number: {
      bool exact = false;
      const int d = number_min_accept_bytes(store_.number_state(n.a), kNumberStates, &exact);
      if (exact && d >= 0) shortest = static_cast<uint64_t>(d);
      break;
    }
    default:  // And, Not
      break;
  }
  const uint64_t b = pack(std::min(shortest, kNone), std::min(ceiling, kNone));
  expr_bytes_.emplace(e, b);
  return b;
}

}  // namespace stencil
