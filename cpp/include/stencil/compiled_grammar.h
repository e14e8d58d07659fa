// A grammar compiled for one tokenizer: the grammar, its lazy lexer and the
// mask cache, shared read-only (logically) by every matcher in every thread.
#pragma once
#include <memory>

#include "lexer/lexer.h"
#include "stencil/grammar.h"
#include "stencil/vocabulary.h"
#include "tokens/mask_cache.h"

namespace stencil {

struct CompileLimits {
  LexerLimits lexer;
  size_t mask_cache_bytes = 512ull << 20;
  // Mask optimizations, on by default; switches exist to measure each one.
  bool plain_slice = true;    // copy the plain-text slice when a state admits it
  bool shared_masks = true;   // share inner masks across grammars of a vocabulary
  bool boundary_runs = true;  // one parser scan for a run of boundaries ending one lexeme
  bool repeat_memo = true;    // a matcher reuses its last mask when nothing it depends on changed
  bool loop_skip = true;      // skip sub-tries of characters that lead a state back to itself
};

class CompiledGrammar {
 public:
  CompiledGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab,
                  CompileLimits limits = {});
  const Grammar& grammar() const { return *grammar_; }
  const Vocabulary& vocab() const { return *vocab_; }
  const Lexer& lexer() const { return *lexer_; }
  const MaskCache& mask_cache() const { return cache_; }
  const CompileLimits& limits() const { return limits_; }
  std::shared_ptr<const Grammar> grammar_ptr() const { return grammar_; }
  std::shared_ptr<const Vocabulary> vocab_ptr() const { return vocab_; }
  size_t memory_bytes() const;

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const Vocabulary> vocab_;
  std::unique_ptr<Lexer> lexer_;
  CompileLimits limits_;
  MaskCache cache_;
};

}  // namespace stencil
