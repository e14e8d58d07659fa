#include "stencil/matcher.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <optional>

#include "matcher/budget.h"
#include "matcher/item_guard.h"
#include "matcher/lexer_epoch.h"
#include "matcher/mask_walker.h"
#include "matcher/parse_state.h"
#include "stencil/errors.h"
#include "support/deadline.h"
#include "support/token_bits.h"

namespace stencil {

// One public call. The outermost one works under the matcher's time limit (nested ones, as
// forced_tokens' fills and accepts, under the same) and first moves to a renewed lexer epoch.
// Should the call throw (a time limit, a work limit), the state is put back as it was before
// it: frames, parser rows, token history, termination. What it built in shared caches (lexer
// states, mask entries) stays, valid: a later call goes on from there.
class Matcher::Call {
 public:
  Call(Matcher& m, const char* name) : m_(m), limit_(m.calls_ == 0 ? m.time_limit_ : 0, name) {
    if (m.calls_ == 0) {
      m.follow_epoch();  // under the limit; all or nothing (migrate)
      memory_.emplace(m.epoch_.get(), name);
    }
    ++m.calls_;
    depth_ = m.ps_->frames().size();
    top_ = m.ps_->frames().back();
    steps_ = m.history_.size();
    terminated_ = m.terminated_;
    unwinding_ = std::uncaught_exceptions();
  }
  ~Call() {
    --m_.calls_;
    if (std::uncaught_exceptions() <= unwinding_) return;
    m_.ps_->recover(depth_ - 1, top_);
    if (m_.history_.size() > steps_) m_.history_.resize(steps_);
    m_.terminated_ = terminated_;
    // What the call built past its memory bound goes with the epoch (when its matchers move on).
    if (memory_ && memory_->tripped()) m_.g_->renew_from(m_.epoch_.get());
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

 private:
  Matcher& m_;
  deadline::Scope limit_;
  std::optional<CallMemory> memory_;
  size_t depth_ = 0, steps_ = 0;
  Frame top_{};
  bool terminated_ = false;
  int unwinding_ = 0;
};

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> grammar, int max_rollback, double time_limit)
    : g_(std::move(grammar)),
      epoch_(g_->epoch()),
      vocab_(&g_->vocab()),
      ps_(std::make_unique<ParseState>(g_->grammar(), epoch_->lexer)),
      walker_(std::make_unique<MaskWalker>(*g_)),
      max_rollback_(max_rollback) {
  if (ItemGuard::needed(g_->grammar())) guard_ = std::make_unique<ItemGuard>();
  if (max_rollback < -1) throw UsageError("max_rollback must be -1 (unlimited) or a count >= 0");
  set_time_limit(time_limit);
  reset();
}

void Matcher::set_time_limit(double seconds) {
  if (!(seconds >= 0) || std::isinf(seconds))
    throw UsageError("time_limit must be a finite number of seconds > 0 (0: no limit), got " + std::to_string(seconds));
  time_limit_ = seconds;
}

Matcher::Matcher(const Matcher& o)
    : g_(o.g_),
      epoch_(o.epoch_),
      vocab_(o.vocab_),
      ps_(std::make_unique<ParseState>(*o.ps_)),
      walker_(std::make_unique<MaskWalker>(*o.walker_)),
      guard_(o.guard_ ? std::make_unique<ItemGuard>(*o.guard_) : nullptr),
      history_(o.history_),
      max_rollback_(o.max_rollback_),
      time_limit_(o.time_limit_),
      terminated_(o.terminated_) {}

Matcher::~Matcher() = default;

Matcher::Exclusive::Exclusive(const Matcher& m) : m_(m) {
  if (m.busy_.exchange(true, std::memory_order_acquire))
    throw ConcurrentUseError(
        "this Matcher is in use by another thread: a matcher serves one thread at a time (fork() it, or "
        "create one Matcher per sequence; matchers on one compiled grammar may run in parallel)");
}

size_t Matcher::num_accepted_tokens() const { return history_.size(); }

void Matcher::migrate() {
  // The frames' lexer states mean nothing in the new epoch: replay every step there (parser
  // rows, completion checks and rollback points come out the same), into a new parse state, so
  // that a replay cut short (a time limit) leaves the matcher in the old epoch as it was.
  std::vector<Step> steps = history_;
  std::vector<std::string> bytes(steps.size());
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].token < 0)
      bytes[i] = ps_->bytes(steps[i].frames, i + 1 < steps.size() ? steps[i + 1].frames : ps_->frames().size());
  std::unique_ptr<ParseState> old_ps = std::move(ps_);
  std::shared_ptr<const LexerEpoch> old_epoch = epoch_;
  const bool old_terminated = terminated_;
  migrating_ = true;
  try {
    epoch_ = g_->epoch();
    ps_ = std::make_unique<ParseState>(g_->grammar(), epoch_->lexer);
    history_.clear();
    terminated_ = false;
    for (size_t i = 0; i < steps.size(); ++i)
      if (!(steps[i].token >= 0 ? accept_token(steps[i].token) : accept_bytes(bytes[i])))
        throw GrammarError("internal error: a matcher could not replay its tokens into a renewed lexer");
  } catch (...) {
    ps_ = std::move(old_ps);
    epoch_ = std::move(old_epoch);
    history_ = std::move(steps);
    terminated_ = old_terminated;
    migrating_ = false;
    throw;
  }
  walker_->forget();
  if (guard_) guard_->forget();  // a new parse state: its row and frame serials start again
  migrating_ = false;
}

