#include "matcher/mask_walker.h"

#include <algorithm>

#include "json/canon.h"
#include "tokens/trie_walk.h"

namespace stencil {

MaskWalker::MaskWalker(const CompiledGrammar& g)
    : g_(&g), vocab_(&g.vocab()), needs_text_(!g.grammar().checks.empty()) {}

void MaskWalker::fill(ParseState& ps, const LexerEpoch& epoch, const std::vector<Step>& history, uint32_t* words,
                      size_t need, CostSink* sink) {
  ps_ = &ps;
  history_ = &history;
  sink_ = sink;
  const Lexer& lexer = ps.lexer();
  const EarleyParser& parser = ps.parser();
  ParseChecks checks = ps.checks();
  const bool memo_on = this->memo_on(ps);
  const uint64_t serial = parser.top().serial;
  if (!sink && replays(ps)) {
    replay_memo(words, need);
    return;
  }
  walk_ids_.clear();
  leaf_classes_.clear();
  // Checks that read the current lexeme's bytes make this mask unfit for the memo.
  checks.reads().watch(ReadWatch::kText, parser.top().offset, ps.bytes_consumed());
  ps.begin_walk();
  const Frame& top = ps.walk_top();
  const size_t root = ps.walk_root();
  std::shared_ptr<const MaskEntry> keep;
  const MaskEntry* entry = epoch.cache.get(lexer, *vocab_, top.state, &keep);
  // A lexeme whose token limit the next token would reach ends at that token's end: the cached
  // inner tokens (which stay inside it) do not hold then, so walk the whole trie.
  const bool limit_walk = lexer.has_token_limits() &&
                          lexer.drop_spent(top.state, top.fresh ? 1 : ps.lexeme_tokens(root + 1, history)) != top.state;
  if (limit_walk) {
    std::fill(words, words + need, 0u);
    walk_whole_trie(root, words);
  } else {
    entry->write_inner(words, need);
    struct Walking {  // the walks' rows are not kept by the parser's key memos, even if they throw
      ParseChecks& c;
      ~Walking() { c.set_stable_end(~0u); }
    } walking{checks};
    checks.set_stable_end(ps.bytes_consumed());
    dropped_.clear();
    if (parser.veto_touches(top.rows - 1, lexer.state(top.state)) || lexer.key_may_finite(top.state)) {
      drop_vetoed(root, words);
      ps.end_walk();
    }
    // (not under a budget: its costs after a token are bounds where they fit the budget, which
    // shrinks mask by mask; keeping the exact ones only cost budget masks 2% on the check half)
    walks_on_ = !sink && memo_on;
    if (walks_on_) begin_walks(top, serial);
    // (an entry the cache does not hold is walked once: not worth merging)
    const MergedRuns* merged =
        g_->limits().boundary_runs && !keep ? epoch.cache.merged_runs(lexer, *vocab_, *entry) : nullptr;
    walk_boundaries(*entry, merged, root, words);
    walks_on_ = false;
  }
  ps.end_walk();  // boundary walks rewrite the top frame
  add_duplicates(words);
  add_specials(words);
  memo_.valid = memo_on && !checks.reads().read(ReadWatch::kText);
  checks.reads().watch(ReadWatch::kText, 0, 0);
  if (memo_.valid) keep_memo(top, serial, entry, std::move(keep));
}

void MaskWalker::begin_walks(const Frame& top, uint64_t serial) {
  // What one matcher keeps (about 0.5 MB), then begun afresh: a count's own boundaries (an
  // escape's, whose state after differs per count) add entries at every byte of a long string.
  constexpr size_t kMostIds = size_t(1) << 16, kMostWalks = size_t(1) << 14;
  if (walks_.serial == serial && walks_.rows == top.rows && walks_.fresh == top.fresh && walks_.ids.size() < kMostIds &&
      walks_.walks.size() < kMostWalks)
    return;
  walks_.serial = serial;
  walks_.rows = top.rows;
  walks_.fresh = top.fresh;
  walks_.walks.clear();
  walks_.ids.clear();
  if (walks_.at.size() >= kMostWalks) walks_.at.clear();  // (else its entries go stale)
}

// A boundary's walk kept by an earlier fill over the same rows: its tokens set, true.
bool MaskWalker::walk_known(size_t node, uint32_t after, uint32_t* words) {
  const uint64_t key = walk_key(node, after);
  const uint32_t* at = walks_.at.find(key);
  if (!at || *at >= walks_.walks.size() || walks_.walks[*at].key != key) return false;
  const BoundaryWalks::Walk& w = walks_.walks[*at];
  for (uint32_t i = w.begin; i < w.end; ++i) set(words, walks_.ids[i]);
  return true;
}

// Keeps the tokens a boundary's walk set (walk_ids_ from `mark`) unless a check read the current
// lexeme's bytes since text_reads (its verdict may differ at the next byte).
void MaskWalker::keep_walk(size_t node, uint32_t after, size_t mark, uint64_t text_reads) {
  if (ps_->checks().reads().text_reads() != text_reads) return;
  const uint64_t key = walk_key(node, after);
  const auto begin = static_cast<uint32_t>(walks_.ids.size());
  walks_.ids.insert(walks_.ids.end(), walk_ids_.begin() + static_cast<std::ptrdiff_t>(mark), walk_ids_.end());
  walks_.walks.push_back({key, begin, static_cast<uint32_t>(walks_.ids.size())});
  walks_.at.put(key, static_cast<uint32_t>(walks_.walks.size() - 1));
}

void MaskWalker::replay_memo(uint32_t* words, size_t need) const {
  memo_.entry->write_inner(words, need);
  for (int32_t t : memo_.dropped) token_bits::clear(words, t);
  for (int32_t t : memo_.extra) token_bits::set(words, t);
  add_duplicates(words);
}

void MaskWalker::keep_memo(const Frame& top, uint64_t serial, const MaskEntry* entry,
                           std::shared_ptr<const MaskEntry> keep) {
  memo_.state = top.state;
  memo_.rows = top.rows;
  memo_.serial = serial;
  memo_.fresh = top.fresh;
  memo_.entry = entry;
  memo_.keep = std::move(keep);
  memo_.extra.swap(walk_ids_);  // the mask is inner - dropped | extra | duplicates: no 16 KB copy
  memo_.dropped.swap(dropped_);
}

// The cache keeps each lexer state's entry as if no lexeme were vetoed (EarleyParser::vetoed_only)
// and no key exhausted by the keys written before it (EarleyParser::exhausted_only): here its inner
// tokens that reach a state of such lexemes alone are taken out. The trie is walked by the lexer
// alone, and only where a vetoed lexeme is live (below the prefixes of the keys written so far)
// or a key may be left with a finite language. Where a lexeme may end before such a byte (without
// the vetoes it went on), the parser walks that sub-trie as it walks a boundary's.
void MaskWalker::drop_vetoed(size_t root, uint32_t* words) {
  const EarleyParser& parser = ps_->parser();
  ParseChecks checks = ps_->checks();
  const Lexer& lexer = ps_->lexer();
  const TokenTrie& trie = vocab_->trie();
  const auto& nodes = trie.nodes();
  const Frame& top = ps_->walk_top();
  const uint32_t row = top.rows - 1;
  drop_states_.resize(static_cast<size_t>(trie.max_depth()) + 2);
  drop_path_.resize(drop_states_.size());
  drop_states_[0] = top.state;
  drop_path_[0] = 0;
  // the key's bytes before the token (exhausted_only reads them), then the token's
  const uint32_t lex_from = top.fresh ? static_cast<uint32_t>(root) : top.lex_start;
  drop_bytes_ = ps_->bytes(size_t(lex_from) + 1, root + 1);
  const size_t before = drop_bytes_.size();
  const uint64_t veto_bits = parser.row(row).veto_bits;
  // (a key already off the forbidden keys before the token: no byte of it is exhausted)
  // (nor a key with nothing to forbid: the first of its object)
  const bool keys = lexer.key_may_finite(top.state) &&
                    !checks.left_before(row, lex_from, static_cast<uint32_t>(root)) &&
                    checks.some_key_forbidden(row, top.state);
  for (const LiveRoots::Root& r : live_roots(top.state)) {
    if (!keys && (r.live_bits & veto_bits) == 0) continue;  // no vetoed lexeme live below: as cached
    for (size_t i = r.node, end = r.node + nodes[r.node].subtree_size; i < end;) {
      const TrieNode& node = nodes[i];
      ticker_.tick();
      const uint32_t p = drop_states_[node.depth - 1];
      const uint32_t t = lexer.next_tagged(p, node.byte);
      // Dead or ending: a boundary, which the boundary walks judge; nothing vetoed or exhausted
      // may be live: as cached.
      if (t == Lexer::kDead || (t & Lexer::kEndNowTag)) {
        i += node.subtree_size;
        continue;
      }
      drop_bytes_.resize(before + node.depth - 1);
      drop_bytes_.push_back(static_cast<char>(node.byte));
      // (whether the prefix left the forbidden keys first: a key of a large pattern costs a
      // search to say whether it may become finite, and most prefixes leave at their first byte)
      if (!parser.veto_touches(row, lexer.state(t)) &&
          (!keys || checks.keys_left(row, t, drop_bytes_, lex_from, static_cast<uint32_t>(root)) ||
           !lexer.key_may_finite(t))) {
        i += node.subtree_size;
        continue;
      }
      bool left = false;
      if (!refused_inside(row, t, keys, lex_from, static_cast<uint32_t>(root), &left)) {
        // off the forbidden keys (and no veto): nothing below is refused either
        if (left && !parser.veto_touches(row, lexer.state(t))) {
          i += node.subtree_size;
          continue;
        }
        drop_states_[node.depth] = t;
        drop_path_[node.depth] = static_cast<uint32_t>(i);
        ++i;
        continue;
      }
      drop_subtree(trie, i, words);
      if (!lexer.state(p).accepting.empty()) {
        const Boundary b{static_cast<uint32_t>(i), p, drop_path_[node.depth - 1]};
        enter_boundary(b, node.depth, root);
        walk(nodes, i, root, words);
      }
      i += node.subtree_size;
    }
  }
}

// Whether the parser refuses lexer state t inside a token: all its lexemes vetoed at the row, or
// (with `keys`) exhausted keys, their bytes in drop_bytes_ from byte lex_from (the text holds them
// up to root); *left when its key has left every forbidden key (EarleyParser::exhaust_left).
bool MaskWalker::refused_inside(uint32_t row, uint32_t t, bool keys, uint32_t lex_from, uint32_t root, bool* left) {
  ParseChecks checks = ps_->checks();
  const LexState& s = ps_->lexer().state(t);
  // (a prefix off the forbidden keys where no veto touches t was skipped before: drop_vetoed)
  if (!keys || !s.key_finite || !checks.may_exhaust(row, t)) return ps_->parser().vetoed_only(row, s);
  const bool refused = checks.exhausted_only(row, t, drop_bytes_, lex_from, root);
  *left = !refused && ps_->parser().exhaust_left();
  return refused;
}

// The trie's first-level nodes whose byte the lexer takes from `state` without ending at once, with
// the lexemes live after it (a walk from a key's start thus skips the ~250 bytes no key begins
// with, and inside a key the bytes that only other keys take). A few recent states.
const std::vector<MaskWalker::LiveRoots::Root>& MaskWalker::live_roots(uint32_t state) {
  LiveRoots* victim = &live_roots_[0];
  for (LiveRoots& e : live_roots_) {
    if (e.last_use != 0 && e.state == state) {
      e.last_use = ++live_roots_clock_;
      return e.nodes;
    }
    if (e.last_use < victim->last_use) victim = &e;
  }
  const Lexer& lexer = ps_->lexer();
  const auto& nodes = vocab_->trie().nodes();
  victim->last_use = 0;  // not valid until built (the lexer may throw on a work limit)
  victim->nodes.clear();
  for (size_t i = 1; i < nodes.size(); i += nodes[i].subtree_size) {
    const uint32_t t = lexer.next_tagged(state, nodes[i].byte);
    if (t != Lexer::kDead && !(t & Lexer::kEndNowTag))
      victim->nodes.push_back({static_cast<uint32_t>(i), lexer.state(t).live_bits});
  }
  victim->state = state;
  victim->last_use = ++live_roots_clock_;
  return victim->nodes;
}

void MaskWalker::drop_subtree(const TokenTrie& trie, size_t node, uint32_t* words) {
  const int32_t* ordered = trie.ordered_tokens().data();
  const uint32_t* before = trie.tokens_before().data();
  for (uint32_t j = before[node], end = before[node + trie.nodes()[node].subtree_size]; j < end; ++j) {
    const int32_t t = ordered[j];
    if (token_bits::has(words, t)) {
      token_bits::clear(words, t);
      dropped_.push_back(t);
    }
  }
}

void MaskWalker::add_duplicates(uint32_t* words) const {
  const int32_t n = vocab_->vocab_size();
  for (auto [a, b] : vocab_->trie().duplicates())
    if (token_bits::has(words, a) && b >= 0 && b < n) token_bits::set(words, b);
}

// Special tokens the grammar names here, and end of sequence.
void MaskWalker::add_specials(uint32_t* words) {
  std::vector<int32_t> specials;
  ps_->add_allowed_specials(specials);
  if (ps_->accepting()) specials.insert(specials.end(), vocab_->eos_ids().begin(), vocab_->eos_ids().end());
  for (int32_t t : specials)
    if (t >= 0 && t < vocab_->vocab_size()) set(words, t);
}

void MaskWalker::walk_whole_trie(size_t root, uint32_t* words) {
  ps_->reset_shared_end(root);
  const auto& nodes = vocab_->trie().nodes();
  for (size_t c = 1; c < nodes.size(); c += nodes[c].subtree_size) walk(nodes, c, root, words);
}

// Walks the sub-trie at `first` with full lexer and parser machinery; the
// frame at index root + depth - 1 is the parent of a node at `depth`.
void MaskWalker::walk(const std::vector<TrieNode>& nodes, size_t first, size_t root, uint32_t* words) {
  struct Visit {
    MaskWalker& w;
    ParseState& ps;
    uint32_t* words;
    size_t root;
    bool limits;
    bool took(size_t, const TrieNode&) {
      w.ticker_.tick();
      return false;
    }
    void token(const TrieNode& node) {
      if (limits && !ps.end_token_limit(root + 1, *w.history_, false)) return;
      w.set(words, node.token_id);
      if (w.sink_) w.sink_->token_reached(node.token_id, ps);
    }
  };
  walk_subtrie(*ps_, nodes, first, root, Visit{*this, *ps_, words, root, ps_->lexer().has_token_limits()});
}

// The boundaries of the lexer state's entry, in the order the cache keeps them (runs together).
void MaskWalker::walk_boundaries(const MaskEntry& entry, const MergedRuns* m, size_t root, uint32_t* words) {
  const std::vector<Boundary>& bounds = entry.boundaries;
  const Lexer& lexer = ps_->lexer();
  ReadWatch& reads = ps_->checks().reads();
  const bool runs = g_->limits().boundary_runs;
  // (token limits judge each token on its own)
  static const std::vector<MergedRuns::Run> kNone;
  const auto& merged = m && !lexer.has_token_limits() ? m->runs : kNone;
  size_t next_merged = 0;
  placed_parent_ = ~0u;
  uint32_t unshared_state = Lexer::kDead;
  for (size_t k = 0; k < bounds.size();) {
    const Boundary& bd = bounds[k];
    const size_t d = bd.depth;
    while (next_merged < merged.size() && merged[next_merged].first < k) ++next_merged;
    if (next_merged < merged.size() && merged[next_merged].first == k &&
        merged_run(bounds, merged[next_merged], root, words)) {
      k = merged[next_merged].end;
      continue;
    }
    enter_boundary(bd, d, root);
    const uint32_t prefix_at = static_cast<uint32_t>(root);  // bytes consumed before the token
    reads.watch(ReadWatch::kPrefix, prefix_at, prefix_at + static_cast<uint32_t>(d - 1));
    const uint32_t t = lexer.next(bd.lexer_state, bd.byte);
    // A run of one costs more than a plain walk: take it only when the next boundary may join.
    if (runs && t != Lexer::kDead && lexer.state(t).end_now && k + 1 < bounds.size() &&
        in_run(bd, bounds[k + 1], bd.lexer_state != unshared_state)) {
      bool shared = true;
      k = end_now_run(bounds, k, root, words, &shared);
      if (!shared) unshared_state = bd.lexer_state;  // a check reads its prefixes: runs only per parent
      continue;
    }
    uint32_t q;
    if (!runs || t != Lexer::kDead || lexer.state(bd.lexer_state).accepting.empty() ||
        !ps_->end_lexeme(bd.lexer_state, &q)) {
      reads.watch(ReadWatch::kPrefix, 0, 0);
      const bool keep = t != Lexer::kDead && walks_from(bd.lexer_state);
      if (!keep || !walk_known(bd.node, t, words)) {
        const size_t mark = walk_ids_.size();
        const uint64_t text_reads = reads.text_reads();
        walk(MaskCache::trie_of(*vocab_, bd.node).nodes(), bd.node & ~kRestTrieBit, root, words);
        if (keep) keep_walk(bd.node, t, mark, text_reads);
      }
      ++k;
      continue;
    }
    k = ended_run(bounds, k, d, q, root, words);
  }
}

// Enters boundary b (at depth d): the lexer state before its byte over the root's parser rows
// (ParseState::enter_boundary), with the token's first d - 1 bytes placed above the root.
void MaskWalker::enter_boundary(const Boundary& b, size_t d, size_t root) {
  ps_->enter_boundary(b.lexer_state, d);
  place_prefix(b, d);
}

// Completion checks read the bytes above a boundary: the token prefix its whole sub-trie shares.
// placed_parent_ is the parent node whose bytes frames root + 1... hold: boundaries under one
// parent (kept together in an entry) place them once; the walks below never touch those frames.
void MaskWalker::place_prefix(const Boundary& b, size_t d) {
  if (!needs_text_ || d <= 1 || b.parent == placed_parent_) return;
  place_prefix(b, d, MaskCache::bytes_above(*vocab_, b.node));
}

// place_prefix, the token's bytes above the root (`prefix`) known.
void MaskWalker::place_prefix(const Boundary& b, size_t d, std::string_view prefix) {
  if (!needs_text_ || d <= 1 || b.parent == placed_parent_) return;
  placed_parent_ = b.parent;
  ps_->place_prefix(prefix);
}

// Whether b (first itself, or a boundary after it, each continuing the run so far) continues the
// run of boundaries that `first` starts: in its group (the same lexer state, trie and depth; the
// same byte completing the lexeme, or a byte the lexeme cannot take: Boundary::joins), under the
// same parent unless no check read the prefix.
bool MaskWalker::in_run(const Boundary& first, const Boundary& b, bool any_prefix) const {
  if (&b != &first && !b.joins) return false;
  return any_prefix || b.depth <= 1 || b.parent == first.parent || !needs_text_;
}

// Boundaries whose byte completes the lexeme (a string's closing quote): the frame below the
// boundary, with its prefix placed, is set up by the caller. The lexeme ends the same way for
// every boundary of the run (same lexer state, depth and byte; the same prefix unless no check
// read it), so the byte is pushed once and each boundary's children are walked from a copy.
// Tokens that close a key of any string share the push too where the checks read the key only
// to look it up in sets of names (EarleyParser::watch_key_sets: the other keys of its object,
// the named properties): each token's own key is looked up in them, and one found there is
// walked alone, after the run (its push would take the rows the run's copies stand on).
// Returns the index of the first boundary after the run.
size_t MaskWalker::end_now_run(const std::vector<Boundary>& bounds, size_t k, size_t root, uint32_t* words,
                               bool* shared) {
  ParseChecks checks = ps_->checks();
  const Frame& top = ps_->walk_top();
  const Boundary& bd = bounds[k];
  const auto& nodes = MaskCache::trie_of(*vocab_, bd.node).nodes();
  const size_t d = bd.depth;
  const uint8_t byte = bd.byte;
  // A key of any string closing as a repeat is judged per token below (its bytes differ).
  const uint32_t closing = ps_->lexer().next(bd.lexer_state, byte);
  const LexState* closed = closing != Lexer::kDead ? &ps_->lexer().state(closing) : nullptr;
  // (keys checked as they end share the push as keys checked after their member do: by key sets)
  const bool key_closing = closed && (closed->key_closed || closed->key_end_checked);
  bool keys = closed && closed->key_closed;
  // A key begun before the token that no forbidden key begins like: no token of the run repeats
  // one, and nothing is read (the mask stays fit for the memo; a rollback forgets it).
  if (keys && !top.fresh)
    keys = checks.key_may_close_written(top.rows - 1, closing, top.lex_start, static_cast<uint32_t>(root));
  key_sets_.clear();
  const uint64_t push_reads = checks.reads().text_reads();
  const bool ok = ps_->run_push(byte, key_closing ? &key_sets_ : nullptr);
  // (no walks kept where a key closes: its checks read its bytes)
  const bool keep = ok && !key_closing && checks.reads().text_reads() == push_reads && walks_from(bd.lexer_state);
  const bool any_prefix = !checks.reads().read(ReadWatch::kPrefix);
  *shared = any_prefix;
  checks.reads().watch(ReadWatch::kPrefix, 0, 0);
  const bool by_key = !key_sets_.empty();  // (a push refused may be the first key's own name)
  sets_lengths_ = KeyLengths{};
  for (const std::vector<std::string>& names : key_sets_) sets_lengths_.add(names);
  alone_.clear();
  // (a new frame for the children: leaf verdicts start again, or go on from an earlier run alike)
  leaf_run_ = leaf_class(bd.lexer_state, byte, false, ok && any_prefix && !by_key && !keys);
  const bool leaves = !ps_->lexer().has_token_limits();
  // The closing byte ended the lexeme: a child byte no lexeme may start with is refused unwalked.
  const Lexer& lexer = ps_->lexer();
  const uint32_t pushed = ok ? ps_->run_frame().state : Lexer::kDead;
  const bool starts_only = ok && ps_->run_frame().fresh && lexer.state(pushed).accepting.empty();
  bool head = false;  // key_head_ and written_ are set for the run
  for (; k < bounds.size() && in_run(bd, bounds[k], any_prefix); ++k) {
    const Boundary& b2 = bounds[k];
    const size_t n2 = b2.node & ~kRestTrieBit;
    if (by_key && !ok) alone_.push_back(k);
    if (!ok || (keep && walk_known(b2.node, closing, words))) continue;
    const size_t mark = walk_ids_.size();
    const uint64_t text_reads = checks.reads().text_reads();
    ps_->run_next(d);
    // The token's bytes go above the root only where something may read them: a walk below it
    // (no leaf verdict known for every child), a budget's costs, a key's first or slow checks.
    const bool text = sink_ || !children_known(nodes, n2, starts_only, pushed, leaves);
    std::string_view prefix;  // the token's bytes above the root, read once for the text and the key
    if (by_key || keys) {
      prefix = d > 1 ? MaskCache::bytes_above(*vocab_, b2.node) : std::string_view();
      if (text || !head) place_prefix(b2, d, prefix);
      if (!head) {
        run_keys(closing, root, d, keys);
        head = true;
      }
      key_raw(prefix, root, byte);
    } else if (text) {
      place_prefix(b2, d);
    }
    if (by_key && key_in_sets()) {
      alone_.push_back(k);
      continue;
    }
    if (keys && closes_written(closing, byte, root, d, b2, prefix)) continue;
    ps_->run_again();  // above a prefix that may differ from the first one's
    if (nodes[n2].token_id >= 0) run_token(nodes[n2].token_id, words);
    walk_children(nodes, n2, root, d, words, starts_only, pushed, leaves);
    if (keep) keep_walk(b2.node, closing, mark, text_reads);
  }
  for (size_t j : alone_) {
    enter_boundary(bounds[j], d, root);
    walk(nodes, bounds[j].node & ~kRestTrieBit, root, words);
  }
  return k;
}

// A run's boundary that is a token itself (`ab"`, its children walked after): allowed, its cost
// reported after the push.
void MaskWalker::run_token(int32_t token, uint32_t* words) {
  set(words, token);
  if (sink_) {
    ps_->trim_rows();  // the children walked before may have left rows above
    sink_->token_reached(token, *ps_);
  }
}

// What a run of boundaries closing a key shares: where the key begins and its bytes before the
// token (key_head_), and, where the run asks whether a token closes a written key (`keys`), what
// ParseState::closes_written_key reads that is alike for every token (written_).
void MaskWalker::run_keys(uint32_t closing, size_t root, size_t d, bool keys) {
  const Frame& below = ps_->frames()[root + d - 1];  // (alike for the run: enter_boundary)
  key_from_ = below.lex_start;
  key_head_.clear();
  if (key_from_ < root) key_head_ = ps_->bytes(size_t(key_from_) + 1, root + 1);
  written_.never = true;
  written_.slow = written_.found = written_.any = false;
  if (!keys) return;
  ParseChecks checks = ps_->checks();
  const uint32_t row = below.rows - 1, to = static_cast<uint32_t>(root + d - 1);
  const LexState& s = ps_->lexer().state(closing);
  // (ParseState::exhausted's tests; `closing` closes a key of any string: LexState::key_closed)
  written_.never = below.fresh || !checks.may_exhaust(row, closing) || checks.left_before(row, key_from_, to);
  written_.slow = s.key_finite;
  if (written_.never || written_.slow) return;
  const std::vector<std::string>* forbidden = checks.first_key_forbidden(row, closing, written_.found);
  written_.any = forbidden != nullptr;
  if (forbidden) written_.keys = *forbidden;  // (a copy: the parser's memo slot may be reused)
  written_.lengths = KeyLengths{};
  written_.lengths.add(written_.keys);
}

// The key that a boundary closes, raw: key_head_, the token's bytes of the key up to the
// boundary's (of `prefix`, the token's bytes above the root), then `closing`; into key_raw_, and
// decoded once for key_in_sets and key_known_new (key_, where key_readable_).
void MaskWalker::key_raw(std::string_view prefix, size_t root, uint8_t closing) {
  key_raw_.assign(key_head_);
  key_raw_.append(prefix.substr(key_from_ > root ? std::min(prefix.size(), key_from_ - root) : 0));
  key_raw_.push_back(static_cast<char>(closing));
  key_readable_ = json_whole_string(key_raw_, key_decoded_, &key_);
}

// Whether the key of key_raw_ is in one of key_sets_, or cannot be read: then the token is walked
// alone.
bool MaskWalker::key_in_sets() {
  if (!key_readable_) return true;
  if (!sets_lengths_.may_hold(key_.size())) return false;
  for (const std::vector<std::string>& names : key_sets_)
    if (std::binary_search(names.begin(), names.end(), key_)) return true;
  return false;
}

// ParseState::closes_written_key(closing, byte) for the token of key_raw_, with what the run
// shares read once (run_keys): a plain key that no written key is, the common answer, is looked up
// here (EarleyParser::closes_written_key's first test); the rest is asked as before.
bool MaskWalker::closes_written(uint32_t closing, uint8_t byte, size_t root, size_t d, const Boundary& b,
                                std::string_view prefix) {
  if (key_known_new(root, d)) return false;
  place_prefix(b, d, prefix);  // (the check reads the key's text)
  return ps_->checks().closes_written_key(closing, byte);
}

// closes_written's answer where the names alone give it (EarleyParser::closes_written_key's
// first test): true where the key of key_raw_ is known to be none of the written ones.
bool MaskWalker::key_known_new(size_t root, size_t d) {
  if (written_.never) return true;
  // (a spelling with escapes too: a 262k vocabulary has hundreds of `\"`-like tokens before a
  // quote, each asked the slow way before)
  if (written_.slow || !key_readable_) return false;
  if ((!written_.found || written_.lengths.may_hold(key_.size())) &&
      !EarleyParser::new_key(key_, written_.found, written_.any ? &written_.keys : nullptr))
    return false;
  ps_->checks().reads().note(key_from_, static_cast<uint32_t>(root + d - 1));  // (read the key as new)
  return true;
}

// A child of the boundaries of an end_now_run that is a leaf (`,` under `a"`), or a boundary of
// an ended_run that is one (`,` of `1,`): its verdict from the run's frame is its byte's, for
// every boundary, when its walk read no byte of the token's prefix (bytes root .. root + d - 2):
// kept per byte for the run, with the cost a budget noted after it (the parse after the leaf is
// the same too).
void MaskWalker::walk_leaf(const std::vector<TrieNode>& nodes, size_t c, size_t root, size_t d, uint32_t* words) {
  if (leaf_known(nodes[c], words)) return;
  ReadWatch& reads = ps_->checks().reads();
  reads.watch(ReadWatch::kPrefix, static_cast<uint32_t>(root), static_cast<uint32_t>(root + d - 1));
  const size_t mark = walk_ids_.size();
  walk(nodes, c, root, words);
  const bool read = reads.read(ReadWatch::kPrefix);
  reads.watch(ReadWatch::kPrefix, 0, 0);
  const bool allowed = walk_ids_.size() > mark;
  if (!read) leaf_verdicts_[nodes[c].byte] = {leaf_run_, allowed, allowed && sink_ ? sink_->last_noted() : 0};
}

// The children of boundary node n2 (at depth d) over the run's frame: a byte no lexeme may start
// with after the push (starts_only, as in ended_run) refused unwalked, leaves by their verdicts.
void MaskWalker::walk_children(const std::vector<TrieNode>& nodes, size_t n2, size_t root, size_t d, uint32_t* words,
                               bool starts_only, uint32_t pushed, bool leaves) {
  const Lexer& lexer = ps_->lexer();
  for (size_t c = n2 + 1, end = n2 + nodes[n2].subtree_size; c < end; c += nodes[c].subtree_size) {
    if (starts_only && lexer.next(pushed, nodes[c].byte) == Lexer::kDead) continue;
    if (leaves && nodes[c].subtree_size == 1)
      walk_leaf(nodes, c, root, d, words);
    else
      walk(nodes, c, root, words);
  }
}

// Whether every child of boundary node n2 that the lexer lets start after the run's push (pushed:
// its frame's state, starts_only as in end_now_run) is a leaf whose verdict the run knows.
bool MaskWalker::children_known(const std::vector<TrieNode>& nodes, size_t n2, bool starts_only, uint32_t pushed,
                                bool leaves) const {
  const Lexer& lexer = ps_->lexer();
  for (size_t c = n2 + 1, end = n2 + nodes[n2].subtree_size; c < end; c += nodes[c].subtree_size) {
    if (starts_only && lexer.next(pushed, nodes[c].byte) == Lexer::kDead) continue;
    if (!leaves || nodes[c].subtree_size != 1 || leaf_verdicts_[nodes[c].byte].run != leaf_run_) return false;
  }
  return true;
}

// A leaf's verdict known for the current run (walk_leaf): its token set where allowed.
bool MaskWalker::leaf_known(const TrieNode& leaf, uint32_t* words) {
  const LeafVerdict& v = leaf_verdicts_[leaf.byte];
  if (v.run != leaf_run_) return false;
  if (v.allowed) {
    set(words, leaf.token_id);
    if (sink_) sink_->token_noted(leaf.token_id, v.cost);  // (the same parse after it)
  }
  return true;
}

// The leaf verdicts' run for a run pushing `byte` over lexer state `state` (`ended`: ending the
// lexeme before its byte, whatever it is). Runs of one fill that do so at other depths (`a"` and
// `abc"` closing a string; `1,` and `12,` after a number) push the same frame over the same rows
// where no check read their prefixes and no key is closed (`shared`): a leaf's verdict from one
// holds in the next, as it does within a run.
uint64_t MaskWalker::leaf_class(uint32_t state, uint8_t byte, bool ended, bool shared) {
  if (shared)
    for (const LeafClass& c : leaf_classes_)
      if (c.state == state && c.byte == byte && c.ended == ended) return c.run;
  ++leaf_clock_;
  if (shared) leaf_classes_.push_back({state, byte, ended, leaf_clock_});
  return leaf_clock_;
}

// Boundaries where the lexeme ends before their byte, the first one's end already scanned
// (q: the state that starts the next lexeme). The parser's work for that is the same for the
// following boundaries with the same state and depth, and the same prefix unless no check read
// the prefix: done once, and each of them is walked from the state after it.
// Returns the index of the first boundary after the run.
size_t MaskWalker::ended_run(const std::vector<Boundary>& bounds, size_t k, size_t d, uint32_t q, size_t root,
                             uint32_t* words) {
  ReadWatch& reads = ps_->checks().reads();
  const Boundary& bd = bounds[k];
  const auto& nodes = MaskCache::trie_of(*vocab_, bd.node).nodes();
  const bool any_prefix = !reads.read(ReadWatch::kPrefix);
  reads.watch(ReadWatch::kPrefix, 0, 0);
  ps_->run_end(q);
  // A byte no lexeme may start with after the end (a letter after a number, most of the bytes
  // tokens go on with there) is refused whatever the prefix: its sub-trie is skipped unwalked.
  const Lexer& lexer = ps_->lexer();
  const bool starts_only = lexer.state(q).accepting.empty();
  // A boundary that is a leaf (`1,` after a number) is judged by its byte once for the run (and
  // runs alike: leaf_class), as end_now_run's leaves are.
  const bool leaves = !lexer.has_token_limits();
  leaf_run_ = leaf_class(bd.lexer_state, 0, true, any_prefix);
  for (; k < bounds.size() && in_run(bd, bounds[k], any_prefix); ++k) {
    const Boundary& b2 = bounds[k];
    if (starts_only && lexer.next(q, b2.byte) == Lexer::kDead) continue;
    const size_t n2 = b2.node & ~kRestTrieBit;
    const bool leaf = leaves && nodes[n2].subtree_size == 1;
    if (leaf && leaf_known(nodes[n2], words)) continue;
    ps_->run_enter(d);
    place_prefix(b2, d);  // the walk below reads this token's bytes
    if (leaf)
      walk_leaf(nodes, n2, root, d, words);
    else
      walk(nodes, n2, root, words);
  }
  return k;
}

}  // namespace stencil
