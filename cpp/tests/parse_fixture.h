// What the tests of ParseState and the rows above it share: a grammar of words with optional
// spaces between lexemes, with its lexer, and a text pushed byte by byte.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "lexer/lexer.h"
#include "matcher/parse_state.h"
#include "stencil/grammar.h"

namespace stencil_test {

// The grammar `start(b, word)` builds, where word is [a-c]+ and runs of spaces are ignored.
struct WordsGrammar {
  std::shared_ptr<stencil::Grammar> grammar;
  std::unique_ptr<stencil::Lexer> lexer;
  explicit WordsGrammar(const std::function<stencil::Symbol(stencil::GrammarBuilder&, stencil::Symbol)>& start) {
    stencil::GrammarBuilder b;
    b.ignore(b.re_repeat(b.re_literal(" "), 1, -1), "ws", true, false);
    const stencil::Symbol word = b.lexeme(b.re_repeat(b.re_byte_ranges({{'a', 'c'}}), 1, -1), "word", false);
    grammar = b.build(start(b, word));
    lexer = std::make_unique<stencil::Lexer>(grammar->exprs, grammar->lexemes, stencil::LexerLimits{});
  }
};

inline bool push_all(stencil::ParseState& ps, std::string_view bytes) {
  for (char c : bytes)
    if (!ps.push_byte(static_cast<uint8_t>(c))) return false;
  return true;
}

}  // namespace stencil_test
