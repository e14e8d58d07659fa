// The fewest tokens that can still finish the output from a matcher state: the bound behind
// budget-aware masks (a token is allowed only when the output can still end valid within the
// tokens left after it).
//
// Tokens are real tokens of the vocabulary (and one per special token), each kept inside one
// lexeme: the count is the length of a real tokenization of a way to finish, an upper bound on the
// tokens a shortest one needs (tokens that span lexemes may do better). The count is a shortest
// path, which makes it consistent: from a state at cost d > 0 some token leads to a state at
// cost d - 1, so a budget of d or more tokens always leaves some token allowed.
//
// Costs come from the lexer and the parser's chart, cheaply:
// - per lexer state, the tokens each live lexeme still needs (a breadth-first search over the
//   lazy automaton with tokens as steps, memoized per state);
// - per grammar, the fewest tokens of each lexeme and nonterminal, and of each rule's rest after
//   each dot;
// - per parser row, the cost of finishing once a nonterminal completes there (a shortest path
//   through the items waiting on it, down the chain of origins; memoized per row).
// Completion checks (uniqueItems, duplicate keys, required keys in any order) and a greedy
// lexer reading two adjacent lexemes as one are not modeled: where they veto the shortest
// way to finish, the count is too small.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "matcher/inner_steps.h"
#include "parser/earley.h"
#include "support/deadline.h"
#include "stencil/vocabulary.h"
#include "tokens/trie.h"

namespace stencil {

struct LexerEpoch;

// What the bound needs of a grammar and a lexer epoch, shared by all its matchers (built on a
// budget's first use): per lexeme and per dotted rule position the fewest tokens, and per lexer
// state the fewest tokens that end each of its live lexemes (memoized behind a lock).
class FinishTables {
 public:
  static constexpr uint32_t kInf = 1u << 30;  // no way to finish known
  using Costs = std::vector<std::pair<uint32_t, uint32_t>>;  // (id, cost), sorted by id
  FinishTables(const Grammar& g, const Lexer& lexer, const MaskCache& cache, const Vocabulary& vocab);
  // The tables of `epoch` (its grammar and vocabulary: g, vocab), built once.
  static std::shared_ptr<FinishTables> of(const LexerEpoch& epoch, const Grammar& g, const Vocabulary& vocab);
  static uint32_t add(uint32_t a, uint32_t b) { return a + b >= kInf ? kInf : a + b; }
  const Costs& lexer_costs(uint32_t state);  // the returned reference stays valid
  // Where the inner tokens of lexer state `state` lead (built on first use; `inner`, `need`
  // words: its mask cache entry's inner bits, which the table must cover).
  std::shared_ptr<const InnerSteps> inner_steps(uint32_t state, const uint32_t* inner, size_t need);
  // The most tokens that any state reachable from `alone` (a state of one lexeme) needs to end
  // its lexeme (kInf: unknown): a bound on the cost of a token that stays inside the lexeme,
  // whatever state it leads to. In single-byte tokens over the states explored (up to a few
  // hundred); for a counted string body (`C{lo,k} rest`) the distance from `alone` plus a cut
  // character's bytes, and what `rest` needs. See ceiling.cpp.
  uint32_t state_ceiling(uint32_t alone);
  // The lexer states that the byte strings of at most the longest token's length lead `state` to
  // inside its lexeme (by byte class: a superset of the tokens' successors), `state` included;
  // empty past 128 states (and for the states such a search found) or where a number lives.
  // Memoized; the returned reference stays valid.
  const std::vector<uint32_t>& reach(uint32_t state);
  // Per (lexeme, expression) pair of `state` (in Lexer::probe_state's order): the state holding it
  // alone, its lexeme (kNoLexeme where several stay alive), and Lexer::pair_bytes' bounds in
  // single-byte tokens (kInf unless every byte is a token of its own). Memoized; the returned
  // reference stays valid.
  static constexpr uint32_t kNoLexeme = ~0u;
  struct Pair {
    uint32_t alone, lexeme, shortest, ceiling;
  };
  const std::vector<Pair>& pairs(uint32_t state);
  // The distance from `alone` (a state of one lexeme) to its lexeme's end in single-byte tokens
  // (kInf: unknown, or past a few hundred states), memoized.
  uint32_t state_bytes(uint32_t alone);
  const Lexer& lexer() const { return lexer_; }
  // What the tables hold on the heap (the lexer states their searches made count in the lexer).
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  std::vector<uint32_t> lexeme_min;  // per lexeme
  std::vector<uint32_t> rest;        // per dotted position: tokens for the rule's symbols from there
  std::vector<uint32_t> rule_at;     // per dotted position: its rule

