// Budget-aware masks: with k tokens left, a token t stays allowed only when the cost after t
// (RowCosts: the fewest tokens that finish the output) is at most k - 1. The cost is a
// shortest path over tokens, so from a state of cost d <= k some token of cost d - 1 stays
// allowed, and a generation that starts within its budget ends valid (where the bound holds:
// see cost/README.md for what it does not model).
//
// The costs after the tokens come with the mask's own walk: the mask walk reports the state
// after each token it allows past a lexeme's end (MaskWalker::CostSink), and the cost room bounds
// the inner tokens (those that stay inside the current lexeme) only as tightly as the budget
// needs (InnerCosts: ceilings, then one cost per distinct successor state). A budget that does
// not bind thus costs a few cost lookups over the plain mask, and the mask is then the unbudgeted
// one bit for bit; one that binds costs a pass over the words; where no token fits, the cheapest
// stay. They are kept while the state repeats (inside a string). Where the successors cannot
// serve (lexemes with token limits, an inner mask their table does not cover), the costs come
// from one walk of the whole token trie (TrieCosts). TokenBudget itself only orchestrates: which
// of these answers, within what work.
#include "matcher/budget.h"

#include <algorithm>
#include <optional>

#include "support/token_bits.h"
#include "support/work_limit.h"

namespace stencil {

namespace {
// Derivative work (support/work_limit.h) the cost searches of one matcher call may spend: about
// 12 times the most one search of 250 MaskBench schemas' budget masks took (21,401 units; a unit
// costs a microsecond or two), and about 0.15 s where the searches walk the trie (a unit per 16
// nodes: a counted pattern, every token a state of its own). Past it the costs are bounded
// coarsely (restrict). (2^17 gives up in this project's own tests: a uri beside an email and an enum.)
constexpr uint64_t kCallWork = 1u << 18;
// The coarse pass after it: a whole-trie walk whose costs are tables, its work mostly the
// lexer's states down the trie.
constexpr uint64_t kCoarseWork = 1u << 21;
}  // namespace

template <class F>
bool TokenBudget::within_work(ParseState* ps, F&& f) {
  if (gave_up_) return false;
  work::State& spent = work::state;
  const uint64_t start = spent.done;
  const size_t depth = ps ? ps->frames().size() : 0;
  const std::optional<Frame> top = ps ? std::optional<Frame>(ps->frames().back()) : std::nullopt;
  try {
    work::Limit limit(work_left_);
    f();
  } catch (const WorkSpent&) {
    gave_up_ = true;
    if (ps) ps->recover(depth - 1, *top);  // (as a call cut short does: Matcher::Call)
  }
  const uint64_t used = spent.done - start;
  work_left_ = used >= work_left_ ? 0 : work_left_ - used;
  return !gave_up_;
}

RowCosts& TokenBudget::cost(const LexerEpoch& epoch) {
  if (!cost_ || cost_epoch_ != &epoch) {  // lexer states belong to one epoch
    cost_ = std::make_shared<RowCosts>(g_.grammar(), epoch.cost_tables(g_.grammar(), vocab_));
    cost_epoch_ = &epoch;
    stage_ = Stage::kNone;
    inner_.reset();
  }
  return *cost_;
}

int64_t TokenBudget::min_completion_tokens(ParseState& ps, const LexerEpoch& epoch) {
  ps.trim_rows();
  const Frame& f = ps.frames().back();
  RowCosts& fc = cost(epoch);  // (its tables' own searches are limited apart)
  allow_work(kCallWork);
  uint32_t c = cost::kInf;
  if (!within_work(&ps, [&] { c = fc.at(ps.parser(), f.state, f.fresh); })) {
    // Out of work: a bound by a real path, the one the masks fall back to (restrict) or tighter
    // (the single bytes' path cut into tokens, affordable for one state), so that a token a mask
    // keeps on its bound is one that accept_token within the same budget takes.
    allow_work(kCoarseWork);
    c = cost::kInf;
    within_work(&ps, [&] { c = fc.at(ps.parser(), f.state, f.fresh, RowCosts::Search::kPaths); });
  }
  return c >= cost::kInf ? -1 : static_cast<int64_t>(c);
}

uint32_t TokenBudget::left_of(int64_t remaining) {
  return remaining - 1 >= cost::kInf ? cost::kInf - 1 : static_cast<uint32_t>(std::max<int64_t>(remaining - 1, 0));
}

// The cost after each token the grammar allows here, by a walk of the whole trie (trie_), with
// the specials' (specials_).
void TokenBudget::walk_costs(ParseState& ps, const LexerEpoch& epoch, RowCosts::Search search) {
  trie_.walk(ps, epoch, cost(epoch), search, specials_);
  max_ = trie_.max();
}

// The costs after the special tokens the grammar takes here (specials_): asked once per state,
// for the mask walk's costs and the whole-trie walk's alike.
void TokenBudget::cost_specials(ParseState& ps) {
  specials_.clear();
  trie_.special_costs(ps, *cost_, specials_);
  ps.trim_rows();
}

TokenBudget::Key TokenBudget::key_of(ParseState& ps) const {
  const Frame& top = ps.frames().back();
  return {top.state, top.rows, ps.parser().top().serial, top.fresh};
}

// The whole-trie walk's costs depend on the bytes read too when completion checks veto (they
// decide which tokens are walked).
uint32_t TokenBudget::consumed(ParseState& ps) const { return g_.grammar().checks.empty() ? 0 : ps.bytes_consumed(); }

MaskWalker::CostSink* TokenBudget::begin(ParseState& ps, const LexerEpoch& epoch, bool replays, int64_t remaining) {
  ps.trim_rows();
  cost(epoch);  // a new epoch drops the memo
  allow_work(kCallWork);
  left_ = left_of(remaining);
  // The costs hold while the state does and the walk would reach the same tokens past the
  // lexeme's end: where it replays its mask (no check read the text), or, for the whole-trie
  // walk, where no text was read since (the bytes consumed key it); and while the costs that are
  // bounds only fit the budget (it shrinks token by token).
  if (stage_ != Stage::kNone && key_ == key_of(ps) &&
      (stage_ == Stage::kWalked ? consumed_ == consumed(ps) : replays && loose_ <= left_))
    return nullptr;
  stage_ = Stage::kNone;
  inner_.reset();
  whole_walk_ = ps.lexer().has_token_limits();  // the mask walks the whole trie: restrict does too
  reached_.clear();
  if (whole_walk_) return nullptr;
  loose_ = 0;
  last_ = Last{};
  return this;
}

uint32_t TokenBudget::reached_max() const {
  uint32_t most = 0;
  for (const auto& [t, c] : reached_) most = std::max(most, c);
  return most;
}

void TokenBudget::token_reached(int32_t token, ParseState& ps) {
  const Frame& f = ps.frames().back();
  const uint64_t serial = ps.parser().top().serial;
  if (!gave_up_ && (last_.serial != serial || last_.state != f.state || last_.fresh != f.fresh))
    cost_reached(serial, f.state, f.fresh, ps);
  // (room made apart, so that this path, taken by every token the walk reaches, keeps no copy of
  // the vector's growth and its register saves; emplaced: a pair built on the stack was read back
  // as one word over its two halves' stores, a store-forwarding stall)
  if (reached_.size() == reached_.capacity()) grow_reached();
  if (reached_.size() == reached_.capacity()) __builtin_unreachable();
  reached_.emplace_back(token, gave_up_ ? 0 : last_.cost);  // (given up: restrict keeps the mask)
}

void TokenBudget::grow_reached() { reached_.reserve(std::max<size_t>(256, reached_.capacity() * 2)); }

// (apart from token_reached, which most tokens leave at its first test: runs of tokens end alike)
void TokenBudget::cost_reached(uint64_t serial, uint32_t state, bool fresh, ParseState& ps) {
  bool exact = false;
  uint32_t c = 0;
  // (the memo first: a search's work scope costs more than most answers; the walk's frames are
  // in flight: the search only reads the parser, no frame to recover)
  if (cost_->within_known(ps.parser(), state, fresh, left_, &c, &exact) ||
      within_work(nullptr, [&] { c = cost_->within(ps.parser(), state, fresh, left_, &exact); })) {
    last_ = {serial, state, fresh, c};
    if (!exact) loose_ = std::max(loose_, c);
  }
}

void TokenBudget::restrict(ParseState& ps, const LexerEpoch& epoch, uint32_t* words, size_t need, int64_t remaining) {
  const uint32_t left = left_of(remaining);
  ps.trim_rows();
  cost(epoch);
  // (the words are untouched or back to the unbudgeted mask wherever a search may stop)
  if (within_work(&ps, [&] { restrict_searched(ps, epoch, words, need, remaining, left); })) return;
  // The work ran out. Letting every token through would let the output run past its budget, so
  // the costs are bounded coarsely instead, with a work allowance of their own: inside a lexeme
  // by the path in single bytes cut into tokens (a real path, memoized along its states as a
  // search's is), or where even that runs out, by the distance in single bytes (an upper bound
  // on the tokens it needs); at a lexeme's start exactly. The tokens over the budget go, and
  // where none is left the cheapest stay (as TrieCosts::restrict does). Sound but coarser: a
  // token that only a longer search would prove cheap enough may go (in single bytes, a uri of
  // at least 63 characters refused its valid instance's tokens: 63 bytes against 14 tokens).
  inner_.reset();
  bool bounded = false;
  for (RowCosts::Search search : {RowCosts::Search::kPaths, RowCosts::Search::kBytes}) {
    allow_work(kCoarseWork);
    bounded = within_work(&ps, [&] {
      cost_specials(ps);  // (the work may have run out before they were known)
      walk_costs(ps, epoch, search);
    });
    if (bounded) break;
  }
  key_ = key_of(ps);
  consumed_ = consumed(ps);
  if (bounded) {
    stage_ = Stage::kWalked;
    trie_.restrict(words, need, remaining, left);
    return;
  }
  // Out of work again (rare: the single-byte distances and a lexeme's first costs are tables):
  // this state keeps its unbudgeted mask, and so do its repeats.
  stage_ = Stage::kUnbudgeted;
  max_ = 0;
  if (remaining < 1) trie_.restrict(words, need, remaining, left);
}

// The costs of the state first (the specials', and the walk's reports where the mask walk gave
// them), then, only while the budget binds, the inner tokens' (the cost room bounds them as
// tightly as the budget needs), and where those cannot serve, or no token would stay, or the mask
// walk could not report, a walk of the whole trie.
void TokenBudget::restrict_searched(ParseState& ps, const LexerEpoch& epoch, uint32_t* words, size_t need,
                                    int64_t remaining, uint32_t left) {
  const uint32_t state = ps.frames().back().state;
  if (stage_ == Stage::kNone) {
    key_ = key_of(ps);
    consumed_ = consumed(ps);
    cost_specials(ps);
    if (!whole_walk_) {
      stage_ = Stage::kInner;
      reached_.insert(reached_.end(), specials_.begin(), specials_.end());
      reached_max_ = max_ = reached_max();
    }
  }
  if (remaining < 1) return trie_.restrict(words, need, remaining, left);  // end of sequence alone, or nothing
  if (stage_ == Stage::kInner) {
    max_ = std::max(reached_max_, inner_.bound(*cost_, ps.parser(), state, left));
    if (max_ <= left) return;  // the budget does not bind: the mask is unchanged
    if (inner_.covered()) {
      if (restrict_steps(words, need, left)) return;
      // Every token went: the cheapest stay, as TrieCosts::restrict keeps them, where the costs
      // known already (every one over the budget, so exact) say which.
      std::copy(unbudgeted_.begin(), unbudgeted_.end(), words);
      const uint32_t least = cheapest_known(need);
      if (least < cost::kInf && restrict_steps(words, need, least)) return;
      std::copy(unbudgeted_.begin(), unbudgeted_.end(), words);
    }
    inner_.reset();  // else the whole-trie walk's costs decide which stay
  }
  if (stage_ == Stage::kUnbudgeted) return;
  if (stage_ != Stage::kWalked) {
    stage_ = Stage::kWalked;
    walk_costs(ps, epoch);
  }
  if (max_ <= left) return;
  trie_.restrict(words, need, remaining, left);
}

// With the costs of the steps: the tokens over the budget go; false when none is left.
bool TokenBudget::restrict_steps(uint32_t* words, size_t need, uint32_t left) {
  unbudgeted_.assign(words, words + need);
  auto had = [&](int32_t t) { return token_bits::has_checked(unbudgeted_.data(), need, t); };
  inner_.restrict(words, unbudgeted_.data(), need, left);
  for (const auto& [t, c] : reached_)  // past a lexeme's end (and specials): the walk's verdict
    if (had(t)) token_bits::put(words, t, c <= left);
  for (auto [a, b] : vocab_.trie().duplicates())
    if (had(b) && had(a)) token_bits::put(words, b, token_bits::has(words, a));
  for (int32_t t : vocab_.eos_ids())
    if (had(t)) token_bits::set(words, t);
  for (size_t w = 0; w < need; ++w)
    if (words[w]) return true;
  return false;
}

// The least cost after a token of the unbudgeted mask (unbudgeted_) from the walk's reports and
// the inner tokens' exact costs; cost::kInf where some token's cost is not known.
uint32_t TokenBudget::cheapest_known(size_t need) {
  unknown_.assign(unbudgeted_.begin(), unbudgeted_.begin() + need);
  auto clear = [&](int32_t t) {
    if (!token_bits::has_checked(unknown_.data(), need, t)) return false;
    token_bits::clear(unknown_.data(), t);
    return true;
  };
  uint32_t least = cost::kInf;
  for (const auto& [t, c] : reached_)
    if (clear(t)) least = std::min(least, c);
  for (auto [a, b] : vocab_.trie().duplicates()) clear(b);  // (each costs what its first id does)
  for (int32_t t : vocab_.eos_ids()) clear(t);
  return inner_.cheapest(unknown_.data(), need, &least) ? least : cost::kInf;
}

}  // namespace stencil
