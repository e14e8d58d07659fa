#include "cost/inner_costs.h"

#include <algorithm>
#include <string_view>

#include "lexer/lexer.h"
#include "stencil/vocabulary.h"
#include "support/token_bits.h"

namespace stencil {

void InnerCosts::reset() {
  stage_ = Stage::kNone;
  most_ = ceiling_limit_ = 0;
  steps_.reset();
  long_ = nullptr;
}

uint32_t InnerCosts::bound(RowCosts& rows, const EarleyParser& p, uint32_t state, uint32_t left) {
  if (stage_ == Stage::kLong) {
    if (long_bound(rows, p, state, left)) return most_;
    stage_ = Stage::kNone;  // (the shorter tokens' ceiling is over this budget)
  }
  // (a ceiling found for a larger budget searched less: a smaller one may find it tighter)
  if (stage_ == Stage::kNone || (stage_ == Stage::kCeiling && most_ > left && left < ceiling_limit_)) {
    stage_ = Stage::kCeiling;
    ceiling_limit_ = left;
    // The expressions' ceilings first; where they are over, a shorter reach with the longer
    // tokens costed apart, before the searches for tighter ceilings (which walk the states one
    // token reaches: a count beside a pattern makes many).
    most_ = rows.inner_ceiling(p, state, left, false);
    if (most_ > left && long_bound(rows, p, state, left)) {
      stage_ = Stage::kLong;
      return most_;
    }
    if (most_ > left) most_ = rows.inner_ceiling(p, state, left);
  }
  if (most_ <= left) return most_;
  if (stage_ == Stage::kCeiling) {
    stage_ = Stage::kSticky;
    const uint64_t sticky = rows.tables().sticky(state);  // (part << 32 | slack)
    if (sticky != CostTables::kNoSticky) {
      const uint32_t part = static_cast<uint32_t>(sticky >> 32), slack = static_cast<uint32_t>(sticky);
      most_ = std::min(most_, cost::add(slack, rows.at(p, part, false)));
    }
    if (most_ <= left) return most_;
  }
  if (stage_ == Stage::kSticky) {
    stage_ = Stage::kSuccessors;
    most_ = successors_bound(rows, p, state, left);
    if (most_ <= left) return most_;
  }
  if (stage_ == Stage::kSuccessors) load_steps(rows, p, state);
  if (most_ <= left || stage_ == Stage::kUncovered) return most_;
  if (stage_ == Stage::kStepsBounded) cost_steps(rows, p);
  return most_;
}

bool InnerCosts::long_bound(RowCosts& rows, const EarleyParser& p, uint32_t state, uint32_t left) {
  if (long_ && left == long_left_) return true;
  long_ = nullptr;
  // (only a count of characters beside a pattern has a ceiling that depends on the reach, and only
  // a reach shorter than the count leaves it room: Lexer::counted_ceiling)
  const uint32_t count = rows.tables().lexer().char_count_bound(state);
  for (uint32_t bytes : {64u, 32u, 16u, 12u, 8u}) {
    if (bytes >= count) continue;
    uint32_t short_most = rows.inner_ceiling_within(p, state, bytes - 1);
    const uint32_t lifted = short_most > left ? lifted_for(rows, state, bytes) : Lexer::kDead;
    if (lifted != Lexer::kDead) short_most = std::min(short_most, relaxed_within(rows, p, lifted, bytes));
    if (short_most > left) continue;
    // The longer tokens: those of the lifted state where there is one (its table serves every
    // count; each token's bound is its successor's there where short enough, else its own)
    const CostTables::LongTokens& longs = rows.tables().long_inner(lifted != Lexer::kDead ? lifted : state, bytes);
    long_costs_.resize(longs.size());
    uint32_t most = short_most;
    for (size_t i = 0; i < longs.size(); ++i) {
      const uint32_t s = longs[i].second;
      if (s == Lexer::kDead) return false;  // (the lexer's walk and the mask's disagree: not this stage)
      if (lifted == Lexer::kDead && i > 0 && s == longs[i - 1].second) {
        long_costs_[i] = long_costs_[i - 1];
        continue;
      }
      const uint32_t c = lifted == Lexer::kDead ? cost_after(rows, p, s, left)
                                                : lifted_cost(rows, p, state, bytes, longs[i].first, s, left);
      long_costs_[i] = c;
      most = std::max(most, c);
    }
    long_ = &longs;
    long_left_ = left;
    most_ = most;
    return true;
  }
  return false;
}

// A bound on the cost after a token that leads to s: its distance in single bytes, or where that
// is over `left` its exact cost.
uint32_t InnerCosts::cost_after(RowCosts& rows, const EarleyParser& p, uint32_t s, uint32_t left) {
  const uint32_t c = rows.bytes_bound(p, s);
  return c > left ? rows.at(p, s, false) : c;
}

uint32_t InnerCosts::lifted_for(RowCosts& rows, uint32_t state, uint32_t bytes) {
  const uint32_t lifted = rows.tables().lexer().relaxed_state(state, 2 * bytes, true);
  return lifted == state ? Lexer::kDead : lifted;
}

// A long token t of the lifted state, which leads it to `s`: its distance there where |t| and it
// stay within 2 * bytes (as relaxed_within's), else its successor from `state` read and costed as
// a long token of the state's own is; 0 where it does not stay inside from `state` (no inner bit:
// the mask walk's verdict, if any, is the one that counts).
uint32_t InnerCosts::lifted_cost(RowCosts& rows, const EarleyParser& p, uint32_t state, uint32_t bytes, int32_t token,
                                 uint32_t s, uint32_t left) {
  const std::string_view text = rows.tables().search.vocab().token_bytes(token);
  const uint32_t length = 2 * bytes, n = static_cast<uint32_t>(text.size());
  const uint32_t c = n < length ? rows.bytes_bound(p, s, true, length - n) : cost::kInf;
  if (c <= left) return c;
  uint32_t u = state;
  for (char b : text) {
    u = rows.tables().lexer().next_tagged(u, static_cast<uint8_t>(b));
    if (u == Lexer::kDead || (u & Lexer::kEndNowTag)) return 0;
  }
  return cost_after(rows, p, u, left);
}

// The state with its counts of 2 * bytes or more lifted (Lexer::relaxed_state) holds the same
// strings as `state` up to that length (ExprStore::relax_bounds), so a token t shorter than
// `bytes` stays inside from both, and a lexeme's distance d after it in the lifted state, where
// |t| + d is within the length, is its distance after t from `state` too (a string of its length
// that ends the lexeme ends it in both): the lifted state's steps, each successor bounded by the
// distances below 2 * bytes - (bytes - 1), bound every such token. The lifted state's steps are
// one table for every count (a label of up to 63 characters beside a pattern: its counts walked
// the trie anew at every token). kInf where there is no such state or no bound.
uint32_t InnerCosts::relaxed_within(RowCosts& rows, const EarleyParser& p, uint32_t lifted, uint32_t bytes) {
  const uint32_t length = 2 * bytes, below = length - (bytes - 1);
  const std::shared_ptr<const InnerSteps> steps = rows.tables().inner_steps(lifted);
  if (!steps->covered) return cost::kInf;
  uint32_t most = steps->common == Lexer::kDead ? 0 : rows.bytes_bound(p, steps->common, true, below);
  for (size_t i = 0; i < steps->states.size() && most < cost::kInf; ++i)
    most = std::max(most, rows.bytes_bound(p, steps->states[i], true, below));
  return most;
}

uint32_t InnerCosts::successors_bound(RowCosts& rows, const EarleyParser& p, uint32_t state, uint32_t left) {
  const std::vector<uint32_t>* next = rows.tables().search.known_successors(state);
  if (!next) return cost::kInf;
  // (a bound, as the steps': each state's distance in single bytes, or where that is over
  // `left` its exact cost; kept while the state repeats, for smaller budgets too)
  uint32_t most = 0;
  for (uint32_t s : *next) {
    uint32_t c = rows.bytes_bound(p, s);
    if (c > left) c = rows.at(p, s, false);
    if (c > left) return c;  // (the budget may bind: the steps say which tokens)
    most = std::max(most, c);
  }
  return most;
}

void InnerCosts::load_steps(RowCosts& rows, const EarleyParser& p, uint32_t state) {
  steps_ = rows.tables().inner_steps(state);
  if (!steps_->covered) {
    stage_ = Stage::kUncovered;
    most_ = cost::kInf;
    return;
  }
  stage_ = Stage::kStepsBounded;
  most_ = steps_->common == Lexer::kDead ? 0 : rows.bytes_bound(p, steps_->common);
  for (uint32_t s : steps_->states) most_ = std::max(most_, rows.bytes_bound(p, s));
}

void InnerCosts::cost_steps(RowCosts& rows, const EarleyParser& p) {
  stage_ = Stage::kStepsExact;
  common_cost_ = steps_->common == Lexer::kDead ? 0 : rows.at(p, steps_->common, false);
  most_ = common_cost_;
  step_costs_.resize(steps_->states.size());
  for (size_t i = 0; i < step_costs_.size(); ++i) {
    step_costs_[i] = rows.at(p, steps_->states[i], false);
    most_ = std::max(most_, step_costs_[i]);
  }
}

void InnerCosts::restrict(uint32_t* words, const uint32_t* had, size_t need, uint32_t left) const {
  if (stage_ == Stage::kLong) {  // the shorter tokens fit; the longer ones over `left` go
    for (size_t i = 0; i < long_->size(); ++i)
      if (long_costs_[i] > left && token_bits::has_checked(had, need, (*long_)[i].first))
        token_bits::clear(words, (*long_)[i].first);
    return;
  }
  if (stage_ != Stage::kStepsExact || most_ <= left) return;  // every inner token fits
  if (steps_->common != Lexer::kDead && common_cost_ > left) std::fill(words, words + need, 0u);
  for (const auto& [t, k] : steps_->tokens) {
    if (token_bits::has_checked(had, need, t)) token_bits::put(words, t, step_costs_[k] <= left);
  }
}

bool InnerCosts::cheapest(uint32_t* others, size_t need, uint32_t* least) const {
  auto none_left = [&] { return std::all_of(others, others + need, [](uint32_t w) { return w == 0; }); };
  if (stage_ == Stage::kLong) {  // (every shorter token fits: here only where there are none)
    for (size_t i = 0; i < long_->size(); ++i) {
      const int32_t t = (*long_)[i].first;
      if (!token_bits::has_checked(others, need, t)) continue;
      *least = std::min(*least, long_costs_[i]);
      token_bits::clear(others, t);
    }
    return none_left();
  }
  if (stage_ != Stage::kStepsExact) return none_left();
  for (const auto& [t, k] : steps_->tokens) {
    if (!token_bits::has_checked(others, need, t)) continue;
    *least = std::min(*least, step_costs_[k]);
    token_bits::clear(others, t);
  }
  if (none_left()) return true;
  if (steps_->common == Lexer::kDead) return false;
  *least = std::min(*least, common_cost_);
  return true;
}

}  // namespace stencil
