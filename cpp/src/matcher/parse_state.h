// Where a generation stands in its grammar: a stack with one frame per byte read (lexer state +
// parser row count), the Earley parser and the bytes themselves, so that rolling back is
// truncation. The matcher's token history and the mask walk sit on top of it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
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
    frames_.back() = top;  // frames_[root]; through back(), enter_at compiles as before it called this
    parser_.truncate(top.rows);
  }
  // restore, after a call was cut short by an exception (a time limit, a work limit) anywhere:
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

  // The walks' verbs: a trie walk below frame `root` moves the stack only through these (and
  // push_byte, restore), so the frames' end sentinels and the parser's rows stay in step.

  // Inside a trie walk: back to the first num_frames frames, the top one the parent of the next
  // node, with its rows on the parser, or the rows of its lexeme's end where a sibling's
  // push_byte(b, true) shared it.
  void descend(size_t num_frames) {
    frames_.resize(num_frames);
    const Frame& parent = frames_.back();
    parser_.truncate(parent.end_rows != 0 && parent.end_rows != kEndFails ? parent.end_rows : parent.rows);
  }
  // descend, with the parent's own rows and its shared end forgotten (a walk that takes the
  // sub-trie without the parser: the end's rows go with the truncation; a known failure stays).
  void descend_unshared(size_t num_frames) {
    frames_.resize(num_frames);
    Frame& parent = frames_.back();
    parser_.truncate(parent.rows);
    if (parent.end_rows != kEndFails) parent.end_rows = 0;
  }
  // Frame `root` computes its lexeme's end afresh for the walk below it.
  void reset_shared_end(size_t root) { frames_[root].end_rows = 0; }
  // Drops the parser rows above the top frame's (a walk or a refused push may leave some).
  void trim_rows() { parser_.truncate(frames_.back().rows); }
  // The first num_frames frames, the top one replaced by f, with f's rows on the parser (a walk
  // entering a boundary of the mask cache below the token's first bytes): restore's step, named
  // for what the walk does.
  void enter_at(size_t num_frames, const Frame& f) { restore(num_frames - 1, f); }
  // Frames from..from + bytes.size() - 1 read `bytes` (a token prefix placed for checks that read
  // the text): from the first byte that differs (or was never read as text) on, each frame takes
  // its byte and a new serial, since the text below every frame above it changed.
  void place_bytes(size_t from, std::string_view bytes) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      Frame& f = frames_[from + i];
      if (f.byte == static_cast<uint8_t>(bytes[i]) && f.serial != 0) continue;
      for (size_t j = i; j < bytes.size(); ++j) {
        frames_[from + j].byte = static_cast<uint8_t>(bytes[j]);
        frames_[from + j].serial = new_serial();
      }
      return;
    }
  }
  // The top frame, after end_lexeme ended its lexeme (scanned: q starts the next one), is the
  // start of that next lexeme over the parser's rows now. Returns it.
  Frame mark_ended(uint32_t q) {
    Frame& f = frames_.back();
    f.state = q;
    f.rows = static_cast<uint32_t>(parser_.num_rows());
    f.fresh = true;
    return f;
  }
  // Drops the frames above num_frames but not the parser rows above them: a run of boundaries
  // that share one pushed byte puts that frame back (push_again) over the rows it left.
  void keep_frames(size_t num_frames) { frames_.resize(num_frames); }
  // Pushes f again, a frame pushed before whose parser rows are still on the stack, with a new
  // serial (the bytes below it may differ from the first time).
  void push_again(const Frame& f) {
    frames_.push_back(f);
    frames_.back().serial = new_serial();
  }

  const std::vector<Frame>& frames() const { return frames_; }
  // The parser's queries (checks, vetoes, their memos); its rows move only through ParseState
  // (EarleyParser::truncate is for it alone).
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
  // Equal for two calls only if the bytes before byte offset `to` are the same (0: unknown).
  uint64_t version_at(uint32_t to) const { return text_version(to); }

 private:
  void text(uint32_t from, uint32_t to, std::string& out) const override;
  bool exhausted(uint32_t row, uint32_t t, uint32_t lex_start, uint8_t b);
  uint64_t text_version(uint32_t to) const override { return to < frames_.size() ? frames_[to].serial : 0; }

  const Lexer* lexer_;
  EarleyParser parser_;
  std::vector<Frame> frames_;
  uint64_t next_serial_ = 0;
  // text(): the bytes of frames 1.. as read last, and the serial of every kTextMark-th frame then.
  static constexpr size_t kTextMark = 32;
  mutable std::string text_cache_;
  mutable std::vector<uint64_t> text_marks_;
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
