// The state of one generation under a compiled grammar: a stack with one
// frame per accepted byte (lexer state + parser row count), so that rolling
// back bytes or tokens is truncation, and the trie walk that fills masks.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parser/earley.h"
#include "stencil/compiled_grammar.h"

namespace stencil {

class CompletionCost;

class Matcher : private TextSource {
 public:
  // max_rollback: how many tokens rollback() may undo (-1: unlimited).
  Matcher(std::shared_ptr<const CompiledGrammar> grammar, int max_rollback);
  Matcher(const Matcher& other);
  Matcher& operator=(const Matcher&) = delete;

  bool accept_token(int64_t token);
  bool accept_bytes(const std::string& bytes);  // all or nothing
  void rollback(int64_t n);
  void reset();
  bool is_accepting();
  bool is_terminated() const { return terminated_; }
  // Writes ceil(vocab_size / 32) words: bit t of the mask is token t allowed.
  void fill_mask(uint32_t* words, size_t num_words);
  // fill_mask within a budget of `remaining` more tokens, this one included (< 0: no budget):
  // a token stays allowed only when the output can still end valid in the tokens left after it
  // (CompletionCost), and end of sequence when the output is complete. A state whose own cost
  // fits the budget always keeps some token allowed.
  void fill_mask_within(uint32_t* words, size_t num_words, int64_t remaining);
  // The fewest tokens that finish the output from here (CompletionCost); -1 when none is known.
  int64_t min_completion_tokens();
  std::vector<int32_t> forced_tokens(size_t limit = 256);
  std::string forced_bytes(size_t limit = 4096);
  int64_t validate_tokens(const std::vector<int64_t>& tokens);
  size_t num_accepted_tokens() const { return history_.size(); }
  int max_rollback() const { return max_rollback_; }
  const CompiledGrammar& grammar() const { return *g_; }
  std::string debug_state() const;

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
  struct Frame {
    uint32_t state;  // lexer state
    uint32_t rows;   // parser rows
    bool fresh;      // no byte of the current lexeme read yet
    uint8_t byte;    // the byte this frame consumed (unused in frame 0)
    // Inside a trie walk, the end of this frame's lexeme, shared by the children of its trie
    // node: the parser rows once it ended (kept on the parser stack while the walk stays
    // below) and the lexer state that starts the next lexeme. 0: not computed.
    uint32_t end_rows = 0;
    uint32_t end_state = 0;
    // Unique per frame content: a frame whose serial is unchanged has the same bytes below it
    // (any change below would have popped it), so completion checks can reuse verdicts on the
    // text up to it. 0: never read as text.
    uint64_t serial = 0;
    // The frame before the current lexeme's first byte (for token budgets, max_tokens).
    uint32_t lex_start = 0;
  };
  static constexpr uint32_t kEndFails = ~0u;
  struct Step {
    uint32_t frames;  // frames before the token
    bool eos;
    int32_t token;    // -1: bytes (accept_bytes)
  };

  bool push_byte(uint8_t b, bool share_end = false);
  void text(uint32_t from, uint32_t to, std::string& out) const override;
  uint64_t text_version(uint32_t to) const override { return to < frames_.size() ? frames_[to].serial : 0; }
  Frame new_frame(uint32_t state, uint32_t rows, bool fresh, uint8_t byte) {
    Frame f{state, rows, fresh, byte};
    f.serial = ++next_serial_;
    return f;
  }
  uint32_t bytes_consumed() const { return static_cast<uint32_t>(frames_.size() - 1); }
  bool end_lexeme(uint32_t ended_state, uint32_t* next_state);
  void pop_to(size_t num_frames) {
    frames_.resize(num_frames);
    parser_.truncate(frames_.back().rows);
  }
  bool accept_special(int32_t token);
  uint32_t lexeme_tokens(size_t token_start) const;
  bool end_token_budget(size_t token_start, bool apply);
  bool accepting_now();
  void walk(const std::vector<TrieNode>& nodes, size_t first, size_t root, uint32_t* words);
  void place_prefix(const Boundary& b, size_t d, size_t root, bool needs_text);
  bool in_run(const Boundary& first, size_t d, const Boundary& b, int byte, bool any_prefix) const;
  size_t end_now_run(const std::vector<Boundary>& bounds, size_t k, size_t root, uint32_t* words, bool* shared);
  void undo_tokens(size_t n);
  CompletionCost& completion_cost();
  void budget_walk();
  // Moves to the grammar's current lexer epoch when it has changed (see LexerEpoch).
  void follow_epoch() {
    if (g_->current_epoch() != epoch_.get() && !migrating_) migrate();
  }
  void migrate();

  std::shared_ptr<const CompiledGrammar> g_;
  std::shared_ptr<const LexerEpoch> epoch_;  // the lexer and mask cache this state lives in
  const Lexer* lexer_;
  const Vocabulary* vocab_;
  EarleyParser parser_;
  std::vector<Frame> frames_;
  std::vector<Step> history_;
  int max_rollback_;
  bool terminated_ = false;
  bool migrating_ = false;
  uint64_t next_serial_ = 0;
  std::vector<uint32_t> scratch_lexemes_;
  // The last mask and what it depended on: the lexer state, the parser's row stack (its top
  // row's serial) and whether a lexeme had just ended. Inside a long string the next step
  // usually matches all three, and then the mask is a copy. A mask that a completion check
  // computed from the bytes of the current lexeme is not kept (those bytes change).
  struct MaskMemo {
    uint32_t state = 0, rows = 0;
    uint64_t serial = 0;
    bool fresh = false, valid = false;
    const MaskEntry* entry = nullptr;        // its inner bits
    std::shared_ptr<const MaskEntry> keep;   // owns the entry when the cache could not
    std::vector<int32_t> extra;              // tokens the boundary walks, specials and EOS added
  };
  MaskMemo memo_;
  std::vector<int32_t> walk_ids_;  // this fill's extra tokens
  uint32_t placed_parent_ = ~0u;   // fill_mask: see place_prefix
  // A lock-free front for Lexer::start_after_ignored (a shared map behind a lock), which every
  // end of whitespace asks: (start, ended) -> state, direct-mapped.
  struct IgnoredSlot {
    uint64_t key = ~uint64_t(0);
    uint32_t state = 0;
  };
  IgnoredSlot ignored_slots_[16];
  mutable std::atomic<bool> busy_{false};  // see Exclusive; a copy starts free
  // Budgets (matcher/budget.cpp): the cost tables of this lexer epoch (not shared: a fork may
  // run on another thread, and a copy starts without), and the cost after each token of the
  // last state whose budget was asked, with the largest one, kept while the state repeats.
  std::shared_ptr<CompletionCost> cost_;
  const LexerEpoch* cost_epoch_ = nullptr;
  struct BudgetMemo {
    bool valid = false, fresh = false;
    uint32_t state = 0, rows = 0, consumed = 0;
    uint64_t serial = 0;
    uint32_t max = 0;             // the largest cost after an allowed token
    std::vector<uint32_t> after;  // per token: the cost after it (CompletionCost::kInf: unknown)
    std::vector<uint32_t> unbudgeted;  // scratch: the mask before the budget
  };
  BudgetMemo budget_;
};

}  // namespace stencil
