#include "matcher/parse_state.h"

#include <algorithm>

namespace stencil {

ParseState::ParseState(const Grammar& g, const Lexer& lexer) : lexer_(&lexer), parser_(g, lexer) {
  parser_.set_text_source(this);
  reset();
}

ParseState::ParseState(const ParseState& o)
    : TextSource(),
      lexer_(o.lexer_),
      parser_(o.parser_),
      frames_(o.frames_),
      next_serial_(o.next_serial_) {  // the copied parser's verdicts name the copied frames' serials
  parser_.set_text_source(this);      // the copy reads its own bytes
}

void ParseState::reset() {
  parser_.reset();
  frames_.clear();
  push_frame(lexer_->initial_state(parser_.top().lexer_start), static_cast<uint32_t>(parser_.num_rows()), true, 0);
}

void ParseState::set_lexer(const Lexer& lexer) {
  lexer_ = &lexer;
  parser_.set_lexer(lexer);
  for (IgnoredSlot& s : ignored_slots_) s = IgnoredSlot{};
  reset();
}

// Completion checks read the text of a whole object or item at every mask that may close it: a
// copy of the bytes, kept in text_cache_, is extended instead of read again frame by frame (a
// frame is 40 bytes: reading the text from the frames read 40 times its size, from memory a
// forward pass had evicted). A frame's serial names the bytes below it, so the copy is good up
// to its last mark whose frame still has the serial it had (walks and rollbacks replace frames).
void ParseState::text(uint32_t from, uint32_t to, std::string& out) const {
  to = std::min<uint32_t>(to, static_cast<uint32_t>(frames_.size() - 1));
  if (from >= to) return;
  size_t m = std::min<size_t>(text_marks_.size(), to / kTextMark);
  while (m > 0 && frames_[m * kTextMark].serial != text_marks_[m - 1]) --m;
  text_marks_.resize(m);
  text_cache_.resize(m * kTextMark);
  for (size_t i = text_cache_.size(); i < to; ++i) {
    const Frame& f = frames_[i + 1];
    text_cache_.push_back(static_cast<char>(f.byte));
    if ((text_marks_.size() + 1) * kTextMark == i + 1) {
      if (f.serial == 0) continue;  // (a frame that names no bytes: no mark, the copy stays short)
      text_marks_.push_back(f.serial);
    }
  }
  out.append(text_cache_, from, to - from);
}

std::string ParseState::bytes(size_t from, size_t to) const {
  std::string out;
  for (size_t k = std::max<size_t>(from, 1); k < to && k < frames_.size(); ++k)
    out.push_back(static_cast<char>(frames_[k].byte));
  return out;
}

bool ParseState::end_lexeme(uint32_t ended_state, uint32_t* next_state) {
  const LexState& ls = lexer_->state(ended_state);
  if (!ls.any_ignore_only) {
    scratch_lexemes_.clear();
    for (uint32_t lex : ls.accepting)
      if (!lexer_->lexemes()[lex].ignore) scratch_lexemes_.push_back(lex);
    if (!parser_.scan(scratch_lexemes_.data(), scratch_lexemes_.size(), bytes_consumed())) return false;
    *next_state = parser_.top().lexer_start;
    // A row that expects only keys the object already has (a comma after the last key an enum
    // of names allows) is a dead end, as a row that expects nothing (EarleyParser::scan).
    const uint32_t row = static_cast<uint32_t>(parser_.num_rows() - 1);
    if (lexer_->state(*next_state).key_finite && parser_.may_exhaust(row, *next_state) &&
        parser_.exhausted_only(row, *next_state, {}, bytes_consumed(), bytes_consumed())) {
      parser_.truncate(parser_.num_rows() - 1);
      return false;
    }
    return true;
  }
  const uint32_t start = parser_.top().lexer_start;
  const uint64_t key = (uint64_t(start) << 32) | ended_state;
  IgnoredSlot& slot = ignored_slots_[(key * 0x9e3779b97f4a7c15ull) >> 60];
  if (slot.key != key) {
    slot.state = lexer_->start_after_ignored(start, ended_state);
    slot.key = key;
  }
  *next_state = slot.state;
  return true;
}

// A key whose every completion repeats an earlier key (EarleyParser::exhausted_only): its
// lexeme began after frame lex_start, at `row`, and b would be its next byte.
bool ParseState::exhausted(uint32_t row, uint32_t t, uint32_t lex_start, uint8_t b) {
  const LexState& s = lexer_->state(t);
  const bool closed = s.key_closed && !skip_closed_keys_;
  if ((!s.key_finite && !closed) || !parser_.may_exhaust(row, t) ||
      parser_.left_before(row, lex_start, bytes_consumed()))
    return false;
  scratch_prefix_.clear();
  text(lex_start, bytes_consumed(), scratch_prefix_);
  scratch_prefix_.push_back(static_cast<char>(b));
  if (s.key_finite) return parser_.exhausted_only(row, t, scratch_prefix_, lex_start, bytes_consumed());
  return parser_.closes_written_key(row, t, scratch_prefix_, lex_start, bytes_consumed());
}

bool ParseState::key_may_close_written(uint32_t row, uint32_t t, uint32_t lex_start, uint32_t to) {
  scratch_prefix_.clear();
  text(lex_start, to, scratch_prefix_);
  if (scratch_prefix_.find('\\') != std::string::npos || scratch_prefix_.empty()) return true;
  return parser_.key_may_close_written(row, t, std::string_view(scratch_prefix_).substr(1));  // after the quote
}

bool ParseState::closes_written_key(uint32_t t, uint8_t b) {
  const Frame& f = frames_.back();
  return !f.fresh && lexer_->state(t).key_closed && exhausted(f.rows - 1, t, f.lex_start, b);
}

bool ParseState::push_byte(uint8_t b, bool share_end) {
  Frame& f = frames_.back();
  const uint32_t rows_before = f.rows;
  // b starts a lexeme after a fresh frame or after the lexeme that ends before it
  uint32_t lex_start = f.fresh ? static_cast<uint32_t>(frames_.size() - 1) : f.lex_start;
  uint32_t t = lexer_->next(f.state, b);
  // Lexemes vetoed at the row where this one began are dead (EarleyParser::vetoed_only).
  if (t != Lexer::kDead && parser_.vetoed_only(rows_before - 1, lexer_->state(t))) t = Lexer::kDead;
  if (t != Lexer::kDead && exhausted(rows_before - 1, t, lex_start, b)) t = Lexer::kDead;
  if (t == Lexer::kDead) {
    lex_start = static_cast<uint32_t>(frames_.size() - 1);
    const LexState& ls = lexer_->state(f.state);
    if (ls.accepting.empty()) return false;
    uint32_t q;
    if (share_end && f.end_rows != 0) {
      if (f.end_rows == kEndFails) return false;
      q = f.end_state;
    } else {
      if (!end_lexeme(f.state, &q)) {
        if (share_end) f.end_rows = kEndFails;
        return false;
      }
      if (share_end) {
        f.end_rows = static_cast<uint32_t>(parser_.num_rows());
        f.end_state = q;
      }
    }
    t = lexer_->next(q, b);
    const uint32_t row = static_cast<uint32_t>(parser_.num_rows() - 1);
    if (t != Lexer::kDead && (parser_.vetoed_only(row, lexer_->state(t)) || exhausted(row, t, lex_start, b)))
      t = Lexer::kDead;
    if (t == Lexer::kDead) {
      if (!share_end) parser_.truncate(rows_before);
      return false;
    }
  } else if (parser_.num_rows() != rows_before) {
    parser_.truncate(rows_before);  // a shared end of this lexeme is not on this path
    f.end_rows = 0;
  }
  const uint32_t rows_pushed = static_cast<uint32_t>(parser_.num_rows());
  // The frame goes on first: a lexeme ending right after b spans b.
  push_frame(t, rows_pushed, false, b).lex_start = lex_start;
  const LexState& ts = lexer_->state(t);
  if (ts.end_now) {
    uint32_t q;
    if (!end_lexeme(t, &q)) {
      frames_.pop_back();
      parser_.truncate(share_end ? rows_pushed : rows_before);
      return false;
    }
    start_next_lexeme(frames_.back(), q);
  }
  return true;
}

void ParseState::enter_boundary(uint32_t state, size_t depth) {
  // The frame above the prefix: its byte and serial stay when they match (place_prefix).
  const Frame& top = walk_top_;
  const size_t at = walk_root_ + depth - 1;
  const bool had = at < frames_.size();
  const uint8_t was_byte = had ? frames_[at].byte : 0;
  const uint64_t was_serial = had ? frames_[at].serial : 0;
  // Written in place, a field at a time (enter_at's copy of a frame built on the stack read it
  // back 16 bytes at a time over its narrower stores: a store-forwarding stall per boundary).
  frames_.resize(at + 1);
  Frame& back = frames_.back();
  back.state = state;
  back.rows = top.rows;
  back.fresh = depth == 1 ? top.fresh : false;
  back.byte = depth == 1 ? top.byte : was_byte;
  back.end_rows = 0;
  back.end_state = 0;
  back.serial = depth == 1 ? top.serial : was_serial;
  // the token's first depth - 1 bytes went into the root's lexeme (or started one after a fresh root)
  back.lex_start = depth == 1 || !top.fresh ? top.lex_start : static_cast<uint32_t>(walk_root_);
  parser_.truncate(top.rows);
}

bool ParseState::run_push(uint8_t b, std::vector<std::vector<std::string>>* key_sets) {
  if (key_sets) parser_.watch_key_sets(true, static_cast<uint32_t>(frames_.size()));
  skip_closed_keys_ = true;
  struct Restore {  // (even when the push throws: a time limit; the parser's recover ends the watch)
    bool& skip;
    ~Restore() { skip = false; }
  } restore{skip_closed_keys_};
  const bool ok = push_byte(b);
  if (key_sets) parser_.take_key_sets(*key_sets);
  if (ok) set_run(frames_.back());
  return ok;
}

// run_ = f, field by field: f was just written a field at a time (push_byte, start_next_lexeme),
// and a whole-struct copy reads it back 16 bytes at a time over those narrower stores (a
// store-forwarding stall, half of run_push's samples).
// (set_run and enter_boundary write every field of a frame by hand: a new field must join them.)
static_assert(sizeof(Frame) == 40, "a Frame field was added or removed: see set_run and enter_boundary");
void ParseState::set_run(const Frame& f) {
  run_.state = f.state;
  run_.rows = f.rows;
  run_.fresh = f.fresh;
  run_.byte = f.byte;
  run_.end_rows = f.end_rows;
  run_.end_state = f.end_state;
  run_.serial = f.serial;
  run_.lex_start = f.lex_start;
}

void ParseState::run_end(uint32_t q) {
  start_next_lexeme(frames_.back(), q);
  set_run(frames_.back());
}

// One if the lexeme began inside the token in progress, else one more than the accepted tokens
// (steps) that hold some of its bytes.
uint32_t ParseState::lexeme_tokens(size_t token_start, const std::vector<Step>& history) const {
  const size_t first_byte = size_t(frames_.back().lex_start) + 1;
  if (first_byte >= token_start) return 1;
  // the step that pushed frame first_byte: the last one that began at or before it
  auto it = std::upper_bound(history.begin(), history.end(), first_byte,
                             [](size_t f, const Step& s) { return f < s.frames; });
  const size_t before = static_cast<size_t>(it - history.begin());
  return static_cast<uint32_t>(history.size() - (before > 0 ? before - 1 : 0) + 1);
}

// max_tokens, as llguidance means it: when a token ends inside a lexeme, the lexemes of the lexer
// state whose token limit that token reached are dropped; when none is left, the lexeme must end right
// there, or the token is refused. Without `apply` (the walks) it only judges, leaving the parser
// as it was.
bool ParseState::end_token_limit(size_t token_start, const std::vector<Step>& history, bool apply) {
  Frame& top = frames_.back();
  if (top.fresh) return true;
  const uint32_t s = lexer_->drop_spent(top.state, lexeme_tokens(token_start, history));
  if (s == top.state) return true;
  if (s != Lexer::kDead) {
    if (apply) top.state = s;
    return true;
  }
  const size_t rows = parser_.num_rows();
  uint32_t q;
  const bool ok = !lexer_->state(top.state).accepting.empty() && end_lexeme(top.state, &q);
  if (ok && apply) {
    start_next_lexeme(top, q);
  } else {
    parser_.truncate(rows);
  }
  return ok;
}

bool ParseState::accepting() {
  const Frame f = frames_.back();
  if (f.fresh) return parser_.top().accepting;
  const LexState& ls = lexer_->state(f.state);
  if (ls.accepting.empty()) return false;
  uint32_t q;
  if (!end_lexeme(f.state, &q)) return false;
  bool ok = parser_.top().accepting;
  parser_.truncate(f.rows);
  return ok;
}

void ParseState::add_allowed_specials(std::vector<int32_t>& out) {
  const Frame& top = frames_.back();
  if (top.fresh) {
    parser_.add_allowed_specials(out);
  } else if (!lexer_->state(top.state).accepting.empty()) {
    uint32_t q;
    if (end_lexeme(top.state, &q)) parser_.add_allowed_specials(out);
    parser_.truncate(top.rows);
  }
}

bool ParseState::push_special(int32_t token) {
  const Frame f = frames_.back();
  if (!f.fresh) {
    const LexState& ls = lexer_->state(f.state);
    uint32_t q;
    if (ls.accepting.empty() || !end_lexeme(f.state, &q)) return false;
  }
  int lex = parser_.special_lexeme_for(token);
  if (lex < 0) {
    parser_.truncate(f.rows);
    return false;
  }
  uint32_t l = static_cast<uint32_t>(lex);
  if (!parser_.scan(&l, 1, bytes_consumed())) {
    parser_.truncate(f.rows);
    return false;
  }
  // A special token reads no byte, but it is a step for rollback and the walk.
  push_frame(parser_.top().lexer_start, static_cast<uint32_t>(parser_.num_rows()), true, 0);
  return true;
}

}  // namespace stencil
