// Where a generation stands in its grammar: a stack with one frame per byte read (lexer state +
// parser row count), the Earley parser and the bytes themselves, so that rolling back is
// truncation. The matcher's token history and the mask walk sit on top of it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lexer/lexer.h"
#include "parser/earley.h"

namespace stencil {

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
  // The frame before the current lexeme's first byte (for per-lexeme token limits, max_tokens).
  uint32_t lex_start = 0;
};

// One accepted token (or run of bytes): the unit of rollback.
struct Step {
  uint32_t frames;  // frames before the token
  bool eos;
  int32_t token;  // -1: bytes (accept_bytes)
};

class ParseState : private TextSource {
 public:
  static constexpr uint32_t kEndFails = ~0u;  // Frame::end_rows: the lexeme cannot end there

  ParseState(const Grammar& g, const Lexer& lexer);
  ParseState(const ParseState& other);  // reads its own bytes
  ParseState& operator=(const ParseState&) = delete;

  // Back to the start of the output (one fresh frame).
  void reset();
  // Works with another lexer from now on (a renewed lexer epoch); resets.
  void set_lexer(const Lexer& lexer);

  // Reads byte b; false, with the state as it was, when the grammar refuses it. share_end (trie
  // walks only): when b ends the frame's lexeme, keep the parser rows of that end on the stack
  // (even when b is then refused) and remember them in the frame, so that the trie node's other
  // children skip the scan (the walk pops back to them, not below).
  bool push_byte(uint8_t b, bool share_end = false);
  // Rolls back to the first num_frames frames.
  void pop_to(size_t num_frames) {
    frames_.resize(num_frames);
    parser_.truncate(frames_.back().rows);
  }
  // Back to frame `root` as it was (`top`) after a walk below it rewrote it and pushed frames.
  void restore(size_t root, const Frame& top) {
    frames_.resize(root + 1);
    frames_[root] = top;
    parser_.truncate(top.rows);
  }
  // restore, after a call was cut short by an exception (a time limit, a work budget) anywhere:
  // also drops what the parser had half built and the watches the walk had set.
  void recover(size_t root, const Frame& top) {
    restore(root, top);
    parser_.recover();
  }
  // Ends the lexeme the lexer reached in ended_state: scans it (pushing a parser row) or, for
  // ignored lexemes, skips it; *next_state starts the next lexeme. False when the parser
  // refuses every lexeme that ends there.
  bool end_lexeme(uint32_t ended_state, uint32_t* next_state);
  // A special token in one step (a frame that reads no byte); false and unchanged if refused.
  bool push_special(int32_t token);
  // Whether the output so far is complete (end of sequence allowed); leaves the state as it was.
  bool accepting();
  // Appends the special tokens the grammar allows next; leaves the state as it was.
  void add_allowed_specials(std::vector<int32_t>& out);
  // Tokens the lexeme at the top frame spans, counting the token in progress, which began after
  // frame token_start - 1 (history: the steps accepted so far).
  uint32_t lexeme_tokens(size_t token_start, const std::vector<Step>& history) const;
  // max_tokens: whether the top lexeme may stop at the token that began after frame
  // token_start - 1; `apply` (accepting a token) changes the top frame to match.
  bool end_token_limit(size_t token_start, const std::vector<Step>& history, bool apply);

  std::vector<Frame>& frames() { return frames_; }
  const std::vector<Frame>& frames() const { return frames_; }
  EarleyParser& parser() { return parser_; }
  const EarleyParser& parser() const { return parser_; }
  const Lexer& lexer() const { return *lexer_; }
  uint32_t bytes_consumed() const { return static_cast<uint32_t>(frames_.size() - 1); }
  // A fresh serial for a frame whose bytes below changed.
  uint64_t new_serial() { return ++next_serial_; }
  Frame new_frame(uint32_t state, uint32_t rows, bool fresh, uint8_t byte) {
    Frame f{state, rows, fresh, byte};
    f.serial = new_serial();
    return f;
  }
  // Whether byte b, taking the top frame to lexer state t, closes a key of any string as one
  // its object has (LexState::key_closed). push_byte asks it unless skip_closed_keys is set:
  // the mask walk pushes a closing quote once for a run of tokens and asks this per token.
  bool closes_written_key(uint32_t t, uint8_t b);
  void skip_closed_keys(bool skip) { skip_closed_keys_ = skip; }
  // Whether the key begun after frame lex_start (at `row`), its bytes so far up to frame `to`, may
  // close as a repeat at lexer state t (EarleyParser::key_may_close_written; an escape: yes).
  bool key_may_close_written(uint32_t row, uint32_t t, uint32_t lex_start, uint32_t to);
  // The bytes read by frames [from, to) (frame 0 reads none).
  std::string bytes(size_t from, size_t to) const;

 private:
  void text(uint32_t from, uint32_t to, std::string& out) const override;
  bool exhausted(uint32_t row, uint32_t t, uint32_t lex_start, uint8_t b);
  uint64_t text_version(uint32_t to) const override { return to < frames_.size() ? frames_[to].serial : 0; }

  const Lexer* lexer_;
  EarleyParser parser_;
  std::vector<Frame> frames_;
  uint64_t next_serial_ = 0;
  std::vector<uint32_t> scratch_lexemes_;
  std::string scratch_prefix_;
  bool skip_closed_keys_ = false;
  // A lock-free front for Lexer::start_after_ignored (a shared map behind a lock), which every
  // end of whitespace asks: (start, ended) -> state, direct-mapped.
  struct IgnoredSlot {
    uint64_t key = ~uint64_t(0);
    uint32_t state = 0;
  };
  IgnoredSlot ignored_slots_[16];
};

}  // namespace stencil
