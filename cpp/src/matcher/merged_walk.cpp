// MaskWalker's walk of merged runs (tokens/merged_runs.h): a class of boundaries that end a
// lexeme alike at every depth, its byte pushed once and the trie of what follows walked once.
#include "json/canon.h"
#include "matcher/mask_walker.h"
#include "tokens/trie_walk.h"

namespace stencil {

// A class of boundaries whose byte completes the lexeme alike at every depth (MergedRuns), entered
// at its first boundary: its byte pushed once, and the trie of the bytes after it walked once, each
// of its nodes allowing every token that ends there. Where the byte closes a key, each allowed
// token's own key is then judged as end_now_run judges it (by boundary: a key in the push's sets
// of names is walked alone, one already written refused). False, with nothing set, where a check
// read the bytes before the boundary (or the push refused a key): the class then goes by runs of
// one depth.
bool MaskWalker::merged_run(const std::vector<Boundary>& bounds, const MergedRuns::Run& run, size_t root,
                            uint32_t* words) {
  const Boundary& bd = bounds[run.first];
  const size_t d = bd.depth;
  enter_boundary(bd, d, root);
  // A check that reads the lexeme's text up to the boundary reads other bytes below another
  // boundary of the class: watched from the lexeme's last byte before the token (the first
  // boundary's prefix may be empty), or from the token's first where the lexeme begins in it.
  const uint32_t from =
      ps_->frames()[root + d - 1].lex_start < root ? static_cast<uint32_t>(root - 1) : static_cast<uint32_t>(root);
  const uint32_t to = static_cast<uint32_t>(root + d - 1);
  if (from == to) return false;
  const Lexer& lexer = ps_->lexer();
  ParseChecks checks = ps_->checks();
  const Frame& top = ps_->walk_top();
  const uint32_t closing = lexer.next(bd.lexer_state, bd.byte);
  const LexState& closed = lexer.state(closing);
  const bool key_closing = closed.key_closed || closed.key_end_checked;
  bool keys = closed.key_closed;
  if (keys && !top.fresh)
    keys = checks.key_may_close_written(top.rows - 1, closing, top.lex_start, static_cast<uint32_t>(root));
  key_sets_.clear();
  ReadWatch& reads = checks.reads();
  reads.watch(ReadWatch::kPrefix, from, to);
  const bool ok = ps_->run_push(bd.byte, key_closing ? &key_sets_ : nullptr);
  if (reads.read(ReadWatch::kPrefix)) return false;
  const bool by_key = !key_sets_.empty();
  if (!ok) return !by_key;  // refused after every prefix alike (unless it was the first key's own name)
  const size_t mark = walk_ids_.size(), noted = sink_ ? sink_->noted() : 0;
  merged_from_.clear();
  judge_keys_ = by_key || keys;
  const MergedClass& m = *run.trie;
  const TrieNode& head = m.nodes[0];
  if (head.token_id >= 0) merged_tokens(m, head, words);
  struct Visit {
    MaskWalker& w;
    const MergedClass& m;
    uint32_t* words;
    bool took(size_t, const TrieNode&) {
      w.ticker_.tick();
      return false;
    }
    void token(const TrieNode& node) { w.merged_tokens(m, node, words); }
  };
  for (size_t c = 1; c < head.subtree_size; c += m.nodes[c].subtree_size)
    walk_subtrie(*ps_, m.nodes, c, root, Visit{*this, m, words});
  placed_parent_ = ~0u;  // (the walk read its bytes into the frames of deeper boundaries' prefixes)
  if (reads.read(ReadWatch::kPrefix)) {
    for (size_t i = mark; i < walk_ids_.size(); ++i) token_bits::clear(words, walk_ids_[i]);
    walk_ids_.resize(mark);
    if (sink_) sink_->forget_after(noted);
    return false;
  }
  if (judge_keys_) merged_keys(bounds, run, closing, keys, by_key, mark, noted, root, words);
  return true;
}

// The tokens of a merged run's trie node: allowed, each with the cost after the first (the
// parse after them is one).
void MaskWalker::merged_tokens(const MergedClass& m, const TrieNode& node, uint32_t* words) {
  const auto i = static_cast<size_t>(node.token_id);
  for (uint32_t j = m.id_begin[i]; j < m.id_begin[i + 1]; ++j) {
    set(words, m.ids[j]);
    if (judge_keys_) merged_from_.push_back(m.from[j]);
    if (!sink_) continue;
    if (j == m.id_begin[i])
      sink_->token_reached(m.ids[j], *ps_);
    else
      sink_->token_noted(m.ids[j], sink_->last_noted());
  }
}

// A merged run whose byte closes a key: the tokens it allowed from walk_ids_[mark] on (their
// boundaries in merged_from_) judged by their keys, a boundary at a time; those refused taken
// out (and from a budget's notes), those whose key is in a set of names walked alone.
void MaskWalker::merged_keys(const std::vector<Boundary>& bounds, const MergedRuns::Run& run, uint32_t closing,
                             bool keys, bool by_key, size_t mark, size_t noted, size_t root, uint32_t* words) {
  enum : uint8_t { kUnused, kUnknown, kKeep, kAlone, kRefused };
  verdicts_.assign(run.end - run.first, kUnused);
  for (size_t i = mark; i < walk_ids_.size(); ++i) verdicts_[merged_from_[i - mark]] = kUnknown;
  sets_lengths_ = KeyLengths{};
  for (const std::vector<std::string>& names : key_sets_) sets_lengths_.add(names);
  size_t at_depth = 0;  // run_keys was read at this depth (0: not yet)
  const bool fresh = ps_->walk_top().fresh;
  size_t head = kHeadUnknown;  // the key's plain bytes before the token (plain_key_head)
  alone_.clear();
  // By boundary, in the run's order, which is by depth: the frames below a depth entered and
  // run_keys read once per depth (the tokens' trie order goes back and forth between depths).
  for (size_t off = 0; off < verdicts_.size(); ++off) {
    uint8_t& v = verdicts_[off];
    if (v != kUnknown) continue;
    const Boundary& b = bounds[run.first + off];
    const size_t d = b.depth;
    std::string_view prefix;
    // (the frames below a boundary only where a check reads them: what run_keys reads is alike
    // at one depth, and most keys are known new by the names)
    bool entered = false;
    if (at_depth != d) {
      prefix = d > 1 ? MaskCache::bytes_above(*vocab_, b.node) : std::string_view();
      ps_->enter_boundary(b.lexer_state, d);
      placed_parent_ = ~0u;  // (a shallower boundary's frames dropped the deeper prefix's)
      place_prefix(b, d, prefix);
      run_keys(closing, root, d, keys);
      at_depth = d;
      entered = true;
      if (head == kHeadUnknown) head = plain_key_head(fresh);
    }
    if (head != kHeadNot && run.trie->plain_prefix[off] && key_by_length(head, d, by_key, keys, root)) {
      v = kKeep;
      continue;
    }
    if (!entered && d > 1) prefix = MaskCache::bytes_above(*vocab_, b.node);
    key_raw(prefix, root, b.byte);
    if (by_key && key_in_sets()) {
      v = kAlone;
      alone_.push_back(run.first + off);
    } else if (!keys || key_known_new(root, d)) {
      v = kKeep;
    } else {
      if (!entered) ps_->enter_boundary(b.lexer_state, d);
      v = closes_written(closing, b.byte, root, d, b, prefix) ? kRefused : kKeep;
    }
  }
  size_t kept = mark;
  kept_.clear();
  for (size_t i = mark; i < walk_ids_.size(); ++i) {
    const uint8_t v = verdicts_[merged_from_[i - mark]];
    if (v == kKeep)
      walk_ids_[kept++] = walk_ids_[i];
    else
      token_bits::clear(words, walk_ids_[i]);
    if (sink_) kept_.push_back(v == kKeep);
  }
  walk_ids_.resize(kept);
  if (sink_) sink_->keep_noted(noted, kept_);  // (its notes follow walk_ids_ one for one)
  placed_parent_ = ~0u;
  for (size_t j : alone_) {
    enter_boundary(bounds[j], bounds[j].depth, root);
    walk(MaskCache::trie_of(*vocab_, bounds[j].node).nodes(), bounds[j].node & ~kRestTrieBit, root, words);
  }
}

// A key begun before the token (not `fresh`) whose bytes so far (key_head_, white space before
// its quote) are plain: the count of its bytes after the quote, else kHeadNot. Then a boundary
// whose prefix is plain closes a key of a known length.
size_t MaskWalker::plain_key_head(bool fresh) const {
  if (fresh) return kHeadNot;
  const size_t at = json_space_prefix(key_head_);
  if (at == key_head_.size() || key_head_[at] != '"' || !json_plain_body(std::string_view(key_head_).substr(at + 1)))
    return kHeadNot;
  return key_head_.size() - at - 1;
}

// What key_in_sets and key_known_new answer from the key's length alone, for a plain key of
// `head` bytes before the token and d - 1 in it: true where its length is no name's in the sets
// and no written key's (the names say it is new; read as such).
bool MaskWalker::key_by_length(size_t head, size_t d, bool by_key, bool keys, size_t root) {
  if (by_key && sets_lengths_.may_hold(head + d - 1)) return false;
  if (!keys || written_.never) return true;
  // (key_known_new's test on the key's decoded length: no white space or quotes)
  if (written_.slow || !written_.found || written_.lengths.may_hold(head + d - 1)) return false;
  ps_->checks().reads().note(key_from_, static_cast<uint32_t>(root + d - 1));
  return true;
}

}  // namespace stencil
