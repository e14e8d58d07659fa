// The byte automaton of plain text: UTF-8 without quotes, backslashes, control characters (C0 and
// DEL) or line separators. Below both the lexer (which reads its classes) and the token slices
// (which sort a vocabulary by it).
#pragma once
#include <cstdint>

namespace stencil {

// 0 is a character boundary; other states wait for continuation bytes. Every state accepts
// (partial characters too). Plain text is UTF-8 without quotes, backslashes, controls (below 0x20,
// and 0x7F), U+2028 and U+2029.
int plain_text_step(int state, uint8_t byte);  // -1: not plain
constexpr int kPlainTextStates = 10;

}  // namespace stencil
