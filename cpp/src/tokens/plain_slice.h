// The "plain text" slice of a vocabulary: tokens whose bytes are UTF-8 text
// without quotes, backslashes or control characters (a trailing partial
// character allowed). Most of a vocabulary is plain, and a lexer state inside
// a JSON string (or any free text) admits every plain token at once; such a
// state's inner mask is the slice plus a walk of the small trie of the other
// tokens, instead of a walk of the whole trie.
#pragma once
#include <cstdint>
#include <vector>

#include "stencil/vocabulary.h"

namespace stencil {

class Lexer;

// The byte automaton of plain text: 0 is a character boundary; other states
// wait for continuation bytes. Every state accepts (partial characters too).
int plain_text_step(int state, uint8_t byte);  // -1: not plain
constexpr int kPlainTextStates = 8;

struct PlainSlice {
  std::vector<uint32_t> bits;  // bitmask words: plain tokens
  TokenTrie rest;              // every other (non-special) token
  static PlainSlice build(const Vocabulary& vocab);
};

// Whether every plain string keeps `state` inside its lexeme: from `state`,
// each plain byte sequence reaches live, non-ending lexer states. Explores
// (lexer state, plain-text state) pairs; false past `max_pairs`.
bool admits_plain_text(const Lexer& lexer, uint32_t state, size_t max_pairs);

}  // namespace stencil
