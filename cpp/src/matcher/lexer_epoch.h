// What a compiled grammar builds lazily while it is used: the lexer's automaton and the masks
// cached per lexer state. Both are caches. When the lexer passes half of one of its work limits
// (states, expressions, derivative fuel) or its memory limit, the grammar starts a fresh
// LexerEpoch, and each matcher moves to it at its next call (it replays its accepted tokens);
// the old one is freed with its last matcher. Memory stays bounded and a long generation never
// runs into a work limit that is spent for good. The process-wide memory limit
// (support/memory_limit.h) starts a fresh epoch the same way when it evicts a grammar.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "lexer/lexer.h"
#include "stencil/compiled_grammar.h"
#include "support/memory_limit.h"
#include "tokens/mask_cache.h"

namespace stencil {

class CostTables;
class Vocabulary;

struct LexerEpoch final : CallMemorySource {
  LexerEpoch(const Grammar& g, const CompileLimits& limits, uint64_t number);
  ~LexerEpoch() override;
  LexerEpoch(const LexerEpoch&) = delete;
  LexerEpoch& operator=(const LexerEpoch&) = delete;
  // Measures the lexer (and the cost tables) and charges the memory limit the difference;
  // returns the bytes.
  size_t measure_lexer() const;
  // What the memory limit counts of this epoch: the lexer as last measured, and the masks.
  size_t counted_bytes() const { return lexer_bytes.load(std::memory_order_relaxed) + cache.bytes(); }
  // For a call's memory watch (CallMemory): the lexer's growth and the cost tables' bytes,
  // read without locks; the masks charge the memory limit themselves.
  size_t built_bytes() const override;
  void count_built(int64_t bytes) const override;
  Lexer lexer;
  MaskCache cache;
  // The token-budget bound's tables (cost/cost_tables.h) of grammar g, built on a token
  // budget's first use.
  std::shared_ptr<CostTables> cost_tables(const Grammar& g, const Vocabulary& vocab) const;
  mutable std::mutex costs_mu;
  mutable std::shared_ptr<CostTables> costs;
  mutable std::atomic<const CostTables*> costs_built{nullptr};  // costs, lock-free
  uint64_t number;                              // 0 for the first epoch of a grammar
  mutable std::atomic<uint32_t> checked_at{0};  // lexer states when its size was last measured
  mutable std::atomic<size_t> lexer_bytes{0};   // the lexer's bytes when last measured
  mutable std::atomic<size_t> measured_growth{0};  // Lexer::growth() then
  mutable std::atomic<size_t> costs_bytes{0};  // the cost tables' bytes then
};

}  // namespace stencil