void Matcher::reset() {
  if (g_->current_epoch() != epoch_.get() && !migrating_) {  // no history to replay: start in the new epoch
    epoch_ = g_->epoch();
    ps_->set_lexer(epoch_->lexer);
    walker_->forget();
    if (guard_) guard_->forget();  // a new parse state: its row and frame serials start again
  }
  ps_->reset();
  history_.clear();
  terminated_ = false;
}

bool Matcher::is_accepting() {
  Call call(*this, "is_accepting");
  return terminated_ || ps_->accepting();
}

void Matcher::check_live() const {
  if (terminated_)
    throw UsageError("the matcher has terminated (end of sequence accepted); call reset() or rollback() first");
}

bool Matcher::accept_token(int64_t token) {
  vocab_->check_id(token);
  Call call(*this, "accept_token");
  check_live();
  const int32_t t = static_cast<int32_t>(token);
  const uint32_t before = static_cast<uint32_t>(ps_->frames().size());
  if (vocab_->is_special(t) && ps_->push_special(t)) {
    history_.push_back({before, false, t});
    return true;
  }
  const auto& eos = vocab_->eos_ids();
  if (std::find(eos.begin(), eos.end(), t) != eos.end()) {
    if (!ps_->accepting()) return false;
    terminated_ = true;
    history_.push_back({before, true, t});
    return true;
  }
  if (vocab_->is_special(t) || t >= vocab_->num_tokens()) return false;
  return accept_text_token(t, before);
}

bool Matcher::accept_token_within(int64_t token, int64_t remaining) {
  vocab_->check_id(token);
  const auto& eos = vocab_->eos_ids();
  // At 0 only end of sequence is left (where the output is complete), as in fill_mask_within.
  if (remaining == 0 && std::find(eos.begin(), eos.end(), token) == eos.end()) return false;
  if (!accept_token(token)) return false;
  if (remaining < 0 || terminated_) return true;
  Call call(*this, "accept_token");
  const int64_t cost = budget().min_completion_tokens(*ps_, *epoch_);
  if (cost >= 0 && cost <= remaining - 1) return true;
  undo_tokens(1);  // (no mask was walked since the token: the walker's memo still holds)
  return false;
}

// A token of text: its bytes, then its lexeme's token budget.
bool Matcher::accept_text_token(int32_t t, uint32_t before) {
  std::string_view bytes = vocab_->token_bytes(t);
  if (bytes.empty()) return false;
  for (unsigned char c : bytes) {
    if (!ps_->push_byte(c)) {
      ps_->pop_to(before);
      return false;
    }
  }
  if ((ps_->lexer().has_token_limits() && !ps_->end_token_limit(before, history_, true)) ||
      (guard_ && guard_->dead(*ps_))) {
    ps_->pop_to(before);
    return false;
  }
  Step& step = history_.emplace_back();  // (in place: no stack copy read back wider than written)
  step.frames = before;
  step.eos = false;
  step.token = t;
  g_->renew_if_full(*epoch_);  // new states come from pushing bytes
  return true;
}

bool Matcher::accept_bytes(const std::string& bytes, const char* name) {
  Call call(*this, name);
  check_live();
  const size_t before = ps_->frames().size();
  for (unsigned char c : bytes) {
    if (!ps_->push_byte(c)) {
      ps_->pop_to(before);
      return false;
    }
  }
  if (guard_ && guard_->dead(*ps_)) {
    ps_->pop_to(before);
    return false;
  }
  // Bytes count as one step for rollback.
  history_.push_back({static_cast<uint32_t>(before), false, -1});
  return true;
}

void Matcher::undo_tokens(size_t n) {
  for (size_t i = 0; i < n; ++i) {
    Step s = history_.back();
    history_.pop_back();
    ps_->pop_to(s.frames);
    if (s.eos) terminated_ = false;
  }
}

void Matcher::rollback(int64_t n) {
  Call call(*this, "rollback");
  if (n < 0) throw UsageError("rollback: the count must be >= 0, got " + std::to_string(n));
  if (max_rollback_ >= 0 && n > max_rollback_)
    throw UsageError("rollback(" + std::to_string(n) + ") exceeds max_rollback=" + std::to_string(max_rollback_) +
                     " given when the matcher was created");
  if (static_cast<size_t>(n) > history_.size())
    throw UsageError("rollback(" + std::to_string(n) + "): only " + std::to_string(history_.size()) +
                     " tokens have been accepted");
  undo_tokens(static_cast<size_t>(n));
  // The mask memo holds for later bytes of a lexeme, not earlier ones (MaskWalker::end_now_run
  // leaves out reads of a key prefix that no written key begins like).
  walker_->forget();
}

