// The fewest tokens that end a lexeme from a lexer state, found by searches over the lexer's
// lazy automaton with the lexer alone (no parser): breadth-first over tokens (each state it
// expands a walk of the token trie that stays inside the lexeme), a coin problem for counted
// string bodies, and searches in single-byte tokens (bytes that are tokens of their own) whose
// paths, cut into tokens, bound the cost where a token search cannot be afforded. Every figure
// is the length of a real token path to the lexeme's end, memoized along the states it passes:
// see README.md for why that keeps the bound consistent.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cost/memo.h"
#include "support/byteset.h"
#include "support/deadline.h"

namespace stencil {

class Lexer;
class MaskCache;
class TokenTrie;
class Vocabulary;

class LexemeSearch {
 public:
  static constexpr uint32_t kInf = cost::kInf;
  // Per lexer state a walk reaches: the states a token search may keep and the trie nodes it may
  // walk (past them the path in single bytes bounds the cost).
  static constexpr size_t kStateStates = 1u << 12;
  static constexpr size_t kStateWork = 1u << 17;
  // relaxed_to_end: the bounds a token search lifts, tried in turn (from the first of these at
  // which the state can be relaxed; its path is then checked against them).
  static constexpr uint32_t kRelaxTokens[] = {16, 32, 64, 128, 256};
  static constexpr uint32_t kRelaxMisses = 4;
  // The longest minLength a coin problem answers (a longer one: searched).
  static constexpr uint32_t kMaxCount = 1u << 16;
  // `lexemes`: the grammar's count; `bytes`: the owner's heap count, which the memos add to.
  LexemeSearch(const Lexer& lexer, const MaskCache& cache, const Vocabulary& vocab, size_t lexemes,
               std::atomic<size_t>& bytes);
  // The fewest tokens (a bound: the length of a real path) from `state` to an end of `lexeme`,
  // where `state` holds that lexeme alone. (ticker: the calling search's, as the tables are
  // shared by threads)
  uint32_t tokens_to_end(uint32_t state, uint32_t lexeme, size_t max_states, size_t max_work, deadline::Ticker& ticker);
  // Breadth-first with tokens as steps from `state` until each of `targets` (sorted lexemes) is
  // accepting: (lexeme, fewest tokens) into out, sorted; the count found.
  uint32_t bfs_to(uint32_t state, const std::vector<uint32_t>& targets, cost::Costs* out, size_t max_states,
                  deadline::Ticker& ticker) const;
  // The distance from `alone` (a state of one lexeme) to its lexeme's end in single-byte tokens
  // (kInf: unknown, or past a few hundred states), memoized.
  uint32_t state_bytes(uint32_t alone);
  // state_bytes where its search was breadth-first to the end (the fewest single-byte tokens,
  // which drop by one along that path); else kInf.
  uint32_t shortest_bytes(uint32_t alone);
  // The distance from `start` to an end of lexeme l in single-byte tokens, breadth-first (with
  // `path`: its bytes; *shortest, where given, says whether it is the shortest: past a thousand
  // states the search goes depth-first).
  uint32_t byte_distance(uint32_t start, uint32_t l, std::vector<uint8_t>* path = nullptr,
                         bool* shortest = nullptr) const;
  bool ends_lexeme(uint32_t state, uint32_t lexeme) const;
  // tokens_to_end where it needs no search: memoized already, 0 at the lexeme's end, or the rest
  // is one string; else kInf.
  uint32_t known_to_end(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker);
  // known_to_end, else the path in single bytes to the lexeme's end (byte_distance) cut into tokens
  // (path_to_end) and memoized along its states as a search's path is: no token search. What a
  // state's cost falls back to where the searches ran out of work: far tighter than the single
  // bytes where tokens are long (a URI's counts beside a minLength).
  uint32_t path_bound(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker);
  // The tokens of the path the memo holds from `state` to the end of `lexeme`: each memoized state's
  // first token (its search's, replay's or single bytes' path), each leading to a state one
  // token nearer the end; false where the memo breaks off (a distance found without its path:
  // a counted string's coin problem, a key's word). O(tokens), no walk of the trie.
  bool memo_tokens(uint32_t state, uint32_t lexeme, std::vector<int32_t>* out) const;
  // The state after `token` read from s inside its lexeme; kDead where it dies there, or where a
  // byte before its last ends the lexeme at once (the token would cross into the next).
  uint32_t read_token(uint32_t s, int32_t token) const;
  // The distinct states one token leads `state` to inside its lexeme (those that end it at once
  // too), where a search has walked them already (memoized); nullptr where none has.
  const std::vector<uint32_t>* known_successors(uint32_t state) const { return successors_.find(state); }
  // For a counted string body `C{lo,k} rest` (C takes every plain character): the most plain
  // tokens of whole characters that any count written so far (n <= k characters) needs, at the
  // fewest, to bring the count within [lo, k] (0 past lo), over n; kInf where a count has no sum
  // or lo is past kMaxCeilingCount. The coin problem's answer is not monotone in the count (a
  // token of 4 digits does in one what 3 digits take in 3), hence the maximum.
  uint32_t most_plain_tokens(uint32_t lo, uint32_t k);
  static constexpr uint32_t kMaxCeilingCount = 1u << 12;
  // Per byte class: a byte of it (a token of its own where one is; -1: none; empty: classes
  // unusable), and whether that byte is a token.
  struct ByteSteps {
    std::vector<int> rep;
    std::vector<uint8_t> token_class;
  };
  const ByteSteps& byte_steps() const { return byte_steps_; }
  // Every byte class has a byte that is a token of its own (bytes of one class lead alike from
  // every lexer state, so any path in bytes is one in single-byte tokens of the same length).
  bool all_bytes() const { return all_bytes_; }
  const Lexer& lexer() const { return lexer_; }
  const MaskCache& cache() const { return cache_; }
  const TokenTrie& trie() const { return trie_; }
  const Vocabulary& vocab() const { return vocab_; }

