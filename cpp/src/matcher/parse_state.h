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

class ParseChecks;

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
  // place_bytes, for the walk's token: frames above the walk root read `bytes`, the prefix of the
  // token a boundary's sub-trie shares (for checks that read the text).
  void place_prefix(std::string_view bytes) { place_bytes(walk_root_ + 1, bytes); }

  // The mask walk's frame (MaskWalker): the top frame is the root of a walk over the token trie
  // and its mask cache's boundaries. begin_walk keeps it as it was (walk_top); end_walk brings it
  // back. A boundary is a trie node where a lexeme ends inside a token: the walk enters it over
  // the root's rows, and runs of boundaries that end the lexeme alike share that end's work
  // (run_push / run_end), each boundary of the run then going on from the shared frame.
  void begin_walk() {
    walk_root_ = frames_.size() - 1;
    walk_top_ = frames_.back();
  }
  void end_walk() { restore(walk_root_, walk_top_); }
  size_t walk_root() const { return walk_root_; }
  const Frame& walk_top() const { return walk_top_; }
  // The frames below a boundary at trie depth `depth` (before its byte): lexer state `state` over
  // the root's rows, the token's first depth - 1 bytes read into the root's lexeme (or starting
  // one after a fresh root).
  void enter_boundary(uint32_t state, size_t depth);
  // A run whose byte completes the lexeme (a string's closing quote): reads b once above the
  // boundary just entered, closed keys not checked (asked per token: checks().closes_written_key),
  // and keeps the frame it pushed (run_frame). False, and nothing kept, when b is refused. With
  // key_sets, b closes a key: the sets of names the push looked it up in go there
  // (EarleyParser::watch_key_sets), so that each token's own key can be looked up in them.
  bool run_push(uint8_t b, std::vector<std::vector<std::string>>* key_sets);
  // The next boundary of such a run: back to the frames below it (the run's rows stay on the
  // parser; its prefix may then be placed), then run_again puts the run's frame back above it.
  void run_next(size_t depth) { frames_.resize(walk_root_ + depth); }
  void run_again() {
    frames_.push_back(run_);
    frames_.back().serial = new_serial();  // the bytes below it may differ from the first time
  }
  // A run whose lexeme ends before its byte, the end scanned by end_lexeme (q starts the next
  // lexeme): the top frame becomes the start of that lexeme over the parser's rows now (the run's
  // frame), and run_enter enters each boundary of the run at it.
  void run_end(uint32_t q);
  void run_enter(size_t depth) { enter_at(walk_root_ + depth, run_); }
  const Frame& run_frame() const { return run_; }

  // The parser's key queries for walkers (they memoize: not const).
  ParseChecks checks();

  const std::vector<Frame>& frames() const { return frames_; }
  // The parser, read-only: its rows move only through ParseState (EarleyParser::truncate is for it
  // alone) and its memoizing queries are behind checks().
  const EarleyParser& parser() const { return parser_; }
  const Lexer& lexer() const { return *lexer_; }
  uint32_t bytes_consumed() const { return static_cast<uint32_t>(frames_.size() - 1); }
  // The bytes read by frames [from, to) (frame 0 reads none).
  std::string bytes(size_t from, size_t to) const;
  // Equal for two calls only if the bytes before byte offset `to` are the same (0: unknown).
  uint64_t version_at(uint32_t to) const { return text_version(to); }

 private:
  friend class ParseChecks;
  // A fresh serial for a frame whose bytes below changed.
  uint64_t new_serial() { return ++next_serial_; }
  void set_run(const Frame& f);
  // A new top frame, written in place: a frame built on the stack and copied in is read back 16
  // bytes at a time over its narrower stores (a store-forwarding stall on every byte of a walk).
  Frame& push_frame(uint32_t state, uint32_t rows, bool fresh, uint8_t byte) {
    Frame& f = frames_.emplace_back();
    f.state = state;
    f.rows = rows;
    f.fresh = fresh;
    f.byte = byte;
    f.serial = new_serial();
    return f;
  }
  // After end_lexeme: frame f starts the next lexeme, in lexer state q over the rows the end pushed.
  void start_next_lexeme(Frame& f, uint32_t q) {
    f.state = q;
    f.rows = static_cast<uint32_t>(parser_.num_rows());
    f.fresh = true;
  }
  // The first num_frames frames, the top one replaced by f, with f's rows on the parser.
  void enter_at(size_t num_frames, const Frame& f) { restore(num_frames - 1, f); }
  // Frames from..from + bytes.size() - 1 read `bytes`: from the first byte that differs (or was
  // never read as text) on, each frame takes its byte and a new serial, since the text below
  // every frame above it changed.
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
  bool closes_written_key(uint32_t t, uint8_t b);
  bool key_may_close_written(uint32_t row, uint32_t t, uint32_t lex_start, uint32_t to);
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
  size_t walk_root_ = 0;
  Frame walk_top_{}, run_{};  // begin_walk's root frame; the frame a boundary run shares
  // A lock-free front for Lexer::start_after_ignored (a shared map behind a lock), which every
  // end of whitespace asks: (start, ended) -> state, direct-mapped.
  struct IgnoredSlot {
    uint64_t key = ~uint64_t(0);
    uint32_t state = 0;
  };
  IgnoredSlot ignored_slots_[16];
};

