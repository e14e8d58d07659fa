// A grammar compiled for one tokenizer: the grammar, its lazy lexer and the
// mask cache, shared read-only (logically) by every matcher in every thread.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>

#include "lexer/lexer.h"
#include "stencil/grammar.h"
#include "stencil/vocabulary.h"
#include "tokens/mask_cache.h"

namespace stencil {

struct CompileLimits {
  LexerLimits lexer;
  size_t mask_cache_bytes = 512ull << 20;
  size_t lexer_memory_bytes = 256ull << 20;  // a lexer past it starts a new epoch
  // Mask optimizations, on by default; switches exist to measure each one.
  bool plain_slice = true;    // copy the plain-text slice when a state admits it
  bool shared_masks = true;   // share inner masks across grammars of a vocabulary
  bool boundary_runs = true;  // one parser scan for a run of boundaries ending one lexeme
  bool repeat_memo = true;    // a matcher reuses its last mask when nothing it depends on changed
  bool loop_skip = true;      // skip sub-tries of characters that lead a state back to itself
};

// What a compiled grammar builds lazily while it is used: the lexer's automaton and the masks
// cached per lexer state. Both are caches. When the lexer passes half of one of its budgets
// (states, expressions, derivative fuel) or its memory limit, the grammar starts a fresh
// LexerEpoch, and each matcher moves to it at its next call (it replays its accepted tokens);
// the old one is freed with its last matcher. Memory stays bounded and a long generation never
// runs into a budget that is spent for good.
class CompletionTables;

struct LexerEpoch {
  LexerEpoch(const Grammar& g, const CompileLimits& limits, uint64_t number);
  Lexer lexer;
  MaskCache cache;
  // The token-budget bound's tables (matcher/completion.h), built on a budget's first use.
  mutable std::mutex completion_mu;
  mutable std::shared_ptr<CompletionTables> completion;
  uint64_t number;                            // 0 for the first epoch of a grammar
  mutable std::atomic<uint32_t> checked_at{0};  // lexer states when its size was last measured
};

class CompiledGrammar {
 public:
  CompiledGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab,
                  CompileLimits limits = {});
  const Grammar& grammar() const { return *grammar_; }
  const Vocabulary& vocab() const { return *vocab_; }
  // The current epoch, kept alive by the pointer (a matcher holds the one its state is in).
  std::shared_ptr<const LexerEpoch> epoch() const;
  // The current epoch's address, for a cheap "is mine still current" test.
  const LexerEpoch* current_epoch() const { return current_.load(std::memory_order_acquire); }
  // Starts a new epoch if `e` is still the current one and has passed half a budget or its
  // memory limit; cheap when it has not grown much since it was last measured.
  void renew_if_full(const LexerEpoch& e) const;
  uint64_t num_renewals() const { return epoch()->number; }
  const CompileLimits& limits() const { return limits_; }
  std::shared_ptr<const Grammar> grammar_ptr() const { return grammar_; }
  std::shared_ptr<const Vocabulary> vocab_ptr() const { return vocab_; }
  size_t memory_bytes() const;

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const Vocabulary> vocab_;
  CompileLimits limits_;
  mutable std::mutex epoch_mu_;
  mutable std::shared_ptr<const LexerEpoch> epoch_;  // epoch_mu_
  mutable std::atomic<const LexerEpoch*> current_{nullptr};
};

}  // namespace stencil