 private:
  // (*exact: whether the number found is the fewest tokens)
  uint32_t search_to_end(uint32_t state, uint32_t lexeme, size_t max_states, size_t max_work, deadline::Ticker& ticker,
                         bool* exact);
  uint32_t replay(uint32_t state, uint32_t lexeme, const std::vector<int32_t>& tokens, bool* whole = nullptr);
  std::vector<int32_t> memo_path(uint32_t state, uint32_t lexeme, uint32_t d);
  void share_path(uint32_t state, uint32_t lexeme, uint32_t d, std::string key);
  // (*exact: whether the number is the fewest tokens)
  uint32_t relaxed_to_end(uint32_t state, uint32_t lexeme, size_t max_states, size_t max_work, deadline::Ticker& ticker,
                          bool* exact);
  uint32_t token_search(uint32_t state, uint32_t lexeme, size_t max_states, size_t max_work,
                        const std::function<uint32_t(uint32_t)>& cut_short, deadline::Ticker& ticker, bool* exact);
  // A token path to the end of a lexeme from `state` read off a path in single bytes to it
  // (`bytes`, from byte_distance: its tokens longest first), with the states it passes.
  uint32_t path_to_end(uint32_t state, const std::vector<uint8_t>& bytes, std::vector<uint32_t>* passed,
                       std::vector<int32_t>* tokens = nullptr);
  // path_to_end memoized along the states it passes, where it is below `found` (else `found`).
  uint32_t memo_path_to_end(uint32_t state, const std::vector<uint8_t>& bytes, uint32_t found);
  // tokens_to_end for a state whose rest is one string (kInf for other states).
  uint32_t word_to_end(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker);
  ByteSteps find_byte_steps() const;
  // bytes_to_end_'s entry: state_bytes, with kNotShortest where the search went depth-first.
  uint32_t bytes_entry(uint32_t alone);
  // The distances along a shortest path of single bytes from `alone` to the end of lexeme l.
  void memo_byte_path(uint32_t alone, uint32_t l, const std::vector<uint8_t>& path);
  static constexpr uint32_t kNotShortest = 1u << 31;  // (above kInf)
  uint32_t byte_search(uint32_t start, uint32_t l, std::vector<uint8_t>* path, bool* shortest) const;
  uint32_t byte_dive(uint32_t start, uint32_t l, std::vector<uint8_t>* path) const;
  uint32_t candidate_to_end(uint32_t start, uint32_t l, std::vector<uint8_t>* path) const;
  const std::vector<uint32_t>& token_successors(uint32_t state, size_t* work = nullptr);
  // (`walked`: counts the trie nodes its walk visits)
  bool ends_in_one_token(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker, size_t* walked);
  // The most trie nodes one walk of a state's successors visited in lexeme l, and a walk's count.
  size_t widest_walk(uint32_t l) const;
  void note_walk(uint32_t l, size_t nodes);
  // tokens_to_end for a counted string body `C{lo,k} rest` where C takes every plain character,
  // or raw text up to a marker (loose_text_to_end); kInf for other states (text_search.cpp).
  uint32_t text_to_end(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker);
  uint32_t loose_text_to_end(uint32_t state, uint32_t lexeme, deadline::Ticker& ticker);
  std::vector<int32_t> rest_path(uint32_t rest, uint32_t lexeme, deadline::Ticker& ticker);
  struct Coins {
    ByteSet avoid;
    std::vector<uint32_t> counts;  // ascending (PlainSlice::whole_counts where nothing is avoided)
    std::vector<uint32_t> fewest;  // per sum below its size; plain_mu_
  };
  Coins& coins(const ByteSet& avoid);
  // The fewest plain tokens of whole characters, none with a byte of c's `avoid`, that hold
  // exactly n characters in all (kInf: no sum makes n); grown on demand.
  uint32_t plain_tokens_for(uint32_t n, Coins& c);
  // Their fewest for any count from lo to k characters.
  uint32_t fewest_plain_tokens(uint32_t lo, uint32_t k, const ByteSet& avoid);
  // (each successor with a token that leads to it, as successor_tokens_ keeps them)
  const std::vector<uint32_t>& keep_successors(uint32_t state, std::vector<std::pair<uint32_t, int32_t>> out);
  // Memoizes `d` tokens to the end at `state`, through `token` (the first of the path).
  void memo_step(uint32_t state, uint32_t d, int32_t token);