 private:
  // (ticker: this search's, as the tables are shared by threads)
  uint32_t bfs_to(uint32_t state, const std::vector<uint32_t>& targets, Costs* out, size_t max_states,
                  deadline::Ticker& ticker) const;
  // (max_work: trie nodes the search may walk; past them path_to_end bounds the rest)
  uint32_t tokens_to_end(uint32_t state, uint32_t lexeme, size_t max_states, size_t max_work,
                         deadline::Ticker& ticker);
  // tokens_to_end's search over tokens (`cut_short`: the bound where it stops short, given the
  // best found so far).
  uint32_t token_search(uint32_t state, uint32_t lexeme, size_t max_states, size_t max_work,
                        const std::function<uint32_t(uint32_t)>& cut_short);
  bool ends_lexeme(uint32_t state, uint32_t lexeme) const;  // lexeme ends in state
  // A token path to the end of a lexeme from `state` read off a path in single bytes to it
  // (`bytes`, from byte_distance: its tokens longest first), with the states it passes.
  uint32_t path_to_end(uint32_t state, const std::vector<uint8_t>& bytes, std::vector<uint32_t>* passed);
  struct ByteSteps {
    std::vector<int> rep;               // per byte class: a byte of it, a token where one is (-1: none; empty: unusable)
    std::vector<uint8_t> token_class;  // per class: rep is a token of its own
  };
  ByteSteps byte_steps() const;  // (for byte_steps_, in the constructor)
  // (with `path`: the bytes of the path found; the shortest one, unless the breadth-first search
  // passes a thousand states: *shortest, where given, says which)
  uint32_t byte_distance(uint32_t start, uint32_t l, std::vector<uint8_t>* path = nullptr,
                         bool* shortest = nullptr) const;
  uint32_t byte_search(uint32_t start, uint32_t l, std::vector<uint8_t>* path, bool* shortest = nullptr) const;
  uint32_t byte_dive(uint32_t start, uint32_t l, std::vector<uint8_t>* path) const;
  uint32_t explore_ceilings(uint32_t start, uint32_t l);
  uint32_t too_many(const std::vector<uint32_t>& explored);  // kInf, the states kept in no_search_
  bool beyond_search(uint32_t alone);
  // Adds state -> value to one of the state memos below (the first value stays), counting its
  // bytes; the caller holds mu_ exclusively.
  void remember(std::unordered_map<uint32_t, uint32_t>& memo, uint32_t state, uint32_t value);
  static std::vector<uint32_t> most_after(const std::vector<std::vector<uint32_t>>& out,
                                          const std::vector<uint32_t>& value);
  const std::vector<uint32_t>& token_successors(uint32_t state, size_t* work = nullptr);
  // (`walked`: counts the trie nodes its walk visits)
  bool ends_in_one_token(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker, size_t* walked);
  // The most trie nodes one walk of a state's successors visited in lexeme l (widest_), and a
  // walk's count noted.
  size_t widest_walk(uint32_t l);
  void note_walk(uint32_t l, size_t nodes);
  // tokens_to_end for a counted string body `C{lo,k} rest` where C takes every plain character
  // (kInf for other states): see finish_cost.cpp.
  uint32_t text_to_end(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker);
  // The fewest plain tokens of whole characters that hold exactly n characters in all (kInf: no
  // sum makes n), from PlainSlice::whole_counts; grown on demand.
  uint32_t plain_tokens_for(uint32_t n);
  const std::vector<uint32_t>& keep_successors(uint32_t state, std::vector<uint32_t> out);
  const Lexer& lexer_;
  const MaskCache& cache_;  // its loop memos (the epoch's, as the lexer)
  const Vocabulary& vocab_;
  const TokenTrie& trie_;
  const std::vector<uint32_t>& reach_of(uint32_t state, std::vector<uint32_t> found);  // memoizes reach
  std::vector<uint8_t> single_bytes_;  // the bytes that are tokens of their own
  ByteSteps byte_steps_;               // per byte class, for the single-byte searches
  std::shared_mutex mu_;
  std::unordered_map<uint32_t, Costs> state_costs_;  // lexer state -> live lexeme costs; mu_
  std::unordered_map<uint32_t, std::shared_ptr<const InnerSteps>> inner_steps_;  // lexer state ->; mu_
  std::unordered_map<uint32_t, uint32_t> to_end_;  // state of one lexeme -> tokens to its end; mu_
  std::unordered_map<uint32_t, std::vector<uint32_t>> successors_;  // state -> one token's; mu_
  std::unordered_map<uint32_t, uint32_t> ceilings_;  // state of one lexeme -> state_ceiling; mu_
  std::unordered_map<uint32_t, std::vector<uint32_t>> reach_;  // state -> reach; mu_
  std::unordered_map<uint32_t, uint32_t> no_search_;  // states a ceiling search passed, failing (too_many); mu_
  std::unordered_map<uint32_t, uint32_t> bytes_to_end_;  // state of one lexeme -> state_bytes; mu_
  std::unordered_map<uint32_t, std::vector<Pair>> pairs_;  // lexer state -> pairs; mu_
  std::vector<uint32_t> plain_tokens_;  // plain_tokens_for(n) for n below its size; mu_
  std::vector<size_t> widest_;          // per lexeme: widest_walk; mu_
  // Every byte class has a byte that is a token of its own (bytes of one class lead alike from
  // every lexer state, so any path in bytes is one in single-byte tokens of the same length).
  bool all_bytes_ = false;
  std::atomic<size_t> bytes_{0};
};

// The bound over one matcher's parser (its rows' costs are its own).
class FinishCost {
 public:
  static constexpr uint32_t kInf = FinishTables::kInf;
  FinishCost(const Grammar& g, std::shared_ptr<FinishTables> tables) : g_(g), t_(std::move(tables)) {}
  // The cost from lexer state `state` (fresh: no byte of its lexeme read yet) over the parser's
  // top row.
  uint32_t at(const EarleyParser& p, uint32_t state, bool fresh);
  // A bound on at() after any token that stays inside the lexeme of `state` (over the parser's
  // top row): the largest lexeme ceiling plus what follows the lexeme, over its live lexemes.
  // A lexeme's ceiling is read off its expression (Lexer::pair_bytes) and searched for
  // (FinishTables::state_ceiling) only where that bound puts the sum over `limit`; where it still
  // does, the largest bytes_bound over the states one token reaches
  // (FinishTables::reach) where that is less.
  uint32_t inner_ceiling(const EarleyParser& p, uint32_t state, uint32_t limit);
  // A bound on at(p, state, false) from the lexemes' distances in single-byte tokens (no token
  // search): the least over the live lexemes not vetoed at the row. The distances are read off
  // the expressions, else (with `search`) found by a search over the lexer's states.
  uint32_t bytes_bound(const EarleyParser& p, uint32_t state, bool search = true);
  FinishTables& tables() { return *t_; }

