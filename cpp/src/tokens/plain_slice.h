// The "plain text" slice of a vocabulary: tokens whose bytes are UTF-8 text
// without quotes, backslashes, control characters or line separators (a
// trailing partial character allowed). Most of a vocabulary is plain, and a lexer state inside
// a JSON string (or any free text) admits every plain token at once; such a
// state's inner mask is the slice plus a walk of the small trie of the other
// tokens, instead of a walk of the whole trie.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "stencil/vocabulary.h"
#include "support/byteset.h"
#include "support/char_summary.h"
#include "support/plain_text.h"
#include "tokens/trie.h"

namespace stencil {

class Lexer;

struct PlainSlice {
  std::vector<uint32_t> bits;  // bitmask words: plain tokens
  TokenTrie rest;              // every other (non-special) token
  std::vector<std::vector<int32_t>> by_count;  // plain tokens by the characters they start
  // By token id, a plain token's ASCII bytes as 128 bits, bit 127 (DEL, never plain) for any byte
  // from 0x80 (two words a token: a set's `avoiding` is then two ANDs a token)
  std::vector<std::array<uint64_t, 2>> byte_bits;
  // The character counts (ascending, below by_count's last bucket) of some plain token that ends
  // on a character boundary: the steps a counted string body can take, one token each.
  std::vector<uint32_t> whole_counts;
  // The character counts (ascending, 1 to 254) of some token that is that many whole plain
  // characters and then a quote: a counted string body's last step may close the string too.
  std::vector<uint32_t> quoted_counts;
  static PlainSlice build(const Vocabulary& vocab);

  // The plain tokens that start at most k characters (a string with k characters left):
  // built on first use for each k and kept.
  const std::vector<uint32_t>& at_most_chars(uint32_t k) const;
  // The plain tokens without any byte of `bytes` (a class of characters beside a count:
  // Lexer::plain_filter; every byte from 0x80 or none), built on first use for each set; the
  // most recent sets are kept.
  std::shared_ptr<const std::vector<uint32_t>> avoiding(const ByteSet& bytes) const;

  PlainSlice() = default;
  PlainSlice(PlainSlice&& o) noexcept
      : bits(std::move(o.bits)),
        rest(std::move(o.rest)),
        by_count(std::move(o.by_count)),
        byte_bits(std::move(o.byte_bits)),
        whole_counts(std::move(o.whole_counts)),
        quoted_counts(std::move(o.quoted_counts)) {}

 private:
  mutable std::mutex mu_;
  mutable std::map<uint32_t, std::unique_ptr<std::vector<uint32_t>>> by_chars_;
  mutable std::vector<std::pair<ByteSet, std::shared_ptr<const std::vector<uint32_t>>>> avoiding_;  // mu_
};

// Whether one of a few plain strings of at most `max_bytes` bytes (runs of a word character, of
// spaces, of words and separators) kills `state` or ends its lexeme: then not every plain token
// stays inside, found in a few dozen lexer steps (the exploration below builds states for every
// byte class at each step before it finds the count of words that runs out, `(\S+\s+){0,3}\S+`).
bool plain_probe_leaves(const Lexer& lexer, uint32_t state, uint32_t max_bytes);

// Whether every plain string keeps `state` inside its lexeme: from `state`,
// each plain byte sequence reaches live, non-ending lexer states. Explores
// (lexer state, plain-text state) pairs; false past `max_pairs`, or (with *gave_up set) once the
// lexer holds `max_states` states: the states an exploration builds are its cost.
bool admits_plain_text(const Lexer& lexer, uint32_t state, size_t max_pairs, uint32_t max_states = UINT32_MAX,
                       bool* gave_up = nullptr);

// The characters that lead lexer state s back to itself, as CharSummary bits: each ASCII text
// byte b with next(s, b) == s and, with `groups`, each group of non-ASCII characters whose every
// character does, through live states that need not end (explored up to max_pairs (state,
// partial character) pairs per group). Empty for a dead state or one that must end.
CharSummary loop_chars(const Lexer& lexer, uint32_t s, bool groups, size_t max_pairs);

}  // namespace stencil
