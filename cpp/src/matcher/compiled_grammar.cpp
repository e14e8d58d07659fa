#include <algorithm>

#include "cost/cost_tables.h"
#include "matcher/lexer_epoch.h"
#include "stencil/errors.h"
#include "support/memory_limit.h"

namespace stencil {

LexerEpoch::LexerEpoch(const Grammar& g, const CompileLimits& limits, uint64_t n)
    : lexer(g.exprs, g.lexemes, limits.lexer, g.covers),
      cache(limits.mask_cache_bytes, limits.plain_slice, limits.shared_masks, limits.loop_skip),
      number(n) {
  // Past a quarter of what the lexer may hold, the derivative cache starts afresh: within one
  // long call (a first search over a large grammar) nothing else bounds it.
  lexer.set_cache_cap(std::min(limits.lexer_memory_bytes, MemoryLimit::get().limit()) / 4);
  measure_lexer();  // the expressions a large grammar starts with count from the first step
}

LexerEpoch::~LexerEpoch() {
  MemoryLimit::get().charge(kLexerMemory, -static_cast<int64_t>(lexer_bytes.load(std::memory_order_relaxed)));
}

size_t LexerEpoch::measure_lexer() const {
  measured_growth.store(lexer.growth(), std::memory_order_relaxed);
  size_t now = lexer.memory_bytes();
  {
    // The tables are built under the lock (seconds for a large grammar): not waited for.
    std::unique_lock<std::mutex> lock(costs_mu, std::try_to_lock);
    if (lock.owns_lock() && costs) costs_bytes.store(costs->bytes(), std::memory_order_relaxed);
  }
  now += costs_bytes.load(std::memory_order_relaxed);
  // An exchange keeps the limit's count equal to the epochs' counts whatever the order of two
  // threads measuring at once.
  const size_t before = lexer_bytes.exchange(now, std::memory_order_relaxed);
  MemoryLimit::get().charge(kLexerMemory, static_cast<int64_t>(now) - static_cast<int64_t>(before));
  return now;
}

size_t LexerEpoch::built_bytes() const {
  const CostTables* c = costs_built.load(std::memory_order_acquire);
  return lexer.growth() + (c ? c->bytes() : 0);
}

std::shared_ptr<CostTables> LexerEpoch::cost_tables(const Grammar& g, const Vocabulary& vocab) const {
  std::lock_guard<std::mutex> lock(costs_mu);
  if (!costs) {
    costs = std::make_shared<CostTables>(g, lexer, cache, vocab);
    costs_built.store(costs.get(), std::memory_order_release);
  }
  return costs;
}

void LexerEpoch::count_built(int64_t bytes) const {
  lexer_bytes.fetch_add(static_cast<size_t>(bytes), std::memory_order_relaxed);  // modular: < 0 subtracts
  MemoryLimit::get().charge(kLexerMemory, bytes);
}

struct CompiledGrammar::Tracker final : EvictableCache {
  explicit Tracker(const CompiledGrammar& grammar) : g(grammar) {}
  size_t releasable_bytes() const override { return g.epoch()->counted_bytes(); }
  uint64_t last_used() const override { return g.last_used(); }
  size_t release(size_t, std::vector<std::shared_ptr<const void>>& later) override {
    std::shared_ptr<const LexerEpoch> old = g.renew();
    const size_t bytes = old->counted_bytes();
    later.push_back(std::move(old));
    return bytes;
  }
  void measure() override { g.epoch()->measure_lexer(); }
  const CompiledGrammar& g;
};

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
  last_used_.store(MemoryLimit::get().now(), std::memory_order_relaxed);
  tracker_ = std::make_unique<Tracker>(*this);
  MemoryLimit::get().add(tracker_.get(), true);
  grammar_bytes_ = grammar_->memory_bytes();
  MemoryLimit::get().charge(kGrammarMemory, static_cast<int64_t>(grammar_bytes_));
}

CompiledGrammar::~CompiledGrammar() {
  // First, so that no eviction pass reaches the grammar while it goes.
  if (tracker_) MemoryLimit::get().remove(tracker_.get());
  MemoryLimit::get().charge(kGrammarMemory, -static_cast<int64_t>(grammar_bytes_));
}

std::shared_ptr<const LexerEpoch> CompiledGrammar::epoch() const {
  std::lock_guard<std::mutex> lock(epoch_mu_);
  return epoch_;
}

std::shared_ptr<const LexerEpoch> CompiledGrammar::renew_from(const LexerEpoch* e) const {
  std::lock_guard<std::mutex> lock(epoch_mu_);
  if (e && epoch_.get() != e) return nullptr;  // another thread renewed it already
  std::shared_ptr<const LexerEpoch> old = std::move(epoch_);
  epoch_ = std::make_shared<const LexerEpoch>(*grammar_, limits_, old->number + 1);
  current_.store(epoch_.get(), std::memory_order_release);
  return old;
}

void CompiledGrammar::renew_if_full(const LexerEpoch& e) const {
  MemoryLimit& memory = MemoryLimit::get();
  const uint64_t now = memory.now();
  if (last_used_.load(std::memory_order_relaxed) != now) last_used_.store(now, std::memory_order_relaxed);
  // Measuring takes the lexer's lock: do it at 64, 128, 256, 512 states (for the memory limit's
  // count) and then once per 1,024 new states (also to renew a full lexer, as always).
  const uint32_t states = e.lexer.num_states();
  const uint32_t at = e.checked_at.load(std::memory_order_relaxed);
  // Or when it grew by an eighth of the limit in another way (expressions, cached derivatives).
  const bool grew = e.lexer.growth() > e.measured_growth.load(std::memory_order_relaxed) + memory.limit() / 8;
  if (states >= at + std::clamp(at, 64u, 1024u) || grew) {
    e.checked_at.store(states, std::memory_order_relaxed);
    const size_t bytes = e.measure_lexer();
    const LexerLimits& l = limits_.lexer;
    // One grammar's lexer may take half of the process limit: the other half keeps room for the
    // rest, so that a long generation under one hungry grammar renews it rather than evicting all.
    const bool full = states > l.max_states / 2 || e.lexer.num_exprs() > l.max_exprs / 2 ||
                      e.lexer.fuel_used() > l.fuel / 2 ||
                      bytes > std::min(limits_.lexer_memory_bytes, memory.limit() / 2);
    if (states >= 1024 && full) renew_from(&e);
  }
  memory.enforce();  // a load and a compare unless the process is over its limit
}

uint64_t CompiledGrammar::num_renewals() const { return epoch()->number; }

size_t CompiledGrammar::memory_bytes() const {
  auto e = epoch();
  return e->lexer.memory_bytes() + e->cache.bytes();
}

}  // namespace stencil