 private:
  using Costs = FinishTables::Costs;
  struct RowCosts {
    Costs up;                 // nonterminal -> cost to finish once it completes at this row
    uint32_t fresh = kInf;    // from this row with no byte of the next lexeme read
    bool has_fresh = false;
    Costs scan;               // lexeme -> cost once it is scanned from this row (memo)
  };
  static uint32_t add(uint32_t a, uint32_t b) { return FinishTables::add(a, b); }
  static uint32_t find(const Costs& c, uint32_t id);
  const Costs& lexer_costs(uint32_t state);
  RowCosts& row_costs(const EarleyParser& p, uint32_t row);
  uint32_t finish_item(const EarleyParser& p, const EarleyItem& it, uint32_t rest);
  uint32_t fresh_cost(const EarleyParser& p, uint32_t row);
  uint32_t scan_cost(const EarleyParser& p, uint32_t row, uint32_t lexeme);

  const Grammar& g_;
  std::shared_ptr<FinishTables> t_;
  // A lock-free front for the tables' memos of lexer states (their entries never move): a map,
  // and before it the states asked lately (a mask asks a few states many times).
  template <class T>
  struct Front {
    std::unordered_map<uint32_t, const T*> all;
    uint32_t recent_state[64] = {};  // (0 is Lexer::kDead: never asked)
    const T* recent[64] = {};
    template <class Find>
    const T& get(uint32_t state, Find find) {
      const size_t i = (state * 2654435761u) >> 26;
      if (recent_state[i] == state && recent[i]) return *recent[i];
      auto it = all.find(state);
      const T* found = it != all.end() ? it->second : all.emplace(state, find()).first->second;
      recent_state[i] = state;
      recent[i] = found;
      return *found;
    }
  };
  Front<Costs> states_;                            // t_->lexer_costs
  Front<std::vector<FinishTables::Pair>> pairs_;  // t_->pairs
  const std::vector<FinishTables::Pair>& pairs(uint32_t state);
  struct RowSlot {
    uint64_t serial = 0;  // of the row whose costs these are (parser serials start at 1)
    RowCosts costs;
  };
  std::vector<RowSlot> rows_;  // per parser row index
  std::vector<uint32_t> dist_, touched_;                 // row_costs' scratch
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> edges_;
  std::vector<std::pair<uint32_t, uint32_t>> heap_;
  deadline::Ticker ticker_;                              // items and nonterminals costed
};

}  // namespace stencil