// The parser's key queries at a parse state, for walkers: whether a key can only repeat one its
// object has, or closes as one, which lists must hold unique items, and what those checks read (reads(), for the mask
// memo). They memoize, so they come as this handle, apart from the read-only ParseState::parser().
class ParseChecks {
 public:
  explicit ParseChecks(ParseState& ps) : ps_(&ps), p_(&ps.parser_) {}
  ReadWatch& reads() { return p_->reads(); }
  // Rows above byte offset `at` belong to a walk: the key memos do not keep them.
  void set_stable_end(uint32_t at) { p_->set_stable_end(at); }
  bool may_exhaust(uint32_t row, uint32_t s) { return p_->may_exhaust(row, s); }
  bool left_before(uint32_t row, uint32_t from, uint32_t to) { return p_->left_before(row, from, to); }
  bool some_key_forbidden(uint32_t row, uint32_t s) { return p_->some_key_forbidden(row, s); }
  bool keys_left(uint32_t row, uint32_t s, std::string_view prefix, uint32_t from, uint32_t to) {
    return p_->keys_left(row, s, prefix, from, to);
  }
  bool exhausted_only(uint32_t row, uint32_t s, std::string_view prefix, uint32_t from, uint32_t to) {
    return p_->exhausted_only(row, s, prefix, from, to);
  }
  const std::vector<std::string>* first_key_forbidden(uint32_t row, uint32_t s, bool& found) {
    return p_->first_key_forbidden(row, s, found);
  }
  // The rows that hold a list of unique items open (EarleyParser::unique_lists), innermost first.
  const std::vector<uint32_t>& unique_lists() { return p_->unique_lists(); }
  // Whether byte b, taking the top frame to lexer state t, closes a key of any string as one its
  // object has (LexState::key_closed): run_push leaves it to be asked per token.
  bool closes_written_key(uint32_t t, uint8_t b) { return ps_->closes_written_key(t, b); }
  // Whether the key begun after frame lex_start (at `row`), its bytes so far up to frame `to`, may
  // close as a repeat at lexer state t (EarleyParser::key_may_close_written; an escape: yes).
  bool key_may_close_written(uint32_t row, uint32_t t, uint32_t lex_start, uint32_t to) {
    return ps_->key_may_close_written(row, t, lex_start, to);
  }

 private:
  ParseState* ps_;
  EarleyParser* p_;
};

inline ParseChecks ParseState::checks() { return ParseChecks(*this); }

}  // namespace stencil
