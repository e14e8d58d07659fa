// Budget-aware masks: with k tokens left, a token t stays allowed only when the cost after t
// (CompletionCost: the fewest tokens that finish the output) is at most k - 1. The cost is a
// shortest path over tokens, so from a state of cost d <= k some token of cost d - 1 stays
// allowed, and a generation that starts within its budget ends valid (where the bound holds:
// see completion.h for what it does not model).
//
// The costs after every token come from one walk of the whole token trie per state (the plain
// walk, with the cost read at each token's node; sub-tries that stay in a looping string or
// number are costed at once or walked with the lexer alone); they are kept while the state
// repeats (inside a string), so a budget that does not bind costs a comparison per step there,
// and the mask is then the unbudgeted one bit for bit.
#include <algorithm>

#include "matcher/completion.h"
#include "stencil/errors.h"
#include "stencil/matcher.h"
#include "tokens/walk_loops.h"

namespace stencil {

CompletionCost& Matcher::completion_cost() {
  if (!cost_ || cost_epoch_ != epoch_.get()) {  // lexer states belong to one epoch
    cost_ = std::make_shared<CompletionCost>(g_->grammar(), CompletionTables::of(*epoch_, g_->grammar(), *vocab_));
    cost_epoch_ = epoch_.get();
    budget_.valid = false;
  }
  return *cost_;
}

int64_t Matcher::min_completion_tokens() {
  follow_epoch();
  if (terminated_) return 0;
  parser_.truncate(frames_.back().rows);
  const Frame& f = frames_.back();
  const uint32_t c = completion_cost().at(parser_, f.state, f.fresh);
  return c >= CompletionCost::kInf ? -1 : static_cast<int64_t>(c);
}

// The cost after each token the grammar allows here, into budget_.after (kInf elsewhere).
void Matcher::budget_walk() {
  CompletionCost& cost = completion_cost();
  const auto& nodes = vocab_->trie().nodes();
  std::vector<uint32_t>& after = budget_.after;
  after.assign(static_cast<size_t>(vocab_->vocab_size()), CompletionCost::kInf);
  uint32_t max = 0;
  const size_t root = frames_.size() - 1;
  const Frame top = frames_.back();
  frames_.back().end_rows = 0;
  struct Slot {
    uint64_t serial = 0;  // parser serials start at 1
    uint32_t state = 0;
    bool fresh = false;
    uint32_t cost = 0;
  };
  constexpr size_t kSlots = 256;
  Slot slots[kSlots];
  // Most tokens stay inside the current lexeme and share a few lexer states: memoized.
  auto cost_of = [&](uint32_t state, bool fresh) {
    const uint64_t serial = parser_.top().serial;
    Slot& slot = slots[(state * 0x9e3779b1u ^ static_cast<uint32_t>(serial) * 31u ^ fresh) & (kSlots - 1)];
    if (slot.serial != serial || slot.state != state || slot.fresh != fresh)
      slot = {serial, state, fresh, cost.at(parser_, state, fresh)};
    return slot.cost;
  };
  const TokenTrie& trie = vocab_->trie();
  const auto& summaries = trie.summaries();
  const auto& ordered = trie.ordered_tokens();
  const auto& before = trie.tokens_before();
  WalkLoops loops(epoch_->cache, *lexer_);
  std::vector<uint32_t> st(static_cast<size_t>(trie.max_depth()) + 2);  // lexer states down a sub-trie
  // As walk() does from the root, with the cost read where a token ends.
  for (size_t i = 1; i < nodes.size();) {
    const TrieNode& node = nodes[i];
    frames_.resize(root + node.depth);
    Frame& parent = frames_.back();
    // A sub-trie of ASCII characters that each lead the parent's state back to itself (a string
    // body) stays in that state to its every token's end: one cost for all of them, no walk.
    const CharSummary& chars = summaries[i];
    if (node.subtree_size > 1 && !parent.fresh && !chars.has_groups() && !chars.has(CharSummary::kPoison) &&
        lexer_->next(parent.state, node.byte) == parent.state && loops.loops_over(parent.state, chars, true)) {
      parser_.truncate(parent.rows);
      if (parent.end_rows != kEndFails) parent.end_rows = 0;  // a shared end of the lexeme is gone with its rows
      const uint32_t c = cost_of(parent.state, false);
      for (uint32_t j = before[i], end = before[i + node.subtree_size]; j < end; ++j) after[ordered[j]] = c;
      max = std::max(max, c);
      i += node.subtree_size;
      continue;
    }
    // With non-ASCII characters too (a token may end inside one, in another lexer state), the
    // sub-trie still stays inside the lexeme: walked with the lexer alone, no parser work.
    if (node.subtree_size > 1 && !parent.fresh && chars.has_groups() && !chars.has(CharSummary::kPoison) &&
        (node.byte >= 0xC0 || lexer_->next(parent.state, node.byte) == parent.state) &&
        loops.loops_over(parent.state, chars, true)) {
      parser_.truncate(parent.rows);
      if (parent.end_rows != kEndFails) parent.end_rows = 0;
      const size_t base = node.depth;
      st[0] = parent.state;
      for (size_t j = i, end = i + node.subtree_size; j < end;) {
        const TrieNode& n = nodes[j];
        const uint32_t t = lexer_->next(st[n.depth - base], n.byte);
        if (t == Lexer::kDead) {
          j += n.subtree_size;
          continue;
        }
        if (n.token_id >= 0) {
          const uint32_t c = cost_of(t, false);
          after[n.token_id] = c;
          max = std::max(max, c);
        }
        st[n.depth - base + 1] = t;
        ++j;
      }
      i += node.subtree_size;
      continue;
    }
    parser_.truncate(parent.end_rows != 0 && parent.end_rows != kEndFails ? parent.end_rows : parent.rows);
    if (!push_byte(node.byte, true)) {
      i += node.subtree_size;
      continue;
    }
    if (node.token_id >= 0) {
      const uint32_t c = cost_of(frames_.back().state, frames_.back().fresh);
      after[node.token_id] = c;
      max = std::max(max, c);
    }
    ++i;
  }
  frames_.resize(root + 1);
  frames_[root] = top;
  parser_.truncate(top.rows);
  for (auto [a, b] : vocab_->trie().duplicates()) after[b] = after[a];
  const auto& eos = vocab_->eos_ids();
  for (int32_t t : vocab_->special_ids()) {
    if (t < 0 || t >= vocab_->vocab_size() || std::find(eos.begin(), eos.end(), t) != eos.end()) continue;
    const size_t before = frames_.size();
    if (accept_special(t)) {
      const uint32_t c = cost.at(parser_, frames_.back().state, true);
      after[t] = c;
      max = std::max(max, c);
      pop_to(before);
    } else {
      parser_.truncate(top.rows);
    }
  }
  budget_.max = max;
}

void Matcher::fill_mask_within(uint32_t* words, size_t num_words, int64_t remaining) {
  fill_mask(words, num_words);
  if (remaining < 0 || terminated_) return;
  const size_t need = (static_cast<size_t>(vocab_->vocab_size()) + 31) / 32;
  const auto& eos = vocab_->eos_ids();
  auto is_eos = [&](int32_t t) { return std::find(eos.begin(), eos.end(), t) != eos.end(); };
  const uint32_t left = remaining - 1 >= CompletionCost::kInf ? CompletionCost::kInf - 1
                                                               : static_cast<uint32_t>(std::max<int64_t>(remaining - 1, 0));
  parser_.truncate(frames_.back().rows);
  const Frame top = frames_.back();  // a copy: the walk resizes the frames
  completion_cost();  // a new epoch drops the memo
  // The costs depend on the state alone, and on the bytes read when completion checks veto
  // (they decide which tokens are walked).
  const uint32_t consumed = g_->grammar().checks.empty() ? 0 : bytes_consumed();
  const uint64_t serial = parser_.top().serial;
  if (!budget_.valid || budget_.state != top.state || budget_.rows != top.rows || budget_.serial != serial ||
      budget_.fresh != top.fresh || budget_.consumed != consumed) {
    budget_.valid = false;
    budget_walk();
    budget_.state = top.state;
    budget_.rows = top.rows;
    budget_.serial = serial;
    budget_.fresh = top.fresh;
    budget_.consumed = consumed;
    budget_.valid = true;
  }
  if (remaining >= 1 && budget_.max <= left) return;  // the budget does not bind: the mask is unchanged
  // Tokens over the budget go. Should none be left where the grammar allows some (a completion
  // check vetoed the completion the bound counted on, or no bound is known), the cheapest stay:
  // the output then ends as soon as it can rather than nowhere.
  budget_.unbudgeted.assign(words, words + need);
  uint32_t cheapest = CompletionCost::kInf;
  bool kept = false;
  for (size_t w = 0; w < need; ++w) {
    for (uint32_t bits = words[w]; bits; bits &= bits - 1) {
      const int b = __builtin_ctz(bits);
      const int32_t t = static_cast<int32_t>(w * 32 + b);
      if (is_eos(t)) {  // allowed only when the output is complete already
        kept = true;
        continue;
      }
      cheapest = std::min(cheapest, budget_.after[t]);
      if (remaining < 1 || budget_.after[t] > left)
        words[w] &= ~(1u << b);
      else
        kept = true;
    }
  }
  if (kept || remaining < 1) return;
  for (size_t w = 0; w < need; ++w)
    for (uint32_t bits = budget_.unbudgeted[w]; bits; bits &= bits - 1) {
      const int b = __builtin_ctz(bits);
      if (budget_.after[w * 32 + b] == cheapest) words[w] |= 1u << b;
    }
}

}  // namespace stencil
