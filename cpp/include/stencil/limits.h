// The limits of compiling a grammar, defined once here: the bindings, the compiler and the
// front-ends read their defaults from the core (stencil._core.DEFAULT_LIMITS).
#pragma once
#include <cstddef>
#include <cstdint>

namespace stencil {

struct LexerLimits {
  uint32_t max_states = 1u << 20;
  uint64_t fuel = 100'000'000;  // derivative steps over the grammar's life
  size_t max_exprs = 4'000'000;
};

struct BuilderLimits {
  size_t max_exprs = 4'000'000;
  uint32_t max_repeat = 100'000;   // bounded repetition of a grammar symbol
  uint32_t max_rules = 2'000'000;
};

struct CompileLimits {
  LexerLimits lexer;
  size_t mask_cache_bytes = 512ull << 20;
  size_t lexer_memory_bytes = 256ull << 20;  // a lexer past it starts a new epoch
  // Mask optimizations, on by default; switches exist to measure each one.
  bool plain_slice = true;    // copy the plain-text slice when a state admits it
  bool shared_masks = true;   // share inner masks and lexemes' token paths across grammars of a vocabulary
  bool boundary_runs = true;  // one parser scan for a run of boundaries ending one lexeme
  bool repeat_memo = true;    // a matcher reuses its last mask when nothing it depends on changed
  bool loop_skip = true;      // skip sub-tries of characters that lead a state back to itself
};

}  // namespace stencil
