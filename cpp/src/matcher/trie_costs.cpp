// The whole-trie cost walk: the mask walk's loop (walk_subtrie) with the cost read where a token
// ends. A sub-trie that stays inside its parent's lexeme (a string body) is costed without the
// parser: at once where its characters all lead the lexer state back to itself, else with the
// lexer alone.
#include "matcher/trie_costs.h"

#include <algorithm>

#include "tokens/trie_walk.h"

namespace stencil {

void TrieCosts::walk(ParseState& ps, const LexerEpoch& epoch, RowCosts& cost, RowCosts::Search search,
                     const Costs& specials) {
  after_.assign(static_cast<size_t>(vocab_.vocab_size()), cost::kInf);
  max_ = 0;
  for (const auto& [t, c] : specials) note(t, c);  // (no special token is in the trie)
  search_ = search;
  cost.forget_states();
  ps.begin_walk();
  const size_t root = ps.walk_root();
  ps.reset_shared_end(root);
  struct Visit {
    TrieCosts& w;
    ParseState& ps;
    RowCosts& cost;
    WalkLoops& loops;
    size_t root;
    bool took(size_t i, const TrieNode& node) {
      w.ticker_.tick();
      // (a leaf, or a node whose parent starts a lexeme, is walked: no call)
      return node.subtree_size > 1 && !ps.frames()[root + node.depth - 1].fresh &&
             w.take_loop(ps, cost, loops, i, node, root);
    }
    void token(const TrieNode& node) {
      const Frame& f = ps.frames().back();
      w.note(node.token_id, cost.at(ps.parser(), f.state, f.fresh, w.search_));
    }
  };
  const auto& nodes = vocab_.trie().nodes();
  WalkLoops loops(epoch.cache, ps.lexer());
  loop_states_.resize(static_cast<size_t>(vocab_.trie().max_depth()) + 2);
  Visit visit{*this, ps, cost, loops, root};
  // (should it throw, the matcher's call restores the frames)
  for (size_t c = 1; c < nodes.size(); c += nodes[c].subtree_size) walk_subtrie(ps, nodes, c, root, visit);
  ps.end_walk();
  for (auto [a, b] : vocab_.trie().duplicates()) after_[b] = after_[a];
}

// Costs the tokens of node i's sub-trie at once where it stays inside its parent's lexeme (then
// the walk goes on after it). Called by Visit::took only for a node with children whose parent
// has read a byte of its lexeme (that check is inline there, so that leaves make no call).
bool TrieCosts::take_loop(ParseState& ps, RowCosts& cost, WalkLoops& loops, size_t i, const TrieNode& node,
                          size_t root) {
  const TokenTrie& trie = vocab_.trie();
  const Lexer& lexer = ps.lexer();
  const CharSummary& chars = trie.summaries()[i];
  if (chars.has(CharSummary::kPoison)) return false;
  const uint32_t state = ps.frames()[root + node.depth - 1].state;
  // A sub-trie of ASCII characters that each lead the parent's state back to itself stays in that
  // state to its every token's end: one cost for all of them, no walk. With non-ASCII characters
  // too (a token may end inside one, in another lexer state), it still stays inside the lexeme:
  // walked with the lexer alone, no parser work.
  const bool ascii = !chars.has_groups();
  if (((ascii || node.byte < 0xC0) && lexer.next(state, node.byte) != state) || !loops.loops_over(state, chars, true))
    return false;
  ps.descend_unshared(root + node.depth);
  if (ascii) {
    cost_range(i, i + node.subtree_size, cost.at(ps.parser(), state, false, search_));
    return true;
  }
  const auto& nodes = trie.nodes();
  const size_t base = node.depth;
  loop_states_[0] = state;
  for (size_t j = i, end = i + node.subtree_size; j < end;) {
    const TrieNode& n = nodes[j];
    ticker_.tick();
    const uint32_t t = lexer.next(loop_states_[n.depth - base], n.byte);
    if (t == Lexer::kDead) {
      j += n.subtree_size;
      continue;
    }
    if (n.token_id >= 0) note(n.token_id, cost.at(ps.parser(), t, false, search_));
    loop_states_[n.depth - base + 1] = t;
    ++j;
  }
  return true;
}

// Every token of the trie nodes [i, end) costs c.
void TrieCosts::cost_range(size_t i, size_t end, uint32_t c) {
  const TokenTrie& trie = vocab_.trie();
  const auto& ordered = trie.ordered_tokens();
  const auto& before = trie.tokens_before();
  for (uint32_t j = before[i], last = before[end]; j < last; ++j) after_[ordered[j]] = c;
  max_ = std::max(max_, c);
}

void TrieCosts::special_costs(ParseState& ps, RowCosts& cost, Costs& out) {
  const auto& eos = vocab_.eos_ids();
  if (!specials_known_) {  // the special tokens some lexeme of the grammar names: no other is ever read
    for (const auto& lexeme : g_.grammar().lexemes)
      if (lexeme.special) specials_.insert(specials_.end(), lexeme.token_ids.begin(), lexeme.token_ids.end());
    std::sort(specials_.begin(), specials_.end());
    specials_.erase(std::unique(specials_.begin(), specials_.end()), specials_.end());
    specials_known_ = true;
  }
  for (int32_t t : specials_) {
    if (t < 0 || t >= vocab_.vocab_size() || std::find(eos.begin(), eos.end(), t) != eos.end()) continue;
    const size_t before = ps.frames().size();
    if (ps.push_special(t)) {
      out.emplace_back(t, cost.at(ps.parser(), ps.frames().back().state, true));
      ps.pop_to(before);
    } else {
      ps.trim_rows();
    }
  }
}

void TrieCosts::restrict(uint32_t* words, size_t need, int64_t remaining, uint32_t left) {
  const auto& eos = vocab_.eos_ids();
  auto is_eos = [&](int32_t t) { return std::find(eos.begin(), eos.end(), t) != eos.end(); };
  if (remaining < 1) {  // end of sequence alone, where the output is complete
    for (size_t w = 0; w < need; ++w)
      for (uint32_t bits = words[w]; bits; bits &= bits - 1)
        if (!is_eos(static_cast<int32_t>(w * 32 + __builtin_ctz(bits)))) words[w] &= ~(1u << __builtin_ctz(bits));
    return;
  }
  // Tokens over the budget go. Should none be left where the grammar allows some (a completion
  // check vetoed the way to finish the bound counted on, or no bound is known), the cheapest stay:
  // the output then ends as soon as it can rather than nowhere.
  unbudgeted_.assign(words, words + need);
  uint32_t cheapest = cost::kInf;
  bool kept = false;
  for (size_t w = 0; w < need; ++w) {
    for (uint32_t bits = words[w]; bits; bits &= bits - 1) {
      const int b = __builtin_ctz(bits);
      const int32_t t = static_cast<int32_t>(w * 32 + b);
      if (is_eos(t)) {  // allowed only when the output is complete already
        kept = true;
        continue;
      }
      cheapest = std::min(cheapest, after_[t]);
      if (after_[t] > left)
        words[w] &= ~(1u << b);
      else
        kept = true;
    }
  }
  if (kept) return;
  for (size_t w = 0; w < need; ++w)
    for (uint32_t bits = unbudgeted_[w]; bits; bits &= bits - 1) {
      const int b = __builtin_ctz(bits);
      if (after_[w * 32 + b] == cheapest) words[w] |= 1u << b;
    }
}

}  // namespace stencil
