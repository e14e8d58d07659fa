// Finite languages read off an expression's structure: whether an expression's language is
// finite (syntactically: a complement or an unbounded count of a non-empty item counts as
// infinite), and a proof that no derivative of it is. The lexer asks the second of every key
// lexeme (Lexer::may_become_finite: may the keys written before it exhaust it?); a search over
// derivatives answers it too, but a key of any string beside a counted pattern (`"(S* & ~P{1,255})"`,
// the other keys of an object with patternProperties) has hundreds of derivatives, one per count,
// each derived by every byte class: milliseconds in a mask.
#pragma once
#include <cstdint>
#include <unordered_map>

#include "regex/expr.h"

namespace stencil {

class FiniteLanguages {
 public:
  // Whether e's language is finite, read off its structure (an intersection is finite when one
  // side is); memoized.
  bool finite(const ExprStore& store, ExprId e);
  // False only when no derivative of e (e itself included) other than ε and ∅ has a finite
  // language in the sense of finite(): a proof read off e's structure. True: it may (the caller
  // searches the derivatives). Memoized.
  bool may_reach_finite(const ExprStore& store, ExprId e);
  size_t memory_bytes() const;

 private:
  // Bits of what e's proper derivatives (by a non-empty string) may be: kLive, alive and finite
  // (ε included); kSome, alive, finite and not ε.
  static constexpr uint8_t kLive = 1, kSome = 2;
  uint8_t proper(const ExprStore& store, ExprId e, int depth);

  std::unordered_map<ExprId, bool> finite_;
  std::unordered_map<ExprId, uint8_t> proper_;
};

}  // namespace stencil
