// A grammar compiled for one tokenizer: the grammar, its lazy lexer and the
// mask cache, shared read-only (logically) by every matcher in every thread.
#pragma once
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "stencil/grammar.h"
#include "stencil/limits.h"
#include "stencil/vocabulary.h"

namespace stencil {

// What the grammar builds lazily while it is used (matcher/lexer_epoch.h).
struct LexerEpoch;

class CompiledGrammar {
 public:
  CompiledGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const Vocabulary> vocab,
                  CompileLimits limits = {});
  ~CompiledGrammar();
  const Grammar& grammar() const { return *grammar_; }
  const Vocabulary& vocab() const { return *vocab_; }
  // The current epoch, kept alive by the pointer (a matcher holds the one its state is in).
  std::shared_ptr<const LexerEpoch> epoch() const;
  // The current epoch's address, for a cheap "is mine still current" test.
  const LexerEpoch* current_epoch() const { return current_.load(std::memory_order_acquire); }
  // Starts a new epoch if `e` is still the current one and has passed half a work limit or its
  // memory limit; cheap when it has not grown much since it was last measured. Called at every
  // matcher step: it also marks the grammar used and enforces the process memory limit.
  void renew_if_full(const LexerEpoch& e) const;
  uint64_t num_renewals() const;
  // Drops the lazy state now (the process memory limit's eviction): starts a fresh epoch and
  // returns the old one, which its matchers keep until their next call.
  std::shared_ptr<const LexerEpoch> renew() const { return renew_from(nullptr); }
  // A fresh epoch in place of `e` (any epoch when null); null when `e` is no longer current.
  std::shared_ptr<const LexerEpoch> renew_from(const LexerEpoch* e) const;
  // When a matcher last used the grammar, on the memory limit's clock.
  uint64_t last_used() const { return last_used_.load(std::memory_order_relaxed); }
  const CompileLimits& limits() const { return limits_; }
  std::shared_ptr<const Grammar> grammar_ptr() const { return grammar_; }
  std::shared_ptr<const Vocabulary> vocab_ptr() const { return vocab_; }
  size_t memory_bytes() const;  // the lazy state's (the current epoch)
  size_t grammar_bytes() const { return grammar_bytes_; }
  // What the front-end that built the grammar did not enforce (its lenient mode), as (what,
  // where, why) each; empty when the grammar enforces all it was given. Set once, at creation.
  using Note = std::array<std::string, 3>;
  const std::vector<Note>& not_enforced() const { return not_enforced_; }
  void set_not_enforced(std::vector<Note> notes) { not_enforced_ = std::move(notes); }

 private:
  struct Tracker;  // the grammar as the memory limit sees it

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const Vocabulary> vocab_;
  CompileLimits limits_;
  mutable std::mutex epoch_mu_;
  mutable std::shared_ptr<const LexerEpoch> epoch_;  // epoch_mu_
  mutable std::atomic<const LexerEpoch*> current_{nullptr};
  mutable std::atomic<uint64_t> last_used_{0};
  std::unique_ptr<Tracker> tracker_;
  size_t grammar_bytes_ = 0;  // the grammar's, charged to the memory limit while this lives
  std::vector<Note> not_enforced_;
};

}  // namespace stencil
