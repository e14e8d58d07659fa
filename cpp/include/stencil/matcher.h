// The state of one generation under a compiled grammar: accept tokens or bytes, roll back, fill
// token masks. A facade: the parse state (frames, lexer, parser), the mask walker and the token
// budget live in cpp/src/matcher; the matcher keeps the token history for rollback.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stencil/compiled_grammar.h"

namespace stencil {

class ParseState;
class MaskWalker;
class TokenBudget;
class ItemGuard;
struct Step;

class Matcher {
 public:
  // max_rollback: how many tokens rollback() may undo (-1: unlimited). time_limit: seconds each
  // call may work (<= 0: no limit); past it the call throws TimeLimitExceeded and leaves the
  // matcher as it was before the call.
  Matcher(std::shared_ptr<const CompiledGrammar> grammar, int max_rollback, double time_limit = 0);
  Matcher(const Matcher& other);
  Matcher& operator=(const Matcher&) = delete;
  ~Matcher();

  bool accept_token(int64_t token);
  // accept_token within a budget of `remaining` tokens, this one included (< 0: no budget): the
  // token is taken only where the output can still end in the tokens left after it (the finish
  // cost, as min_completion_tokens), else the state is unchanged. Checking the sampled token this
  // way costs a fraction of a mask; the mask is needed only when it is refused.
  bool accept_token_within(int64_t token, int64_t remaining);
  bool accept_bytes(const std::string& bytes, const char* call = "accept_bytes");  // all or nothing
  void rollback(int64_t n);
  void reset();
  bool is_accepting();
  bool is_terminated() const { return terminated_; }
  // Writes ceil(vocab_size / 32) words: bit t of the mask is token t allowed.
  void fill_mask(uint32_t* words, size_t num_words);
  // fill_mask within a budget of `remaining` more tokens, this one included (< 0: no budget):
  // a token stays allowed only when the output can still end valid in the tokens left after it
  // (RowCosts), and end of sequence when the output is complete. A state whose own cost
  // fits the budget always keeps some token allowed.
  // `call` names the caller's function in a TimeLimitExceeded.
  void fill_mask_within(uint32_t* words, size_t num_words, int64_t remaining,
                        const char* call = "fill_next_token_bitmask");
  // The finish cost: the fewest tokens that finish the output from here (RowCosts); -1 when
  // none is known. (The public name keeps "completion"; the JSON checks are completion checks.)
  int64_t min_completion_tokens();
  std::vector<int32_t> forced_tokens(size_t limit = 256);
  std::string forced_bytes(size_t limit = 4096);
  int64_t validate_tokens(const std::vector<int64_t>& tokens);
  size_t num_accepted_tokens() const;
  int max_rollback() const { return max_rollback_; }
  double time_limit() const { return time_limit_; }  // 0: none
  void set_time_limit(double seconds);
  const CompiledGrammar& grammar() const { return *g_; }
  std::shared_ptr<const CompiledGrammar> grammar_ptr() const { return g_; }
  std::string debug_state() const;
  // What debug_state() describes, as numbers (Matcher.stats() in Python).
  struct Stats {
    uint32_t lexer_state;
    size_t parser_rows, parser_items, tokens;
    bool terminated;
  };
  Stats stats() const;

  // A matcher serves one thread at a time. Calls hold this mark while they run (the mask fills
  // with the GIL released), and a call on the same matcher from another thread meanwhile is
  // refused with a ConcurrentUseError instead of racing on its frames. Separate matchers share
  // only the compiled grammar, which is safe to share.
  class Exclusive {
   public:
    explicit Exclusive(const Matcher& m);
    ~Exclusive() { m_.busy_.store(false, std::memory_order_release); }
    Exclusive(const Exclusive&) = delete;
    Exclusive& operator=(const Exclusive&) = delete;

   private:
    const Matcher& m_;
  };

 private:
  // One public call (RAII): the time limit, and the state put back should the call throw.
  class Call;
  bool accept_text_token(int32_t t, uint32_t before);
  void undo_tokens(size_t n);
  void check_live() const;
  TokenBudget& budget();
  // fill_mask, its walk reporting to the budget's sink where `remaining` >= 0 (the budget).
  void fill_mask(uint32_t* words, size_t num_words, int64_t remaining);
  // Moves to the grammar's current lexer epoch when it has changed (see LexerEpoch).
  void follow_epoch() {
    if (g_->current_epoch() != epoch_.get() && !migrating_) migrate();
  }
  void migrate();

  std::shared_ptr<const CompiledGrammar> g_;
  std::shared_ptr<const LexerEpoch> epoch_;  // the lexer and mask cache this state lives in
  const Vocabulary* vocab_;
  std::unique_ptr<ParseState> ps_;
  std::unique_ptr<MaskWalker> walker_;
  std::unique_ptr<TokenBudget> budget_;  // on a budget's first use; a copy starts without
  std::unique_ptr<ItemGuard> guard_;     // uniqueItems without dead ends; null without unique_item checks
  std::vector<Step> history_;
  int max_rollback_;
  double time_limit_ = 0;
  int calls_ = 0;  // public calls in progress (they nest: forced_tokens fills and accepts)
  bool terminated_ = false;
  bool migrating_ = false;
  mutable std::atomic<bool> busy_{false};  // see Exclusive; a copy starts free
};

}  // namespace stencil
