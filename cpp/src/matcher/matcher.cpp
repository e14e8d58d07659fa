#include "stencil/matcher.h"

#include <algorithm>

#include "stencil/errors.h"

namespace stencil {

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> grammar, int max_rollback)
    : g_(std::move(grammar)),
      epoch_(g_->epoch()),
      lexer_(&epoch_->lexer),
      vocab_(&g_->vocab()),
      parser_(g_->grammar(), epoch_->lexer),
      max_rollback_(max_rollback) {
  if (max_rollback < -1) throw UsageError("max_rollback must be -1 (unlimited) or a count >= 0");
  parser_.set_text_source(this);
  reset();
}

Matcher::Matcher(const Matcher& o)
    : TextSource(),
      g_(o.g_),
      epoch_(o.epoch_),
      lexer_(o.lexer_),
      vocab_(o.vocab_),
      parser_(o.parser_),
      frames_(o.frames_),
      history_(o.history_),
      max_rollback_(o.max_rollback_),
      terminated_(o.terminated_),
      next_serial_(o.next_serial_) {  // the copied parser's verdicts name the copied frames' serials
  parser_.set_text_source(this);  // the copy reads its own bytes
}

Matcher::Exclusive::Exclusive(const Matcher& m) : m_(m) {
  if (m.busy_.exchange(true, std::memory_order_acquire))
    throw ConcurrentUseError(
        "this Matcher is in use by another thread: a matcher serves one thread at a time (fork() it, or "
        "create one Matcher per sequence; matchers on one compiled grammar may run in parallel)");
}

void Matcher::text(uint32_t from, uint32_t to, std::string& out) const {
  for (uint32_t i = from; i < to && i + 1 < frames_.size(); ++i) out.push_back(static_cast<char>(frames_[i + 1].byte));
}

void Matcher::migrate() {
  // The frames' lexer states mean nothing in the new epoch: replay every step there (parser
  // rows, completion checks and rollback points come out the same).
  std::vector<Step> steps = history_;
  std::vector<std::string> bytes(steps.size());
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].token < 0) {
      const size_t end = i + 1 < steps.size() ? steps[i + 1].frames : frames_.size();
      for (size_t k = steps[i].frames; k < end; ++k) bytes[i].push_back(static_cast<char>(frames_[k].byte));
    }
  migrating_ = true;
  epoch_ = g_->epoch();
  lexer_ = &epoch_->lexer;
  parser_.set_lexer(*lexer_);
  memo_ = MaskMemo{};
  for (IgnoredSlot& s : ignored_slots_) s = IgnoredSlot{};
  reset();
  for (size_t i = 0; i < steps.size(); ++i) {
    const bool ok = steps[i].token >= 0 ? accept_token(steps[i].token) : accept_bytes(bytes[i]);
    if (!ok) {
      migrating_ = false;
      throw GrammarError("internal error: a matcher could not replay its tokens into a renewed lexer");
    }
  }
  migrating_ = false;
}

void Matcher::reset() {
  follow_epoch();
  parser_.reset();
  frames_.clear();
  frames_.push_back(new_frame(lexer_->initial_state(parser_.top().lexer_start),
                              static_cast<uint32_t>(parser_.num_rows()), true, 0));
  history_.clear();
  terminated_ = false;
}