  const Lexer& lexer_;
  const MaskCache& cache_;  // its loop memos (the epoch's, as the lexer)
  const Vocabulary& vocab_;
  const TokenTrie& trie_;
  std::atomic<size_t>& bytes_;
  std::vector<uint8_t> single_bytes_;  // the bytes that are tokens of their own
  ByteSteps byte_steps_;
  bool all_bytes_ = false;
  cost::Memo<uint32_t, uint32_t> to_end_;                   // state of one lexeme -> tokens to its end
  cost::Memo<uint32_t, std::vector<uint32_t>> successors_;  // state -> the states one token leads to
  cost::Memo<uint32_t, std::vector<int32_t>> successor_tokens_;  // state -> a token to each of successors_
  cost::Memo<uint32_t, uint32_t> next_token_;  // memoized state -> the first token of its path (memo_tokens)
  cost::Memo<uint32_t, uint32_t> bytes_to_end_;             // state of one lexeme -> bytes_entry
  cost::Memo<uint32_t, std::vector<int32_t>> relaxed_paths_;  // relaxed state -> its path (relaxed_to_end)
  std::shared_mutex plain_mu_;
  // most_plain_tokens' answers per slack k - lo: the maxima over the counts left 1..j; plain_mu_
  std::unordered_map<uint32_t, std::vector<uint32_t>> most_by_slack_;
  std::vector<std::unique_ptr<Coins>> coins_;  // per avoided byte set (one or two); plain_mu_
  cost::Memo<uint32_t, std::vector<int32_t>> rest_paths_;  // rest state -> rest_path
  std::unique_ptr<std::atomic<size_t>[]> widest_;  // per lexeme: widest_walk
  std::unique_ptr<std::atomic<uint32_t>[]> relax_misses_;  // per lexeme: relaxed_to_end's misses in a row
  size_t lexemes_ = 0;
};

}  // namespace stencil
