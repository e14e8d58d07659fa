#include "matcher/lexer_epoch.h"

#include "stencil/errors.h"

namespace stencil {

LexerEpoch::LexerEpoch(const Grammar& g, const CompileLimits& limits, uint64_t n)
    : lexer(g.exprs, g.lexemes, limits.lexer),
      cache(limits.mask_cache_bytes, limits.plain_slice, limits.shared_masks, limits.loop_skip),
      number(n) {}

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab,
                                 CompileLimits limits)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), limits_(limits) {
  for (const LexemeSpec& l : grammar_->lexemes)
    if (l.special)
      for (int32_t t : l.token_ids)
        if (t >= vocab_->vocab_size())
          throw GrammarError("special token id " + std::to_string(t) + " of " + l.name +
                             " is outside the vocabulary (size " + std::to_string(vocab_->vocab_size()) + ")");
  epoch_ = std::make_shared<const LexerEpoch>(*grammar_, limits_, 0);
  current_.store(epoch_.get(), std::memory_order_release);
}

std::shared_ptr<const LexerEpoch> CompiledGrammar::epoch() const {
  std::lock_guard<std::mutex> lock(epoch_mu_);
  return epoch_;
}

void CompiledGrammar::renew_if_full(const LexerEpoch& e) const {
  // Measuring takes the lexer's lock: do it once per 1,024 new states.
  const uint32_t states = e.lexer.num_states();
  if (states < e.checked_at.load(std::memory_order_relaxed) + 1024) return;
  e.checked_at.store(states, std::memory_order_relaxed);
  const LexerLimits& l = limits_.lexer;
  const bool full = states > l.max_states / 2 || e.lexer.num_exprs() > l.max_exprs / 2 ||
                    e.lexer.fuel_used() > l.fuel / 2 || e.lexer.memory_bytes() > limits_.lexer_memory_bytes;
  if (!full) return;
  std::lock_guard<std::mutex> lock(epoch_mu_);
  if (epoch_.get() != &e) return;  // another thread renewed it already
  epoch_ = std::make_shared<const LexerEpoch>(*grammar_, limits_, e.number + 1);
  current_.store(epoch_.get(), std::memory_order_release);
}

uint64_t CompiledGrammar::num_renewals() const { return epoch()->number; }

size_t CompiledGrammar::memory_bytes() const {
  auto e = epoch();
  return e->lexer.memory_bytes() + e->cache.bytes();
}

}  // namespace stencil