bool Matcher::end_lexeme(uint32_t ended_state, uint32_t* next_state) {
  const LexState& ls = lexer_->state(ended_state);
  if (!ls.any_ignore_only) {
    scratch_lexemes_.clear();
    for (uint32_t lex : ls.accepting)
      if (!lexer_->lexemes()[lex].ignore) scratch_lexemes_.push_back(lex);
    if (!parser_.scan(scratch_lexemes_.data(), scratch_lexemes_.size(), bytes_consumed())) return false;
    *next_state = parser_.top().lexer_start;
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

// share_end (trie walks only): when b ends the frame's lexeme, keep the parser rows of that end
// on the stack and remember them in the frame, so that the node's other children skip the
// scan (walk() pops back to them, not below).
bool Matcher::push_byte(uint8_t b, bool share_end) {
  Frame& f = frames_.back();
  const uint32_t rows_before = f.rows;
  // b starts a lexeme after a fresh frame or after the lexeme that ends before it
  uint32_t lex_start = f.fresh ? static_cast<uint32_t>(frames_.size() - 1) : f.lex_start;
  uint32_t t = lexer_->next(f.state, b);
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
  frames_.push_back(new_frame(t, rows_pushed, false, b));
  frames_.back().lex_start = lex_start;
  const LexState& ts = lexer_->state(t);
  if (ts.end_now) {
    uint32_t q;
    if (!end_lexeme(t, &q)) {
      frames_.pop_back();
      parser_.truncate(share_end ? rows_pushed : rows_before);
      return false;
    }
    Frame& f2 = frames_.back();
    f2.state = q;
    f2.rows = static_cast<uint32_t>(parser_.num_rows());
    f2.fresh = true;
  }
  return true;
}

// Tokens the lexeme at the top frame spans, counting the token in progress, which began after
// frame token_start - 1: one if the lexeme began inside it, else one more than the accepted
// tokens (steps) that hold some of its bytes.
uint32_t Matcher::lexeme_tokens(size_t token_start) const {
  const size_t first_byte = size_t(frames_.back().lex_start) + 1;
  if (first_byte >= token_start) return 1;
  // the step that pushed frame first_byte: the last one that began at or before it
  auto it = std::upper_bound(history_.begin(), history_.end(), first_byte,
                             [](size_t f, const Step& s) { return f < s.frames; });
  const size_t before = static_cast<size_t>(it - history_.begin());
  return static_cast<uint32_t>(history_.size() - (before > 0 ? before - 1 : 0) + 1);
}

// max_tokens, as llguidance means it: when a token ends inside a lexeme, the lexemes of the lexer
// state whose budget that token spent are dropped; when none is left, the lexeme must end right
// there, or the token is refused. `apply` (accept_token) changes the top frame; otherwise (the
// walks) it only judges, leaving the parser as it was.
bool Matcher::end_token_budget(size_t token_start, bool apply) {
  Frame& top = frames_.back();
  if (top.fresh) return true;
  const uint32_t s = lexer_->drop_spent(top.state, lexeme_tokens(token_start));
  if (s == top.state) return true;
  if (s != Lexer::kDead) {
    if (apply) top.state = s;
    return true;
  }
  const size_t rows = parser_.num_rows();
  uint32_t q;
  const bool ok = !lexer_->state(top.state).accepting.empty() && end_lexeme(top.state, &q);
  if (ok && apply) {
    top.state = q;
    top.rows = static_cast<uint32_t>(parser_.num_rows());
    top.fresh = true;
  } else {
    parser_.truncate(rows);
  }
  return ok;
}

bool Matcher::accepting_now() {
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

bool Matcher::is_accepting() {
  follow_epoch();
  return terminated_ || accepting_now();
}

bool Matcher::accept_special(int32_t token) {
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
  frames_.push_back(new_frame(parser_.top().lexer_start, static_cast<uint32_t>(parser_.num_rows()), true, 0));
  return true;
}

bool Matcher::accept_token(int64_t token) {
  vocab_->check_id(token);
  follow_epoch();
  if (terminated_) throw UsageError("the matcher has terminated (end of sequence accepted); call reset() or rollback() first");
  const int32_t t = static_cast<int32_t>(token);
  const uint32_t before = static_cast<uint32_t>(frames_.size());
  if (vocab_->is_special(t) && accept_special(t)) {
    history_.push_back({before, false, t});
    return true;
  }
  const auto& eos = vocab_->eos_ids();
  if (std::find(eos.begin(), eos.end(), t) != eos.end()) {
    if (!accepting_now()) return false;
    terminated_ = true;
    history_.push_back({before, true, t});
    return true;
  }
  if (vocab_->is_special(t) || t >= vocab_->num_tokens()) return false;
  std::string_view bytes = vocab_->token_bytes(t);
  if (bytes.empty()) return false;
  for (unsigned char c : bytes) {
    if (!push_byte(c)) {
      pop_to(before);
      return false;
    }
  }
  if (lexer_->has_budgets() && !end_token_budget(before, true)) {
    pop_to(before);
    return false;
  }
  history_.push_back({before, false, t});
  g_->renew_if_full(*epoch_);  // new states come from pushing bytes
  return true;
}

bool Matcher::accept_bytes(const std::string& bytes) {
  follow_epoch();
  if (terminated_) throw UsageError("the matcher has terminated (end of sequence accepted); call reset() or rollback() first");
  const size_t before = frames_.size();
  for (unsigned char c : bytes) {
    if (!push_byte(c)) {
      pop_to(before);
      return false;
    }
  }
  // Bytes count as one step for rollback.
  history_.push_back({static_cast<uint32_t>(before), false, -1});
  return true;
}

void Matcher::undo_tokens(size_t n) {
  for (size_t i = 0; i < n; ++i) {
    Step s = history_.back();
    history_.pop_back();
    pop_to(s.frames);
    if (s.eos) terminated_ = false;
  }
}

void Matcher::rollback(int64_t n) {
  follow_epoch();
  if (n < 0) throw UsageError("rollback: the count must be >= 0, got " + std::to_string(n));
  if (max_rollback_ >= 0 && n > max_rollback_)
    throw UsageError("rollback(" + std::to_string(n) + ") exceeds max_rollback=" + std::to_string(max_rollback_) +
                     " given when the matcher was created");
  if (static_cast<size_t>(n) > history_.size())
    throw UsageError("rollback(" + std::to_string(n) + "): only " + std::to_string(history_.size()) +
                     " tokens have been accepted");
  undo_tokens(static_cast<size_t>(n));
}

int64_t Matcher::validate_tokens(const std::vector<int64_t>& tokens) {
  follow_epoch();
  for (int64_t t : tokens) vocab_->check_id(t);
  if (terminated_) throw UsageError("the matcher has terminated (end of sequence accepted); call reset() or rollback() first");
  size_t ok = 0;
  for (int64_t t : tokens) {
    if (terminated_ || !accept_token(t)) break;
    ++ok;
  }
  undo_tokens(ok);
  return static_cast<int64_t>(ok);
}

// Walks the sub-trie at `first` with full lexer and parser machinery; the
// frame at index root + depth - 1 is the parent of a node at `depth`.
void Matcher::walk(const std::vector<TrieNode>& nodes, size_t first, size_t root, uint32_t* words) {
  const size_t end = first + nodes[first].subtree_size;
  for (size_t i = first; i < end;) {
    const TrieNode& node = nodes[i];
    frames_.resize(root + node.depth);
    const Frame& parent = frames_.back();
    parser_.truncate(parent.end_rows != 0 && parent.end_rows != kEndFails ? parent.end_rows : parent.rows);
    if (push_byte(node.byte, true)) {
      if (node.token_id >= 0 && (!lexer_->has_budgets() || end_token_budget(root + 1, false))) {
        words[node.token_id >> 5] |= 1u << (node.token_id & 31);
        walk_ids_.push_back(node.token_id);
      }
      ++i;
    } else {
      i += node.subtree_size;
    }
  }
}

// Completion checks read the bytes above a boundary: the token prefix its whole sub-trie shares.
// placed_parent_ is the parent node whose bytes frames root + 1... hold: boundaries under one
// parent (kept together in an entry) place them once; the walks below never touch those frames.
void Matcher::place_prefix(const Boundary& b, size_t d, size_t root, bool needs_text) {
  if (!needs_text || d <= 1 || b.parent == placed_parent_) return;
  placed_parent_ = b.parent;
  const std::string_view p = MaskCache::bytes_above(*vocab_, b.node);
  for (size_t i = 0; i < p.size(); ++i) {
    Frame& f = frames_[root + 1 + i];
    if (f.byte == static_cast<uint8_t>(p[i]) && f.serial != 0) continue;
    // New bytes from i on: this frame and every frame above it hold new text.
    for (size_t j = i; j < p.size(); ++j) {
      frames_[root + 1 + j].byte = static_cast<uint8_t>(p[j]);
      frames_[root + 1 + j].serial = ++next_serial_;
    }
    break;
  }
}

// Whether b continues the run of boundaries that `first` (at depth d) starts: the same lexer
// state, trie and depth; the same byte completing the lexeme (byte >= 0) or a byte the lexeme
// cannot take (byte < 0: it ends before it); under the same parent unless no check read the
// prefix.
bool Matcher::in_run(const Boundary& first, size_t d, const Boundary& b, int byte, bool any_prefix) const {
  if (b.lexer_state != first.lexer_state || (b.node & kRestTrieBit) != (first.node & kRestTrieBit)) return false;
  const TrieNode& n = MaskCache::trie_of(*vocab_, b.node).nodes()[b.node & ~kRestTrieBit];
  if (n.depth != d) return false;
  if (byte >= 0 ? n.byte != byte : lexer_->next(b.lexer_state, n.byte) != Lexer::kDead) return false;
  return any_prefix || d <= 1 || b.parent == first.parent || g_->grammar().checks.empty();
}

// Boundaries whose byte completes the lexeme (a string's closing quote): the frame below the
// boundary, with its prefix placed, is set up by the caller. The lexeme ends the same way for
// every boundary of the run (same lexer state, depth and byte; the same prefix unless no check
// read it), so the byte is pushed once and each boundary's children are walked from a copy.
// Returns the index of the first boundary after the run.
size_t Matcher::end_now_run(const std::vector<Boundary>& bounds, size_t k, size_t root, uint32_t* words,
                            bool* shared) {
  const Boundary& bd = bounds[k];
  const auto& nodes = MaskCache::trie_of(*vocab_, bd.node).nodes();
  const size_t d = nodes[bd.node & ~kRestTrieBit].depth;
  const uint8_t byte = nodes[bd.node & ~kRestTrieBit].byte;
  const bool needs_text = !g_->grammar().checks.empty();
  const bool ok = push_byte(byte);
  const bool any_prefix = !parser_.prefix_read();
  *shared = any_prefix;
  parser_.watch_prefix(0, 0);
  const Frame pushed = ok ? frames_.back() : Frame{};
  for (; k < bounds.size() && in_run(bd, d, bounds[k], byte, any_prefix); ++k) {
    const Boundary& b2 = bounds[k];
    const size_t n2 = b2.node & ~kRestTrieBit;
    if (!ok) continue;
    frames_.resize(root + d);
    place_prefix(b2, d, root, needs_text);
    frames_.push_back(pushed);
    frames_.back().serial = ++next_serial_;  // above a prefix that may differ from the first one's
    if (nodes[n2].token_id >= 0) {
      words[nodes[n2].token_id >> 5] |= 1u << (nodes[n2].token_id & 31);
      walk_ids_.push_back(nodes[n2].token_id);
    }
    const size_t end = n2 + nodes[n2].subtree_size;
    for (size_t c = n2 + 1; c < end; c += nodes[c].subtree_size) walk(nodes, c, root, words);
  }
  return k;
}

void Matcher::fill_mask(uint32_t* words, size_t num_words) {
  g_->renew_if_full(*epoch_);  // what the last walks built may have filled the lexer
  follow_epoch();
  const size_t need = (static_cast<size_t>(vocab_->vocab_size()) + 31) / 32;
  if (num_words < need)
    throw UsageError("bitmask row has " + std::to_string(num_words) + " words; the vocabulary needs " + std::to_string(need));
  std::fill(words + need, words + num_words, 0u);
  auto set = [&](int32_t t) {
    if (t >= 0 && t < vocab_->vocab_size()) words[t >> 5] |= 1u << (t & 31);
  };
  if (terminated_) {
    std::fill(words, words + need, 0u);
    for (int32_t t : vocab_->eos_ids()) set(t);
    return;
  }
  const Frame top = frames_.back();
  // Token budgets make the mask depend on the tokens a lexeme spans, which the memo does not key on.
  const bool memo_on = g_->limits().repeat_memo && parser_.num_rows() == top.rows && !lexer_->has_budgets();
  const uint64_t serial = parser_.top().serial;
  if (memo_on && memo_.valid && memo_.state == top.state && memo_.rows == top.rows && memo_.serial == serial &&
      memo_.fresh == top.fresh) {
    const std::vector<uint32_t>& inner = memo_.entry->inner();
    std::copy(inner.begin(), inner.begin() + need, words);
    for (int32_t t : memo_.extra) words[t >> 5] |= 1u << (t & 31);
    for (auto [a, b] : vocab_->trie().duplicates())
      if ((words[a >> 5] >> (a & 31)) & 1) set(b);
    return;
  }
  walk_ids_.clear();
  // Checks that read the current lexeme's bytes make this mask unfit for the memo.
  parser_.watch_text(parser_.top().offset, bytes_consumed());
  const size_t depth0 = frames_.size();
  const size_t root = depth0 - 1;
  std::shared_ptr<const MaskEntry> keep;
  const MaskEntry* entry = epoch_->cache.get(*lexer_, *vocab_, top.state, &keep);
  const std::vector<uint32_t>& inner = entry->inner();
  // A lexeme whose budget the next token would spend ends at that token's end: the cached
  // inner tokens (which stay inside it) do not hold then, so walk the whole trie.
  const bool budget_walk = lexer_->has_budgets() &&
                           lexer_->drop_spent(top.state, top.fresh ? 1 : lexeme_tokens(root + 1)) != top.state;
  if (budget_walk) {
    std::fill(words, words + need, 0u);
    frames_[root].end_rows = 0;
    const auto& nodes = vocab_->trie().nodes();
    for (size_t c = 1; c < nodes.size(); c += nodes[c].subtree_size) walk(nodes, c, root, words);
  } else {
    std::copy(inner.begin(), inner.begin() + need, words);
  }
  const bool needs_text = !g_->grammar().checks.empty();
  static const std::vector<Boundary> kNoBounds;
  const auto& bounds = budget_walk ? kNoBounds : entry->boundaries;
  placed_parent_ = ~0u;
  uint32_t unshared_state = Lexer::kDead;
  for (size_t k = 0; k < bounds.size();) {
    const Boundary& bd = bounds[k];
    const auto& nodes = MaskCache::trie_of(*vocab_, bd.node).nodes();
    const size_t node = bd.node & ~kRestTrieBit;
    const size_t d = nodes[node].depth;
    frames_.resize(root + d);
    {
      // The frame above the prefix: its bytes (set below) and serial stay when they match.
      Frame& back = frames_.back();
      const uint64_t serial = back.serial;
      const uint8_t byte = back.byte;
      back = {bd.lexer_state, top.rows, d == 1 ? top.fresh : false, d == 1 ? top.byte : byte};
      back.serial = d == 1 ? top.serial : serial;
      // the token's first d - 1 bytes went into the top lexeme (or started one after a fresh top)
      back.lex_start = d == 1 || !top.fresh ? top.lex_start : static_cast<uint32_t>(root);
    }
    place_prefix(bd, d, root, needs_text);
    parser_.truncate(top.rows);
    const LexState& ls = lexer_->state(bd.lexer_state);
    uint32_t q;
    const uint32_t prefix_at = static_cast<uint32_t>(root);  // bytes consumed before the token
    parser_.watch_prefix(prefix_at, prefix_at + static_cast<uint32_t>(d - 1));
    const uint8_t byte = nodes[node].byte;
    const uint32_t t = lexer_->next(bd.lexer_state, byte);
    // A run of one costs more than a plain walk: take it only when the next boundary may join.
    if (g_->limits().boundary_runs && t != Lexer::kDead && lexer_->state(t).end_now && k + 1 < bounds.size() &&
        in_run(bd, d, bounds[k + 1], byte, bd.lexer_state != unshared_state)) {
      bool shared = true;
      k = end_now_run(bounds, k, root, words, &shared);
      if (!shared) unshared_state = bd.lexer_state;  // a check reads its prefixes: runs only per parent
      continue;
    }
    if (!g_->limits().boundary_runs || t != Lexer::kDead ||
        ls.accepting.empty() ||
        !end_lexeme(bd.lexer_state, &q)) {
      parser_.watch_prefix(0, 0);
      walk(nodes, node, root, words);
      ++k;
      continue;
    }
    // The lexeme ends before this byte. The parser's work for that is the same
    // for the following boundaries with the same state and depth, and the same prefix unless
    // no check read the prefix: do it once and walk each of them from the state that starts
    // the next lexeme.
    const bool any_prefix = !parser_.prefix_read();
    parser_.watch_prefix(0, 0);
    Frame& ended = frames_.back();
    ended.state = q;
    ended.rows = static_cast<uint32_t>(parser_.num_rows());
    ended.fresh = true;
    const Frame ended_copy = ended;
    for (; k < bounds.size() && in_run(bd, d, bounds[k], -1, any_prefix); ++k) {
      const Boundary& b2 = bounds[k];
      frames_.resize(root + d);
      frames_.back() = ended_copy;
      place_prefix(b2, d, root, needs_text);  // the walk below reads this token's bytes
      walk(nodes, b2.node & ~kRestTrieBit, root, words);
    }
  }
  frames_.resize(depth0);
  frames_[root] = top;  // boundary walks rewrite the top frame
  parser_.truncate(top.rows);
  for (auto [a, b] : vocab_->trie().duplicates())
    if ((words[a >> 5] >> (a & 31)) & 1) set(b);
  // Special tokens the grammar names here, and end of sequence.
  std::vector<int32_t> specials;
  if (top.fresh) {
    parser_.add_allowed_specials(specials);
  } else if (!lexer_->state(top.state).accepting.empty()) {
    uint32_t q;
    if (end_lexeme(top.state, &q)) parser_.add_allowed_specials(specials);
    parser_.truncate(top.rows);
  }
  if (accepting_now()) specials.insert(specials.end(), vocab_->eos_ids().begin(), vocab_->eos_ids().end());
  for (int32_t t : specials)
    if (t >= 0 && t < vocab_->vocab_size()) {
      set(t);
      walk_ids_.push_back(t);
    }
  memo_.valid = memo_on && !parser_.watched_read();
  parser_.watch_text(0, 0);
  if (memo_.valid) {
    memo_.state = top.state;
    memo_.rows = top.rows;
    memo_.serial = serial;
    memo_.fresh = top.fresh;
    memo_.entry = entry;
    memo_.keep = std::move(keep);
    memo_.extra.swap(walk_ids_);  // the mask is inner | extra | duplicates: no 16 KB copy
  }
}

}  // namespace stencil

namespace stencil {

std::string Matcher::forced_bytes(size_t limit) {
  follow_epoch();
  std::string out;
  if (terminated_) return out;
  const size_t depth0 = frames_.size();
  const ByteClasses& bc = lexer_->classes();
  std::vector<int> class_size(bc.count(), 0);
  for (int b = 0; b < 256; ++b) class_size[bc.class_of[b]]++;
  while (out.size() < limit && !accepting_now()) {
    int only = -1, count = 0;
    // Bytes of one lexer class behave alike, so one probe per class suffices.
    for (int c = 0; c < bc.count() && count <= 1; ++c) {
      uint8_t rep = bc.representative[c];
      const size_t before = frames_.size();
      if (push_byte(rep)) {
        count += class_size[c];
        only = rep;
        pop_to(before);
      }
    }
    if (count != 1) break;
    push_byte(static_cast<uint8_t>(only));
    out.push_back(static_cast<char>(only));
  }
  pop_to(depth0);
  return out;
}

std::vector<int32_t> Matcher::forced_tokens(size_t limit) {
  follow_epoch();
  std::vector<int32_t> out;
  if (terminated_) return out;
  std::vector<uint32_t> mask((static_cast<size_t>(vocab_->vocab_size()) + 31) / 32);
  while (out.size() < limit) {
    fill_mask(mask.data(), mask.size());
    int32_t only = -1;
    int count = 0;
    for (size_t w = 0; w < mask.size() && count <= 1; ++w) {
      uint32_t bits = mask[w];
      while (bits && count <= 1) {
        int b = __builtin_ctz(bits);
        bits &= bits - 1;
        only = static_cast<int32_t>(w * 32 + b);
        ++count;
      }
    }
    if (count != 1) break;
    const auto& eos = vocab_->eos_ids();
    if (std::find(eos.begin(), eos.end(), only) != eos.end()) break;
    if (!accept_token(only)) break;
    out.push_back(only);
  }
  undo_tokens(out.size());
  return out;
}

std::string Matcher::debug_state() const {
  const Frame& f = frames_.back();
  return "lexer state " + std::to_string(f.state) + " [" + lexer_->describe_state(f.state) + "], " +
         std::to_string(parser_.num_rows()) + " parser rows (" + std::to_string(parser_.num_items()) + " items), " + std::to_string(history_.size()) + " tokens" +
         (terminated_ ? ", terminated" : "");
}

}  // namespace stencil
