#include "stencil/compiled_grammar.h"

#include "stencil/errors.h"

namespace stencil {

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab,
                                 CompileLimits limits)
    : grammar_(std::move(grammar)),
      vocab_(std::move(vocab)),
      limits_(limits),
      cache_(limits.mask_cache_bytes, limits.plain_slice, limits.shared_masks, limits.loop_skip) {
  for (const LexemeSpec& l : grammar_->lexemes)
    if (l.special)
      for (int32_t t : l.token_ids)
        if (t >= vocab_->vocab_size())
          throw GrammarError("special token id " + std::to_string(t) + " of " + l.name +
                             " is outside the vocabulary (size " + std::to_string(vocab_->vocab_size()) + ")");
  lexer_ = std::make_unique<Lexer>(grammar_->exprs, grammar_->lexemes, limits.lexer);
}

size_t CompiledGrammar::memory_bytes() const { return lexer_->memory_bytes() + cache_.bytes(); }

}  // namespace stencil