int64_t Matcher::validate_tokens(const std::vector<int64_t>& tokens) {
  for (int64_t t : tokens) vocab_->check_id(t);
  Call call(*this, "validate_tokens");
  check_live();
  size_t ok = 0;
  for (int64_t t : tokens) {
    if (terminated_ || !accept_token(t)) break;
    ++ok;
  }
  undo_tokens(ok);
  return static_cast<int64_t>(ok);
}

void Matcher::fill_mask(uint32_t* words, size_t num_words) { fill_mask(words, num_words, int64_t{-1}); }

void Matcher::fill_mask(uint32_t* words, size_t num_words, int64_t remaining) {
  if (calls_ == 0) g_->renew_if_full(*epoch_);  // what the last walks built may have filled the lexer
  Call call(*this, "fill_next_token_bitmask");
  const size_t need = token_bits::words_for(vocab_->vocab_size());
  if (num_words < need)
    throw UsageError("bitmask row has " + std::to_string(num_words) + " words; the vocabulary needs " +
                     std::to_string(need));
  std::fill(words + need, words + num_words, 0u);
  if (terminated_) {
    std::fill(words, words + need, 0u);
    for (int32_t t : vocab_->eos_ids())
      if (t >= 0 && t < vocab_->vocab_size()) token_bits::set(words, t);
    return;
  }
  MaskWalker::CostSink* sink =
      remaining >= 0 ? budget().begin(*ps_, *epoch_, walker_->replays(*ps_), remaining) : nullptr;
  walker_->fill(*ps_, *epoch_, history_, words, need, sink);
  if (guard_) guard_->filter(*ps_, *vocab_, words);
}

TokenBudget& Matcher::budget() {
  if (!budget_) budget_ = std::make_unique<TokenBudget>(*g_);
  return *budget_;
}

void Matcher::fill_mask_within(uint32_t* words, size_t num_words, int64_t remaining, const char* name) {
  if (calls_ == 0) g_->renew_if_full(*epoch_);
  Call call(*this, name);
  fill_mask(words, num_words, remaining);
  if (remaining < 0 || terminated_) return;
  const size_t need = token_bits::words_for(vocab_->vocab_size());
  budget().restrict(*ps_, *epoch_, words, need, remaining);
}

int64_t Matcher::min_completion_tokens() {
  Call call(*this, "min_completion_tokens");
  if (terminated_) return 0;
  return budget().min_completion_tokens(*ps_, *epoch_);
}

std::string Matcher::forced_bytes(size_t limit) {
  Call call(*this, "forced_bytes");
  std::string out;
  if (terminated_) return out;
  const size_t depth0 = ps_->frames().size();
  const ByteClasses& bc = ps_->lexer().classes();
  std::vector<int> class_size(bc.count(), 0);
  for (int b = 0; b < 256; ++b) class_size[bc.class_of[b]]++;
  while (out.size() < limit && !ps_->accepting()) {
    int only = -1, count = 0;
    // Bytes of one lexer class behave alike, so one probe per class suffices.
    for (int c = 0; c < bc.count() && count <= 1; ++c) {
      uint8_t rep = bc.representative[c];
      const size_t before = ps_->frames().size();
      if (ps_->push_byte(rep)) {
        count += class_size[c];
        only = rep;
        ps_->pop_to(before);
      }
    }
    if (count != 1) break;
    ps_->push_byte(static_cast<uint8_t>(only));
    out.push_back(static_cast<char>(only));
  }
  ps_->pop_to(depth0);
  return out;
}

std::vector<int32_t> Matcher::forced_tokens(size_t limit) {
  Call call(*this, "forced_tokens");
  std::vector<int32_t> out;
  if (terminated_) return out;
  std::vector<uint32_t> mask(token_bits::words_for(vocab_->vocab_size()));
  const auto& eos = vocab_->eos_ids();
  while (out.size() < limit) {
    fill_mask(mask.data(), mask.size());
    int32_t only = -1;
    int count = 0;
    for (size_t w = 0; w < mask.size() && count <= 1; ++w) {
      for (uint32_t bits = mask[w]; bits && count <= 1; bits &= bits - 1) {
        only = static_cast<int32_t>(w * 32 + __builtin_ctz(bits));
        ++count;
      }
    }
    if (count != 1 || std::find(eos.begin(), eos.end(), only) != eos.end() || !accept_token(only)) break;
    out.push_back(only);
  }
  undo_tokens(out.size());
  return out;
}

Matcher::Stats Matcher::stats() const {
  const EarleyParser& p = ps_->parser();
  return {ps_->frames().back().state, p.num_rows(), p.num_items(), history_.size(), terminated_};
}

std::string Matcher::debug_state() const {
  const Frame& f = ps_->frames().back();
  const EarleyParser& p = ps_->parser();
  return "lexer state " + std::to_string(f.state) + " [" + ps_->lexer().describe_state(f.state) + "], " +
         std::to_string(p.num_rows()) + " parser rows (" + std::to_string(p.num_items()) + " items), " +
         std::to_string(history_.size()) + " tokens" + (terminated_ ? ", terminated" : "");
}

}  // namespace stencil
